/** Freshness of a record against an injected `now` (never a clock read here). */
import { C0Error } from '../errors.js';
import { MAX_JOB_DEADLINE_AHEAD_MS, T, validityWindow } from './kinds.js';

export const DEFAULT_SKEW_MS = 30_000;

/** A job's (or open order's) deadline further ahead of `now` than MAX_JOB_DEADLINE_AHEAD_MS plus the skew window. */
export const JOB_DEADLINE_TOO_FAR = 'JOB_DEADLINE_TOO_FAR';

/**
 * A job's deadline given relative to now (a job file's `deadline:`, POST /v1/run's `deadlineMs`): refused at once
 * past MAX_JOB_DEADLINE_AHEAD_MS (JOB_DEADLINE_TOO_FAR), as every receiver would refuse the job signed from it.
 */
export function checkJobDeadlineMs(deadlineMs: number, what: string): void {
  if (deadlineMs > MAX_JOB_DEADLINE_AHEAD_MS) {
    throw new C0Error(JOB_DEADLINE_TOO_FAR, `${what}: the deadline is more than ${MAX_JOB_DEADLINE_AHEAD_MS / 86_400_000} days away, the most a job's deadline may be ahead`, { field: 'deadline', detail: { deadlineMs, maxAheadMs: MAX_JOB_DEADLINE_AHEAD_MS } });
  }
}

/**
 * Throws RECORD_EXPIRED when the record's window has passed, RECORD_FROM_FUTURE
 * when it starts more than `skewMs` after `now`, and for a job JOB_DEADLINE_TOO_FAR
 * when its deadline lies more than MAX_JOB_DEADLINE_AHEAD_MS + `skewMs` after `now`
 * (measured from the receiver's clock, like the others, so a record stored
 * earlier is never refused by it: only its arrival). Kinds without a window pass.
 */
export function checkFresh(type: string, record: unknown, now: number, skewMs = DEFAULT_SKEW_MS): void {
  const w = validityWindow(type, record);
  if (!w) return;
  const [notBefore, notAfter] = w;
  if (notAfter <= now) throw new C0Error('RECORD_EXPIRED', `${type} expired ${now - notAfter} ms ago`, { detail: { expiredAt: notAfter, now } });
  if (notBefore > now + skewMs) throw new C0Error('RECORD_FROM_FUTURE', `${type} issued ${notBefore - now} ms in the future (skew window ${skewMs} ms)`, { detail: { issuedAt: notBefore, now } });
  if (type === T.job && notAfter > now + skewMs + MAX_JOB_DEADLINE_AHEAD_MS) {
    const days = MAX_JOB_DEADLINE_AHEAD_MS / 86_400_000;
    throw new C0Error(JOB_DEADLINE_TOO_FAR, `deadline: ${Math.round((notAfter - now) / 86_400_000)} days away; a job's deadline may be at most ${days} days ahead`, {
      field: 'deadline',
      detail: { deadline: notAfter, now, maxAheadMs: MAX_JOB_DEADLINE_AHEAD_MS },
    });
  }
}

export function isFresh(type: string, record: unknown, now: number, skewMs = DEFAULT_SKEW_MS): boolean {
  try {
    checkFresh(type, record, now, skewMs);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why a receipt's times are impossible for its buyer, or undefined when they are possible: started or completed after
 * `now` beyond the clock-skew window, or started before the offer it answers was issued beyond that window too (an
 * auction offer is dated by the provider's clock, but an open order's claim by the later of it and the job's
 * announcedAt, the buyer's clock: src/roles/provider/claimer.ts). One rule for the exec stream's receipt
 * (src/roles/buyer.ts) and one delivered late (src/node/late-receipts.ts).
 */
export function impossibleReceiptTimes(r: { startedAt: number; completedAt: number }, offerIssuedAt: number | undefined, now: number, skewMs = DEFAULT_SKEW_MS): string | undefined {
  if (offerIssuedAt !== undefined && r.startedAt < offerIssuedAt - skewMs) return 'the receipt says the work started before the offer was issued (beyond the clock-skew window)';
  if (r.startedAt > now + skewMs || r.completedAt > now + skewMs) return 'the receipt is dated after now beyond the clock-skew window';
  return undefined;
}
