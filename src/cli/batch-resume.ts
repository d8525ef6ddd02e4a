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
 *
 * Which batch a summary belongs to is the batch's content, not its path (QA qaMatch F1): a summary records the batch's
 * `identity` (per workload what its lines are: the line count, which fixes the ids' width, the params and input
 * patterns, the input files' sizes; and a digest of them all). `--resume` goes on only when the batch read now has the
 * same identity, wherever the file is; any difference is BATCH_RESUME_OTHER_BATCH naming it. Before, only the path
 * counted: a file grown from 9 to 10 lines in place re-posted and re-paid every line (the ids changed width), changed
 * params ran the rest with other params beside the old outputs, and a byte-identical copy elsewhere was refused.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { processGone } from '../node/daemon-info.js';
import { writer } from '../util/atomic-file.js';
import { C0Error } from '../errors.js';
import type { Batch } from '../matching/batch-plan.js';
import { sumMoney } from '../matching/batch-lines.js';
import type { BatchRunSummary, LineReport } from '../matching/batch-run.js';
import { isAmount, type Money } from '../records/money.js';
import type { BatchLine, LineRecipe } from '../node/batch-client.js';

/** What one workload's lines are, as a summary records it (`identity.workloads[]`). */
export interface WorkloadIdentity {
  workload: string;
  lines: number;
  params?: string;
  /** The input file name pattern. */
  input?: string;
  /** sha256 of the generated input pattern (`inputText`), which may be long. */
  inputText?: string;
  /** sha256 over every line's input file name and size. */
  inputFiles?: string;
}

/** A batch's identity: what its lines are (workloads by name) and a digest over it. */
export interface BatchIdentity {
  digest: string;
  workloads: WorkloadIdentity[];
}

const sha256 = (s: string) => `sha256:${createHash('sha256').update(s, 'utf8').digest('hex')}`;

/**
 * The identity of a batch: per workload its line count (which fixes the ids and their width), the params and input
 * patterns, and its input files' names and sizes. How the lines are planned and priced (window, lineTime, units,
 * maxPrice, requirements, deadline, timeout) is not part of it: a resume may change those (raise maxPrice after a
 * refusal, give a longer deadline) and still be the same batch. Workloads are taken by name, so their order in the
 * file does not count.
 */
export function batchIdentity(recipes: readonly LineRecipe[], lines: readonly BatchLine[]): BatchIdentity {
  const files = new Map<string, string[]>();
  for (const l of lines) if (l.inputFile !== undefined) (files.get(l.workload) ?? files.set(l.workload, []).get(l.workload)!).push(`${l.id}\t${l.inputBytes}`);
  const workloads = [...recipes]
    .sort((a, b) => (a.workload < b.workload ? -1 : a.workload > b.workload ? 1 : 0))
    .map((r): WorkloadIdentity => ({
      workload: r.workload,
      lines: r.lines,
      ...(r.params === undefined ? {} : { params: r.params }),
      ...(r.input === undefined ? {} : { input: r.input }),
      ...(r.inputText === undefined ? {} : { inputText: sha256(r.inputText) }),
      ...(files.has(r.workload) ? { inputFiles: sha256(files.get(r.workload)!.join('\n')) } : {}),
    }));
  // the keys in a fixed order, so the digest does not depend on how the objects were built
  const canonical = workloads.map((w) => [w.workload, w.lines, w.params ?? null, w.input ?? null, w.inputText ?? null, w.inputFiles ?? null]);
  return { digest: sha256(JSON.stringify(canonical)), workloads };
}

const shown = (v: string | undefined) => (v === undefined ? 'none' : JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}…` : v));

/** What differs between the batch an earlier summary recorded and the one read now, for people (empty: the same batch). */
export function identityChanges(earlier: BatchIdentity, now: BatchIdentity): string[] {
  if (earlier.digest === now.digest) return [];
  const out: string[] = [];
  const before = new Map(earlier.workloads.map((w) => [w.workload, w]));
  for (const w of now.workloads) {
    const e = before.get(w.workload);
    before.delete(w.workload);
    if (!e) {
      out.push(`workload ${w.workload} was not in it`);
      continue;
    }
    if (e.lines !== w.lines) {
      const width = String(e.lines).length !== String(w.lines).length ? ` (its line ids change width: ${w.workload}-${'1'.padStart(String(e.lines).length, '0')} is now ${w.workload}-${'1'.padStart(String(w.lines).length, '0')})` : '';
      out.push(`${w.workload}: lines ${e.lines} → ${w.lines}${width}`);
    }
    if (e.params !== w.params) out.push(`${w.workload}: params ${shown(e.params)} → ${shown(w.params)}`);
    if (e.input !== w.input) out.push(`${w.workload}: input ${shown(e.input)} → ${shown(w.input)}`);
    if (e.inputText !== w.inputText) out.push(`${w.workload}: inputText changed`);
    if (e.input === w.input && e.lines === w.lines && e.inputFiles !== w.inputFiles) out.push(`${w.workload}: its input files changed (a name or a size)`);
  }
  for (const w of before.keys()) out.push(`workload ${w} is no longer in it`);
  // digests differ but nothing named: a summary edited by hand, or written by another version's rule
  return out.length ? out : ['its identity digest differs'];
}

/** A summary's `identity`, when it has a well-formed one (summaries of earlier versions have none). */
function readIdentity(v: unknown): BatchIdentity | undefined {
  const x = v as { digest?: unknown; workloads?: unknown };
  if (typeof x !== 'object' || x === null || typeof x.digest !== 'string' || !Array.isArray(x.workloads)) return undefined;
  const ok = x.workloads.every((w: unknown) => typeof w === 'object' && w !== null && typeof (w as WorkloadIdentity).workload === 'string' && typeof (w as WorkloadIdentity).lines === 'number');
  return ok ? { digest: x.digest, workloads: x.workloads as WorkloadIdentity[] } : undefined;
}

/**
 * BATCH_RESUME_OTHER_BATCH unless the earlier summary is this batch's. A summary with an identity: the same identity,
 * wherever the file is now. One written before summaries had it: the same path as before (the only check that version
 * could make) and exactly the same line ids (so a line count whose ids changed width is caught even then).
 */
export function checkSameBatch(earlier: EarlierRun, now: BatchIdentity, file: string, lineIds: readonly string[], summaryFile: string): void {
  const refuse = (why: string) =>
    new C0Error('BATCH_RESUME_OTHER_BATCH', `${summaryFile} is the summary of another batch: ${why}. --resume continues the same batch (its lines, their params and inputs); put the file back as it was, or give another --output-dir; nothing was posted`, { field: 'output-dir' });
  if (earlier.identity) {
    const changes = identityChanges(earlier.identity, now);
    if (changes.length) throw refuse(`since that run, ${changes.join('; ')}`);
    return;
  }
  if (earlier.batch !== undefined && earlier.batch !== file) throw refuse(`it ran ${earlier.batch}, not ${file} (a summary of this version's predecessors names the batch by its path)`);
  const ids = new Set(lineIds);
  const strange = [...earlier.perLine.keys()].filter((id) => !ids.has(id));
  if (strange.length || earlier.perLine.size !== ids.size) {
    throw refuse(`its lines are not this batch's (${earlier.perLine.size} recorded${strange.length ? `, ${strange.slice(0, 3).join(', ')}${strange.length > 3 ? ', …' : ''} not among this batch's ${ids.size}` : `, this batch has ${ids.size}`})`);
  }
}

export type EarlierStatus = 'done' | 'failed' | 'unknown' | 'not-posted';

export interface EarlierRun {
  /** The batch file the earlier run read (absolute), when its summary says. */
  batch?: string;
  /** The batch's identity (batchIdentity) as the earlier run recorded it; absent in summaries of earlier versions. */
  identity?: BatchIdentity;
  startedAt?: number;
  /** Every line the earlier summary records (its `perLine`, and the lines it carried from a run before it), as written. */
  perLine: Map<string, { status: EarlierStatus; job?: string; entry: unknown }>;
}

const STATUSES = new Set<string>(['done', 'failed', 'unknown', 'not-posted']);

const invalid = (path: string) => (why: string) => new C0Error('BATCH_SUMMARY_INVALID', `${path}: ${why}; not the summary of a batch run (move it away, or give another --output-dir)`, { field: 'output-dir' });

/** An earlier run's summary.json: BATCH_SUMMARY_INVALID (naming the file) for one that is not a batch run's summary. */
export function readEarlierSummary(path: string): EarlierRun {
  const bad = invalid(path);
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw bad(`cannot be read as JSON (${(e as Error).message.slice(0, 80)})`);
  }
  return earlierRun(raw, bad);
}

/** The lock a `batch run` holds on its output directory while it runs (its pid, the kernel's start time of it, its machine). */
export const RUN_LOCK = 'run.lock';

/**
 * The `batch run` that holds `outputDir`, else undefined (no lock, or a lock left by a run killed: its process gone, a
 * zombie, or its pid given to a later process, told by the start time where /proc has it). A lock taken on another
 * machine or in another PID namespace (a container sharing the volume) is held: its pid cannot be checked from here.
 */
export function lockHolder(outputDir: string): { pid: number; elsewhere: boolean } | undefined {
  let lock: { pid?: unknown; procStart?: unknown; machine?: unknown };
  try {
    lock = JSON.parse(readFileSync(join(outputDir, RUN_LOCK), 'utf8')) as typeof lock;
  } catch {
    return undefined; // none, or one cut short by a kill as it was written: no run holds it
  }
  const pid = lock.pid;
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return undefined;
  if (typeof lock.machine === 'string' && lock.machine !== writer().machine) return { pid, elsewhere: true };
  if (pid === process.pid) return undefined;
  return processGone(pid, typeof lock.procStart === 'string' ? lock.procStart : '0') === true ? undefined : { pid, elsewhere: false };
}

/** BATCH_OUTPUT_IN_USE: another `batch run` writes `outputDir` now (or a lock says so that this node cannot check). */
export function outputInUse(outputDir: string, holder: { pid: number; elsewhere: boolean } | undefined): C0Error {
  const who = holder === undefined ? 'another batch run' : holder.elsewhere ? `a batch run on another machine or container (pid ${holder.pid} there)` : `another batch run (pid ${holder.pid})`;
  const stale = holder?.elsewhere ? `; if no run is going there, remove ${join(outputDir, RUN_LOCK)}` : '';
  return new C0Error('BATCH_OUTPUT_IN_USE', `${outputDir} is being written by ${who} (${RUN_LOCK}): two runs into one directory would each post the lines not yet done and pay for them twice. Wait for it to end, or give another --output-dir${stale}; nothing was posted`, { field: 'output-dir', ...(holder ? { detail: { pid: holder.pid } } : {}) });
}

/**
 * Take `outputDir`'s lock before anything is posted: BATCH_OUTPUT_IN_USE while another live run holds it; a lock a
 * killed run left is taken over. Returns its release, which also runs at this process's exit, whatever ends it
 * (review s57: a second run with --resume set the live run's journal aside, both posted the lines not yet done, and
 * the first to end deleted the other's journal).
 */
export function lockOutputDir(outputDir: string): () => void {
  const path = join(outputDir, RUN_LOCK);
  const { machine, start } = writer();
  const mine = JSON.stringify({ pid: process.pid, ...(start === '0' ? {} : { procStart: start }), machine });
  for (let tries = 0; ; tries++) {
    try {
      writeFileSync(path, mine, { flag: 'wx', mode: 0o600 });
      const release = () => rmSync(path, { force: true });
      process.once('exit', release);
      return () => {
        process.off('exit', release);
        release();
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new C0Error('OUTPUT_UNWRITABLE', `cannot write ${path}: ${(e as Error).message}`, { field: 'output-dir' });
      const holder = lockHolder(outputDir);
      if (holder !== undefined || tries > 0) throw outputInUse(outputDir, holder);
      try {
        rmSync(path, { force: true }); // left by a run that was killed
      } catch (err) {
        throw new C0Error('OUTPUT_UNWRITABLE', `cannot replace ${path}: ${(err as Error).message}`, { field: 'output-dir' });
      }
    }
  }
}

/**
 * The journal of a run in progress, `<output-dir>/journal.jsonl`: a header line (the batch, its identity, when it
 * started, the entries carried from the runs before) written as the first line is posted, then a line's entry each
 * time what is known of it changes (runBatch's `record` port). The summary replaces it when the run ends. A journal
 * still there means the command was killed before it could write its summary (SIGKILL, the OOM killer, a closed
 * session): before, nothing said which lines were done, and `--resume` posted and paid every line again.
 */
export const JOURNAL = 'journal.jsonl';

export interface JournalHeader {
  batch: string;
  identity: BatchIdentity;
  startedAt: number;
  resumed?: { carried: unknown[] };
}

/**
 * A journal's writer. It never throws: a journal it cannot write is said once on stderr (a killed run then leaves no
 * record), and the run goes on. `first` runs before the header is written (the earlier journal is kept aside then).
 */
export function journalWriter(path: string, header: () => JournalHeader, first: () => void): (line: LineReport) => void {
  let opened = false;
  let broken = false;
  return (line) => {
    if (broken) return;
    try {
      if (!opened) {
        opened = true;
        first();
        appendFileSync(path, JSON.stringify(header()) + '\n');
      }
      appendFileSync(path, JSON.stringify(line) + '\n');
    } catch (e) {
      broken = true;
      process.stderr.write(`⚠ cannot write the batch's journal ${path} (${(e as Error).message.slice(0, 120)}): if this command is killed, which lines were done is in \`c0mpute jobs\` only\n`);
    }
  };
}

/**
 * An unfinished run's journal as an earlier run (each line's newest entry; a last line cut short by the kill is
 * passed over): BATCH_SUMMARY_INVALID for one that is not a batch run's journal.
 */
export function readUnfinishedRun(path: string): EarlierRun {
  const bad = invalid(path);
  const text = readFileSync(path, 'utf8').split('\n').filter((l) => l.trim() !== '');
  const rows: unknown[] = [];
  for (const [i, l] of text.entries()) {
    try {
      rows.push(JSON.parse(l));
    } catch (e) {
      if (i < text.length - 1) throw bad(`line ${i + 1} cannot be read as JSON (${(e as Error).message.slice(0, 80)})`);
    }
  }
  const [header, ...entries] = rows;
  if (typeof header !== 'object' || header === null) throw bad('no header line');
  const newest = new Map<unknown, unknown>();
  for (const e of entries) newest.set((e as { id?: unknown } | null)?.id, e);
  return earlierRun({ ...header, perLine: [...newest.values()] }, bad);
}

/**
 * A killed run's journal names only the lines it posted (and those it carried): the batch's other lines, when it is
 * the same batch, were never posted, and are counted so (`2 of 10 lines done, …, 4 not posted`, not `2 of 6`).
 */
export function withUnposted(e: EarlierRun, now: BatchIdentity, ids: readonly string[]): EarlierRun {
  if (!e.identity || identityChanges(e.identity, now).length) return e;
  const perLine = new Map(e.perLine);
  for (const id of ids) if (!perLine.has(id)) perLine.set(id, { status: 'not-posted', entry: { id, status: 'not-posted' } });
  return { ...e, perLine };
}

/** A summary (or a journal folded into one) as an earlier run. */
function earlierRun(raw: unknown, bad: (why: string) => C0Error): EarlierRun {
  const s = raw as { batch?: unknown; identity?: unknown; startedAt?: unknown; perLine?: unknown; receipts?: unknown; resumed?: { carried?: unknown } };
  if (typeof s !== 'object' || s === null || !Array.isArray(s.perLine)) throw bad('no perLine list');
  const carried = s.resumed && typeof s.resumed === 'object' && Array.isArray(s.resumed.carried) ? (s.resumed.carried as unknown[]) : [];
  // A done line's price: its entry's own (this version writes it), else its receipt's in this summary's `receipts`
  // (an entry the previous version wrote), so the carried entry says what the line cost.
  const prices = new Map<string, Money>();
  for (const rc of Array.isArray(s.receipts) ? (s.receipts as unknown[]) : []) {
    const x = rc as { address?: unknown; price?: unknown };
    if (typeof x === 'object' && x !== null && typeof x.address === 'string' && isMoney(x.price)) prices.set(x.address, x.price);
  }
  const priced = (l: unknown): unknown => {
    const x = l as { status: string; receipt?: unknown; price?: unknown };
    if (x.status !== 'done' || isMoney(x.price) || typeof x.receipt !== 'string' || !prices.has(x.receipt)) return l;
    return { ...x, price: prices.get(x.receipt) };
  };
  const perLine = new Map<string, { status: EarlierStatus; job?: string; entry: unknown }>();
  const take = (list: unknown[], where: string) =>
    list.forEach((l: unknown, i) => {
      const x = l as { id?: unknown; status?: unknown; job?: unknown };
      if (typeof x !== 'object' || x === null || typeof x.id !== 'string' || typeof x.status !== 'string' || !STATUSES.has(x.status)) throw bad(`${where}[${i}] is not {id, status}`);
      // a line this summary ran again (perLine) wins over what it carried from the run before
      if (!perLine.has(x.id)) perLine.set(x.id, { status: x.status as EarlierStatus, ...(typeof x.job === 'string' ? { job: x.job } : {}), entry: priced(l) });
    });
  take(s.perLine, 'perLine');
  take(carried, 'resumed.carried');
  const identity = s.identity === undefined ? undefined : readIdentity(s.identity);
  if (s.identity !== undefined && !identity) throw bad('its identity is not {digest, workloads}');
  return { ...(typeof s.batch === 'string' ? { batch: s.batch } : {}), ...(identity ? { identity } : {}), ...(typeof s.startedAt === 'number' ? { startedAt: s.startedAt } : {}), perLine };
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

const isMoney = (v: unknown): v is Money => typeof v === 'object' && v !== null && isAmount((v as Money).amount) && typeof (v as Money).currency === 'string';

/**
 * The whole batch across every run into this output directory (summary.json `wholeBatch`; QA qaMatch F2): the lines of
 * this run and the entries it carried from the runs before (`resumed.carried`: done, or left out with outcome
 * unknown). `cost` sums every done line's price, this run's and the carried ones'; `unpriced` counts done lines whose
 * price the carried entry does not say (written by the previous version two runs back), so `cost` leaves them out.
 */
export interface WholeBatch {
  lines: number;
  done: number;
  failed: number;
  unknown: number;
  notPosted: number;
  cost: Money[];
  unpriced?: number;
}

export function wholeBatch(summary: Pick<BatchRunSummary, 'lines' | 'done' | 'failed' | 'unknown' | 'notPosted' | 'cost'>, carried: readonly unknown[]): WholeBatch {
  const prices: Money[] = [...summary.cost];
  let done = summary.done;
  let unknown = summary.unknown;
  let unpriced = 0;
  for (const c of carried) {
    const x = c as { status?: unknown; price?: unknown };
    if (x.status === 'done') {
      done++;
      if (isMoney(x.price)) prices.push(x.price);
      else unpriced++;
    } else if (x.status === 'unknown') unknown++;
  }
  return { lines: summary.lines + carried.length, done, failed: summary.failed, unknown, notPosted: summary.notPosted, cost: sumMoney(prices), ...(unpriced ? { unpriced } : {}) };
}
