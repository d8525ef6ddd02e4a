/**
 * Realised cost and the preemption order (pool/1 §5).
 *
 * Realised cost = spent µJ / completed units. With nothing completed it is
 * `{ defined: false }`: never 0, never Infinity. Costs compare exactly by
 * cross-multiplication in bigint.
 *
 * Order: defined costs, most expensive first; then undefined costs, lowest
 * priority first. Every tie breaks on the workload key (bytewise UTF-8), so
 * the order is total and a replay reproduces it.
 */
import { C0Error } from '../errors.js';
import { checkUj, compareKeys } from './grades.js';

export const PREEMPT_ERR = { BAD_INPUT: 'POOL_PREEMPT_BAD_INPUT', DUPLICATE: 'POOL_PREEMPT_DUPLICATE_KEY' } as const;

export type RealisedCost = { defined: true; spentUj: number; units: number } | { defined: false; spentUj: number };

export interface RunningWorkload {
  /** stable key: the claim id */
  key: string;
  spentUj: number;
  /** units completed (not attempted) */
  completedUnits: number;
  /** declared priority (the entitlement's), used only where evidence is absent */
  priority: number;
}

export function realisedCost(spentUj: number, completedUnits: number): RealisedCost {
  checkUj(spentUj, 'spentUj');
  if (typeof completedUnits !== 'number' || !Number.isSafeInteger(completedUnits) || completedUnits < 0) {
    throw new C0Error(PREEMPT_ERR.BAD_INPUT, `completedUnits: expected a non-negative integer, got ${String(completedUnits)}`, { field: 'completedUnits' });
  }
  return completedUnits === 0 ? { defined: false, spentUj } : { defined: true, spentUj, units: completedUnits };
}

/** Compare two defined costs: negative when a < b. */
export function compareCost(a: Extract<RealisedCost, { defined: true }>, b: Extract<RealisedCost, { defined: true }>): number {
  const l = BigInt(a.spentUj) * BigInt(b.units);
  const r = BigInt(b.spentUj) * BigInt(a.units);
  return l === r ? 0 : l < r ? -1 : 1;
}

/** A display value (µJ per unit) for people; never used in a decision. */
export function costPerUnit(c: RealisedCost): number | undefined {
  return c.defined ? c.spentUj / c.units : undefined;
}

export interface PreemptionRank {
  key: string;
  cost: RealisedCost;
  priority: number;
}

export function preemptionOrder(workloads: readonly RunningWorkload[]): PreemptionRank[] {
  const seen = new Set<string>();
  const ranks = workloads.map((w, i) => {
    if (typeof w.key !== 'string' || w.key.length === 0) throw new C0Error(PREEMPT_ERR.BAD_INPUT, `workloads[${i}].key: required`, { field: `workloads[${i}].key` });
    if (seen.has(w.key)) throw new C0Error(PREEMPT_ERR.DUPLICATE, `workloads[${i}].key: "${w.key}" listed twice`, { field: `workloads[${i}].key` });
    seen.add(w.key);
    if (typeof w.priority !== 'number' || !Number.isSafeInteger(w.priority)) throw new C0Error(PREEMPT_ERR.BAD_INPUT, `workloads[${i}].priority: expected an integer`, { field: `workloads[${i}].priority` });
    return { key: w.key, cost: realisedCost(w.spentUj, w.completedUnits), priority: w.priority };
  });
  return ranks.sort((a, b) => {
    if (a.cost.defined !== b.cost.defined) return a.cost.defined ? -1 : 1; // evidence before declaration
    if (a.cost.defined && b.cost.defined) {
      const c = compareCost(b.cost, a.cost); // most expensive first
      if (c !== 0) return c;
    } else if (a.priority !== b.priority) {
      return a.priority - b.priority; // lowest priority first
    }
    return compareKeys(a.key, b.key);
  });
}
