/**
 * Drops the job history older than `history.keepDays` (docs/node.md "Job
 * history"): jobs that many days past their deadline, with their selections,
 * the offers and claims those weighed, and claim refusals (the record store),
 * a provider's note of each job it ran (provider-runs), and a pool member's
 * dispatch trail and run notes (pools/trail.ts); a provider's finished
 * training member runs (src/roles/trainer/run-dirs.ts TrainRunDirs) in a
 * pass of their own (src/node/provider-wiring.ts). A pass runs shortly after
 * start and then every `everyMs`; it deletes in batches, yielding to the event
 * loop between them, so a node told to keep less after months of history does
 * not stall. Stopping waits for a batch in flight, so the store is never
 * closed under it.
 */
import type { HistoryPruned } from '../store/records.js';
import type { Logger } from '../util/log.js';

export const DAY_MS = 24 * 3600_000;
/** Default `history.keepDays`: a month past each job's deadline. */
export const DEFAULT_HISTORY_KEEP_DAYS = 30;
/** How often a pass runs after the first. */
export const HISTORY_PRUNE_EVERY_MS = 10 * 60_000;
/** How long after start the first pass runs (the node's start is busy enough). */
export const HISTORY_PRUNE_FIRST_MS = 2_000;
/** Records deleted per synced batch. */
export const HISTORY_PRUNE_BATCH = 1000;

export interface HistoryPruning {
  /** Run a pass now (or wait for the one running); resolves to the records it dropped. */
  pass(): Promise<number>;
  stop(): Promise<void>;
}

export function startHistoryPruning(o: {
  /** What holds job history (the record store; a provider's runs; a pool member's trail and run log), pruned in this order. */
  stores: ReadonlyArray<{ pruneHistory(before: number, max?: number, after?: string): Promise<HistoryPruned> }>;
  keepDays: number;
  clock: () => number;
  log: Logger;
  everyMs?: number;
  firstMs?: number;
  batch?: number;
  /** Called with each batch's count (a metric). */
  onPruned?: (removed: number) => void;
}): HistoryPruning {
  const keepMs = o.keepDays * DAY_MS;
  let running: Promise<number> | undefined;
  let stopped = false;

  const run = async (): Promise<number> => {
    let total = 0;
    const before = o.clock() - keepMs;
    for (const store of o.stores) {
      // each batch starts where the last ended: the keys it deleted stay as markers until LevelDB compacts
      let after: string | undefined;
      for (;;) {
        if (stopped) break;
        const r = await store.pruneHistory(before, o.batch ?? HISTORY_PRUNE_BATCH, after);
        total += r.removed;
        if (r.removed) o.onPruned?.(r.removed);
        if (!r.more || r.after === undefined) break;
        after = r.after;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
    if (total) o.log.info({ removed: total, keepDays: o.keepDays }, 'dropped job history past history.keepDays');
    return total;
  };
  const pass = (): Promise<number> => {
    running ??= run()
      .catch((e: unknown) => {
        o.log.warn({ err: (e as Error).message }, 'dropping old job history failed; tried again at the next pass');
        return 0;
      })
      .finally(() => (running = undefined));
    return running;
  };

  const timers = [setTimeout(() => void pass(), o.firstMs ?? HISTORY_PRUNE_FIRST_MS), setInterval(() => void pass(), o.everyMs ?? HISTORY_PRUNE_EVERY_MS)];
  for (const t of timers) t.unref();
  return {
    pass,
    async stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      await running;
    },
  };
}
