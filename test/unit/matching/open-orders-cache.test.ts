/**
 * The open-order set's lease cache (src/matching/open-orders.ts leases()): a node asks for the leases over its
 * presence view, which builds a new list at every read, at every gossiped job, push-target lookup and claimer tick.
 * The same providers and orders give the same answer without a new computation until a lease period ends or a
 * presence or advert lapses; a presence added, one expiring, an order added or decided, and a period ending each
 * compute again, and every cached answer is what a fresh computation gives.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { PresenceView } from '../../../src/matching/presence.js';
import { MATCH_LEASE_MS } from '../../../src/matching/types.js';
import { seal, T, type Advert, type Job, type Opened } from '../../../src/records/index.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const prices = [{ workload: W, unit: 'job', price: { amount: '0.5', currency: 'USD' } }];
const BUYER = P(100);
const order = (i: number, over: Partial<Job> = {}): Opened<Job> => job(BUYER, { nonce: new Uint8Array([i]), order: {}, ...over });
const presence = (n: number, issuedAt: number, windowMs = 15_000) => seal(T.presence, { workloads: [W], freeSlots: 1, issuedAt, windowMs }, P(n).signer);

function market(providers: number[]): { pv: PresenceView; ads: Map<string, Opened<Advert>> } {
  const ads = new Map<string, Opened<Advert>>();
  for (const n of [...providers, 4]) ads.set(P(n).did, advert(P(n), { prices }));
  const pv = new PresenceView((did) => ads.get(did));
  for (const n of providers) assert.equal(pv.add(presence(n, NOW - 1_000), NOW), 'added');
  return { pv, ads };
}

/** What a set with nothing cached computes for these orders at `now`. */
function fresh(orders: Opened<Job>[], pv: PresenceView, now: number) {
  const o = new OpenOrders();
  for (const j of orders) o.add(j, now);
  return o.leases(now, pv.live(now));
}

test('the same providers and orders, read anew from the presence view, do not compute the leases again', () => {
  const { pv } = market([1, 2, 3]);
  const orders = [order(1), order(2)];
  const o = new OpenOrders();
  for (const j of orders) o.add(j, NOW);
  const first = o.leasesHeld(NOW, pv.live(NOW));
  assert.equal(o.computed, 1);
  assert.notEqual(pv.live(NOW), pv.live(NOW), 'the presence view builds a new list at each read');
  assert.deepEqual(o.leasesHeld(NOW, pv.live(NOW)), first);
  assert.equal(o.leases(NOW + 500, pv.live(NOW + 500)), o.leases(NOW, pv.live(NOW)), 'a later time inside every window: the same view');
  assert.equal(o.computed, 1, 'one computation for every call');
  assert.deepEqual(o.leases(NOW + 500, pv.live(NOW + 500)), fresh(orders, pv, NOW + 500));
});

test('a presence added, a presence lapsing, an order added or decided, and a lease period ending compute again', () => {
  const { pv } = market([1, 2, 3]);
  const orders = [order(1), order(2), order(3), order(4)];
  const o = new OpenOrders();
  for (const j of orders.slice(0, 3)) o.add(j, NOW);
  const at = (t: number) => o.leases(t, pv.live(t));
  let n = 0;
  const check = (t: number, why: string, computes: boolean) => {
    const v = at(t);
    n += computes ? 1 : 0;
    assert.equal(o.computed, n, why);
    assert.deepEqual(v, fresh(orders.filter((j) => o.job(j.address)), pv, t), `${why}: as computed afresh`);
    return v;
  };
  assert.equal(check(NOW, 'first', true).leases.length, 3);
  // a fourth provider's presence: it may now hold the fourth order
  assert.equal(pv.add(presence(4, NOW + 100), NOW + 100), 'added');
  check(NOW + 100, 'presence added', true);
  o.add(orders[3]!, NOW + 200);
  assert.equal(check(NOW + 200, 'order added', true).leases.length, 4);
  check(NOW + 300, 'nothing changed', false);
  o.decided(orders[3]!.address, NOW + 300);
  check(NOW + 300, 'order decided', true);
  // the first three providers' presence lapses at NOW + 14 000 (issued NOW − 1 000, window 15 s); P(4)'s at NOW + 15 100
  const lapse = NOW - 1_000 + 15_000;
  check(lapse - 1, 'just before the lapse', false);
  const after = check(lapse, 'presences lapsed', true);
  assert.deepEqual([...after.byProvider.keys()], [P(4).did]);
  // a renewed presence, then the oldest lease's period ends (announced NOW − 1 000: period 1 from NOW + 19 000)
  for (const k of [1, 2, 3, 4]) pv.add(presence(k, lapse + 1), lapse + 1);
  check(lapse + 1, 'presences renewed', true);
  const end = NOW - 1_000 + MATCH_LEASE_MS;
  assert.equal(check(end - 1, 'before the period ends', false).byOrder.get(orders[0]!.address)?.period, 0);
  assert.equal(check(end, 'the period ended', true).byOrder.get(orders[0]!.address)?.period, 1);
});

