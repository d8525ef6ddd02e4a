/**
 * The requirement groups ("constraints") an explanation of the market counts,
 * and which failure code belongs to which (docs/market.md, "Explaining an
 * empty market"). The relaxable ones are the buyer's to change; a currency
 * mismatch is not one of them (prices are never converted, so no maxPrice in
 * the job's currency admits an offer in another).
 */
import { REASON, type ReasonCode } from './eligibility.js';

/** Requirement groups an explanation counts. The relaxable ones are the buyer's to change. */
export const CONSTRAINTS = ['advert', 'workload', 'allowlist', 'tier', 'region', 'gpu', 'cpu', 'memory', 'currency', 'price', 'deadline', 'quote'] as const;
export type Constraint = (typeof CONSTRAINTS)[number];
export const RELAXABLE: readonly Constraint[] = ['allowlist', 'tier', 'region', 'gpu', 'cpu', 'memory', 'price', 'deadline'];

export function constraintOf(code: ReasonCode): Constraint {
  switch (code) {
    case REASON.ADVERT_UNKNOWN:
    case REASON.ADVERT_EXPIRED:
    case REASON.ADVERT_NOT_YET_VALID:
    case REASON.ADVERT_NOT_PROVIDERS:
    case REASON.ADVERT_ROSTER_EXPIRED:
      return 'advert';
    case REASON.WORKLOAD_NOT_OFFERED:
      return 'workload';
    case REASON.NOT_ON_ALLOWLIST:
      return 'allowlist';
    case REASON.TIER_NOT_SATISFIED:
      return 'tier';
    case REASON.REGION_UNDISCLOSED:
    case REASON.REGION_NOT_ACCEPTED:
      return 'region';
    case REASON.CPU_CORES_TOO_FEW:
      return 'cpu';
    case REASON.MEMORY_TOO_SMALL:
      return 'memory';
    case REASON.OFFER_CURRENCY_MISMATCH:
    case REASON.ASK_CURRENCY_MISMATCH:
      return 'currency';
    case REASON.OFFER_OVER_MAX_PRICE:
    case REASON.ASK_ABOVE_PRICE:
      return 'price';
    case REASON.OFFER_MISSES_DEADLINE:
    case REASON.OFFER_OVER_TIMEOUT:
      return 'deadline';
    case REASON.OFFER_MISSING:
    case REASON.OFFER_EXPIRED:
    case REASON.OFFER_WRONG_JOB:
      return 'quote';
    default:
      return 'gpu';
  }
}

