/**
 * What the open orders remember as decided (src/matching/open-orders.ts) and what the claimer remembers as claimed
 * (src/roles/provider/claimer.ts) is bounded without forgetting everything at once: each entry is kept until its
 * order's deadline, lapsed entries go first, and past the bound only the oldest live entry goes (src/util/expiring.ts).
 * Before, both sets were cleared wholesale past their bound (4 × maxOrders decided, 100,000 claimed), so an order
 * decided or claimed just before the clear was taken as open, or claimed, again — and a buyer posting orders could
 * force the clear at will.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { type Advert, type Job, type Opened } from '../../../src/records/index.js';
import { C0Error } from '../../../src/errors.js';
import { claimerFor } from './claimer-rig.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const prices = [{ workload: W, unit: 'job', price: { amount: '0.5', currency: 'USD' } }];
const AD: Opened<Advert> = advert(P(1), { prices });
const BUYER = P(100);
const order = (i: number, over: Partial<Job> = {}): Opened<Job> => job(BUYER, { nonce: new Uint8Array([i >> 8, i & 255]), order: { designated: P(1).did }, ...over });
const settle = () => new Promise((r) => setTimeout(r, 5));

/** Add `j` at `now` and have its buyer's selection decide it. */
function decide(o: OpenOrders, j: Opened<Job>, now: number): void {
  assert.equal(o.add(j, now), true);
  assert.equal(o.selected(j.address, BUYER.did, now), true);
}

describe('decided orders: bounded, never cleared wholesale', () => {
  it('an order decided just as the set passes its bound stays decided (lapsed entries make the room)', () => {
    const o = new OpenOrders({ maxOrders: 2 }); // 8 decided orders remembered at most
    for (let i = 0; i < 8; i++) decide(o, order(i, { deadline: NOW + 10_000 }), NOW);
    const later = NOW + 20_000; // those 8 are past their deadline
    const x = order(100);
    decide(o, x, later); // the 9th: before, the set was cleared here, x with it
    assert.equal(o.add(x, later + 1), false, 'x is still decided: it does not come back as open');
  });

  it('a live entry is never forgotten while a lapsed one is kept', () => {
    const o = new OpenOrders({ maxOrders: 2 });
    const first = order(200); // deadline an hour away
    decide(o, first, NOW);
    for (let i = 0; i < 7; i++) decide(o, order(210 + i, { deadline: NOW + 10_000 }), NOW);
    const later = NOW + 20_000;
    decide(o, order(300), later); // over the bound: the 7 lapsed go, not the oldest (live) entry
    assert.equal(o.add(first, later), false, 'the oldest live decided order is kept');
  });

  it('a flood of live decided orders pushes out only the oldest, one at a time; memory stays bounded', () => {
    const o = new OpenOrders({ maxOrders: 2 });
    const js = Array.from({ length: 12 }, (_, i) => order(400 + i));
    for (const j of js) decide(o, j, NOW);
    // the 8 newest are all remembered; the 4 oldest went (12 − 8), one at a time
    assert.deepEqual(js.slice(4).map((j) => o.add(j, NOW)), Array(8).fill(false));
    assert.equal(o.add(js[3]!, NOW), true, 'the oldest went');
  });
});

describe('claimed orders: bounded, never cleared wholesale', () => {
  it('an order claimed just as the set passes its bound is not claimed again', async () => {
    const orders = new OpenOrders();
    let t = NOW;
    const sent: string[] = [];
    const c = claimerFor(P(1), AD, orders, {
      clock: () => t,
      freeSlots: () => 100,
      maxClaimed: 4,
      send: async (j) => {
        sent.push(j.address);
        // the buyer judged it (an error frame that is an answer): not sent again, and the order stays open here
        throw new C0Error('CLAIM_PRICE_ABOVE_BID', 'judged');
      },
    });
    const early = Array.from({ length: 4 }, (_, i) => order(500 + i, { deadline: NOW + 10_000 }));
    for (const j of early) orders.add(j, NOW);
    c.tick();
    await settle();
    assert.equal(sent.length, 4);
    t = NOW + 20_000; // the first four are past their deadline
    const late = [order(600, { announcedAt: t - 1_000 }), order(601, { announcedAt: t - 1_000 })];
    for (const j of late) orders.add(j, t);
    c.tick(); // claims both: the 5th entry passes the bound (before: everything was forgotten there)
    await settle();
    assert.deepEqual(sent.slice(4).sort(), late.map((j) => j.address).sort());
    c.tick();
    await settle();
    assert.equal(sent.length, 6, 'neither open order is claimed a second time');
    c.stop();
  });
});
