/**
 * A per-MiB ask is billed per line by that line's own input, in whole MiB rounded up, at least 1 (docs/matching.md
 * "Batch plans"; candidates.ts unitsOf, as the claimer and the probe price an order), and the planner prices it the
 * same way: each line as the largest line's input (`lineInputBytes`, which `batch run` reads from the inputs), else the
 * summed `units.mib` ÷ lines, rounded up per line. Before, it priced the summed MiB: a batch of 100 lines of 0.4 MiB
 * (`mib: 40`) at maxPrice 0.005 was planned onto a 0.01/MiB provider at 0.004 a line; that provider priced every line
 * at 0.01, never claimed one, and every line ended ORDER_NOT_CLAIMED, with no BATCH_MAX_PRICE_BELOW_ASK.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { planBatch, type Batch } from '../../../src/matching/batch-plan.js';
import { parseBatch } from '../../../src/matching/batch-input.js';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { Claimer } from '../../../src/roles/provider/claimer.js';
import { batchLines, lineSpec, withLineInputs } from '../../../src/node/batch-client.js';
import { seal, T, type Job } from '../../../src/records/index.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { silentLogger } from '../../../src/util/log.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'c0-batch-mib-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const W = 'infer.llm';
const KiB = 1024;
const ad = advert(P(1), { prices: [{ workload: W, unit: 'mib', price: { amount: '0.01', currency: 'USD' } }] });
const prov: LiveProvider = { did: P(1).did, presence: seal(T.presence, { workloads: [W], freeSlots: 4, issuedAt: NOW - 1000, windowMs: 15000 }, P(1).signer), advert: ad, workloads: [W], freeSlots: 4, liveUntil: NOW + 14000 };
const usd = (amount: string) => ({ amount, currency: 'USD' });
const plan = (batch: Batch) => planBatch({ batch, live: [prov], now: NOW, reputation: () => 1, ceiling: 128 });

/** What the planned provider's claimer would claim the line's order at (undefined: it would not claim it). */
function claimPrice(spec: Record<string, unknown>): { amount: string; currency: string } | undefined {
  const size = Buffer.from(spec.input as string, 'base64').length;
  const line = job(P(100), { order: spec.order as Job['order'], maxPrice: spec.maxPrice as Job['maxPrice'], announcedAt: NOW - 100, deadline: NOW + 120_000, timeoutMs: 120_000, input: { hash: 'sha256:' + '22'.repeat(32), size } });
  const orders = new OpenOrders();
  orders.add(line, NOW);
  const claimer = new Claimer({ did: prov.did, signer: P(1).signer, clock: () => NOW, log: silentLogger(), orders, advert: () => ad, freeSlots: () => 4, runs: () => false, live: () => [prov], canRun: () => true, send: async () => { throw new Error('not sent here'); } });
  const t = claimer.targets(NOW);
  claimer.stop();
  return t[0]?.price;
}

const small = (maxPrice: string): Batch => ({ windowMs: 600_000, workloads: [{ workload: W, lines: 100, units: { mib: '40' }, lineMs: 2000, maxPrice: usd(maxPrice) }] });
const recipe = { workload: W, lines: 100, deadlineMs: 120_000, inputText: 'x'.repeat(400 * KiB) };

test('lines below 1 MiB are billed 1 MiB each: refused when that is above maxPrice', () => {
  assert.throws(
    () => plan(small('0.005')),
    (e: unknown) => {
      assert.ok(e instanceof C0Error && e.code === 'BATCH_MAX_PRICE_BELOW_ASK', String(e));
      const p = (e.detail as { priced: Array<{ cheapest: { amount: string }; lineMib?: number }> }).priced[0]!;
      assert.equal(p.cheapest.amount, '0.01');
      assert.equal(p.lineMib, 1);
      return true;
    },
  );
  assert.equal(claimPrice(lineSpec(batchLines(small('0.005'), [recipe], dir)[0]!, prov.did)), undefined, 'the provider would never claim such a line');
});

