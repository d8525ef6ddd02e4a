/** Property tests (fast-check) for the pure parts of pool/1. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PoolState, admittedEvent, attribute, buildTree, idleVerdict, preemptionOrder, type Claim, type Entitlement, type PoolEvent } from '../../../src/pool/index.js';

const grade = fc.constantFrom('HwShunt' as const, 'ModelBased' as const, 'Estimator' as const);

describe('attribution properties (§2.5)', () => {
  it('conserves the total exactly, never negative, never HwShunt when shared, independent of order', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        grade,
        fc.uniqueArray(fc.record({ key: fc.string({ minLength: 1, maxLength: 6 }), weight: fc.integer({ min: 0, max: 1_000_000 }) }), { minLength: 1, maxLength: 12, selector: (o) => o.key }).filter((os) => os.some((o) => o.weight > 0)),
        (uj, g, occ) => {
          const a = attribute({ uj, grade: g }, occ);
          assert.equal(a.reduce((s, x) => s + BigInt(x.uj), 0n), BigInt(uj));
          assert.ok(a.every((x) => x.uj >= 0 && Number.isSafeInteger(x.uj)));
          if (occ.length >= 2) assert.ok(a.every((x) => x.grade !== 'HwShunt'));
          assert.ok(a.every((x) => x.grade === (g === 'HwShunt' && occ.length >= 2 ? 'ModelBased' : g)));
          const b = attribute({ uj, grade: g }, [...occ].reverse());
          assert.deepEqual(new Map(a.map((x) => [x.key, x.uj])), new Map(b.map((x) => [x.key, x.uj])));
          // zero weight gets zero
          for (const o of occ) if (o.weight === 0) assert.equal(a.find((x) => x.key === o.key)!.uj, 0);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('admission invariants under random claim streams (§2.1, §2.2, §4.4)', () => {
  it('held devices never exceed guarantee_devices, usage never exceeds limit_uj, Estimator never borrows, borrowing stays within the share', () => {
    const entArb = fc.record({
      g: fc.integer({ min: 0, max: 5000 }),
      d: fc.integer({ min: 0, max: 6 }),
      w: fc.integer({ min: 0, max: 3 }),
      lim: fc.option(fc.integer({ min: 0, max: 4000 }), { nil: undefined }),
    });
    const claimArb = fc.record({ e: fc.integer({ min: 0, max: 4 }), gang: fc.integer({ min: 0, max: 3 }), dpm: fc.integer({ min: 0, max: 2 }), uj: fc.integer({ min: 0, max: 6000 }), grade });
    fc.assert(
      fc.property(fc.array(entArb, { minLength: 5, maxLength: 5 }), fc.array(claimArb, { maxLength: 40 }), (ents, claims) => {
        const list: Entitlement[] = [{ id: 'root', guarantee_uj: 100_000, guarantee_devices: 100, over_quota_weight: 0, priority: 0 }];
        ents.forEach((x, i) => list.push({ id: `e${i}`, parent: i < 4 ? 'root' : undefined, guarantee_uj: x.g, guarantee_devices: x.d, over_quota_weight: x.w, priority: i, ...(x.lim === undefined ? {} : { limit_uj: x.g + x.lim }) }));
        const tree = buildTree(list);
        const s = new PoolState(tree);
        claims.forEach((c, i) => {
          const claim: Claim = { id: `c${i}`, entitlement: `e${c.e}`, gang_size: c.gang, devices_per_member: c.dpm, estimate: { uj: c.uj, grade: c.grade } };
          const e = tree.entitlements.get(claim.entitlement)!;
          const before = s.book.usage(e.id);
          const ex = s.explain(e.id)!;
          const v = s.decide(claim);
          if (v.verdict !== 'Admit') return;
          assert.equal(v.reserved.grade, c.grade);
          const after = before.usedUj + c.uj;
          assert.ok(before.heldDevices + c.gang * c.dpm <= e.guarantee_devices);
          if (e.limit_uj !== undefined) assert.ok(after <= e.limit_uj);
          if (after > e.guarantee_uj) {
            assert.notEqual(c.grade, 'Estimator');
            assert.ok(e.over_quota_weight > 0 && e.parent !== undefined);
            assert.ok(after - e.guarantee_uj <= ex.shareUj);
            assert.ok(v.borrowed_uj <= ex.availableUj);
          } else assert.equal(v.borrowed_uj, 0);
          s.apply(admittedEvent(claim, v));
        });
      }),
      { numRuns: 300 },
    );
  });
});

describe('a Queue is pending, never impossible (§4.2, §4.5)', () => {
  it('whatever is queued on its own entitlement’s energy fits it once every open claim is released for nothing', () => {
    const entArb = fc.record({ g: fc.integer({ min: 0, max: 3000 }), w: fc.integer({ min: 0, max: 2 }), lim: fc.option(fc.integer({ min: 0, max: 2000 }), { nil: undefined }) });
    // each step: a claim on e0 or e1, then (maybe) the release of the oldest open claim at some actual figure
    const stepArb = fc.record({ e: fc.integer({ min: 0, max: 1 }), uj: fc.integer({ min: 0, max: 4000 }), grade, release: fc.option(fc.integer({ min: 0, max: 4000 }), { nil: undefined }) });
    const OWN = new Set(['GUARANTEE_EXHAUSTED_UNOBSERVED', 'GUARANTEE_EXHAUSTED_NO_WEIGHT', 'LIMIT_REACHED', 'SHARE_EXCEEDED']);
    fc.assert(
      fc.property(fc.array(entArb, { minLength: 3, maxLength: 3 }), fc.array(stepArb, { maxLength: 30 }), (ents, steps) => {
        const list: Entitlement[] = [{ id: 'root', guarantee_uj: 0, guarantee_devices: 100, over_quota_weight: 0, priority: 0 }];
        ents.forEach((x, i) => list.push({ id: `e${i}`, parent: 'root', guarantee_uj: x.g, guarantee_devices: 100, over_quota_weight: x.w, priority: 0, ...(x.lim === undefined ? {} : { limit_uj: x.g + x.lim }) }));
        const tree = buildTree(list);
        const s = new PoolState(tree);
        const events: PoolEvent[] = [];
        const open: string[] = [];
        steps.forEach((st, i) => {
          const claim: Claim = { id: `c${i}`, entitlement: `e${st.e}`, gang_size: 1, devices_per_member: 1, estimate: { uj: st.uj, grade: st.grade } };
          const v = s.decide(claim);
          if (v.verdict === 'Admit') {
            const ev = admittedEvent(claim, v);
            s.apply(ev);
            events.push(ev);
            open.push(claim.id);
          } else if (v.verdict === 'Queue' && v.reasons.some((r) => OWN.has(r))) {
            // the best case: the same ledger with every open claim released for 0 µJ
            const best = new PoolState(tree);
            for (const ev of events) best.apply(ev);
            for (const id of open) best.apply({ event: 'Released', claim: id, actual: { uj: 0, grade: 'HwShunt' } });
            const again = best.decide(claim);
            assert.notEqual(again.verdict, 'Deny', `${claim.id} queued (${v.reasons.join(',')}) but impossible: ${JSON.stringify(again)}`);
            if (again.verdict === 'Queue') assert.ok(!again.reasons.some((r) => OWN.has(r)), `${claim.id}: ${again.reasons.join(',')}`);
          }
          if (st.release !== undefined && open.length > 0) {
            const ev: PoolEvent = { event: 'Released', claim: open.shift()!, actual: { uj: st.release, grade: 'HwShunt' } };
            s.apply(ev);
            events.push(ev);
          }
        });
      }),
      { numRuns: 300 },
    );
  });
});

describe('the share is a property of the tree, not of arrival order (§2.2)', () => {
  it('the same claims in two arrival orders meet the same share verdicts; only scarcity (SURPLUS_INSUFFICIENT) may differ', () => {
    const sib = fc.record({ g: fc.integer({ min: 0, max: 3000 }), w: fc.integer({ min: 0, max: 3 }), over: fc.integer({ min: 0, max: 2000 }) });
    fc.assert(
      fc.property(fc.array(sib, { minLength: 2, maxLength: 5 }), fc.array(fc.integer({ min: 0, max: 1000 }), { minLength: 5, maxLength: 5 }), (sibs, keys) => {
        const list: Entitlement[] = [{ id: 'p', guarantee_uj: 0, guarantee_devices: 0, over_quota_weight: 0, priority: 0 }];
        sibs.forEach((x, i) => list.push({ id: `e${i}`, parent: 'p', guarantee_uj: x.g, guarantee_devices: 1, over_quota_weight: x.w, priority: 0 }));
        const tree = buildTree(list);
        const claims: Claim[] = sibs.map((x, i) => ({ id: `c${i}`, entitlement: `e${i}`, gang_size: 1, devices_per_member: 1, estimate: { uj: x.g + x.over, grade: 'HwShunt' } }));
        const shareReasons = (order: Claim[]) => {
          const s = new PoolState(tree);
          const shares = sibs.map((_, i) => s.explain(`e${i}`)!.shareUj);
          const seen = new Map<string, string>();
          for (const c of order) {
            const v = s.decide(c);
            seen.set(c.id, v.verdict === 'Admit' ? `Admit ${v.borrowed_uj}` : v.reasons.filter((r) => r !== 'SURPLUS_INSUFFICIENT').join(',') || 'scarce');
            if (v.verdict === 'Admit') s.apply(admittedEvent(c, v));
            // nothing that happens to siblings moves anyone's share
            assert.deepEqual(sibs.map((_, i) => s.explain(`e${i}`)!.shareUj), shares);
          }
          return seen;
        };
        const a = shareReasons(claims);
        const b = shareReasons([...claims].sort((x, y) => keys[Number(x.id.slice(1))]! - keys[Number(y.id.slice(1))]! || x.id.localeCompare(y.id)));
        for (const c of claims) {
          const [va, vb] = [a.get(c.id)!, b.get(c.id)!];
          // an admission in one order is either the same admission or refused for scarcity alone in the other
          if (va !== vb) assert.ok(va === 'scarce' || vb === 'scarce', `${c.id}: ${va} vs ${vb}`);
        }
      }),
      { numRuns: 400 },
    );
  });
});

describe('preemption and idle properties (§5.2, §2.7)', () => {
  it('the preemption order is a total order: the same set in any order gives the same sequence', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.record({ key: fc.string({ minLength: 1, maxLength: 5 }), spentUj: fc.integer({ min: 0, max: 1e9 }), completedUnits: fc.integer({ min: 0, max: 50 }), priority: fc.integer({ min: -5, max: 5 }) }), { selector: (w) => w.key, maxLength: 20 }),
        (ws) => {
          const a = preemptionOrder(ws).map((r) => r.key);
          const b = preemptionOrder([...ws].reverse()).map((r) => r.key);
          assert.deepEqual(a, b);
          const firstUndefined = preemptionOrder(ws).findIndex((r) => !r.cost.defined);
          if (firstUndefined >= 0) assert.ok(preemptionOrder(ws).slice(firstUndefined).every((r) => !r.cost.defined));
        },
      ),
    );
  });
  it('no Estimator figure is ever idle, for any value, window or threshold', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1e12 }), fc.integer({ min: 0, max: 1e9 }), fc.integer({ min: 0, max: 1e9 }), fc.integer({ min: 0, max: 1e12 }), (uj, obsMs, win, thr) => {
        const v = idleVerdict({ key: 'k', devicesHeld: 1, observedMs: obsMs, energy: { uj, grade: 'Estimator' } }, { windowMs: win, idleBelowMicrowatts: thr });
        assert.notEqual(v.verdict, 'idle');
      }),
    );
  });
});
