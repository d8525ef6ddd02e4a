/**
 * One data-parallel training step, the same code on every worker and in the
 * single-process reference (docs/training.md "A step"; spec/compute-pool.md,
 * the worker): forward and backward on the worker's batch, exponents agreed by
 * an int32 max all-reduce, the gradient quantised with error feedback, an
 * int32 sum all-reduce, the update. `referenceRun` does the same arithmetic for
 * all N shards in one process with a plain sum instead of the ring: its
 * weights must equal every worker's bit for bit.
 */
import { sha256, bytesToAddress } from '../records/address.js';
import { batchAt, shard, type Dataset } from './data.js';
import { lossAndGrad, lossAndGradAsync, tensors, weightsBytes, type MlpShape, type TensorSlice } from './model.js';
import { MAX_EXP, MIN_EXP, QMAX, applyUpdate, int32Bytes, localExponents, quantize } from './quantize.js';
import { ringAllReduce, type RingTransport } from './allreduce.js';

export interface StepParams {
  shape: MlpShape;
  /** Learning rate (parsed once from the run's decimal text). */
  lr: number;
  batch: number;
  feedback: boolean;
}

export interface WorkerState {
  w: Float64Array;
  /** Error-feedback residual. */
  r: Float64Array;
}

export interface StepResult {
  loss: number;
  /** Address of (quantised gradient int32 LE ‖ exponents int32 LE). */
  grad: string;
  /** Address of the weights after the step. */
  weights: string;
}

export const addressOf = (b: Uint8Array): string => bytesToAddress(sha256(b));

export function gradAddress(q: Int32Array, exps: Int32Array): string {
  const a = int32Bytes(q);
  const b = int32Bytes(exps);
  const all = new Uint8Array(a.length + b.length);
  all.set(a);
  all.set(b, a.length);
  return addressOf(all);
}

export function cloneState(s: WorkerState): WorkerState {
  return { w: Float64Array.from(s.w), r: Float64Array.from(s.r) };
}

/** One step on one worker over the ring; mutates `state`. */
export async function ringStep(t: RingTransport, p: StepParams, state: WorkerState, data: Dataset, step: number, tag: string, between?: () => Promise<void>): Promise<StepResult> {
  const ts = tensors(p.shape);
  const b = batchAt(data, step, p.batch);
  // with `between`, the gradient pauses for it after every block of work (the same result): a large model's step does not block the caller
  const { loss, grad } = between ? await lossAndGradAsync(p.shape, state.w, b.x, b.y, b.n, between) : lossAndGrad(p.shape, state.w, b.x, b.y, b.n);
  if (!p.feedback) state.r.fill(0);
  // A received exponent outside [MIN_EXP, MAX_EXP] or a partial sum beyond ±127 per contribution is refused (naming its sender), never applied.
  const exps = await ringAllReduce(t, localExponents(grad, state.r, ts), 'max', `${tag}/e`, { lo: MIN_EXP, hi: MAX_EXP });
  const q = quantize(grad, state.r, ts, exps);
  const sum = await ringAllReduce(t, q, 'sum', `${tag}/g`, { lo: -QMAX, hi: QMAX });
  applyUpdate(state.w, sum, ts, exps, p.lr, t.size);
  return { loss, grad: gradAddress(q, exps), weights: addressOf(weightsBytes(state.w)) };
}

export interface ReferenceResult {
  w: Float64Array;
  /** Weights address after each step. */
  weights: string[];
  /** Mean of the workers' batch losses per step. */
  loss: number[];
}

/** The same run in one process: N shards, a plain int32 sum, one set of weights. */
export function referenceRun(p: StepParams, train: Dataset, w0: Float64Array, n: number, steps: number, firstStep = 0): ReferenceResult {
  const ts: TensorSlice[] = tensors(p.shape);
  const shards = Array.from({ length: n }, (_, k) => shard(train, k, n));
  const w = Float64Array.from(w0);
  const rs = shards.map(() => new Float64Array(w.length));
  const weights: string[] = [];
  const losses: number[] = [];
  for (let s = firstStep; s < firstStep + steps; s++) {
    const gs = shards.map((d) => {
      const b = batchAt(d, s, p.batch);
      return lossAndGrad(p.shape, w, b.x, b.y, b.n);
    });
    if (!p.feedback) rs.forEach((r) => r.fill(0));
    const exps = new Int32Array(ts.length).fill(-0x80000000);
    gs.forEach((g, k) => localExponents(g.grad, rs[k]!, ts).forEach((e, i) => (exps[i] = Math.max(exps[i]!, e))));
    const sum = new Int32Array(w.length);
    gs.forEach((g, k) => {
      const q = quantize(g.grad, rs[k]!, ts, exps);
      for (let i = 0; i < q.length; i++) sum[i] = (sum[i]! + q[i]!) | 0;
    });
    applyUpdate(w, sum, ts, exps, p.lr, n);
    weights.push(addressOf(weightsBytes(w)));
    losses.push(gs.reduce((a, g) => a + g.loss, 0) / n);
  }
  return { w, weights, loss: losses };
}
