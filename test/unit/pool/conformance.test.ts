/**
 * pool/1 conformance: one group per item of §7 of spec/pool-v0.1.md.
 * Each group asserts the behaviour the item requires, including the refusals.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error, codeOf } from '../../../src/errors.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { Ed25519Signer, encodeCanonical, sealRaw, open } from '../../../src/records/index.js';
import {
  PoolState,
  UsageBook,
  attribute,
  buildTree,
  deriveEstimate,
  estimateFrom,
  idleVerdict,
  reclamationOrder,
  preemptionOrder,
  realisedCost,
  admittedEvent,
  gradeOnDivision,
  type Claim,
  type Energy,
  type Observation,
  type IdleObservation,
} from '../../../src/pool/index.js';
import { GENESIS, POOL_TYPE, WITNESS_TYPE, Witness, entryFor, gradeAttestation, replay, sealEntries, checkReceipt } from '../../../src/ledger/index.js';
import { seal } from '../../../src/records/envelope.js';
import { ent, sampleTree } from './helpers.js';
import { admitted, released, steward, tempDir } from '../ledger/helpers.js';

const claim = (o: Partial<Claim> = {}): Claim => ({ id: 'c1', entitlement: 'a', class: 'train.small', gang_size: 1, devices_per_member: 1, estimate: { uj: 100, grade: 'HwShunt' }, ...o });
const E = (uj: number, grade: Energy['grade'] = 'HwShunt'): Energy => ({ uj, grade });

/** Admit `c` against `s` and apply the event (what a steward does). */
function admit(s: PoolState, c: Claim) {
  const v = s.decide(c);
  assert.equal(v.verdict, 'Admit', JSON.stringify(v));
  if (v.verdict === 'Admit') s.apply(admittedEvent(c, v));
  return v;
}

describe('§7.1 both guarantees bind (§2.1)', () => {
  it('refuses a claim exceeding guarantee_devices even when its energy fits', () => {
    const v = new PoolState(sampleTree()).decide(claim({ gang_size: 5, devices_per_member: 1, estimate: E(10) }));
    assert.equal(v.verdict, 'Deny');
    assert.equal(v.verdict === 'Deny' && v.reason, 'DEVICES_EXCEED_GUARANTEE');
  });
  it('refuses a claim exceeding guarantee_uj even when its devices fit', () => {
    // a may not borrow (weight 0): energy over the guarantee is never admitted
    const s = new PoolState(sampleTree({ a: { over_quota_weight: 0 } }));
    const v = s.decide(claim({ estimate: E(1001) }));
    assert.equal(v.verdict, 'Deny');
    assert.equal(v.verdict === 'Deny' && v.reason, 'NO_WEIGHT_EXCEEDS_GUARANTEE');
  });
  it('holds devices: a second gang past guarantee_devices queues, energy permitting', () => {
    const s = new PoolState(sampleTree());
    admit(s, claim({ id: 'g1', gang_size: 3, estimate: E(10) }));
    const v = s.decide(claim({ id: 'g2', gang_size: 2, estimate: E(10) }));
    assert.equal(v.verdict, 'Queue');
    assert.equal(v.verdict === 'Queue' && v.reason, 'DEVICES_HELD');
  });
  it('admits a claim within both', () => {
    assert.equal(new PoolState(sampleTree()).decide(claim({ gang_size: 2, devices_per_member: 2, estimate: E(1000) })).verdict, 'Admit');
  });
});

