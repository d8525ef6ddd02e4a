/**
 * Estimates derived from history (pool/1 §2.6).
 *
 * Evidence is an observation whose own grade is observed (HwShunt or
 * ModelBased); Estimator observations are excluded, not averaged in. Below the
 * required count nothing is derived and the two counts are reported. A derived
 * estimate takes the maximum of the evidence (upper end, not the mean), its
 * grade is capped at ModelBased, and the spread is reported beside it.
 */
import { C0Error } from '../errors.js';
import { capGrade, checkEnergy, isObserved, type Energy } from './grades.js';

export const EST_ERR = {
  EMPTY_CLASS: 'POOL_ESTIMATE_EMPTY_CLASS',
  MIXED_CLASSES: 'POOL_ESTIMATE_MIXED_CLASSES',
  BAD_REQUIRED: 'POOL_ESTIMATE_BAD_REQUIRED',
} as const;

/** The default required count of evidence (§2.6 states three). */
export const DEFAULT_REQUIRED_EVIDENCE = 3;

/** One completed run: the class its Admitted entry declared and what its Released entry charged. */
export interface Observation {
  class: string;
  actual: Energy;
}

export type EstimateResult =
  | {
      ok: true;
      class: string;
      estimate: Energy;
      /** how thin the evidence is: the smallest and largest evidence figure and the count. */
      spread: { minUj: number; maxUj: number; evidence: number; seen: number };
    }
  | {
      ok: false;
      class: string;
      reason: 'INSUFFICIENT_EVIDENCE';
      /** observations of the class seen, of every grade */
      seen: number;
      /** of those, how many were evidence (observed grade) */
      evidence: number;
      required: number;
    };

function checkClass(cls: unknown, field: string): string {
  if (typeof cls !== 'string' || cls.trim().length === 0) {
    throw new C0Error(EST_ERR.EMPTY_CLASS, `${field}: the absence of a class is not a class; a derived estimate needs a named class`, { field });
  }
  return cls;
}

/** Normalise the required count: a policy value; 0 is treated as 1. */
export function requiredCount(required: number | undefined): number {
  const r = required ?? DEFAULT_REQUIRED_EVIDENCE;
  if (!Number.isSafeInteger(r) || r < 0) throw new C0Error(EST_ERR.BAD_REQUIRED, `required: expected a non-negative integer, got ${String(r)}`, { field: 'required' });
  return Math.max(1, r);
}

/**
 * Derive from observations that must all be of one class. Observations of
 * differing classes are refused (never pooled into one figure).
 */
export function estimateFrom(observations: readonly Observation[], opts: { required?: number } = {}): EstimateResult {
  const required = requiredCount(opts.required);
  const first = observations[0];
  if (first === undefined) throw new C0Error(EST_ERR.EMPTY_CLASS, 'observations: an empty class asserts nothing', { field: 'observations' });
  const cls = checkClass(first.class, 'observations[0].class');
  observations.forEach((o, i) => {
    if (o.class !== cls) throw new C0Error(EST_ERR.MIXED_CLASSES, `observations[${i}].class: "${o.class}" differs from "${cls}"; unlike work is not pooled`, { field: `observations[${i}].class` });
    checkEnergy(o.actual, `observations[${i}].actual`);
  });
  return derive(cls, observations, required);
}

/** Derive the estimate for `cls` from a mixed history, using only that class's observations. */
export function deriveEstimate(cls: string, history: readonly Observation[], opts: { required?: number } = {}): EstimateResult {
  const required = requiredCount(opts.required);
  checkClass(cls, 'class');
  const mine = history.filter((o) => o.class === cls);
  mine.forEach((o, i) => checkEnergy(o.actual, `history[${i}].actual`));
  return derive(cls, mine, required);
}

function derive(cls: string, obs: readonly Observation[], required: number): EstimateResult {
  let evidence = 0;
  let minUj = Number.MAX_SAFE_INTEGER;
  let maxUj = 0;
  let grade: Energy['grade'] = 'ModelBased';
  for (const o of obs) {
    if (!isObserved(o.actual.grade)) continue; // a guess is not evidence
    evidence++;
    if (o.actual.uj < minUj) minUj = o.actual.uj;
    if (o.actual.uj > maxUj) maxUj = o.actual.uj;
    grade = capGrade(o.actual.grade, grade);
  }
  if (evidence < required) return { ok: false, class: cls, reason: 'INSUFFICIENT_EVIDENCE', seen: obs.length, evidence, required };
  // A derived estimate is a prediction: capped at ModelBased however it was read.
  return { ok: true, class: cls, estimate: { uj: maxUj, grade: capGrade(grade, 'ModelBased') }, spread: { minUj, maxUj, evidence, seen: obs.length } };
}
