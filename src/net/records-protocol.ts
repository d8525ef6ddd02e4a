/**
 * `/c0mpute/records/1`: fetch records by address, and sync (the live records a
 * peer holds of one kind). One request frame, one data frame per record
 * (envelope bytes), then the end frame.
 *
 *   {op: "get",  addresses: ["sha256:…", …]}     (1..MAX_GET addresses)
 *   {op: "live", kind: "<gossip kind>", limit: n, shards?: ["0a", …], have?: h'…', since?: ms}  (1..MAX_LIVE; shards: only records of those markets, sharded kinds;
 *                                          have: 8-byte address prefixes of what the requester holds, not sent back — sync-digest.ts;
 *                                          since: only records the server took at or after this wall-clock time, ms — an
 *                                          outcome catch-up, records-sync.ts; a server that keeps no such time, or an older
 *                                          one, answers as without it)
 *   {op: "jobs", kinds: ["selection", "receipt", …], jobs: ["sha256:…", …]}  (kinds: 1.. of BY_JOB_KINDS, no repeats;
 *                                          jobs: 1..MAX_JOBS job addresses, no repeats) → the records held of those kinds whose
 *                                          `job` is one of those, kind by kind in the order asked. What a steward's
 *                                          catch-up asks for (src/roles/steward.ts): the outcome of the jobs it
 *                                          holds open, however many newer or older records the peer holds. A source
 *                                          with no by-job index, and a node before this op, answer NET_BAD_REQUEST
 *                                          (the requester then falls back to `live`).
 *
 * The server answers from a RecordSource (which filters `live` by shard on the
 * shards it keeps beside each record: no record is re-opened to answer); the requester checks everything it
 * receives (fetch: address, type, shape, signature; sync: the full gossip
 * pipeline), so no unverified record enters.
 *
 * Answers are bounded (docs/network.md §records/1 bounds): per request, at most
 * `maxResponseRecords` records and `maxResponseBytes` bytes (the answer stops
 * there and ends normally); per peer, a byte budget (token bucket) charged with
 * each answer's bytes plus a fixed cost per request: a request from a peer whose
 * budget cannot cover that cost is refused with an error frame NET_RATE_LIMITED,
 * and an answer never exceeds what is left of it. The cost is taken when the
 * request arrives and each record's bytes just before it is sent, so requests in
 * flight at once share the one bucket. Each such refusal is reported
 * (`onRateLimited`) to the network's peer-abuse score (peer-abuse.ts).
 * A request refused NET_BAD_REQUEST is charged too (review s39 F3): not one
 * frame holding a map with a string `op`, which no node sends, is a strike
 * (`onInvalid`); an op, kind or field this node refuses, which a node of
 * another version may send, is free up to REFUSED_RATE per peer and reported
 * (`onRateLimited`) past it. A `jobs` request to a source with no by-job
 * index is this node's lack, not the peer's: free.
 */
import { C0Error } from '../errors.js';
import { isAddress } from '../records/address.js';
import type { CborValue } from '../records/cbor.js';
import { monotonicClock, type Clock } from '../util/clock.js';
import { KeyedBuckets, type BucketSpec } from './rate-limit.js';
import { refusals } from './peer-abuse.js';
import { NET_ERR, type ProtocolHandler } from './protocols.js';
import type { RecordSource } from './record-cache.js';
import { ALL_SHARDS, isTopicKind, NONDELIVERY_TOPIC_KINDS, type TopicKind } from './topics.js';
import { DIGEST_PREFIX_BYTES, lacks, parseDigest } from './sync-digest.js';

export const MAX_GET = 256;
export const MAX_LIVE = 4_096;
/** Job addresses in one `jobs` request. */
export const MAX_JOBS = 256;
/** The kinds a `jobs` request may ask for: those whose record names its job (`job`). */
export const BY_JOB_KINDS: readonly TopicKind[] = ['offer', 'selection', 'receipt', ...NONDELIVERY_TOPIC_KINDS];

