/**
 * A small declarative schema for record cores. One schema per record kind
 * drives both directions: `fromCore` validates a decoded core and returns the
 * typed record (addresses as `sha256:<hex>` strings), `toCore` validates a typed
 * record and returns the core to encode. The same schema renders the field
 * tables in docs/protocol.md, so the contract and the code cannot drift.
 *
 * Error codes (stable): RECORD_NOT_A_MAP, RECORD_FIELD_MISSING,
 * RECORD_FIELD_TYPE, RECORD_FIELD_INVALID, RECORD_INTEGER_RANGE,
 * RECORD_UNKNOWN_FIELD.
 */
import { C0Error } from '../errors.js';
import { addressToBytes, bytesToAddress, isAddress } from './address.js';
import { parseDid } from './did.js';
import { AMOUNT_RE, CURRENCY_RE } from './money.js';

export type Field =
  | { t: 'uint'; min?: number; max?: number; doc: string; unit?: string; optional?: true }
  | { t: 'time'; doc: string; optional?: true }
  | { t: 'text'; re?: RegExp; maxLen: number; doc: string; optional?: true }
  | { t: 'enum'; values: readonly string[]; doc: string; optional?: true }
  | { t: 'did'; doc: string; optional?: true }
  | { t: 'addr'; doc: string; optional?: true }
  | { t: 'bytes'; len?: number; maxLen?: number; doc: string; optional?: true }
  | { t: 'money'; doc: string; optional?: true }
  | { t: 'array'; of: Field; min?: number; max: number; order?: 'sorted-unique' | 'did-order-unique'; doc: string; optional?: true }
  | { t: 'object'; fields: Record<string, Field>; doc: string; optional?: true };

export type Schema = Record<string, Field>;

function bad(code: string, path: string, msg: string): never {
  throw new C0Error(code, `${path}: ${msg}`, { field: path });
}

