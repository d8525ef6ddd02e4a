/**
 * Restarting a run on the same data directory keeps its signed evidence
 * (src/roles/trainer/worker.ts, src/roles/trainer/epoch-commit.ts `Witness`;
 * docs/training.md "Starting a run"): a worker refuses a run directory that
 * already holds step or epoch commitments or countersignatures
 * (TRAIN_RUN_EXISTS, with the path) and overwrites nothing; a witness keeps
 * every root it countersigned on disk and refuses a second root for the same
 * (view, epoch), also after a restart (TRAIN_WITNESS_CONFLICT). Before, a
 * second `train join` started from epoch 0, overwrote steps/ and epochs/, and
 * each witness countersigned a second root for (view 0, epoch 0).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { seal } from '../../../src/records/envelope.js';
import { electCoordinator } from '../../../src/training/aggregator.js';
import { TRAIN_T, type TrainEpoch } from '../../../src/training/record-kinds.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { Witness } from '../../../src/roles/trainer/epoch-commit.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P } from '../market/fixtures.js';
import { fakeNet, makeRun } from './trainer-net.js';

const [A, B, H] = [P(500), P(501), P(502)];
const members = [A, B, H];

describe('restarting a run', () => {
  it('a worker refuses a run directory holding the run’s evidence, and changes nothing in it', async () => {
    const run = makeRun(members, A, { epochs: 1, timeoutMs: 1000 });
    const dirs = members.map(() => tempDir('c0-train-restart-'));
    try {
      const net = fakeNet();
      const make = () => members.map((m, i) => new TrainerWorker({ signer: m.signer, did: m.did, run, addrs: {}, dir: dirs[i]!.dir, clock: () => Date.now(), net: net.netFor(m.did) as never, joinTimeoutMs: 10_000 }));
      const workers = make();
      for (const w of workers) await w.start();
      await Promise.all(workers.map((w) => w.join()));
      await Promise.all(workers.map((w) => w.run()));
      for (const w of workers) await w.stop();
      const snapshot = (d: string) => ['steps', 'epochs', 'witnessed'].flatMap((s) => readdirSync(join(d, s)).map((f) => [`${s}/${f}`, readFileSync(join(d, s, f)).toString('hex')]));
      const before = dirs.map((d) => snapshot(d.dir));
      assert.ok(before.every((s) => s.length > 0));
      assert.ok(before.some((s) => s.some(([f]) => f!.startsWith('witnessed/'))), 'countersignatures are kept');
      for (const [i, m] of members.entries()) {
        assert.throws(
          () => new TrainerWorker({ signer: m.signer, did: m.did, run, addrs: {}, dir: dirs[i]!.dir, clock: () => Date.now(), net: net.netFor(m.did) as never }),
          (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_RUN_EXISTS' && e.message.includes(dirs[i]!.dir),
        );
      }
      assert.deepEqual(dirs.map((d) => snapshot(d.dir)), before);
    } finally {
      for (const d of dirs) d.cleanup();
    }
  });

  it('a witness restarted on its directory refuses a second root for a (view, epoch) it countersigned', async () => {
    const run = makeRun(members, A);
    const dids = members.map((m) => m.did).sort();
    const coord = [A, B, H].find((m) => m.did === electCoordinator(run.address, 0, dids))!;
    const me = members.find((m) => m !== coord)!;
    const t = tempDir('c0-train-witness-');
    try {
      const party = { runAddr: run.address, rec: run.record, did: me.did, signer: me.signer, clock: () => NOW, mono: () => 0, live: () => ({ wire: undefined as never, view: 0, members: dids, dropped: [] }), ownWeights: () => undefined, agg: () => undefined as never };
      const root = (b: string) => 'sha256:' + b.repeat(64);
      const epoch = (r: string) => seal(TRAIN_T.epoch, { run: run.address, epoch: 0, view: 0, fromStep: 0, toStep: 2, members: dids, leaves: 9, root: r, weights: root('c'), signedAt: NOW } satisfies TrainEpoch as never, coord.signer).bytes;
      new Witness(party, t.dir).remember(0, 0, root('a'));
      const again = new Witness(party, t.dir);
      await assert.rejects(again.countersign(coord.did, epoch(root('b'))), (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_WITNESS_CONFLICT');
    } finally {
      t.cleanup();
    }
  });
});