describe('§7.2 surplus stays among siblings under one parent; a borrower is bounded by its weighted share (§2.2)', () => {
  it('a borrower gets at most floor(siblings’ guarantee × weight / Σ weights), whatever the siblings have spent', () => {
    // a, b (w=1) and c (w=2) under org: a's share = floor(2000 × 1 / 4) = 500
    const s = new PoolState(sampleTree());
    const never = s.decide(claim({ estimate: E(1501) })); // beyond the share: Deny
    assert.deepEqual(never.verdict === 'Deny' && never.reasons, ['EXCEEDS_MAX_SHARE']);
    // b spending 400 of its own guarantee leaves a's share alone (1600 is still unspent and unlent)
    admit(s, claim({ id: 'b-400', entitlement: 'b', estimate: E(400) }));
    assert.equal(s.explain('a')!.shareUj, 500);
    const v = admit(s, claim({ id: 'a-1500', estimate: E(1500) }));
    assert.equal(v.verdict === 'Admit' && v.borrowed_uj, 500);
    const q = s.decide(claim({ id: 'a-1', estimate: E(1) }));
    assert.deepEqual(q.verdict === 'Queue' && q.reasons, ['SHARE_EXCEEDED']);
  });
  it('the share does not depend on arrival order: a and b each borrow 750, whichever claims first', () => {
    // a (g 1000, w 1), b (g 1000, w 1), c (g 2000, w 2): each of a and b may borrow floor(3000 × 1 / 4) = 750
    const tree = () => buildTree([ent('p', { over_quota_weight: 0, guarantee_uj: 0 }), ent('a', { parent: 'p' }), ent('b', { parent: 'p' }), ent('c', { parent: 'p', guarantee_uj: 2000, over_quota_weight: 2 })]);
    for (const [first, second] of [['a', 'b'], ['b', 'a']] as const) {
      const s = new PoolState(tree());
      const v1 = admit(s, claim({ id: `${first}-1`, entitlement: first, estimate: E(1750) }));
      assert.equal(v1.verdict === 'Admit' && v1.borrowed_uj, 750, `${first} first`);
      const over = s.decide(claim({ id: `${second}-0`, entitlement: second, estimate: E(1751) }));
      assert.deepEqual(over.verdict === 'Deny' && over.reasons, ['EXCEEDS_MAX_SHARE'], `${second} second`);
      const v2 = s.decide(claim({ id: `${second}-1`, entitlement: second, estimate: E(1750) }));
      assert.equal(v2.verdict, 'Admit', `${second} second: ${JSON.stringify(v2)}`);
      assert.equal(v2.verdict === 'Admit' && v2.borrowed_uj, 750);
    }
  });
  it('rounds the share down, both for one claim and for the cumulative borrowing', () => {
    const tree = buildTree([ent('p', { over_quota_weight: 0 }), ent('a', { parent: 'p', over_quota_weight: 1 }), ent('b', { parent: 'p', over_quota_weight: 2, guarantee_uj: 1001 })]);
    // a's share = floor(1001 × 1 / 3) = 333 (a ceiling would give 334)
    const s = new PoolState(tree);
    const d = s.decide(claim({ estimate: E(1334) }));
    assert.deepEqual(d.verdict === 'Deny' && d.reasons, ['EXCEEDS_MAX_SHARE']);
    assert.equal(s.decide(claim({ estimate: E(1333) })).verdict, 'Admit');
    // borrow 100, then 234 more would total 334: queued on the share alone, 233 fits
    admit(s, claim({ id: 'a-100', estimate: E(1100) }));
    const q = s.decide(claim({ id: 'a-234', estimate: E(234) }));
    assert.deepEqual(q.verdict === 'Queue' && q.reasons, ['SHARE_EXCEEDED']);
    const v = s.decide(claim({ id: 'a-233', estimate: E(233) }));
    assert.equal(v.verdict === 'Admit' && v.borrowed_uj, 233);
  });
  it('claiming first, or claiming twice, gives no more than the share', () => {
    const s = new PoolState(sampleTree());
    admit(s, claim({ id: 'k1', estimate: E(1300) })); // 300 borrowed
    const v = s.decide(claim({ id: 'k2', estimate: E(201) })); // 501 > 500
    assert.equal(v.verdict, 'Queue');
    assert.deepEqual(v.verdict === 'Queue' && v.reasons, ['SHARE_EXCEEDED']);
    admit(s, claim({ id: 'k3', estimate: E(200) }));
  });
  it('surplus never crosses roots: a root that may borrow has no siblings, and x cannot borrow org’s surplus', () => {
    // two roots with weight: were roots siblings, r1's share would be floor(1000 × 3 / 6) = 500
    const roots = new PoolState(buildTree([ent('r1', { over_quota_weight: 3 }), ent('r2', { over_quota_weight: 3 })]));
    const r = roots.decide(claim({ entitlement: 'r1', estimate: E(1001) }));
    assert.deepEqual(r.verdict === 'Deny' && r.reasons, ['EXCEEDS_MAX_SHARE']);
    assert.equal(roots.explain('r1')!.shareUj, 0);
    const s = new PoolState(sampleTree());
    const v = s.decide(claim({ entitlement: 'x', estimate: E(1001) }));
    assert.deepEqual(v.verdict === 'Deny' && v.reasons, ['EXCEEDS_MAX_SHARE']);
  });
  it('surplus stays under one parent: a cousin’s idle guarantee is not a sibling’s surplus (three levels)', () => {
    // org → a, b; a → a1, a2 (100 each); b → b1 (5000 idle). a1's share = floor(a2's 100 × 1 / 2) = 50
    const s = new PoolState(
      buildTree([
        ent('org', { over_quota_weight: 0, guarantee_uj: 10_000 }),
        ent('a', { parent: 'org' }),
        ent('b', { parent: 'org', guarantee_uj: 5000 }),
        ent('a1', { parent: 'a', guarantee_uj: 100 }),
        ent('a2', { parent: 'a', guarantee_uj: 100 }),
        ent('b1', { parent: 'b', guarantee_uj: 5000 }),
      ]),
    );
    const d = s.decide(claim({ entitlement: 'a1', estimate: E(151) }));
    assert.deepEqual(d.verdict === 'Deny' && d.reasons, ['EXCEEDS_MAX_SHARE']);
    const v = s.decide(claim({ entitlement: 'a1', estimate: E(150) }));
    assert.equal(v.verdict === 'Admit' && v.borrowed_uj, 50);
  });
  it('surplus already lent is not lent twice', () => {
    // a, b (w 1) and c (w 0), 1000 each: a's share = floor(2000 × 1 / 2) = 1000
    const tree = buildTree([ent('p', { over_quota_weight: 0 }), ent('a', { parent: 'p' }), ent('b', { parent: 'p' }), ent('c', { parent: 'p', over_quota_weight: 0 })]);
    const s = new PoolState(tree);
    admit(s, claim({ id: 'b-400', entitlement: 'b', estimate: E(1400) })); // b borrows 400 of c's 1000
    // a is within its share, but only 1000 - 400 = 600 is still unlent
    const v = s.decide(claim({ id: 'a-601', estimate: E(1601) }));
    assert.deepEqual(v.verdict === 'Queue' && v.reasons, ['SURPLUS_INSUFFICIENT']);
    const w = s.decide(claim({ id: 'a-600', estimate: E(1600) }));
    assert.equal(w.verdict === 'Admit' && w.borrowed_uj, 600);
  });
});

describe('§7.3 every energy figure carries a grade that never silently improves (§2.3)', () => {
  it('refuses a figure without a grade', () => {
    assert.equal(codeOf(() => new PoolState(sampleTree()).decide(claim({ estimate: { uj: 5 } as Energy }))), 'POOL_GRADE_INVALID');
    assert.equal(codeOf(() => attribute({ uj: 5 } as Energy, [{ key: 'a', weight: 1 }])), 'POOL_GRADE_INVALID');
  });
  it('the verdict keeps the estimate’s grade; a release keeps the actual’s grade', () => {
    for (const g of ['HwShunt', 'ModelBased', 'Estimator'] as const) {
      const v = new PoolState(sampleTree()).decide(claim({ estimate: E(10, g) }));
      assert.equal(v.verdict === 'Admit' && v.reserved.grade, g);
    }
    const book = new UsageBook();
    book.apply(admitted('r1', 'a', 100));
    book.apply(released('r1', 90, 'Estimator'));
    // seen, not evidence: a release keeps its grade, and an Estimator figure is not counted as observed
    assert.deepEqual(book.classes.get('train.small'), { seen: 1, evidence: 0, minUj: Number.MAX_SAFE_INTEGER, maxUj: 0, grade: 'ModelBased' });
  });
  it('no operation improves a grade: division, derivation', () => {
    assert.equal(gradeOnDivision('Estimator', 3), 'Estimator');
    assert.equal(gradeOnDivision('ModelBased', 3), 'ModelBased');
    const obs: Observation[] = [1, 2, 3].map((u) => ({ class: 'k', actual: E(u, 'ModelBased') }));
    const r = estimateFrom(obs);
    assert.equal(r.ok && r.estimate.grade, 'ModelBased');
  });
  it('a ledger entry carries the grade, and an entry without one does not verify', () => {
    const [e] = sealEntries([admitted('g1')], steward);
    assert.equal((open(e!.bytes, POOL_TYPE).record as { reserved: Energy }).reserved.grade, 'HwShunt');
    const core = { ...entryFor(admitted('g1'), 0, GENESIS, open(e!.bytes, POOL_TYPE).signer, 1), prev: new Uint8Array(32), reserved: { uj: 100 } };
    const bad = sealRaw(POOL_TYPE, encodeCanonical(core), steward);
    const r = replay([bad]);
    assert.equal(r.ok, false);
    assert.equal(r.problem!.code, 'RECORD_FIELD_MISSING');
  });
});

