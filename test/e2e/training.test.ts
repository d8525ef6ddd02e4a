/**
 * Data-parallel training across real worker processes over libp2p
 * (docs/training.md): three `c0mpute train join` processes train the Iris MLP
 * to identical weights equal to the single-process run, with witnessed epoch
 * roots a step commitment verifies against; a flooding non-member is refused;
 * a worker killed mid-epoch is dropped and the run continues from the last
 * committed epoch.
 */
import '../../src/polyfill.js';
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { flood, setupTraining, spawnWorker, workerRunDir, workerStatus } from '../../src/devnet/training-scenario.js';
import { BIN, c0mpute, waitFor } from './node-helpers.js';

/** The last step a `train join --json` worker reported on stdout (-1 before the first). */
const lastStep = (out: string): number => {
  let step = -1;
  for (const line of out.split('\n')) {
    if (!line.startsWith('{"e":"step"')) continue;
    try {
      step = Math.max(step, (JSON.parse(line) as { step: number }).step);
    } catch {
      /* a line still being written */
    }
  }
  return step;
};
const exited = (c: ChildProcess): Promise<number> => new Promise((r) => (c.exitCode !== null ? r(c.exitCode) : c.once('exit', (code) => r(code ?? 128))));

interface Status {
  status: string;
  step: number;
  weights: string;
  accuracy?: number;
  baseline?: number;
  view: number;
  members: string[];
  dropped: string[];
  epochs: Array<{ epoch: number; view: number; root: string; witnesses: string[] }>;
  ignored: { count: number; recent: Array<{ code: string; from: string }> };
}