test('a planned per-MiB line is claimed by its planned provider at the planned price', () => {
  const b = small('0.01');
  const p = plan(b);
  assert.deepEqual(p.assignments.map((a) => [a.lines, a.cost]), [[100, usd('1')]], '100 lines × 1 MiB × 0.01');
  const lines = batchLines(b, [recipe], dir);
  const withSizes = withLineInputs(b, lines);
  assert.equal(withSizes.workloads[0]!.lineInputBytes, 400 * KiB);
  assert.deepEqual(plan(withSizes).assignments[0]!.cost, usd('1'));
  assert.deepEqual(claimPrice(lineSpec(lines[0]!, p.assignments[0]!.provider)), usd('0.01'), 'claimed at the plan’s cost per line');
});

test('lines of different sizes: batch run prices every line as its largest, so no planned line is left unclaimed', () => {
  writeFileSync(join(dir, 'in-1.bin'), new Uint8Array(1536 * KiB)); // 1.5 MiB: billed 2
  writeFileSync(join(dir, 'in-2.bin'), new Uint8Array(256 * KiB));
  writeFileSync(join(dir, 'in-3.bin'), new Uint8Array(256 * KiB));
  // the summed MiB say 2 a line; the largest line is billed 2 MiB (0.02), above a 0.015 bid
  const b: Batch = { windowMs: 600_000, workloads: [{ workload: W, lines: 3, units: { mib: '2' }, lineMs: 2000, maxPrice: usd('0.015') }] };
  assert.deepEqual(plan(b).assignments[0]!.cost, usd('0.03'), 'from the summed MiB alone: 1 MiB a line');
  const lines = batchLines(b, [{ workload: W, lines: 3, deadlineMs: 120_000, input: 'in-{n}.bin' }], dir);
  assert.equal(claimPrice(lineSpec(lines[0]!, prov.did)), undefined, 'the 1.5 MiB line is priced 0.02 by its provider');
  const sized = withLineInputs(b, lines);
  assert.equal(sized.workloads[0]!.lineInputBytes, 1536 * KiB);
  assert.throws(() => plan(sized), (e: unknown) => e instanceof C0Error && e.code === 'BATCH_MAX_PRICE_BELOW_ASK');
  const ok = withLineInputs({ ...b, workloads: [{ ...b.workloads[0]!, maxPrice: usd('0.02') }] }, lines);
  assert.deepEqual(plan(ok).assignments[0]!.cost, usd('0.06'), 'at most what the three lines are claimed for (0.02 + 0.01 + 0.01)');
  assert.deepEqual(claimPrice(lineSpec({ ...lines[0]!, maxPrice: usd('0.02') }, prov.did)), usd('0.02'));
  // batch run does not need units.mib at all: it knows the inputs
  const { mib: _, ...noUnits } = ok.workloads[0]!.units;
  assert.equal(plan({ ...ok, workloads: [{ ...ok.workloads[0]!, units: noUnits }] }).assignments[0]!.lines, 3);
});

test('a unit the claimer cannot count is not planned, stated or not', () => {
  const odd = advert(P(2), { prices: [{ workload: W, unit: 'mtoken', price: { amount: '0.0001', currency: 'USD' } }] });
  const p2: LiveProvider = { ...prov, did: P(2).did, advert: odd, presence: seal(T.presence, { workloads: [W], freeSlots: 4, issuedAt: NOW - 1000, windowMs: 15000 }, P(2).signer) };
  const b: Batch = { windowMs: 600_000, workloads: [{ workload: W, lines: 4, units: { mtoken: '100' }, lineMs: 2000, maxPrice: usd('1') }] };
  // not capacity: no provider prices it in a unit a line is billed in, and it says so (it was BATCH_EXCEEDS_CAPACITY)
  assert.throws(() => planBatch({ batch: b, live: [p2], now: NOW, reputation: () => 1 }), (e: unknown) => e instanceof C0Error && e.code === 'BATCH_NO_PROVIDER' && /a unit a line can be billed in/.test(e.message));
});

test('the API takes lineInputBytes, a whole number of bytes', () => {
  const raw = { windowMs: 60_000, workloads: [{ workload: W, lines: 2, units: {}, lineMs: 1000, lineInputBytes: 5, maxPrice: usd('1') }] };
  assert.equal(parseBatch(raw).workloads[0]!.lineInputBytes, 5);
  assert.throws(() => parseBatch({ ...raw, workloads: [{ ...raw.workloads[0]!, lineInputBytes: -1 }] }), (e: unknown) => e instanceof C0Error && e.code === 'BATCH_FIELD_INVALID' && e.field === 'workloads.0.lineInputBytes');
});