describe('§7.4 admission in the order of §4: the impossible is refused before anything queues (§4.2)', () => {
  it('resolution and shape come first (§4.1)', () => {
    const s = new PoolState(sampleTree());
    const v1 = s.decide(claim({ entitlement: 'nope' }));
    assert.equal(v1.verdict === 'Deny' && v1.reason, 'UNKNOWN_ENTITLEMENT');
    const v2 = s.decide(claim({ gang_size: 0 }));
    assert.equal(v2.verdict === 'Deny' && v2.reason, 'EMPTY_GANG');
    const v3 = s.decide(claim({ devices_per_member: 0 }));
    assert.equal(v3.verdict === 'Deny' && v3.reason, 'NO_DEVICES');
  });
  it('an impossible claim is denied even when the entitlement is also full (would otherwise queue)', () => {
    const s = new PoolState(sampleTree({ a: { limit_uj: 1200 } }));
    admit(s, claim({ id: 'f1', gang_size: 4, estimate: E(1000) })); // devices and guarantee full
    const v = s.decide(claim({ id: 'f2', gang_size: 5, estimate: E(1300) }));
    assert.equal(v.verdict, 'Deny');
    assert.deepEqual(v.verdict === 'Deny' && v.reasons, ['DEVICES_EXCEED_GUARANTEE', 'ENERGY_EXCEEDS_LIMIT']);
    const w = s.decide(claim({ id: 'f3', gang_size: 1, estimate: E(1300) }));
    assert.equal(w.verdict === 'Deny' && w.reason, 'ENERGY_EXCEEDS_LIMIT');
  });
  it('what released claims spent never shrinks: a claim that cannot fit on top of it is denied, not queued (§4.2, §4.5)', () => {
    // a: guarantee 1000 µJ, 4 devices, weight 1 under p (share floor(b's 1000 × 1/2) = 500); limit 1400
    const s = new PoolState(sampleTree({ a: { limit_uj: 1400 } }));
    admit(s, claim({ id: 'r1', estimate: E(300) }));
    s.apply(released('r1', 700)); // overran: 700 settled
    admit(s, claim({ id: 'o1', estimate: E(200) })); // open: may yet be released for less
    const deny = (c: Claim) => {
      const v = s.decide(c);
      assert.equal(v.verdict, 'Deny', JSON.stringify(v));
      return v.verdict === 'Deny' ? v.reasons : [];
    };
    // 700 settled + 301 > 1000 on a guess: it could only ever borrow
    assert.deepEqual(deny(claim({ id: 'x1', estimate: E(301, 'Estimator') })), ['UNOBSERVED_EXCEEDS_GUARANTEE']);
    // 700 + 701 > the 1400 limit; and 401 past the guarantee is within the share, so that is the only reason
    assert.deepEqual(deny(claim({ id: 'x2', estimate: E(701) })), ['ENERGY_EXCEEDS_LIMIT']);
    // without a limit: 700 + 801 borrows 501 > the 500 share whatever the siblings do
    const t = new PoolState(sampleTree());
    admit(t, claim({ id: 'r1', estimate: E(700) }));
    t.apply(released('r1', 700));
    assert.deepEqual(
      (() => {
        const v = t.decide(claim({ id: 'x3', estimate: E(801) }));
        return v.verdict === 'Deny' && v.reasons;
      })(),
      ['EXCEEDS_MAX_SHARE'],
    );
    // what fits on top of the settled 700 but not beside the open 200 is pending: queued, with its reason
    const q = s.decide(claim({ id: 'x4', estimate: E(300, 'Estimator') }));
    assert.deepEqual(q.verdict === 'Queue' && q.reasons, ['GUARANTEE_EXHAUSTED_UNOBSERVED']);
    // and it is admitted once the open claim is released for less
    s.apply(released('o1', 0));
    assert.equal(s.decide(claim({ id: 'x4', estimate: E(300, 'Estimator') })).verdict, 'Admit');
  });
  it('inside the guarantee is admitted before any borrowing test (§4.3)', () => {
    const s = new PoolState(sampleTree({ a: { over_quota_weight: 0 } }));
    assert.equal(s.decide(claim({ estimate: E(1000, 'Estimator') })).verdict, 'Admit');
  });
});

describe('§7.5 an unobserved estimate gets no surplus (§4.4)', () => {
  it('Estimator past the guarantee queues when it could fit the guarantee later', () => {
    const s = new PoolState(sampleTree());
    admit(s, claim({ id: 'e1', estimate: E(900) }));
    const v = s.decide(claim({ id: 'e2', estimate: E(200, 'Estimator') }));
    assert.equal(v.verdict, 'Queue');
    assert.equal(v.verdict === 'Queue' && v.reason, 'GUARANTEE_EXHAUSTED_UNOBSERVED');
    // the same figure observed borrows
    assert.equal(s.decide(claim({ id: 'e3', estimate: E(200, 'ModelBased') })).verdict, 'Admit');
  });
  it('Estimator larger than the guarantee is denied: it can never run', () => {
    const v = new PoolState(sampleTree()).decide(claim({ estimate: E(1001, 'Estimator') }));
    assert.equal(v.verdict === 'Deny' && v.reason, 'UNOBSERVED_EXCEEDS_GUARANTEE');
  });
  it('weight 0 never borrows; limit_uj binds the total', () => {
    const s = new PoolState(sampleTree({ a: { over_quota_weight: 0 }, b: { limit_uj: 1100 } }));
    admit(s, claim({ id: 'w1', estimate: E(900) }));
    const v = s.decide(claim({ id: 'w2', estimate: E(200) }));
    assert.equal(v.verdict === 'Queue' && v.reason, 'GUARANTEE_EXHAUSTED_NO_WEIGHT');
    admit(s, claim({ id: 'b1', entitlement: 'b', estimate: E(1000) }));
    const l = s.decide(claim({ id: 'b2', entitlement: 'b', estimate: E(101) }));
    assert.equal(l.verdict === 'Queue' && l.reason, 'LIMIT_REACHED');
    admit(s, claim({ id: 'b3', entitlement: 'b', estimate: E(100) }));
  });
});

