/**
 * The run directories a provider's `builtin.train-member` jobs leave under `<data dir>/train` (member-job.ts,
 * run-dirs.ts; docs/training.md "A provider's run directories"). Before, each stayed for good (about 88 KiB and 16
 * files for a 10-step run; history.keepDays did not cover it), and a member killed mid-run kept `status: training`
 * at the step it was killed at after its restart. Now a member job marks its directory (member-job.json: its input
 * hash, start and end):
 * - a run a kill left (its disk as the kill left it: a copy taken while the job runs) is ended at the next start,
 *   with what its job's receipt says (EXEC_PROVIDER_CRASHED for its run note), never a run still running here;
 * - a finished run is emptied with the job history, history.keepDays past its end, never one running or not ended,
 *   nor a directory no member job marked (a `train join` run); its mark stays as a tombstone, so the same run is
 *   not trained again over records it signed (TRAIN_RUN_EXISTS).
 * Members over an in-process network (trainer-net.ts).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { hashHex } from '../../../src/records/address.js';
import { runMemberJob } from '../../../src/roles/trainer/member-job.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { reconcileRunDirs, TrainRunDirs, TRAIN_INTERRUPTED } from '../../../src/roles/trainer/run-dirs.js';
import { DAY_MS, startHistoryPruning } from '../../../src/node/history-prune.js';
import { silentLogger } from '../../../src/util/log.js';
import { tempDir } from '../ledger/helpers.js';
import { P } from '../market/fixtures.js';
import { fakeNet, makeRun } from './trainer-net.js';

const [A, B] = [P(520), P(521)];
const runDirName = (address: string) => address.slice(7, 23);
const json = (p: string) => JSON.parse(readFileSync(p, 'utf8')) as Record<string, unknown>;
const tagOf = (frames: unknown[]) => String((frames[0] as { tag?: unknown } | undefined)?.tag ?? '');

/** Wait until `f` holds (polling), giving up after `ms`. */
async function until(what: string, f: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((res) => setTimeout(res, 10));
  }
}

/**
 * A's member job and B's worker on run `run`; B's chunks of step `holdAt` are held until `release()`. Returns the
 * provider's train dir (`root`), A's job and its input.
 */
function gang(root: string, opts: { holdAt?: number; name?: string; alone?: boolean } = {}) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const hold = opts.holdAt === undefined ? undefined : `/s${opts.holdAt}/`;
  const net = fakeNet(async (from, _to, frames) => {
    if (hold && from === B.did && tagOf(frames).includes(hold)) await gate;
    return frames;
  });
  const run = makeRun([A, B], A, { name: opts.name ?? 'dirs', stepsPerEpoch: 5, epochs: 2, timeoutMs: 60_000 });
  const input = new TextEncoder().encode(JSON.stringify({ run: Buffer.from(run.bytes).toString('hex') }));
  const steps: number[] = [];
  const ac = new AbortController();
  const host = { signer: A.signer, did: A.did, net: net.netFor(A.did), dir: root };
  const job = runMemberJob({ input, signal: ac.signal, onProgress: (p) => steps.push(p.units ?? -1), maxOutputBytes: 1 << 20, host: host as never });
  const bDir = tempDir('c0-run-dirs-b-');
  const b = new TrainerWorker({ signer: B.signer, did: B.did, run, addrs: {}, dir: bDir.dir, clock: () => Date.now(), net: net.netFor(B.did) as never, joinTimeoutMs: 10_000, statusEveryMs: 0 });
  const bDone = (async () => {
    if (opts.alone) return;
    await b.start();
    await b.join();
    await b.run();
    await b.stop();
  })();
  return { run, input, job, steps, release, abort: () => ac.abort(), dir: join(root, runDirName(run.address)), done: async () => Promise.allSettled([job, bDone]).finally(() => bDir.cleanup()) };
}

