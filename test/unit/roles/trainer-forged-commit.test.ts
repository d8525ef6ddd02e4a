/**
 * A member that sends a step commitment for a step the others have not
 * reached yet, with weights it never reached, cannot knock them out
 * (src/training/aggregator.ts held commitments, src/roles/trainer/worker.ts;
 * docs/training.md "Epoch roots", "Failure"): the commitment is held, not
 * counted, decided once each has done that step, found forged
 * (TRAIN_COMMIT_FORGED) as the signer's fault, and the signer is dropped; the
 * honest members finish. Three real workers on an in-process network.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { open, seal } from '../../../src/records/envelope.js';
import { TRAIN_T, type TrainStep } from '../../../src/training/record-kinds.js';
import { P } from '../market/fixtures.js';
import { fakeNet, makeRun, runAll, type FakeNet, type Frames } from './trainer-net.js';

const [A, B, H] = [P(500), P(501), P(502)];
const members = [A, B, H];

test('a forged commitment for a step not reached yet: held, found forged when reached, the signer dropped, the others finish', async () => {
  const run = makeRun(members, A);
  let sent = false;
  const net: FakeNet = fakeNet(async (from, _to, frames: Frames) => {
    const head = frames[0] as { k?: string };
    if (!sent && from === H.did && head.k === 'commit') {
      const s = open(frames[1] as Uint8Array, TRAIN_T.step).record as TrainStep;
      if (s.step === 3) {
        // with its real step 3, H also signs step 4 (not done by anyone yet) over weights nobody will reach
        sent = true;
        const forged = seal(TRAIN_T.step, { ...s, step: 4, weights: 'sha256:' + 'ee'.repeat(32) } as never, H.signer).bytes;
        for (const d of [A.did, B.did]) await net.deliver(H.did, d, '/c0mpute/train/1', [{ k: 'commit' }, forged]);
      }
    }
    return frames;
  });
  const { workers, res } = await runAll(members, run, net);
  assert.ok(sent);
  for (const [i, w] of workers.slice(0, 2).entries()) {
    assert.equal(res[i]!.status, 'fulfilled', String((res[i] as PromiseRejectedResult).reason));
    assert.equal(w.status, 'done');
    assert.equal(w.epochs.length, run.record.epochs);
    assert.deepEqual(
      w.views.map((v) => [v.dropped, v.cause]),
      [[[H.did], 'TRAIN_COMMIT_FORGED']],
      'H dropped for its forged commitment',
    );
    assert.ok(w.ignored.some((g) => g.code === 'TRAIN_COMMIT_FORGED' && g.from === H.did && g.step === 4));
  }
  assert.equal(workers[0]!.statusView().weights, workers[1]!.statusView().weights);
});