describe('§7.6 Queue and Deny are distinct verdicts, each with a reason (§4.5)', () => {
  it('not now → Queue with a reason; never as written → Deny with a reason', () => {
    const s = new PoolState(sampleTree());
    admit(s, claim({ id: 'q0', gang_size: 4, estimate: E(10) }));
    const q = s.decide(claim({ id: 'q1', estimate: E(10) }));
    const d = s.decide(claim({ id: 'q2', gang_size: 9, estimate: E(10) }));
    assert.equal(q.verdict, 'Queue');
    assert.equal(d.verdict, 'Deny');
    assert.ok(q.verdict === 'Queue' && q.reason.length > 0 && q.reasons.includes(q.reason));
    assert.ok(d.verdict === 'Deny' && d.reason.length > 0 && d.reasons.includes(d.reason));
  });
  it('reports every reason that applies, the first by the documented precedence', () => {
    const s = new PoolState(sampleTree({ a: { over_quota_weight: 0 } }));
    admit(s, claim({ id: 'p0', gang_size: 4, estimate: E(1000) }));
    const v = s.decide(claim({ id: 'p1', estimate: E(10, 'Estimator') }));
    assert.deepEqual(v.verdict === 'Queue' && v.reasons, ['DEVICES_HELD', 'GUARANTEE_EXHAUSTED_UNOBSERVED', 'GUARANTEE_EXHAUSTED_NO_WEIGHT']);
    assert.equal(v.verdict === 'Queue' && v.reason, 'DEVICES_HELD');
  });
  it('surplus that is lent out queues as SURPLUS_INSUFFICIENT', () => {
    const tree = buildTree([ent('p', { over_quota_weight: 0 }), ent('a', { parent: 'p', over_quota_weight: 1 }), ent('b', { parent: 'p', over_quota_weight: 1 }), ent('c', { parent: 'p', over_quota_weight: 0 })]);
    const s = new PoolState(tree);
    // b borrows 666 of a's and c's unspent guarantee (its share is floor(2000 × 1/2) = 1000)
    admit(s, claim({ id: 's1', entitlement: 'b', estimate: E(1666) }));
    // a's share is floor(c's 1000 × 1/2) = 500, but only 1000 - 666 = 334 is still unlent
    const v = s.decide(claim({ id: 's2', entitlement: 'a', estimate: E(1335) }));
    assert.equal(v.verdict, 'Queue');
    assert.deepEqual(v.verdict === 'Queue' && v.reasons, ['SURPLUS_INSUFFICIENT']);
    assert.equal(s.decide(claim({ id: 's3', entitlement: 'a', estimate: E(1334) })).verdict, 'Admit');
  });
});

describe('§7.7 a reservation is reported with the grade it rests on (§3, §4.6)', () => {
  it('an admission carries reserved µJ, grade, devices and the borrowed part', () => {
    const v = new PoolState(sampleTree()).decide(claim({ gang_size: 2, devices_per_member: 2, estimate: E(1200, 'ModelBased') }));
    assert.deepEqual(v, { verdict: 'Admit', claim: 'c1', entitlement: 'a', reserved: { uj: 1200, grade: 'ModelBased' }, devices: 4, borrowed_uj: 200 });
  });
  it('the ledger refuses an Admitted entry whose reservation has no grade (see §7.3) and records it otherwise', () => {
    const [e] = sealEntries([admitted('r', 'a', 77, { reserved: E(77, 'Estimator') })], steward);
    assert.deepEqual((open(e!.bytes, POOL_TYPE).record as { reserved: Energy }).reserved, E(77, 'Estimator'));
  });
});

describe('§7.8 an undefined realised cost is undefined (§5.1)', () => {
  it('nothing completed → undefined, never 0 or Infinity', () => {
    const c = realisedCost(5000, 0);
    assert.equal(c.defined, false);
    assert.ok(!('units' in c));
    assert.deepEqual(realisedCost(5000, 4), { defined: true, spentUj: 5000, units: 4 });
    assert.equal(codeOf(() => realisedCost(1, -1)), 'POOL_PREEMPT_BAD_INPUT');
  });
});

describe('§7.9 preemption orders evidence before declaration (§5.2)', () => {
  it('defined costs first, most expensive first; then undefined, lowest priority first; ties on the key', () => {
    const order = preemptionOrder([
      { key: 'u-hi', spentUj: 9e6, completedUnits: 0, priority: 9 },
      { key: 'cheap', spentUj: 90, completedUnits: 10, priority: 0 },
      { key: 'u-lo', spentUj: 1, completedUnits: 0, priority: 1 },
      { key: 'dear', spentUj: 1000, completedUnits: 10, priority: 100 },
      { key: 'tie-b', spentUj: 50, completedUnits: 5, priority: 0 },
      { key: 'tie-a', spentUj: 10, completedUnits: 1, priority: 0 },
      { key: 'u-lo2', spentUj: 1, completedUnits: 0, priority: 1 },
    ]).map((r) => r.key);
    assert.deepEqual(order, ['dear', 'tie-a', 'tie-b', 'cheap', 'u-lo', 'u-lo2', 'u-hi']);
  });
  it('an unmeasured workload is never ranked as though its cost were known (not as 0, not as ∞)', () => {
    const order = preemptionOrder([
      { key: 'measured-cheap', spentUj: 0, completedUnits: 1, priority: 5 },
      { key: 'unmeasured', spentUj: 0, completedUnits: 0, priority: 0 },
    ]).map((r) => r.key);
    assert.deepEqual(order, ['measured-cheap', 'unmeasured']);
  });
});

