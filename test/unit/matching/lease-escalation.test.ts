/**
 * Escalation of an open bid's lease (src/matching/leases.ts `escalation`, docs/matching.md rule 6): keys that publish
 * an advert and a presence hold leases on other buyers' open bids as any provider does, and never claim. In claimMode
 * `leased` an honest provider stood back for each fake key's whole 20 s period, so an order waited about
 * (fake keys ranked ahead) × 20 s. Now, while an open bid stays open, the first 2^⌊age/G⌋ providers of its rotated
 * ranking may claim it, so its stall is bounded by G · log2(providers) whatever the number of fake keys.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { computeLeases, escalation, escalationWidth, leasePeriod, leaseRanking, type OpenOrder } from '../../../src/matching/leases.js';
import { MATCH_LEASE_MS } from '../../../src/matching/types.js';
import { NOW, P } from '../market/fixtures.js';
import { G, live, order } from './escalation-fixtures.js';

describe('lease escalation of open bids', () => {
  it('the width is 0 in the first grace, then doubles every grace from 2, up to n; an order announced after now counts as age 0', () => {
    assert.equal(G, MATCH_LEASE_MS / 4);
    assert.deepEqual([0, G - 1, G, 2 * G, 3 * G, 4 * G, 10 * G].map((a) => escalationWidth(NOW, NOW + a, 9)), [0, 0, 2, 4, 8, 9, 9]);
    assert.equal(escalationWidth(NOW + 60_000, NOW, 9), 0);
    assert.equal(escalationWidth(NOW - 365 * 86_400_000, NOW, 9), 9);
    assert.equal(escalationWidth(NOW, NOW + 100 * G, 0), 0);
  });

  it('an honest provider ranked behind 8 keys that hold the lease and never claim may claim within G·⌈log2 9⌉, not 8 × 20 s', () => {
    // find an order whose ranking puts the honest provider (party 1) last behind eight keys with 50 free slots each
    const fakes = [11, 12, 13, 14, 15, 16, 17, 18];
    let o: OpenOrder | undefined;
    for (let i = 1; !o; i++) {
      const c = order(i, NOW);
      const r = leaseRanking(c, [live(1, 2, NOW), ...fakes.map((n) => live(n, 50, NOW))], () => true);
      if (r[r.length - 1]!.did === P(1).did) o = c;
    }
    const firstAt = (): number => {
      for (let t = 0; t < 10 * MATCH_LEASE_MS; t += 100) {
        const now = NOW + t;
        const providers = [live(1, 2, now), ...fakes.map((n) => live(n, 50, now))];
        const lease = computeLeases({ providers, orders: [o], now }).byOrder.get(o.address)!;
        if (lease.provider === P(1).did || escalation({ providers, now }).may(o, P(1).did)) return t;
      }
      return Infinity;
    };
    // before: only the lease holder, so party 1 waited for all eight periods (160 s); now from 4 G (20 s) on
    assert.equal(firstAt(), 4 * G);
    // and it stays allowed after that, through period changes (escalation does not reset each period)
    for (let t = 4 * G; t < 10 * MATCH_LEASE_MS; t += 1_000) {
      const now = NOW + t;
      assert.equal(escalation({ providers: [live(1, 2, now), ...fakes.map((n) => live(n, 50, now))], now }).may(o, P(1).did), true, `at ${t}`);
    }
  });

  it('claimers() are the first min(n, 2^⌊a/G⌋) of the rotated ranking from age G (none before); may() agrees; designated orders never escalate', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ n: fc.integer({ min: 1, max: 40 }), slots: fc.integer({ min: 0, max: 3 }) }), { maxLength: 14, selector: (p) => p.n }),
        fc.integer({ min: 1, max: 500 }),
        fc.integer({ min: -30_000, max: 200_000 }),
        fc.boolean(),
        (provs, i, age, designated) => {
          const now = NOW + age;
          const providers = provs.map((p) => live(p.n, p.slots, now));
          const o = order(i, NOW, designated && provs.length > 0 ? { designated: P(provs[0]!.n).did, openBid: false } : {});
          const esc = escalation({ providers, now });
          const got = esc.claimers(o);
          if (designated && provs.length > 0) assert.deepEqual(got, []);
          else {
            const ranked = leaseRanking(o, providers.filter((p) => p.freeSlots >= 1), () => true);
            const k = leasePeriod(o.announcedAt, now);
            const width = escalationWidth(o.announcedAt, now, ranked.length);
            assert.deepEqual(got, Array.from({ length: width }, (_, j) => ranked[(k + j) % ranked.length]!.did));
          }
          for (const p of providers) assert.equal(esc.may(o, p.did), got.includes(p.did), p.did);
          // the same in any arrival order
          assert.deepEqual(escalation({ providers: [...providers].reverse(), now }).claimers(o), got);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('only providers that may claim the order escalate (eligibility, a free slot)', () => {
    const now = NOW + 100 * G;
    const providers = [live(1, 1, now), live(2, 0, now), live(3, 1, now)];
    const o = order(7, NOW);
    const esc = escalation({ providers, now, eligible: (p) => p.did !== P(3).did });
    assert.deepEqual(esc.claimers(o), [P(1).did]);
    assert.equal(esc.may(o, P(2).did), false);
    assert.equal(esc.may(o, P(3).did), false);
    assert.equal(esc.may(o, P(1).did), true);
  });
});
