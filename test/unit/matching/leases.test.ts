/** Leases without a coordinator (src/matching/leases.ts): determinism, no collisions, capacity, designation, expiry. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { computeLeases, hash64, lateWeight, leaseOrder, leasePeriod, leaseRanking, leaseWeight, leasesOf, type LeaseInput, type OpenOrder } from '../../../src/matching/leases.js';
import { MATCH_FRONT_PERIODS, MATCH_LEASE_MS, MATCH_LIVENESS_MS, type LiveProvider } from '../../../src/matching/types.js';
import { seal, T } from '../../../src/records/index.js';
import { NOW, P, advert } from '../market/fixtures.js';

const W = ['infer.llm', 'embed.text'] as const;
const adverts = new Map<number, ReturnType<typeof advert>>();

/** A live provider from real signed records (party n, free slots, workloads). */
function live(n: number, freeSlots: number, workloads: readonly string[] = W, issuedAt = NOW - 1_000): LiveProvider {
  let a = adverts.get(n);
  if (!a) adverts.set(n, (a = advert(P(n), { workloads: [...W].sort() })));
  const ws = [...workloads].sort();
  const presence = seal(T.presence, { workloads: ws, freeSlots, issuedAt, windowMs: MATCH_LIVENESS_MS }, P(n).signer);
  return { did: P(n).did, presence, advert: a, workloads: ws, freeSlots, liveUntil: issuedAt + MATCH_LIVENESS_MS };
}

function order(i: number, announcedAt: number, over: Partial<OpenOrder> = {}): OpenOrder {
  return { address: `sha256:${i.toString(16).padStart(64, '0')}`, buyer: P(900).did, announcedAt, workload: 'infer.llm', openBid: true, ...over };
}

/** Sort a copy by the random keys (a permutation drawn by fast-check). */
function permute<T>(xs: readonly T[], keys: readonly number[]): T[] {
  return xs.map((x, i) => ({ x, k: keys[i % Math.max(1, keys.length)]! * 1000 + i })).sort((a, b) => a.k - b.k).map((e) => e.x);
}

// A view: up to 8 providers (slots 0..3, some serving only one workload, some designated orders), up to 24 orders.
const viewArb = fc
  .record({
    provs: fc.uniqueArray(fc.record({ n: fc.integer({ min: 1, max: 12 }), slots: fc.integer({ min: 0, max: 3 }), only: fc.boolean() }), { minLength: 0, maxLength: 8, selector: (p) => p.n }),
    ords: fc.array(fc.record({ at: fc.integer({ min: 0, max: 120_000 }), w: fc.constantFrom(...W), des: fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }), open: fc.boolean() }), { maxLength: 24 }),
    dt: fc.integer({ min: 0, max: 200_000 }),
    keys: fc.array(fc.nat(1000), { minLength: 1, maxLength: 32 }),
  })
  .map(({ provs, ords, dt, keys }) => {
    const now = NOW + dt;
    const providers = provs.map((p) => live(p.n, p.slots, p.only ? ['infer.llm'] : W, now - 1_000));
    const orders = ords.map((o, i) => order(i + 1, NOW - 60_000 + o.at, { workload: o.w, openBid: o.des === undefined ? true : o.open, ...(o.des !== undefined ? { designated: P(o.des).did } : {}) }));
    return { providers, orders, now, keys };
  });

