/**
 * `POST /v1/batch/plan` as the daemon answers it (src/node/batch-route.ts;
 * docs/matching.md "Batch plans"): the node's live-provider view, reputation
 * view, held jobs, designated orders and the requirements gate all reach the
 * planner; a bad body or ceiling is coded; the human table renders the plan.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { seal, T, type Presence } from '../../../src/records/index.js';
import { batchPlan } from '../../../src/node/batch-route.js';
import { openNodeProbe, type ProbeHost } from '../../../src/matching/probe.js';
import type { CandidateOrder } from '../../../src/matching/candidates.js';
import { renderPlan } from '../../../src/cli/commands/batch.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { NOW, P, advert, type Party } from '../market/fixtures.js';

function live(p: Party, price: string, freeSlots: number, tier: 'community' | 'standard' = 'standard'): LiveProvider {
  const a = advert(p, { workloads: ['infer.llm'], tier, prices: [{ workload: 'infer.llm', unit: 'job', price: { amount: price, currency: 'USD' } }] });
  const pr: Presence = { workloads: ['infer.llm'], freeSlots, issuedAt: NOW - 1000, windowMs: 15_000 };
  return { did: p.did, advert: a, presence: seal(T.presence, pr, p.signer), workloads: pr.workloads, freeSlots, liveUntil: NOW + 14_000 };
}

test('the route plans from the node’s views and hooks', () => {
  const [A, B, C] = [P(801), P(802), P(803)] as [Party, Party, Party];
  const seen: number[] = [];
  const node = {
    clock: () => NOW,
    d: { network: {} },
    market: { reputation: () => ({ scoreOf: (d: string) => (d === A.did ? 0.5 : 1) }) },
    // A: 8 slots × 0.5 = 4, less 1 held, 1 designated → 2; B: 3 slots; C fails the tier requirement
    liveProviders: (now: number) => (seen.push(now), [live(A, '0.1', 8), live(B, '0.2', 3), live(C, '0.01', 9, 'community')]),
    heldByProvider: () => new Map([[A.did, 1]]),
    designatedOrders: (d: string) => (d === A.did ? 1 : 0),
  } as unknown as OverlayNode;
  const body = (lines: number, ceiling?: unknown) => ({ batch: { windowMs: 10_000, workloads: [{ workload: 'infer.llm', lines, units: {}, lineMs: 10_000, maxPrice: { amount: '1', currency: 'USD' }, requirements: { tier: 'standard' } }] }, ...(ceiling === undefined ? {} : { ceiling }) });
  const plan = batchPlan(node, body(5));
  assert.deepEqual(seen, [NOW]);
  assert.deepEqual(plan.assignments.map((a) => [a.provider, a.lines, a.cost.amount]), [
    [A.did, 2, '0.2'],
    [B.did, 3, '0.6'],
  ]);
  assert.deepEqual(plan.totals, [{ amount: '0.8', currency: 'USD' }]);
  assert.throws(() => batchPlan(node, body(6)), { code: 'BATCH_EXCEEDS_CAPACITY' });
  // a ceiling of 2: A ⌊0.5 × 2⌋ − 2 = 0, B 2
  assert.throws(() => batchPlan(node, body(3, 2)), { code: 'BATCH_EXCEEDS_CAPACITY' });
  assert.equal(batchPlan(node, body(2, 2)).assignments[0]!.provider, B.did);
  assert.throws(() => batchPlan(node, body(1, -1)), { code: 'BATCH_FIELD_INVALID', field: 'ceiling' });
  // 0, as the CLI's --ceiling 0: before, planned nothing and refused BATCH_EXCEEDS_CAPACITY (QA qaMatch F5)
  assert.throws(() => batchPlan(node, body(1, 0)), { code: 'BATCH_FIELD_INVALID', field: 'ceiling', message: /from 1 to 999999999/ });
  assert.throws(() => batchPlan(node, body(1, 1_000_000_000)), { code: 'BATCH_FIELD_INVALID', field: 'ceiling' });
  assert.throws(() => batchPlan(node, body(1, 1.5)), { code: 'BATCH_FIELD_INVALID', field: 'ceiling' });
  assert.throws(() => batchPlan(node, { batch: { windowMs: 1 } }), { code: 'BATCH_FIELD_INVALID', field: 'workloads' });
  assert.throws(() => batchPlan(node, null), { code: 'BATCH_FIELD_INVALID' });

  const text = renderPlan(plan).join('\n');
  assert.match(text, /^infer\.llm$/m);
  assert.match(text, /\s2\s+0\.1 USD\/job\s+0\.2 USD$/m);
  assert.match(text, /^total: 5 lines over 2 providers, 0\.8 USD$/m);
  // one provider, one line: singular (QA qaMatch F9: "over 1 providers")
  const one = renderPlan({ ...plan, lines: 1, providers: plan.providers.slice(0, 1) }).join('\n');
  assert.match(one, /^total: 1 line over 1 provider, /m);
});

test('batch run’s re-plan body: `exclude` leaves providers out, `designated` counts lines already promised to one; bad values are coded', () => {
  const [A, B, C] = [P(811), P(812), P(813)] as [Party, Party, Party];
  const node = {
    clock: () => NOW,
    d: { network: {} },
    market: { reputation: () => ({ scoreOf: () => 1 }) },
    liveProviders: () => [live(A, '0.1', 3), live(B, '0.1', 3), live(C, '0.2', 3)],
    heldByProvider: () => new Map(),
    designatedOrders: () => 0,
  } as unknown as OverlayNode;
  const batch = { windowMs: 10_000, workloads: [{ workload: 'infer.llm', lines: 4, units: {}, lineMs: 10_000, maxPrice: { amount: '1', currency: 'USD' } }] };
  const lines = (p: ReturnType<typeof batchPlan>) => p.assignments.map((a) => [a.provider, a.lines]);
  assert.deepEqual(lines(batchPlan(node, { batch })), [[A.did, 2], [B.did, 2]].sort((x, y) => (x[0]! < y[0]! ? -1 : 1)));
  // A struck off: B 3, then C (dearer) 1
  assert.deepEqual(lines(batchPlan(node, { batch, exclude: [A.did] })), [[B.did, 3], [C.did, 1]]);
  // B still has 2 of this run's lines: 1 left there
  assert.deepEqual(lines(batchPlan(node, { batch, exclude: [A.did], designated: { [B.did]: 2 } })), [[B.did, 1], [C.did, 3]]);
  // every provider left out: none can take it at all (BATCH_NO_PROVIDER, which batch run's re-plan tries again too)
  assert.throws(
    () => batchPlan(node, { batch, exclude: [A.did, B.did, C.did] }),
    (e: { code?: string; message?: string }) => e.code === 'BATCH_NO_PROVIDER' && /; 3 providers this run struck off are left out$/.test(e.message ?? ''),
  );
  assert.throws(() => batchPlan(node, { batch, exclude: A.did }), { code: 'BATCH_FIELD_INVALID', field: 'exclude' });
  assert.throws(() => batchPlan(node, { batch, designated: { [B.did]: -1 } }), { code: 'BATCH_FIELD_INVALID', field: 'designated' });
  assert.throws(() => batchPlan(node, { batch, designated: [1] }), { code: 'BATCH_FIELD_INVALID', field: 'designated' });
  assert.throws(() => batchPlan(node, { batch, designated: { 'not-a-did': 1 } }), { code: 'BATCH_FIELD_INVALID', field: 'designated' });
  assert.throws(() => batchPlan(node, { batch, running: { 'not-a-did': 1 } }), { code: 'BATCH_FIELD_INVALID', field: 'running' });
  assert.throws(() => batchPlan(node, { batch, ceiling: 1e300 }), { code: 'BATCH_FIELD_INVALID', field: 'ceiling' });
  assert.throws(() => batchPlan(node, { batch, colour: 'red' }), { code: 'BATCH_FIELD_INVALID', field: 'colour' });
});

test('a node that is buyer and provider plans no line onto itself, and its probe does not rank itself (QA pass: each such line was refused ORDER_DESIGNATED_SELF and planned again)', async () => {
  const [ME, B] = [P(821), P(822)] as [Party, Party];
  const node = {
    did: ME.did,
    clock: () => NOW,
    d: { network: { clockSkewMs: 30_000 } },
    market: { reputation: () => ({ scoreOf: () => 1 }), adverts: { latest: new Map([[ME.did, live(ME, '0.01', 4).advert], [B.did, live(B, '0.2', 4).advert]]) } },
    liveProviders: () => [live(ME, '0.01', 4), live(B, '0.2', 4)],
    heldByProvider: () => new Map(),
    designatedOrders: () => 0,
  } as unknown as OverlayNode;
  const plan = batchPlan(node, { batch: { windowMs: 10_000, workloads: [{ workload: 'infer.llm', lines: 3, units: {}, lineMs: 10_000, maxPrice: { amount: '1', currency: 'USD' } }] } });
  assert.deepEqual(plan.assignments.map((a) => [a.provider, a.lines]), [[B.did, 3]], 'not onto itself, though it is the cheapest');
  // the probe over the same node (its rotation in a sublevel held in memory here)
  const kept = new Map<string, Uint8Array>();
  const sub = { iterator: () => kept.entries(), put: async (k: string, v: Uint8Array) => void kept.set(k, v) };
  const probe = await openNodeProbe({ ...(node as unknown as object), sub: () => sub } as unknown as ProbeHost);
  const order: CandidateOrder = { workload: 'infer.llm', requirements: {}, maxPrice: { amount: '1', currency: 'USD' }, inputSize: 0, inputSealed: false, timeoutMs: 60_000 };
  const r = await probe.probe(order);
  assert.deepEqual(r.candidates.map((c) => c.provider), [B.did]);
  assert.ok(!JSON.stringify(r).includes(ME.did), 'nor listed as not live or refused');
});