export interface RecordsServeOptions {
  /** Bytes of records in one answer (default 1 MiB: a full advert sync of 1 024 adverts is about 750 KB). */
  maxResponseBytes: number;
  /** Records in one answer (default 1 024). */
  maxResponseRecords: number;
  /** Bytes served per peer: sustained rate and burst (default 64 KiB/s, burst 2 MiB). */
  peer: BucketSpec;
  /** What each answer costs beyond its bytes, charged to the same budget (default 1 KiB): empty answers are not free. */
  requestCostBytes: number;
}

export const RECORDS_SERVE_DEFAULTS: RecordsServeOptions = {
  maxResponseBytes: 1024 * 1024,
  maxResponseRecords: 1_024,
  peer: { ratePerSec: 64 * 1024, burst: 2 * 1024 * 1024 },
  requestCostBytes: 1024,
};

export const RECORDS_RATE_LIMITED = 'NET_RATE_LIMITED';
/** What one record skipped for a sync digest costs the requester's byte budget (it was read and hashed). */
export const DIGEST_SKIP_COST_BYTES = 64;

export type RecordsRequest = { op: 'get'; addresses: string[] } | { op: 'live'; kind: TopicKind; limit: number; shards?: string[]; have?: Uint8Array; since?: number } | { op: 'jobs'; kinds: TopicKind[]; jobs: string[] };

export function encodeRecordsRequest(r: RecordsRequest): CborValue {
  if (r.op === 'get') return { op: 'get', addresses: r.addresses };
  if (r.op === 'jobs') return { op: 'jobs', kinds: r.kinds, jobs: r.jobs };
  return { op: 'live', kind: r.kind, limit: r.limit, ...(r.shards ? { shards: r.shards } : {}), ...(r.have ? { have: r.have } : {}), ...(r.since !== undefined ? { since: r.since } : {}) };
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
    const sh = m.shards;
    const have = parseDigest(m.have, MAX_LIVE);
    const since = m.since;
    if (since !== undefined && (typeof since !== 'number' || !Number.isSafeInteger(since) || since < 0)) return bad('since must be a non-negative integer (ms)');
    const withHave = { ...(have ? { have } : {}), ...(since !== undefined ? { since } : {}) };
    if (sh === undefined) return { op: 'live', kind: m.kind, limit, ...withHave };
    if (!Array.isArray(sh) || sh.length < 1 || sh.length > ALL_SHARDS.length || !sh.every((x) => typeof x === 'string' && ALL_SHARDS.includes(x))) return bad(`shards must list 1..${ALL_SHARDS.length} of ${ALL_SHARDS[0]}..${ALL_SHARDS.at(-1)}`);
    return { op: 'live', kind: m.kind, limit, shards: sh as string[], ...withHave };
  }
  if (m.op === 'jobs') {
    const k = m.kinds;
    if (!Array.isArray(k) || k.length < 1 || k.length > BY_JOB_KINDS.length || !k.every((x) => BY_JOB_KINDS.includes(x as TopicKind)) || new Set(k).size !== k.length) return bad(`kinds must list 1..${BY_JOB_KINDS.length} of ${BY_JOB_KINDS.join(', ')}, once each`);
    const j = m.jobs;
    if (!Array.isArray(j) || j.length < 1 || j.length > MAX_JOBS) return bad(`jobs must list 1..${MAX_JOBS} job addresses`);
    if (!j.every(isAddress)) return bad('jobs must be sha256:<hex>');
    // once each: a job listed again would walk its records again for nothing (one cheap request, much work)
    if (new Set(j).size !== j.length) return bad('jobs must list each job address once');
    return { op: 'jobs', kinds: k as TopicKind[], jobs: j as string[] };
  }
  return bad('op must be "get", "live" or "jobs"');
}

/** Not a request any node sends: not a map with a string `op` (a strike; anything else refused may be another version's). */
function malformed(v: CborValue | undefined): boolean {
  return typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array || typeof (v as Record<string, CborValue>).op !== 'string';
}