describe('leases without a coordinator', () => {
  it('the same view gives the same leases in any arrival order (and with repeats)', () => {
    fc.assert(
      fc.property(viewArb, ({ providers, orders, now, keys }) => {
        const a = computeLeases({ providers, orders, now });
        const b = computeLeases({ providers: permute([...providers, ...providers.slice(0, 2)], keys), orders: permute([...orders, ...orders.slice(0, 3)], [...keys].reverse()), now });
        assert.deepEqual(b.leases, a.leases);
        for (const p of providers) assert.deepEqual(leasesOf(p.did, { providers: permute(providers, keys), orders: permute(orders, keys), now }), a.byProvider.get(p.did) ?? []);
      }),
      { numRuns: 200 },
    );
  });

  it('no two providers with the same view hold the same lease; none holds more than its free slots; only orders it may claim', () => {
    fc.assert(
      fc.property(viewArb, ({ providers, orders, now }) => {
        const input: LeaseInput = { providers, orders, now };
        const held = new Map<string, string>();
        for (const p of providers) {
          // each provider computes its own leases from the shared view
          const mine = leasesOf(p.did, input);
          assert.ok(mine.length <= p.freeSlots, `${p.did} holds ${mine.length} > ${p.freeSlots}`);
          for (const l of mine) {
            assert.ok(!held.has(l.order), `order ${l.order} held by ${held.get(l.order)} and ${p.did}`);
            held.set(l.order, p.did);
            const o = orders.find((x) => x.address === l.order)!;
            assert.ok(p.workloads.includes(o.workload));
            if (o.designated !== undefined) assert.equal(p.did, o.designated, 'a designated order leases only to its provider');
            else assert.ok(o.openBid);
            // the current period (an order announced after `now`, clock skew, holds period 0 from its announcement)
            assert.ok(l.from <= Math.max(now, o.announcedAt) && now < l.until && l.until - l.from === MATCH_LEASE_MS);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('oldest first, skipping only what others hold: an unleased order has no claimant with a free slot left', () => {
    fc.assert(
      fc.property(viewArb, ({ providers, orders, now }) => {
        const v = computeLeases({ providers, orders, now });
        const used = new Map<string, number>();
        for (const l of v.leases) used.set(l.provider, (used.get(l.provider) ?? 0) + 1);
        const eligible = (p: LiveProvider, o: OpenOrder) => p.workloads.includes(o.workload);
        for (const o of orders) {
          if (v.byOrder.has(o.address)) continue;
          for (const p of leaseRanking(o, providers, eligible)) assert.equal(used.get(p.did) ?? 0, p.freeSlots, `${p.did} has room but does not hold ${o.address}`);
        }
        // a provider's leases come out in lease order: oldest first among orders in their front periods, then the rest
        const front = (o: OpenOrder) => leasePeriod(o.announcedAt, now) < MATCH_FRONT_PERIODS;
        for (const ls of v.byProvider.values()) {
          const os = ls.map((l) => orders.find((o) => o.address === l.order)!);
          for (let i = 1; i < os.length; i++) {
            const [a, b] = [os[i - 1]!, os[i]!];
            assert.ok(front(a) || !front(b), 'an order past its front periods never comes before one in them');
            if (front(a) && front(b)) assert.ok(a.announcedAt < b.announcedAt || (a.announcedAt === b.announcedAt && a.address < b.address));
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('a lease that expires (next period, the order still open: its holder did not claim) goes to another provider', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: 40 }), { minLength: 2, maxLength: 6 }), fc.integer({ min: 1, max: 500 }), fc.integer({ min: 0, max: 50 }), (ns, oi, k) => {
        const o = order(oi, NOW);
        const at = (t: number) => computeLeases({ providers: ns.map((n) => live(n, 1, W, t - 1_000)), orders: [o], now: t }).byOrder.get(o.address)!;
        const t = NOW + k * MATCH_LEASE_MS + 5_000;
        const before = at(t);
        const after = at(t + MATCH_LEASE_MS);
        assert.equal(before.period, k);
        assert.equal(after.period, k + 1);
        assert.equal(after.from, before.until);
        assert.notEqual(after.provider, before.provider);
        // within one period the holder does not change (a restart recomputes the same lease)
        assert.deepEqual(at(before.from), before);
        assert.deepEqual(at(before.until - 1), before);
      }),
      { numRuns: 100 },
    );
  });

  it('over n periods every provider that may claim the order gets a turn', () => {
    const ns = [3, 4, 5, 6];
    const o = order(7, NOW);
    const holders = new Set<string>();
    for (let k = 0; k < ns.length; k++) {
      const t = NOW + k * MATCH_LEASE_MS;
      holders.add(computeLeases({ providers: ns.map((n) => live(n, 2, W, t)), orders: [o], now: t }).byOrder.get(o.address)!.provider);
    }
    assert.equal(holders.size, ns.length);
  });

  it('designated orders lease only to their provider, and not at all when it is not live or has no free slot', () => {
    const ps = [live(1, 3), live(2, 3), live(3, 3)];
    const d = order(1, NOW - 5_000, { designated: P(2).did, openBid: false });
    const v = computeLeases({ providers: ps, orders: [d], now: NOW });
    assert.equal(v.byOrder.get(d.address)?.provider, P(2).did);
    assert.equal(computeLeases({ providers: [live(1, 3), live(2, 0), live(3, 3)], orders: [d], now: NOW }).leases.length, 0);
    assert.equal(computeLeases({ providers: [live(1, 3), live(3, 3)], orders: [d], now: NOW }).leases.length, 0);
    // a closed order (neither open bid nor designated) leases to nobody
    assert.equal(computeLeases({ providers: ps, orders: [order(2, NOW, { openBid: false })], now: NOW }).leases.length, 0);
  });

  it('free slots 0 and presence past its window hold nothing; the eligibility predicate is honoured', () => {
    const os = [order(1, NOW - 3_000), order(2, NOW - 2_000)];
    assert.equal(computeLeases({ providers: [live(1, 0)], orders: os, now: NOW }).leases.length, 0);
    assert.equal(computeLeases({ providers: [live(1, 2, W, NOW - MATCH_LIVENESS_MS - 1)], orders: os, now: NOW }).leases.length, 0);
    assert.equal(computeLeases({ providers: [live(1, 2)], orders: os, now: NOW, eligible: (_p, o) => o.address === os[1]!.address }).leases.map((l) => l.order).join(), os[1]!.address);
  });

  it('a provider with N free slots takes the N oldest it may claim; the rest go to others', () => {
    const os = [order(3, NOW - 1_000), order(1, NOW - 3_000), order(2, NOW - 3_000), order(4, NOW - 500)];
    const v = computeLeases({ providers: [live(1, 2)], orders: os, now: NOW });
    assert.deepEqual(v.leases.map((l) => l.order), [os[1]!.address, os[2]!.address]);
    const two = computeLeases({ providers: [live(1, 2), live(2, 2)], orders: os, now: NOW });
    assert.equal(two.leases.length, 4);
    assert.equal(two.byProvider.get(P(1).did)!.length, 2);
    assert.equal(two.byProvider.get(P(2).did)!.length, 2);
  });

  it('matches a naive reference of the documented rule (rank by weight, rotate by period, first with room, oldest first in the front periods)', () => {
    fc.assert(
      fc.property(viewArb, ({ providers, orders, now }) => {
        const room = new Map<string, number>();
        const live = [...new Map(providers.filter((p) => p.liveUntil > now).map((p) => [p.did, p])).values()];
        for (const p of live) room.set(p.did, p.freeSlots);
        const expected: Array<[string, string]> = [];
        const seen = new Set<string>();
        // front orders oldest first, then the others by the weight of (address, period), highest first
        const isFront = (o: OpenOrder) => leasePeriod(o.announcedAt, now) < MATCH_FRONT_PERIODS;
        const late = (o: OpenOrder) => lateWeight(hash64(o.address), leasePeriod(o.announcedAt, now));
        const sorted = [...orders].sort((a, b) => a.announcedAt - b.announcedAt || (a.address < b.address ? -1 : 1));
        for (const o of [...sorted.filter(isFront), ...sorted.filter((x) => !isFront(x)).sort((a, b) => late(b) - late(a) || (a.address < b.address ? -1 : 1))]) {
          if (seen.has(o.address)) continue;
          seen.add(o.address);
          const may = live
            .filter((p) => p.freeSlots > 0 && (o.designated !== undefined ? p.did === o.designated : o.openBid) && p.workloads.includes(o.workload))
            .sort((a, b) => leaseWeight(o.address, b.did) - leaseWeight(o.address, a.did) || (a.did < b.did ? -1 : 1));
          const k = leasePeriod(o.announcedAt, now);
          for (let i = 0; i < may.length; i++) {
            const p = may[(k + i) % may.length]!;
            if (room.get(p.did)! > 0) {
              room.set(p.did, room.get(p.did)! - 1);
              expected.push([o.address, p.did]);
              break;
            }
          }
        }
        assert.deepEqual(computeLeases({ providers, orders, now }).leases.map((l) => [l.order, l.provider]), expected);
      }),
      { numRuns: 200 },
    );
  });

  it('lease periods follow the order’s own grid', () => {
    assert.equal(leasePeriod(NOW, NOW - 10), 0);
    assert.equal(leasePeriod(NOW, NOW), 0);
    assert.equal(leasePeriod(NOW, NOW + MATCH_LEASE_MS - 1), 0);
    assert.equal(leasePeriod(NOW, NOW + MATCH_LEASE_MS), 1);
    assert.throws(() => computeLeases({ providers: [], orders: [], now: NOW, leaseMs: 0 }), RangeError);
  });
});

describe('an order’s age counts for its front periods only', () => {
  // Six orders that name an announcement long past (their buyer never answers a claim), one genuine order just posted,
  // three providers with two slots each: six slots for seven orders.
  const stale = Array.from({ length: 6 }, (_, i) => order(500 + i, 1));
  const fresh = order(600, NOW - 1_000);
  const ps = (t: number) => [1, 2, 3].map((n) => live(n, 2, W, t - 1_000));

  it('orders claiming to be old do not take every slot from an order just posted', () => {
    for (const t of [NOW, NOW + 20_000, NOW + 40_000]) {
      const v = computeLeases({ providers: ps(t), orders: [...stale, fresh], now: t });
      assert.ok(v.byOrder.has(fresh.address), `leased in its front periods (t=${t - NOW})`);
      assert.equal(v.leases[0]!.order, fresh.address, 'and before every order past its front periods');
    }
  });

  it('past the front periods orders take turns, whatever announcement they name: each is left out in some period', () => {
    const left = new Set<string>();
    for (let k = 0; k < 40; k++) {
      const t = NOW + 60_000 + k * MATCH_LEASE_MS;
      const v = computeLeases({ providers: ps(t), orders: [...stale, fresh], now: t });
      assert.equal(v.leases.length, 6);
      for (const o of [...stale, fresh]) if (!v.byOrder.has(o.address)) left.add(o.address);
    }
    assert.equal(left.size, 7, 'no order holds a slot in every period');
  });

  it('lease order: front orders oldest first, then the rest by a weight that changes with the period', () => {
    const a = order(700, NOW - 10_000);
    const b = order(701, NOW - 5_000);
    const c = order(702, NOW - MATCH_FRONT_PERIODS * MATCH_LEASE_MS); // just past its front periods at NOW
    assert.deepEqual(leaseOrder([c, b, a], NOW).map((x) => x.order.address), [a.address, b.address, c.address]);
    assert.deepEqual(leaseOrder([c, b, a], NOW, MATCH_LEASE_MS, 0).map((x) => x.period), leaseOrder([c, b, a], NOW, MATCH_LEASE_MS, 0).map((x) => leasePeriod(x.order.announcedAt, NOW)));
    const firsts = new Set<string>();
    for (let k = 0; k < 20; k++) firsts.add(leaseOrder(stale, NOW + k * MATCH_LEASE_MS)[0]!.order.address);
    assert.ok(firsts.size > 1, 'the first of the late orders changes from period to period');
    assert.throws(() => computeLeases({ providers: [], orders: [], now: NOW, frontPeriods: -1 }), RangeError);
  });
});
