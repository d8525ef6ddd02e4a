/**
 * Admission gates of a pool (docs/pools.md "Admission gates"; spec/compute-pool.md
 * CP-B-008): checked before anything is recorded, each refusal with its own code.
 *
 * - POOL_GATE_MIN_PRICE: the price is below `minPrice` (same currency, exact decimals;
 *   another currency is refused with the same code).
 * - POOL_GATE_INPUT_TOO_LARGE: the job's input is larger than `maxInputBytes`.
 * - POOL_GATE_SIZE_PARAM: the job's params (a JSON object) give `sizeParam`
 *   (default `maxTokens`) above `maxSizeParam`, or not a non-negative integer.
 *   Params that are not a JSON object, or lack the key, pass (the workload's default applies).
 * Pure.
 */
import { C0Error } from '../errors.js';
import { compareAmounts, type Money } from '../records/money.js';
import type { Job } from '../records/kinds.js';

export interface PoolGates {
  /** Absent: no price gate. */
  minPrice?: Money;
  maxInputBytes: number;
  sizeParam: string;
  maxSizeParam: number;
}

export function sizeParamOf(params: string | undefined, key: string): unknown {
  if (params === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(params);
  } catch {
    return undefined;
  }
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>)[key] : undefined;
}

/** Throws the first gate the job fails at `price` (the gates are independent; one code per refusal). */
export function admit(job: Job, price: Money, g: PoolGates): void {
  if (g.minPrice && (price.currency !== g.minPrice.currency || compareAmounts(price.amount, g.minPrice.amount) < 0)) {
    throw new C0Error('POOL_GATE_MIN_PRICE', `the price ${price.amount} ${price.currency} is below the pool's minimum ${g.minPrice.amount} ${g.minPrice.currency}`, { field: 'price' });
  }
  if (job.input.size > g.maxInputBytes) throw new C0Error('POOL_GATE_INPUT_TOO_LARGE', `the input of ${job.input.size} bytes exceeds the pool's ${g.maxInputBytes}`, { field: 'input.size' });
  const s = sizeParamOf(job.params, g.sizeParam);
  if (s !== undefined && (typeof s !== 'number' || !Number.isSafeInteger(s) || s < 0 || s > g.maxSizeParam)) {
    throw new C0Error('POOL_GATE_SIZE_PARAM', `params.${g.sizeParam} must be an integer in 0..${g.maxSizeParam}`, { field: `params.${g.sizeParam}` });
  }
}
