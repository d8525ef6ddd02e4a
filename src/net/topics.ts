/**
 * Gossip topics: `/c0mpute/1/<overlay>/<kind>`, one per record kind, each
 * carrying exactly one content type (the topic is the type check: a record of
 * any other type on it is rejected). The market kinds (advert, job, presence)
 * and a job's outcome (selection, receipt, acceptance, non-delivery of either
 * version: `nondelivery` carries /1, `nondelivery2` /2, `nondelivery3` /3) are
 * sharded by workload (issue #16, docs/network.md §14 "Markets: topics
 * sharded by workload"): `/c0mpute/1/<overlay>/<kind>/<shard>`, where the
 * shard is a hash of the workload into SHARD_COUNT markets.
 */
import { createHash } from 'node:crypto';
import { C0Error } from '../errors.js';
import { NONDELIVERY_TYPES, T, type NonDeliveryType } from '../records/kinds.js';
import { open } from '../records/envelope.js';

export const DEFAULT_OVERLAY = 'public';
export const TOPIC_PREFIX = '/c0mpute/1/';

/** Gossip kinds and the content type each topic carries. */
export const TOPIC_TYPES = {
  advert: T.advert,
  job: T.job,
  offer: T.offer,
  selection: T.selection,
  receipt: T.receipt,
  acceptance: T.acceptance,
  nondelivery: T.nondelivery,
  /**
   * A pooled offer's non-delivery (c0mpute.nondelivery/2) on a topic kind of its own: a node of the previous version
   * does not join it, so gossipsub never sends it one (on its `nondelivery` topic it would refuse a /2 as
   * RECORD_WRONG_TYPE and score the relay down).
   */
  nondelivery2: T.nondelivery2,
  /**
   * An open order's non-delivery (c0mpute.nondelivery/3, proved by the winning claim) on a topic kind of its own, for
   * the same reason as `nondelivery2`: a node of the previous version does not join it, so it is never sent one.
   */
  nondelivery3: T.nondelivery3,
  presence: T.presence,
  'pool-head': 'pool/1',
  'pool-witness': 'pool-witness/1',
  'pool-evidence': 'pool-evidence/1',
} as const;

export type TopicKind = keyof typeof TOPIC_TYPES;
export const TOPIC_KINDS = Object.keys(TOPIC_TYPES) as TopicKind[];

/** Every version's non-delivery topic kind (`nondelivery` /1, `nondelivery2` /2, `nondelivery3` /3: NONDELIVERY_TYPES). */
export const NONDELIVERY_TOPIC_KINDS = ['nondelivery', 'nondelivery2', 'nondelivery3'] as const satisfies readonly TopicKind[];
export type NonDeliveryTopicKind = (typeof NONDELIVERY_TOPIC_KINDS)[number];

/** Whether a topic kind carries a non-delivery (of any version). */
export function isNonDeliveryKind(kind: TopicKind): kind is NonDeliveryTopicKind {
  return (NONDELIVERY_TOPIC_KINDS as readonly TopicKind[]).includes(kind);
}

/** The topic kind a non-delivery of this content type travels on. */
export function nonDeliveryTopicKind(type: NonDeliveryType): NonDeliveryTopicKind {
  return NONDELIVERY_TOPIC_KINDS[NONDELIVERY_TYPES.indexOf(type)]!;
}

/** One entry per non-delivery topic kind, each made by `make` (the versions share a setting: a flood limit, a hook). */
export function perNonDeliveryKind<V>(make: (kind: NonDeliveryTopicKind) => V): Record<NonDeliveryTopicKind, V> {
  return Object.fromEntries(NONDELIVERY_TOPIC_KINDS.map((k) => [k, make(k)])) as Record<NonDeliveryTopicKind, V>;
}

/**
 * Records that may travel attached to a message of a kind (message framing,
 * docs/network.md): an offer may carry the advert it cites.
 */
export const ATTACHABLE: Partial<Record<TopicKind, readonly TopicKind[]>> = {
  offer: ['advert'],
};
/** At most this many attachments per message. */
export const MAX_ATTACHMENTS = 1;

