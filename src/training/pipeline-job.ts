/**
 * A pipeline inference job as a market workload (builtin executor
 * `builtin.mlp-pipeline`, bought like any job; docs/training.md "Pipeline
 * bought as a job"): the input is JSON
 *   {layers: [4,16,3], weights: <hex float64 LE>, stages: 2, microBatches: 4, rows: [[…], …]}
 * and the output is JSON {logits: <hex float64 LE>, predictions: [...]}, the
 * provider running every stage in its own process with the GPipe schedule.
 * The buyer can recompute the single-process forward and compare the bytes.
 */
import { C0Error } from '../errors.js';
import { checkShape, forward, paramCount, predict, weightsBytes, weightsFromBytes } from './model.js';
import { gpipeForward, localStages } from './pipeline.js';

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
  const shape = { layers: j.layers };
  try {
    checkShape(shape);
  } catch {
    throw new C0Error('EXEC_BAD_INPUT', 'layers: 2 to 8 widths');
  }
  if (typeof j.weights !== 'string' || !/^([0-9a-f]{16})*$/.test(j.weights)) throw new C0Error('EXEC_BAD_INPUT', 'weights: hex float64 values');
  const w = weightsFromBytes(new Uint8Array(Buffer.from(j.weights, 'hex')));
  if (w.length !== paramCount(shape)) throw new C0Error('EXEC_BAD_INPUT', `weights: ${w.length} values, the model has ${paramCount(shape)}`);
  const F = shape.layers[0]!;
  if (!Array.isArray(j.rows) || j.rows.length < 1 || j.rows.length > 100_000 || j.rows.some((r) => !Array.isArray(r) || r.length !== F || r.some((v) => typeof v !== 'number' || !Number.isFinite(v)))) {
    throw new C0Error('EXEC_BAD_INPUT', `rows: 1 to 100000 rows of ${F} finite numbers`);
  }
  const x = new Float64Array(j.rows.length * F);
  j.rows.forEach((r, i) => x.set(r, i * F));
  const stages = Number.isInteger(j.stages) ? j.stages : 1;
  const micro = Number.isInteger(j.microBatches) && j.microBatches >= 1 ? j.microBatches : 1;
  return { shape, w, stages, micro, x, batch: j.rows.length };
}

export function pipelineOutput(logits: Float64Array, preds: Int32Array): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ logits: Buffer.from(weightsBytes(logits)).toString('hex'), predictions: [...preds] }));
}

export async function runPipelineJob(input: Uint8Array): Promise<Uint8Array> {
  const p = parsePipelineInput(input);
  let runners;
  try {
    runners = localStages(p.shape, p.w, p.stages);
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