describe('a provider’s training run directories', () => {
  it('a run a kill left says `stopped` with its job’s receipt code at the next start; one still running is left alone', async () => {
    const t = tempDir('c0-run-dirs-');
    const restarted = tempDir('c0-run-dirs-after-');
    try {
      const g = gang(t.dir, { holdAt: 4 });
      // A has done steps 0–3 and waits for B's step-4 chunks: its disk now is what a kill -9 leaves
      await until('A to train up to step 4', () => g.steps.length >= 4 && existsSync(join(g.dir, 'status.json')));
      const killed = join(restarted.dir, runDirName(g.run.address));
      cpSync(g.dir, killed, { recursive: true });
      assert.equal(json(join(killed, 'status.json')).status, 'training');
      const step = json(join(killed, 'status.json')).step;
      assert.equal(json(join(killed, 'member-job.json')).endedAt, undefined, 'marked as a member job’s, not ended');
      // the restart: the provider's run note names this job (same input hash); its crash recovery signs EXEC_PROVIDER_CRASHED
      const asked: string[] = [];
      const ended = (h: string) => (asked.push(h), h === hashHex(g.input) ? { code: 'EXEC_PROVIDER_CRASHED', message: 'the provider stopped while the work ran; it ended with the process', job: 'sha256:' + 'e'.repeat(64) } : undefined);
      assert.equal(reconcileRunDirs(restarted.dir, { now: 1_234, ended, log: silentLogger() }), 1);
      const s = json(join(killed, 'status.json'));
      assert.equal(s.status, 'stopped');
      assert.deepEqual(s.stopReason, { code: 'EXEC_PROVIDER_CRASHED', message: 'the provider stopped while the work ran; it ended with the process' });
      assert.equal(s.step, step, 'the step it stopped at is kept');
      assert.equal(json(join(killed, 'member-job.json')).endedAt, 1_234);
      assert.equal(reconcileRunDirs(restarted.dir, { now: 5_678, ended, log: silentLogger() }), 0, 'once');
      // the run still running in this process is not touched
      assert.equal(reconcileRunDirs(t.dir, { now: 1_234, ended, log: silentLogger() }), 0);
      assert.equal(json(join(g.dir, 'status.json')).status, 'training');
      g.release();
      const out = JSON.parse(new TextDecoder().decode(await g.job)) as { status: string };
      assert.equal(out.status, 'done');
      await g.done();
      assert.equal(json(join(g.dir, 'status.json')).status, 'done');
      assert.ok(Number.isSafeInteger(json(join(g.dir, 'member-job.json')).endedAt), 'the job’s end is marked');
      assert.deepEqual(asked, [hashHex(g.input)]);
    } finally {
      t.cleanup();
      restarted.cleanup();
    }
  });

  it('a run without a receipt known here is TRAIN_INTERRUPTED; a run that was not started as a member job is left', () => {
    const t = tempDir('c0-run-dirs-');
    try {
      const mk = (name: string, mark?: Record<string, unknown>) => {
        mkdirSync(join(t.dir, name, 'steps'), { recursive: true });
        writeFileSync(join(t.dir, name, 'status.json'), JSON.stringify({ status: 'training', step: 4 }));
        if (mark) writeFileSync(join(t.dir, name, 'member-job.json'), JSON.stringify(mark));
      };
      mk('aaaa', { inputHash: 'sha256:' + 'a'.repeat(64), startedAt: 1 });
      mk('bbbb'); // a `train join` run, maybe running in another process
      assert.equal(reconcileRunDirs(t.dir, { now: 9, ended: () => undefined, log: silentLogger() }), 1);
      assert.deepEqual(json(join(t.dir, 'aaaa', 'status.json')), { status: 'stopped', step: 4, stopReason: { code: TRAIN_INTERRUPTED, message: 'the node stopped while this run was training, and no receipt of its job is known here' } });
      assert.deepEqual(json(join(t.dir, 'bbbb', 'status.json')), { status: 'training', step: 4 });
    } finally {
      t.cleanup();
    }
  });

  it('a run the worker had stopped before the kill says its job’s receipt code, the worker’s beside it; a done run stays done (QA ffTrainDay2 F6)', () => {
    // before: the worker stopped the run (EXEC_BUYER_GONE), the node was killed before the job's receipt, the recovery
    // signed EXEC_PROVIDER_CRASHED, and the status kept EXEC_BUYER_GONE while the log said it agreed with the receipt
    const t = tempDir('c0-run-dirs-');
    try {
      const mk = (name: string, status: Record<string, unknown>) => {
        mkdirSync(join(t.dir, name, 'steps'), { recursive: true });
        writeFileSync(join(t.dir, name, 'status.json'), JSON.stringify(status));
        writeFileSync(join(t.dir, name, 'member-job.json'), JSON.stringify({ inputHash: 'sha256:' + name.repeat(16), startedAt: 1 }));
      };
      const gone = { code: 'EXEC_BUYER_GONE', message: 'the buyer closed the stream' };
      const crashed = { code: 'EXEC_PROVIDER_CRASHED', message: 'the provider stopped while the work ran; it ended with the process' };
      mk('aaaa', { status: 'stopped', step: 27, stopReason: gone });
      mk('bbbb', { status: 'done', step: 9 });
      mk('cccc', { status: 'stopped', step: 3, stopReason: crashed });
      const lines: Array<{ msg: string; workerCode?: string }> = [];
      const log = { ...silentLogger(), warn: (f: Record<string, unknown>, msg: string) => void lines.push({ msg, ...(typeof f.workerCode === 'string' ? { workerCode: f.workerCode } : {}) }) };
      assert.equal(reconcileRunDirs(t.dir, { now: 9, ended: () => crashed, log: log as never }), 3);
      assert.deepEqual(json(join(t.dir, 'aaaa', 'status.json')), { status: 'stopped', step: 27, stopReason: { ...crashed, worker: gone } });
      assert.deepEqual(json(join(t.dir, 'bbbb', 'status.json')), { status: 'done', step: 9 });
      assert.deepEqual(json(join(t.dir, 'cccc', 'status.json')), { status: 'stopped', step: 3, stopReason: crashed });
      assert.equal(lines[0]!.workerCode, 'EXEC_BUYER_GONE');
      assert.match(lines[0]!.msg, /had stopped, and the node stopped before its job’s receipt was signed: its status now says the receipt’s code/);
      assert.match(lines[1]!.msg, /had finished, but the node stopped before its job’s receipt was signed: the status says done, the job’s receipt says failed/);
      for (const n of ['aaaa', 'bbbb', 'cccc']) assert.deepEqual(json(join(t.dir, n, 'member-job.json')).ended, crashed);
    } finally {
      t.cleanup();
    }
  });

  it('a finished run goes with the job history past history.keepDays, its mark kept; never one running, not ended, or not a member job’s; the run is then not trained again', async () => {
    const t = tempDir('c0-run-dirs-');
    try {
      const g = gang(t.dir, { name: 'pruned' });
      const out = JSON.parse(new TextDecoder().decode(await g.job)) as { status: string };
      assert.equal(out.status, 'done');
      await g.done();
      const before = readdirSync(g.dir).sort();
      assert.ok(before.includes('steps') && before.includes('epochs') && before.includes('status.json') && before.includes('member-job.json'), before.join(' '));
      const endedAt = json(join(g.dir, 'member-job.json')).endedAt as number;
      // a run no member job marked, and a marked run not ended (interrupted, not yet reconciled): kept
      mkdirSync(join(t.dir, 'joined-by-hand', 'steps'), { recursive: true });
      mkdirSync(join(t.dir, 'not-ended', 'steps'), { recursive: true });
      writeFileSync(join(t.dir, 'not-ended', 'member-job.json'), JSON.stringify({ inputHash: 'sha256:' + 'b'.repeat(64), startedAt: 1 }));
      const dirs = new TrainRunDirs(t.dir, () => endedAt + 31 * DAY_MS);
      assert.deepEqual(await dirs.pruneHistory(endedAt), { removed: 0, more: false, after: 'not-ended' }, 'not past keepDays yet');
      // through the history pass, 30 days after the end
      const pass = startHistoryPruning({ stores: [dirs], keepDays: 30, clock: () => endedAt + 30 * DAY_MS + 1, log: silentLogger(), firstMs: 1e9, everyMs: 1e9 });
      assert.equal(await pass.pass(), 1);
      await pass.stop();
      assert.deepEqual(readdirSync(g.dir), ['member-job.json'], 'emptied, its mark kept');
      assert.equal(json(join(g.dir, 'member-job.json')).prunedAt, endedAt + 31 * DAY_MS);
      assert.ok(existsSync(join(t.dir, 'joined-by-hand', 'steps')));
      assert.ok(existsSync(join(t.dir, 'not-ended', 'steps')));
      assert.equal((await dirs.pruneHistory(endedAt + 30 * DAY_MS + 1)).removed, 0, 'once');
      // the same run bought again: refused, not trained over the records it signed and dropped
      const again = gang(t.dir, { name: 'pruned', alone: true });
      assert.equal(again.run.address, g.run.address);
      await assert.rejects(again.job, { code: 'TRAIN_RUN_EXISTS' });
      again.abort();
      await again.done();
    } finally {
      t.cleanup();
    }
  });

  it('a run in progress is never dropped, however old its mark', async () => {
    const t = tempDir('c0-run-dirs-');
    try {
      const g = gang(t.dir, { holdAt: 2, name: 'running' });
      await until('A to train', () => g.steps.length >= 2);
      // even a mark that says it ended long ago (a second job's, say): the job running here holds it
      const mark = json(join(g.dir, 'member-job.json'));
      writeFileSync(join(g.dir, 'member-job.json'), JSON.stringify({ ...mark, endedAt: 1 }));
      assert.equal((await new TrainRunDirs(t.dir, () => 100 * DAY_MS).pruneHistory(50 * DAY_MS)).removed, 0);
      assert.ok(existsSync(join(g.dir, 'steps')));
      g.release();
      await g.job;
      await g.done();
    } finally {
      t.cleanup();
    }
  });
});
