/**
 * Canonical CBOR (RFC 8949 §4.2.1 core deterministic encoding), restricted to
 * the subset a signed core may hold (DESIGN §3.1, pool/1 §6.5): unsigned and
 * negative integers, text strings, byte strings, arrays, and maps.
 *
 * Encoding runs on cbor-x with its extensions off; we sort map keys ourselves
 * (bytewise order of their encodings) and pick the integer representation that
 * makes cbor-x write the shortest head.
 *
 * Decoding is strict: a byte-level scan names the first defect precisely (each
 * kind of defect has its own error code), cbor-x builds the value, and the value
 * is re-encoded and compared with the input as the final guard (pool/1 §6.6).
 */
import { Encoder } from 'cbor-x';
import { C0Error } from '../errors.js';

export type CborValue = number | bigint | string | Uint8Array | CborValue[] | { [key: string]: CborValue };

export const CBOR_ERR = {
  TRUNCATED: 'CBOR_TRUNCATED',
  TRAILING: 'CBOR_TRAILING_BYTES',
  NON_SHORTEST: 'CBOR_NON_SHORTEST_HEAD',
  INDEFINITE: 'CBOR_INDEFINITE_LENGTH',
  UNSORTED_KEYS: 'CBOR_UNSORTED_KEYS',
  DUPLICATE_KEY: 'CBOR_DUPLICATE_KEY',
  FLOAT: 'CBOR_FLOAT',
  BOOLEAN: 'CBOR_BOOLEAN',
  NULL: 'CBOR_NULL',
  UNDEFINED: 'CBOR_UNDEFINED',
  SIMPLE: 'CBOR_SIMPLE_VALUE',
  TAG: 'CBOR_TAG',
  KEY_TYPE: 'CBOR_KEY_TYPE',
  INVALID_UTF8: 'CBOR_INVALID_UTF8',
  RESERVED: 'CBOR_RESERVED_INFO',
  TOO_DEEP: 'CBOR_TOO_DEEP',
  TOO_LARGE: 'CBOR_INTEGER_TOO_LARGE',
  NOT_CANONICAL: 'CBOR_NOT_CANONICAL',
  UNENCODABLE: 'CBOR_UNENCODABLE',
} as const;

const MAX_DEPTH = 32;

/** cbor-x with every extension off (STACK pitfall 3); key order and integer width are ours. */
const CBORX_OPTIONS = {
  useRecords: false,
  useTag259ForMaps: false,
  variableMapSize: true,
  tagUint8Array: false,
  pack: false,
  structuredClone: false,
  bundleStrings: false,
  largeBigIntToFloat: false,
  mapsAsObjects: true,
} as const;

const encoder = new Encoder(CBORX_OPTIONS as ConstructorParameters<typeof Encoder>[0]);

/** The same decoder, reading 64-bit integers as numbers (used when the scan proved them all within ±2^53). */
const numberDecoder = new Encoder({ ...CBORX_OPTIONS, int64AsNumber: true } as ConstructorParameters<typeof Encoder>[0]);

const TWO32 = 0x1_0000_0000;
const U64_MAX = (1n << 64n) - 1n;
const MIN_NEG_U64 = -U64_MAX - 1n;
const utf8 = new TextEncoder();
let sawMinNeg = false;

/** Compare two byte arrays lexicographically. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = a[i]! - b[i]!;
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/** Bytewise order of the canonical encodings of two text keys: shorter UTF-8 first, then bytes. */
function compareTextKeys(a: string, b: string): number {
  if (a === b) return 0;
  const ea = utf8.encode(a);
  const eb = utf8.encode(b);
  if (ea.length !== eb.length) return ea.length - eb.length;
  return compareBytes(ea, eb);
}

const sortedKeysCache = new Map<string, string[]>();
function sortedKeys(obj: object): string[] {
  const keys = Object.keys(obj);
  const sig = keys.join('\u0000');
  let cached = sortedKeysCache.get(sig);
  // The signature is ambiguous ([] and [''] both join to '', keys may hold NUL): check the hit holds the same keys.
  if (cached === undefined || cached.length !== keys.length || !cached.every((k) => Object.hasOwn(obj, k))) {
    cached = [...keys].sort(compareTextKeys);
    if (sortedKeysCache.size > 4096) sortedKeysCache.clear();
    sortedKeysCache.set(sig, cached);
  }
  return cached;
}

