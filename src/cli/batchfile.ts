/**
 * batch.yaml → a batch for the planner (docs/matching.md "Batch plans";
 * issue #12): `window` (or `windowMs`), and per workload `lines`, summed
 * `units`, an optional `lineTime`, `maxPrice` per line and `requirements` as a
 * job file has. Durations accept `90s`, `5m`, `1h` or milliseconds; maxPrice
 * accepts "0.05 USD" or {amount, currency}. Errors: BATCH_FILE_UNREADABLE,
 * BATCH_FILE_NOT_YAML, BATCH_FIELD_INVALID (naming the field).
 *
 * For `c0mpute batch run` (docs/matching.md "Batch runs") a workload may also
 * say what each line runs: `params`, its input (`input`, a file name pattern
 * under --input-dir, or `inputText`, generated text; `{n}` is the line number,
 * `{n:4}` zero-padded), a per-line `deadline` and `timeout`. `batch plan`
 * accepts and ignores them, so one file serves both.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { C0Error } from '../errors.js';
import { parseMoney } from '../records/money.js';
import { batchFieldError, parseBatch } from '../matching/batch-input.js';
import type { Batch } from '../matching/batch-plan.js';
import type { LineRecipe } from '../node/batch-client.js';
import { parseDuration } from '../node/jobfile.js';
import { parsePlainYaml } from '../util/yaml.js';

const duration = z.union([z.number().int().positive(), z.string().regex(/^[0-9]+(ms|s|m|h)$/, 'like 90s, 5m, 1h or milliseconds')]);
const amount = z.union([z.string(), z.number().nonnegative()]).transform((v) => String(v));

const fileSchema = z
  .object({
    window: duration.optional(),
    windowMs: z.number().int().positive().optional(),
    workloads: z.array(
      z
        .object({
          workload: z.string(),
          lines: z.number(),
          units: z.record(z.string(), amount).optional(),
          lineTime: duration.optional(),
          maxPrice: z.union([z.string(), z.object({ amount: z.string(), currency: z.string() }).strict()]),
          requirements: z.unknown().optional(),
          // what `batch run` runs per line (`batch plan` ignores them, but for deadline and timeout: the timeout a line
          // carries prices a per-second ask)
          params: z.string().max(4096).optional(),
          input: z.string().min(1).max(1024).optional(),
          inputText: z.string().max(65536).optional(),
          deadline: duration.optional(),
          timeout: duration.optional(),
        })
        .strict(),
    ),
  })
  .strict();

/** Read and validate a batch file into the planner's (and the API's) batch shape. */
export function readBatchFile(path: string): Batch {
  return parseBatchFile(path).batch;
}

/** Default per-line deadline of `batch run` when the file gives none. */
export const BATCH_LINE_DEADLINE_MS = 120_000;

/** Read a batch file for `batch run`: the planner's batch and, per workload, what its lines run. */
export function readBatchRunFile(path: string): { batch: Batch; run: LineRecipe[] } {
  const { batch, file } = parseBatchFile(path);
  const run = file.workloads.map((w, i): LineRecipe => {
    if (w.input !== undefined && w.inputText !== undefined) throw new C0Error('BATCH_FIELD_INVALID', `${path}: workloads.${i}: give a line's input as one of input: (a file name pattern) or inputText:, not both`, { field: `workloads.${i}.input` });
    if (w.input !== undefined && (w.input.includes('/') || w.input.includes('\\') || w.input.startsWith('.'))) throw new C0Error('BATCH_FIELD_INVALID', `${path}: workloads.${i}.input: a file name under --input-dir (no directories, no leading dot)`, { field: `workloads.${i}.input` });
    return {
      workload: w.workload,
      lines: w.lines,
      ...(w.params === undefined ? {} : { params: w.params }),
      ...(w.input === undefined ? {} : { input: w.input }),
      ...(w.inputText === undefined ? {} : { inputText: w.inputText }),
      deadlineMs: w.deadline === undefined ? BATCH_LINE_DEADLINE_MS : parseDuration(w.deadline),
      ...(w.timeout === undefined ? {} : { timeoutMs: parseDuration(w.timeout) }),
    };
  });
  return { batch, run };
}

function parseBatchFile(path: string): { batch: Batch; file: z.infer<typeof fileSchema> } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new C0Error('BATCH_FILE_UNREADABLE', `cannot read ${path}: ${code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parsePlainYaml(text);
  } catch (e) {
    // (the yaml parser's errors carry a `code` too, so reading and parsing are told apart by where they fail)
    throw new C0Error('BATCH_FILE_NOT_YAML', `${path} is not valid YAML: ${(e as Error).message}`);
  }
  const r = fileSchema.safeParse(raw ?? {});
  if (!r.success) throw batchFieldError(r.error, path);
  const f = r.data;
  if ((f.window === undefined) === (f.windowMs === undefined)) throw new C0Error('BATCH_FIELD_INVALID', `${path}: give the batch window as exactly one of window: or windowMs:`, { field: 'window' });
  const windowMs = f.windowMs ?? parseDuration(f.window!);
  const workloads = f.workloads.map((w, i) => {
    let maxPrice: unknown = w.maxPrice;
    if (typeof w.maxPrice === 'string') {
      try {
        maxPrice = parseMoney(w.maxPrice);
      } catch {
        throw new C0Error('BATCH_FIELD_INVALID', `${path}: workloads.${i}.maxPrice: like "0.05 USD"`, { field: `workloads.${i}.maxPrice` });
      }
    }
    const units = w.units ?? {};
    // Without lineTime: summed seconds over the lines when the batch states them, else the whole window.
    const lineMs = w.lineTime !== undefined ? parseDuration(w.lineTime) : units.second !== undefined && Number.isInteger(w.lines) && w.lines > 0 ? Math.max(1, Math.ceil((Number(units.second) * 1000) / w.lines)) : windowMs;
    // A line longer than the window could never be placed (⌊window ÷ lineTime⌋ = 0 lines per slot): the field is wrong,
    // not the network's capacity (QA qaMatch F4: it read BATCH_EXCEEDS_CAPACITY "… has no lineTime" with lineTime given)
    if (windowMs > 0 && lineMs > windowMs) {
      const given = w.lineTime !== undefined;
      const secs = (x: number) => `${x / 1000} s`;
      throw new C0Error(
        'BATCH_FIELD_INVALID',
        `${path}: workloads.${i}.${given ? 'lineTime' : 'units.second'}: ${given ? `lineTime (${secs(lineMs)})` : `units.second ÷ lines (${secs(lineMs)} a line)`} is longer than the window (${secs(windowMs)}), so no line fits in it: give a longer window, or a shorter ${given ? 'lineTime' : 'units.second'}`,
        { field: `workloads.${i}.${given ? 'lineTime' : 'units.second'}` },
      );
    }
    // The timeout each line's job will carry — its `timeout`, else the buyer's default, its deadline — is what a
    // per-second ask bills it for: the planner costs by it (lineSeconds). `batch plan` reads it too, so it previews
    // what `batch run` will claim.
    const timeoutMs = w.timeout !== undefined ? parseDuration(w.timeout) : w.deadline !== undefined ? parseDuration(w.deadline) : BATCH_LINE_DEADLINE_MS;
    return { workload: w.workload, lines: w.lines, units, lineMs, timeoutMs, maxPrice, ...(w.requirements === undefined ? {} : { requirements: w.requirements }) };
  });
  return { batch: parseBatch({ windowMs, workloads }, path), file: f };
}