/**
 * The server side, answering from `source` within the bounds (per request and per peer); `onRateLimited` hears of each
 * request refused for the peer's budget, and of each bad request past REFUSED_RATE; `onInvalid` of each malformed one.
 */
export function recordsHandler(source: RecordSource, clock: Clock, options: Partial<RecordsServeOptions> = {}, onRateLimited?: (peer: string) => void, mono: Clock = monotonicClock, onInvalid?: (peer: string) => void): ProtocolHandler {
  const o: RecordsServeOptions = { ...RECORDS_SERVE_DEFAULTS, ...options };
  // byte budgets measure elapsed time: the monotonic clock (`clock`, the wall clock, decides what is live)
  const budgets = new KeyedBuckets(o.peer, mono);
  const refused = refusals(onRateLimited, mono);
  return async (requests, ctx) => {
    const peer = ctx.peer.toString();
    if (requests.length !== 1) {
      onInvalid?.(peer);
      throw new C0Error(NET_ERR.BAD_REQUEST, 'records/1 takes exactly one request frame');
    }
    let req: RecordsRequest;
    try {
      req = parseRecordsRequest(requests[0]);
    } catch (e) {
      if (malformed(requests[0])) onInvalid?.(peer);
      else refused(peer);
      throw e;
    }
    // The request's cost is taken before anything is read, and each record's bytes just before it is sent: concurrent
    // requests from one peer draw on the same bucket as they go, so together they never get more than it holds
    // (checking the bucket up front and charging at the end let each of N requests in flight see the whole burst).
    if (!budgets.take(peer, o.requestCostBytes)) {
      const short = o.requestCostBytes - budgets.available(peer);
      onRateLimited?.(peer);
      throw new C0Error(RECORDS_RATE_LIMITED, `records/1: this peer's byte budget is spent (${o.peer.ratePerSec} B/s); ask again later`, { detail: { retryAfterMs: Math.ceil((short / o.peer.ratePerSec) * 1000) } });
    }
    let bytes = 0;
    let count = 0;
    const send = async (b: Uint8Array): Promise<boolean> => {
      if (count >= o.maxResponseRecords || bytes + b.length > o.maxResponseBytes) return false;
      // what is left of the peer's budget now, after whatever its other requests in flight have taken
      if (!budgets.take(peer, b.length)) return false;
      bytes += b.length;
      count++;
      await ctx.send(b);
      return true;
    };
    if (req.op === 'get') {
      for (const a of req.addresses) {
        const b = await source.get(a);
        if (b && !(await send(b))) break;
      }
    } else if (req.op === 'jobs') {
      if (!source.byJob) throw new C0Error(NET_ERR.BAD_REQUEST, 'records/1 request: this node keeps no records by job (op "jobs")');
      for (const b of await source.byJob(req.kinds, req.jobs, clock(), o.maxResponseRecords)) if (!(await send(b))) break;
    } else {
      // only the asked markets, when named: the source filters on the shards it keeps beside each record
      // with a digest, what the requester listed is skipped, so read as many more as it listed
      const want = Math.min(req.limit, o.maxResponseRecords);
      const listed = (req.have?.length ?? 0) / DIGEST_PREFIX_BYTES;
      const keep = lacks(req.have);
      let sent = 0;
      // `since` (an outcome catch-up): the source leaves out what it took before then, before any is read or hashed
      for (const b of await source.live(req.kind, clock(), Math.min(MAX_LIVE, want + listed), req.shards ? new Set(req.shards) : undefined, req.since)) {
        if (!keep(b)) {
          // a record skipped was still read and hashed: it costs the requester's budget a little (a listed digest
          // cannot make one cheap request scan the whole market for free); charged even past zero, like work done
          budgets.charge(peer, DIGEST_SKIP_COST_BYTES);
          continue;
        }
        if (sent >= want || !(await send(b))) break;
        sent++;
      }
    }
  };
}