describe('§7.10 usage is rebuilt by replaying the ledger, after verifying the chain (§6.1, §6.4)', () => {
  it('replaying yields the same usage as applying the events', () => {
    const events = [admitted('r1', 'a', 100), admitted('r2', 'b', 300), released('r1', 80), admitted('r3', 'a', 50)];
    const direct = new UsageBook();
    events.forEach((e) => direct.apply(e));
    const r = replay(sealEntries(events, steward).map((e) => e.bytes));
    assert.equal(r.ok, true);
    assert.deepEqual([...r.book!.entitlements], [...direct.entitlements]);
    assert.deepEqual(r.book!.usage('a'), { usedUj: 130, settledUj: 80, heldDevices: 1 });
  });
  it('verifies the whole chain before deriving: a forged entry after an inconsistent one is reported, not the inconsistency', () => {
    const es = sealEntries([admitted('r1'), released('ghost'), admitted('r2'), admitted('r3')], steward).map((e) => e.bytes);
    const forged = Uint8Array.from(es[3]!);
    forged[forged.length - 1]! ^= 1; // the signature no longer verifies
    const r = replay([es[0]!, es[1]!, es[2]!, forged]);
    assert.deepEqual([r.ok, r.problem!.index, r.problem!.kind, r.problem!.code], [false, 3, 'authenticity', 'ENVELOPE_BAD_SIGNATURE']);
    assert.equal(r.book, undefined);
    // with the forgery gone, the inconsistency is what remains
    const r2 = replay(es.slice(0, 3));
    assert.deepEqual([r2.problem!.index, r2.problem!.code], [1, 'LEDGER_RELEASE_UNKNOWN_CLAIM']);
  });
  it('a chain that does not verify yields no usage at all', () => {
    const entries = sealEntries([admitted('r1'), admitted('r2')], steward).map((e) => e.bytes);
    const r = replay([entries[1]!, entries[0]!]);
    assert.equal(r.ok, false);
    assert.equal(r.book, undefined);
  });
});

describe('§7.11 the actual figure replaces the reservation on release (§6.2)', () => {
  it('charges actual in place of the reservation, lower or higher (overrun, §6.3)', () => {
    const b = new UsageBook();
    b.apply(admitted('r1', 'a', 500));
    b.apply(released('r1', 120));
    assert.deepEqual(b.usage('a'), { usedUj: 120, settledUj: 120, heldDevices: 0 });
    b.apply(admitted('r2', 'a', 100));
    b.apply(released('r2', 700));
    assert.deepEqual(b.usage('a'), { usedUj: 820, settledUj: 820, heldDevices: 0 });
  });
  it('an open admission keeps its reservation', () => {
    const b = new UsageBook();
    b.apply(admitted('r1', 'a', 500));
    assert.deepEqual(b.usage('a'), { usedUj: 500, settledUj: 0, heldDevices: 1 });
  });
});

describe('§7.12 an inconsistent stream is refused at its index, not read as a shorter history (§6.4)', () => {
  it('a release of a claim never admitted', () => {
    const r = replay(sealEntries([admitted('r1'), released('r1'), released('ghost')], steward).map((e) => e.bytes));
    assert.equal(r.ok, false);
    assert.deepEqual([r.problem!.index, r.problem!.kind, r.problem!.code], [2, 'consistency', 'LEDGER_RELEASE_UNKNOWN_CLAIM']);
    assert.equal(r.book, undefined);
  });
  it('a second release of one claim', () => {
    const r = replay(sealEntries([admitted('r1'), released('r1'), admitted('r2'), released('r1')], steward).map((e) => e.bytes));
    assert.deepEqual([r.problem!.index, r.problem!.code], [3, 'LEDGER_RELEASE_TWICE']);
  });
  it('a broken link reports the index of the first broken link', () => {
    const es = sealEntries([admitted('r1'), admitted('r2'), admitted('r3'), admitted('r4')], steward).map((e) => e.bytes);
    const r = replay([es[0]!, es[1]!, es[3]!]);
    assert.deepEqual([r.ok, r.problem!.index, r.problem!.kind], [false, 2, 'sequence']);
  });
});

describe('§7.13 every entry is a sealed pool/1 receipt; authenticity and sequence both checked (§6.5)', () => {
  const other = Ed25519Signer.generate();
  it('an entry is a COSE_Sign1 of type pool/1 whose kid is the steward', () => {
    const [e] = sealEntries([admitted('r1')], steward);
    const o = open(e!.bytes, POOL_TYPE);
    assert.equal(o.type, 'pool/1');
    const rec = o.record as { pool_receipt: number; seq: number; prev: string; steward: string };
    assert.equal(rec.steward, o.signer);
    assert.deepEqual([rec.pool_receipt, rec.seq, rec.prev], [1, 0, GENESIS]);
    assert.equal(e!.bytes[0], 0xd2); // tag 18
  });
  it('authenticity: a well-chained entry sealed by another key is refused', () => {
    const es = sealEntries([admitted('r1')], steward);
    const forged = sealEntries([admitted('r2')], other, { start: { length: 1, head: es[0]!.address } });
    const r = replay([es[0]!.bytes, forged[0]!.bytes]);
    assert.deepEqual([r.problem!.index, r.problem!.kind, r.problem!.code], [1, 'authenticity', 'LEDGER_WRONG_STEWARD']);
  });
  it('authenticity: a tampered signature is refused', () => {
    const es = sealEntries([admitted('r1'), admitted('r2')], steward).map((e) => Uint8Array.from(e.bytes));
    es[1]![es[1]!.length - 1]! ^= 1;
    const r = replay(es);
    assert.deepEqual([r.problem!.index, r.problem!.kind, r.problem!.code], [1, 'authenticity', 'ENVELOPE_BAD_SIGNATURE']);
  });
  it('sequence: validly signed entries out of order, or with a subset removed, are refused', () => {
    const es = sealEntries([admitted('r1'), admitted('r2'), admitted('r3')], steward).map((e) => e.bytes);
    assert.equal(replay([es[0]!, es[2]!]).problem!.code, 'LEDGER_SEQ_MISMATCH');
    assert.equal(replay([es[1]!]).problem!.code, 'LEDGER_SEQ_MISMATCH');
    // a consistent stream written by anyone: right seq, right prev, wrong key
    const mine = sealEntries([admitted('r1')], other).map((e) => e.bytes);
    assert.equal(replay(mine, { steward: open(es[0]!, POOL_TYPE).signer }).problem!.code, 'LEDGER_WRONG_STEWARD');
    // a wrong prev with the right seq
    const s = open(es[0]!, POOL_TYPE).signer;
    const wrongPrev = seal(POOL_TYPE, entryFor(admitted('r2'), 1, 'sha256:' + 'ab'.repeat(32), s, 1) as never, steward).bytes;
    assert.equal(replay([es[0]!, wrongPrev]).problem!.code, 'LEDGER_BROKEN_LINK');
  });
  it('the entry fields must match the event', () => {
    const s = open(sealEntries([admitted('r1')], steward)[0]!.bytes, POOL_TYPE).signer;
    assert.equal(codeOf(() => seal(POOL_TYPE, { ...entryFor(released('r1'), 0, GENESIS, s, 1), devices: 1 } as never, steward)), 'LEDGER_ENTRY_EVENT_FIELDS');
  });
});

