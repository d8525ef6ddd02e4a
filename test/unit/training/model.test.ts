import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { accuracy, initWeights, lossAndGrad, paramCount, tensors } from '../../../src/training/model.js';
import { baselineAccuracy, iris, shard } from '../../../src/training/data.js';
import { applyUpdate, dequantize, exponentFor, localExponents, quantize, QMAX } from '../../../src/training/quantize.js';

const shape = { layers: [4, 8, 3] };

describe('training model', () => {
  it('gradient matches central finite differences on every parameter', () => {
    const d = iris().train;
    const w = initWeights(shape, 7);
    const x = d.x.subarray(0, 10 * 4);
    const y = d.y.subarray(0, 10);
    const { grad } = lossAndGrad(shape, w, x, y, 10);
    const h = 1e-6;
    let worst = 0;
    for (let i = 0; i < w.length; i++) {
      const wp = Float64Array.from(w);
      const wm = Float64Array.from(w);
      wp[i] = wp[i]! + h;
      wm[i] = wm[i]! - h;
      const fd = (lossAndGrad(shape, wp, x, y, 10).loss - lossAndGrad(shape, wm, x, y, 10).loss) / (2 * h);
      worst = Math.max(worst, Math.abs(fd - grad[i]!) / Math.max(1e-3, Math.abs(fd) + Math.abs(grad[i]!)));
    }
    assert.ok(worst < 1e-5, `worst relative error ${worst}`);
    assert.equal(grad.length, paramCount(shape));
  });

  it('split is fixed: 120 training rows, 30 held out, baseline 1/3', () => {
    const s = iris();
    assert.equal(s.train.n, 120);
    assert.equal(s.test.n, 30);
    assert.equal(baselineAccuracy(s.test), 1 / 3);
    assert.match(s.hash, /^sha256:[0-9a-f]{64}$/);
    const shards = [0, 1, 2].map((k) => shard(s.train, k, 3));
    assert.deepEqual(shards.map((d) => d.n), [40, 40, 40]);
  });

  it('full-precision gradient descent learns Iris well past the baseline', () => {
    const s = iris();
    const w = initWeights(shape, 1);
    for (let i = 0; i < 200; i++) {
      const { grad } = lossAndGrad(shape, w, s.train.x, s.train.y, s.train.n);
      for (let j = 0; j < w.length; j++) w[j] = w[j]! - 0.5 * grad[j]!;
    }
    assert.ok(accuracy(shape, w, s.test.x, s.test.y) >= 0.9);
  });
});

describe('quantisation', () => {
  it('exponent is the smallest with max ≤ 127·2^e', () => {
    fc.assert(
      fc.property(fc.double({ min: 1e-12, max: 1e6, noNaN: true }), (m) => {
        const e = exponentFor(m);
        assert.ok(m <= QMAX * 2 ** e);
        assert.ok(!(m <= QMAX * 2 ** (e - 1)));
      }),
    );
    assert.equal(exponentFor(0), -60);
  });

  it('quantise/dequantise error is at most half a step, and the residual carries it exactly', () => {
    const ts = tensors(shape);
    fc.assert(
      fc.property(fc.array(fc.double({ min: -5, max: 5, noNaN: true }), { minLength: 67, maxLength: 67 }), fc.integer({ min: 0, max: 3 }), (vals, bump) => {
        const g = Float64Array.from(vals);
        const r = new Float64Array(g.length);
        const exps = localExponents(g, r, ts).map((e) => e + bump);
        const q = quantize(g, r, ts, Int32Array.from(exps));
        const dq = dequantize(q, ts, Int32Array.from(exps));
        ts.forEach((t, k) => {
          const s = 2 ** exps[k]!;
          for (let i = t.offset; i < t.offset + t.length; i++) {
            assert.ok(Math.abs(q[i]!) <= QMAX);
            assert.ok(Math.abs(dq[i]! - g[i]!) <= s / 2 + 1e-15, `value ${g[i]} step ${s}`);
            assert.ok(dq[i]! + r[i]! === g[i]!);
          }
        });
      }),
      { numRuns: 200 },
    );
  });

  it('update is the same float64 expression whatever the order workers are summed in', () => {
    const ts = tensors(shape);
    const w1 = initWeights(shape, 3);
    const w2 = Float64Array.from(w1);
    const a = Int32Array.from({ length: 67 }, (_, i) => (i % 9) - 4);
    const b = Int32Array.from({ length: 67 }, (_, i) => (i % 5) - 2);
    const ab = a.map((v, i) => v + b[i]!);
    const ba = b.map((v, i) => v + a[i]!);
    const e = Int32Array.from([-7, -8, -6, -9]);
    applyUpdate(w1, ab, ts, e, 0.1, 2);
    applyUpdate(w2, ba, ts, e, 0.1, 2);
    assert.deepEqual(w1, w2);
  });
});
