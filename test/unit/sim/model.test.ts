/**
 * The scale model's CPU calibration (scripts/sim/model.ts, docs/scale.md §3):
 * from two runs that differ in connection churn it recovers the per-copy and
 * per-connection-opened costs that made their CPU, and predicts a third run's
 * CPU from its rates and churn.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { advertRate, calibrate, offerOpenShare, offersPerJob, outcomeRate, predict, presenceRate, project, rates, selectionSize, FRAMING, MEASURED, SIZES, type RunFile } from '../../../scripts/sim/model.js';

const BASE = 0.2;
const PER_COPY = 300; // µs
const PER_OPEN = 25_000; // µs
const VALIDATE = MEASURED.validateUs; // µs (the model's default, the warm figure calibration uses)

/** A synthetic run: `deliveredPerSec` records of each kind, `copies` each, `opens` per node·min; CPU as the model writes it. */
function run(delivered: number, copies: number, opens: number): RunFile {
  const kinds = ['advert', 'presence', 'job'];
  const firstUs = kinds.length * delivered * VALIDATE;
  const copyUs = 2 * kinds.length * delivered * copies * PER_COPY;
  const cpuPctPerNode = BASE + (firstUs + copyUs + (opens / 60) * PER_OPEN) / 1e4;
  return {
    options: {},
    figures: {
      nodes: 40,
      traffic: [...kinds.map((kind) => ({ kind, inMsgsPerSec: delivered * copies, inBytesPerSec: 0, outBytesPerSec: 0, deliveredPerSec: delivered })), { kind: 'control', inMsgsPerSec: 0, inBytesPerSec: 0, outBytesPerSec: 0 }],
      publishedPerSec: { advert: 1, presence: 1, job: 1, offer: 0 },
      cpuPctPerNode,
      conns: { opensPerNodeMin: opens, perNode: 10 },
    },
  };
}

test('two runs with different churn: per-copy and per-open costs recovered; a third run predicted', () => {
  const a = run(0.5, 3, 13);
  const b = run(0.5, 3.2, 22);
  const p = calibrate(a, { basePct: BASE }, b);
  assert.ok(Math.abs(p.perCopyUs - PER_COPY) < 1, `per copy ${p.perCopyUs}`);
  assert.ok(Math.abs(p.perOpenUs - PER_OPEN) < 10, `per open ${p.perOpenUs}`);
  assert.equal(p.opensPerNodeMin, 13);
  const c = run(1.5, 3, 40);
  assert.ok(Math.abs(predict(c, p).cpuPct - c.figures.cpuPctPerNode) < 1e-6);
});

test('one run: the given per-open cost is kept and the rest charged to copies', () => {
  const a = run(0.5, 3, 13);
  assert.ok(Math.abs(calibrate(a, { basePct: BASE, perOpenUs: PER_OPEN }).perCopyUs - PER_COPY) < 1);
  const none = calibrate(a, { basePct: BASE, perOpenUs: 0 });
  assert.equal(none.perOpenUs, 0);
  assert.ok(none.perCopyUs > PER_COPY, 'without a per-open cost the connections are charged to copies');
});

test('presence adaptive in the model: the daemon’s function per market (fixed in small markets, the target rate in large ones)', () => {
  const p = { ...MEASURED, marketShare: 1 / 16, presenceEverySec: 15, presenceTargetPerMarket: 5 };
  assert.equal(presenceRate(1_000, p), 1_000 / 15, '63 per market: every 15 s as before');
  assert.ok(Math.abs(presenceRate(10_000, p) - 16 * 5) < 1e-9, '625 per market: 5 records/s in each of 16');
  assert.ok(Math.abs(presenceRate(1_000_000, p) - 1_000_000 / 200) < 1e-9, 'the 600 s window cap: every 200 s');
  assert.equal(presenceRate(10_000, { ...p, presenceTargetPerMarket: Infinity }), 10_000 / 15);
});

test('adverts adaptive in the model: the daemon’s function per market (every 300 s in small markets, the target rate in large ones, the 1 h cap)', () => {
  const p = { ...MEASURED, marketShare: 1 / 16, advertTargetPerMarket: 1 };
  assert.equal(advertRate(1_000, p), 1_000 / 300, '63 per market: every 300 s as before');
  assert.ok(Math.abs(advertRate(10_000, p) - 16) < 1e-9, '625 per market: one advert a second in each of 16');
  assert.ok(Math.abs(advertRate(10_000, { ...p, marketsPerProvider: 2 }) - 8) < 1e-9, '1,250 per market, each provider in two: still one a second per market');
  assert.ok(Math.abs(advertRate(1_000_000, p) - 1_000_000 / 1_800) < 1e-9, 'the 1 h lifetime cap: every 30 min');
  assert.equal(advertRate(10_000, { ...p, advertTargetPerMarket: Infinity }), 10_000 / 300);
});

