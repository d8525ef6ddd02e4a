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
