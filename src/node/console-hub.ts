/**
 * The console's live feed (docs/console.md "Live updates"): one hub per
 * daemon that the console's Server-Sent Events stream reads.
 *
 * - `records`: accepted records per overlay and kind, taken from the network's
 *   subscriber feed and batched (one event per overlay every `batchMs` at most,
 *   with counts per kind and the last few addresses), so a flooded market does
 *   not flood the page.
 * - `job`: every buyer event of every run on this node (from the console's
 *   form and from `c0mpute run` alike), tagged with the job's address once it
 *   is known; the hub keeps the events of the last `keepRuns` runs, so a page
 *   opened mid-run shows the run so far.
 * - `health`: every `healthMs`, per overlay, records accepted/ignored/rejected
 *   per kind since the previous sample, queue depths, peers, running jobs, and
 *   the event loop's lag; the last `keepSamples` samples are kept for the
 *   overview's charts.
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { TOPIC_KINDS, type TopicKind } from '../net/topics.js';
import type { Daemon } from './daemon.js';
import type { OverlayNode } from './overlay.js';
import type { WireEvent } from './events.js';
import { RUN_LOG_BYTES, RUN_LOG_EVENTS, RunEvents } from '../util/run-log.js';

export interface HubOptions {
  batchMs?: number;
  healthMs?: number;
  keepSamples?: number;
  keepRuns?: number;
  /** The most events one run's log keeps (past it, progress and offer events go first, oldest first; the latest event always stays). */
  runEvents?: number;
  /** The most bytes (of the events' JSON) one run's log keeps, the same way. */
  runBytes?: number;
}

export const HUB_DEFAULTS = { batchMs: 500, healthMs: 5_000, keepSamples: 60, keepRuns: 50, runEvents: RUN_LOG_EVENTS, runBytes: RUN_LOG_BYTES } as const;

export type HubEvent =
  | { type: 'records'; overlay: string; counts: Record<string, number>; last: Array<{ kind: string; address: string; signer: string }> }
  | { type: 'job'; overlay: string; run: number; job?: string; ev: WireEvent }
  | { type: 'health'; sample: HealthSample };

export interface HealthSample {
  at: number;
  lagMs: number;
  overlays: Record<string, { peers: number; running: number; queues: Record<string, number>; records: Record<string, Record<string, number>> }>;
}

export interface RunLog {
  run: number;
  overlay: string;
  job?: string;
  startedAt: number;
  done: boolean;
  /** How the run ended (its result's status: no-offers, no-eligible-provider, denied…), once it has; the Jobs list says it (console-routes.ts). */
  status?: string;
  events: WireEvent[];
  /** Events left out of `events` to keep the log within runEvents and runBytes. */
  omitted: number;
}

type Listener = (e: HubEvent) => void;

/** The lag histogram's sampling period, ms. */
const LAG_RESOLUTION_MS = 100;

/**
 * Event-loop lag from monitorEventLoopDelay's mean (ns), in ms to 2 places: the histogram records the time between
 * its timer's ticks, so an idle loop reads the sampling period itself (about 100 ms); the lag is what exceeds it.
 */
export function lagFromHistogramMean(meanNs: number, resolutionMs = LAG_RESOLUTION_MS): number {
  const ms = meanNs / 1e6 - resolutionMs;
  return Number.isFinite(ms) ? Math.max(0, Math.round(ms * 100) / 100) : 0;
}

export class ConsoleHub {
  readonly #o: Required<HubOptions>;
  readonly #listeners = new Set<Listener>();
  readonly #stops: Array<() => void> = [];
  readonly #pending = new Map<string, { counts: Record<string, number>; last: Array<{ kind: string; address: string; signer: string }> }>();
  #flush: NodeJS.Timeout | undefined;
  #nextRun = 1;
  readonly runs: RunLog[] = [];
  readonly samples: HealthSample[] = [];
  #lastTotals = new Map<string, Map<string, number>>();
  #lag: IntervalHistogram | undefined;

  constructor(private readonly d: Daemon, o: HubOptions = {}) {
    this.#o = { ...HUB_DEFAULTS, ...o };
  }

