/**
 * A coordinator that is only silent (SIGSTOP, a long GC pause, a stalled VM) is not a crashed one (docs/pools.md "A
 * coordinator that crashes", "Failover and epoch changes"). Member A coordinates a job member B runs; A stops
 * answering for longer than 3 × livenessMs while B runs it, so the others count A gone; then A resumes. The pause is
 * simulated in member-rig.ts: every call to or from A fails while it is paused, and the reply to the call A made
 * before it (its `run`) reaches A only when it resumes. The fake clock stands for the time the pause took.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { createExecutor, type Executor } from '../../../src/roles/provider/executors.js';
import type { PoolMemberDeps, PoolReply } from '../../../src/roles/pool-member/member.js';
import { Rig, MEMBERS, clock, ctx, finish, jobChosen, offer, tallyOf, type World } from './member-rig.js';

const rig = new Rig();
const [A, B, C] = MEMBERS as [string, string, string];

/** A world where A can be paused and B's runs wait for `release` (B is still running the job). */
async function pausable(name: string, o: { breaks?: boolean } = {}) {
  const paused = { on: false };
  let resume!: () => void;
  const resumed = new Promise<void>((res) => (resume = res));
  let release!: () => void;
  const released = new Promise<void>((res) => (release = res));
  let started!: () => void;
  const running = new Promise<void>((res) => (started = res));
  const base = createExecutor({ type: 'builtin', name: 'builtin.sha256' });
  let ended!: () => void;
  const done = new Promise<void>((res) => (ended = res));
  const gated: Executor = { kind: 'builtin', run: async (c) => (started(), await released, base.run(c).finally(ended)) };
  const w = await rig.world(name, {
    // the job's budget (min(timeoutMs, deadline, memberTimeoutMs)) is 30 s of the fake clock
    options: { memberTimeoutMs: 30_000 },
    extra: (did) => (did === B ? ({ executor: () => gated } as Partial<PoolMemberDeps>) : {}),
    intercept: async (from, to, frame): Promise<PoolReply | undefined> => {
      if (paused.on && (from === A || to === A)) throw new C0Error('NET_TIMEOUT', 'A is paused');
      if (from === A && frame.op === 'run') {
        const reply = await w.members.get(to)!.serve(frame, from);
        await resumed; // a paused process reads the reply only once it runs again
        // …or finds its stream reset meanwhile (the member's answer linger ran out, its connection dropped)
        if (o.breaks) throw new C0Error('NET_STREAM_FAILED', 'the stream was reset');
        return reply;
      }
      return undefined;
    },
  });
  const jj = jobChosen((m) => m === B);
  return { w, paused, resume, release, running, done, ...jj };
}

async function agree(w: World, want: { completed: number; failed: number; sum: number }): Promise<Array<Record<string, number>>> {
  const failures: Array<Record<string, number>> = [];
  for (const m of MEMBERS) {
    const t = await tallyOf(w.members.get(m)!);
    assert.deepEqual([t.dispatched, t.completed, t.failed], [1, want.completed, want.failed], `${m.slice(-6)}'s tally`);
    assert.ok(Math.abs(t.sum - want.sum) < 1e-12, `${m.slice(-6)}: earned ${t.sum}`);
    failures.push(((await w.members.get(m)!.status()) as { failures: Record<string, number> }).failures);
  }
  return failures;
}

describe('a paused coordinator is not a crashed one', () => {
  after(() => rig.close());

  test('paused 12 s while the member it chose still runs the job: nobody fails it, it completes, one receipt, every member’s tally agrees', async () => {
    const { w, paused, resume, release, running, job: j, input } = await pausable('paused-short');
    const a = w.members.get(A)!;
    const o = offer(j, A);
    const run = a.run(j, o, ctx(input));
    await running;
    paused.on = true;
    clock.advance(12_000);
    // B (the member running the job for A) and C both count A gone, and each would be elected
    for (const m of [B, C]) assert.equal(w.members.get(m)!.live().includes(A), false);
    for (const m of [B, C]) assert.equal(await w.members.get(m)!.recover(), 0, `${m.slice(-6)} leaves A's dispatch alone`);
    assert.equal(w.published.length, 0, 'no POOL_COORDINATOR_LOST receipt');
    paused.on = false;
    resume();
    release();
    const rec = await finish(w, a, j, o, A, run);
    assert.equal(rec.record.status, 'completed');
    const receipts = [...w.published.map((p) => p.rec), ...[...w.kept.values()].flatMap((k) => [...k.values()])].filter((x) => x.record.job === j.address);
    assert.equal(receipts.length, 1, 'the pool signed one receipt for the job');
    const failures = await agree(w, { completed: 1, failed: 0, sum: 0.009 });
    assert.deepEqual(failures, [{}, {}, {}]);
  });

  test('paused within its budget, and its stream to the member broke meanwhile: asked again, the member hands over its answer (not run again); it completes, one receipt, nobody failed', async () => {
    const { w, paused, resume, release, running, job: j, input } = await pausable('paused-broken', { breaks: true });
    const a = w.members.get(A)!;
    const o = offer(j, A);
    const run = a.run(j, o, ctx(input));
    await running;
    paused.on = true;
    clock.advance(20_000);
    release();
    paused.on = false;
    resume();
    const rec = await finish(w, a, j, o, A, run);
    assert.equal(rec.record.status, 'completed', JSON.stringify(rec.record.failure));
    const failures = await agree(w, { completed: 1, failed: 0, sum: 0.009 });
    assert.deepEqual(failures, [{}, {}, {}]);
  });

  test('paused past its dispatch’s budget: left alone while its member runs the job, failed once it does not; the resumed coordinator signs no completed receipt, and every member counts one failed job', async () => {
    const { w, paused, resume, release, running, done, job: j, input } = await pausable('paused-long');
    const a = w.members.get(A)!;
    const o = offer(j, A);
    const run = a.run(j, o, ctx(input));
    await running;
    paused.on = true;
    clock.advance(40_000); // past the 30 s budget and the 3 × livenessMs after it
    for (const m of [B, C]) assert.equal(await w.members.get(m)!.recover(), 0, `${m.slice(-6)}: B still runs it`);
    assert.equal(w.published.length, 0);
    release();
    // B has finished; A is still silent: now the dispatch is failed, once
    await done;
    await new Promise((res) => setTimeout(res, 20));
    assert.equal(await w.members.get(B)!.recover(), 1);
    assert.equal(await w.members.get(C)!.recover(), 0, 'closed on C by B’s `closed`');
    assert.deepEqual(w.published.map((p) => [p.by, p.rec.record.status, p.rec.record.failure?.code]), [[B, 'failed', 'POOL_COORDINATOR_LOST']]);
    paused.on = false;
    resume();
    const rec = await finish(w, a, j, o, A, run);
    assert.equal(rec.record.status, 'failed', 'output that came back after the budget is not delivered as completed');
    assert.equal(rec.record.failure?.code, 'POOL_MEMBER_TIMEOUT');
    const failures = await agree(w, { completed: 0, failed: 1, sum: 0 });
    assert.equal(new Set(failures.map((f) => JSON.stringify(f))).size, 1, `every member counts the same failure: ${JSON.stringify(failures)}`);
  });
});
