/**
 * The batch planner (docs/matching.md "Batch plans"; issue #12): budget
 * arithmetic against hand-computed tables (exact decimals), refusal of an
 * oversized batch with its shortfall before anything is signed, and
 * determinism under any arrival order of the live providers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Ed25519Signer, seal, T, type Presence } from '../../../src/records/index.js';
import { C0Error } from '../../../src/errors.js';
import { askFor } from '../../../src/matching/candidates.js';
import { planBatch, meetsRequirements, type Batch, type BatchWorkload, type PlanInputs } from '../../../src/matching/batch-plan.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { NOW, P, advert, byDid, shuffle, type Party } from '../market/fixtures.js';

const WL = 'infer.llm';

function live(p: Party, o: { price: string; unit?: string; currency?: string; freeSlots: number; liveUntil?: number; workloads?: string[]; tier?: 'community' | 'standard' | 'verified' }): LiveProvider {
  const a = advert(p, { workloads: [WL, 'other.wl'], prices: [{ workload: WL, unit: o.unit ?? 'job', price: { amount: o.price, currency: o.currency ?? 'USD' } }, { workload: 'other.wl', unit: 'job', price: { amount: o.price, currency: 'EUR' } }], ...(o.tier ? { tier: o.tier } : {}) });
  const pr: Presence = { workloads: o.workloads ?? [WL, 'other.wl'], freeSlots: o.freeSlots, issuedAt: NOW - 1000, windowMs: 15_000 };
  return { did: p.did, advert: a, presence: seal(T.presence, pr, p.signer), workloads: pr.workloads, freeSlots: o.freeSlots, liveUntil: o.liveUntil ?? NOW + 14_000 };
}

function wl(over: Partial<BatchWorkload> = {}): BatchWorkload {
  return { workload: WL, lines: 1, units: {}, lineMs: 10_000, maxPrice: { amount: '1', currency: 'USD' }, ...over };
}

/** lines per provider DID for one plan */
function linesOf(plan: ReturnType<typeof planBatch>): Record<string, number> {
  return Object.fromEntries(plan.assignments.map((a) => [a.provider, a.lines]));
}

test('table 1: capacity = ⌊reputation × min(freeSlots × runs per slot in the window, ceiling)⌋, filled cheapest first', () => {
  const [A, B, C, D] = [P(101), P(102), P(103), P(104)] as [Party, Party, Party, Party];
  // window 60 s, a line takes 10 s → 6 runs per slot; ceiling 20
  // A: 4 slots → 24, min 20, × 0.5 → 10     price 0.10
  // B: 1 slot  → 6,          × 0.95→ 5.7 → 5 price 0.20
  // C: 10 slots→ 60, min 20, × 1   → 20     price 0.30
  // D: 2 slots → 12,         × 0.25→ 3      price 0.05
  const rep: Record<string, number> = { [A.did]: 0.5, [B.did]: 0.95, [C.did]: 1, [D.did]: 0.25 };
  const plan = planBatch({
    batch: { windowMs: 60_000, workloads: [wl({ lines: 30 })] },
    live: [live(A, { price: '0.10', freeSlots: 4 }), live(B, { price: '0.20', freeSlots: 1 }), live(C, { price: '0.30', freeSlots: 10 }), live(D, { price: '0.05', freeSlots: 2 })],
    now: NOW,
    reputation: (d) => rep[d]!,
    ceiling: 20,
  });
  // cheapest first: D 3, A 10, B 5, then C the remaining 12
  assert.deepEqual(plan.assignments.map((a) => [a.provider, a.lines, a.cost.amount]), [
    [D.did, 3, '0.15'],
    [A.did, 10, '1'],
    [B.did, 5, '1'],
    [C.did, 12, '3.6'],
  ]);
  assert.deepEqual(plan.assignments[0]!.ask, { amount: '0.05', currency: 'USD' });
  assert.deepEqual(plan.totals, [{ amount: '5.75', currency: 'USD' }]);
  assert.equal(plan.lines, 30);
  assert.equal(plan.plannedAt, NOW);
  // one line more than the 38 the network can take: refused, 38 of 39 placeable
  assert.throws(
    () => planBatch({ batch: { windowMs: 60_000, workloads: [wl({ lines: 39 })] }, live: [live(A, { price: '0.10', freeSlots: 4 }), live(B, { price: '0.20', freeSlots: 1 }), live(C, { price: '0.30', freeSlots: 10 }), live(D, { price: '0.05', freeSlots: 2 })], now: NOW, reputation: (d) => rep[d]!, ceiling: 20 }),
    (e: unknown) =>
      e instanceof C0Error &&
      e.code === 'BATCH_EXCEEDS_CAPACITY' &&
      JSON.stringify(e.detail) === JSON.stringify({ shortfall: [{ workload: WL, lines: 39, planned: 38, shortfall: 1 }] }) &&
      // the rule said, reputation in it (an operator read the shortfall without knowing what scales a provider's share)
      /1 of 39 lines unplaced\): a provider takes at most its reputation × its free slots × the lines that fit in the window \(at most 20\)/.test(e.message),
  );
});

