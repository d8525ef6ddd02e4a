/**
 * Sync digest for `/c0mpute/records/1` `live` requests (docs/network.md §4
 * "Sync digest"; docs/scale.md §2; issue #16): the requester lists what it
 * already holds, the server answers only the rest.
 *
 * `have` (optional field of `{op:"live"}`): a byte string of 8-byte prefixes
 * of the SHA-256 content addresses of the live records of that kind the
 * requester holds (at most MAX_LIVE of them). The server skips every record
 * whose address starts with a listed prefix. Without `have` the answer is as
 * before, and a server that does not know the field ignores it (the
 * requester's pipeline drops the duplicates as it always did), so old and new
 * nodes interoperate. A prefix collision (2⁻⁶⁴ per pair) only withholds a
 * record from the requester that listed it; the next gossip or sync brings it.
 */
import { C0Error } from '../errors.js';
import { sha256 } from '../records/address.js';
import type { CborValue } from '../records/cbor.js';
import { NET_ERR } from './frames.js';

/** Bytes of each address prefix in `have`. */
export const DIGEST_PREFIX_BYTES = 8;

const key = (b: Uint8Array, off: number): string => Buffer.from(b.buffer, b.byteOffset + off, DIGEST_PREFIX_BYTES).toString('hex');

/** The `have` field for the records the requester holds (envelope bytes). */
export function digestOf(held: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(held.length * DIGEST_PREFIX_BYTES);
  held.forEach((b, i) => out.set(sha256(b).subarray(0, DIGEST_PREFIX_BYTES), i * DIGEST_PREFIX_BYTES));
  return out;
}

/** Checks a request's `have` field: a byte string of whole prefixes, at most `max` of them. Throws NET_BAD_REQUEST. */
export function parseDigest(v: CborValue | undefined, max: number): Uint8Array | undefined {
  if (v === undefined) return undefined;
  if (!(v instanceof Uint8Array) || v.length % DIGEST_PREFIX_BYTES !== 0 || v.length > max * DIGEST_PREFIX_BYTES) {
    throw new C0Error(NET_ERR.BAD_REQUEST, `records/1 request: have must be a byte string of up to ${max} ${DIGEST_PREFIX_BYTES}-byte address prefixes`);
  }
  return v;
}

/** The server's filter: true for a record the requester does not list. */
export function lacks(have: Uint8Array | undefined): (envelope: Uint8Array) => boolean {
  if (!have?.length) return () => true;
  const set = new Set<string>();
  for (let off = 0; off < have.length; off += DIGEST_PREFIX_BYTES) set.add(key(have, off));
  return (b) => !set.has(key(sha256(b), 0));
}