/** Turn a core into what cbor-x will encode canonically; refuse what a core may not hold. */
function prepare(v: unknown, path: string, depth: number): unknown {
  if (depth > MAX_DEPTH) throw new C0Error(CBOR_ERR.TOO_DEEP, `value nested deeper than ${MAX_DEPTH} at ${path}`, { field: path });
  switch (typeof v) {
    case 'string':
      if (!isWellFormedString(v)) throw new C0Error(CBOR_ERR.INVALID_UTF8, `lone surrogate in text at ${path}`, { field: path });
      return v;
    case 'number':
      if (!Number.isInteger(v)) throw new C0Error(CBOR_ERR.FLOAT, `non-integer number at ${path}: a core holds no floats`, { field: path });
      if (!Number.isSafeInteger(v)) throw new C0Error(CBOR_ERR.TOO_LARGE, `integer beyond 2^53 at ${path}: pass it as a bigint`, { field: path });
      if (Object.is(v, -0)) return 0;
      // cbor-x writes integers of 2^32 and beyond as float64; bigints it writes as 64-bit.
      return v >= TWO32 || v < -TWO32 ? BigInt(v) : v;
    case 'bigint':
      if (v > U64_MAX || v < -U64_MAX - 1n) throw new C0Error(CBOR_ERR.TOO_LARGE, `integer outside 64 bits at ${path}`, { field: path });
      // cbor-x cannot write -2^64 (it falls back to a bignum tag); encodeCanonical takes a slow path for it.
      if (v === MIN_NEG_U64) sawMinNeg = true;
      // cbor-x writes every bigint with an 8-byte head; small ones must go as numbers.
      return v < BigInt(TWO32) && v >= -BigInt(TWO32) ? Number(v) : v;
    case 'boolean':
      throw new C0Error(CBOR_ERR.BOOLEAN, `boolean at ${path}: use a small text enum`, { field: path });
    case 'undefined':
      throw new C0Error(CBOR_ERR.UNDEFINED, `undefined at ${path}: omit the field instead`, { field: path });
    case 'object': {
      if (v === null) throw new C0Error(CBOR_ERR.NULL, `null at ${path}: omit the field instead`, { field: path });
      if (v instanceof Uint8Array) return v;
      if (Array.isArray(v)) return v.map((x, i) => prepare(x, `${path}[${i}]`, depth + 1));
      if (v instanceof Map) throw new C0Error(CBOR_ERR.UNENCODABLE, `Map at ${path}: use a plain object with text keys`, { field: path });
      const proto = Object.getPrototypeOf(v);
      if (proto !== Object.prototype && proto !== null) throw new C0Error(CBOR_ERR.UNENCODABLE, `unsupported object at ${path}`, { field: path });
      const m = new Map<string, unknown>();
      for (const k of sortedKeys(v)) {
        const x = (v as Record<string, unknown>)[k];
        if (x === undefined) continue; // optional fields are omitted, never null
        if (!isWellFormedString(k)) throw new C0Error(CBOR_ERR.INVALID_UTF8, `lone surrogate in a map key at ${path}`, { field: path });
        m.set(k, prepare(x, path === '' ? k : `${path}.${k}`, depth + 1));
      }
      return m;
    }
    default:
      throw new C0Error(CBOR_ERR.UNENCODABLE, `cannot encode ${typeof v} at ${path}`, { field: path });
  }
}

function isWellFormedString(s: string): boolean {
  // String.prototype.isWellFormed is Node 20+.
  return (s as string & { isWellFormed(): boolean }).isWellFormed();
}

/** Encode a core canonically. Throws C0Error for anything a core may not hold. */
export function encodeCanonical(value: unknown): Uint8Array {
  sawMinNeg = false;
  const prepared = prepare(value, '', 0);
  if (sawMinNeg) return encodePrepared(prepared);
  return new Uint8Array(encoder.encode(prepared));
}

