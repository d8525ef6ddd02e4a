/**
 * The open-order set's eligibility memo (src/matching/open-orders.ts): an order's answers go when the order leaves
 * the set (decided, past its deadline, dropped for room), a rebuilt live view (the same providers, new objects) asks
 * nothing again, and providers re-advertising (a new key each time) do not grow an order's answers past twice the
 * live providers plus 64.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { MATCH_LIVENESS_MS, type LiveProvider } from '../../../src/matching/types.js';
import { seal, T, type Advert, type Job, type Opened } from '../../../src/records/index.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const prices = [{ workload: W, unit: 'job', price: { amount: '0.5', currency: 'USD' } }];
const BUYER = P(100);
const order = (i: number, over: Partial<Job> = {}): Opened<Job> => job(BUYER, { nonce: new Uint8Array([i]), order: {}, ...over });

function live(n: number, ad: Opened<Advert> = advert(P(n), { prices })): LiveProvider {
  const presence = seal(T.presence, { workloads: [W], freeSlots: 8, issuedAt: NOW - 1_000, windowMs: MATCH_LIVENESS_MS }, P(n).signer);
  return { did: P(n).did, presence, advert: ad, workloads: [W], freeSlots: 8, liveUntil: NOW - 1_000 + MATCH_LIVENESS_MS };
}

test('an order’s eligibility answers go when it is decided, past its deadline, or dropped for room; a rebuilt view asks nothing again', () => {
  const o = new OpenOrders({ maxOrders: 3 });
  const ads = [advert(P(1), { prices }), advert(P(2), { prices })];
  const view = () => ads.map((a, i) => live(i + 1, a));
  const [early, decided, late] = [order(1, { deadline: NOW + 5_000 }), order(2), order(3, { deadline: NOW + 7_200_000 })];
  for (const j of [early, decided, late]) o.add(j, NOW);
  assert.equal(o.leases(NOW, view()).leases.length, 3);
  assert.equal(o.memoSize, 6, '3 orders × 2 providers');
  o.leases(NOW + 1, view());
  assert.equal(o.memoSize, 6, 'the same providers in a rebuilt view: every answer known');
  o.decided(decided.address, NOW);
  assert.equal(o.memoSize, 4, 'the decided order’s answers went with it');
  o.prune(NOW + 5_000);
  assert.equal(o.memoSize, 2, 'the order past its deadline too');
  // full (maxOrders 3): the next order drops, of the signer holding the most, the one whose deadline is furthest, and its answers
  for (const i of [4, 5]) o.add(order(i), NOW + 5_000);
  o.add(order(6), NOW + 5_000);
  assert.equal(o.job(late.address), undefined);
  assert.equal(o.memoSize, 0);
  o.leases(NOW + 5_000, view());
  assert.equal(o.memoSize, 6);
});

test('providers re-advertising do not grow an order’s answers past twice the live providers plus 64', () => {
  const o = new OpenOrders();
  const j = order(7);
  o.add(j, NOW);
  for (let seq = 1; seq <= 60; seq++) {
    // each round both providers carry a new advert (a new address, so a new key)
    const view = [1, 2].map((n) => live(n, advert(P(n), { prices, seq })));
    const v = o.leases(NOW + seq, view);
    assert.equal(v.leases.length, 1, `round ${seq}: the order is still leased`);
    assert.ok(o.memoSize <= 2 * 2 + 64, `round ${seq}: ${o.memoSize} answers kept`);
  }
});
