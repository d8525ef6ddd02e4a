/**
 * Delivery of accepted records to subscribers, through one queue bounded by
 * count and by envelope bytes (the record's and its attachments': DELIVERY_QUEUE
 * below; overflow is dropped and counted). Each record reaches each handler once:
 * the pipeline only hands over records it has not accepted before.
 *
 * What a peer can cause at will is not logged line by line (docs/node.md "Logs"):
 * a record dropped because the queue is full, and a handler failing because this
 * node's store fails (a STORE_* code: the store logs its own state change), are
 * written once, then at most one summary a minute with the count (PeerLog, by
 * code). Any other handler failure is a bug, logged in full each time.
 *
 * A record that came on a direct route (offer/1, outcome/1) is answered only
 * once it was handled: its push carries a `Handled` callback, told whether
 * every handler took it (false when it was dropped or a handler threw). Gossip
 * pushes none (nothing waits on them: no promise per gossiped message).
 */
import type { Opened } from '../records/envelope.js';
import type { Logger } from '../util/log.js';
import type { RecordSourceKind } from './gossip-validation.js';
import type { NetMetrics } from './metrics.js';
import type { TopicKind } from './topics.js';
import { PeerLog } from '../util/peer-log.js';
import { isStoreFailure } from '../util/store-damage.js';

/** The delivery queue's default bounds (docs/network.md "The delivery queue"). */
export const DELIVERY_QUEUE = {
  /** records waiting at most */
  maxRecords: 10_000,
  /**
   * envelope bytes waiting at most, a record's and its attachments' (opened records own their bytes: `open()` copies a
   * view of a larger buffer, so these are what the queue holds, with about 1 KiB of decoded record each): 10,000
   * ordinary records (≤ 3 KiB) fit, or 860 non-deliveries of 38 KiB, or 512 records of the 64 KiB maximum
   */
  maxBytes: 32 * 1024 * 1024,
} as const;


/** A record's envelope bytes and its attachments'. */
function sizeOf(rec: Opened, meta: DeliveryMeta): number {
  let n = rec.bytes.byteLength;
  for (const a of meta.attachments) n += a.bytes.byteLength;
  return n;
}

export interface DeliveryMeta {
  kind: TopicKind;
  /** PeerId string of the peer it came from. */
  from: string;
  /** How it came: from a peer (gossip, sync, a direct route), or this node's own publication (`own`). */
  source: RecordSourceKind | 'own';
  /** Records that travelled with it (e.g. the advert an offer cites). */
  attachments: Opened[];
}

export type RecordHandler = (rec: Opened, meta: DeliveryMeta) => void | Promise<void>;

/** Told once a pushed record was handled: `kept` when every handler returned without throwing; false when it was dropped or one threw. */
export type Handled = (kept: boolean) => void;

export class Dispatcher {
  readonly #subs = new Map<TopicKind, Set<RecordHandler>>();
  /** The handlers also given this node's own records of a kind (`own`). */
  readonly #ownSubs = new Map<TopicKind, Set<RecordHandler>>();
  readonly #queue: Array<{ rec: Opened; meta: DeliveryMeta; done: Handled | undefined; size: number }> = [];
  readonly #max: number;
  readonly #maxBytes: number;
  /** envelope bytes in #queue */
  #bytes = 0;
  /** the drops and store failures, summarised by code */
  readonly #summary: PeerLog;
  readonly #m: NetMetrics;
  readonly #log: Logger;
  #pumping = false;
  #idle: Array<() => void> = [];

  constructor(opts: { maxQueue?: number; maxQueueBytes?: number; metrics: NetMetrics; log: Logger; clock?: () => number }) {
    this.#max = opts.maxQueue ?? DELIVERY_QUEUE.maxRecords;
    this.#maxBytes = opts.maxQueueBytes ?? DELIVERY_QUEUE.maxBytes;
    this.#m = opts.metrics;
    this.#log = opts.log;
    this.#summary = new PeerLog({ log: opts.log, ...(opts.clock ? { clock: opts.clock } : {}) });
    opts.metrics.queueSources.set('delivery', () => this.#queue.length);
  }

  /** `own`: the handler is also given the records this node itself publishes of the kind (pushed with `source: 'own'`). */
  subscribe(kind: TopicKind, handler: RecordHandler, opts: { own?: boolean } = {}): () => void {
    const sets = opts.own ? [this.#subs, this.#ownSubs] : [this.#subs];
    for (const m of sets) {
      let s = m.get(kind);
      if (!s) m.set(kind, (s = new Set()));
      s.add(handler);
    }
    return () => {
      for (const m of sets) m.get(kind)?.delete(handler);
    };
  }

  /** Whether any handler takes this node's own records of `kind`. */
  takesOwn(kind: TopicKind): boolean {
    return (this.#ownSubs.get(kind)?.size ?? 0) > 0;
  }

  /** Envelope bytes waiting (records and attachments). */
  get queuedBytes(): number {
    return this.#bytes;
  }

  /**
   * Queue `rec` for its kind's handlers; `done` (if any) is told whether they all took it, or at once that it was
   * dropped (the queue holds its bound of records or of bytes; one record larger than the byte bound alone is taken
   * into an empty queue; this node's own records are always taken).
   */
  push(rec: Opened, meta: DeliveryMeta, done?: Handled): void {
    const size = sizeOf(rec, meta);
    // this node's own records (source 'own') are never dropped: their rate is this node's own publishing, and one
    // dropped here is lost for good (it is marked seen, so no peer's copy is delivered: review s53)
    if (meta.source !== 'own' && (this.#queue.length >= this.#max || (this.#queue.length > 0 && this.#bytes + size > this.#maxBytes))) {
      this.#m.dropped.inc({ queue: 'delivery' });
      this.#summary.warn(undefined, 'NET_DELIVERY_QUEUE_FULL', 'delivery queue full: record dropped', { kind: meta.kind, address: rec.address, records: this.#queue.length, bytes: this.#bytes });
      done?.(false);
      return;
    }
    this.#queue.push({ rec, meta, done, size });
    this.#bytes += size;
    if (!this.#pumping) void this.#pump();
  }

  /** Write the summaries pending (the drops and store failures since the last line) and stop their timer. */
  stopLog(): void {
    this.#summary.stop();
  }

  /** Resolves when the queue is empty (tests, orderly stop). */
  drained(): Promise<void> {
    if (!this.#pumping && this.#queue.length === 0) return Promise.resolve();
    return new Promise((r) => this.#idle.push(r));
  }

  async #pump(): Promise<void> {
    this.#pumping = true;
    try {
      while (this.#queue.length) {
        const { rec, meta, done, size } = this.#queue.shift()!;
        this.#bytes -= size;
        this.#m.delivered.inc({ kind: meta.kind });
        let kept = true;
        for (const h of (meta.source === 'own' ? this.#ownSubs : this.#subs).get(meta.kind) ?? []) {
          try {
            await h(rec, meta);
          } catch (e) {
            kept = false;
            if (isStoreFailure(e)) this.#summary.warn(undefined, (e as { code: string }).code, 'record handler failed: this node\'s store takes no writes', { kind: meta.kind, address: rec.address, err: e });
            else this.#log.error({ err: e, kind: meta.kind, address: rec.address }, 'record handler failed');
          }
        }
        if (done) {
          try {
            done(kept);
          } catch (e) {
            this.#log.error({ err: e, kind: meta.kind, address: rec.address }, 'record handled callback failed');
          }
        }
      }
    } finally {
      this.#pumping = false;
      const w = this.#idle;
      this.#idle = [];
      for (const r of w) r();
    }
  }
}