test('table 2: held jobs and designated orders reduce the share, never below 0; a per-second ask bills each line its timeout, exactly', () => {
  const [A, B, C] = [P(201), P(202), P(203)] as [Party, Party, Party];
  // window 60 s, line 60 s → 1 run per slot; ceiling 100
  // A: 8 slots × 1   = 8, held 3, designated 2 → share 3   0.001 /s
  // B: 5 slots × 0.8 = 4, held 5               → share 0   0.0005/s (cheapest, but full)
  // C: 6 slots × 1   = 6, designated 1         → share 5   0.002 /s
  // 8 lines, each with a 30 s timeout: A 3 lines = 0.001×30×3 = 0.09; C 5 = 0.002×30×5 = 0.3
  const rep: Record<string, number> = { [A.did]: 1, [B.did]: 0.8, [C.did]: 1 };
  const held: Record<string, number> = { [A.did]: 3, [B.did]: 5 };
  const designated: Record<string, number> = { [A.did]: 2, [C.did]: 1 };
  const providers = [live(A, { price: '0.001', unit: 'second', freeSlots: 8 }), live(B, { price: '0.0005', unit: 'second', freeSlots: 5 }), live(C, { price: '0.002', unit: 'second', freeSlots: 6 })];
  const inputs = (lines: number, seconds: string): PlanInputs => ({
    batch: { windowMs: 60_000, workloads: [wl({ lines, units: { second: seconds }, lineMs: 60_000, timeoutMs: 30_000, maxPrice: { amount: '0.1', currency: 'USD' } })] },
    live: providers,
    now: NOW,
    reputation: (d) => rep[d]!,
    ceiling: 100,
    held: (d) => held[d] ?? 0,
    designated: (d) => designated[d] ?? 0,
  });
  const plan = planBatch(inputs(8, '240'));
  assert.deepEqual(plan.assignments.map((a) => [a.provider, a.lines, a.unit, a.cost.amount]), [
    [A.did, 3, 'second', '0.09'],
    [C.did, 5, 'second', '0.3'],
  ]);
  assert.deepEqual(plan.totals, [{ amount: '0.39', currency: 'USD' }]);
  assert.throws(() => planBatch(inputs(9, '270')), (e: unknown) => e instanceof C0Error && e.code === 'BATCH_EXCEEDS_CAPACITY' && (e.detail as { shortfall: Array<{ shortfall: number; planned: number }> }).shortfall[0]!.shortfall === 1);
});

test('table 3: cheapest first, then equal prices take turns one line at a time in DID order', () => {
  const [a, b, c] = byDid([P(301), P(302), P(303)]) as [Party, Party, Party];
  const [D, E] = [P(304), P(305)] as [Party, Party];
  // rep 1, 1 run per slot. D 0.05 ×3 slots; a, b, c 0.10 with 2, 5, 5 slots; E 0.20 × 10.
  // 12 lines: D 3; 9 left take turns a b c | a b c | b c | b → a 2, b 4, c 3; E none.
  const providers = [live(E, { price: '0.20', freeSlots: 10 }), live(c, { price: '0.10', freeSlots: 5 }), live(a, { price: '0.1', freeSlots: 2 }), live(D, { price: '0.05', freeSlots: 3 }), live(b, { price: '0.100', freeSlots: 5 })];
  const plan = planBatch({ batch: { windowMs: 10_000, workloads: [wl({ lines: 12 })] }, live: providers, now: NOW, reputation: () => 1, ceiling: 100 });
  assert.deepEqual(plan.assignments.map((x) => [x.provider, x.lines, x.cost.amount]), [
    [D.did, 3, '0.15'],
    [a.did, 2, '0.2'],
    [b.did, 4, '0.4'],
    [c.did, 3, '0.3'],
  ]);
  assert.deepEqual(plan.totals, [{ amount: '1.05', currency: 'USD' }]);
  assert.deepEqual(plan.providers.map((p) => p.provider), [...plan.providers.map((p) => p.provider)].sort());
});