test('direct offers open connections once a market outgrows what a buyer keeps connected, at both ends; a cap on offers per job bounds it', () => {
  const p = { ...MEASURED, marketShare: 1 / 16, offersDirect: true, offerShare: 0.25, perOpenUs: 40_000 };
  // connectionsHeld Infinity (the default) is the model before the ninth round: no such term
  assert.equal(project(10_000, 'buyer', p).offerOpensPct, 0);
  const held = { ...p, connectionsHeld: 200 };
  assert.equal(offerOpenShare(1_000, held), 0, '63 providers in a market: a buyer can keep them all');
  assert.ok(Math.abs(offerOpenShare(10_000, held) - (1 - 200 / 625)) < 1e-12);
  assert.equal(offersPerJob(10_000, held), 156.25);
  // a buyer: its jobs' offers (one job per 30 s each), 68 % of them a connection opened, 40 ms each
  const buyer = project(10_000, 'buyer', held);
  assert.ok(Math.abs(buyer.offerOpensPct - ((156.25 / 30) * 0.68 * 40_000) / 1e4) < 1e-9, `buyer ${buyer.offerOpensPct}`);
  // a provider: the market's jobs' offers shared among its 625 providers
  const jobsInMarket = (10_000 / 3 / 30) / 16;
  const provider = project(10_000, 'provider', held);
  assert.ok(Math.abs(provider.offerOpensPct - ((jobsInMarket * 156.25) / 625) * 0.68 * 4) < 1e-9, `provider ${provider.offerOpensPct}`);
  // every offer sent is an offer taken, whether a provider is in one market or two (each end charged the same open)
  for (const q of [held, { ...held, marketsPerProvider: 2 }]) {
    const sent = 10_000 * project(10_000, 'provider', q).offerOpensPct;
    const taken = (10_000 / 3) * project(10_000, 'buyer', q).offerOpensPct;
    assert.ok(Math.abs(sent - taken) < 1e-6 * taken, `m = ${q.marketsPerProvider}: sent ${sent}, taken ${taken}`);
  }
  assert.ok(buyer.cpuPct - project(10_000, 'buyer', p).cpuPct > buyer.offerOpensPct - 1e-9);
  // capped at 8 offers a job
  const capped = { ...held, offersPerJobCap: 8 };
  assert.equal(offersPerJob(10_000, capped), 8);
  assert.ok(project(10_000, 'buyer', capped).offerOpensPct < buyer.offerOpensPct / 15);
});

test('a job’s outcome as built: a default node takes only its own directly, a node that counts second-hand evidence its markets’ receipts and acceptances too', () => {
  const p = { ...MEASURED, marketShare: 1 / 16, offersDirect: true, offersPerJobCap: 8 };
  const at = (outcomes: typeof p.outcomes, role: 'provider' | 'buyer' | 'relay') => project(10_000, role, { ...p, outcomes });
  for (const role of ['provider', 'buyer'] as const) {
    const own = at('own', role);
    const direct = at('market-direct', role);
    const market = at('market', role);
    const none = at('none', role);
    // own: a little above none (its own selections and acceptances), well under the twelfth round's market topics
    assert.ok(own.cpuPct > none.cpuPct && own.cpuPct < direct.cpuPct && direct.cpuPct < market.cpuPct, `${role}: ${none.cpuPct} < ${own.cpuPct} < ${direct.cpuPct} < ${market.cpuPct}`);
    assert.equal(outcomeRate(10_000, role, { ...p, outcomes: 'own' }), 0);
    assert.equal(outcomeRate(10_000, role, { ...p, outcomes: 'market-direct' }), outcomeRate(10_000, role, { ...p, outcomes: 'market' }));
  }
  // a provider's direct share: the selection of each offer it made (8 a job) and the acceptance of each job it won
  const jobs = rates(10_000, p).job;
  const own = at('own', 'provider');
  const expected = ((jobs * 8) / 10_000) * (selectionSize(8) + FRAMING) + (jobs / 10_000) * (SIZES.acceptance + FRAMING);
  assert.ok(Math.abs(own.kBps.outcome * 1000 - expected) < 1e-6 * expected, `${own.kBps.outcome * 1000} vs ${expected}`);
  // a relay that does not count second-hand evidence takes no outcome at all
  assert.equal(at('own', 'relay').kBps.outcome, 0);
});
