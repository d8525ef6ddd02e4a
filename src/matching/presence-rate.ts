/**
 * Presence that scales with the market (spec/matching-and-leases.md "Presence"
 * on the P2P network; docs/matching.md "Presence", docs/scale.md §4 "Presence
 * that scales with the market"; issue #16). Pure: from the number of live
 * providers a node sees in a market (a presence topic shard) to
 *
 *   - the provider's interval and window: every = max(configured every,
 *     live / target), window = 3 × every (two in a row may be lost), capped at
 *     MAX_PRESENCE_WINDOW_MS — so a market carries at most `target` presence
 *     records a second once it is large, and a small market (live ≤ target ×
 *     15 s: 75 providers at the default target) keeps the configured interval
 *     and window exactly, whatever they are (15 s / 45 s by default);
 *   - the longest window a peer honours on a record of that market: the window
 *     a provider would use in a market `slack` times larger (views differ), never
 *     below the fixed floor (60 s) nor above MAX_PRESENCE_WINDOW_MS.
 */
import { MAX_PRESENCE_WINDOW_MS } from '../records/kinds.js';
import { MATCH_LIVENESS_MS } from './types.js';

/** Presence records a second a market should carry at most (the default of `provider.presenceTargetPerMarket`). */
export const PRESENCE_TARGET_PER_MARKET = 5;
/** The window is this many intervals (two records in a row may be lost). */
export const PRESENCE_WINDOW_FACTOR = 3;
/** The interval a peer assumes a provider was configured with (the default, a third of 45 s). */
export const PRESENCE_BASE_EVERY_MS = MATCH_LIVENESS_MS;
/** A peer honours a window up to this whatever the market's size (today's fixed cap, 4 × MATCH_LIVENESS_MS). */
export const PRESENCE_HONOUR_FLOOR_MS = 4 * MATCH_LIVENESS_MS;
/** A peer assumes the provider's view of the market may be this many times its own. */
export const PRESENCE_HONOUR_SLACK = 2;

export interface PresenceInterval {
  everyMs: number;
  windowMs: number;
}

/**
 * The interval, ms, at which `live` providers each sending one record put `targetPerSec` records a second on a
 * market (0 when there is no target or no count: the configured interval stands). Presence and adverts share it.
 */
export function intervalForTarget(live: number, targetPerSec: number): number {
  return targetPerSec > 0 && Number.isFinite(live) && live > 0 ? Math.ceil((live / targetPerSec) * 1000) : 0;
}

/**
 * The provider's interval and window for a market of `live` providers (itself
 * included), given its configured interval and window and the target rate
 * (records a second per market). The configured pair is returned unchanged
 * while the market is small enough.
 */
export function presenceInterval(live: number, configured: PresenceInterval, targetPerSec: number = PRESENCE_TARGET_PER_MARKET): PresenceInterval {
  const needed = intervalForTarget(live, targetPerSec);
  // a small market (live ≤ target × 15 s: 75 providers at 5/s) keeps the configured pair whatever it is
  if (needed <= Math.max(configured.everyMs, PRESENCE_BASE_EVERY_MS)) return { everyMs: configured.everyMs, windowMs: configured.windowMs };
  const windowMs = Math.min(MAX_PRESENCE_WINDOW_MS, Math.max(configured.windowMs, PRESENCE_WINDOW_FACTOR * needed));
  return { everyMs: Math.min(needed, Math.floor(windowMs / PRESENCE_WINDOW_FACTOR)), windowMs };
}

export interface HonourOptions {
  /** Floor, ms (default PRESENCE_HONOUR_FLOOR_MS = 60 s). */
  floorMs?: number;
  /** Target rate a peer assumes, records/s per market (default PRESENCE_TARGET_PER_MARKET). */
  targetPerSec?: number;
  /** Slack on the live count (default PRESENCE_HONOUR_SLACK = 2). */
  slack?: number;
}

/** The longest window honoured on a presence of a market where this node sees `live` providers. */
export function honouredWindowMs(live: number, o: HonourOptions = {}): number {
  const floorMs = o.floorMs ?? PRESENCE_HONOUR_FLOOR_MS;
  const base = { everyMs: PRESENCE_BASE_EVERY_MS, windowMs: PRESENCE_WINDOW_FACTOR * PRESENCE_BASE_EVERY_MS };
  const p = presenceInterval(live * (o.slack ?? PRESENCE_HONOUR_SLACK), base, o.targetPerSec ?? PRESENCE_TARGET_PER_MARKET);
  // a small market: the fixed floor exactly, as before presence adapted
  if (p.everyMs <= base.everyMs) return floorMs;
  return Math.min(MAX_PRESENCE_WINDOW_MS, Math.max(floorMs, p.windowMs));
}
