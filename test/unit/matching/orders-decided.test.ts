/**
 * Decided orders stay decided (docs/matching.md "Open orders after a restart"): a buyer's first-claim selection heard
 * before its job keeps the job out of the open set when it comes; a selection signed by anyone else does not; a
 * claim answered ORDER_UNKNOWN takes the order out of the claimer's open set; a provider's anti-entropy asks for
 * selections.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DECIDED_EARLY_MS, OpenOrders } from '../../../src/matching/open-orders.js';
import { signFirstClaimSelection } from '../../../src/matching/first-claim.js';
import { seal, T, type Advert, type Job, type Opened, type Selection } from '../../../src/records/index.js';
import { C0Error } from '../../../src/errors.js';
import { claimerFor } from './claimer-rig.js';
import { wireOrders } from '../../../src/node/orders-wiring.js';
import { antiEntropyKinds, type OverlayNode } from '../../../src/node/overlay.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const prices = [{ workload: W, unit: 'job', price: { amount: '0.5', currency: 'USD' } }];
const AD: Opened<Advert> = advert(P(1), { prices });
const BUYER = P(100);
const order = (i: number, over: Partial<Job> = {}): Opened<Job> => job(BUYER, { nonce: new Uint8Array([i]), order: { designated: P(1).did }, ...over });

/** The buyer's first-claim selection of P(1)'s claim on `j` (signed by `by`, the buyer unless said). */
function selectionOf(j: Opened<Job>, by = BUYER): Opened<Selection> {
  const c = seal(T.claim, { job: j.address, advert: AD.address, price: { amount: '0.5', currency: 'USD' }, issuedAt: NOW }, P(1).signer);
  return signFirstClaimSelection(j, { job: j.address, winner: { seq: 1, receivedAt: NOW, claim: c }, answers: [], considered: [{ seq: 1, provider: P(1).did, claim: c.address }] } as never, () => NOW, NOW, by.signer);
}

describe('decided orders stay decided', () => {
  it('a selection heard before its job keeps the job out of the open set (through the node wiring)', async () => {
    const subs: Record<string, (r: unknown) => void> = {};
    const o = { net: { subscribe: (k: string, f: (r: unknown) => void) => (subs[k] = f), handle: async () => {} }, clock: () => NOW, d: { config: {}, network: {} }, liveProviders: () => [], abuseReports: { report() {} } };
    const w = await wireOrders(o as unknown as OverlayNode, { claimMode: 'leased', skewMs: 30_000 });
    const j = order(1);
    subs.selection!(selectionOf(j)); // heard first: gossip out of order, or a sync after a restart
    subs.job!(j);
    assert.equal(w.orders.size, 0, 'the decided order is not open');
    assert.equal((o as unknown as OverlayNode).designatedOrders(P(1).did), 0);
    // the usual order of things still works
    const k = order(2);
    subs.job!(k);
    assert.equal(w.orders.size, 1);
    subs.selection!(selectionOf(k));
    assert.equal(w.orders.size, 0);
  });

  it('only the buyer decides: a selection by another signer, before or after the job, leaves it open', () => {
    const orders = new OpenOrders();
    const j = order(3);
    assert.equal(orders.selected(j.address, P(7).did, NOW), false);
    assert.equal(orders.add(j, NOW), true, 'a stranger’s selection heard first does not keep the job out');
    assert.equal(orders.selected(j.address, P(7).did, NOW), false);
    assert.equal(orders.size, 1);
    assert.equal(orders.selected(j.address, BUYER.did, NOW), true);
    assert.equal(orders.size, 0);
  });

  it('what is remembered of early selections is bounded by count and by time', () => {
    const orders = new OpenOrders({ maxOrders: 2 });
    const js = [order(10), order(11), order(12, { deadline: NOW + 2 * DECIDED_EARLY_MS })];
    for (const j of js) orders.selected(j.address, BUYER.did, NOW);
    assert.equal(orders.add(js[0]!, NOW), true, 'the oldest went past the bound');
    assert.equal(orders.add(js[1]!, NOW), false);
    assert.equal(orders.add(js[2]!, NOW + DECIDED_EARLY_MS), true, 'remembered for DECIDED_EARLY_MS');
  });

  for (const [code, n, why] of [
    ['ORDER_UNKNOWN', 20, 'the buyer takes no claims on it: not open here'],
    ['NODE_CLOSING', 21, 'the buyer’s node is stopping: its run is broken off, nobody will win it'],
  ] as const) {
    it(`a claim answered ${code} takes the order out of the open set; it is not claimed again`, async () => {
      const orders = new OpenOrders();
      const j = order(n);
      orders.add(j, NOW);
      const sent: string[] = [];
      const c = claimerFor(P(1), AD, orders, {
        send: async (x) => {
          sent.push(x.address);
          throw new C0Error(code, why);
        },
      });
      c.tick();
      for (let i = 0; i < 200 && orders.size > 0; i++) await new Promise((r) => setTimeout(r, 5));
      assert.deepEqual(sent, [j.address]);
      assert.equal(orders.size, 0, why);
      assert.equal(orders.add(j, NOW), false, 'nor taken back when heard again');
      c.stop();
    });
  }

  it('a provider’s anti-entropy asks for selections with the jobs, and before them (a job first would wake the claimer on a decided order)', () => {
    assert.deepEqual(antiEntropyKinds(true), ['advert', 'selection', 'job']);
    assert.deepEqual(antiEntropyKinds(false), ['advert']);
  });
});
