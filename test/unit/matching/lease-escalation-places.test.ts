/**
 * The escalation check without a pass over the live providers (docs/matching.md rule 6, "Leases held and never
 * claimed"): computeLeases records a provider's place in each open bid's ranking (LeaseInput.placeOf), and escalation
 * takes it from there (EscalationInput.places). The answers must be those of the full ranking, whatever the places
 * came from. And the width counts an order's age from when this node heard it (heardAt) when that is later than
 * announcedAt; the rotation still counts from announcedAt.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { computeLeases, escalatesTo, escalation, escalationWidth, leasePeriod, leaseRanking, placeIn, type OpenOrder, type Place } from '../../../src/matching/leases.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { NOW, P } from '../market/fixtures.js';
import { G, live, order } from './escalation-fixtures.js';

describe('lease escalation from recorded places', () => {
  it('places recorded by computeLeases (and computed by placeIn) give the same may() as the full ranking, for every provider, order and age', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ n: fc.integer({ min: 1, max: 40 }), slots: fc.integer({ min: 0, max: 2 }) }), { minLength: 1, maxLength: 12, selector: (p) => p.n }),
        fc.array(fc.record({ i: fc.integer({ min: 1, max: 300 }), at: fc.integer({ min: -200_000, max: 0 }) }), { minLength: 1, maxLength: 12 }),
        fc.integer({ min: 0, max: 100 }),
        (provs, os, excluded) => {
          const now = NOW;
          const providers = provs.map((p) => live(p.n, p.slots, now));
          const orders = os.map((o) => order(o.i, NOW + o.at));
          // some pairs not eligible, deterministically
          const eligible = (p: LiveProvider, o: OpenOrder): boolean => (p.did.charCodeAt(p.did.length - 1) + o.address.charCodeAt(o.address.length - 1) + excluded) % 5 !== 0;
          const full = escalation({ providers, now, eligible });
          for (const p of providers) {
            const view = computeLeases({ providers, orders, now, eligible, placeOf: p.did });
            const places = new Map<string, Place>(view.places);
            const fast = escalation({ providers, now, eligible, places, placeOf: p.did });
            for (const o of orders) {
              assert.equal(fast.may(o, p.did), full.may(o, p.did), `${p.did} ${o.address}`);
              assert.equal(fast.may(o, p.did), full.claimers(o).includes(p.did));
              const rec = view.places!.get(o.address);
              if (rec !== undefined) assert.deepEqual(rec, placeIn(o, providers.filter((q) => q.freeSlots >= 1).sort((a, b) => (a.did < b.did ? -1 : 1)), p.did, eligible));
            }
          }
        },
      ),
      { numRuns: 150 },
    );
  });

  it('a recorded place is the rank in leaseRanking; escalatesTo is the rotated prefix of the width', () => {
    const providers = [1, 2, 3, 4, 5, 6, 7].map((n) => live(n, 1, NOW));
    const o = order(42, NOW - 47_000);
    const ranked = leaseRanking(o, providers, () => true);
    const view = computeLeases({ providers, orders: [o], now: NOW, placeOf: P(4).did });
    const place = view.places!.get(o.address)!;
    assert.deepEqual(place, { ahead: ranked.findIndex((p) => p.did === P(4).did), n: 7 });
    for (let t = NOW - 47_000; t < NOW + 60_000; t += 1_000) {
      const k = leasePeriod(o.announcedAt, t);
      const width = escalationWidth(o.announcedAt, t, 7);
      const inPrefix = Array.from({ length: width }, (_, j) => ranked[(k + j) % 7]!.did).includes(P(4).did);
      assert.equal(escalatesTo(place, o, t), inPrefix, `at ${t}`);
    }
    assert.equal(escalatesTo(null, o, NOW + 1e9), false);
  });

  it('the width counts from when the order was heard when that is later than announcedAt; the rotation from announcedAt', () => {
    const providers = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => live(n, 1, NOW));
    const o = order(9, NOW - 3_600_000); // announced an hour ago, heard at NOW
    const heardAt = (): number => NOW;
    const ranked = leaseRanking(o, providers, () => true);
    const k = (t: number): number => leasePeriod(o.announcedAt, t);
    assert.deepEqual(escalation({ providers, now: NOW }).claimers(o).length, 8); // by announcedAt alone: everyone
    for (const [age, width] of [
      [0, 0],
      [G - 1, 0],
      [G, 2],
      [2 * G + 10, 4],
      [3 * G, 8],
    ] as const) {
      const t = NOW + age;
      const esc = escalation({ providers: providers.map((_, j) => live(j + 1, 1, t)), now: t, heardAt });
      const got = esc.claimers(o);
      assert.deepEqual(got, Array.from({ length: width }, (_, j) => ranked[(k(t) + j) % 8]!.did), `age ${age}`);
      for (const p of providers) assert.equal(esc.may(o, p.did), got.includes(p.did));
    }
    // heard before its announcedAt (a fast buyer clock): the age is from announcedAt, as without heardAt
    const fresh = order(10, NOW);
    assert.deepEqual(escalation({ providers, now: NOW + G, heardAt: () => NOW - 60_000 }).claimers(fresh), escalation({ providers, now: NOW + G }).claimers(fresh));
  });
});
