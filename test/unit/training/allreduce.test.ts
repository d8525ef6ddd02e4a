import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { C0Error } from '../../../src/errors.js';
import { Mailbox, memoryRing, ringAllReduce, chunkBounds } from '../../../src/training/allreduce.js';

describe('ring all-reduce', () => {
  it('equals the plain sum (and max) for any N, length and arrival order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 7 }),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 1e9 }),
        fc.constantFrom<'sum' | 'max'>('sum', 'max'),
        async (n, len, seed, op) => {
          let x = seed;
          const rnd = () => ((x = (x * 1103515245 + 12345) % 2147483648) / 2147483648);
          const inputs = Array.from({ length: n }, () => Int32Array.from({ length: len }, () => Math.floor(rnd() * 255) - 127));
          const ring = memoryRing(n, { delay: () => Math.floor(rnd() * 4) });
          const outs = await Promise.all(ring.map((t, k) => ringAllReduce(t, inputs[k]!, op, 'step0')));
          const want = Int32Array.from({ length: len }, (_, i) => (op === 'sum' ? inputs.reduce((s, v) => s + v[i]!, 0) : Math.max(...inputs.map((v) => v[i]!))));
          for (const o of outs) assert.deepEqual(o, want);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('each worker sends 2(N−1)/N of the vector', async () => {
    const n = 5;
    const len = 1000;
    const sent = new Array<number>(n).fill(0);
    const ring = memoryRing(n).map((t) => ({ ...t, rank: t.rank, size: t.size, send: async (to: number, tag: string, d: Uint8Array) => ((sent[t.rank] = sent[t.rank]! + d.length), t.send(to, tag, d)) }));
    await Promise.all(ring.map((t) => ringAllReduce(t, new Int32Array(len).fill(1), 'sum', 's')));
    for (const s of sent) assert.equal(s, (2 * (n - 1) * len * 4) / n);
    assert.deepEqual(chunkBounds(10, 3, 2), [6, 10]);
  });

  it('a silent peer is a TRAIN_PEER_TIMEOUT within the deadline; duplicates are refused', async () => {
    const box = new Mailbox({ timeoutMs: 50, maxHeld: 2 });
    await assert.rejects(box.take(1, 'x'), (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_PEER_TIMEOUT');
    box.put(1, 'y', new Uint8Array(1));
    assert.throws(() => box.put(1, 'y', new Uint8Array(1)), (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_DUPLICATE_MESSAGE');
    box.put(1, 'z', new Uint8Array(1));
    assert.throws(() => box.put(2, 'w', new Uint8Array(1)), (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_MAILBOX_FULL');
  });
});
