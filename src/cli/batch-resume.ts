/**
 * `batch run --resume` (docs/matching.md "Running it again"): the lines an earlier run of the same batch left to do,
 * read from the `summary.json` it wrote in the output directory.
 *
 * QA pass on matching (session 49): running an interrupted batch again into the same output directory re-ran and
 * re-paid every line, the 14 done included, and overwrote the summary that said which lines were done, in flight or
 * never posted; and nothing could run only the rest. Now an output directory holding a summary is refused without
 * `--resume` (BATCH_OUTPUT_HAS_SUMMARY), and `--resume` posts only the lines the summary does not record `done`:
 * `failed` and `not-posted` ones, and lines it does not name. A line `unknown` there (in flight when the run lost its
 * daemon: it may have completed and been paid) is left out and named with its job unless `--rerun-unknown` says the
 * operator checked it (`c0mpute jobs`). The earlier summary is kept beside the new one, and the new one carries the
 * earlier entries of the lines it did not post (`resumed.carried`), so it stays the whole record for the next resume.
 */
import { readFileSync } from 'node:fs';
import { C0Error } from '../errors.js';
import type { Batch } from '../matching/batch-plan.js';

export type EarlierStatus = 'done' | 'failed' | 'unknown' | 'not-posted';

export interface EarlierRun {
  /** The batch file the earlier run read (absolute), when its summary says. */
  batch?: string;
  startedAt?: number;
  /** Every line the earlier summary records (its `perLine`, and the lines it carried from a run before it), as written. */
  perLine: Map<string, { status: EarlierStatus; job?: string; entry: unknown }>;
}

const STATUSES = new Set<string>(['done', 'failed', 'unknown', 'not-posted']);

/** An earlier run's summary.json: BATCH_SUMMARY_INVALID (naming the file) for one that is not a batch run's summary. */
export function readEarlierSummary(path: string): EarlierRun {
  const bad = (why: string) => new C0Error('BATCH_SUMMARY_INVALID', `${path}: ${why}; not the summary of a batch run (move it away, or give another --output-dir)`, { field: 'output-dir' });
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw bad(`cannot be read as JSON (${(e as Error).message.slice(0, 80)})`);
  }
  const s = raw as { batch?: unknown; startedAt?: unknown; perLine?: unknown; resumed?: { carried?: unknown } };
  if (typeof s !== 'object' || s === null || !Array.isArray(s.perLine)) throw bad('no perLine list');
  const carried = s.resumed && typeof s.resumed === 'object' && Array.isArray(s.resumed.carried) ? (s.resumed.carried as unknown[]) : [];
  const perLine = new Map<string, { status: EarlierStatus; job?: string; entry: unknown }>();
  const take = (list: unknown[], where: string) =>
    list.forEach((l: unknown, i) => {
      const x = l as { id?: unknown; status?: unknown; job?: unknown };
      if (typeof x !== 'object' || x === null || typeof x.id !== 'string' || typeof x.status !== 'string' || !STATUSES.has(x.status)) throw bad(`${where}[${i}] is not {id, status}`);
      // a line this summary ran again (perLine) wins over what it carried from the run before
      if (!perLine.has(x.id)) perLine.set(x.id, { status: x.status as EarlierStatus, ...(typeof x.job === 'string' ? { job: x.job } : {}), entry: l });
    });
  take(s.perLine, 'perLine');
  take(carried, 'resumed.carried');
  return { ...(typeof s.batch === 'string' ? { batch: s.batch } : {}), ...(typeof s.startedAt === 'number' ? { startedAt: s.startedAt } : {}), perLine };
}

/** What an earlier run recorded, counted for a message: `14 done, 4 unknown, 22 not posted`. */
export function earlierCounts(e: EarlierRun): string {
  const n = { done: 0, failed: 0, unknown: 0, 'not-posted': 0 };
  for (const l of e.perLine.values()) n[l.status]++;
  return `${n.done} of ${e.perLine.size} lines done, ${n.failed} failed, ${n.unknown} in flight when it stopped (outcome unknown), ${n['not-posted']} not posted`;
}

export interface Resumed<L> {
  /** The lines to post now, in the batch's order. */
  run: L[];
  /** Lines the earlier run recorded done: not posted again. */
  done: number;
  /** Lines in flight when the earlier run stopped, left out (without `rerunUnknown`): their jobs to check. */
  unknown: Array<{ id: string; job?: string }>;
  /** The earlier entries of the lines not posted now (done, unknown left out), carried into the new summary as written. */
  carried: unknown[];
}

/** The lines a resumed run posts: all but those recorded `done`, and, unless `rerunUnknown`, those recorded `unknown`. */
export function resumeSelection<L extends { id: string }>(earlier: EarlierRun, lines: readonly L[], rerunUnknown: boolean): Resumed<L> {
  const out: Resumed<L> = { run: [], done: 0, unknown: [], carried: [] };
  for (const l of lines) {
    const e = earlier.perLine.get(l.id);
    if (e?.status === 'done') {
      out.done++;
      out.carried.push(e.entry);
    } else if (e?.status === 'unknown' && !rerunUnknown) {
      out.unknown.push({ id: l.id, ...(e.job ? { job: e.job } : {}) });
      out.carried.push(e.entry);
    } else out.run.push(l);
  }
  return out;
}

/** The batch as the planner must see it for a subset of its lines: each workload's `lines` the subset's count (none: left out). */
export function subsetBatch(batch: Batch, run: ReadonlyArray<{ workload: string }>): Batch {
  const count = new Map<string, number>();
  for (const l of run) count.set(l.workload, (count.get(l.workload) ?? 0) + 1);
  return { ...batch, workloads: batch.workloads.filter((w) => count.has(w.workload)).map((w) => ({ ...w, lines: count.get(w.workload)! })) };
}
