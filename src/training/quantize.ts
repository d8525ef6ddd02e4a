/**
 * Gradient quantisation with error feedback (docs/training.md "Determinism and
 * order-independence"). Per tensor, a power-of-two scale 2^e with the smallest
 * e such that max|g + r| ≤ 127·2^e; the exponent every worker uses is the
 * maximum over the workers (an integer max, reduced over the ring first), so
 * every worker quantises with the same scale. q = round((g + r)/2^e) fits int8;
 * the residual r ← (g + r) − q·2^e carries the quantisation error to the next
 * step. The int32 sum of the workers' q is exact and independent of order, and
 * the update w ← w − lr·(Σq·2^e)/N is the same float64 expression everywhere.
 * Pure.
 */
import type { TensorSlice } from './model.js';

export const QMAX = 127;
export const MIN_EXP = -60;
export const MAX_EXP = 30;

/** Smallest e in [MIN_EXP, MAX_EXP] with maxAbs ≤ 127·2^e. */
export function exponentFor(maxAbs: number): number {
  if (!(maxAbs > 0)) return MIN_EXP;
  if (!Number.isFinite(maxAbs)) return MAX_EXP;
  let e = Math.max(MIN_EXP, Math.min(MAX_EXP, Math.ceil(Math.log2(maxAbs / QMAX))));
  while (e < MAX_EXP && maxAbs > QMAX * 2 ** e) e++;
  while (e > MIN_EXP && maxAbs <= QMAX * 2 ** (e - 1)) e--;
  return e;
}

/** The local exponent of each tensor of g + r. */
export function localExponents(g: Float64Array, r: Float64Array, ts: TensorSlice[]): Int32Array {
  const out = new Int32Array(ts.length);
  ts.forEach((t, k) => {
    let m = 0;
    for (let i = t.offset; i < t.offset + t.length; i++) m = Math.max(m, Math.abs(g[i]! + r[i]!));
    out[k] = exponentFor(m);
  });
  return out;
}

/** Quantise g + r with the agreed exponents; updates the residual r in place. */
export function quantize(g: Float64Array, r: Float64Array, ts: TensorSlice[], exps: Int32Array): Int32Array {
  const q = new Int32Array(g.length);
  ts.forEach((t, k) => {
    const s = 2 ** exps[k]!;
    for (let i = t.offset; i < t.offset + t.length; i++) {
      const v = g[i]! + r[i]!;
      const qi = Math.max(-QMAX, Math.min(QMAX, Math.round(v / s)));
      q[i] = qi;
      r[i] = v - qi * s;
    }
  });
  return q;
}

export function dequantize(q: Int32Array, ts: TensorSlice[], exps: Int32Array): Float64Array {
  const out = new Float64Array(q.length);
  ts.forEach((t, k) => {
    const s = 2 ** exps[k]!;
    for (let i = t.offset; i < t.offset + t.length; i++) out[i] = q[i]! * s;
  });
  return out;
}

/** w ← w − lr·(Σq·2^e)/N, element by element in index order. */
export function applyUpdate(w: Float64Array, sum: Int32Array, ts: TensorSlice[], exps: Int32Array, lr: number, n: number): void {
  ts.forEach((t, k) => {
    const s = 2 ** exps[k]!;
    for (let i = t.offset; i < t.offset + t.length; i++) w[i] = w[i]! - (lr * (sum[i]! * s)) / n;
  });
}

/** Int32 values as little-endian bytes (what is hashed and sent). */
export function int32Bytes(a: Int32Array, from = 0, to = a.length): Uint8Array {
  const out = new Uint8Array((to - from) * 4);
  const dv = new DataView(out.buffer);
  for (let i = from; i < to; i++) dv.setInt32((i - from) * 4, a[i]!, true);
  return out;
}

export function int32FromBytes(b: Uint8Array): Int32Array {
  const dv = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const out = new Int32Array(b.byteLength >> 2);
  for (let i = 0; i < out.length; i++) out[i] = dv.getInt32(i * 4, true);
  return out;
}