describe('§7.14 a non-canonical signed core is refused (§6.6)', () => {
  const s = open(sealEntries([admitted('r1')], steward)[0]!.bytes, POOL_TYPE).signer;
  const core = { ...entryFor(admitted('r1'), 0, GENESIS, s, 1_800_000_000_000), prev: new Uint8Array(32) } as Record<string, unknown>;
  const canonical = encodeCanonical(core);
  it('a canonical core verifies', () => {
    assert.equal(replay([sealRaw(POOL_TYPE, canonical, steward)]).ok, true);
  });
  it('a validly signed core with a non-shortest integer is refused', () => {
    // seq 0 is 0x00; re-encode "seq": 0 as 0x18 0x00 (a one-byte head for a small value)
    const key = new TextEncoder().encode('seq');
    const i = Buffer.from(canonical).indexOf(Buffer.from([0x63, ...key, 0x00]));
    assert.ok(i > 0);
    const bad = new Uint8Array([...canonical.subarray(0, i + 4), 0x18, 0x00, ...canonical.subarray(i + 5)]);
    const r = replay([sealRaw(POOL_TYPE, bad, steward)]);
    assert.equal(r.ok, false);
    assert.deepEqual([r.problem!.index, r.problem!.kind, r.problem!.code], [0, 'canonicity', 'CBOR_NON_SHORTEST_HEAD']);
  });
  it('a validly signed core with unsorted keys or an indefinite-length map is refused', () => {
    // swap to a map with the first two entries reversed: rebuild by hand
    const cbor = Buffer.from(canonical);
    const indefinite = new Uint8Array([0xbf, ...cbor.subarray(1), 0xff]);
    const r1 = replay([sealRaw(POOL_TYPE, indefinite, steward)]);
    assert.equal(r1.problem!.code, 'CBOR_INDEFINITE_LENGTH');
    // "at" (2 letters) must come before "seq"; put "seq" first
    const seqPart = encodeCanonical({ seq: 0 }).subarray(1);
    const rest = encodeCanonical(Object.fromEntries(Object.entries(core).filter(([k]) => k !== 'seq'))).subarray(1);
    const unsorted = new Uint8Array([canonical[0]!, ...seqPart, ...rest]);
    assert.equal(replay([sealRaw(POOL_TYPE, unsorted, steward)]).problem!.code, 'CBOR_UNSORTED_KEYS');
  });
});

