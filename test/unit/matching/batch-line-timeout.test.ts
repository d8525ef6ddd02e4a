/**
 * A batch line's hard timeout is only ever what its file says (docs/matching.md "Batch plans", "Batch runs"): the
 * file's `timeout`, else the buyer's default (its `deadline`). 328725e gave a line without `timeout` the file's summed
 * seconds ÷ lines as its timeout, whatever its provider asked in, so in the docs' own example (100 lines, `second:
 * 250`) a line that ran 3.5 s was killed EXEC_TIMEOUT at 3 s on a per-job provider, which `batch run` then struck off.
 * A per-second ask is billed by the timeout the line carries, so the planner now prices it by exactly that — the
 * deadline when the file gives no `timeout` — and refuses BATCH_MAX_PRICE_BELOW_ASK when that is above maxPrice.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { readBatchRunFile } from '../../../src/cli/batchfile.js';
import { batchLines, lineSpec } from '../../../src/node/batch-client.js';
import { planBatch } from '../../../src/matching/batch-plan.js';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { Claimer } from '../../../src/roles/provider/claimer.js';
import { seal, T, type Job } from '../../../src/records/index.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { silentLogger } from '../../../src/util/log.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'c0-batch-timeout-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const W = 'builtin.sleep';
/** The docs' example batch, its lines running builtin.sleep for 3.5 s (above the 2.5 s average). */
function exampleFile(extra = ''): string {
  const p = join(dir, `b${extra.length}.yaml`);
  writeFileSync(p, `window: 10m
workloads:
  - workload: ${W}
    lines: 100
    units: { second: 250 }
    lineTime: 2500ms
    maxPrice: "0.05 USD"
    params: "3500"
    inputText: "line {n}"
${extra}`);
  return p;
}
function provider(unit: string, amount: string): LiveProvider {
  const ad = advert(P(1), { workloads: [W], prices: [{ workload: W, unit, price: { amount, currency: 'USD' } }] });
  return { did: P(1).did, presence: seal(T.presence, { workloads: [W], freeSlots: 4, issuedAt: NOW - 1000, windowMs: 15000 }, P(1).signer), advert: ad, workloads: [W], freeSlots: 4, liveUntil: NOW + 14000 };
}
/** The job the buyer's node signs for a line spec (src/roles/buyer.ts jobRecord: no timeout is the deadline). */
function lineJob(spec: Record<string, unknown>): ReturnType<typeof job> {
  const timeoutMs = (spec.timeoutMs as number | undefined) ?? (spec.deadlineMs as number);
  return job(P(100), { workload: W, order: spec.order as Job['order'], maxPrice: spec.maxPrice as Job['maxPrice'], announcedAt: NOW - 100, deadline: NOW + (spec.deadlineMs as number), timeoutMs, input: { hash: 'sha256:' + '11'.repeat(32), size: 8 } });
}

test('a 3.5 s line of the docs’ example on a per-job provider runs under its deadline, not the 2.5 s average', () => {
  const { batch, run } = readBatchRunFile(exampleFile());
  const prov = provider('job', '0.01');
  const plan = planBatch({ batch, live: [prov], now: NOW, reputation: () => 1, ceiling: 128 });
  assert.equal(plan.assignments[0]!.unit, 'job');
  const spec = lineSpec(batchLines(batch, run, dir)[0]!, prov.did);
  assert.equal(spec.timeoutMs, undefined, 'the file gives no timeout: the line states none');
  const j = lineJob(spec);
  // the provider's run limit (src/roles/provider/provider.ts): min(timeoutMs, deadline − start)
  const limit = Math.min(j.record.timeoutMs, j.record.deadline - NOW);
  assert.ok(limit >= 3500, `the line may run ${limit} ms`);
  assert.equal(limit, 120_000, 'its deadline, 2 min');
});

test('a per-second provider is priced by the timeout the line carries: the deadline without `timeout`, refused above maxPrice', () => {
  const { batch } = readBatchRunFile(exampleFile());
  assert.throws(
    () => planBatch({ batch, live: [provider('second', '0.001')], now: NOW, reputation: () => 1, ceiling: 128 }),
    (e: unknown) => {
      assert.ok(e instanceof C0Error && e.code === 'BATCH_MAX_PRICE_BELOW_ASK', String(e));
      const priced = (e.detail as { priced: Array<{ cheapest: { amount: string }; lineSeconds: number }> }).priced[0]!;
      assert.equal(priced.lineSeconds, 120);
      assert.equal(priced.cheapest.amount, '0.12');
      return true;
    },
  );
});

test('with `timeout:` the per-second plan, the line and the claim agree', () => {
  const { batch, run } = readBatchRunFile(exampleFile('    timeout: 4s\n'));
  const prov = provider('second', '0.001');
  const plan = planBatch({ batch, live: [prov], now: NOW, reputation: () => 1, ceiling: 128 });
  assert.deepEqual(plan.assignments[0]!.cost, { amount: '0.4', currency: 'USD' }, '100 lines × 4 s × 0.001');
  const spec = lineSpec(batchLines(batch, run, dir)[0]!, prov.did);
  assert.equal(spec.timeoutMs, 4000);
  const orders = new OpenOrders();
  orders.add(lineJob(spec), NOW);
  const claimer = new Claimer({ did: prov.did, signer: P(1).signer, clock: () => NOW, log: silentLogger(), orders, advert: () => prov.advert, freeSlots: () => 4, runs: () => false, live: () => [prov], canRun: () => true, send: async () => { throw new Error('not sent here'); } });
  const targets = claimer.targets(NOW);
  claimer.stop();
  assert.equal(targets.length, 1);
  assert.deepEqual(targets[0]!.price, { amount: '0.004', currency: 'USD' });
});
