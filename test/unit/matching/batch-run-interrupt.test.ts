/**
 * `c0mpute batch run`'s Ctrl-C (docs/node.md "A run whose client went away"): runBatch's `signal` aborts, the ports
 * close the lines' streams on the same signal (which a stream reports as DAEMON_STREAM_LOST), and the run stops as
 * when it loses its daemon, its own code in `stopped`: BATCH_INTERRUPTED. Nothing more is posted or re-planned, no
 * provider is struck, the lines in flight are `unknown` (the daemon withdraws those not committed), the rest not posted.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { BatchPlan } from '../../../src/matching/batch-plan.js';
import { runBatch, type BatchRunEvent, type LineOutcome, type RunLine } from '../../../src/matching/batch-run.js';

const WL = 'exec.slow';
const tick = () => new Promise<void>((r) => setImmediate(r));
const settle = async () => {
  for (let i = 0; i < 20; i++) await tick();
};

test('Ctrl-C mid-batch: stopped BATCH_INTERRUPTED, done / in flight (unknown) / not posted, nobody struck, nothing posted after', async () => {
  const ac = new AbortController();
  const pending: Array<{ line: RunLine; resolve: (o: LineOutcome) => void }> = [];
  const events: BatchRunEvent[] = [];
  let plans = 0;
  const plan = async (): Promise<BatchPlan> => {
    plans++;
    const assignments = ['A', 'B'].map((provider) => ({ workload: WL, provider, lines: 4, ask: { amount: '0.002', currency: 'USD' }, unit: 'job', cost: { amount: '0', currency: 'USD' } }));
    return { plannedAt: 0, windowMs: 60_000, assignments, providers: [], totals: [], lines: 8 } as BatchPlan;
  };
  const run = runBatch(
    { batch: { windowMs: 60_000, workloads: [{ workload: WL, lines: 8, units: { job: '1' }, lineMs: 1000, maxPrice: { amount: '1', currency: 'USD' } }] }, lines: Array.from({ length: 8 }, (_, i) => ({ id: `${WL}-${i + 1}`, workload: WL })), concurrency: 4, signal: ac.signal },
    {
      plan,
      // as apiBatchPorts' runLine: its stream closed by the signal throws as a lost connection
      runLine: (line) =>
        new Promise<LineOutcome>((resolve, reject) => {
          pending.push({ line, resolve });
          ac.signal.addEventListener('abort', () => reject(new C0Error('DAEMON_STREAM_LOST', 'the connection to the daemon broke while it answered (aborted)')), { once: true });
        }),
      slots: () => 2,
      deliver: async () => {},
      clock: () => Date.now(),
      onEvent: (e) => events.push(e),
    },
  );
  await settle();
  assert.equal(pending.length, 4);
  for (const p of pending.slice(0, 2)) p.resolve({ status: 'completed', output: new Uint8Array([1]), job: `job-${p.line.id}` });
  await settle();
  assert.equal(pending.length, 6);
  ac.abort();
  const s = await run;
  assert.deepEqual(s.stopped, { code: 'BATCH_INTERRUPTED', message: 'interrupted with Ctrl-C' });
  assert.deepEqual([s.done, s.failed, s.unknown, s.notPosted], [2, 0, 4, 2]);
  assert.equal(pending.length, 6, 'nothing posted after the Ctrl-C');
  assert.equal(plans, 1, 'nothing re-planned');
  assert.deepEqual(s.failedProviders, []);
  for (const l of s.perLine.filter((x) => x.status === 'unknown')) assert.match(l.detail!, /in flight at Ctrl-C/);
  for (const l of s.perLine.filter((x) => x.status === 'not-posted')) assert.match(l.detail!, /interrupted with Ctrl-C/);
  assert.equal(events.filter((e) => e.e === 'stopped').length, 1);
});
