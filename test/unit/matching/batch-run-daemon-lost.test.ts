/**
 * The batch runner when its own daemon goes away (docs/matching.md "Batch runs", "The daemon goes away"): a
 * line broken by DAEMON_STREAM_LOST / DAEMON_UNREACHABLE / DAEMON_NOT_ANSWERING, a re-plan refused with one of those,
 * or a line the stopping daemon broke off (JOB_INTERRUPTED) is the buyer's side, not its provider's. No provider is
 * struck for it, nothing is re-planned or posted after it, and the summary says which lines were done, which were in
 * flight (outcome unknown) and which were never posted, with the daemon's code in `stopped`. Before, every such line
 * struck its provider, the re-plans were refused with DAEMON_UNREACHABLE and all lines ended failed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { Batch, BatchPlan } from '../../../src/matching/batch-plan.js';
import { daemonSideCode, runBatch, type BatchRunEvent, type BatchRunPorts, type LineOutcome, type RunLine } from '../../../src/matching/batch-run.js';

const WL = 'exec.slow';
const batchOf = (lines: number): Batch => ({ windowMs: 60_000, workloads: [{ workload: WL, lines, units: { job: '1' }, lineMs: 1000, maxPrice: { amount: '1', currency: 'USD' } }] });
const linesOf = (n: number): RunLine[] => Array.from({ length: n }, (_, i) => ({ id: `${WL}-${i + 1}`, workload: WL }));
const tick = () => new Promise<void>((r) => setImmediate(r));
const settle = async () => {
  for (let i = 0; i < 20; i++) await tick();
};

/** Equal turns over `providers` minus `exclude`; `down()` true: the daemon is gone (DAEMON_UNREACHABLE). */
function planner(providers: string[], down: () => boolean) {
  const calls: Array<{ lines: number; exclude: string[] }> = [];
  const plan: BatchRunPorts['plan'] = async (b, exclude) => {
    const lines = b.workloads[0]!.lines;
    calls.push({ lines, exclude: [...exclude] });
    if (down()) throw new C0Error('DAEMON_UNREACHABLE', 'cannot reach the daemon at 127.0.0.1:1: fetch failed');
    const live = providers.filter((p) => !exclude.includes(p));
    if (!live.length) throw new C0Error('BATCH_EXCEEDS_CAPACITY', 'no provider left');
    const got = new Map<string, number>();
    for (let i = 0; i < lines; i++) got.set(live[i % live.length]!, (got.get(live[i % live.length]!) ?? 0) + 1);
    const assignments = [...got].map(([provider, n]) => ({ workload: WL, provider, lines: n, ask: { amount: '0.002', currency: 'USD' }, unit: 'job', cost: { amount: '0', currency: 'USD' } }));
    return { plannedAt: 0, windowMs: b.windowMs, assignments, providers: [], totals: [], lines } satisfies BatchPlan;
  };
  return { plan, calls };
}

/** A fake daemon client: every runLine waits until the test settles it. */
function fakeDaemon() {
  const pending: Array<{ line: RunLine; provider: string; resolve: (o: LineOutcome) => void; reject: (e: unknown) => void; open: boolean }> = [];
  let dead = false;
  /** The daemon is stopping: it refuses every new run (a stream `error` event JOB_INTERRUPTED, src/roles/buyer.ts). */
  let stopping = false;
  const refused: Array<{ line: RunLine; provider: string }> = [];
  const events: BatchRunEvent[] = [];
  const delivered: string[] = [];
  const ports = (plan: BatchRunPorts['plan']): BatchRunPorts => ({
    plan,
    runLine: (line, provider) => {
      if (dead) return Promise.reject(new C0Error('DAEMON_UNREACHABLE', 'cannot reach the daemon at 127.0.0.1:1: fetch failed'));
      if (stopping) refused.push({ line, provider });
      if (stopping) return Promise.reject(new C0Error('JOB_INTERRUPTED', 'this node is stopping: the job was not started'));
      return new Promise<LineOutcome>((resolve, reject) => pending.push({ line, provider, resolve, reject, open: true }));
    },
    slots: () => 2,
    deliver: async (l) => {
      delivered.push(l.id);
    },
    clock: () => Date.now(),
    onEvent: (e) => events.push(e),
  });
  const complete = (i: number) => {
    const p = pending[i]!;
    p.open = false;
    p.resolve({ status: 'completed', output: new Uint8Array([1]), job: `job-${p.line.id}`, receipt: { address: `rc-${p.line.id}`, job: `job-${p.line.id}`, status: 'completed', provider: p.provider, price: { amount: '0.002', currency: 'USD' } } });
  };
  /** SIGKILL: every open stream breaks, and nothing reaches the daemon after. */
  const kill = () => {
    dead = true;
    for (const p of pending.filter((x) => x.open)) {
      p.open = false;
      p.reject(new C0Error('DAEMON_STREAM_LOST', 'the connection to the daemon at 127.0.0.1:1 broke while it answered (terminated)'));
    }
  };
  /** The daemon is gone for new calls; the open streams have not noticed yet. */
  const down = () => {
    dead = true;
  };
  const stop = () => {
    stopping = true;
  };
  return { pending, events, delivered, ports, complete, kill, down, stop, refused, isDead: () => dead };
}

