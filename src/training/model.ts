/**
 * The model a training run trains and a pipeline serves (spec/compute-pool.md,
 * the worker; docs/training.md "The model"): a small MLP (ReLU hidden layers,
 * softmax cross-entropy) on the CPU in float64 with a fixed order of
 * operations, so the same weights and the same rows give the same bits on
 * every worker. Parameters live in one flat Float64Array, tensor by tensor
 * (W1, b1, W2, b2, …; W row-major [out][in]); `tensors` names their slices,
 * which is also the unit of quantisation (src/training/quantize.ts).
 * Pure: no I/O, no clock, no randomness except the seeded initialiser.
 */
import { C0Error } from '../errors.js';
import { seededRandom } from '../net/faults.js';

export interface MlpShape {
  /** Layer widths, input first, classes last, e.g. [4, 16, 3]. */
  layers: number[];
}

export interface TensorSlice {
  name: string;
  offset: number;
  length: number;
}

export function tensors(shape: MlpShape): TensorSlice[] {
  const out: TensorSlice[] = [];
  let off = 0;
  for (let l = 0; l + 1 < shape.layers.length; l++) {
    const din = shape.layers[l]!;
    const dout = shape.layers[l + 1]!;
    out.push({ name: `W${l + 1}`, offset: off, length: din * dout });
    off += din * dout;
    out.push({ name: `b${l + 1}`, offset: off, length: dout });
    off += dout;
  }
  return out;
}

export function paramCount(shape: MlpShape): number {
  return tensors(shape).reduce((s, t) => s + t.length, 0);
}

export function checkShape(shape: MlpShape): void {
  if (!Array.isArray(shape.layers) || shape.layers.length < 2 || shape.layers.length > 8 || shape.layers.some((w) => !Number.isInteger(w) || w < 1 || w > 4096)) {
    throw new C0Error('TRAIN_MODEL_INVALID', 'layers: 2 to 8 integer widths from 1 to 4096', { field: 'model.layers' });
  }
}

/** The largest model a job takes, in weights (32 MiB of float64): builtin.mlp-pipeline's input, builtin.train-member's run. */
export const MAX_JOB_PARAMS = 4 * 1024 * 1024;
/** The largest activation a job makes: rows × the widest layer, values (128 MiB of float64). */
export const MAX_JOB_ACTIVATIONS = 16 * 1024 * 1024;

/** A job's model within MAX_JOB_PARAMS weights, else EXEC_BAD_INPUT naming `field` (the input's name for the layers). */
export function checkJobModel(shape: MlpShape, field: string): void {
  const n = paramCount(shape);
  if (n > MAX_JOB_PARAMS) throw new C0Error('EXEC_BAD_INPUT', `${field}: a model of ${n} weights; at most ${MAX_JOB_PARAMS}`, { field });
}

/** `rows` × the widest layer within MAX_JOB_ACTIVATIONS values, else EXEC_BAD_INPUT naming `field` (the input's name for the rows). */
export function checkJobRows(shape: MlpShape, rows: number, field: string): void {
  const widest = Math.max(...shape.layers);
  if (rows * widest > MAX_JOB_ACTIVATIONS) throw new C0Error('EXEC_BAD_INPUT', `${field}: ${rows} rows × a layer of ${widest} is over ${MAX_JOB_ACTIVATIONS} values`, { field });
}

/** Seeded initial weights: W uniform in ±sqrt(6/(in+out)) (Glorot), b = 0. */
export function initWeights(shape: MlpShape, seed: number): Float64Array {
  checkShape(shape);
  const rnd = seededRandom(seed); // mulberry32: integer-only, the same on every platform
  const w = new Float64Array(paramCount(shape));
  for (const t of tensors(shape)) {
    if (!t.name.startsWith('W')) continue;
    const l = Number(t.name.slice(1)) - 1;
    const lim = Math.sqrt(6 / (shape.layers[l]! + shape.layers[l + 1]!));
    for (let i = 0; i < t.length; i++) w[t.offset + i] = (rnd() * 2 - 1) * lim;
  }
  return w;
}

