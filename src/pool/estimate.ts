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

/**
 * What §2.6 derives from, for one class, folded as observations arrive: every rule of §2.6 is a count, an extreme
 * or the worst grade, none depends on order or on which observations are newest, so this is the whole of what a
 * history of any length says about its class (src/pool/usage.ts keeps one per class instead of the history).
 */
export interface ClassEvidence {
  /** observations of the class, of every grade */
  seen: number;
  /** of those, observed ones (HwShunt, ModelBased): the evidence */
  evidence: number;
  /** the smallest and largest evidence figure (MAX_SAFE_INTEGER and 0 while there is none) */
  minUj: number;
  maxUj: number;
  /** the evidence's worst grade, capped at ModelBased (a derived figure is a model) */
  grade: Energy['grade'];
}

export function emptyEvidence(): ClassEvidence {
  return { seen: 0, evidence: 0, minUj: Number.MAX_SAFE_INTEGER, maxUj: 0, grade: 'ModelBased' };
}

/** Fold one observation's (checked) figure into its class's evidence. */
export function addObservation(ev: ClassEvidence, actual: Energy): void {
  ev.seen++;
  if (!isObserved(actual.grade)) return; // a guess is not evidence
  ev.evidence++;
  if (actual.uj < ev.minUj) ev.minUj = actual.uj;
  if (actual.uj > ev.maxUj) ev.maxUj = actual.uj;
  ev.grade = capGrade(actual.grade, ev.grade);
}

/**
 * The estimate for `cls` from its folded evidence (absent: nothing seen), with deriveEstimate's checks and answers:
 * O(1), whatever the length of the history it stands for.
 */
export function estimateFromEvidence(cls: string, ev: Readonly<ClassEvidence> | undefined, opts: { required?: number } = {}): EstimateResult {
  const required = requiredCount(opts.required);
  checkClass(cls, 'class');
  return fromEvidence(cls, ev ?? emptyEvidence(), required);
}

function derive(cls: string, obs: readonly Observation[], required: number): EstimateResult {
  const ev = emptyEvidence();
  for (const o of obs) addObservation(ev, o.actual);
  return fromEvidence(cls, ev, required);
}

function fromEvidence(cls: string, ev: Readonly<ClassEvidence>, required: number): EstimateResult {
  const { seen, evidence, minUj, maxUj, grade } = ev;
  if (evidence < required) return { ok: false, class: cls, reason: 'INSUFFICIENT_EVIDENCE', seen, evidence, required };
  // A derived estimate is a prediction: capped at ModelBased however it was read.
  return { ok: true, class: cls, estimate: { uj: maxUj, grade: capGrade(grade, 'ModelBased') }, spread: { minUj, maxUj, evidence, seen } };
}
