/** Freshness of a record against an injected `now` (never a clock read here). */
import { C0Error } from '../errors.js';
import { validityWindow } from './kinds.js';

export const DEFAULT_SKEW_MS = 30_000;

/**
 * Throws RECORD_EXPIRED when the record's window has passed, RECORD_FROM_FUTURE
 * when it starts more than `skewMs` after `now`. Kinds without a window pass.
 */
export function checkFresh(type: string, record: unknown, now: number, skewMs = DEFAULT_SKEW_MS): void {
  const w = validityWindow(type, record);
  if (!w) return;
  const [notBefore, notAfter] = w;
  if (notAfter <= now) throw new C0Error('RECORD_EXPIRED', `${type} expired ${now - notAfter} ms ago`, { detail: { expiredAt: notAfter, now } });
  if (notBefore > now + skewMs) throw new C0Error('RECORD_FROM_FUTURE', `${type} issued ${notBefore - now} ms in the future (skew window ${skewMs} ms)`, { detail: { issuedAt: notBefore, now } });
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
