/**
 * What a provider holds (spec/matching-and-leases.md "Candidates on a quote": "a free slot after counting the jobs
 * they currently lease"): a lease on an order designated to a provider takes a slot like a lease on an open bid, for
 * candidates, the probe and rankAhead (OverlayNode.heldByProvider() as src/node/orders-wiring.ts fills it); the batch
 * planner counts open-bid leases only (heldByProvider('open-bids')), since it subtracts designated orders on its own.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { candidates, orderFromJob, rankAhead } from '../../../src/matching/candidates.js';
import { wireOrders } from '../../../src/node/orders-wiring.js';
import { batchPlan } from '../../../src/node/batch-route.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { seal, T, type Job, type Opened } from '../../../src/records/index.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const price = (amount: string) => [{ workload: W, unit: 'job', price: { amount, currency: 'USD' } }];
const BUYER = P(100);

function live(n: number, freeSlots: number, amount = '0.5'): LiveProvider {
  const presence = seal(T.presence, { workloads: [W], freeSlots, issuedAt: NOW - 1_000, windowMs: 15_000 }, P(n).signer);
  return { did: P(n).did, presence, advert: advert(P(n), { prices: price(amount) }), workloads: [W], freeSlots, liveUntil: NOW + 14_000 };
}

/** A node with no role but the open orders, as wireOrders fills its hooks. */
async function node(view: LiveProvider[]): Promise<{ o: OverlayNode; orders: OpenOrders; heard: (j: Opened<Job>) => void }> {
  const subs = new Map<string, (rec: unknown) => void>();
  const o = {
    clock: () => NOW,
    d: { config: {}, network: {} },
    net: { subscribe: (kind: string, f: (rec: unknown) => void) => subs.set(kind, f) },
    liveProviders: () => view,
    market: { reputation: () => ({ scoreOf: () => 1 }) },
  } as unknown as OverlayNode;
  const { orders } = await wireOrders(o, { claimMode: 'leased', skewMs: 30_000 });
  return { o, orders, heard: (j) => subs.get('job')!(j) };
}

test('a lease on an order designated to a provider takes its slot for candidates and rankAhead', async () => {
  const one = live(1, 1, '0.1'); // the cheapest, one slot
  const other = live(2, 1, '0.5');
  const { o, orders, heard } = await node([one, other]);
  heard(job(BUYER, { nonce: new Uint8Array([1]), order: { designated: one.did } }));
  assert.equal(orders.leases(NOW, [one, other]).byProvider.get(one.did)?.length, 1, 'its only slot is leased to the designated order');

  const held = o.heldByProvider();
  assert.equal(held.get(one.did), 1);
  const next = job(BUYER, { nonce: new Uint8Array([2]) });
  const r = candidates({ order: orderFromJob(next), live: [one, other], held, now: NOW });
  assert.deepEqual(r.candidates.map((c) => c.provider), [other.did]);
  assert.deepEqual(r.rejected.find((x) => x.provider === one.did)?.reasons.map((x) => x.code), ['NO_FREE_SLOT']);
  // the other provider (dearer) has nobody ahead of it: the cheap one's slot is taken
  assert.equal(rankAhead({ job: next, live: [one, other], held, self: other.did, cost: '0.5', limit: 5, now: NOW }), 0);
});

test('the batch planner counts open-bid leases only, and the designated order once', async () => {
  const a = live(1, 3);
  const { o, heard } = await node([a]);
  heard(job(BUYER, { nonce: new Uint8Array([1]), order: { designated: a.did } }));
  heard(job(BUYER, { nonce: new Uint8Array([2]), order: {} }));
  assert.deepEqual([...o.heldByProvider()], [[a.did, 2]]);
  assert.deepEqual([...o.heldByProvider('open-bids')], [[a.did, 1]]);
  assert.equal(o.designatedOrders(a.did), 1);
  // 3 slots − 1 open-bid lease − 1 designated order: 1 line, not 0
  const batch = { windowMs: 10_000, workloads: [{ workload: W, lines: 1, units: {}, lineMs: 10_000, maxPrice: { amount: '1', currency: 'USD' } }] };
  assert.deepEqual(batchPlan(o, { batch, ceiling: 3 }).assignments.map((x) => [x.provider, x.lines]), [[a.did, 1]]);
  assert.throws(() => batchPlan(o, { batch: { ...batch, workloads: [{ ...batch.workloads[0]!, lines: 2 }] }, ceiling: 3 }), { code: 'BATCH_EXCEEDS_CAPACITY' });
});

test('OpenOrders.leasesHeld: every lease by default, open bids only when asked', () => {
  const oo = new OpenOrders();
  const a = live(1, 2);
  oo.add(job(BUYER, { nonce: new Uint8Array([1]), order: { designated: a.did } }), NOW);
  oo.add(job(BUYER, { nonce: new Uint8Array([2]), order: {} }), NOW);
  assert.deepEqual([...oo.leasesHeld(NOW, [a])], [[a.did, 2]]);
  assert.deepEqual([...oo.leasesHeld(NOW, [a], 'open-bids')], [[a.did, 1]]);
});
