/**
 * The cap on stored adverts (issue #10, "valid-looking floods"; docs/market.md
 * "The advert cap"): which advert records a node lets go when it holds more
 * than its cap. Every record counts, current and superseded. Pure: the clock
 * and what the node knows of each provider are passed in.
 *
 * Least useful first:
 *   0. superseded adverts (not a provider's current one) that nothing this node holds cites (no offer in its book
 *      or its evidence), the earliest issued first: a republishing provider pays for its new advert with its old one;
 *   1. providers whose current advert has expired, soonest expired first (every advert of theirs);
 *   2. providers this node is not connected to, the advert furthest through its lifetime first;
 *   3. providers it is connected to, the same way;
 *   4. providers this node dealt with before (`known`: first hand, but nothing it holds now rests on them), not
 *      connected then connected, the same way: a flood of fresh keys evicts fresh keys and strangers, never these,
 *      while any of those is left;
 *   5. superseded adverts of providers this node has dealt with that an offer held still cites, the earliest first.
 * How far through its lifetime, not how old: a provider republishes at half its advert's lifetime, so one past
 * half has likely left, and an advert of a large market lives up to an hour (src/matching/advert-rate.ts) — by age
 * alone a live provider there would go before a departed one of a small market.
 * Providers in `dealtWith` (what this node's live jobs and accepted receipts rest on: see MarketService) keep their
 * current advert, and only that:
 * the cap may be exceeded by those alone, and then a newcomer is the one refused. Ties break on DID order, then
 * address.
 */
import type { Opened } from '../records/envelope.js';
import type { Advert } from '../records/kinds.js';

export interface CapCandidate {
  did: string;
  /** the provider's current advert */
  current: Opened<Advert>;
  /** every advert record held for it, the current one included (and an incoming one, counted as held) */
  adverts: readonly Opened<Advert>[];
}

export interface CapContext {
  now: number;
  /** providers this node has dealt with: their current advert is never evicted */
  dealtWith: ReadonlySet<string>;
  /** providers this node is connected to */
  connected: ReadonlySet<string>;
  /**
   * providers this node dealt with before, first hand, and not protected by `dealtWith` (a provider that quoted on
   * one of its past jobs, one it signed a non-delivery for): evicted only once every provider it has not dealt with
   * has gone (default: none)
   */
  known?: ReadonlySet<string>;
  /** addresses of adverts an offer this node holds cites */
  cited: ReadonlySet<string>;
}

export type EvictReason = 'superseded' | 'expired' | 'unconnected' | 'connected';

export interface Eviction {
  did: string;
  reason: EvictReason;
  /** the advert records that go: every one of the provider's, or superseded ones only */
  adverts: Array<Opened<Advert>>;
  /** whether the provider goes whole (its current advert with the rest) */
  whole: boolean;
}

/** Advert records to evict, least useful first, until at least `excess` go (fewer when the rest are protected). */
export function chooseEvictions(cands: readonly CapCandidate[], excess: number, ctx: CapContext): Eviction[] {
  if (excess <= 0) return [];
  const out = new Map<string, Eviction>();
  const gone = new Set<string>();
  let freed = 0;
  const evict = (did: string, reason: EvictReason, adverts: Array<Opened<Advert>>, whole: boolean): void => {
    const e = out.get(did);
    if (e) {
      e.adverts.push(...adverts);
      if (whole) Object.assign(e, { reason, whole });
    } else out.set(did, { did, reason, adverts, whole });
    for (const a of adverts) gone.add(a.address);
    freed += adverts.length;
  };
  // superseded adverts, cited ones or not, the earliest issued first, one at a time until enough went
  const superseded = (cited: boolean): void => {
    const list: Array<{ did: string; a: Opened<Advert> }> = [];
    for (const c of cands) {
      for (const a of c.adverts) if (a.address !== c.current.address && !gone.has(a.address) && ctx.cited.has(a.address) === cited) list.push({ did: c.did, a });
    }
    list.sort((x, y) => x.a.record.issuedAt - y.a.record.issuedAt || cmp(x.did, y.did) || cmp(x.a.address, y.a.address));
    for (const { did, a } of list) {
      if (freed >= excess) return;
      evict(did, 'superseded', [a], false);
    }
  };
  superseded(false);
  if (freed >= excess) return [...out.values()];
  const ranked: Array<{ c: CapCandidate; tier: number; key: number }> = [];
  for (const c of cands) {
    if (ctx.dealtWith.has(c.did)) continue;
    const r = c.current.record;
    if (r.expiresAt <= ctx.now) ranked.push({ c, tier: 0, key: r.expiresAt });
    else ranked.push({ c, tier: (ctx.known?.has(c.did) ? 3 : 1) + (ctx.connected.has(c.did) ? 1 : 0), key: -(ctx.now - r.issuedAt) / Math.max(1, r.expiresAt - r.issuedAt) });
  }
  ranked.sort((a, b) => a.tier - b.tier || a.key - b.key || cmp(a.c.did, b.c.did));
  for (const r of ranked) {
    if (freed >= excess) return [...out.values()];
    evict(r.c.did, r.tier === 0 ? 'expired' : r.tier % 2 === 1 ? 'unconnected' : 'connected', r.c.adverts.filter((a) => !gone.has(a.address)), true);
  }
  // only providers dealt with are left: what offers still cite of their superseded adverts, never their current one
  superseded(true);
  return [...out.values()];
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
