/**
 * `/c0mpute/records/1`: fetch records by address, and sync (the live records a
 * peer holds of one kind). One request frame, one data frame per record
 * (envelope bytes), then the end frame.
 *
 *   {op: "get",  addresses: ["sha256:…", …]}     (1..MAX_GET addresses)
 *   {op: "live", kind: "<gossip kind>", limit: n}  (1..MAX_LIVE)
 *
 * The server answers from a RecordSource; the requester checks everything it
 * receives (fetch: address, type, shape, signature; sync: the full gossip
 * pipeline), so no unverified record enters.
 */
import { C0Error } from '../errors.js';
import { isAddress } from '../records/address.js';
import type { CborValue } from '../records/cbor.js';
import type { Clock } from '../util/clock.js';
import { NET_ERR, type ProtocolHandler } from './protocols.js';
import type { RecordSource } from './record-cache.js';
import { isTopicKind, type TopicKind } from './topics.js';

export const MAX_GET = 256;
export const MAX_LIVE = 4_096;

export type RecordsRequest = { op: 'get'; addresses: string[] } | { op: 'live'; kind: TopicKind; limit: number };

export function encodeRecordsRequest(r: RecordsRequest): CborValue {
  return r.op === 'get' ? { op: 'get', addresses: r.addresses } : { op: 'live', kind: r.kind, limit: r.limit };
}

export function parseRecordsRequest(v: CborValue | undefined): RecordsRequest {
  const bad = (m: string): never => {
    throw new C0Error(NET_ERR.BAD_REQUEST, `records/1 request: ${m}`);
  };
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array) return bad('not a map');
  const m = v as Record<string, CborValue>;
  if (m.op === 'get') {
    const a = m.addresses;
    if (!Array.isArray(a) || a.length < 1 || a.length > MAX_GET) return bad(`addresses must list 1..${MAX_GET} addresses`);
    if (!a.every(isAddress)) return bad('addresses must be sha256:<hex>');
    return { op: 'get', addresses: a as string[] };
  }
  if (m.op === 'live') {
    if (!isTopicKind(m.kind)) return bad('unknown kind');
    const limit = m.limit;
    if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIVE) return bad(`limit must be 1..${MAX_LIVE}`);
    return { op: 'live', kind: m.kind, limit };
  }
  return bad('op must be "get" or "live"');
}

/** The server side, answering from `source`. */
export function recordsHandler(source: RecordSource, clock: Clock): ProtocolHandler {
  return async (requests, ctx) => {
    if (requests.length !== 1) throw new C0Error(NET_ERR.BAD_REQUEST, 'records/1 takes exactly one request frame');
    const req = parseRecordsRequest(requests[0]);
    if (req.op === 'get') {
      for (const a of req.addresses) {
        const b = await source.get(a);
        if (b) await ctx.send(b);
      }
    } else {
      for (const b of await source.live(req.kind, clock(), req.limit)) await ctx.send(b);
    }
  };
}
