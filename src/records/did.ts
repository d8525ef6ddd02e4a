/**
 * did:key for Ed25519 (W3C did:key): `did:key:z` + base58btc(0xed 0x01 ‖ key).
 * Parsing a DID checks its key once under the strict rule and caches the result
 * (the key bytes), so verification on the hot path is a lookup.
 */
import { base58btc } from 'multiformats/bases/base58';
import { C0Error } from '../errors.js';
import { checkPublicKey } from './ed25519.js';

export const DID_ERR = {
  MALFORMED: 'DID_MALFORMED',
  UNSUPPORTED_KEY: 'DID_UNSUPPORTED_KEY_TYPE',
  BAD_KEY: 'DID_BAD_KEY',
} as const;

const PREFIX = 'did:key:z';
const MULTICODEC_ED25519 = [0xed, 0x01];

export interface ParsedDid {
  did: string;
  publicKey: Uint8Array;
}

const cache = new Map<string, ParsedDid | C0Error>();
const CACHE_MAX = 65_536;

/** DIDs already made for a key object (a signer's key: every record it seals names it). */
const dids = new WeakMap<Uint8Array, string>();

export function didFromPublicKey(pub: Uint8Array): string {
  const known = dids.get(pub);
  if (known !== undefined) return known;
  if (pub.length !== 32) throw new C0Error(DID_ERR.BAD_KEY, `Ed25519 public key must be 32 bytes, got ${pub.length}`);
  const bytes = new Uint8Array(34);
  bytes.set(MULTICODEC_ED25519, 0);
  bytes.set(pub, 2);
  // base58btc builds its text a character at a time: a rope of some forty strings (about 1.2 kB) that every record
  // keeping the DID would hold; a flat copy is about 100 bytes (a heap snapshot of the soak's provider, docs/scale.md §6)
  const did = Buffer.from('did:key:' + base58btc.encode(bytes), 'latin1').toString('latin1');
  dids.set(pub, did);
  return did;
}

function parseUncached(did: string): ParsedDid {
  if (typeof did !== 'string' || !did.startsWith(PREFIX) || did.length === PREFIX.length || did.length > 128) {
    throw new C0Error(DID_ERR.MALFORMED, `not a did:key with a base58btc key: ${String(did).slice(0, 80)}`);
  }
  let bytes: Uint8Array;
  try {
    bytes = base58btc.decode(did.slice('did:key:'.length));
  } catch {
    throw new C0Error(DID_ERR.MALFORMED, `did:key is not valid base58btc: ${did.slice(0, 80)}`);
  }
  if (bytes.length < 2 || bytes[0] !== MULTICODEC_ED25519[0] || bytes[1] !== MULTICODEC_ED25519[1]) {
    throw new C0Error(DID_ERR.UNSUPPORTED_KEY, 'did:key is not an Ed25519 key (multicodec 0xed01)');
  }
  const pub = bytes.subarray(2);
  if (pub.length !== 32) throw new C0Error(DID_ERR.BAD_KEY, `did:key Ed25519 key must be 32 bytes, got ${pub.length}`);
  try {
    checkPublicKey(pub);
  } catch (e) {
    const inner = e as C0Error;
    throw new C0Error(DID_ERR.BAD_KEY, `did:key key refused: ${inner.message}`, { detail: { reason: inner.code } });
  }
  const publicKey = Uint8Array.from(pub);
  return { did, publicKey };
}

/** Parse and check a DID; results (and refusals) are cached per DID string. */
export function parseDid(did: string): ParsedDid {
  let r = cache.get(did);
  if (r === undefined) {
    try {
      r = parseUncached(did);
    } catch (e) {
      if (!(e instanceof C0Error)) throw e;
      r = e;
    }
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(did, r);
  }
  if (r instanceof C0Error) throw r;
  return r;
}

/** Has this DID's key been checked already (so using it costs a cache lookup, not a key check)? */
export function didChecked(did: string): boolean {
  return cache.has(did);
}

/**
 * The raw key bytes a did:key names, without the strict key check (undefined
 * when it is not an Ed25519 did:key). Only for a cheap first look (a signature
 * precheck); anything that trusts the key goes through `parseDid`.
 */
export function didKeyBytesUnchecked(did: string): Uint8Array | undefined {
  if (typeof did !== 'string' || !did.startsWith(PREFIX) || did.length > 128) return undefined;
  try {
    const bytes = base58btc.decode(did.slice('did:key:'.length));
    if (bytes.length !== 34 || bytes[0] !== MULTICODEC_ED25519[0] || bytes[1] !== MULTICODEC_ED25519[1]) return undefined;
    return bytes.subarray(2);
  } catch {
    return undefined;
  }
}

export function isDid(s: unknown): s is string {
  if (typeof s !== 'string') return false;
  try {
    parseDid(s);
    return true;
  } catch {
    return false;
  }
}

/** DID order: the byte order of the DID strings (ASCII, so code-unit order is byte order). */
export function compareDids(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A value that must be a DID (a path parameter naming a provider or a steward): DID_MALFORMED naming `field` otherwise. */
export function requireDid(v: string, field: string): string {
  try {
    parseDid(v);
  } catch {
    throw new C0Error(DID_ERR.MALFORMED, `${field}: not a did:key: ${v.slice(0, 80)}`, { field });
  }
  return v;
}