  start(): void {
    for (const o of this.d.overlays.values()) {
      for (const kind of TOPIC_KINDS) {
        try {
          this.#stops.push(o.net.subscribe(kind, (rec) => this.#record(o.name, kind, rec.address, rec.signer)));
        } catch {
          // not a joined topic on this overlay
        }
      }
    }
    // 100 ms: a 20 ms sampling timer alone cost an idle daemon ~0.2 % of a core (docs/scale.md "Idle cost").
    this.#lag = monitorEventLoopDelay({ resolution: LAG_RESOLUTION_MS });
    this.#lag.enable();
    const t = setInterval(() => void this.#sample(), this.#o.healthMs);
    t.unref();
    this.#stops.push(() => clearInterval(t));
    void this.#sample();
  }

  stop(): void {
    for (const s of this.#stops.splice(0)) s();
    if (this.#flush) clearTimeout(this.#flush);
    this.#lag?.disable();
    this.#listeners.clear();
  }

  listen(l: Listener): () => void {
    this.#listeners.add(l);
    return () => this.#listeners.delete(l);
  }

  #emit(e: HubEvent): void {
    for (const l of this.#listeners) {
      try {
        l(e);
      } catch {
        // a listener (a closed page) must not stop the others
      }
    }
  }

  #record(overlay: string, kind: TopicKind, address: string, signer: string): void {
    const p = this.#pending.get(overlay) ?? { counts: {}, last: [] };
    p.counts[kind] = (p.counts[kind] ?? 0) + 1;
    p.last.push({ kind, address, signer });
    if (p.last.length > 8) p.last.shift();
    this.#pending.set(overlay, p);
    this.#flush ??= setTimeout(() => {
      this.#flush = undefined;
      for (const [ov, q] of this.#pending) this.#emit({ type: 'records', overlay: ov, ...q });
      this.#pending.clear();
    }, this.#o.batchMs);
  }

  /** A run begins: returns the function its buyer events go through. */
  beginRun(overlay: string): { event(ev: WireEvent): void; end(status?: string): void } {
    const log: RunLog = { run: this.#nextRun++, overlay, startedAt: this.d.clock(), done: false, events: [], omitted: 0 };
    this.runs.push(log);
    while (this.runs.length > this.#o.keepRuns) this.runs.shift();
    // Bounded whatever the run's provider sends (src/util/run-log.ts, the console's pages keep the same rule)
    const bounded = new RunEvents<WireEvent>(this.#o.runEvents, this.#o.runBytes);
    log.events = bounded.events;
    return {
      event: (ev) => {
        if (ev.e === 'job') log.job = (ev.job as { address?: string } | undefined)?.address;
        bounded.push(ev);
        log.omitted = bounded.omitted;
        this.#emit({ type: 'job', overlay, run: log.run, ...(log.job ? { job: log.job } : {}), ev });
      },
      end: (status) => {
        log.done = true;
        if (status !== undefined) log.status = status;
        this.#emit({ type: 'job', overlay, run: log.run, ...(log.job ? { job: log.job } : {}), ev: { e: 'done' } });
      },
    };
  }

  async #sample(): Promise<void> {
    const overlays: HealthSample['overlays'] = {};
    for (const o of this.d.overlays.values()) overlays[o.name] = await this.#overlaySample(o);
    const lagMs = this.#lag ? lagFromHistogramMean(this.#lag.mean) : 0;
    this.#lag?.reset();
    const sample: HealthSample = { at: this.d.clock(), lagMs: Number.isFinite(lagMs) ? lagMs : 0, overlays };
    this.samples.push(sample);
    while (this.samples.length > this.#o.keepSamples) this.samples.shift();
    this.#emit({ type: 'health', sample });
  }

  async #overlaySample(o: OverlayNode): Promise<HealthSample['overlays'][string]> {
    const records: Record<string, Record<string, number>> = {};
    const queues: Record<string, number> = {};
    const last = this.#lastTotals.get(o.name) ?? new Map<string, number>();
    const now = new Map<string, number>();
    // Only the two metrics read here (collecting the whole registry every healthMs was most of an idle daemon's sampling cost).
    const wanted = ['c0mpute_net_records_total', 'c0mpute_net_queue_depth'].map((n) => o.registry.getSingleMetric(n));
    for (const m of await Promise.all(wanted.map((w) => w?.get()))) {
      if (!m) continue;
      if (m.name === 'c0mpute_net_records_total') {
        for (const v of m.values) {
          const key = `${String(v.labels.kind)}|${String(v.labels.verdict)}`;
          now.set(key, (now.get(key) ?? 0) + v.value);
        }
      } else if (m.name === 'c0mpute_net_queue_depth') {
        for (const v of m.values) queues[String(v.labels.queue)] = v.value;
      }
    }
    for (const [key, total] of now) {
      const delta = total - (last.get(key) ?? 0);
      if (delta <= 0) continue;
      const [kind, verdict] = key.split('|') as [string, string];
      (records[kind] ??= {})[verdict] = delta;
    }
    this.#lastTotals.set(o.name, now);
    return { peers: o.net.peers().length, running: o.provider?.running ?? 0, queues, records };
  }
}