test('workloads draw on one budget; totals per currency; a per-MiB ask bills each line whole MiB, as its claim will', () => {
  // (per MiB: the summed units divided among the lines, rounded up per line as the claimer counts a line's input —
  // so costs are whole multiples of the ask and never need rounding; a per-second ask bills each line its timeout)
  const [A] = [P(401)] as [Party];
  const batch: Batch = {
    windowMs: 10_000,
    workloads: [wl({ lines: 3, units: { mib: '100' }, maxPrice: { amount: '1', currency: 'USD' } }), { workload: 'other.wl', lines: 2, units: {}, lineMs: 10_000, maxPrice: { amount: '1', currency: 'EUR' } }],
  };
  // A has 5 slots: 3 lines of infer.llm, then 2 of other.wl; B (cheaper for infer.llm) has 1 slot.
  const B = P(402);
  const plan = planBatch({ batch, live: [live(A, { price: '0.01', unit: 'mib', freeSlots: 5 }), live(B, { price: '0.001', unit: 'mib', freeSlots: 1 })], now: NOW, reputation: () => 1 });
  // 100 MiB over 3 lines: 34 MiB a line. B: 0.001 × 34 × 1 = 0.034; A: 0.01 × 34 × 2 = 0.68; A other.wl 2 × 0.01 EUR
  assert.deepEqual(linesOf(plan), { [B.did]: 1, [A.did]: 2 }); // per workload, last wins for A
  assert.deepEqual(plan.assignments.map((x) => [x.workload, x.provider, x.lines, x.cost]), [
    [WL, B.did, 1, { amount: '0.034', currency: 'USD' }],
    [WL, A.did, 2, { amount: '0.68', currency: 'USD' }],
    ['other.wl', A.did, 2, { amount: '0.02', currency: 'EUR' }],
  ]);
  assert.deepEqual(plan.totals, [
    { amount: '0.02', currency: 'EUR' },
    { amount: '0.714', currency: 'USD' },
  ]);
  // A's budget is shared: with 3 slots it has only 1 left for other.wl, so that workload falls short by 1
  assert.throws(
    () => planBatch({ batch, live: [live(A, { price: '0.01', unit: 'mib', freeSlots: 3 }), live(B, { price: '0.001', unit: 'mib', freeSlots: 1 })], now: NOW, reputation: () => 1 }),
    (e: unknown) => e instanceof C0Error && e.code === 'BATCH_EXCEEDS_CAPACITY' && JSON.stringify((e.detail as { shortfall: unknown }).shortfall) === JSON.stringify([{ workload: 'other.wl', lines: 2, planned: 1, shortfall: 1 }]),
  );
});

test('who may take lines: live now, serving the workload, priced in its currency and unit, at or under maxPrice, through the gate', () => {
  const ps = [P(501), P(502), P(503), P(504), P(505), P(506), P(507)];
  const providers = [
    live(ps[0]!, { price: '0.1', freeSlots: 1 }), // takes
    live(ps[1]!, { price: '0.1', freeSlots: 1, liveUntil: NOW }), // no longer live
    live(ps[2]!, { price: '0.1', freeSlots: 1, workloads: ['other.wl'] }), // not serving it now
    live(ps[3]!, { price: '0.1', freeSlots: 1, currency: 'EUR' }), // another currency
    live(ps[4]!, { price: '0.1', freeSlots: 1, unit: 'mib' }), // a unit the batch does not state
    live(ps[5]!, { price: '1.01', freeSlots: 1 }), // over maxPrice
    live(ps[6]!, { price: '0.1', freeSlots: 1, tier: 'community' }), // fails the tier requirement
  ];
  const batch = (lines: number): Batch => ({ windowMs: 10_000, workloads: [wl({ lines, requirements: { tier: 'standard' } })] });
  const plan = planBatch({ batch: batch(1), live: providers, now: NOW, reputation: () => 1, eligible: meetsRequirements });
  assert.deepEqual(linesOf(plan), { [ps[0]!.did]: 1 });
  assert.throws(() => planBatch({ batch: batch(2), live: providers, now: NOW, reputation: () => 1, eligible: meetsRequirements }), { code: 'BATCH_EXCEEDS_CAPACITY' });
  // no live provider at all: the whole batch is the shortfall
  assert.throws(() => planBatch({ batch: batch(5), live: [], now: NOW, reputation: () => 1 }), (e: unknown) => e instanceof C0Error && (e.detail as { shortfall: Array<{ shortfall: number }> }).shortfall[0]!.shortfall === 5);
});