test('the daemon SIGKILLed mid-batch: no provider is struck, nothing is re-planned or posted after, and the summary says done / in flight / not posted', async () => {
  const d = fakeDaemon();
  const pl = planner(['A', 'B'], d.isDead);
  const run = runBatch({ batch: batchOf(8), lines: linesOf(8), concurrency: 4 }, d.ports(pl.plan));
  await settle();
  assert.equal(d.pending.length, 4);
  d.complete(0);
  d.complete(1);
  await settle();
  assert.equal(d.pending.length, 6); // two more started in the freed slots
  d.kill();
  const s = await run;

  assert.deepEqual(s.failedProviders, []);
  assert.ok(!d.events.some((e) => e.e === 'provider-failed'), 'no provider-failed event');
  assert.equal(pl.calls.length, 1, 'no re-plan after the daemon went');
  assert.equal(d.pending.length, 6, 'no line posted after the daemon went');
  assert.equal(s.stopped?.code, 'DAEMON_STREAM_LOST');
  assert.equal(s.done, 2);
  assert.equal(s.failed, 0);
  assert.equal(s.unknown, 4);
  assert.equal(s.notPosted, 2);
  assert.equal(s.done + s.failed + s.unknown + s.notPosted, s.lines);
  const by = (st: string) => s.perLine.filter((l) => l.status === st).map((l) => l.id).sort();
  assert.deepEqual(by('done'), d.pending.slice(0, 2).map((p) => p.line.id).sort());
  assert.deepEqual(by('unknown'), d.pending.slice(2).map((p) => p.line.id).sort());
  assert.equal(by('not-posted').length, 2);
  for (const l of s.perLine.filter((x) => x.status === 'unknown')) {
    assert.equal(l.attempts.length, 1);
    assert.match(l.detail!, /DAEMON_STREAM_LOST/);
    assert.match(l.detail!, /c0mpute jobs/);
  }
  for (const l of s.perLine.filter((x) => x.status === 'not-posted')) assert.equal(l.attempts.length, 0);
  assert.deepEqual(s.cost, [{ amount: '0.004', currency: 'USD' }]);
  assert.equal(d.events.filter((e) => e.e === 'stopped').length, 1);
  assert.equal(d.events.filter((e) => e.e === 'line' && e.status === 'unknown').length, 4);
  // the stop says as many in flight as end unknown (it said 3, the line that found the daemon gone left out)
  assert.equal((d.events.find((e) => e.e === 'stopped') as { inFlight: number }).inFlight, 4);
  assert.ok(!d.events.some((e) => e.e === 'line' && (e.status === 'retry' || e.status === 'failed')));
});

test('a re-plan refused with DAEMON_UNREACHABLE stops the run (its lines not posted) instead of failing them; the provider that failed on its own stays struck', async () => {
  const d = fakeDaemon();
  const pl = planner(['A', 'B'], d.isDead);
  const run = runBatch({ batch: batchOf(6), lines: linesOf(6), concurrency: 2, replanRetryMs: 1 }, d.ports(pl.plan));
  await settle();
  assert.equal(d.pending.length, 2);
  // A answers its line failed (its own failure), and the daemon is gone before the re-plan reaches it
  const a = d.pending.find((p) => p.provider === 'A')!;
  d.down();
  a.open = false;
  a.resolve({ status: 'failed', job: 'job-x', detail: 'EXEC_FAILED: exit 1' });
  await settle();
  d.kill(); // then B's stream breaks too
  const s = await run;
  assert.deepEqual(s.failedProviders.map((f) => f.provider), ['A']);
  assert.equal(s.stopped?.code, 'DAEMON_UNREACHABLE');
  assert.equal(pl.calls.length, 2);
  assert.ok(s.replans.some((r) => r.refused?.startsWith('DAEMON_UNREACHABLE')));
  assert.ok(!d.events.some((e) => e.e === 'replan-refused' && e.retryInMs !== undefined), 'a gone daemon is not retried as "busy"');
  assert.equal(d.pending.length, 2, 'nothing posted after');
  assert.equal(s.failed, 0);
  // B's line whose stream broke, and the one B started in the slot A's line freed, before the run knew the daemon was
  // gone (DAEMON_UNREACHABLE: whether the daemon got it is not known, so it is not called "not posted")
  assert.equal(s.unknown, 2);
  assert.equal(s.notPosted, 4); // A's failed line, waiting for its re-plan, and the 3 never posted
  const aLine = s.perLine.find((l) => l.id === a.line.id)!;
  assert.equal(aLine.status, 'not-posted');
  assert.equal(aLine.attempts.length, 1);
  assert.match(aLine.detail!, /not posted/);
});