const OVERLAY_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * Kinds whose topics are sharded by market (workload): the market kinds, and since the twelfth round of issue #16 the
 * outcome of a job (its selection, receipt, acceptance or non-delivery), which goes to the job's market, not to every
 * node of the network (docs/network.md §14, docs/scale.md §4 "Outcomes that stay in their market").
 */
export const SHARDED_KINDS: readonly TopicKind[] = ['advert', 'job', 'presence', 'selection', 'receipt', 'acceptance', ...NONDELIVERY_TOPIC_KINDS];
/**
 * Sharded kinds whose record does not name its market: a selection cites its job and an acceptance its receipt, by
 * address. Their publisher names the job's workload (`Network.publish`'s `workload`), and a node that takes one on a
 * shard cannot tell from the record whether it belongs there, so their placement is not checked.
 */
export const MARKET_NAMED_BY_PUBLISHER: readonly TopicKind[] = ['selection', 'acceptance'];

/** Whether a record of this kind names its market, so its placement on a shard can be checked (advert, presence, job, receipt, non-delivery /1, /2 and /3). */
export function placementCheckable(kind: TopicKind): boolean {
  return isSharded(kind) && !MARKET_NAMED_BY_PUBLISHER.includes(kind);
}
/** Markets per sharded kind: a workload's shard is the first byte of SHA-256(workload) mod this. */
export const SHARD_COUNT = 16;
const SHARD_RE = /^[0-9a-f]{2}$/;
/** Every shard, `00` … `0f`. */
export const ALL_SHARDS: readonly string[] = Array.from({ length: SHARD_COUNT }, (_, i) => i.toString(16).padStart(2, '0'));

export function isSharded(kind: TopicKind): boolean {
  return SHARDED_KINDS.includes(kind);
}

/** Workload → shard, remembered (every accepted advert, presence and job asks; a market has few workload names). */
const shardMemo = new Map<string, string>();
const SHARD_MEMO_MAX = 4_096;

/** The market shard of a workload. */
export function shardOf(workload: string): string {
  let s = shardMemo.get(workload);
  if (s === undefined) {
    s = (createHash('sha256').update(workload, 'utf8').digest()[0]! % SHARD_COUNT).toString(16).padStart(2, '0');
    if (shardMemo.size >= SHARD_MEMO_MAX) shardMemo.clear();
    shardMemo.set(workload, s);
  }
  return s;
}

/** The shards of some workloads (deduplicated, sorted). */
export function shardsOf(workloads: readonly string[]): string[] {
  // a record names a few workloads (at most 64): insertion into a short list, no Set, no sort's work buffers (every
  // accepted advert, presence and job asks, on the ingest path)
  const out: string[] = [];
  for (const w of workloads) {
    const s = shardOf(w);
    if (out.includes(s)) continue;
    let i = out.length;
    while (i > 0 && out[i - 1]! > s) i--;
    out.splice(i, 0, s);
  }
  return out;
}

/**
 * The shards a record of a sharded kind belongs on: its advert's or presence's workloads, its job's or receipt's
 * workload, the workload of the job a non-delivery carries. None for a selection or an acceptance (the record does not
 * name its market: MARKET_NAMED_BY_PUBLISHER).
 */
export function recordShards(kind: TopicKind, record: unknown): string[] {
  const r = record as { workloads?: unknown; workload?: unknown; proof?: { job?: unknown } };
  if (kind === 'job' || kind === 'receipt') return typeof r.workload === 'string' ? [shardOf(r.workload)] : [];
  if (isNonDeliveryKind(kind)) return r.proof?.job instanceof Uint8Array ? jobShards(r.proof.job) : [];
  if (MARKET_NAMED_BY_PUBLISHER.includes(kind)) return [];
  if (!Array.isArray(r.workloads)) return [];
  return shardsOf(r.workloads.every((w) => typeof w === 'string') ? (r.workloads as string[]) : r.workloads.filter((w): w is string => typeof w === 'string'));
}

