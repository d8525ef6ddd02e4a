/**
 * Policies (spec: "Policies"): weights over four dimensions, each in 0..1.
 *
 *   policy     price speed reputation trust
 *   cheapest   1.0   —     —          —
 *   balanced   0.4   0.2   0.4        —      (default)
 *   fastest    —     1.0   —          —
 *   trusted    0.2   —     0.5        0.3
 *   private    0.2   —     0.3        0.5    (requires the job to carry an allowlist)
 */
import { C0Error } from '../errors.js';
import { POLICIES, type Job, type PolicyName, type Tier } from '../records/kinds.js';

export const DIMENSIONS = ['price', 'speed', 'reputation', 'trust'] as const;
export type Dimension = (typeof DIMENSIONS)[number];
export type Weights = Record<Dimension, number>;

export const DEFAULT_POLICY: PolicyName = 'balanced';

export const WEIGHTS: Readonly<Record<PolicyName, Readonly<Weights>>> = Object.freeze({
  cheapest: Object.freeze({ price: 1.0, speed: 0, reputation: 0, trust: 0 }),
  balanced: Object.freeze({ price: 0.4, speed: 0.2, reputation: 0.4, trust: 0 }),
  fastest: Object.freeze({ price: 0, speed: 1.0, reputation: 0, trust: 0 }),
  trusted: Object.freeze({ price: 0.2, speed: 0, reputation: 0.5, trust: 0.3 }),
  private: Object.freeze({ price: 0.2, speed: 0, reputation: 0.3, trust: 0.5 }),
});

/** Trust dimension by claimed tier. */
export const TRUST_SCORE: Readonly<Record<Tier, number>> = Object.freeze({ community: 0, standard: 0.4, verified: 0.8, private: 1.0, enterprise: 1.0 });

/** Neutral reputation of a provider with no evidence (Laplace prior). */
export const UNKNOWN_REPUTATION = 0.5;

export function parsePolicy(p: string | undefined): PolicyName {
  if (p === undefined) return DEFAULT_POLICY;
  if (!(POLICIES as readonly string[]).includes(p)) throw new C0Error('POLICY_UNKNOWN', `unknown policy "${p}"; known: ${POLICIES.join(', ')}`, { field: 'policy' });
  return p as PolicyName;
}

/** Policy-level refusals: `private` needs the job to carry an allowlist. */
export function checkPolicy(policy: PolicyName, job: Job): void {
  if (policy === 'private' && !job.requirements.allowlist) {
    throw new C0Error('POLICY_PRIVATE_NEEDS_ALLOWLIST', 'policy private requires the job to carry a provider allowlist (otherwise "private" would be a preference, not a guarantee)', { field: 'requirements.allowlist' });
  }
}

/**
 * Lower-is-better dimensions score best / value (proportional, never min–max):
 * an offer 20% dearer than the best scores 1/1.2 = 0.8333…. A zero value is the
 * best possible and scores 1.
 */
export function ratioScore(best: number, value: number): number {
  if (value <= 0) return 1;
  return best / value;
}

/** A read-only view of reputation: the provider's derived score, 0.5 when unknown. */
export interface ReputationView {
  scoreOf(did: string): number;
}

export const NO_REPUTATION: ReputationView = { scoreOf: () => UNKNOWN_REPUTATION };

export function reputationFromMap(m: ReadonlyMap<string, number>): ReputationView {
  return { scoreOf: (d) => m.get(d) ?? UNKNOWN_REPUTATION };
}
