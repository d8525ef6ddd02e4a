/**
 * A batch line's order and its plan agree on a per-second provider's price (docs/matching.md "Batch plans", "Batch
 * runs"): the planner bills a per-second ask by the timeout each line carries (lineSeconds: the workload's timeoutMs,
 * which the CLI fills with the file's `timeout`, else the line's deadline; in whole seconds as the claimer counts them)
 * and, without it, does not price a per-second ask at all. Before, the plan priced the summed seconds while the line
 * went out with the buyer's default timeout (its 2-min deadline): the planned provider priced the order at 0.12 >
 * maxPrice 0.05, never claimed it, and every line ended ORDER_NOT_CLAIMED. A batch no live provider would claim at its
 * maxPrice is refused BATCH_MAX_PRICE_BELOW_ASK.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lineSeconds, planBatch, type Batch } from '../../../src/matching/batch-plan.js';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { Claimer } from '../../../src/roles/provider/claimer.js';
import { batchLines, lineSpec } from '../../../src/node/batch-client.js';
import { C0Error } from '../../../src/errors.js';
import { seal, T, type Job } from '../../../src/records/index.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { silentLogger } from '../../../src/util/log.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const ad = advert(P(1), { prices: [{ workload: W, unit: 'second', price: { amount: '0.001', currency: 'USD' } }] });
const prov: LiveProvider = { did: P(1).did, presence: seal(T.presence, { workloads: [W], freeSlots: 4, issuedAt: NOW - 1000, windowMs: 15000 }, P(1).signer), advert: ad, workloads: [W], freeSlots: 4, liveUntil: NOW + 14000 };
const maxPrice = { amount: '0.05', currency: 'USD' };
// docs/matching.md's example: 100 lines, 250 summed seconds, 0.05 USD a line, a 10-minute window; each line's timeout 3 s
const batch: Batch = { windowMs: 600_000, workloads: [{ workload: W, lines: 100, units: { second: '250' }, lineMs: 2500, timeoutMs: 3000, maxPrice }] };

/** The line's job as the buyer's node signs it from the spec (no timeout: the deadline). */
function lineJob(spec: Record<string, unknown>): ReturnType<typeof job> {
  const timeoutMs = (spec.timeoutMs as number | undefined) ?? (spec.deadlineMs as number);
  return job(P(100), { order: spec.order as Job['order'], maxPrice: spec.maxPrice as Job['maxPrice'], announcedAt: NOW - 100, deadline: NOW + (spec.deadlineMs as number), timeoutMs });
}

test('a planned line is claimable by its planned provider at the planned price', () => {
  const plan = planBatch({ batch, live: [prov], now: NOW, reputation: () => 1, ceiling: 128 });
  assert.equal(plan.assignments.length, 1);
  const a = plan.assignments[0]!;
  assert.equal(a.lines, 100);
  assert.equal(lineSeconds(batch.workloads[0]!), 3);
  assert.deepEqual(a.cost, { amount: '0.3', currency: 'USD' }, '100 lines × 3 s × 0.001');

  const [line] = batchLines(batch, [{ workload: W, lines: 100, deadlineMs: 120_000, timeoutMs: 3000, inputText: 'line {n}' }], '/nonexistent');
  const spec = lineSpec(line!, a.provider);
  assert.equal(spec.timeoutMs, 3000, 'the line carries the timeout it was planned by');
  const order = lineJob(spec);
  const orders = new OpenOrders();
  orders.add(order, NOW);
  const claimer = new Claimer({ did: prov.did, signer: P(1).signer, clock: () => NOW, log: silentLogger(), orders, advert: () => ad, freeSlots: () => 4, runs: () => false, live: () => [prov], canRun: () => true, send: async () => { throw new Error('not sent here'); } });
  const targets = claimer.targets(NOW);
  claimer.stop();
  assert.equal(targets.length, 1, 'the planned provider claims the line');
  assert.deepEqual(targets[0]!.price, { amount: '0.003', currency: 'USD' }, 'at the plan’s cost per line');
});

test('a file timeout is what the plan bills, and the line carries it', () => {
  const w = { ...batch.workloads[0]!, timeoutMs: 10_000 };
  assert.equal(lineSeconds(w), 10);
  const plan = planBatch({ batch: { ...batch, workloads: [w] }, live: [prov], now: NOW, reputation: () => 1, ceiling: 128 });
  assert.deepEqual(plan.assignments[0]!.cost, { amount: '1', currency: 'USD' }, '100 lines × 10 s × 0.001');
  const [line] = batchLines({ ...batch, workloads: [w] }, [{ workload: W, lines: 100, deadlineMs: 120_000, timeoutMs: 10_000 }], '/nonexistent');
  assert.equal(lineSpec(line!, prov.did).timeoutMs, 10_000);
});

test('lines no live provider would claim at maxPrice are refused BATCH_MAX_PRICE_BELOW_ASK', () => {
  const w = { ...batch.workloads[0]!, timeoutMs: 120_000 }; // 0.12 a line at 0.001/s, above 0.05
  assert.throws(() => planBatch({ batch: { ...batch, workloads: [w] }, live: [prov], now: NOW, reputation: () => 1, ceiling: 128 }), (e: { code?: string; field?: string; detail?: { priced?: Array<{ cheapest: { amount: string } }> } }) => {
    assert.equal(e.code, 'BATCH_MAX_PRICE_BELOW_ASK');
    assert.equal(e.detail?.priced?.[0]?.cheapest.amount, '0.12');
    return true;
  });
});

test('a batch that does not say its lines’ timeout does not price a per-second ask (it could not say what the line is billed)', () => {
  const { timeoutMs: _, ...w } = batch.workloads[0]!;
  assert.equal(lineSeconds(w), undefined, 'never the summed seconds ÷ lines: that is no timeout');
  assert.throws(
    () => planBatch({ batch: { ...batch, workloads: [w] }, live: [prov], now: NOW, reputation: () => 1, ceiling: 128 }),
    // not capacity: the provider's per-second ask cannot be priced for a line without its timeout (it was BATCH_EXCEEDS_CAPACITY)
    (e: unknown) => e instanceof C0Error && e.code === 'BATCH_NO_PROVIDER' && /per second needs the lines’ timeout/.test(e.message),
  );
});