describe('training across worker processes', () => {
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('three workers: identical weights equal to the single-process run, above the baseline; witnessed roots verify; a flooder is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'c0-train-'));
    dirs.push(dir);
    const s = await setupTraining(dir, { epochs: 3, stepsPerEpoch: 8, timeoutMs: 15_000 });
    const procs = s.workers.map((_, i) => spawnWorker(BIN, s, i));
    children.push(...procs.map((p) => p.child));
    await waitFor('training to start', () => (workerStatus(s, 0) as Status | undefined)?.status === 'training', 60_000);
    const f = await flood(s, 0, 5);
    // train/1 admits only the run's members: the flooder's commitments are refused before they are read
    assert.equal(f.sent, 0);
    assert.deepEqual(f.refused, { TRAIN_NOT_MEMBER: 5 });
    const codes = await Promise.all(procs.map((p) => exited(p.child)));
    assert.deepEqual(codes, [0, 0, 0], procs.map((p) => p.out().slice(-2000)).join('\n---\n'));
    const st = s.workers.map((_, i) => workerStatus(s, i) as unknown as Status);
    // The commands below only read the run's files (no daemon, no store): they run side by side, each checked in turn.
    const rd = workerRunDir(s, 1);
    const [ref, v, wrong, good, status] = await Promise.all([
      c0mpute(s.workers[0]!.dir, ['train', 'reference', s.bundlePath, '--json']),
      c0mpute(s.workers[1]!.dir, ['train', 'verify', s.bundlePath, join(rd, 'epochs', '1.json'), join(rd, 'steps', '9.cbor')]),
      c0mpute(s.workers[1]!.dir, ['train', 'verify', s.bundlePath, join(rd, 'epochs', '0.json'), join(rd, 'steps', '9.cbor')]),
      c0mpute(s.workers[1]!.dir, ['train', 'verify', s.bundlePath, join(rd, 'epochs', '1.json'), join(rd, 'steps', '9.cbor'), '--json']),
      c0mpute(s.workers[0]!.dir, ['train', 'status']),
    ]);
    const refWeights = (JSON.parse(ref.out) as { weights: string }).weights;
    for (const x of st) {
      assert.equal(x.status, 'done');
      assert.equal(x.weights, refWeights);
      assert.ok(x.accuracy! >= 0.8 && x.accuracy! > x.baseline! + 0.3, `accuracy ${x.accuracy}`);
      assert.equal(x.epochs.length, 3);
      for (const e of x.epochs) assert.equal(e.witnesses.length, 2);
      assert.deepEqual(x.epochs.map((e) => e.root), st[0]!.epochs.map((e) => e.root));
    }
    assert.ok(st[0]!.ignored.recent.every((i) => i.from !== f.did), 'nothing of the flooder reached the aggregator');
    // A worker's step commitment verifies against the epoch root; the flooder's steps are in no root.
    assert.equal(v.code, 0, v.err + v.out);
    assert.match(v.out, /included: step 9/);
    assert.equal(wrong.code, 1);
    assert.match(wrong.out, /TRAIN_VERIFY_OUT_OF_EPOCH/);
    // A tampered proof does not verify.
    const proof = (JSON.parse(good.out) as { proof: { path: Array<{ side: string; hash: string }> } }).proof;
    proof.path[0]!.hash = 'sha256:' + 'ee'.repeat(32);
    writeFileSync(join(dir, 'bad-proof.json'), JSON.stringify(proof));
    const tampered = await c0mpute(s.workers[1]!.dir, ['train', 'verify', s.bundlePath, join(rd, 'epochs', '1.json'), join(rd, 'steps', '9.cbor'), '--proof', join(dir, 'bad-proof.json')]);
    assert.equal(tampered.code, 1);
    assert.match(tampered.out, /TRAIN_PROOF_INVALID/);
    // Status shows the end state, each member's contribution and the roots.
    assert.equal(status.code, 0, status.err);
    assert.match(status.out, /: done, view 0/);
    assert.equal((status.out.match(/step commitments counted/g) ?? []).length, 3);
    assert.match(status.out, /epoch 2: root sha256:/);
    assert.doesNotMatch(status.out, /ignored step commitments/, "the flooder's commitments were refused, none ignored");
  });

  it('a worker killed mid-epoch is noticed, recorded as dropped, and the others finish from the last committed epoch', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'c0-train-'));
    dirs.push(dir);
    const s = await setupTraining(dir, { epochs: 3, stepsPerEpoch: 8, timeoutMs: 3_000 });
    const procs = s.workers.map((_, i) => spawnWorker(BIN, s, i));
    children.push(...procs.map((p) => p.child));
    await waitFor('worker 3 in its second epoch', () => ((workerStatus(s, 2) as Status | undefined)?.step ?? -1) >= 11, 120_000, 50);
    procs[2]!.child.kill('SIGKILL');
    const codes = await Promise.all(procs.slice(0, 2).map((p) => exited(p.child)));
    assert.deepEqual(codes, [0, 0], procs.map((p) => p.out().slice(-2000)).join('\n---\n'));
    const st = [0, 1].map((i) => workerStatus(s, i) as unknown as Status);
    const gone = s.workers[2]!.did;
    for (const x of st) {
      assert.equal(x.status, 'done');
      assert.equal(x.view, 1);
      assert.deepEqual(x.dropped, [gone]);
      assert.ok(!x.members.includes(gone));
      assert.deepEqual(x.epochs.map((e) => e.epoch), [0, 1, 2]);
      assert.equal(x.epochs[0]!.view, 0);
      assert.equal(x.epochs[2]!.view, 1);
      assert.ok(x.accuracy! > x.baseline! + 0.3);
    }
    assert.equal(st[0]!.weights, st[1]!.weights);
    assert.deepEqual(st[0]!.epochs.map((e) => e.root), st[1]!.epochs.map((e) => e.root));
  });

  it('with onFailure stop, a killed worker stops the run cleanly: no epoch committed after the failure', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'c0-train-'));
    dirs.push(dir);
    const s = await setupTraining(dir, { workers: 2, epochs: 3, stepsPerEpoch: 6, timeoutMs: 2_000, onFailure: 'stop' });
    const procs = s.workers.map((_, i) => spawnWorker(BIN, s, i));
    children.push(...procs.map((p) => p.child));
    // its own step events (stdout, --json), not status.json: that file is written at most every 250 ms while steps run
    await waitFor('worker 2 in its second epoch', () => lastStep(procs[1]!.out()) >= 7, 120_000, 10);
    procs[1]!.child.kill('SIGKILL');
    const code = await exited(procs[0]!.child);
    assert.notEqual(code, 0);
    const x = workerStatus(s, 0) as unknown as Status & { stopReason: { code: string } };
    assert.equal(x.status, 'stopped');
    assert.equal(x.stopReason.code, 'TRAIN_STOPPED');
    assert.deepEqual(x.epochs.map((e) => e.epoch), [0]);
    assert.equal(x.view, 0);
  });
});
