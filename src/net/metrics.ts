/**
 * Network metrics (prom-client). One `NetMetrics` per network, registered in a
 * Registry the caller gives (the daemon's /metrics registry) or a fresh one.
 * Names are listed in docs/network.md §7.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface NetMetrics {
  registry: Registry;
  /** Every validation outcome: source = gossip | sync | fetch, verdict = accept | ignore | reject, reason = error code or "ok". */
  records: Counter<'source' | 'kind' | 'verdict' | 'reason'>;
  /** Records handed to subscribers (once per record). */
  delivered: Counter<'kind'>;
  published: Counter<'kind'>;
  queueDepth: Gauge<'queue'>;
  /** What each queue holds now, read when the gauge is collected (not set per record: that was 4 label lookups a message). */
  queueSources: Map<string, () => number>;
  dropped: Counter<'queue'>;
  streams: Counter<'protocol' | 'direction' | 'outcome'>;
  streamSeconds: Histogram<'protocol' | 'direction'>;
  syncs: Counter<'outcome'>;
  peers: Gauge;
}

export function createNetMetrics(registry: Registry = new Registry(), peerCount: () => number = () => 0): NetMetrics {
  const registers = [registry];
  const queueSources = new Map<string, () => number>();
  return {
    queueSources,
    registry,
    records: new Counter({ name: 'c0mpute_net_records_total', help: 'Records validated, by source, kind, verdict and reason', labelNames: ['source', 'kind', 'verdict', 'reason'], registers }),
    delivered: new Counter({ name: 'c0mpute_net_records_delivered_total', help: 'Accepted records handed to subscribers', labelNames: ['kind'], registers }),
    published: new Counter({ name: 'c0mpute_net_records_published_total', help: 'Records this node published', labelNames: ['kind'], registers }),
    queueDepth: new Gauge({
      name: 'c0mpute_net_queue_depth',
      help: 'Items waiting, by queue (validation, delivery)',
      labelNames: ['queue'],
      registers,
      collect() {
        for (const [queue, depth] of queueSources) this.set({ queue }, depth());
      },
    }),
    dropped: new Counter({ name: 'c0mpute_net_queue_dropped_total', help: 'Items dropped because a bounded queue was full', labelNames: ['queue'], registers }),
    streams: new Counter({ name: 'c0mpute_net_streams_total', help: 'Direct-protocol streams by protocol, direction (in|out) and outcome', labelNames: ['protocol', 'direction', 'outcome'], registers }),
    streamSeconds: new Histogram({
      name: 'c0mpute_net_stream_seconds',
      help: 'Direct-protocol stream duration',
      labelNames: ['protocol', 'direction'],
      buckets: [0.001, 0.005, 0.02, 0.1, 0.5, 2, 10, 60],
      registers,
    }),
    syncs: new Counter({ name: 'c0mpute_net_syncs_total', help: 'Sync exchanges with peers, by outcome', labelNames: ['outcome'], registers }),
    peers: new Gauge({
      name: 'c0mpute_net_peers',
      help: 'Connected peers',
      registers,
      collect() {
        this.set(peerCount());
      },
    }),
  };
}

/** What the signature threads' metrics read (verify-pool.ts verifyPoolStats: the process's pool, shared by every node in it). */
export interface VerifyThreadStats {
  ready: number;
  starting: number;
  waiting: number;
  crashes: number;
  byThreads: number;
  refusedByThreads: number;
  byLoop: number;
}

/**
 * The signature threads' metrics (docs/network.md §3 "Signature threads", §7), read when scraped: threads by state,
 * threads given up on, and envelopes verified by the threads and by the event loop. Nothing is registered for a node
 * that verifies on its event loop alone (verifyThreads 0).
 */
export function registerVerifyThreadMetrics(registry: Registry, stats: () => VerifyThreadStats | undefined): void {
  const registers = [registry];
  new Gauge({
    name: 'c0mpute_net_verify_threads',
    help: 'Signature threads by state: ready, starting (loading), waiting (lost; the replacement in its backoff)',
    labelNames: ['state'],
    registers,
    collect() {
      const s = stats();
      for (const state of ['ready', 'starting', 'waiting'] as const) this.set({ state }, s?.[state] ?? 0);
    },
  });
  new Counter({
    name: 'c0mpute_net_verify_thread_losses_total',
    help: 'Signature threads given up on (exited, threw, or stuck) and replaced',
    registers,
    collect() {
      const s = stats();
      this.reset();
      if (s) this.inc(s.crashes);
    },
  });
  new Counter({
    name: 'c0mpute_net_verify_envelopes_total',
    help: 'Signatures verified, by where: a signature thread, or the event loop (lone records, a thread not ready, past the lead)',
    labelNames: ['by'],
    registers,
    collect() {
      // each counted where it was verified, when it was (not total minus the threads' share: envelopes still with a
      // thread would count as the loop's until settled, and the series would go down)
      const s = stats();
      this.reset();
      this.inc({ by: 'thread' }, s ? s.byThreads + s.refusedByThreads : 0);
      this.inc({ by: 'loop' }, s?.byLoop ?? 0);
    },
  });
}
