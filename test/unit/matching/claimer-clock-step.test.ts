/**
 * The claimer's back-off of a buyer whose claim went unanswered (1 s, doubling, at most BUYER_BACKOFF_MAX_MS) and the
 * wait before a claim is sent again are durations this node measures for itself: they run on the monotonic clock
 * (docs/node.md "Clocks: wall and monotonic"). On the wall clock, one unanswered claim followed by NTP stepping a fast
 * clock back 10 min left that buyer's orders unclaimed here for 10 min.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { C0Error } from '../../../src/errors.js';
import { seal, T } from '../../../src/records/index.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { fakeClock } from '../../../src/util/clock.js';
import { claimerFor } from './claimer-rig.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const PROV = P(1);
const BUYER = P(100);
const ad = advert(PROV, { prices: [{ workload: W, unit: 'job', price: { amount: '0.1', currency: 'USD' } }], expiresAt: NOW + 7_200_000 });
const live = (t: number): LiveProvider[] => [{ did: PROV.did, presence: seal(T.presence, { workloads: [W], freeSlots: 2, issuedAt: t - 1000, windowMs: 15000 }, PROV.signer), advert: ad, workloads: [W], freeSlots: 2, liveUntil: t + 14000 }];
const turn = () => new Promise((r) => setImmediate(r));

describe('claimer back-off across a wall-clock step', () => {
  it('a buyer that missed one claim answer is claimed again within seconds after the wall clock steps back 10 min', async () => {
    const STEP = 10 * 60_000;
    let real = NOW;
    let off = STEP; // the provider's wall clock is 10 min fast
    const clock = () => real + off;
    const mono = fakeClock(1000);
    const orders = new OpenOrders();
    for (let i = 1; i <= 20; i++) orders.add(job(BUYER, { nonce: new Uint8Array([i, 7]), order: { designated: PROV.did }, announcedAt: real - 1000, deadline: real + 3_600_000 }), clock());
    const sent: number[] = [];
    let fail = true;
    const claimer = claimerFor(PROV, ad, orders, {
      clock,
      monoClock: mono,
      freeSlots: () => 2,
      live,
      maxPerBuyer: 1,
      send: async () => {
        sent.push(real);
        if (fail) throw new C0Error('NET_DIAL_FAILED', 'unreachable');
        throw new C0Error('ORDER_UNKNOWN', 'run ended');
      },
    });
    try {
      claimer.tick();
      await turn();
      assert.equal(sent.length, 1);
      assert.equal(claimer.backedOff(BUYER.did), true, 'one unanswered claim: backed off');
      fail = false;
      off = 0; // NTP corrects the clock: it is right now
      for (let s = 1; s <= 10; s++) {
        real += 1000;
        mono.advance(1000);
        claimer.tick();
        await turn();
      }
      assert.equal(claimer.backedOff(BUYER.did), false, 'the 1 s back-off is over 10 s later, step or not');
      assert.ok(sent.length >= 5, `claims went out again after the step (sent ${sent.length})`);
    } finally {
      claimer.stop();
    }
  });
});
