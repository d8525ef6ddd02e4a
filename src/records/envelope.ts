/**
 * COSE_Sign1 (RFC 9052, tag 18): `[protected, {}, payload, signature]` with the
 * protected header `{1: -8, 3: content type, 4: kid = UTF-8 of the signer's DID}`
 * and Ed25519 over `Sig_structure = ["Signature1", protected, h'', payload]`.
 * The content address is SHA-256 of the whole envelope.
 *
 * `open(bytes, expectedType)` checks, in this order, and the first failing check
 * wins: size → CBOR tag and shape → protected header canonical and complete →
 * content type is the expected one → signer DID parses and its key passes the
 * key check → signature verifies → payload is a canonical core → the kind's own
 * checks. Pure: no clock, no I/O.
 */
import { C0Error } from '../errors.js';
import { concatBytes, encodeCanonical, encodeHead, encodeHeaderMap, decodeCanonical, scanCanonical, compareBytes } from './cbor.js';
import { hashHex } from './address.js';
import { didFromPublicKey, didKeyBytesUnchecked, parseDid } from './did.js';
import { precheckVerify, verifyStrict, type Signer } from './ed25519.js';
import { fromCore, toCore, type Schema } from './schema.js';
import { SCHEMAS, RULES, type RecordTypes } from './kinds.js';
// Installs the pool-chain check that pooled adverts and receipts run (src/records/kinds.ts setPoolProofCheck).
import '../pools/chain.js';

export const ENV_ERR = {
  TOO_LARGE: 'ENVELOPE_TOO_LARGE',
  MALFORMED: 'ENVELOPE_MALFORMED',
  HEADER_NOT_CANONICAL: 'ENVELOPE_HEADER_NOT_CANONICAL',
  HEADER_INCOMPLETE: 'ENVELOPE_HEADER_INCOMPLETE',
  HEADER_UNKNOWN: 'ENVELOPE_HEADER_UNKNOWN_PARAM',
  BAD_ALG: 'ENVELOPE_BAD_ALG',
  WRONG_TYPE: 'RECORD_WRONG_TYPE',
  UNKNOWN_TYPE: 'RECORD_UNKNOWN_TYPE',
  SIGNER: 'ENVELOPE_BAD_SIGNER',
  SIGNATURE: 'ENVELOPE_BAD_SIGNATURE',
} as const;

export const MAX_ENVELOPE_BYTES = 64 * 1024;
const TYPE_RE = /^[a-z][a-z0-9.-]{0,62}\/[0-9]{1,4}$/;

// ---------------------------------------------------------------------------
// Kind registry
// ---------------------------------------------------------------------------

export interface Kind<T = unknown> {
  type: string;
  schema: Schema;
  rules: (rec: T, signer: string) => void;
}

const kinds = new Map<string, Kind>();

/** Register a record kind (pool/1 and pool-witness/1 register from src/pool and src/ledger). */
export function registerKind<T>(kind: Kind<T>): void {
  if (!TYPE_RE.test(kind.type)) throw new Error(`bad content type ${kind.type}`);
  kinds.set(kind.type, kind as Kind);
}

for (const [type, schema] of Object.entries(SCHEMAS)) {
  registerKind({ type, schema, rules: RULES[type] as (rec: unknown, signer: string) => void });
}

export function kindOf(type: string): Kind {
  const k = kinds.get(type);
  if (!k) throw new C0Error(ENV_ERR.UNKNOWN_TYPE, `unknown record type "${type}"`, { field: 'type' });
  return k;
}

export function knownTypes(): string[] {
  return [...kinds.keys()].sort();
}

/** Is a content type registered here? (A lookup: gossip validation asks it for every message.) */
export function isKnownType(type: string): boolean {
  return kinds.has(type);
}

type TypeOf<K extends string> = K extends keyof RecordTypes ? RecordTypes[K] : unknown;

/** A record that passed every check. */
export interface Opened<T = unknown> {
  type: string;
  signer: string;
  address: string;
  record: T;
  bytes: Uint8Array;
}

// ---------------------------------------------------------------------------
// Byte helpers
// ---------------------------------------------------------------------------