/** Slow path without cbor-x, for a prepared tree holding -2^64 (which cbor-x writes as a tagged bignum). */
function encodePrepared(v: unknown): Uint8Array {
  const parts: Uint8Array[] = [];
  const head = (major: number, n: number | bigint) => {
    if (typeof n === 'number') parts.push(encodeHead(major, n));
    else {
      const out = new Uint8Array(9);
      out[0] = (major << 5) | 27;
      new DataView(out.buffer).setBigUint64(1, n);
      parts.push(out);
    }
  };
  const walk = (x: unknown): void => {
    if (typeof x === 'number') head(x < 0 ? 1 : 0, x < 0 ? -1 - x : x);
    else if (typeof x === 'bigint') head(x < 0n ? 1 : 0, x < 0n ? -1n - x : x);
    else if (typeof x === 'string') {
      const b = utf8.encode(x);
      head(3, b.length);
      parts.push(b);
    } else if (x instanceof Uint8Array) {
      head(2, x.length);
      parts.push(x);
    } else if (Array.isArray(x)) {
      head(4, x.length);
      x.forEach(walk);
    } else {
      const m = x as Map<string, unknown>; // prepare() made every map a Map in canonical key order
      head(5, m.size);
      for (const [k, y] of m) {
        walk(k);
        walk(y);
      }
    }
  };
  walk(v);
  return concatBytes(parts);
}

/** The parts, end to end, in one new array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let len = 0;
  for (const p of parts) len += p.length;
  const out = new Uint8Array(len);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/**
 * Encode a map with integer and text keys (COSE headers), keys ordered by the
 * bytewise order of their encodings. Values must be canonical-encodable.
 */
export function encodeHeaderMap(entries: Array<[number | string, unknown]>): Uint8Array {
  const parts = entries.map(([k, v]) => ({ k: encodeKey(k), v: encodeCanonical(v) }));
  parts.sort((a, b) => compareBytes(a.k, b.k));
  const head = encodeHead(5, parts.length);
  let len = head.length;
  for (const p of parts) len += p.k.length + p.v.length;
  const out = new Uint8Array(len);
  out.set(head, 0);
  let o = head.length;
  for (const p of parts) {
    out.set(p.k, o);
    o += p.k.length;
    out.set(p.v, o);
    o += p.v.length;
  }
  return out;
}

function encodeKey(k: number | string): Uint8Array {
  return encodeCanonical(k);
}

/** A canonical CBOR head for major type `major` and argument `n` (n < 2^53). */
export function encodeHead(major: number, n: number): Uint8Array {
  const mt = major << 5;
  if (n < 24) return Uint8Array.of(mt | n);
  if (n < 0x100) return Uint8Array.of(mt | 24, n);
  if (n < 0x10000) return Uint8Array.of(mt | 25, n >> 8, n & 0xff);
  if (n < TWO32) return Uint8Array.of(mt | 26, (n >>> 24) & 0xff, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);
  const out = new Uint8Array(9);
  out[0] = mt | 27;
  new DataView(out.buffer).setBigUint64(1, BigInt(n));
  return out;
}

// ---------------------------------------------------------------------------
// Strict scan
// ---------------------------------------------------------------------------

export interface ScanOptions {
  /** Allow integer map keys (COSE headers). Cores allow text keys only. */
  intKeys?: boolean;
  /** Allow tags (only the envelope's tag 18 is handled outside the scanner). */
}

interface Scan {
  b: Uint8Array;
  dv: DataView;
  pos: number;
  intKeys: boolean;
  big: boolean; // saw an integer beyond 2^53: decoded value needs bigint handling
  major: number; // the major type of the head readHead just read (no tuple per item on the hot path)
}

function err(code: string, msg: string, pos: number): never {
  throw new C0Error(code, `${msg} (at byte ${pos})`, { detail: { offset: pos } });
}

