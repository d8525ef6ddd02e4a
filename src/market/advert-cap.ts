/**
 * The cap on stored adverts (issue #10, "valid-looking floods"; docs/market.md
 * "The advert cap"): which providers' adverts a node lets go when it holds
 * more than its cap. Pure: the clock and what the node knows of each provider
 * are passed in.
 *
 * Least useful first:
 *   1. providers whose current advert has expired, soonest expired first;
 *   2. providers this node is not connected to, the advert furthest through its lifetime first;
 *   3. providers it is connected to, the same way.
 * How far through its lifetime, not how old: a provider republishes at half its advert's lifetime, so one past
 * half has likely left, and an advert of a large market lives up to an hour (src/matching/advert-rate.ts) — by age
 * alone a live provider there would go before a departed one of a small market.
 * Providers this node has dealt with (it holds an offer or a receipt from
 * them) are never evicted: the cap may be exceeded by them alone, and then a
 * newcomer is the one refused. Ties break on DID order.
 */
import type { Opened } from '../records/envelope.js';
import type { Advert } from '../records/kinds.js';

export interface CapCandidate {
  did: string;
  /** the provider's current advert */
  current: Opened<Advert>;
  /** advert records held for it (the current one and superseded ones) */
  count: number;
}

export interface CapContext {
  now: number;
  /** providers this node holds an offer or a receipt from */
  dealtWith: ReadonlySet<string>;
  /** providers this node is connected to */
  connected: ReadonlySet<string>;
}

export type EvictReason = 'expired' | 'unconnected' | 'connected';

export interface Eviction {
  did: string;
  reason: EvictReason;
}

/** Providers to evict, least useful first, until at least `excess` advert records go (fewer when the rest are protected). */
export function chooseEvictions(cands: readonly CapCandidate[], excess: number, ctx: CapContext): Eviction[] {
  if (excess <= 0) return [];
  const ranked: Array<{ c: CapCandidate; tier: number; key: number }> = [];
  for (const c of cands) {
    if (ctx.dealtWith.has(c.did)) continue;
    const r = c.current.record;
    if (r.expiresAt <= ctx.now) ranked.push({ c, tier: 0, key: r.expiresAt });
    else ranked.push({ c, tier: ctx.connected.has(c.did) ? 2 : 1, key: -(ctx.now - r.issuedAt) / Math.max(1, r.expiresAt - r.issuedAt) });
  }
  ranked.sort((a, b) => a.tier - b.tier || a.key - b.key || (a.c.did < b.c.did ? -1 : a.c.did > b.c.did ? 1 : 0));
  const out: Eviction[] = [];
  let freed = 0;
  for (const r of ranked) {
    if (freed >= excess) break;
    out.push({ did: r.c.did, reason: r.tier === 0 ? 'expired' : r.tier === 1 ? 'unconnected' : 'connected' });
    freed += r.c.count;
  }
  return out;
}