/** One layer's forward on a batch: out[b][o] = act(sum_i W[o][i] x[b][i] + b[o]), i ascending. */
export function layerForward(shape: MlpShape, w: Float64Array, layer: number, x: Float64Array, batch: number): Float64Array {
  const ts = tensors(shape);
  const W = ts[2 * layer]!;
  const B = ts[2 * layer + 1]!;
  const din = shape.layers[layer]!;
  const dout = shape.layers[layer + 1]!;
  const last = layer + 2 === shape.layers.length;
  const out = new Float64Array(batch * dout);
  for (let b = 0; b < batch; b++) {
    for (let o = 0; o < dout; o++) {
      let s = w[B.offset + o]!;
      for (let i = 0; i < din; i++) s += w[W.offset + o * din + i]! * x[b * din + i]!;
      out[b * dout + o] = last || s > 0 ? s : 0;
    }
  }
  return out;
}

/** Logits for a batch of rows (row-major [batch][inputs]). */
export function forward(shape: MlpShape, w: Float64Array, x: Float64Array, batch: number): Float64Array {
  let a = x;
  for (let l = 0; l + 1 < shape.layers.length; l++) a = layerForward(shape, w, l, a, batch);
  return a;
}

function softmaxRow(z: Float64Array, off: number, n: number, out: Float64Array): void {
  let m = -Infinity;
  for (let k = 0; k < n; k++) m = Math.max(m, z[off + k]!);
  let s = 0;
  for (let k = 0; k < n; k++) {
    const e = Math.exp(z[off + k]! - m);
    out[off + k] = e;
    s += e;
  }
  for (let k = 0; k < n; k++) out[off + k] = out[off + k]! / s;
}

export interface LossGrad {
  /** Mean cross-entropy over the batch. */
  loss: number;
  /** d(mean loss)/d(params), same layout as the weights. */
  grad: Float64Array;
}

/** Multiply-adds between two pauses of `lossAndGradAsync` (a few ms of work). */
export const GRAD_BLOCK_MACS = 1 << 20;

/**
 * Forward and backward on a batch, pausing (a `yield`) after each row whose work brings the multiply-adds since the last
 * pause to GRAD_BLOCK_MACS. The arithmetic and its order do not depend on the pauses: `lossAndGrad` and
 * `lossAndGradAsync` are bit for bit the same.
 */
function* lossAndGradSteps(shape: MlpShape, w: Float64Array, x: Float64Array, y: Int32Array, batch: number): Generator<void, LossGrad, void> {
  const L = shape.layers.length - 1;
  const ts = tensors(shape);
  let work = 0;
  const acts: Float64Array[] = [x];
  for (let l = 0; l < L; l++) {
    // layerForward, row by row
    const W = ts[2 * l]!;
    const B = ts[2 * l + 1]!;
    const din = shape.layers[l]!;
    const dout = shape.layers[l + 1]!;
    const last = l + 1 === L;
    const a = acts[l]!;
    const out = new Float64Array(batch * dout);
    for (let b = 0; b < batch; b++) {
      for (let o = 0; o < dout; o++) {
        let s = w[B.offset + o]!;
        for (let i = 0; i < din; i++) s += w[W.offset + o * din + i]! * a[b * din + i]!;
        out[b * dout + o] = last || s > 0 ? s : 0;
      }
      if ((work += din * dout) >= GRAD_BLOCK_MACS) {
        work = 0;
        yield;
      }
    }
    acts.push(out);
  }
  const C = shape.layers[L]!;
  const z = acts[L]!;
  const p = new Float64Array(batch * C);
  let loss = 0;
  for (let b = 0; b < batch; b++) {
    softmaxRow(z, b * C, C, p);
    loss -= Math.log(Math.max(p[b * C + y[b]!]!, 1e-300));
  }
  loss /= batch;
  const grad = new Float64Array(w.length);
  // delta at the logits: (p - onehot) / batch
  let delta = new Float64Array(batch * C);
  for (let b = 0; b < batch; b++) for (let k = 0; k < C; k++) delta[b * C + k] = (p[b * C + k]! - (k === y[b] ? 1 : 0)) / batch;
  for (let l = L - 1; l >= 0; l--) {
    const din = shape.layers[l]!;
    const dout = shape.layers[l + 1]!;
    const W = ts[2 * l]!;
    const B = ts[2 * l + 1]!;
    const a = acts[l]!;
    for (let b = 0; b < batch; b++) {
      for (let o = 0; o < dout; o++) {
        const d = delta[b * dout + o]!;
        grad[B.offset + o] = grad[B.offset + o]! + d;
        for (let i = 0; i < din; i++) grad[W.offset + o * din + i] = grad[W.offset + o * din + i]! + d * a[b * din + i]!;
      }
      if ((work += din * dout) >= GRAD_BLOCK_MACS) {
        work = 0;
        yield;
      }
    }
    if (l === 0) break;
    const prev = new Float64Array(batch * din);
    for (let b = 0; b < batch; b++) {
      for (let i = 0; i < din; i++) {
        if (a[b * din + i]! <= 0) continue; // ReLU'
        let s = 0;
        for (let o = 0; o < dout; o++) s += w[W.offset + o * din + i]! * delta[b * dout + o]!;
        prev[b * din + i] = s;
      }
      if ((work += din * dout) >= GRAD_BLOCK_MACS) {
        work = 0;
        yield;
      }
    }
    delta = prev;
  }
  return { loss, grad };
}