const TAG18 = 0xd2;
const ARRAY4 = 0x84;
const EMPTY_MAP = 0xa0;
const SIG1_PREFIX = (() => {
  // 0x84 array(4), "Signature1"
  const s = new TextEncoder().encode('Signature1');
  const out = new Uint8Array(2 + s.length);
  out[0] = 0x84;
  out[1] = 0x60 | s.length;
  out.set(s, 2);
  return out;
})();

/** A byte-string head in shortest form (major type 2). */
function bstrHead(n: number): Uint8Array {
  return encodeHead(2, n);
}

/** The COSE Sig_structure `["Signature1", protected, h'' (external_aad), payload]` that Ed25519 signs (RFC 9052 §4.4). */
export function sigStructure(protectedBytes: Uint8Array, payload: Uint8Array): Uint8Array {
  return concatBytes([SIG1_PREFIX, bstrHead(protectedBytes.length), protectedBytes, Uint8Array.of(0x40), bstrHead(payload.length), payload]);
}

/** Read a byte-string head at `pos`, shortest form only. Returns [start, end] of the content. */
function readBstr(b: Uint8Array, pos: number, what: string): [number, number] {
  const ib = b[pos];
  if (ib === undefined || ib >> 5 !== 2) throw new C0Error(ENV_ERR.MALFORMED, `${what} is not a byte string`);
  const info = ib & 0x1f;
  let n: number;
  let h: number;
  if (info < 24) {
    n = info;
    h = 1;
  } else if (info === 24) {
    n = b[pos + 1] ?? -1;
    h = 2;
    if (n < 24) throw new C0Error(ENV_ERR.MALFORMED, `${what} length not in shortest form`);
  } else if (info === 25) {
    n = ((b[pos + 1] ?? 0) << 8) | (b[pos + 2] ?? 0);
    h = 3;
    if (n < 0x100) throw new C0Error(ENV_ERR.MALFORMED, `${what} length not in shortest form`);
  } else if (info === 26) {
    n = (((b[pos + 1] ?? 0) << 24) >>> 0) + ((b[pos + 2] ?? 0) << 16) + ((b[pos + 3] ?? 0) << 8) + (b[pos + 4] ?? 0);
    h = 5;
    if (n < 0x10000) throw new C0Error(ENV_ERR.MALFORMED, `${what} length not in shortest form`);
  } else {
    throw new C0Error(ENV_ERR.MALFORMED, `${what} has an unsupported length encoding`);
  }
  const start = pos + h;
  if (start + n > b.length) throw new C0Error(ENV_ERR.MALFORMED, `${what} runs past the end of the envelope`);
  return [start, start + n];
}

interface Parts {
  protectedBytes: Uint8Array;
  payload: Uint8Array;
  signature: Uint8Array;
}

function splitEnvelope(bytes: Uint8Array): Parts {
  if (bytes.length > MAX_ENVELOPE_BYTES) throw new C0Error(ENV_ERR.TOO_LARGE, `envelope of ${bytes.length} bytes exceeds ${MAX_ENVELOPE_BYTES}`);
  if (bytes[0] !== TAG18) throw new C0Error(ENV_ERR.MALFORMED, 'not a COSE_Sign1: missing tag 18');
  if (bytes[1] !== ARRAY4) throw new C0Error(ENV_ERR.MALFORMED, 'COSE_Sign1 must be an array of four items');
  const [ps, pe] = readBstr(bytes, 2, 'protected header');
  if (bytes[pe] !== EMPTY_MAP) throw new C0Error(ENV_ERR.MALFORMED, 'unprotected header must be an empty map');
  const [ys, ye] = readBstr(bytes, pe + 1, 'payload');
  const [ss, se] = readBstr(bytes, ye, 'signature');
  if (se - ss !== 64) throw new C0Error(ENV_ERR.MALFORMED, `signature must be 64 bytes, got ${se - ss}`);
  if (se !== bytes.length) throw new C0Error(ENV_ERR.MALFORMED, `${bytes.length - se} trailing bytes after the envelope`);
  return { protectedBytes: bytes.subarray(ps, pe), payload: bytes.subarray(ys, ye), signature: bytes.subarray(ss, se) };
}

