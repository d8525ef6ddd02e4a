/**
 * A member holds epoch state (an EpochAggregator) only for a bounded window
 * of epochs, and lets go of it once an epoch is committed or its view ends
 * (src/roles/trainer/worker.ts, src/roles/trainer/epoch-commit.ts;
 * docs/training.md "Epoch roots"). Before, a witness request for any epoch —
 * current + 1 … current + 100 000 — made the member create and keep an
 * aggregator for it, and none was ever dropped: one hostile member could grow
 * every other member's memory without bound.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { seal } from '../../../src/records/envelope.js';
import { electCoordinator } from '../../../src/training/aggregator.js';
import { TRAIN_T, type TrainEpoch } from '../../../src/training/record-kinds.js';
import { TRAIN_PROTOCOL } from '../../../src/training/transport.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { tempDir } from '../ledger/helpers.js';
import { P } from '../market/fixtures.js';
import { fakeNet, makeRun, runAll } from './trainer-net.js';

const [A, B, H] = [P(520), P(521), P(522)];
const members = [A, B, H];
const ZERO = `sha256:${'0'.repeat(64)}`;

describe('epoch state a member holds', () => {
  it('a witness request for an epoch ahead of the window is refused at once and leaves no aggregator behind', { timeout: 20_000 }, async () => {
    const run = makeRun(members, A, { epochs: 10_000, timeoutMs: 300 });
    const sorted = [...run.record.members];
    const net = fakeNet();
    const d = tempDir('c0-train-future-');
    const w = new TrainerWorker({ signer: A.signer, did: A.did, run, addrs: {}, dir: d.dir, clock: () => Date.now(), net: net.netFor(A.did) as never });
    try {
      await w.start();
      const spe = run.record.stepsPerEpoch;
      // epochs ahead of A's current one (0) that H is the elected coordinator of
      const ahead: number[] = [];
      for (let e = 2; ahead.length < 60; e++) if (electCoordinator(run.address, e, sorted) === H.did) ahead.push(e);
      const codes = await Promise.all(
        ahead.map(async (epoch) => {
          const rec: TrainEpoch = { run: run.address, epoch, view: 0, fromStep: epoch * spe, toStep: epoch * spe + spe - 1, members: sorted, leaves: sorted.length * spe, root: ZERO, weights: ZERO, signedAt: Date.now() };
          const env = seal(TRAIN_T.epoch, rec as never, H.signer);
          try {
            await net.deliver(H.did, A.did, TRAIN_PROTOCOL, [{ k: 'witness' }, env.bytes]);
            return 'countersigned';
          } catch (e) {
            return e instanceof C0Error ? e.code : String(e);
          }
        }),
      );
      assert.deepEqual(new Set(codes), new Set(['TRAIN_EPOCH_OUT_OF_WINDOW']));
      assert.ok(w.heldEpochs().length <= 2, `${w.heldEpochs().length} aggregators held: ${w.heldEpochs().slice(0, 5).join(', ')}…`);
    } finally {
      await w.stop();
      d.cleanup();
    }
  });

  it('aggregators of committed epochs are let go: a run ends holding at most the last one', { timeout: 20_000 }, async () => {
    const run = makeRun(members, A, { epochs: 4 });
    const { workers, res } = await runAll(members, run, fakeNet());
    for (const [i, w] of workers.entries()) {
      assert.equal(res[i]!.status, 'fulfilled', String((res[i] as PromiseRejectedResult).reason));
      assert.ok(w.heldEpochs().length <= 1, `${w.heldEpochs().join(', ')}`);
    }
  });
});