test('an oversized batch is refused before anything is signed', () => {
  const providers = [live(P(601), { price: '0.1', freeSlots: 2 }), live(P(602), { price: '0.1', freeSlots: 2 })];
  const orig = Ed25519Signer.prototype.sign;
  let signed = 0;
  Ed25519Signer.prototype.sign = function (this: Ed25519Signer, ...args: Parameters<typeof orig>) {
    signed++;
    return orig.apply(this, args);
  } as typeof orig;
  try {
    assert.throws(() => planBatch({ batch: { windowMs: 10_000, workloads: [wl({ lines: 5 })] }, live: providers, now: NOW, reputation: () => 1 }), (e: unknown) => {
      assert.ok(e instanceof C0Error);
      assert.equal(e.code, 'BATCH_EXCEEDS_CAPACITY');
      assert.deepEqual(e.detail, { shortfall: [{ workload: WL, lines: 5, planned: 4, shortfall: 1 }] });
      assert.match(e.message, /1 of 5 lines unplaced/);
      return true;
    });
    assert.equal(signed, 0);
  } finally {
    Ed25519Signer.prototype.sign = orig;
  }
});

test('property: any arrival order of the live providers gives the same plan', () => {
  const pool = Array.from({ length: 12 }, (_, i) => P(700 + i));
  fc.assert(
    fc.property(
      fc.array(fc.record({ price: fc.constantFrom('0.1', '0.10', '0.2', '0.05'), slots: fc.integer({ min: 0, max: 6 }), rep: fc.constantFrom(0, 0.3, 0.5, 0.77, 1) }), { minLength: 1, maxLength: 12 }),
      fc.integer({ min: 1, max: 40 }),
      fc.integer(),
      (specs, lines, seed) => {
        const ps = specs.map((s, i) => ({ lp: live(pool[i]!, { price: s.price, freeSlots: s.slots }), rep: s.rep }));
        const rep = new Map(ps.map((x) => [x.lp.did, x.rep]));
        const run = (list: LiveProvider[]) => {
          try {
            return planBatch({ batch: { windowMs: 20_000, workloads: [wl({ lines })] }, live: list, now: NOW, reputation: (d) => rep.get(d)!, ceiling: 9 });
          } catch (e) {
            return { code: (e as C0Error).code, detail: (e as C0Error).detail };
          }
        };
        const lps = ps.map((x) => x.lp);
        assert.deepEqual(run(shuffle(lps, seed)), run(lps));
      },
    ),
    { numRuns: 200 },
  );
});

test('a provider’s ask is its cheapest price for the workload in the batch’s currency and a unit the batch states, as askFor picks one for an order', () => {
  const [A, B, C] = [P(301), P(302), P(303)] as [Party, Party, Party];
  const withPrices = (p: Party, prices: Array<[string, string, string]>): LiveProvider => {
    const a = advert(p, { workloads: [WL], prices: prices.map(([amount, currency, unit]) => ({ workload: WL, unit, price: { amount, currency } })) });
    const pr: Presence = { workloads: [WL], freeSlots: 4, issuedAt: NOW - 1000, windowMs: 15_000 };
    return { did: p.did, advert: a, presence: seal(T.presence, pr, p.signer), workloads: [WL], freeSlots: 4, liveUntil: NOW + 14_000 };
  };
  // A prices in EUR first: before, the planner read only that entry and left A out of a USD batch
  // B's later entry is cheaper (2 lines, a 5 s timeout each: 0.30/job → 0.6, 0.02/s → 0.2)
  // C's cheapest entry is per a unit the batch does not state: skipped, its job price counts
  const ps = [withPrices(A, [['0.1', 'EUR', 'job'], ['0.15', 'USD', 'job']]), withPrices(B, [['0.30', 'USD', 'job'], ['0.02', 'USD', 'second']]), withPrices(C, [['0.001', 'USD', 'mtoken'], ['0.12', 'USD', 'job']])];
  const plan = planBatch({ batch: { windowMs: 60_000, workloads: [wl({ lines: 6, units: { second: '30' }, timeoutMs: 5000 })] }, live: ps, now: NOW, reputation: () => 1, ceiling: 2 });
  assert.deepEqual(
    plan.assignments.map((a) => [a.provider, a.lines, a.ask.amount, a.unit, a.cost.amount]),
    [
      [B.did, 2, '0.02', 'second', '0.2'],
      [C.did, 2, '0.12', 'job', '0.24'],
      [A.did, 2, '0.15', 'job', '0.3'],
    ],
  );
  // one USD line at A, the reviewer's case: taken at 0.15 USD, where the probe (askFor) lists it too
  const one = planBatch({ batch: { windowMs: 60_000, workloads: [wl()] }, live: [ps[0]!], now: NOW, reputation: () => 1 });
  assert.deepEqual(one.assignments.map((a) => [a.provider, a.ask]), [[A.did, { amount: '0.15', currency: 'USD' }]]);
  const ask = askFor(ps[0]!.advert.record, { workload: WL, requirements: {}, maxPrice: { amount: '1', currency: 'USD' }, inputSize: 10, inputSealed: false, timeoutMs: 1000 });
  assert.ok(ask.ok);
  assert.deepEqual(ask.ask.price, one.assignments[0]!.ask);
});

