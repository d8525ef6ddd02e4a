/**
 * A pipeline bought through the market (docs/training.md "Pipeline bought as a
 * job"): a buyer node's job names the `train.pipeline` workload, a provider
 * process runs the model's two stages with micro-batches (builtin
 * `builtin.mlp-pipeline`) and returns the output with a signed receipt; the
 * output equals the single-process forward bit for bit.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { hashHex } from '../../src/records/address.js';
import { iris } from '../../src/training/data.js';
import { initWeights, weightsBytes } from '../../src/training/model.js';
import { expectedPipelineOutput } from '../../src/training/pipeline-job.js';
import { Cluster, bootstrapAddr, buyerConfig, providerConfig, runJob, waitForMarket, withLogs } from './node-helpers.js';

const c = new Cluster('pipeline');
after(() => c.destroy());

test('a two-stage pipeline job bought through the market returns the single-process output with a signed receipt', async () => {
  await withLogs(c, async () => {
    const cfg = providerConfig({});
    const prov = cfg.provider as { workloads: Record<string, unknown> };
    prov.workloads['train.pipeline'] = { executor: { type: 'builtin', name: 'builtin.mlp-pipeline' }, price: { amount: '0.003', currency: 'USD' }, duration: { baseMs: 1000 } };
    const p = await c.start('p', cfg);
    const b = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(p)] }));
    await waitForMarket(b, 1, [p]);
    const shape = { layers: [4, 16, 3] };
    const d = iris().test;
    const input = Buffer.from(JSON.stringify({ layers: shape.layers, weights: Buffer.from(weightsBytes(initWeights(shape, 9))).toString('hex'), stages: 2, microBatches: 5, rows: Array.from({ length: d.n }, (_, i) => [...d.x.subarray(i * 4, i * 4 + 4)]) }));
    const { result } = await runJob(b, { workload: 'train.pipeline', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 60_000, requirements: {}, input: input.toString('base64') });
    assert.equal(result.status, 'completed', JSON.stringify(result));
    const output = Buffer.from(result.output as string, 'base64');
    assert.deepEqual(new Uint8Array(output), expectedPipelineOutput(new Uint8Array(input)));
    const receipt = result.receipt as { signer: string; record: { status: string; outputHash: string; workload: string } };
    assert.equal(receipt.signer, p.did);
    assert.equal(receipt.record.status, 'completed');
    assert.equal(receipt.record.workload, 'train.pipeline');
    assert.equal(receipt.record.outputHash, hashHex(output));
  });
});
