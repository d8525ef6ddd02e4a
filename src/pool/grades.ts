/**
 * Energy figures and their grades (pool/1 §2.3). Every figure is a µJ count and
 * a provenance; the grade never silently improves.
 *
 * Amounts are plain `number`s holding non-negative safe integers (< 2^53 µJ,
 * about 9 GJ); anything beyond is refused with POOL_UJ_TOO_LARGE. Intermediate
 * products that could overflow (weighted shares, rate comparisons) are done in
 * bigint.
 */
import { C0Error } from '../errors.js';
import { GRADES, type Grade } from '../records/kinds.js';

export { GRADES, type Grade };

/** An energy figure: microjoules and the grade of whatever produced them. */
export interface Energy {
  uj: number;
  grade: Grade;
}

export const POOL_ERR = {
  UJ_INVALID: 'POOL_UJ_INVALID',
  UJ_TOO_LARGE: 'POOL_UJ_TOO_LARGE',
  GRADE_INVALID: 'POOL_GRADE_INVALID',
} as const;

/** Rank: higher is better evidence. HwShunt > ModelBased > Estimator. */
const RANK: Record<Grade, number> = { HwShunt: 2, ModelBased: 1, Estimator: 0 };

export function isGrade(g: unknown): g is Grade {
  return typeof g === 'string' && (GRADES as readonly string[]).includes(g);
}

/** `HwShunt` and `ModelBased` are observed; `Estimator` is not (§2.3). */
export function isObserved(g: Grade): boolean {
  return g !== 'Estimator';
}

/** The worse of two grades (combining figures never improves a grade). */
export function worseGrade(a: Grade, b: Grade): Grade {
  return RANK[a] <= RANK[b] ? a : b;
}

/** Cap a grade at `cap`: the result is never better than either. */
export function capGrade(g: Grade, cap: Grade): Grade {
  return worseGrade(g, cap);
}

/** True when `to` would be an improvement over `from`. */
export function improves(from: Grade, to: Grade): boolean {
  return RANK[to] > RANK[from];
}

/**
 * The grade of one share of a figure divided among `occupants` (§2.5): a
 * division (two or more occupants) degrades HwShunt to ModelBased and nothing
 * further; dividing by one is not a division.
 */
export function gradeOnDivision(g: Grade, occupants: number): Grade {
  if (occupants >= 2 && g === 'HwShunt') return 'ModelBased';
  return g;
}

/** Check a µJ amount: a non-negative safe integer. Throws C0Error naming the field. */
export function checkUj(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
    throw new C0Error(POOL_ERR.UJ_INVALID, `${field}: expected a non-negative integer number of µJ, got ${String(v)}`, { field });
  }
  if (!Number.isSafeInteger(v)) throw new C0Error(POOL_ERR.UJ_TOO_LARGE, `${field}: ${v} µJ is beyond 2^53 - 1`, { field });
  return v;
}

/** Check an energy figure (µJ and grade). */
export function checkEnergy(e: unknown, field: string): Energy {
  if (typeof e !== 'object' || e === null) throw new C0Error(POOL_ERR.UJ_INVALID, `${field}: expected {uj, grade}`, { field });
  const o = e as Record<string, unknown>;
  checkUj(o.uj, `${field}.uj`);
  if (!isGrade(o.grade)) throw new C0Error(POOL_ERR.GRADE_INVALID, `${field}.grade: must be one of ${GRADES.join('|')}, got ${String(o.grade)}`, { field: `${field}.grade` });
  return { uj: o.uj as number, grade: o.grade };
}

/** Add µJ, refusing a sum beyond 2^53 - 1. */
export function addUj(a: number, b: number, field = 'uj'): number {
  const s = a + b;
  if (!Number.isSafeInteger(s)) throw new C0Error(POOL_ERR.UJ_TOO_LARGE, `${field}: sum beyond 2^53 - 1 µJ`, { field });
  return s;
}

const utf8 = new TextEncoder();
/** The stable key order used for every tie-break in pool/1: bytewise order of the UTF-8 encodings. */
export function compareKeys(a: string, b: string): number {
  if (a === b) return 0;
  const ea = utf8.encode(a);
  const eb = utf8.encode(b);
  const n = Math.min(ea.length, eb.length);
  for (let i = 0; i < n; i++) {
    const d = ea[i]! - eb[i]!;
    if (d !== 0) return d;
  }
  return ea.length - eb.length;
}
