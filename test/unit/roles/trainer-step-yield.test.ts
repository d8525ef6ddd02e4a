/**
 * A step of a large model yields to the event loop inside it, not only between steps (src/training/model.ts
 * lossAndGradAsync, src/roles/trainer/worker.ts #between; review s43 R8 F2). Before, the gradient of a step was one
 * synchronous block: at the member-job bound (4 194 304 weights) 7–15 s in which the node's API, libp2p and the job's
 * keepalive did not run, so a legal job failed EXEC_PROVIDER_SILENT. Now the event loop runs during step 0 and closing
 * the mailbox then (a job's abort, `stop()`) ends the run inside that step. Counts, not times, are asserted.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { C0Error } from '../../../src/errors.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { TrainerWorker, type TrainerEvent } from '../../../src/roles/trainer/worker.js';
import { iris } from '../../../src/training/data.js';
import { initWeights, lossAndGrad, lossAndGradAsync } from '../../../src/training/model.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P } from '../market/fixtures.js';
import { fakeNet } from './trainer-net.js';

const layers = [4, 512, 512, 3];

describe('a step of a large model yields inside it', () => {
  it('the event loop runs during step 0, and the mailbox closed then ends the run before any step is done', async () => {
    const A = P(540);
    const d = tempDir('c0-step-yield-');
    try {
      const run = buildRun(stringify({ name: 'big', model: { layers }, seed: 1, batch: 64, stepsPerEpoch: 2, epochs: 1, timeoutMs: 2_000, members: [{ did: A.did, addr: '/ip4/127.0.0.1/tcp/1' }] }), A.signer, NOW).bundle.run;
      const events: TrainerEvent[] = [];
      const w = new TrainerWorker({ signer: A.signer, did: A.did, run, addrs: {}, dir: d.dir, clock: () => Date.now(), net: fakeNet().netFor(A.did) as never, onEvent: (e) => events.push(e) });
      await w.start();
      await w.join();
      // a macrotask ticker: the 8th tick closes the mailbox (the worker yields once before a step, so only yields inside step 0 get there)
      let ticks = 0;
      const tick = () => {
        if (++ticks === 8) w.box.close(new C0Error('EXEC_ABORTED', 'the job was stopped'));
        else if (!w.box.closedBy) setImmediate(tick);
      };
      setImmediate(tick);
      await assert.rejects(w.run(), (e: unknown) => e instanceof C0Error && e.code === 'EXEC_ABORTED');
      assert.equal(events.filter((e) => e.e === 'step').length, 0, 'ended inside step 0');
      assert.equal(w.stopReason?.code, 'EXEC_ABORTED');
      await w.stop();
    } finally {
      d.cleanup();
    }
  });

  it('lossAndGradAsync pauses in blocks and is bit for bit lossAndGrad', async () => {
    const shape = { layers };
    const w = initWeights(shape, 3);
    const t = iris().train;
    const batch = 32;
    const x = t.x.subarray(0, batch * 4);
    const y = t.y.subarray(0, batch);
    let pauses = 0;
    const a = await lossAndGradAsync(shape, w, x, y, batch, async () => void pauses++);
    const b = lossAndGrad(shape, w, x, y, batch);
    assert.ok(pauses >= 10, `${pauses} pauses`);
    assert.equal(a.loss, b.loss);
    assert.deepEqual(Buffer.from(a.grad.buffer), Buffer.from(b.grad.buffer));
  });
});
