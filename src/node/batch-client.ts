/**
 * The batch runner's ports over a running daemon's control API
 * (docs/matching.md "Batch runs"; issue #12 `c0mpute batch run`): plans with
 * `POST /v1/batch/plan` (with `exclude` when re-planning), runs a line with
 * `POST /v1/run` as an order designated to its planned provider, reads each
 * provider's free slots from `GET /v1/market`, and writes each completed
 * line's output to `<outputDir>/<line>.out`. Used by `c0mpute batch run` and
 * the `--orders` devnet scenario.
 *
 * How a line is designated is one function, `lineSpec`: the line's job is an
 * open order designated to the planned provider (`order: { designated }`):
 * only it may claim the line, at most at the line's maxPrice.
 */
import { Buffer } from 'node:buffer';
import { statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../errors.js';
import { makeDirs } from '../util/make-dirs.js';
import type { Money } from '../records/money.js';
import type { Requirements } from '../records/kinds.js';
import type { Batch, BatchPlan } from '../matching/batch-plan.js';
import type { BatchRunPorts, BatchRunEvent, LineOutcome, OwnLines, RunLine } from '../matching/batch-run.js';
import { EXEC_MAX_INPUT_BYTES } from '../roles/exec-protocol.js';
import { apiCall, apiStream } from './api-client.js';
import { inputTooLarge, readInputFile } from './job-input.js';

/** What one workload's lines run (from the batch file). */
export interface LineRecipe {
  workload: string;
  lines: number;
  params?: string;
  /** A file name pattern under the input directory (`{n}`, `{n:W}` = the line number). */
  input?: string;
  /** Generated input text (the same pattern). */
  inputText?: string;
  deadlineMs: number;
  timeoutMs?: number;
}

/** One line, with what it runs. */
export interface BatchLine extends RunLine {
  n: number;
  params?: string;
  /** Where its input is read from, or the input itself. */
  inputFile?: string;
  inputText?: string;
  /** Its input's size, bytes (what a per-MiB ask bills it by). */
  inputBytes: number;
  deadlineMs: number;
  timeoutMs?: number;
  maxPrice: Money;
  requirements?: Requirements;
}

/** A line's name from a pattern: `{n}` is the line number (from 1), `{n:W}` the same zero-padded to W digits. */
export function linePattern(pattern: string, n: number): string {
  return pattern.replace(/\{n(?::([0-9]{1,2}))?\}/g, (_m, w?: string) => String(n).padStart(w ? Number(w) : 0, '0'));
}

/**
 * Every line of the batch, each workload's in order. Line ids are
 * `<workload>-<n>` with n zero-padded to the workload's line count. Input
 * files are checked now (exist, are files, within the exec input limit), so
 * a missing one is INPUT_UNREADABLE before anything is planned or signed.
 */
export function batchLines(batch: Batch, recipes: readonly LineRecipe[], inputDir: string): BatchLine[] {
  const out: BatchLine[] = [];
  for (const w of batch.workloads) {
    const r = recipes.find((x) => x.workload === w.workload);
    if (!r) throw new C0Error('BATCH_FIELD_INVALID', `no line recipe for workload ${w.workload}`, { field: 'workloads' });
    const width = String(w.lines).length;
    // A line's hard timeout is the file's `timeout`, else the buyer's default (its deadline): never derived here. The
    // planner prices a per-second ask by the same (readBatchRunFile fills the workload's timeoutMs with it).
    const timeoutMs = r.timeoutMs;
    for (let n = 1; n <= w.lines; n++) {
      const l: BatchLine = {
        id: `${w.workload}-${String(n).padStart(width, '0')}`,
        workload: w.workload,
        n,
        inputBytes: 0,
        deadlineMs: r.deadlineMs,
        maxPrice: w.maxPrice,
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
        ...(r.params === undefined ? {} : { params: linePattern(r.params, n) }),
        ...(w.requirements ? { requirements: w.requirements } : {}),
      };
      if (r.input !== undefined) {
        const f = join(inputDir, linePattern(r.input, n));
        let size: number;
        try {
          const st = statSync(f);
          if (!st.isFile()) throw new Error('not a file');
          size = st.size;
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          throw new C0Error('INPUT_UNREADABLE', `line ${l.id}: cannot read ${f}: ${code === 'ENOENT' ? 'no such file' : (e as Error).message}`, { field: `workloads.${batch.workloads.indexOf(w)}.input` });
        }
        if (size > EXEC_MAX_INPUT_BYTES) throw inputTooLarge(`line ${l.id}: ${f}`, size, true, `workloads.${batch.workloads.indexOf(w)}.input`);
        l.inputFile = f;
        l.inputBytes = size;
      } else if (r.inputText !== undefined) {
        l.inputText = linePattern(r.inputText, n);
        l.inputBytes = Buffer.byteLength(l.inputText, 'utf8');
      }
      out.push(l);
    }
  }
  return out;
}

/**
 * The batch with each workload's largest line input (`lineInputBytes`): a per-MiB ask bills each line by its own
 * input, so the planner prices every line as the largest — what its provider will claim it for at most — rather than
 * the summed `units.mib` ÷ lines, which left lines priced above maxPrice by their provider and never claimed.
 */
export function withLineInputs(batch: Batch, lines: readonly BatchLine[]): Batch {
  const largest = new Map<string, number>();
  for (const l of lines) largest.set(l.workload, Math.max(largest.get(l.workload) ?? 0, l.inputBytes));
  return { ...batch, workloads: batch.workloads.map((w) => (largest.has(w.workload) ? { ...w, lineInputBytes: largest.get(w.workload)! } : w)) };
}

/** A line's input bytes. */
export function lineInput(l: BatchLine): Uint8Array {
  // bounded as `run --input` is: a file grown past the limit since batchLines checked it is refused, not read whole
  if (l.inputFile !== undefined) return readInputFile(l.inputFile, `line ${l.id}'s input ${l.inputFile}`);
  return new Uint8Array(Buffer.from(l.inputText ?? '', 'utf8'));
}

/**
 * The job spec (`/v1/run` body) that runs line `l` at `provider` alone. This is
 * the one place that says how a line is designated: an open order designated
 * to the planned provider (docs/matching.md "Open orders, claims and leases").
 * (Before open orders were on the network it was `requirements.allowlist:
 * [provider]`, an auction only that provider could answer.)
 */
export function lineSpec(l: BatchLine, provider: string): Record<string, unknown> {
  return {
    workload: l.workload,
    maxPrice: l.maxPrice,
    deadlineMs: l.deadlineMs,
    ...(l.timeoutMs === undefined ? {} : { timeoutMs: l.timeoutMs }),
    ...(l.params === undefined ? {} : { params: l.params }),
    ...(l.requirements ? { requirements: l.requirements } : {}),
    order: { designated: provider },
    input: Buffer.from(lineInput(l)).toString('base64'),
  };
}

export interface ApiBatchOptions {
  api: string;
  token: string;
  /** `?overlay=` (default: the node's first). */
  overlay?: string;
  ceiling?: number;
  outputDir: string;
  clock?: () => number;
  onEvent?: (e: BatchRunEvent) => void;
  /** The operator's Ctrl-C: closes every line's `/v1/run` stream (the daemon takes each as its client gone). */
  signal?: AbortSignal;
}

/** The ports of runBatch over the control API. Call `refreshSlots()` once before running. */
export function apiBatchPorts(o: ApiBatchOptions): BatchRunPorts & { refreshSlots(): Promise<void> } {
  const q = o.overlay ? `?overlay=${encodeURIComponent(o.overlay)}` : '';
  const slots = new Map<string, number>();
  let made = false;
  return {
    async refreshSlots() {
      const m = (await apiCall(o.api, o.token, 'GET', `/v1/market${q}`)) as { presence?: { providers?: Array<{ did: string; freeSlots: number }> } };
      for (const p of m.presence?.providers ?? []) slots.set(p.did, p.freeSlots);
    },
    async plan(batch: Batch, exclude: readonly string[], own: OwnLines): Promise<BatchPlan> {
      const body = { batch, ...(o.ceiling === undefined ? {} : { ceiling: o.ceiling }), ...(exclude.length ? { exclude } : {}), ...(Object.keys(own.designated).length ? { designated: own.designated } : {}), ...(Object.keys(own.running).length ? { running: own.running } : {}) };
      return (await apiCall(o.api, o.token, 'POST', `/v1/batch/plan${q}`, body)) as BatchPlan;
    },
    slots: (p) => slots.get(p) ?? 1,
    async live(): Promise<ReadonlySet<string>> {
      const m = (await apiCall(o.api, o.token, 'GET', `/v1/market${q}`)) as { presence?: { providers?: Array<{ did: string }> } };
      return new Set((m.presence?.providers ?? []).map((p) => p.did));
    },
    async runLine(line: RunLine, provider: string): Promise<LineOutcome> {
      const spec = lineSpec(line as BatchLine, provider);
      let result: Record<string, unknown> | undefined;
      // The line's job as soon as the daemon names it (its `job` and `order` events come when the order is signed):
      // a run that then breaks off without a result still says which job it was (docs/matching.md "The daemon goes away").
      let job: string | undefined;
      try {
        for await (const ev of apiStream(o.api, o.token, `/v1/run${q}`, spec, o.signal ? { signal: o.signal } : {})) {
          job ??= jobNamed(ev);
          if (ev.e === 'result') result = ev.result as Record<string, unknown>;
          else if (ev.e === 'error') {
            const err = ev.error as { code: string; message: string };
            throw new C0Error(err.code, err.message);
          }
        }
      } catch (e) {
        throw job === undefined || !(e instanceof C0Error) ? e : withJob(e, job);
      }
      if (!result) throw withJob(new C0Error('RUN_NO_RESULT', 'the daemon ended the run without a result'), job);
      return lineOutcome(result);
    },
    async deliver(line: RunLine, output: Uint8Array): Promise<void> {
      // `batch run` made it before the first line (outputDir); made again if removed since, never by mkdirSync's
      // recursive form, which never returns under /proc (src/util/make-dirs.ts)
      if (!made) makeDirs(o.outputDir, { code: 'OUTPUT_UNWRITABLE', field: 'output-dir', what: `cannot write ${o.outputDir}` });
      made = true;
      writeFileSync(join(o.outputDir, `${line.id}.out`), output);
    },
    clock: o.clock ?? Date.now,
    ...(o.onEvent ? { onEvent: o.onEvent } : {}),
  };
}

/** The job address a `/v1/run` event names, if any: `job` (the signed job record) or `order` (its address). */
function jobNamed(ev: Record<string, unknown>): string | undefined {
  if (ev.e === 'order' && typeof ev.job === 'string') return ev.job;
  if (ev.e === 'job') {
    const address = (ev.job as { address?: unknown } | undefined)?.address;
    if (typeof address === 'string') return address;
  }
  return undefined;
}

/** `e` naming the line's job (`detail.job`, what runBatch reads from a run that ended without a result). */
function withJob(e: C0Error, job: string | undefined): C0Error {
  if (job === undefined) return e;
  return new C0Error(e.code, e.message, { ...(e.field === undefined ? {} : { field: e.field }), detail: { ...e.detail, job }, cause: e });
}

/** A `/v1/run` result (wire shape) as the runner's outcome of one line. */
export function lineOutcome(result: Record<string, unknown>): LineOutcome {
  const status = String(result.status);
  const job = (result.job as { address?: string } | undefined)?.address;
  const rc = result.receipt as { address: string; record: { job: string; status: string; provider: string; price: Money } } | undefined;
  const attempts = (result.attempts as Array<{ outcome: string }> | undefined) ?? [];
  const error = result.error as { code: string; message: string } | undefined;
  return {
    status,
    ...(status === 'completed' && typeof result.output === 'string' ? { output: new Uint8Array(Buffer.from(result.output, 'base64')) } : {}),
    ...(job ? { job } : {}),
    ...(rc ? { receipt: { address: rc.address, job: rc.record.job, status: rc.record.status, provider: rc.record.provider, price: rc.record.price } } : {}),
    ...(status === 'completed' ? {} : { detail: (error ? `${error.code}: ${error.message}` : attempts.map((a) => a.outcome).join('; ')) || status }),
  };
}