test('an advert lapsing computes again', () => {
  const { pv, ads } = market([1, 2]);
  ads.set(P(1).did, advert(P(1), { prices, expiresAt: NOW + 5_000 }));
  const o = new OpenOrders();
  o.add(order(1), NOW);
  o.add(order(2), NOW);
  assert.equal(o.leases(NOW, pv.live(NOW)).leases.length, 2);
  assert.equal(o.leases(NOW + 4_999, pv.live(NOW + 4_999)).leases.length, 2);
  assert.equal(o.computed, 1);
  const v = o.leases(NOW + 5_000, pv.live(NOW + 5_000));
  assert.equal(o.computed, 2);
  assert.deepEqual([...v.byProvider.keys()], [P(2).did]);
});

test('orders past their front periods, each on its own period phase: every cached answer is a fresh computation’s', () => {
  // late orders are ranked by a weight of their own period (leases.ts leaseOrder), so an order holding no lease can
  // move ahead of one holding a lease at its own period boundary; the cache must end there too
  const ads = new Map<string, Opened<Advert>>();
  for (const n of [1, 2]) ads.set(P(n).did, advert(P(n), { prices }));
  const pv = new PresenceView((did) => ads.get(did));
  for (const n of [1, 2]) assert.equal(pv.add(presence(n, NOW - 1_000, 60_000), NOW), 'added');
  const orders = Array.from({ length: 7 }, (_, i) => order(40 + i, { announcedAt: NOW - 200_000 - i * 2_900 }));
  // and two young ones, leaving their front periods during the sweep
  orders.push(order(60, { announcedAt: NOW - 50_000 }), order(61, { announcedAt: NOW - 45_500 }));
  const o = new OpenOrders();
  for (const j of orders) o.add(j, NOW);
  for (let t = NOW; t < NOW + 45_000; t += 250) assert.deepEqual(o.leases(t, pv.live(t)), fresh(orders, pv, t), `at +${t - NOW} ms`);
  assert.ok(o.computed < 180, `the cache still holds between changes (${o.computed} computations for 180 reads)`);
});

test('a full set: an order dropped for room and brought back by a sync is refused again without a new lease computation', () => {
  const { pv } = market([1, 2, 3]);
  const o = new OpenOrders({ maxOrders: 2 });
  const jobs = [0, 1, 2].map((i) => order(70 + i, { deadline: NOW + 3_600_000 + i }));
  assert.deepEqual(
    jobs.map((j) => o.add(j, NOW)),
    [true, true, false],
    'the third, one signer holding all three, is the furthest deadline: dropped at once',
  );
  o.leases(NOW, pv.live(NOW));
  const before = o.computed;
  for (let round = 1; round <= 3; round++) {
    const t = NOW + round * 1000;
    assert.deepEqual(
      jobs.map((j) => o.add(j, t)),
      [false, false, false],
    );
    o.leases(t, pv.live(t));
  }
  assert.equal(o.computed, before, 'the set did not change: the cached leases stand');
  assert.equal(o.size, 2);
});