describe('§7.15 a witness whose key is the steward’s is refused (§6.7)', () => {
  it('a pool-witness/1 receipt signed by the steward does not open, and grading refuses it', () => {
    const es = sealEntries([admitted('r1')], steward);
    const s = open(es[0]!.bytes, POOL_TYPE).signer;
    assert.equal(codeOf(() => seal(WITNESS_TYPE, { steward: s, length: 1, head: es[0]!.address, witnessedAt: 1 } as never, steward)), 'WITNESS_IS_STEWARD');
    const self = sealRaw(WITNESS_TYPE, encodeCanonical({ steward: s, length: 1, head: Buffer.from(es[0]!.address.slice(7), 'hex'), witnessedAt: 1 }), steward);
    const a = gradeAttestation({ steward: s, addresses: [es[0]!.address] }, [self]);
    assert.equal(a.grade, 'self-attested');
    assert.equal(a.receipts[0]!.status, 'refused');
  });
  it('the Witness refuses to countersign a ledger sealed with its own key, and keeps no state', async () => {
    const t = tempDir('c0-conf-witness-');
    const db = await openDb(t.dir);
    try {
      const w = new Witness(db, steward);
      const es = sealEntries([admitted('r1')], steward).map((e) => e.bytes);
      await assert.rejects(w.cosign(w.did, es), (e: unknown) => e instanceof C0Error && e.code === 'WITNESS_IS_STEWARD');
      assert.deepEqual(await w.held(w.did), { length: 0, head: GENESIS });
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });
});

describe('§7.16 an unwitnessed ledger is graded self-attested, never refused and never reported as witnessed (§6.8)', () => {
  it('no receipts → self-attested, and the ledger still verifies', () => {
    const es = sealEntries([admitted('r1')], steward);
    const r = replay(es.map((e) => e.bytes));
    assert.equal(r.ok, true);
    const a = gradeAttestation({ steward: r.steward!, addresses: r.addresses }, []);
    assert.deepEqual([a.grade, a.witnesses.length, a.witnessedLength], ['self-attested', 0, 0]);
  });
  it('with a valid receipt → witnessed, by whom and up to which length', () => {
    const w = Ed25519Signer.generate();
    const es = sealEntries([admitted('r1'), admitted('r2')], steward);
    const r = replay(es.map((e) => e.bytes));
    const rc = seal(WITNESS_TYPE, { steward: r.steward!, length: 1, head: es[0]!.address, witnessedAt: 5 } as never, w);
    const a = gradeAttestation({ steward: r.steward!, addresses: r.addresses }, [rc.bytes]);
    assert.equal(a.grade, 'witnessed');
    assert.deepEqual(a.witnesses, [{ witness: rc.signer, length: 1 }]);
  });
});

describe('§7.17 a receipt that does not verify is distinguished from one that verifies but covers another head (§6.8)', () => {
  const w = Ed25519Signer.generate();
  const es = sealEntries([admitted('r1'), admitted('r2')], steward);
  const s = open(es[0]!.bytes, POOL_TYPE).signer;
  const view = { steward: s, addresses: es.map((e) => e.address) };
  it('bad signature → invalid', () => {
    const rc = Uint8Array.from(seal(WITNESS_TYPE, { steward: s, length: 2, head: es[1]!.address, witnessedAt: 5 } as never, w).bytes);
    rc[rc.length - 1]! ^= 0xff;
    const st = checkReceipt(view, rc);
    assert.equal(st.status, 'invalid');
    assert.equal(st.status === 'invalid' && st.code, 'ENVELOPE_BAD_SIGNATURE');
  });
  it('verifies but covers a different head → mismatch (a rewritten history)', () => {
    const rewritten = sealEntries([admitted('r1'), admitted('r2-rewritten')], steward);
    const rc = seal(WITNESS_TYPE, { steward: s, length: 2, head: rewritten[1]!.address, witnessedAt: 5 } as never, w);
    const st = checkReceipt(view, rc.bytes);
    assert.equal(st.status, 'mismatch');
    assert.equal(st.status === 'mismatch' && st.code, 'WITNESS_HEAD_MISMATCH');
  });
  it('verifies but covers a longer length → mismatch (truncated history)', () => {
    const rc = seal(WITNESS_TYPE, { steward: s, length: 3, head: es[1]!.address, witnessedAt: 5 } as never, w);
    const st = checkReceipt(view, rc.bytes);
    assert.equal(st.status === 'mismatch' && st.code, 'WITNESS_LENGTH_BEYOND');
    const a = gradeAttestation(view, [rc.bytes]);
    assert.equal(a.grade, 'self-attested');
  });
});

describe('§7.18 division degrades provenance; a shared device’s share is never HwShunt; division never improves (§2.5)', () => {
  it('HwShunt divided among two or more becomes ModelBased', () => {
    const shares = attribute(E(1000, 'HwShunt'), [{ key: 'a', weight: 1 }, { key: 'b', weight: 3 }]);
    assert.ok(shares.every((s) => s.grade === 'ModelBased'));
  });
  it('a sole occupant keeps the device grade; Estimator stays Estimator; ModelBased stays ModelBased', () => {
    assert.equal(attribute(E(1000, 'HwShunt'), [{ key: 'a', weight: 1 }])[0]!.grade, 'HwShunt');
    assert.ok(attribute(E(1000, 'Estimator'), [{ key: 'a', weight: 1 }, { key: 'b', weight: 1 }]).every((s) => s.grade === 'Estimator'));
    assert.ok(attribute(E(1000, 'ModelBased'), [{ key: 'a', weight: 1 }, { key: 'b', weight: 1 }]).every((s) => s.grade === 'ModelBased'));
  });
  it('even with a zero-weight co-occupant the device is shared: no HwShunt', () => {
    assert.ok(attribute(E(1000, 'HwShunt'), [{ key: 'a', weight: 1 }, { key: 'b', weight: 0 }]).every((s) => s.grade === 'ModelBased'));
  });
});

describe('§7.19 a device total is conserved exactly; the remainder goes by a deterministic rule (§2.5)', () => {
  it('largest remainder first, ties on the key', () => {
    // 10 µJ over weights 1,1,1: 3 each, remainder 1 → tie → lowest key "a"
    assert.deepEqual(attribute(E(10), [{ key: 'c', weight: 1 }, { key: 'a', weight: 1 }, { key: 'b', weight: 1 }]).map((s) => [s.key, s.uj]), [['c', 3], ['a', 4], ['b', 3]]);
    // 100 over 1,2,4 (W=7): floors 14,28,57 = 99; remainders 2,4,1 → b gets +1
    assert.deepEqual(attribute(E(100), [{ key: 'a', weight: 1 }, { key: 'b', weight: 2 }, { key: 'c', weight: 4 }]).map((s) => s.uj), [14, 29, 57]);
  });
  it('the shares sum to the total, and the result does not depend on occupant order', () => {
    const occ = [{ key: 'x', weight: 7 }, { key: 'y', weight: 11 }, { key: 'z', weight: 13 }, { key: 'w', weight: 0 }];
    for (const total of [0, 1, 30, 31, 9_007_199_254_740_991]) {
      const a = attribute(E(total), occ);
      assert.equal(a.reduce((s, x) => s + BigInt(x.uj), 0n), BigInt(total));
      const b = attribute(E(total), [...occ].reverse());
      assert.deepEqual(new Map(a.map((s) => [s.key, s.uj])), new Map(b.map((s) => [s.key, s.uj])));
    }
  });
});

describe('§7.20 a device with no occupants or no weight is refused (§2.5)', () => {
  it('no occupants', () => assert.equal(codeOf(() => attribute(E(10), [])), 'POOL_ATTRIBUTION_NO_OCCUPANTS'));
  it('all weights zero', () => assert.equal(codeOf(() => attribute(E(10), [{ key: 'a', weight: 0 }, { key: 'b', weight: 0 }])), 'POOL_ATTRIBUTION_NO_WEIGHT'));
  it('negative or fractional weights, duplicate keys', () => {
    assert.equal(codeOf(() => attribute(E(10), [{ key: 'a', weight: -1 }])), 'POOL_ATTRIBUTION_BAD_WEIGHT');
    assert.equal(codeOf(() => attribute(E(10), [{ key: 'a', weight: 0.5 }])), 'POOL_ATTRIBUTION_BAD_WEIGHT');
    assert.equal(codeOf(() => attribute(E(10), [{ key: 'a', weight: 1 }, { key: 'a', weight: 1 }])), 'POOL_ATTRIBUTION_DUPLICATE_OCCUPANT');
  });
});

const obs = (cls: string, ...xs: Array<[number, Energy['grade']]>): Observation[] => xs.map(([uj, grade]) => ({ class: cls, actual: { uj, grade } }));

describe('§7.21 Estimator observations are excluded, and both counts reported on declining (§2.6)', () => {
  it('guesses are not evidence: many guesses derive nothing', () => {
    const r = deriveEstimate('k', obs('k', [1, 'Estimator'], [2, 'Estimator'], [3, 'Estimator'], [4, 'Estimator'], [5, 'HwShunt']));
    assert.deepEqual(r, { ok: false, class: 'k', reason: 'INSUFFICIENT_EVIDENCE', seen: 5, evidence: 1, required: 3 });
  });
  it('guesses are not averaged in: a huge Estimator figure does not move the estimate', () => {
    const r = deriveEstimate('k', obs('k', [10, 'HwShunt'], [20, 'ModelBased'], [30, 'HwShunt'], [1e12, 'Estimator']));
    assert.equal(r.ok && r.estimate.uj, 30);
    assert.deepEqual(r.ok && r.spread, { minUj: 10, maxUj: 30, evidence: 3, seen: 4 });
  });
  it('a replayed ledger yields the observations with the class recorded in Admitted', () => {
    const events = [admitted('r1'), released('r1', 40), admitted('r2'), released('r2', 50, 'Estimator')];
    const r = replay(sealEntries(events, steward).map((e) => e.bytes));
    assert.deepEqual(r.book!.estimate('train.small', { required: 1 }), deriveEstimate('train.small', obs('train.small', [40, 'HwShunt'], [50, 'Estimator']), { required: 1 }));
    assert.deepEqual(r.book!.classes.get('train.small'), { seen: 2, evidence: 1, minUj: 40, maxUj: 40, grade: 'ModelBased' });
  });
});

describe('§7.22 a derived estimate is capped at ModelBased (§2.6)', () => {
  it('all HwShunt evidence still derives ModelBased', () => {
    const r = deriveEstimate('k', obs('k', [10, 'HwShunt'], [20, 'HwShunt'], [30, 'HwShunt']));
    assert.deepEqual(r.ok && r.estimate, { uj: 30, grade: 'ModelBased' });
  });
  it('the derived reservation takes the upper end, not the mean', () => {
    const r = deriveEstimate('k', obs('k', [10, 'HwShunt'], [11, 'HwShunt'], [90, 'ModelBased']));
    assert.equal(r.ok && r.estimate.uj, 90);
  });
});

describe('§7.23 nothing is derived below the required count; a required count of zero is one (§2.6)', () => {
  it('default required count is 3', () => {
    assert.equal(deriveEstimate('k', obs('k', [1, 'HwShunt'], [2, 'HwShunt'])).ok, false);
    assert.equal(deriveEstimate('k', obs('k', [1, 'HwShunt'], [2, 'HwShunt'], [3, 'HwShunt'])).ok, true);
  });
  it('required 0 behaves as 1: no evidence derives nothing, one suffices', () => {
    const none = deriveEstimate('k', obs('k', [5, 'Estimator']), { required: 0 });
    assert.deepEqual(none, { ok: false, class: 'k', reason: 'INSUFFICIENT_EVIDENCE', seen: 1, evidence: 0, required: 1 });
    assert.equal(deriveEstimate('k', obs('k', [5, 'HwShunt']), { required: 0 }).ok, true);
    assert.equal(codeOf(() => deriveEstimate('k', [], { required: -1 })), 'POOL_ESTIMATE_BAD_REQUIRED');
  });
});

describe('§7.24 an empty class is refused, and differing classes are never pooled (§2.6)', () => {
  it('empty class', () => {
    assert.equal(codeOf(() => deriveEstimate('', obs('', [1, 'HwShunt']))), 'POOL_ESTIMATE_EMPTY_CLASS');
    assert.equal(codeOf(() => deriveEstimate('  ', [])), 'POOL_ESTIMATE_EMPTY_CLASS');
    assert.equal(codeOf(() => estimateFrom([])), 'POOL_ESTIMATE_EMPTY_CLASS');
  });
  it('observations of another class are not counted; mixing classes in one derivation is refused', () => {
    const hist = [...obs('a', [10, 'HwShunt'], [20, 'HwShunt']), ...obs('b', [1000, 'HwShunt'], [2000, 'HwShunt'], [3000, 'HwShunt'])];
    const r = deriveEstimate('a', hist);
    assert.deepEqual(r.ok ? r : [r.seen, r.evidence], [2, 2]);
    assert.equal(codeOf(() => estimateFrom(hist)), 'POOL_ESTIMATE_MIXED_CLASSES');
  });
});

const idleObs = (o: Partial<IdleObservation> = {}): IdleObservation => ({ key: 'w', devicesHeld: 1, observedMs: 60_000, energy: E(0, 'HwShunt'), ...o });
const policy = { windowMs: 60_000, idleBelowMicrowatts: 1_000_000 }; // 1 W

describe('§7.25 an Estimator figure never establishes idleness; the grade is tested before any threshold (§2.7)', () => {
  it('0 µJ from an Estimator is no verdict, whatever the threshold', () => {
    for (const t of [0, 1, 1e6, Number.MAX_SAFE_INTEGER]) {
      const v = idleVerdict(idleObs({ energy: E(0, 'Estimator') }), { windowMs: 60_000, idleBelowMicrowatts: t });
      assert.deepEqual(v, { verdict: 'no-verdict', key: 'w', reason: 'UNOBSERVED_GRADE', windowMs: 60_000 });
    }
  });
  it('the same reading observed is idle', () => {
    assert.equal(idleVerdict(idleObs(), policy).verdict, 'idle');
    assert.equal(idleVerdict(idleObs({ energy: E(120e6, 'ModelBased') }), policy).verdict, 'working');
  });
});

describe('§7.26 a stated window is required; nothing below it; an empty window is no rate (§2.7)', () => {
  it('observation shorter than the window: no verdict (startup is not idleness)', () => {
    assert.deepEqual(idleVerdict(idleObs({ observedMs: 59_999 }), policy), { verdict: 'no-verdict', key: 'w', reason: 'WINDOW_TOO_SHORT', windowMs: 60_000 });
  });
  it('an empty window is no rate, not a rate of zero', () => {
    assert.equal(idleVerdict(idleObs({ observedMs: 0 }), policy).verdict, 'no-verdict');
    const v = idleVerdict(idleObs({ observedMs: 0 }), policy);
    assert.equal(v.verdict === 'no-verdict' && v.reason, 'EMPTY_WINDOW');
  });
  it('every verdict that rests on a rate states its window', () => {
    const v = idleVerdict(idleObs(), policy);
    assert.equal(v.verdict === 'idle' && v.windowMs, 60_000);
  });
  it('nothing held comes first, before the window', () => {
    assert.equal(idleVerdict(idleObs({ devicesHeld: 0, observedMs: 0 }), policy).verdict, 'nothing-held');
  });
});

describe('§7.27 a workload with no verdict is absent from the reclamation order, not last (§2.7)', () => {
  it('only idle workloads are ordered, lowest rate first, ties on the key', () => {
    const order = reclamationOrder(
      [
        idleObs({ key: 'guess', energy: E(0, 'Estimator') }),
        idleObs({ key: 'short', observedMs: 10 }),
        idleObs({ key: 'none', devicesHeld: 0 }),
        idleObs({ key: 'busy', energy: E(1e9) }),
        idleObs({ key: 'idle-b', energy: E(100) }),
        idleObs({ key: 'idle-a', energy: E(100) }),
        idleObs({ key: 'idle-0', energy: E(0), observedMs: 120_000 }),
      ],
      policy,
    ).map((v) => v.key);
    assert.deepEqual(order, ['idle-0', 'idle-a', 'idle-b']);
  });
});

describe('§7.28 an unconfigured policy reclaims nothing (§2.7)', () => {
  it('no window, no threshold, or neither: nothing is idle', () => {
    const ws = [idleObs({ key: 'a' }), idleObs({ key: 'b', energy: E(0, 'ModelBased') })];
    for (const p of [{}, { windowMs: 60_000 }, { idleBelowMicrowatts: 1e9 }]) {
      assert.deepEqual(reclamationOrder(ws, p), []);
      assert.equal(idleVerdict(ws[0]!, p).verdict, 'no-verdict');
    }
  });
});