test('a workload no live provider can take at all is BATCH_NO_PROVIDER with why, not capacity; without lineTime the capacity refusal says so', () => {
  const [A, B] = [P(621), P(622)];
  const ps = [live(A, { price: '0.1', freeSlots: 2 }), live(B, { price: '0.1', freeSlots: 2, tier: 'community' })];
  const refused = (b: Batch, o: Partial<PlanInputs> = {}) => {
    try {
      planBatch({ batch: b, live: ps, now: NOW, reputation: () => 1, ...o });
    } catch (e) {
      assert.ok(e instanceof C0Error);
      return `${e.code}: ${e.message}`;
    }
    assert.fail('planned');
  };
  // QA s49: each of these was "BATCH_EXCEEDS_CAPACITY … a longer window, or providers with a record here, take more"
  assert.match(refused({ windowMs: 60_000, workloads: [wl({ workload: 'nosuch.work' })] }), /^BATCH_NO_PROVIDER: no live provider can take nosuch\.work \(no live provider serves it\)/);
  assert.match(refused({ windowMs: 60_000, workloads: [wl({ maxPrice: { amount: '1', currency: 'EUR' } })] }), /^BATCH_NO_PROVIDER: .*\(no live provider serving it prices it in EUR \(prices are never converted\)\)/);
  assert.match(refused({ windowMs: 60_000, workloads: [wl({ requirements: { tier: 'verified' } })] }, { eligible: meetsRequirements }), /^BATCH_NO_PROVIDER: .*meets its requirements/);
  // 4 slots, 6 lines that each hold a slot the whole window (no lineTime: lineMs = the window): a longer window takes no more
  const whole = refused({ windowMs: 60_000, workloads: [wl({ lines: 6, lineMs: 60_000 })] });
  assert.match(whole, /^BATCH_EXCEEDS_CAPACITY: .*2 of 6 lines unplaced.*each line of infer\.llm holds its slot for the whole window \(no lineTime given, or one as long as the window\), so a longer window takes no more: give lineTime/);
  assert.doesNotMatch(whole, /a longer window, or providers with a record here, take more/);
  // with lineTime the old advice stands
  assert.match(refused({ windowMs: 60_000, workloads: [wl({ lines: 25, lineMs: 10_000 })] }), /a longer window, or providers with a record here, take more/);
});

test('BATCH_MAX_PRICE_BELOW_ASK gives a line’s seconds only for a per-second ask (a per-job ask read as billed by the second)', () => {
  const perJob = live(P(631), { price: '0.5', freeSlots: 2 });
  const refused = () => {
    try {
      planBatch({ batch: { windowMs: 60_000, workloads: [wl({ lines: 2, timeoutMs: 120_000, maxPrice: { amount: '0.1', currency: 'USD' } })] }, live: [perJob], now: NOW, reputation: () => 1 });
    } catch (e) {
      assert.ok(e instanceof C0Error);
      return e;
    }
    assert.fail('planned');
  };
  const e = refused();
  assert.equal(e.code, 'BATCH_MAX_PRICE_BELOW_ASK');
  assert.match(e.message, /the cheapest asks 0\.5 USD a line, above maxPrice 0\.1 USD/);
  assert.doesNotMatch(e.message, /\(120 s\)/);
  assert.equal((e.detail as { priced: Array<{ unit?: string; lineSeconds?: number }> }).priced[0]!.unit, 'job');
});
