/**
 * The training worker opens each step commitment a member sends it once
 * (src/roles/trainer/worker.ts `#onCommit`, src/training/aggregator.ts
 * `offer`; docs/training.md "Epoch roots"): the signature check is the costly
 * part of opening an envelope, so one commitment costs one verify, not two.
 * (The aggregator counts it once this worker has done the step:
 * test/unit/training/aggregator.test.ts.)
 * A real worker on a two-member run, its network a stub that hands the test
 * the worker's /c0mpute/train/1 handler; verifies counted through node:crypto
 * and libsodium.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { ProtocolHandler } from '../../../src/net/protocols.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { open, seal } from '../../../src/records/envelope.js';
import { TRAIN_T, type TrainStep } from '../../../src/training/record-kinds.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { fakeClock } from '../../../src/util/clock.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P } from '../market/fixtures.js';
import { countVerifies } from '../net/fixtures/count-verifies.js';

test('a member’s step commitment is opened (its signature verified) once, and held until this worker has done that step', async () => {
  const self = P(300);
  const other = P(301);
  const t = tempDir('c0-train-commit-');
  try {
    const yaml = stringify({ name: 'pair', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 5, epochs: 1, members: [self, other].map((m, i) => ({ did: m.did, addr: `/ip4/127.0.0.1/tcp/${i + 1}` })) });
    const run = buildRun(yaml, self.signer, NOW).bundle.run;
    let handler: ProtocolHandler | undefined;
    const net = { did: self.did, handle: async (_p: string, h: ProtocolHandler) => void (handler = h), request: async () => [] };
    const w = new TrainerWorker({ signer: self.signer, did: self.did, run, addrs: {}, dir: t.dir, clock: fakeClock(NOW), net: net as never });
    await w.start();
    assert.ok(handler, 'the worker serves /c0mpute/train/1');
    const step: TrainStep = { run: run.address, view: 0, step: 0, grad: 'sha256:' + '1'.repeat(64), weights: 'sha256:' + '2'.repeat(64), lossMicro: 1, signedAt: NOW };
    const env = seal(TRAIN_T.step, step as never, other.signer);
    const oneOpen = await countVerifies(() => void open(env.bytes, TRAIN_T.step));
    assert.ok(oneOpen >= 1);
    const ctx = { peer: peerIdFromDid(other.did), signal: new AbortController().signal, send: async () => {} };
    const verifies = await countVerifies(async () => {
      await handler!([{ k: 'commit' }, env.bytes], ctx as never);
    });
    assert.equal(verifies, oneOpen, `one open of the commitment (${oneOpen} verify), not two`);
    assert.deepEqual(w.ignored, [], 'not ignored');
    // This worker has not done step 0: the commitment is held (not counted) until it has and can check the weights.
    assert.equal((w.statusView() as { contributions: Record<string, number> }).contributions[other.did], undefined, 'held, not yet counted');
    await w.stop();
  } finally {
    t.cleanup();
  }
});
