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
 *
 * A pass that would drop the whole history (the newest record held is past the
 * cutoff) is held while the wall clock is not corroborated: a node started with
 * its clock stepped far forward (a VM whose RTC is wrong until NTP syncs) would
 * otherwise delete every job it holds 2 s after the start, saying so at info
 * only (QA qaOps F2). The clock is corroborated by a peer's fresh signed record
 * (ClockCorroboration), and stays so while the wall clock keeps pace with the
 * monotonic one since.
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

/**
 * Whether this node's wall clock agrees with its peers': told (`note`) the time a peer's fresh record was signed at
 * (an advert's or presence's issuedAt, a job's announcedAt, heard on gossip), it holds while that time was within the
 * skew window of this node's clock then, and the wall clock has moved as the monotonic clock has since (a step after
 * it, either way, undoes it until the next such record).
 */
export class ClockCorroboration {
  #at: { wall: number; mono: number } | undefined;
  /** Told each time the clock becomes corroborated after it was not (a pass held for it runs then: HistoryPruning.corroborated). */
  onCorroborated: (() => void) | undefined;
  constructor(
    private readonly wall: () => number,
    private readonly mono: () => number,
    private readonly skewMs: number,
  ) {}

  /** A peer's record signed at `signedAt` was accepted now. */
  note(signedAt: number): void {
    const wall = this.wall();
    if (Math.abs(wall - signedAt) > this.skewMs) return;
    const was = this.holds();
    this.#at = { wall, mono: this.mono() };
    if (!was) this.onCorroborated?.();
  }

  holds(): boolean {
    if (this.#at === undefined) return false;
    return Math.abs(this.wall() - (this.#at.wall + (this.mono() - this.#at.mono))) <= this.skewMs;
  }
}

export interface HistoryPruning {
  /** Run a pass now (or wait for the one running); resolves to the records it dropped. */
  pass(): Promise<number>;
  /**
   * The clock was just corroborated: a pass held for it (one that would drop the whole history) runs now, not at the
   * next `everyMs` (10 min); nothing when none was held.
   */
  corroborated(): void;
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
  /**
   * The date of the newest history held (RecordStore.newestHistoryAt), and whether the clock is corroborated
   * (ClockCorroboration.holds): given both, a pass that would drop all of it is held while the clock is not.
   */
  wholeHistory?: { newest: () => Promise<number | undefined>; corroborated: () => boolean };
}): HistoryPruning {
  const keepMs = o.keepDays * DAY_MS;
  let running: Promise<number> | undefined;
  let stopped = false;
  let heldSaid = false;
  /** The last pass was held for the clock (corroborated() runs the next at once). */
  let held = false;

  const run = async (): Promise<number> => {
    let total = 0;
    const before = o.clock() - keepMs;
    const newest = o.wholeHistory ? await o.wholeHistory.newest() : undefined;
    const all = newest !== undefined && newest < before;
    held = all && !o.wholeHistory!.corroborated();
    if (held && newest !== undefined) {
      if (!heldSaid) {
        heldSaid = true;
        o.log.warn(
          { code: 'HISTORY_PRUNE_HELD', keepDays: o.keepDays, newest: new Date(newest).toISOString(), now: new Date(o.clock()).toISOString() },
          `not dropping job history: the newest held is dated ${new Date(newest).toISOString()}, more than history.keepDays (${o.keepDays}) before this node's clock (${new Date(o.clock()).toISOString()}), so a pass would drop all of it. Held until a peer's fresh record confirms the clock; if the clock is wrong (stepped forward), set it right and nothing is lost`,
        );
      }
      return 0;
    }
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
    if (total && all) o.log.warn({ code: 'HISTORY_PRUNED_ALL', removed: total, keepDays: o.keepDays }, 'dropped job history past history.keepDays: all of it (the newest was past it too; the clock is corroborated by a peer)');
    else if (total) o.log.info({ removed: total, keepDays: o.keepDays }, 'dropped job history past history.keepDays');
    if (!all) heldSaid = false;
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
    corroborated() {
      // after a pass under way (it may be the one being held as this comes)
      void (running ?? Promise.resolve()).then(() => {
        if (held && !stopped) void pass();
      });
    },
    async stop() {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      await running;
    },
  };
}
