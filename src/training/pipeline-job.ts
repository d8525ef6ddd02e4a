/**
 * A pipeline inference job as a market workload (builtin executor
 * `builtin.mlp-pipeline`, bought like any job; docs/training.md "Pipeline
 * bought as a job"): the input is JSON
 *   {layers: [4,16,3], weights: <hex float64 LE>, stages: 2, microBatches: 4, rows: [[…], …]}
 * and the output is JSON {logits: <hex float64 LE>, predictions: [...]}, the
 * provider running every stage in its own process with the GPipe schedule.
 * The buyer can recompute the single-process forward and compare the bytes.
 *
 * Bounds (EXEC_BAD_INPUT past them): at most MAX_PIPELINE_PARAMS weights, and
 * rows × the widest layer at most MAX_PIPELINE_ACTIVATIONS values. The work is
 * done in row blocks of about BLOCK_MACS multiply-adds, with the caller's
 * `between` awaited after each block (the executor yields to the event loop
 * there and checks the job's deadline); a row's arithmetic is the same in any
 * block, so the output is bit for bit the single-process forward's.
 */
import { C0Error } from '../errors.js';
import { MAX_JOB_ACTIVATIONS, MAX_JOB_PARAMS, checkJobModel, checkJobRows, checkShape, forward, layerForward, paramCount, predict, weightsBytes, weightsFromBytes, type MlpShape } from './model.js';
import { gpipeForward, partition, type StageRunner } from './pipeline.js';

/** The largest model a pipeline job takes, in weights (32 MiB of float64; 64 MiB of hex): the jobs' bound (model.ts, builtin.train-member's too). */
export const MAX_PIPELINE_PARAMS = MAX_JOB_PARAMS;
/** The largest activation a pipeline job makes: rows × the widest layer, values (128 MiB of float64). */
export const MAX_PIPELINE_ACTIVATIONS = MAX_JOB_ACTIVATIONS;
/** Multiply-adds between two calls of `between` (a few ms of work). */
const BLOCK_MACS = 1 << 20;

export interface PipelineInput {
  layers: number[];
  weights: string;
  stages: number;
  microBatches: number;
  rows: number[][];
}

export function parsePipelineInput(input: Uint8Array): { shape: { layers: number[] }; w: Float64Array; stages: number; micro: number; x: Float64Array; batch: number } {
  let j: PipelineInput;
  try {
    j = JSON.parse(new TextDecoder().decode(input)) as PipelineInput;
  } catch {
    throw new C0Error('EXEC_BAD_INPUT', 'pipeline input is not JSON');
  }
  if (typeof j !== 'object' || j === null || Array.isArray(j)) throw new C0Error('EXEC_BAD_INPUT', 'pipeline input must be a JSON object {layers, weights, stages, microBatches, rows}');
  const shape = { layers: j.layers };
  try {
    checkShape(shape);
  } catch {
    throw new C0Error('EXEC_BAD_INPUT', 'layers: 2 to 8 widths');
  }
  checkJobModel(shape, 'layers');
  const n = paramCount(shape);
  // Linear checks (a repeated group in the pattern overflows the regex engine's stack on a large model).
  if (typeof j.weights !== 'string' || j.weights.length % 16 !== 0 || !/^[0-9a-f]*$/.test(j.weights)) throw new C0Error('EXEC_BAD_INPUT', 'weights: hex float64 values');
  if (j.weights.length / 16 !== n) throw new C0Error('EXEC_BAD_INPUT', `weights: ${j.weights.length / 16} values, the model has ${n}`);
  const w = weightsFromBytes(new Uint8Array(Buffer.from(j.weights, 'hex')));
  const F = shape.layers[0]!;
  if (!Array.isArray(j.rows) || j.rows.length < 1 || j.rows.length > 100_000 || j.rows.some((r) => !Array.isArray(r) || r.length !== F || r.some((v) => typeof v !== 'number' || !Number.isFinite(v)))) {
    throw new C0Error('EXEC_BAD_INPUT', `rows: 1 to 100000 rows of ${F} finite numbers`);
  }
  checkJobRows(shape, j.rows.length, 'rows');
  const x = new Float64Array(j.rows.length * F);
  j.rows.forEach((r, i) => x.set(r, i * F));
  const stages = Number.isInteger(j.stages) ? j.stages : 1;
  const micro = Number.isInteger(j.microBatches) && j.microBatches >= 1 ? j.microBatches : 1;
  return { shape, w, stages, micro, x, batch: j.rows.length };
}

export function pipelineOutput(logits: Float64Array, preds: Int32Array): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ logits: Buffer.from(weightsBytes(logits)).toString('hex'), predictions: [...preds] }));
}

/** One layer on a batch, `rowsPerBlock` rows at a time, awaiting `between` after each block: the same bits as layerForward. */
async function layerInBlocks(shape: MlpShape, w: Float64Array, layer: number, x: Float64Array, batch: number, between: () => Promise<void>): Promise<Float64Array> {
  const din = shape.layers[layer]!;
  const dout = shape.layers[layer + 1]!;
  const rowsPerBlock = Math.max(1, Math.floor(BLOCK_MACS / (din * dout)));
  if (rowsPerBlock >= batch) {
    const out = layerForward(shape, w, layer, x, batch);
    await between();
    return out;
  }
  const out = new Float64Array(batch * dout);
  for (let a = 0; a < batch; a += rowsPerBlock) {
    const b = Math.min(batch, a + rowsPerBlock);
    out.set(layerForward(shape, w, layer, x.subarray(a * din, b * din), b - a), a * dout);
    await between();
  }
  return out;
}

/** The stages of this process, each working in row blocks. */
function blockStages(shape: MlpShape, w: Float64Array, stages: number, between: () => Promise<void>): StageRunner[] {
  return partition(shape, stages).map((r) => async (x, batch) => {
    let a = x;
    for (let l = r[0]; l < r[1]; l++) a = await layerInBlocks(shape, w, l, a, batch, between);
    return a;
  });
}

/**
 * Run the job. `between` is awaited after every block of work (and may throw
 * to stop it: the executor yields to the event loop there and checks the
 * job's signal).
 */
export async function runPipelineJob(input: Uint8Array, between: () => Promise<void> = () => Promise.resolve()): Promise<Uint8Array> {
  const p = parsePipelineInput(input);
  let runners;
  try {
    runners = blockStages(p.shape, p.w, p.stages, between);
  } catch (e) {
    throw new C0Error('EXEC_BAD_INPUT', (e as Error).message);
  }
  const C = p.shape.layers[p.shape.layers.length - 1]!;
  const logits = await gpipeForward(runners, p.x, p.batch, p.shape.layers[0]!, C, p.micro);
  const preds = new Int32Array(p.batch);
  for (let b = 0; b < p.batch; b++) {
    let best = 0;
    for (let k = 1; k < C; k++) if (logits[b * C + k]! > logits[b * C + best]!) best = k;
    preds[b] = best;
  }
  return pipelineOutput(logits, preds);
}

/** What the buyer expects: the single-process forward of the same input. */
export function expectedPipelineOutput(input: Uint8Array): Uint8Array {
  const p = parsePipelineInput(input);
  return pipelineOutput(forward(p.shape, p.w, p.x, p.batch), predict(p.shape, p.w, p.x, p.batch));
}
