/**
 * Work that returns after its time is not done in time (src/roles/provider/run-budget.ts; docs/node.md "Provider",
 * "Running"). A provider stopped (SIGSTOP) past a job's deadline and resumed signed `completed`, dated 16 s after the
 * deadline, with the full price and the energy of the whole stop (QA qaRep F4): after SIGCONT the work's own end (its
 * timer) and the deadline's timer were due together, the work's came first, and its end cleared the deadline's timer
 * before it fired. Here the race is made deterministic: the provider's wall and monotonic clocks are fakes, jumped
 * forward as the work starts (the process "stopped"), and builtin.sleep's real timer then ends the work first while
 * the run's real timer, due much later, has not fired. Real LevelDB for the provider's runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Opened } from '../../../src/records/envelope.js';
import type { Offer, Receipt } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import { StallWatch } from '../../../src/util/stall-watch.js';
import { Provider } from '../../../src/roles/provider/provider.js';
import { EstimatorMeter } from '../../../src/roles/provider/meters.js';
import { overran, runBudgetMs } from '../../../src/roles/provider/run-budget.js';
import type { ExecFrame } from '../../../src/roles/exec-protocol.js';
import { NOW, runsConfig, runsDeps, runsJob, selectionOf, withStore } from './runs-rig.js';

const input = new TextEncoder().encode('stop me');
const WATTS = 50;
/** builtin.sleep's own time, ms (a real timer). */
const SLEEP_MS = 30;

/**
 * Run builtin.sleep on a provider whose clocks jump by `wallMs` and `monoMs` as the work starts (a freeze the watch on
 * this process's freezes did not tick through); the job's deadline is NOW + 600 s, its timeout 300 s (runsJob).
 */
async function runFrozen(wallMs: number, monoMs: number): Promise<{ receipt: Opened<Receipt>; frames: ExecFrame[] }> {
  let receipt: Opened<Receipt> | undefined;
  const frames: ExecFrame[] = [];
  await withStore('run-overran', async (runs) => {
    const wall = fakeClock(NOW);
    const mono = fakeClock(1_000);
    const stalls = new StallWatch({ now: mono, every: () => () => {} });
    const p = new Provider({ ...runsDeps(runs, wall), meter: new EstimatorMeter(WATTS, mono, stalls), monoClock: mono, config: runsConfig(['builtin.sleep']), publish: async () => 1, onReceipt: async (r) => void (receipt = r) });
    await p.start();
    const j = runsJob('builtin.sleep', input, String(SLEEP_MS));
    const offer = (await p.onJob(j)) as Opened<Offer>;
    assert.ok(offer, 'offered');
    const queue: unknown[] = [{ t: 'exec', selection: selectionOf(j, offer).bytes, job: j.bytes, offer: offer.bytes, input }];
    const send = async (f: unknown) => {
      frames.push(f as ExecFrame);
      // the run's time and timer are set, the work about to start: the process stops here
      if ((f as ExecFrame).t === 'accepted') {
        wall.advance(wallMs);
        mono.advance(monoMs);
      }
    };
    await p.handleExec({ next: async () => queue.shift(), send, signal: new AbortController().signal, reserve: () => {}, setDeadline: () => {} });
    await p.stop();
  });
  assert.ok(receipt, 'a receipt was signed');
  return { receipt, frames };
}

test('a provider stopped past the deadline and resumed signs failed EXEC_TIMEOUT, not completed, and claims no energy for the stop', async () => {
  // stopped 620 s: past the timeout (300 s) and the deadline (600 s)
  const { receipt: r, frames } = await runFrozen(620_000, 620_000);
  assert.equal(r.record.status, 'failed');
  assert.equal(r.record.failure?.code, 'EXEC_TIMEOUT');
  assert.match(r.record.failure!.message, /^the work ended 20000 ms after the job's deadline/);
  assert.equal(r.record.completedAt, NOW + 620_000);
  assert.equal(r.record.outputHash, undefined);
  assert.equal(frames.some((f) => f.t === 'output'), false, 'no output is sent with it');
  // the estimator counts the time this process ran: the sleep and at most the watch's tick period, not 620 s
  assert.ok(r.record.energy.uj <= WATTS * 1_000 * 1000, `energy ${r.record.energy.uj} µJ`);
});

test('a provider stopped past the job’s timeout, still before its deadline, signs failed EXEC_TIMEOUT (measured on the monotonic clock)', async () => {
  const { receipt: r } = await runFrozen(400_000, 400_000);
  assert.equal(r.record.status, 'failed');
  assert.equal(r.record.failure?.code, 'EXEC_TIMEOUT');
  assert.match(r.record.failure!.message, /past its time of 300000 ms/);
  assert.ok(r.record.completedAt < NOW + 600_000);
});

test('a wall clock stepped past the deadline during the run: not completed either (the deadline is a wall time); unstopped work completes', async () => {
  const stepped = (await runFrozen(601_000, 0)).receipt;
  assert.equal(stepped.record.failure?.code, 'EXEC_TIMEOUT');
  assert.match(stepped.record.failure!.message, /^the work ended 1000 ms after the job's deadline/);
  const ok = (await runFrozen(0, 0)).receipt;
  assert.equal(ok.record.status, 'completed');
  assert.equal(ok.record.energy.uj, 0, 'no time passed on the fake monotonic clock');
});

test('overran and runBudgetMs: the end is judged on the wall clock against the deadline, the run on the monotonic clock against its time', () => {
  assert.equal(runBudgetMs({ timeoutMs: 300_000, deadline: NOW + 600_000 }, NOW), 300_000);
  assert.equal(runBudgetMs({ timeoutMs: 300_000, deadline: NOW + 600_000 }, NOW + 500_000), 100_000);
  assert.equal(runBudgetMs({ timeoutMs: 300_000, deadline: NOW }, NOW + 5), 1);
  assert.equal(overran({ deadline: NOW, completedAt: NOW, ranMs: 100, budgetMs: 100 }), undefined, 'at the deadline and at its time: in time');
  assert.equal(overran({ deadline: NOW, completedAt: NOW + 1, ranMs: 1, budgetMs: 100 })?.code, 'EXEC_TIMEOUT');
  assert.equal(overran({ deadline: NOW, completedAt: NOW - 5, ranMs: 100.5, budgetMs: 100 })?.code, 'EXEC_TIMEOUT');
});