const utf8d = new TextDecoder('utf-8', { fatal: true });

/** Parse the protected header: returns [content type, kid DID]. */
function parseProtected(p: Uint8Array): [string, string] {
  // Fast path: a3 01 27 03 <tstr> 04 <bstr>, the only canonical form.
  if (p[0] === 0xa3 && p[1] === 0x01 && p[2] === 0x27 && p[3] === 0x03) {
    const tb = p[4];
    if (tb !== undefined && tb >> 5 === 3 && (tb & 0x1f) < 24) {
      const tlen = tb & 0x1f;
      const kpos = 5 + tlen;
      if (p[kpos] === 0x04) {
        const kb = p[kpos + 1];
        if (kb !== undefined && kb >> 5 === 2) {
          let klen = kb & 0x1f;
          let kstart = kpos + 2;
          if (klen === 24) {
            klen = p[kpos + 2] ?? 0;
            kstart++;
          }
          if (((kb & 0x1f) < 24 || ((kb & 0x1f) === 24 && klen >= 24)) && kstart + klen === p.length) {
            try {
              return [utf8d.decode(p.subarray(5, 5 + tlen)), utf8d.decode(p.subarray(kstart, kstart + klen))];
            } catch {
              /* fall through to the detailed path */
            }
          }
        }
      }
    }
  }
  // Detailed path: name what is wrong.
  let hdr: Record<string, unknown>;
  try {
    scanCanonical(p, { intKeys: true });
    hdr = decodeCanonical(p, { intKeys: true, recheck: false }) as Record<string, unknown>;
  } catch (e) {
    throw new C0Error(ENV_ERR.HEADER_NOT_CANONICAL, `protected header is not canonical CBOR: ${(e as Error).message}`, { detail: { cbor: (e as C0Error).code } });
  }
  if (typeof hdr !== 'object' || hdr === null || Array.isArray(hdr) || hdr instanceof Uint8Array) {
    throw new C0Error(ENV_ERR.HEADER_NOT_CANONICAL, 'protected header is not a map');
  }
  for (const k of Object.keys(hdr)) {
    if (k !== '1' && k !== '3' && k !== '4') throw new C0Error(ENV_ERR.HEADER_UNKNOWN, `protected header carries unexpected parameter ${k}`);
  }
  for (const k of ['1', '3', '4']) if (!(k in hdr)) throw new C0Error(ENV_ERR.HEADER_INCOMPLETE, `protected header lacks parameter ${k}`);
  if (hdr['1'] !== -8) throw new C0Error(ENV_ERR.BAD_ALG, `alg must be -8 (EdDSA), got ${String(hdr['1'])}`);
  if (typeof hdr['3'] !== 'string') throw new C0Error(ENV_ERR.HEADER_INCOMPLETE, 'content type (3) must be text');
  if (!(hdr['4'] instanceof Uint8Array)) throw new C0Error(ENV_ERR.HEADER_INCOMPLETE, 'kid (4) must be a byte string');
  let kid: string;
  try {
    kid = utf8d.decode(hdr['4']);
  } catch {
    throw new C0Error(ENV_ERR.SIGNER, 'kid is not UTF-8');
  }
  const again = buildProtected(hdr['3'], kid);
  if (compareBytes(again, p) !== 0) throw new C0Error(ENV_ERR.HEADER_NOT_CANONICAL, 'protected header is not in canonical form');
  return [hdr['3'], kid];
}

function buildProtected(type: string, did: string): Uint8Array {
  return encodeHeaderMap([
    [1, -8],
    [3, type],
    [4, new TextEncoder().encode(did)],
  ]);
}

// ---------------------------------------------------------------------------
// Seal and open
// ---------------------------------------------------------------------------

