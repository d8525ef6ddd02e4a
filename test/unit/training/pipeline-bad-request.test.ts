/**
 * A pipeline stage checks its request's own fields before it computes or forwards (src/training/pipeline-net.ts
 * serveStage; docs/training.md "Pipeline"): an `mb` that is not a micro-batch number, or activations that are not a
 * whole number of 8-byte values, are the caller's PIPELINE_BAD_REQUEST. Before, `mb: "x"` was forwarded as NaN and the
 * failure to send it was answered PIPELINE_NEXT_STAGE_FAILED naming the next stage, and a 13-byte payload was refused
 * TRAIN_WEIGHTS_INVALID. Real libp2p on 127.0.0.1: a driver, stage 0 and stage 1.
 */
import '../../../src/polyfill.js';
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer } from '../../../src/records/index.js';
import type { CborValue } from '../../../src/records/cbor.js';
import { createNetwork, type Network } from '../../../src/net/node.js';
import { initWeights, weightsBytes } from '../../../src/training/model.js';
import { partition } from '../../../src/training/pipeline.js';
import { PIPELINE_PROTOCOL, serveStage } from '../../../src/training/pipeline-net.js';

describe('a pipeline stage refuses a bad request as the caller’s', () => {
  const shape = { layers: [4, 8, 3] };
  const w = initWeights(shape, 3);
  const nets: Network[] = [];
  before(async () => {
    for (let i = 0; i < 3; i++) nets.push(await createNetwork({ signer: Ed25519Signer.generate(), listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, syncOnConnect: [], topics: [] }));
    for (const n of nets) await n.start();
    const ranges = partition(shape, 2);
    await serveStage(nets[1]!, { shape, w, range: ranges[0]! });
    await serveStage(nets[2]!, { shape, w, range: ranges[1]! });
    await nets[0]!.dial(nets[1]!.addrs()[0]!);
    await nets[1]!.dial(nets[2]!.addrs()[0]!);
  });
  after(async () => {
    await Promise.all(nets.map((n) => n.stop()));
  });
  const call = (head: Record<string, CborValue>, payload: Uint8Array) => nets[0]!.request(nets[1]!.did, PIPELINE_PROTOCOL, [{ batch: 1, route: [nets[2]!.did], ...head } as CborValue, payload]);
  const row = weightsBytes(new Float64Array([5.1, 3.5, 1.4, 0.2]));
  const refused = (re: RegExp) => (e: unknown) => {
    assert.ok(e instanceof C0Error, String(e));
    assert.equal(e.code, 'PIPELINE_BAD_REQUEST', e.message);
    assert.match(e.message, re);
    assert.ok(!e.message.includes(nets[2]!.did), `names the next stage: ${e.message}`);
    return true;
  };

  it('a good request goes through both stages', async () => {
    const out = await call({ mb: 0 }, row);
    assert.equal(out.reduce((n: number, f) => n + (f as Uint8Array).length, 0), 3 * 8);
  });

  for (const mb of ['x', -1, '0']) {
    it(`mb ${JSON.stringify(mb)}: PIPELINE_BAD_REQUEST naming mb, not the next stage's failure`, async () => {
      await assert.rejects(call({ mb }, row), refused(/: mb .* is not a micro-batch number/));
    });
  }

  it('a 13-byte payload: PIPELINE_BAD_REQUEST, not TRAIN_WEIGHTS_INVALID', async () => {
    await assert.rejects(call({ mb: 0 }, new Uint8Array(13)), refused(/activations of 13 bytes: not a whole number of 8-byte values/));
  });
});