function typeName(v: unknown): string {
  if (v instanceof Uint8Array) return 'bytes';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function checkOrder(arr: unknown[], path: string, order: 'sorted-unique' | 'did-order-unique', key?: (x: unknown) => string): void {
  for (let i = 1; i < arr.length; i++) {
    const a = key ? key(arr[i - 1]) : (arr[i - 1] as string);
    const b = key ? key(arr[i]) : (arr[i] as string);
    if (a === b) bad('RECORD_FIELD_INVALID', `${path}[${i}]`, `duplicate entry "${b}"`);
    if (a > b) bad('RECORD_FIELD_INVALID', `${path}[${i}]`, order === 'did-order-unique' ? 'entries must be in DID order' : 'entries must be sorted');
  }
}

/** Which direction: 'in' = from a core (bytes for addresses), 'out' = to a core. */
type Dir = 'in' | 'out';

function convert(f: Field, v: unknown, path: string, dir: Dir): unknown {
  switch (f.t) {
    case 'uint':
    case 'time': {
      // The wire allows 64-bit integers (docs/protocol.md §1), but every uint
      // and time field is bounded by 2^53 − 1 so that decisions can use exact
      // JS numbers: a larger one (a bigint from the decoder) has its own code.
      if (typeof v === 'bigint') {
        if (v < 0n) bad('RECORD_FIELD_INVALID', path, `must be ≥ ${f.t === 'uint' ? (f.min ?? 0) : 0}, got ${v}`);
        bad('RECORD_INTEGER_RANGE', path, `must be at most 2^53 − 1 (${Number.MAX_SAFE_INTEGER}), got ${v}`);
      }
      if (typeof v !== 'number' || !Number.isInteger(v)) bad('RECORD_FIELD_TYPE', path, `expected an integer, got ${typeName(v)}`);
      const min = f.t === 'uint' ? (f.min ?? 0) : 0;
      if (v < min) bad('RECORD_FIELD_INVALID', path, `must be ≥ ${min}, got ${v}`);
      if (!Number.isSafeInteger(v)) bad('RECORD_INTEGER_RANGE', path, `must be at most 2^53 − 1 (${Number.MAX_SAFE_INTEGER}), got ${v}`);
      if (f.t === 'uint' && f.max !== undefined && v > f.max) bad('RECORD_FIELD_INVALID', path, `must be ≤ ${f.max}, got ${v}`);
      return v;
    }
    case 'text': {
      if (typeof v !== 'string') bad('RECORD_FIELD_TYPE', path, `expected text, got ${typeName(v)}`);
      if (v.length > f.maxLen) bad('RECORD_FIELD_INVALID', path, `longer than ${f.maxLen} characters`);
      if (f.re && !f.re.test(v)) bad('RECORD_FIELD_INVALID', path, `"${v.slice(0, 60)}" does not match ${f.re.source}`);
      return v;
    }
    case 'enum': {
      if (typeof v !== 'string') bad('RECORD_FIELD_TYPE', path, `expected one of ${f.values.join('|')}, got ${typeName(v)}`);
      if (!f.values.includes(v)) bad('RECORD_FIELD_INVALID', path, `"${v.slice(0, 40)}" is not one of ${f.values.join('|')}`);
      return v;
    }
    case 'did': {
      if (typeof v !== 'string') bad('RECORD_FIELD_TYPE', path, `expected a DID, got ${typeName(v)}`);
      try {
        parseDid(v);
      } catch (e) {
        bad('RECORD_FIELD_INVALID', path, `not a usable did:key (${(e as C0Error).code})`);
      }
      return v;
    }
    case 'addr': {
      if (dir === 'in') {
        if (!(v instanceof Uint8Array)) bad('RECORD_FIELD_TYPE', path, `expected a 32-byte address, got ${typeName(v)}`);
        if (v.length !== 32) bad('RECORD_FIELD_INVALID', path, `address must be 32 bytes, got ${v.length}`);
        return bytesToAddress(v);
      }
      if (!isAddress(v)) bad('RECORD_FIELD_TYPE', path, `expected sha256:<64 hex>, got ${typeof v === 'string' ? `"${v.slice(0, 40)}"` : typeName(v)}`);
      return addressToBytes(v, path);
    }
    case 'bytes': {
      if (!(v instanceof Uint8Array)) bad('RECORD_FIELD_TYPE', path, `expected bytes, got ${typeName(v)}`);
      if (f.len !== undefined && v.length !== f.len) bad('RECORD_FIELD_INVALID', path, `must be ${f.len} bytes, got ${v.length}`);
      if (f.maxLen !== undefined && v.length > f.maxLen) bad('RECORD_FIELD_INVALID', path, `longer than ${f.maxLen} bytes`);
      return v;
    }
    case 'money': {
      if (!isPlainObject(v)) bad('RECORD_FIELD_TYPE', path, `expected {amount, currency}, got ${typeName(v)}`);
      const keys = Object.keys(v);
      for (const k of keys) if (k !== 'amount' && k !== 'currency') bad('RECORD_UNKNOWN_FIELD', `${path}.${k}`, 'unknown field');
      const { amount, currency } = v;
      if (amount === undefined) bad('RECORD_FIELD_MISSING', `${path}.amount`, 'required');
      if (currency === undefined) bad('RECORD_FIELD_MISSING', `${path}.currency`, 'required');
      if (typeof amount !== 'string') bad('RECORD_FIELD_TYPE', `${path}.amount`, `expected a decimal string, got ${typeName(amount)}`);
      if (amount.length > 64 || !AMOUNT_RE.test(amount)) bad('RECORD_FIELD_INVALID', `${path}.amount`, `"${amount.slice(0, 40)}" is not a plain decimal (e.g. "0.042")`);
      if (typeof currency !== 'string') bad('RECORD_FIELD_TYPE', `${path}.currency`, `expected a currency code, got ${typeName(currency)}`);
      if (!CURRENCY_RE.test(currency)) bad('RECORD_FIELD_INVALID', `${path}.currency`, `"${currency.slice(0, 20)}" is not an upper-case currency code`);
      return { amount, currency };
    }
    case 'array': {
      if (!Array.isArray(v)) bad('RECORD_FIELD_TYPE', path, `expected an array, got ${typeName(v)}`);
      if (v.length > f.max) bad('RECORD_FIELD_INVALID', path, `more than ${f.max} entries`);
      if (f.min !== undefined && v.length < f.min) bad('RECORD_FIELD_INVALID', path, `fewer than ${f.min} entries`);
      const out = v.map((x, i) => convert(f.of, x, `${path}[${i}]`, dir));
      if (f.order) {
        const key = f.of.t === 'object' ? (x: unknown) => firstKeyValue(f.of as Extract<Field, { t: 'object' }>, x) : undefined;
        checkOrder(dir === 'in' ? out : v, path, f.order, key);
      }
      return out;
    }
    case 'object':
      return convertObject(f.fields, v, path, dir);
  }
}

/** For arrays of objects ordered by a key: the first declared field is the sort key. */
function firstKeyValue(f: Extract<Field, { t: 'object' }>, x: unknown): string {
  const k = Object.keys(f.fields)[0]!;
  return String((x as Record<string, unknown>)[k]);
}

/** Each schema's fields as entries, made once (convertObject runs for every object of every record opened). */
const entriesOf = new WeakMap<Schema, Array<[string, Field]>>();

function convertObject(fields: Schema, v: unknown, path: string, dir: Dir): Record<string, unknown> {
  if (!isPlainObject(v)) bad(path === '' ? 'RECORD_NOT_A_MAP' : 'RECORD_FIELD_TYPE', path || 'record', `expected a map, got ${typeName(v)}`);
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    if (!Object.hasOwn(fields, k) && v[k] !== undefined) bad('RECORD_UNKNOWN_FIELD', path ? `${path}.${k}` : k, 'unknown field');
  }
  let entries = entriesOf.get(fields);
  if (entries === undefined) entriesOf.set(fields, (entries = Object.entries(fields)));
  for (const [k, f] of entries) {
    const p = path ? `${path}.${k}` : k;
    const x = v[k];
    if (x === undefined) {
      if (!f.optional) bad('RECORD_FIELD_MISSING', p, 'required');
      continue;
    }
    out[k] = convert(f, x, p, dir);
  }
  return out;
}

