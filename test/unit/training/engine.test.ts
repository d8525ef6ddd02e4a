import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { iris, shard } from '../../../src/training/data.js';
import { accuracy, initWeights, weightsBytes } from '../../../src/training/model.js';
import { memoryRing } from '../../../src/training/allreduce.js';
import { addressOf, referenceRun, ringStep, type StepParams } from '../../../src/training/engine.js';
import { baselineAccuracy } from '../../../src/training/data.js';

const p: StepParams = { shape: { layers: [4, 8, 3] }, lr: 0.3, batch: 8, feedback: true };

describe('training engine', () => {
  it('three ring workers end with bit-identical weights, equal to the single-process run, above the baseline', async () => {
    const s = iris();
    const w0 = initWeights(p.shape, 42);
    const n = 3;
    const steps = 60;
    const ring = memoryRing(n, { delay: (f, t, tag) => (f * 7 + t * 3 + tag.length) % 3 });
    const states = ring.map(() => ({ w: Float64Array.from(w0), r: new Float64Array(w0.length) }));
    const shards = ring.map((t) => shard(s.train, t.rank, n));
    const perStep: string[][] = [];
    for (let st = 0; st < steps; st++) {
      const res = await Promise.all(ring.map((t, k) => ringStep(t, p, states[k]!, shards[k]!, st, `s${st}`)));
      perStep.push(res.map((r) => r.weights));
    }
    const ref = referenceRun(p, s.train, w0, n, steps);
    for (let st = 0; st < steps; st++) for (const h of perStep[st]!) assert.equal(h, ref.weights[st]);
    for (const st of states) assert.equal(addressOf(weightsBytes(st.w)), addressOf(weightsBytes(ref.w)));
    const acc = accuracy(p.shape, ref.w, s.test.x, s.test.y);
    assert.ok(acc >= 0.8 && acc > baselineAccuracy(s.test) + 0.3, `held-out accuracy ${acc}`);
  });

  it('the single-process run is itself deterministic and depends on the quantisation (feedback on/off differ)', () => {
    const s = iris();
    const w0 = initWeights(p.shape, 42);
    const a = referenceRun(p, s.train, w0, 3, 10);
    const b = referenceRun(p, s.train, w0, 3, 10);
    const c = referenceRun({ ...p, feedback: false }, s.train, w0, 3, 10);
    assert.deepEqual(a.weights, b.weights);
    assert.notEqual(a.weights[9], c.weights[9]);
  });
});
