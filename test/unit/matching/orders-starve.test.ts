/**
 * Orders that can never be claimed do not starve genuine ones (docs/matching.md "Leases without a coordinator" rule 5,
 * "Orders that are never claimed"): through the node's open-order set, an order claiming an announcement long past
 * and a deadline a year away does not hold every lease; a full set drops from the signer holding the most, furthest
 * deadline first; a provider whose lease is on an order it already claimed without a winner claims an unleased open
 * bid in its place.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { MATCH_LIVENESS_MS, type LiveProvider } from '../../../src/matching/types.js';
import { seal, T, type Advert, type Job, type Opened } from '../../../src/records/index.js';
import { C0Error } from '../../../src/errors.js';
import { Claimer } from '../../../src/roles/provider/claimer.js';
import { NOW, P, advert, job } from '../market/fixtures.js';
import { silentLogger } from '../../../src/util/log.js';

const W = 'infer.llm';
const prices = [{ workload: W, unit: 'job', price: { amount: '0.5', currency: 'USD' } }];
const ADS = new Map<number, Opened<Advert>>();
const ad = (n: number): Opened<Advert> => {
  let a = ADS.get(n);
  if (!a) ADS.set(n, (a = advert(P(n), { prices })));
  return a;
};
function live(n: number, freeSlots: number, now: number): LiveProvider {
  const presence = seal(T.presence, { workloads: [W], freeSlots, issuedAt: now - 1_000, windowMs: MATCH_LIVENESS_MS }, P(n).signer);
  return { did: P(n).did, presence, advert: ad(n), workloads: [W], freeSlots, liveUntil: now - 1_000 + MATCH_LIVENESS_MS };
}
const YEAR = 365 * 86_400_000;
const ATTACKER = P(900);
const BUYER = P(100);
const bad = (i: number, over: Partial<Job> = {}): Opened<Job> => job(ATTACKER, { nonce: new Uint8Array([i]), order: {}, announcedAt: 1, deadline: NOW + YEAR, ...over });
const good = (i: number, over: Partial<Job> = {}): Opened<Job> => job(BUYER, { nonce: new Uint8Array([i]), order: {}, ...over });

describe('orders that are never claimed', () => {
  it('do not hold every lease: an open bid just posted is leased, in every period', () => {
    const orders = new OpenOrders();
    for (let i = 0; i < 6; i++) orders.add(bad(i), NOW);
    const g = good(77);
    orders.add(g, NOW);
    for (const t of [NOW, NOW + 20_000, NOW + 40_000]) {
      const v = orders.leases(t, [1, 2, 3].map((n) => live(n, 2, t)));
      assert.equal(v.leases.length, 6, 'six slots, all leased');
      assert.ok(v.byOrder.has(g.address), `the genuine order is leased (t=+${(t - NOW) / 1000}s)`);
    }
  });

  it('a full set drops an order of the signer holding the most, furthest deadline first, not the nearest deadline', () => {
    const orders = new OpenOrders({ maxOrders: 5 });
    const flood = [0, 1, 2, 3].map((i) => bad(i, { deadline: NOW + YEAR - i }));
    for (const j of flood) orders.add(j, NOW);
    const short = good(50, { deadline: NOW + 120_000 });
    assert.equal(orders.add(short, NOW), true);
    const next = good(51, { deadline: NOW + 130_000 });
    assert.equal(orders.add(next, NOW), true, 'the newcomer is kept');
    assert.ok(orders.job(short.address), 'the short-lived order is kept');
    assert.equal(orders.job(flood[0]!.address), undefined, 'the flood’s furthest deadline went');
    assert.equal(orders.size, 5);
    // one order per signer: the furthest deadline goes, and that can be the newcomer
    const one = new OpenOrders({ maxOrders: 2 });
    one.add(job(P(1), { order: {}, deadline: NOW + 60_000 }), NOW);
    one.add(job(P(2), { order: {}, deadline: NOW + YEAR }), NOW);
    assert.equal(one.add(job(P(3), { order: {}, deadline: NOW + 2 * YEAR }), NOW), false);
    assert.equal(one.add(job(P(4), { order: {}, deadline: NOW + 30_000 }), NOW), true);
    assert.deepEqual(one.open(NOW).map((x) => x.job.record.deadline).sort((a, b) => a - b), [NOW + 30_000, NOW + 60_000]);
  });

  it('a provider whose lease is on an order it already claimed without a winner claims an unleased open bid instead', async () => {
    const orders = new OpenOrders();
    const x = good(60, { announcedAt: NOW - 5_000 }); // older: leased first
    const g = good(61, { announcedAt: NOW - 1_000 });
    orders.add(x, NOW);
    orders.add(g, NOW);
    const view = () => [live(1, 1, NOW)];
    assert.equal(orders.leases(NOW, view()).byOrder.get(x.address)?.provider, P(1).did);
    assert.equal(orders.leases(NOW, view()).byOrder.has(g.address), false, 'one slot: the newer order is leased to nobody');
    const sent: string[] = [];
    const c = new Claimer({
      did: P(1).did, signer: P(1).signer, clock: () => NOW, log: silentLogger(), orders, advert: () => ad(1), freeSlots: () => 1, runs: () => false, live: () => view(), canRun: () => true,
      send: async (j) => {
        sent.push(j.address);
        if (j.address === x.address) throw new C0Error('CLAIM_INVALID', 'judged, no winner'); // the buyer's node answers an error
        return new Promise(() => {}); // in flight
      },
    });
    c.tick(); // claims x; its answer (an error) makes the claimer look again at once
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(orders.leases(NOW, view()).byOrder.get(x.address)?.provider, P(1).did, 'the lease every node computes is unchanged');
    assert.deepEqual(sent, [x.address, g.address], 'its slot goes to the order nobody holds');
    c.tick();
    await new Promise((r) => setTimeout(r, 5));
    assert.equal(sent.length, 2, 'once');
    c.stop();
  });
});