/** Build the envelope for an already-encoded payload (used by tests to craft odd payloads). */
export function sealRaw(type: string, payload: Uint8Array, signer: Signer): Uint8Array {
  const did = didFromPublicKey(signer.publicKey);
  const protectedBytes = buildProtected(type, did);
  const signature = signer.sign(sigStructure(protectedBytes, payload));
  return concatBytes([Uint8Array.of(TAG18, ARRAY4), bstrHead(protectedBytes.length), protectedBytes, Uint8Array.of(EMPTY_MAP), bstrHead(payload.length), payload, bstrHead(64), signature]);
}

/**
 * Seal a record: validate it against its kind (an invalid record cannot be
 * signed), encode canonically, sign. Returns the envelope and its address.
 */
export function seal<K extends string>(type: K, record: TypeOf<K>, signer: Signer): Opened<TypeOf<K>> {
  const kind = kindOf(type);
  const did = didFromPublicKey(signer.publicKey);
  const core = toCore(kind.schema, record);
  // Run the kind's rules on the typed form as it will be read back.
  const typed = fromCore<TypeOf<K>>(kind.schema, core);
  kind.rules(typed, did);
  const payload = encodeCanonical(core);
  const bytes = sealRaw(type, payload, signer);
  return { type, signer: did, address: hashHex(bytes), record: typed, bytes };
}

export interface OpenOptions {
  /** Skip the signature check (only for records already verified by this process, e.g. read back from our own store). */
  trusted?: boolean;
  /**
   * With `trusted`: do not check the signer's key yet either (gossip validation's
   * shape step; `verifySignature` checks the key and the signature afterwards).
   */
  deferKeyCheck?: boolean;
  /**
   * The content address of `bytes` when the caller has just computed it (gossip
   * validation hashes every message for its seen check): saves a second SHA-256.
   * It must be hashHex of exactly these bytes.
   */
  address?: string;
}

/**
 * The envelope in a buffer of its own when it came as a view of a larger one. An opened record is often kept for
 * long (the stores, the record cache, the offer book), and what it came in is often a view of more: a slice of
 * Node's 8 KiB buffer pool, or of a stream frame. The record, and every byte string decoded from it, would keep that
 * whole buffer alive; the soak (docs/scale.md §6) found a buyer holding about one 8 KiB pool slab per job.
 */
function ownBuffer(bytes: Uint8Array): Uint8Array {
  return bytes.buffer.byteLength > bytes.byteLength + 64 ? new Uint8Array(bytes) : bytes;
}

/** Open and fully check an envelope of the expected type. Throws C0Error; never returns an unchecked record. */
export function open<K extends string>(bytes: Uint8Array, expectedType: K, opts: OpenOptions = {}): Opened<TypeOf<K>> {
  bytes = ownBuffer(bytes);
  const { type, signer, payload } = openEnvelope(bytes, opts, expectedType);
  return finish(bytes, type, signer, payload, opts.address) as Opened<TypeOf<K>>;
}

/** Open an envelope of any registered type (for inspection and mixed streams). */
export function openAny(bytes: Uint8Array, opts: OpenOptions = {}): Opened {
  bytes = ownBuffer(bytes);
  const { type, signer, payload } = openEnvelope(bytes, opts);
  kindOf(type);
  return finish(bytes, type, signer, payload);
}

function openEnvelope(bytes: Uint8Array, opts: OpenOptions, expectedType?: string): { type: string; signer: string; payload: Uint8Array } {
  const parts = splitEnvelope(bytes);
  const [type, signer] = parseProtected(parts.protectedBytes);
  // The content type check happens before key and signature work (cheapest first).
  if (expectedType !== undefined && type !== expectedType) {
    throw new C0Error(ENV_ERR.WRONG_TYPE, `expected a ${expectedType} record, got ${type.slice(0, 40)}`, { field: 'type', detail: { expected: expectedType, got: type } });
  }
  if (!TYPE_RE.test(type)) throw new C0Error(ENV_ERR.WRONG_TYPE, `malformed content type "${type.slice(0, 40)}"`, { field: 'type' });
  if (opts.trusted && opts.deferKeyCheck) return { type, signer, payload: parts.payload };
  let parsed;
  try {
    parsed = parseDid(signer);
  } catch (e) {
    throw new C0Error(ENV_ERR.SIGNER, `signer ${signer.slice(0, 60)} refused: ${(e as Error).message}`, { detail: { reason: (e as C0Error).code } });
  }
  if (!opts.trusted) {
    if (!verifyStrict(parts.signature, sigStructure(parts.protectedBytes, parts.payload), parsed.publicKey)) {
      throw new C0Error(ENV_ERR.SIGNATURE, `signature does not verify for ${signer}`);
    }
  }
  return { type, signer, payload: parts.payload };
}

