/**
 * The claimer in claimMode `leased` claims open bids whose lease escalated to it (docs/matching.md rule 6,
 * src/matching/leases.ts `escalation`). Keys that publish an advert and a presence (50 free slots each) hold the leases
 * on other buyers' open bids in every node's computeLeases and never claim; before, an honest provider claimed an open
 * bid only when it held the lease, so it waited for rotation to pass every such key ranked ahead of it, 20 s each: with
 * 8 keys an order with a 120 s deadline ended ORDER_NOT_CLAIMED. Now it may claim once 2^⌊age/G⌋ reaches its place in
 * the rotated ranking. Simulated clock, a tick every 500 ms.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { leaseRanking } from '../../../src/matching/leases.js';
import { MATCH_LEASE_MS, type LiveProvider } from '../../../src/matching/types.js';
import type { ClaimOutcome } from '../../../src/roles/claim-protocol.js';
import { seal, T, type Job, type Opened } from '../../../src/records/index.js';
import { claimerFor } from '../matching/claimer-rig.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const ME = P(1);
const FAKES = [11, 12, 13, 14, 15, 16, 17, 18];
const BUYER = P(100);
const ads = new Map<number, ReturnType<typeof advert>>();
const G = MATCH_LEASE_MS / 4;

function provider(n: number, freeSlots: number, now: number): LiveProvider {
  let a = ads.get(n);
  if (!a) ads.set(n, (a = advert(P(n), { prices: [{ workload: W, unit: 'job', price: { amount: n === 1 ? '0.1' : '0.01', currency: 'USD' } }] })));
  const presence = seal(T.presence, { workloads: [W], freeSlots, issuedAt: now - 1_000, windowMs: 15_000 }, P(n).signer);
  return { did: P(n).did, presence, advert: a, workloads: [W], freeSlots, liveUntil: now + 14_000 };
}
const view = (now: number): LiveProvider[] => [provider(1, 2, now), ...FAKES.map((n) => provider(n, 50, now))];

/** An open bid announced at `at` whose ranking puts ME at `place` (0 = first) among ME and the eight keys. */
function bidRanked(place: number, at: number, from = 0): Opened<Job> {
  for (let i = from; ; i++) {
    const j = job(BUYER, { nonce: new Uint8Array([i & 255, i >> 8, 7]), order: {}, announcedAt: at, deadline: at + 120_000 });
    const r = leaseRanking({ address: j.address, buyer: BUYER.did, announcedAt: at, workload: W, openBid: true }, view(at), () => true);
    if (r[place]!.did === ME.did) return j;
  }
}

/** Tick every 500 ms from NOW until ME sends a claim (or the first order's deadline); when and what it claimed. */
function run(bids: Array<Opened<Job>>, freeSlots = 2): { at: number | undefined; sent: string[] } {
  let now = NOW;
  const orders = new OpenOrders();
  for (const b of bids) orders.add(b, Math.min(now, b.record.announcedAt)); // heard when announced (the width counts from then)
  const sent: string[] = [];
  let at: number | undefined;
  const c = claimerFor(ME, ads.get(1)!, orders, {
    clock: () => now,
    monoClock: () => now,
    live: (t) => view(t),
    freeSlots: () => freeSlots,
    send: (j) => {
      at ??= now - NOW;
      sent.push(j.address);
      return new Promise<ClaimOutcome>(() => {});
    },
  });
  for (; now < NOW + 120_000 && at === undefined; now += 500) c.tick();
  return { at, sent };
}

describe('claimer: escalated open bids (leased mode)', () => {
  it('an open bid whose ranking puts 8 never-claiming keys ahead of us is claimed by 4 G (20 s), not at its deadline', () => {
    const bid = bidRanked(8, NOW);
    const { at, sent } = run([bid]);
    assert.notEqual(at, undefined, 'claimed before its 120 s deadline');
    assert.ok(at! <= 4 * G, `claimed at ${at} ms`);
    assert.deepEqual(sent, [bid.address]);
  });

  it('not before its grace: in the first G only the lease holder may claim it', () => {
    const bid = bidRanked(1, NOW);
    const { at } = run([bid]);
    assert.equal(at, G, 'second in the ranking: from G on (width 2)');
  });

  it('in the first G the preferred provider whose slots went to older orders does not race the holder it was passed to', () => {
    // we are first in the ranking of both, with one free slot in our presence: the older order takes it, the newer
    // order's lease passes to the next provider
    const older = bidRanked(0, NOW - 1_000);
    const newer = bidRanked(0, NOW, 400);
    let now = NOW;
    const orders = new OpenOrders();
    orders.add(older, now);
    orders.add(newer, now);
    const me = (t: number): LiveProvider[] => [provider(1, 1, t), ...FAKES.map((n) => provider(n, 50, t))];
    assert.notEqual(orders.leases(now, me(now)).byOrder.get(newer.address)?.provider, ME.did);
    const sent: Array<[string, number]> = [];
    const c = claimerFor(ME, ads.get(1)!, orders, { clock: () => now, monoClock: () => now, live: me, send: (j) => (sent.push([j.address, now - NOW]), new Promise<ClaimOutcome>(() => {})) });
    for (; now < NOW + 2 * G; now += 500) c.tick();
    assert.deepEqual(sent.map(([a]) => a), [older.address, newer.address]);
    assert.equal(sent[1]![1], G, 'the newer order only once its grace is over');
  });

  it('its own lease comes before an older escalated open bid when slots are short', () => {
    const old = bidRanked(8, NOW - 4 * G); // already escalated to every provider
    const mine = bidRanked(0, NOW, 300); // leased to us
    const { sent } = run([old, mine], 1);
    assert.deepEqual(sent, [mine.address]);
  });
});