/** Forward and backward on a batch with integer labels; fixed loop order throughout. */
export function lossAndGrad(shape: MlpShape, w: Float64Array, x: Float64Array, y: Int32Array, batch: number): LossGrad {
  const g = lossAndGradSteps(shape, w, x, y, batch);
  for (;;) {
    const r = g.next();
    if (r.done) return r.value;
  }
}

/**
 * `lossAndGrad`, awaiting `between` after about every GRAD_BLOCK_MACS multiply-adds (a training member yields to the event
 * loop there, so one step of a large model does not block its node; review s43 R8 F2). Bit for bit `lossAndGrad`'s result.
 */
export async function lossAndGradAsync(shape: MlpShape, w: Float64Array, x: Float64Array, y: Int32Array, batch: number, between: () => Promise<void>): Promise<LossGrad> {
  const g = lossAndGradSteps(shape, w, x, y, batch);
  for (;;) {
    const r = g.next();
    if (r.done) return r.value;
    await between();
  }
}

/** Predicted class per row (lowest index on ties). */
export function predict(shape: MlpShape, w: Float64Array, x: Float64Array, batch: number): Int32Array {
  return argmaxRows(forward(shape, w, x, batch), batch, shape.layers[shape.layers.length - 1]!);
}

/** The class of each of `batch` rows of `C` outputs: the largest output's index (ties: the first). */
export function argmaxRows(z: Float64Array, batch: number, C: number): Int32Array {
  const out = new Int32Array(batch);
  for (let b = 0; b < batch; b++) {
    let best = 0;
    for (let k = 1; k < C; k++) if (z[b * C + k]! > z[b * C + best]!) best = k;
    out[b] = best;
  }
  return out;
}

export function accuracy(shape: MlpShape, w: Float64Array, x: Float64Array, y: Int32Array): number {
  const pred = predict(shape, w, x, y.length);
  let ok = 0;
  for (let i = 0; i < y.length; i++) if (pred[i] === y[i]) ok++;
  return ok / y.length;
}

/** Weights as bytes (float64 little-endian): what is hashed and content-addressed. */
export function weightsBytes(w: Float64Array): Uint8Array {
  const out = new Uint8Array(w.length * 8);
  const dv = new DataView(out.buffer);
  for (let i = 0; i < w.length; i++) dv.setFloat64(i * 8, w[i]!, true);
  return out;
}

/** `name`: the file the bytes came from, named when they are no float64 weights (QA ffTrainDay2 F4). */
export function weightsFromBytes(b: Uint8Array, name?: string): Float64Array {
  if (b.length % 8 !== 0) throw new C0Error('TRAIN_WEIGHTS_INVALID', name === undefined ? 'weights: length is not a multiple of 8 bytes' : `${name}: ${b.length} bytes, not a whole number of float64 weights (a run's weights.bin)`, { ...(name === undefined ? {} : { field: 'weightsFile' }) });
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const w = new Float64Array(b.length / 8);
  for (let i = 0; i < w.length; i++) w[i] = dv.getFloat64(i * 8, true);
  return w;
}