/** The shard of the job a non-delivery carries (its proof; the record was verified with it); none if it cannot be read. */
function jobShards(bytes: Uint8Array): string[] {
  try {
    return recordShards('job', open(bytes, T.job, { trusted: true }).record);
  } catch {
    return [];
  }
}

const held = new WeakMap<object, readonly string[]>();

/**
 * The shards of a record a node holds decoded (an `Opened`'s record object), computed once per object and
 * kept beside it (a WeakMap: it goes with the record). Unsharded kinds are on no shard. For the record
 * sources that filter a `records/1` sync by market without re-opening what they hold.
 */
export function heldShards(kind: TopicKind, record: unknown): readonly string[] {
  if (!isSharded(kind) || typeof record !== 'object' || record === null) return [];
  let s = held.get(record);
  if (!s) held.set(record, (s = recordShards(kind, record)));
  return s;
}

/** Whether `s` names one of the SHARD_COUNT shards (`00` … `0f`). */
export function isShard(s: string): boolean {
  return SHARD_RE.test(s) && parseInt(s, 16) < SHARD_COUNT;
}

export function checkShard(shard: string): string {
  if (!isShard(shard)) throw new C0Error('NET_BAD_SHARD', `shard "${shard.slice(0, 10)}" is not one of 00..${ALL_SHARDS.at(-1)}`, { field: 'shard' });
  return shard;
}

export function isTopicKind(k: unknown): k is TopicKind {
  return typeof k === 'string' && Object.prototype.hasOwnProperty.call(TOPIC_TYPES, k);
}

export function checkOverlay(overlay: string): string {
  if (!OVERLAY_RE.test(overlay)) throw new C0Error('NET_BAD_OVERLAY', `overlay name "${overlay.slice(0, 70)}" must match ${OVERLAY_RE}`, { field: 'overlay' });
  return overlay;
}

/** A kind's topic; a sharded kind (advert, job, presence, a job's outcome) needs its shard (`shardOf(workload)`). */
export function topicFor(kind: TopicKind, overlay: string = DEFAULT_OVERLAY, shard?: string): string {
  if (!isTopicKind(kind)) throw new C0Error('NET_UNKNOWN_KIND', `unknown gossip kind "${String(kind).slice(0, 40)}"`, { field: 'kind' });
  const o = checkOverlay(overlay);
  if (isSharded(kind)) {
    if (shard === undefined) throw new C0Error('NET_SHARD_REQUIRED', `the ${kind} topics are sharded by market: name the shard`, { field: 'shard' });
    return `${TOPIC_PREFIX}${o}/${kind}/${checkShard(shard)}`;
  }
  return `${TOPIC_PREFIX}${o}/${kind}`;
}

/** Every topic of a kind on the given shards (one topic for an unsharded kind). */
export function topicsFor(kind: TopicKind, overlay: string = DEFAULT_OVERLAY, shards: readonly string[] = ALL_SHARDS): string[] {
  return isSharded(kind) ? shards.map((s) => topicFor(kind, overlay, s)) : [topicFor(kind, overlay)];
}

/** Parse a topic string; undefined when it is not one of ours. */
export function parseTopic(topic: string): { overlay: string; kind: TopicKind; shard?: string } | undefined {
  if (!topic.startsWith(TOPIC_PREFIX)) return undefined;
  const rest = topic.slice(TOPIC_PREFIX.length).split('/');
  const [overlay, kind, shard] = rest as [string, string, string | undefined];
  if (!OVERLAY_RE.test(overlay) || !isTopicKind(kind)) return undefined;
  if (isSharded(kind) !== (rest.length === 3) || rest.length > 3) return undefined;
  if (shard !== undefined) {
    if (!isShard(shard)) return undefined;
    return { overlay, kind, shard };
  }
  return { overlay, kind };
}

export function expectedType(kind: TopicKind): string {
  return TOPIC_TYPES[kind];
}

/** The gossip kind carrying a content type, if any. */
export function kindForType(type: string): TopicKind | undefined {
  for (const k of TOPIC_KINDS) if (TOPIC_TYPES[k] === type) return k;
  return undefined;
}