/**
 * Only the signature check of an envelope (the signer's key check included),
 * for callers that already decoded and checked it with `open(…, {trusted: true})`
 * — e.g. gossip validation, which checks freshness between the two so an
 * expired record costs no signature work. Throws ENVELOPE_BAD_SIGNATURE.
 */
export function verifySignature(bytes: Uint8Array): void {
  openEnvelope(bytes, {});
}

/**
 * A cheap signature reject for a signer whose key has not been checked yet
 * (gossip validation calls it before the key check): throws
 * ENVELOPE_BAD_SIGNATURE when the signature cannot verify under the named key,
 * without the strict key check. Returns true when the signature verified under
 * the key bytes the DID names (every check of verifyStrict, the same node:crypto
 * verify of the same bytes), so only the key check remains (`checkSignerKey`);
 * false when node:crypto could not take the key (leave it all to `verifySignature`).
 * True proves nothing about the key: a refused key is still ENVELOPE_BAD_SIGNER.
 */
export function precheckSignature(bytes: Uint8Array): boolean {
  const parts = splitEnvelope(bytes);
  const [, signer] = parseProtected(parts.protectedBytes);
  const pub = didKeyBytesUnchecked(signer);
  if (!pub) return false;
  const ok = precheckVerify(parts.signature, sigStructure(parts.protectedBytes, parts.payload), pub);
  if (ok === false) throw new C0Error(ENV_ERR.SIGNATURE, `signature does not verify for ${signer}`);
  return ok === true;
}

/**
 * The signer's strict key check alone (cached per DID), for a record whose
 * signature `precheckSignature` has verified under the same key bytes: with it,
 * exactly what `verifySignature` checks. Throws ENVELOPE_BAD_SIGNER.
 */
export function checkSignerKey(bytes: Uint8Array): void {
  openEnvelope(bytes, { trusted: true });
}

/** Expected-type check split out so open() refuses a wrong type before verifying its signature. */
export function peekType(bytes: Uint8Array): { type: string; signer: string } {
  const parts = splitEnvelope(bytes);
  const [type, signer] = parseProtected(parts.protectedBytes);
  return { type, signer };
}

function finish(bytes: Uint8Array, type: string, signer: string, payload: Uint8Array, address?: string): Opened {
  const kind = kindOf(type);
  // The byte-level scan is an exact check of canonical form (shortest heads,
  // definite lengths, sorted unique keys, the core subset, valid UTF-8, no
  // trailing bytes), so re-encoding to compare is redundant on this hot path;
  // test/unit/records/scan-equivalence.test.ts proves the two agree.
  const core = decodeCanonical(payload, { recheck: false });
  const record = fromCore(kind.schema, core);
  kind.rules(record, signer);
  return { type, signer, address: address ?? hashHex(bytes), record, bytes };
}

/**
 * Decode an envelope for inspection without requiring validity: returns what
 * can be read and the first error. Used by `record inspect`.
 */
export function inspect(bytes: Uint8Array): { type?: string; signer?: string; address: string; fields?: unknown; error?: C0Error } {
  const address = hashHex(bytes);
  let type: string | undefined;
  let signer: string | undefined;
  let fields: unknown;
  try {
    const parts = splitEnvelope(bytes);
    [type, signer] = parseProtected(parts.protectedBytes);
    try {
      fields = decodeCanonical(parts.payload, { recheck: false });
    } catch {
      /* reported through openAny below */
    }
    const opened = openAny(bytes);
    return { type, signer, address, fields: opened.record };
  } catch (e) {
    if (!(e instanceof C0Error)) throw e;
    return { ...(type === undefined ? {} : { type }), ...(signer === undefined ? {} : { signer }), address, fields, error: e };
  }
}
