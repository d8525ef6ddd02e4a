/**
 * One buyer cannot take every claim slot of a provider (docs/matching.md "On the network: posting, claiming,
 * answering"): it holds at most claimsPerBuyer(slots) claims at once, and a buyer whose claims go unanswered has its
 * orders skipped for a while (1 s, doubling per failure in a row, at most BUYER_BACKOFF_MAX_MS). Before, a buyer whose
 * node took the claim streams and never answered, with 20 orders designated to a 2-slot provider, held both slots for
 * minutes and an honest order designated to the provider was never claimed before its deadline.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { CLAIM_ANSWER_WINDOW_MS, claimsPerBuyer } from '../../../src/roles/provider/claimer.js';
import { claimerFor } from './claimer-rig.js';
import type { ClaimOutcome } from '../../../src/roles/claim-protocol.js';
import { C0Error } from '../../../src/errors.js';
import { seal, T } from '../../../src/records/index.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { NOW, P, advert, job } from '../market/fixtures.js';
import { SilentStreams } from './silent-streams.js';

const W = 'infer.llm';
const VICTIM = P(1);
const HOSTILE = P(900);
const HONEST = P(100);
const ad = advert(VICTIM, { prices: [{ workload: W, unit: 'job', price: { amount: '0.1', currency: 'USD' } }] });
const live = (t: number): LiveProvider[] => [{ did: VICTIM.did, presence: seal(T.presence, { workloads: [W], freeSlots: 2, issuedAt: t - 1000, windowMs: 15000 }, VICTIM.signer), advert: ad, workloads: [W], freeSlots: 2, liveUntil: t + 14000 }];
const turn = () => new Promise((r) => setImmediate(r));

describe('claims per buyer', () => {
  it('claimsPerBuyer: half the slots, rounded up, at least 1', () => {
    assert.deepEqual([1, 2, 3, 4, 8].map(claimsPerBuyer), [1, 1, 2, 2, 4]);
  });

  it('a buyer that never answers claim streams holds at most its share, backs off, and an honest designated order is claimed at once', async () => {
    let now = NOW;
    const orders = new OpenOrders();
    const hostile = Array.from({ length: 20 }, (_, i) => job(HOSTILE, { nonce: new Uint8Array([i + 1]), order: { designated: VICTIM.did }, announcedAt: NOW - 1000 }));
    for (const j of hostile) orders.add(j, now);
    const hanging = new SilentStreams('NET_TIMEOUT');
    const sentTo = { hostile: 0, honest: 0 };
    let honestAt = -1;
    const claimer = claimerFor(VICTIM, ad, orders, {
      clock: () => now,
      monoClock: () => now, // one fake time for both: these tests are not about a step
      freeSlots: () => 2,
      live,
      maxPerBuyer: claimsPerBuyer(2),
      send: (j) => {
        if (j.signer === HOSTILE.did) {
          sentTo.hostile++;
          return hanging.hang(now); // never answered: fails at the stream's 15 s deadline
        }
        sentTo.honest++;
        if (honestAt < 0) honestAt = now;
        return new Promise<ClaimOutcome>(() => {});
      },
    });
    now += 1000;
    claimer.tick();
    await turn();
    assert.equal(sentTo.hostile, 1, 'one claim in flight to the silent buyer, not one per slot');
    const honest = job(HONEST, { nonce: new Uint8Array([77]), order: { designated: VICTIM.did }, announcedAt: now, deadline: now + 120_000 });
    orders.add(honest, now);
    let maxHostileInFlight = 0;
    let maxHostileHeld = 0;
    while (now < honest.record.deadline) {
      now += 500;
      hanging.expire(now);
      await turn();
      claimer.tick();
      await turn();
      maxHostileInFlight = Math.max(maxHostileInFlight, hanging.size);
      if (sentTo.honest === 0) maxHostileHeld = Math.max(maxHostileHeld, claimer.pending);
    }
    claimer.stop();
    assert.equal(sentTo.honest, 1, 'the honest designated order was claimed');
    // both buyers are new to this provider, so they share one buyer's bound: the honest order waits for the silent
    // claim's answer window at most (it then comes first: the silent buyer is backed off and goes last)
    assert.ok(honestAt - honest.record.announcedAt <= CLAIM_ANSWER_WINDOW_MS, `claimed within the answer window (after ${honestAt - honest.record.announcedAt} ms)`);
    assert.ok(maxHostileInFlight >= 1, 'the silent buyer’s streams stay open to their deadline');
    assert.equal(maxHostileHeld, 1, 'the silent buyer never held more than its share');
    assert.ok(sentTo.hostile <= 8, `the silent buyer is backed off (${sentTo.hostile} claims in 2 min, was 18)`);
  });

  it('an answer clears the back-off', async () => {
    let now = NOW;
    const orders = new OpenOrders();
    const a = job(HONEST, { nonce: new Uint8Array([1]), order: { designated: VICTIM.did } });
    const b = job(HONEST, { nonce: new Uint8Array([2]), order: { designated: VICTIM.did } });
    orders.add(a, now);
    orders.add(b, now);
    const sent: string[] = [];
    let fail = true;
    const claimer = claimerFor(VICTIM, ad, orders, {
      clock: () => now, monoClock: () => now, freeSlots: () => 2, live, maxPerBuyer: 1,
      send: async (j) => {
        sent.push(j.address);
        if (fail) throw new C0Error('NET_DIAL_FAILED', 'unreachable');
        throw new C0Error('ORDER_UNKNOWN', 'run ended');
      },
    });
    claimer.tick();
    await turn();
    assert.equal(sent.length, 1, 'one at a time to one buyer');
    assert.equal(claimer.backedOff(HONEST.did), true);
    claimer.tick();
    await turn();
    assert.equal(sent.length, 1, 'its orders wait out the back-off');
    now += 1000;
    fail = false;
    claimer.tick();
    await turn();
    assert.equal(sent.length, 2);
    assert.equal(claimer.backedOff(HONEST.did), false, 'it answered');
    claimer.stop();
  });
});
