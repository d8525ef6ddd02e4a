/**
 * Adverts that scale with the market (docs/scale.md §3 "Sixth round", docs/matching.md "Adverts in a large market";
 * issue #16), as presence does (presence-rate.ts). Pure: from the number of live providers a node sees in its
 * largest market to its advert's republish interval and lifetime.
 *
 * A provider republishes its advert at half its lifetime (so peers never see it lapse), which puts
 * providers / (lifetime / 2) adverts a second on a market's topic: 2 a second for 625 providers at the 10-minute
 * default, every one of them received about six times and validated by every node of the market. Liveness is
 * presence's job, not the advert's (an advert says what a provider offers and at what price), so in a large
 * market the advert lives longer instead: republish every max(lifetime / 2, live / target) seconds, with a
 * lifetime of twice that, never above ADVERT_ADAPTIVE_MAX_LIFETIME_MS unless the operator configured a longer
 * lifetime. A small market (live ≤ target × lifetime / 2: 300 providers at the defaults) keeps the configured
 * lifetime exactly. Peers need nothing new: a longer-lived advert is valid up to MAX_ADVERT_LIFETIME_MS (24 h).
 */
import { MAX_ADVERT_LIFETIME_MS } from '../records/kinds.js';
import { intervalForTarget } from './presence-rate.js';

/** Adverts a second a market should carry at most (the default of `provider.advertTargetPerMarket`). */
export const ADVERT_TARGET_PER_MARKET = 1;
/** The longest lifetime the adaptation gives an advert (a departed provider's advert is held at most this long). */
export const ADVERT_ADAPTIVE_MAX_LIFETIME_MS = 3600_000;

export interface AdvertInterval {
  /** Republish after this long, ms. */
  everyMs: number;
  /** expiresAt − issuedAt, ms. */
  lifetimeMs: number;
}

/**
 * The advert's interval and lifetime for a market of `live` providers (itself included), given the configured
 * lifetime and the target rate (adverts a second per market; 0 or less: never adapt).
 */
export function advertInterval(live: number, configuredLifetimeMs: number, targetPerSec: number = ADVERT_TARGET_PER_MARKET): AdvertInterval {
  const base = { everyMs: Math.floor(configuredLifetimeMs / 2), lifetimeMs: configuredLifetimeMs };
  const needed = intervalForTarget(live, targetPerSec);
  if (needed <= base.everyMs) return base;
  const cap = Math.min(MAX_ADVERT_LIFETIME_MS, Math.max(configuredLifetimeMs, ADVERT_ADAPTIVE_MAX_LIFETIME_MS));
  const lifetimeMs = Math.min(cap, 2 * needed);
  return { everyMs: Math.floor(lifetimeMs / 2), lifetimeMs };
}