test('a line the stopping daemon broke off (status interrupted, JOB_INTERRUPTED) stops the run without blaming its provider', async () => {
  const d = fakeDaemon();
  const pl = planner(['A', 'B'], d.isDead);
  const run = runBatch({ batch: batchOf(4), lines: linesOf(4), concurrency: 2 }, d.ports(pl.plan));
  await settle();
  for (const p of d.pending) {
    p.open = false;
    p.resolve({ status: 'interrupted', job: `job-${p.line.id}`, detail: 'JOB_INTERRUPTED: the run was broken off because this node is stopping' });
  }
  const s = await run;
  assert.deepEqual(s.failedProviders, []);
  assert.equal(s.stopped?.code, 'JOB_INTERRUPTED');
  assert.equal(s.unknown, 2);
  assert.equal(s.notPosted, 2);
  assert.equal(pl.calls.length, 1);
});

test('a run the stopping daemon refuses (JOB_INTERRUPTED thrown: not started) stops the run, strikes no one, and leaves the line not posted', { timeout: 5_000 }, async () => {
  const d = fakeDaemon();
  const pl = planner(['A', 'B'], d.isDead);
  const run = runBatch({ batch: batchOf(4), lines: linesOf(4), concurrency: 2, replanRetryMs: 1 }, d.ports(pl.plan));
  await settle();
  assert.equal(d.pending.length, 2);
  // the daemon starts to stop (its runs are being interrupted) just as line 1 completes: the next line it is sent is
  // refused, and the line still running ends interrupted
  d.stop();
  d.complete(0);
  await settle();
  const b = d.pending[1]!;
  b.open = false;
  b.resolve({ status: 'interrupted', job: `job-${b.line.id}`, detail: 'JOB_INTERRUPTED: the run was broken off because this node is stopping' });
  const s = await run;

  assert.deepEqual(s.failedProviders, [], 'the provider the refused line was for is not struck');
  assert.ok(!d.events.some((e) => e.e === 'provider-failed' || (e.e === 'line' && (e.status === 'retry' || e.status === 'failed'))));
  assert.equal(s.stopped?.code, 'JOB_INTERRUPTED');
  assert.match(s.stopped!.message, /not started/);
  assert.equal(pl.calls.length, 1, 'nothing re-planned');
  assert.equal(s.done, 1);
  assert.equal(s.unknown, 1, 'the line the daemon broke off');
  assert.equal(s.notPosted, 2, 'the refused line (never started) and the one never sent');
  assert.equal(s.failed, 0);
  // A's next line went to the daemon when A's first completed, and was refused
  assert.equal(d.refused.length, 1);
  assert.equal(d.refused[0]!.provider, d.pending[0]!.provider);
  const refused = s.perLine.find((l) => l.id === d.refused[0]!.line.id)!;
  assert.equal(refused.status, 'not-posted', 'the refused line is not-posted');
  assert.equal(refused.attempts.length, 0, 'a run the daemon refused to start is no attempt');
  assert.match(refused.detail!, /^not posted: .*JOB_INTERRUPTED/);
});

test('daemonSideCode: only the daemon connection failing (or the daemon stopping) is the buyer’s side', () => {
  for (const c of ['DAEMON_STREAM_LOST', 'DAEMON_UNREACHABLE', 'DAEMON_NOT_ANSWERING', 'JOB_INTERRUPTED']) assert.equal(daemonSideCode(new C0Error(c, 'x')), c);
  for (const c of ['EXEC_FAILED', 'ORDER_NOT_CLAIMED', 'DAEMON_ERROR', 'NET_STREAM_FAILED']) assert.equal(daemonSideCode(new C0Error(c, 'x')), undefined);
  assert.equal(daemonSideCode(new Error('DAEMON_STREAM_LOST')), undefined);
});
