/**
 * The claimer's escalation check (docs/matching.md rule 6, "Leases held and never claimed"), second round:
 * - its cost: each tick checked every open bid past its grace with a pass over the live providers (eligibility lookups
 *   and ranking arithmetic per pair), even when the leases came from the cache: with 500 keys and 1,000 bids every
 *   tick cost what only a lease recomputation had cost. Now the node's own place in each open bid's ranking is kept
 *   with the lease view (recorded when the leases are computed), so a tick with cached leases asks no eligibility
 *   question at all. Counted here by the eligibility lookups, not by time.
 * - an order that arrives already old (a slow buyer clock, gossip heard late, a sync) was escalated at once, to
 *   2^⌊age/G⌋ providers: announced an hour ago, every provider claimed it in its first tick. Now the width counts the
 *   age from when this node first heard the order.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { MATCH_ESCALATE_MS, type LiveProvider } from '../../../src/matching/types.js';
import type { ClaimOutcome } from '../../../src/roles/claim-protocol.js';
import { seal, T, type Job, type Opened } from '../../../src/records/index.js';
import { claimerFor } from '../matching/claimer-rig.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const G = MATCH_ESCALATE_MS;
const ads = new Map<number, ReturnType<typeof advert>>();
function ad(n: number): ReturnType<typeof advert> {
  let a = ads.get(n);
  if (!a) ads.set(n, (a = advert(P(n), { prices: [{ workload: W, unit: 'job', price: { amount: '0.01', currency: 'USD' } }] })));
  return a;
}
function provider(n: number, freeSlots: number, now: number, windowMs = 600_000): LiveProvider {
  const presence = seal(T.presence, { workloads: [W], freeSlots, issuedAt: now - 1_000, windowMs }, P(n).signer);
  return { did: P(n).did, presence, advert: ad(n), workloads: [W], freeSlots, liveUntil: now - 1_000 + windowMs };
}
function bid(i: number, at: number, deadline = at + 120_000): Opened<Job> {
  return job(P(200 + (i % 5)), { nonce: new Uint8Array([i & 255, i >> 8, 31]), order: {}, announcedAt: at, deadline });
}

describe('claimer: the escalation check per tick', () => {
  it('a tick whose leases come from the cache asks no eligibility question (its places are kept with the lease view), and claims what a cold node would', () => {
    const KEYS = Array.from({ length: 30 }, (_, i) => 10 + i);
    const live = [provider(1, 2, NOW), ...KEYS.map((n) => provider(n, 50, NOW))]; // one view, as a presence store between changes
    // ages 12.3 s .. 51.3 s: widths 4 .. 30 of 31, past the grace; no lease period ends in the next 700 ms
    const bids = Array.from({ length: 40 }, (_, i) => bid(i, NOW - 12_300 - 1_000 * i));
    const orders = new OpenOrders();
    for (const b of bids) orders.add(b, b.record.announcedAt); // heard when announced
    let asked = 0;
    const eligible = orders.eligible.bind(orders);
    orders.eligible = (p, o, now) => (asked++, eligible(p, o, now));
    let now = NOW;
    const c = claimerFor(P(1), ad(1), orders, { clock: () => now, monoClock: () => now, live: () => live, freeSlots: () => 2 });
    const first = c.targets(now).map((t) => t.job.address);
    assert.ok(asked > 0, 'the first tick computes the leases');
    assert.ok(first.length > 2, `escalated bids found (${first.length})`);
    now = NOW + 500;
    asked = 0;
    const second = c.targets(now).map((t) => t.job.address);
    assert.equal(asked, 0, 'no eligibility lookups on a tick with cached leases');
    // the same answer as a node that computes everything afresh
    const cold = new OpenOrders();
    for (const b of bids) cold.add(b, b.record.announcedAt);
    const fresh = claimerFor(P(1), ad(1), cold, { clock: () => now, monoClock: () => now, live: () => live, freeSlots: () => 2 });
    assert.deepEqual(second, fresh.targets(now).map((t) => t.job.address));
  });

  it('an open bid that arrives an hour old is claimed by its lease holder alone in the first tick, not by every provider; from then it widens by the time heard', () => {
    const HON = [1, 2, 3, 4, 5, 6, 7, 8];
    const trial = (announcedAt: number, at: number): number => {
      const orders = new OpenOrders();
      orders.add(bid(7, announcedAt, NOW + 120_000), NOW); // heard at NOW
      let sends = 0;
      for (const n of HON) {
        const c = claimerFor(P(n), ad(n), orders, {
          clock: () => at,
          monoClock: () => at,
          live: (t) => HON.map((m) => provider(m, 2, t, 15_000)),
          freeSlots: () => 2,
          send: () => (sends++, new Promise<ClaimOutcome>(() => {})),
        });
        c.tick();
      }
      return sends;
    };
    assert.equal(trial(NOW - 100, NOW), 1, 'a fresh bid: its lease holder');
    assert.equal(trial(NOW - 3_600_000, NOW), 1, 'announced an hour ago, heard now: its lease holder only');
    assert.equal(trial(NOW - 12_000, NOW), 1, 'announced 12 s ago, heard now');
    const later = trial(NOW - 3_600_000, NOW + 2 * G);
    assert.ok(later >= 1 && later <= 5, `heard 2 G ago: the holder and at most 4 more (${later})`);
  });
});
