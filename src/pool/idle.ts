/**
 * Idle reclamation (pool/1 §2.7). The check order is normative: nothing held,
 * then the window, then the grade, then the rate. A later check never rescues
 * an earlier refusal. Four distinct verdicts; only `idle` permits reclamation.
 * An unconfigured policy (no window or no threshold) reclaims nothing.
 *
 * Rates are compared exactly: uj·1000 < threshold_µW·windowMs in bigint.
 */
import { C0Error } from '../errors.js';
import { checkEnergy, compareKeys, isObserved, type Energy } from './grades.js';

export const IDLE_ERR = { BAD_INPUT: 'POOL_IDLE_BAD_INPUT' } as const;

export interface IdlePolicy {
  /** The window a verdict rests on, ms. Absent: unconfigured. */
  windowMs?: number;
  /** Idle below this rate, in µW (= µJ per second). Absent: unconfigured. There is no default. */
  idleBelowMicrowatts?: number;
}

export interface IdleObservation {
  /** stable key (claim id), also the tie-break */
  key: string;
  devicesHeld: number;
  /** how long the observation covers, ms */
  observedMs: number;
  /** energy spent over the observation, with its grade */
  energy: Energy;
}

export type NoVerdictReason = 'UNCONFIGURED' | 'EMPTY_WINDOW' | 'WINDOW_TOO_SHORT' | 'UNOBSERVED_GRADE';

export type IdleVerdict =
  | { verdict: 'nothing-held'; key: string }
  | { verdict: 'no-verdict'; key: string; reason: NoVerdictReason; windowMs?: number }
  | { verdict: 'working'; key: string; windowMs: number; observedMs: number; uj: number }
  | { verdict: 'idle'; key: string; windowMs: number; observedMs: number; uj: number };

function nonNeg(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new C0Error(IDLE_ERR.BAD_INPUT, `${field}: expected a non-negative integer, got ${String(v)}`, { field });
  return v;
}

export function idleVerdict(obs: IdleObservation, policy: IdlePolicy): IdleVerdict {
  const key = obs.key;
  nonNeg(obs.devicesHeld, 'devicesHeld');
  nonNeg(obs.observedMs, 'observedMs');
  checkEnergy(obs.energy, 'energy');
  if (policy.windowMs !== undefined) nonNeg(policy.windowMs, 'policy.windowMs');
  if (policy.idleBelowMicrowatts !== undefined) nonNeg(policy.idleBelowMicrowatts, 'policy.idleBelowMicrowatts');
  // 1. nothing held
  if (obs.devicesHeld === 0) return { verdict: 'nothing-held', key };
  // 2. the window
  const windowMs = policy.windowMs;
  if (windowMs === undefined || windowMs === 0) return { verdict: 'no-verdict', key, reason: 'UNCONFIGURED' };
  if (obs.observedMs === 0) return { verdict: 'no-verdict', key, reason: 'EMPTY_WINDOW', windowMs }; // no rate, not a rate of zero
  if (obs.observedMs < windowMs) return { verdict: 'no-verdict', key, reason: 'WINDOW_TOO_SHORT', windowMs };
  // 3. the grade, before any value is compared
  if (!isObserved(obs.energy.grade)) return { verdict: 'no-verdict', key, reason: 'UNOBSERVED_GRADE', windowMs };
  // 4. the rate
  const threshold = policy.idleBelowMicrowatts;
  if (threshold === undefined) return { verdict: 'no-verdict', key, reason: 'UNCONFIGURED', windowMs };
  const idle = BigInt(obs.energy.uj) * 1000n < BigInt(threshold) * BigInt(obs.observedMs);
  return { verdict: idle ? 'idle' : 'working', key, windowMs, observedMs: obs.observedMs, uj: obs.energy.uj };
}

/**
 * The reclamation ordering: only workloads with an `idle` verdict, lowest rate
 * first, ties on the key. Workloads with any other verdict are absent, not last.
 */
export function reclamationOrder(observations: readonly IdleObservation[], policy: IdlePolicy): Array<Extract<IdleVerdict, { verdict: 'idle' }>> {
  const idle: Array<Extract<IdleVerdict, { verdict: 'idle' }>> = [];
  for (const o of observations) {
    const v = idleVerdict(o, policy);
    if (v.verdict === 'idle') idle.push(v);
  }
  return idle.sort((a, b) => {
    const l = BigInt(a.uj) * BigInt(b.observedMs);
    const r = BigInt(b.uj) * BigInt(a.observedMs);
    if (l !== r) return l < r ? -1 : 1;
    return compareKeys(a.key, b.key);
  });
}
