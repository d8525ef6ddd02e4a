/**
 * The claimer's places in open bids' rankings (LeaseView.places, for its escalation check: docs/matching.md rule 6)
 * are recorded only by a lease computation the claimer asks for. Before, once the claimer had named its DID, every
 * computation recorded them: a probe's, the batch planner's, heldByProvider's (a count over the candidates per open bid
 * that none of them reads). A view computed for another caller has none; the claimer's tick over it ranks what it needs
 * on demand and claims what a node computing everything afresh would.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { seal, T, type Job, type Opened } from '../../../src/records/index.js';
import { claimerFor } from './claimer-rig.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const ads = new Map<number, ReturnType<typeof advert>>();
function ad(n: number): ReturnType<typeof advert> {
  let a = ads.get(n);
  if (!a) ads.set(n, (a = advert(P(n), { prices: [{ workload: W, unit: 'job', price: { amount: '0.01', currency: 'USD' } }] })));
  return a;
}
function provider(n: number, freeSlots: number, now: number): LiveProvider {
  const presence = seal(T.presence, { workloads: [W], freeSlots, issuedAt: now - 1_000, windowMs: 600_000 }, P(n).signer);
  return { did: P(n).did, presence, advert: ad(n), workloads: [W], freeSlots, liveUntil: now - 1_000 + 600_000 };
}
function bid(i: number, at: number): Opened<Job> {
  return job(P(200 + (i % 5)), { nonce: new Uint8Array([i & 255, i >> 8, 47]), order: {}, announcedAt: at, deadline: at + 120_000 });
}

describe('OpenOrders: the claimer\'s places are computed for the claimer only', () => {
  it('a lease computation for heldByProvider records no places after the claimer named its DID; the claimer\'s next tick claims as a cold node would', () => {
    const live = [provider(1, 2, NOW), ...Array.from({ length: 20 }, (_, i) => provider(10 + i, 50, NOW))];
    // past their grace: the escalation check needs the claimer's place in each
    const bids = Array.from({ length: 30 }, (_, i) => bid(i, NOW - 12_300 - 1_000 * i));
    const orders = new OpenOrders();
    for (const b of bids.slice(0, -1)) orders.add(b, b.record.announcedAt);
    const c = claimerFor(P(1), ad(1), orders, { live: () => live, freeSlots: () => 2 });
    c.targets(NOW);
    assert.ok(orders.leases(NOW, live).places, 'the claimer\'s computation records its places');
    // an order comes (the leases are computed again), and a probe asks before the claimer's next tick
    const last = bids.at(-1)!;
    orders.add(last, last.record.announcedAt);
    const computed = orders.computed;
    const held = orders.leasesHeld(NOW, live);
    assert.equal(orders.computed, computed + 1, 'heldByProvider computed the leases');
    assert.equal(orders.leases(NOW, live).places, undefined, 'no places recorded for it');
    // the claimer's tick takes that view (no new computation) and ranks on demand
    const targets = c.targets(NOW).map((t) => t.job.address);
    assert.equal(orders.computed, computed + 1, 'the claimer used the same lease view');
    const cold = new OpenOrders();
    for (const b of bids) cold.add(b, b.record.announcedAt);
    const fresh = claimerFor(P(1), ad(1), cold, { live: () => live, freeSlots: () => 2 });
    assert.deepEqual(targets, fresh.targets(NOW).map((t) => t.job.address));
    assert.ok(targets.length > 2, `escalated bids found (${targets.length})`);
    assert.deepEqual(held, cold.leasesHeld(NOW, live), 'the same leases');
  });
});
