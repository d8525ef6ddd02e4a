/**
 * Delivery of accepted records to subscribers, through one bounded queue
 * (overflow is dropped and counted). Each record reaches each handler once:
 * the pipeline only hands over records it has not accepted before.
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

export interface DeliveryMeta {
  kind: TopicKind;
  /** PeerId string of the peer it came from. */
  from: string;
  source: RecordSourceKind;
  /** Records that travelled with it (e.g. the advert an offer cites). */
  attachments: Opened[];
}

export type RecordHandler = (rec: Opened, meta: DeliveryMeta) => void | Promise<void>;

/** Told once a pushed record was handled: `kept` when every handler returned without throwing; false when it was dropped or one threw. */
export type Handled = (kept: boolean) => void;

export class Dispatcher {
  readonly #subs = new Map<TopicKind, Set<RecordHandler>>();
  readonly #queue: Array<{ rec: Opened; meta: DeliveryMeta; done: Handled | undefined }> = [];
  readonly #max: number;
  readonly #m: NetMetrics;
  readonly #log: Logger;
  #pumping = false;
  #idle: Array<() => void> = [];

  constructor(opts: { maxQueue?: number; metrics: NetMetrics; log: Logger }) {
    this.#max = opts.maxQueue ?? 10_000;
    this.#m = opts.metrics;
    this.#log = opts.log;
    opts.metrics.queueSources.set('delivery', () => this.#queue.length);
  }

  subscribe(kind: TopicKind, handler: RecordHandler): () => void {
    let s = this.#subs.get(kind);
    if (!s) this.#subs.set(kind, (s = new Set()));
    s.add(handler);
    return () => {
      s.delete(handler);
    };
  }

  /** Queue `rec` for its kind's handlers; `done` (if any) is told whether they all took it, or at once that it was dropped. */
  push(rec: Opened, meta: DeliveryMeta, done?: Handled): void {
    if (this.#queue.length >= this.#max) {
      this.#m.dropped.inc({ queue: 'delivery' });
      this.#log.warn({ kind: meta.kind, address: rec.address }, 'delivery queue full: record dropped');
      done?.(false);
      return;
    }
    this.#queue.push({ rec, meta, done });
    if (!this.#pumping) void this.#pump();
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
        const { rec, meta, done } = this.#queue.shift()!;
        this.#m.delivered.inc({ kind: meta.kind });
        let kept = true;
        for (const h of this.#subs.get(meta.kind) ?? []) {
          try {
            await h(rec, meta);
          } catch (e) {
            kept = false;
            this.#log.error({ err: e, kind: meta.kind, address: rec.address }, 'record handler failed');
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