/** Read a head; returns its argument and leaves its major type in s.major; enforces shortest form and definite length. */
function readHead(s: Scan): number {
  const start = s.pos;
  if (s.pos >= s.b.length) err(CBOR_ERR.TRUNCATED, 'input ends where a data item was expected', start);
  const ib = s.b[s.pos++]!;
  const major = ib >> 5;
  const info = ib & 0x1f;
  if (major === 7) {
    // floats, simple values, break
    if (info === 20 || info === 21) err(CBOR_ERR.BOOLEAN, 'boolean in a core', start);
    if (info === 22) err(CBOR_ERR.NULL, 'null in a core', start);
    if (info === 23) err(CBOR_ERR.UNDEFINED, 'undefined in a core', start);
    if (info >= 25 && info <= 27) err(CBOR_ERR.FLOAT, 'float in a core', start);
    if (info === 31) err(CBOR_ERR.INDEFINITE, 'break code outside an indefinite-length item', start);
    if (info >= 28) err(CBOR_ERR.RESERVED, 'reserved additional information', start);
    err(CBOR_ERR.SIMPLE, 'simple value in a core', start);
  }
  if (major === 6) err(CBOR_ERR.TAG, 'tag inside a core', start);
  s.major = major;
  if (info < 24) return info;
  if (info === 31) err(CBOR_ERR.INDEFINITE, 'indefinite-length item', start);
  if (info >= 28) err(CBOR_ERR.RESERVED, 'reserved additional information', start);
  const size = 1 << (info - 24);
  if (s.pos + size > s.b.length) err(CBOR_ERR.TRUNCATED, 'input ends inside a head', start);
  let n: number;
  if (size === 1) {
    n = s.b[s.pos]!;
    if (n < 24) err(CBOR_ERR.NON_SHORTEST, 'head not in shortest form', start);
  } else if (size === 2) {
    n = s.dv.getUint16(s.pos);
    if (n < 0x100) err(CBOR_ERR.NON_SHORTEST, 'head not in shortest form', start);
  } else if (size === 4) {
    n = s.dv.getUint32(s.pos);
    if (n < 0x10000) err(CBOR_ERR.NON_SHORTEST, 'head not in shortest form', start);
  } else {
    const hi = s.dv.getUint32(s.pos);
    const lo = s.dv.getUint32(s.pos + 4);
    if (hi === 0) err(CBOR_ERR.NON_SHORTEST, 'head not in shortest form', start);
    if (major >= 2) err(CBOR_ERR.TOO_LARGE, 'length beyond 2^32', start);
    // Beyond 2^53 (hi ≥ 2^21) a number would lose precision: decode as bigint.
    if (hi >= 0x20_0000 || (major === 1 && hi === 0x1f_ffff && lo === 0xffff_ffff)) s.big = true;
    n = hi * TWO32 + lo; // may be imprecise beyond 2^53; only used for ints, whose value cbor-x reads
  }
  s.pos += size;
  return n;
}

const PROTO = new TextEncoder().encode('__proto__');
function isProtoKey(b: Uint8Array, at: number): boolean {
  for (let i = 0; i < PROTO.length; i++) if (b[at + i] !== PROTO[i]) return false;
  return true;
}

function scanItem(s: Scan, depth: number): void {
  if (depth > MAX_DEPTH) err(CBOR_ERR.TOO_DEEP, `nested deeper than ${MAX_DEPTH}`, s.pos);
  const start = s.pos;
  const n = readHead(s);
  const major = s.major;
  switch (major) {
    case 0:
    case 1:
      return;
    case 2:
    case 3: {
      if (s.pos + n > s.b.length) err(CBOR_ERR.TRUNCATED, 'input ends inside a string', start);
      if (major === 3 && !isAscii(s.b, s.pos, s.pos + n) && !isUtf8(s.b.subarray(s.pos, s.pos + n))) err(CBOR_ERR.INVALID_UTF8, 'text string is not valid UTF-8', start);
      s.pos += n;
      return;
    }
    case 4:
      for (let i = 0; i < n; i++) scanItem(s, depth + 1);
      return;
    case 5: {
      let prevStart = -1;
      let prevEnd = -1;
      for (let i = 0; i < n; i++) {
        const kStart = s.pos;
        if (kStart >= s.b.length) err(CBOR_ERR.TRUNCATED, 'input ends inside a map', kStart);
        const kMajor = s.b[kStart]! >> 5;
        if (kMajor !== 3 && !(s.intKeys && (kMajor === 0 || kMajor === 1))) {
          err(CBOR_ERR.KEY_TYPE, 'map key is not a text string', kStart);
        }
        scanItem(s, depth + 1);
        const kEnd = s.pos;
        // "__proto__" cannot be a plain-object key in JavaScript (it would set the
        // prototype): the decoded value could never re-encode to these bytes.
        if (kMajor === 3 && kEnd - kStart === 10 && isProtoKey(s.b, kStart + 1)) err(CBOR_ERR.NOT_CANONICAL, 'map key "__proto__" cannot be represented', kStart);
        if (prevStart >= 0) {
          const c = compareRanges(s.b, prevStart, prevEnd, kStart, kEnd);
          if (c === 0) err(CBOR_ERR.DUPLICATE_KEY, 'duplicate map key', kStart);
          if (c > 0) err(CBOR_ERR.UNSORTED_KEYS, 'map keys not in canonical order', kStart);
        }
        prevStart = kStart;
        prevEnd = kEnd;
        scanItem(s, depth + 1);
      }
      return;
    }
  }
}

