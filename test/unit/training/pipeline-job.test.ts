/**
 * `builtin.mlp-pipeline` on larger models (src/training/pipeline-job.ts): a
 * model past ~310k weights runs and matches the buyer's expectation (the old
 * weights check overflowed the regex stack), the work is done in row blocks
 * that keep the output bit-identical, yields to the event loop and stops at
 * the deadline with EXEC_TIMEOUT, and the size bounds are EXEC_BAD_INPUT.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { initWeights, paramCount, weightsBytes } from '../../../src/training/model.js';
import { expectedPipelineOutput, runPipelineJob, MAX_PIPELINE_ACTIVATIONS, MAX_PIPELINE_PARAMS } from '../../../src/training/pipeline-job.js';
import { createExecutor } from '../../../src/roles/provider/executors.js';

const enc = (j: unknown) => new TextEncoder().encode(JSON.stringify(j));
const hexOf = (w: Float64Array) => Buffer.from(weightsBytes(w)).toString('hex');
const rows = (n: number, f: number) => Array.from({ length: n }, (_, i) => Array.from({ length: f }, (_, k) => Math.sin(i * 7 + k) * 3));

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'none';
  } catch (e) {
    return e instanceof C0Error ? e.code : `${(e as Error).name}: ${(e as Error).message}`;
  }
}

describe('builtin.mlp-pipeline on larger models', () => {
  it('a model of 362,401 weights runs, in row blocks, bit-identical to the buyer’s single-process forward', async () => {
    const shape = { layers: [3, 600, 600, 2] };
    assert.ok(paramCount(shape) > 320_000);
    const input = enc({ layers: shape.layers, weights: hexOf(initWeights(shape, 9)), stages: 2, microBatches: 3, rows: rows(25, 3) });
    const want = expectedPipelineOutput(input);
    let blocks = 0;
    assert.deepEqual(
      await runPipelineJob(input, async () => {
        blocks++;
      }),
      want,
    );
    // 600×600 multiply-adds a row: a few rows a block, so the middle layer is split in many blocks.
    assert.ok(blocks > 10, `${blocks} blocks`);
    assert.deepEqual(await createExecutor({ type: 'builtin', name: 'builtin.mlp-pipeline' }).run({ input, signal: new AbortController().signal, onProgress: () => {}, maxOutputBytes: 1 << 20 }), want);
  });

  it('stops at the deadline with EXEC_TIMEOUT, the event loop running meanwhile', async () => {
    const H = 500;
    const shape = { layers: [1, H, H, 1] };
    // About 0.5 M multiply-adds a row: 2000 rows is several hundred ms of work at least.
    const input = enc({ layers: shape.layers, weights: hexOf(initWeights(shape, 3)), stages: 1, microBatches: 1, rows: rows(2000, 1) });
    const ex = createExecutor({ type: 'builtin', name: 'builtin.mlp-pipeline' });
    let ticks = 0;
    const iv = setInterval(() => ticks++, 5);
    const t0 = Date.now();
    try {
      assert.equal(await codeOf(ex.run({ input, signal: AbortSignal.timeout(30), onProgress: () => {}, maxOutputBytes: 1 << 20 })), 'EXEC_TIMEOUT');
    } finally {
      clearInterval(iv);
    }
    assert.ok(ticks > 0, 'timers fired while the job ran');
    assert.ok(Date.now() - t0 < 5000);
    const stop = new AbortController();
    const p = ex.run({ input, signal: stop.signal, onProgress: () => {}, maxOutputBytes: 1 << 20 });
    setTimeout(() => stop.abort(new Error('the buyer left')), 20);
    assert.equal(await codeOf(p), 'EXEC_ABORTED');
  });

  it('bad or oversized input is EXEC_BAD_INPUT, never a crash', async () => {
    const small = { layers: [2, 3], weights: hexOf(initWeights({ layers: [2, 3] }, 1)), stages: 1, microBatches: 1, rows: rows(2, 2) };
    await runPipelineJob(enc(small));
    const bad = [
      { ...small, weights: small.weights.slice(0, -1) }, // not whole float64 values
      { ...small, weights: small.weights.slice(0, -16) }, // one value short
      { ...small, weights: small.weights.toUpperCase() }, // not lower-case hex
      { ...small, weights: small.weights.replace(/^./, 'g') },
      // a model over MAX_PIPELINE_PARAMS (the weights are not even looked at)
      { ...small, layers: [4096, 1100], weights: '' },
      // rows × the widest layer over MAX_PIPELINE_ACTIVATIONS
      { layers: [1, 4096, 1], weights: hexOf(initWeights({ layers: [1, 4096, 1] }, 1)), stages: 1, microBatches: 1, rows: rows(Math.floor(MAX_PIPELINE_ACTIVATIONS / 4096) + 1, 1) },
    ];
    assert.ok(paramCount({ layers: [4096, 1100] }) > MAX_PIPELINE_PARAMS);
    for (const j of bad) {
      assert.equal(await codeOf(runPipelineJob(enc(j))), 'EXEC_BAD_INPUT', JSON.stringify(j).slice(0, 80));
      assert.throws(() => expectedPipelineOutput(enc(j)), { code: 'EXEC_BAD_INPUT' });
    }
  });

  it('input that is JSON but not an object (null, a number, a string, an array) is EXEC_BAD_INPUT, not a TypeError', async () => {
    for (const text of ['null', '42', '"rows"', '[]', 'true']) {
      const input = new TextEncoder().encode(text);
      assert.equal(await codeOf(runPipelineJob(input)), 'EXEC_BAD_INPUT', text);
      assert.throws(() => expectedPipelineOutput(input), { code: 'EXEC_BAD_INPUT' }, text);
    }
  });
});