export function fromCore<T>(schema: Schema, core: unknown): T {
  return convertObject(schema, core, '', 'in') as T;
}

export function toCore(schema: Schema, rec: unknown): Record<string, unknown> {
  return convertObject(schema, rec, '', 'out');
}

// ---------------------------------------------------------------------------
// Documentation rendering
// ---------------------------------------------------------------------------

function cborType(f: Field): string {
  switch (f.t) {
    case 'uint':
      return 'uint';
    case 'time':
      return 'uint (ms since epoch)';
    case 'text':
      return 'tstr';
    case 'enum':
      return `tstr: ${f.values.map((x) => '`' + x + '`').join(' / ')}`;
    case 'did':
      return 'tstr (did:key)';
    case 'addr':
      return 'bstr .size 32 (SHA-256 content address)';
    case 'bytes':
      return f.len !== undefined ? `bstr .size ${f.len}` : 'bstr';
    case 'money':
      return 'money map';
    case 'array':
      return `array of ${cborType(f.of)}`;
    case 'object':
      return 'map';
  }
}

function rule(f: Field): string {
  const r: string[] = [];
  switch (f.t) {
    case 'uint':
      if (f.min) r.push(`≥ ${f.min}`);
      if (f.max !== undefined) r.push(`≤ ${f.max}`);
      if (f.unit) r.push(`unit: ${f.unit}`);
      break;
    case 'text':
      if (f.re) r.push(`matches \`${f.re.source}\``);
      r.push(`≤ ${f.maxLen} chars`);
      break;
    case 'bytes':
      if (f.maxLen) r.push(`≤ ${f.maxLen} bytes`);
      break;
    case 'array':
      r.push(`${f.min ?? 0}..${f.max} entries`);
      if (f.order === 'sorted-unique') r.push('sorted, no duplicates');
      if (f.order === 'did-order-unique') r.push('in DID order, no duplicates');
      break;
    default:
      break;
  }
  return r.join('; ');
}

/** Render a schema as a Markdown table (nested maps flattened with dotted names). */
export function schemaTable(schema: Schema): string {
  const rows: string[] = ['| field | CBOR type | required | rule | meaning |', '|---|---|---|---|---|'];
  // `optionalParent` says when a field under an optional ancestor is required:
  // the schema requires it whenever that ancestor is present.
  const walk = (fields: Schema, prefix: string, optionalParent: string | undefined) => {
    for (const [k, f] of Object.entries(fields)) {
      const name = prefix + k;
      const required = f.optional ? 'no' : optionalParent ? `yes (${optionalParent})` : 'yes';
      rows.push(`| \`${name}\` | ${cborType(f)} | ${required} | ${rule(f)} | ${f.doc} |`);
      if (f.t === 'object') walk(f.fields, name + '.', f.optional ? `when \`${name}\` is present` : optionalParent);
      if (f.t === 'array' && f.of.t === 'object') walk(f.of.fields, name + '[].', f.optional ? `in every \`${name}\` entry` : optionalParent);
    }
  };
  walk(schema, '', undefined);
  return rows.join('\n');
}

/**
 * Turn JSON (as an operator writes it) into a typed record: byte fields are
 * given as hex strings. Everything else is validated by toCore() on sealing.
 */
export function recordFromJson(schema: Schema, json: unknown): unknown {
  const walk = (f: Field, v: unknown, path: string): unknown => {
    if (v === undefined || v === null) return v;
    if (f.t === 'bytes' && typeof v === 'string') {
      if (!/^([0-9a-f]{2})*$/i.test(v)) bad('RECORD_FIELD_INVALID', path, 'bytes must be given as hex');
      return new Uint8Array(Buffer.from(v, 'hex'));
    }
    if (f.t === 'array' && Array.isArray(v)) return v.map((x, i) => walk(f.of, x, `${path}[${i}]`));
    if (f.t === 'object' && isPlainObject(v)) return walkObj(f.fields, v, path);
    return v;
  };
  const walkObj = (fields: Schema, v: Record<string, unknown>, path: string) => {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) {
      // own keys only: `constructor` is no field, and `__proto__` (JSON.parse makes it an own key) stays a key, so
      // toCore refuses both as unknown rather than one of them setting this object's prototype
      const f = Object.hasOwn(fields, k) ? fields[k] : undefined;
      Object.defineProperty(o, k, { value: f ? walk(f, x, path ? `${path}.${k}` : k) : x, enumerable: true, writable: true, configurable: true });
    }
    return o;
  };
  if (!isPlainObject(json)) bad('RECORD_NOT_A_MAP', 'record', 'expected a JSON object of fields');
  return walkObj(schema, json, '');
}