/** Are b[from, to) all ASCII (so valid UTF-8 without a decoder call)? */
function isAscii(b: Uint8Array, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (b[i]! >= 0x80) return false;
  return true;
}

/** compareBytes(b[as, ae), b[bs, be)) without making views. */
function compareRanges(b: Uint8Array, as: number, ae: number, bs: number, be: number): number {
  const n = Math.min(ae - as, be - bs);
  for (let i = 0; i < n; i++) {
    const d = b[as + i]! - b[bs + i]!;
    if (d !== 0) return d;
  }
  return ae - as - (be - bs);
}

const isUtf8: (b: Uint8Array) => boolean = (() => {
  const { isUtf8: nodeIsUtf8 } = globalThis.Buffer ? (globalThis.Buffer as unknown as { isUtf8?: (b: Uint8Array) => boolean }) : {};
  if (typeof nodeIsUtf8 === 'function') return nodeIsUtf8;
  const dec = new TextDecoder('utf-8', { fatal: true });
  return (b: Uint8Array) => {
    try {
      dec.decode(b);
      return true;
    } catch {
      return false;
    }
  };
})();

/** Check that `bytes` is exactly one canonical data item of the core subset; returns whether it holds 64-bit ints. */
export function scanCanonical(bytes: Uint8Array, opts: ScanOptions = {}): boolean {
  const s: Scan = { b: bytes, dv: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), pos: 0, intKeys: opts.intKeys ?? false, big: false, major: 0 };
  scanItem(s, 0);
  if (s.pos !== bytes.length) err(CBOR_ERR.TRAILING, `${bytes.length - s.pos} bytes after the data item`, s.pos);
  return s.big;
}

function fixBigInts(v: unknown): unknown {
  if (typeof v === 'bigint') return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = fixBigInts(v[i]);
    return v;
  }
  if (v !== null && typeof v === 'object' && !(v instanceof Uint8Array)) {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) o[k] = fixBigInts(o[k]);
  }
  return v;
}

function toPlain(v: unknown): unknown {
  // cbor-x returns Buffers for byte strings in Node; hand out plain Uint8Array views.
  if (v instanceof Uint8Array) return v.constructor === Uint8Array ? v : new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = toPlain(v[i]);
    return v;
  }
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    for (const k of Object.keys(o)) o[k] = toPlain(o[k]);
  }
  return v;
}

export interface DecodeOptions extends ScanOptions {
  /** Re-encode the decoded value and compare with the input (default true). */
  recheck?: boolean;
}

/**
 * Decode one canonical core. Throws C0Error with a CBOR_* code naming the first
 * defect. Integers up to 2^53 come back as numbers, larger ones as bigints.
 */
export function decodeCanonical(bytes: Uint8Array, opts: DecodeOptions = {}): CborValue {
  const big = scanCanonical(bytes, opts);
  let value: unknown;
  try {
    // Integers up to 2^53 decode straight to numbers; only a core holding a
    // larger one takes the bigint path (and its fix-up walk).
    value = big ? encoder.decode(bytes) : numberDecoder.decode(bytes);
  } catch (e) {
    throw new C0Error(CBOR_ERR.NOT_CANONICAL, `undecodable CBOR: ${(e as Error).message}`, { cause: e });
  }
  if (big) value = fixBigInts(value);
  value = toPlain(value);
  if ((opts.recheck ?? true) && !opts.intKeys) {
    let again: Uint8Array;
    try {
      again = encodeCanonical(value);
    } catch (e) {
      throw new C0Error(CBOR_ERR.NOT_CANONICAL, `core does not re-encode: ${(e as Error).message}`, { cause: e });
    }
    if (compareBytes(again, bytes) !== 0) throw new C0Error(CBOR_ERR.NOT_CANONICAL, 'core does not re-encode to the bytes it arrived as');
  }
  return value as CborValue;
}
