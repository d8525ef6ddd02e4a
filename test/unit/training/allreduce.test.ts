import { describe, it, test } from 'node:test';
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
          const outs = await Promise.all(ring.map((t, k) => ringAllReduce(t, inputs[k]!, op, 'step0', { lo: -127, hi: 127 })));
          const want = Int32Array.from({ length: len }, (_, i) => (op === 'sum' ? inputs.reduce((s, v) => s + v[i]!, 0) : Math.max(...inputs.map((v) => v[i]!))));
          for (const o of outs) assert.deepEqual(o, want);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a received chunk beyond the bounds of its contributions is refused, naming the sender', async () => {
    const n = 4;
    for (const op of ['sum', 'max'] as const) {
      for (const phase of ['rs0', 'rs2', 'ag1']) {
        const ring = memoryRing(n, { timeoutMs: 300 }); // the others then wait for chunks that never come: short
        const liar = 2;
        // the liar's chunk in `phase` carries one value no honest partial can hold there (±127 per contribution, or a max in [-60, 30])
        const lie = { ...ring[liar]!, send: (to: number, tag: string, d: Uint8Array) => {
          if (tag.endsWith(`/${phase}`)) new DataView(d.buffer, d.byteOffset).setInt32(0, op === 'sum' ? 127 * (phase === 'rs2' ? 3 : phase === 'ag1' ? n : 1) + 1 : 31, true);
          return ring[liar]!.send(to, tag, d);
        } };
        const inputs = Array.from({ length: n }, (_, k) => new Int32Array(8).fill(k === liar ? 127 : -3));
        const bounds = op === 'sum' ? { lo: -127, hi: 127 } : { lo: -60, hi: 30 };
        const got = await Promise.allSettled(ring.map((t, k) => ringAllReduce(k === liar ? lie : t, inputs[k]!, op, 's', bounds)));
        const refused = got[liar + 1] as PromiseRejectedResult;
        assert.equal(refused.status, 'rejected', `${op} ${phase}`);
        assert.ok(refused.reason instanceof C0Error && refused.reason.code === 'TRAIN_CHUNK_OUT_OF_RANGE', String(refused.reason));
        assert.equal((refused.reason as C0Error).detail?.rank, liar, 'the sender is named');
      }
    }
    // At the bounds exactly, nothing is refused: N × 127 is an honest sum.
    const ring = memoryRing(3);
    const outs = await Promise.all(ring.map((t) => ringAllReduce(t, new Int32Array(5).fill(127), 'sum', 'e', { lo: -127, hi: 127 })));
    for (const o of outs) assert.deepEqual([...o], [381, 381, 381, 381, 381]);
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

test('Mailbox.whenClosed: one promise, rejected with close’s error; asked after the close and never awaited, it is no unhandled rejection (a daemon exits on one)', async () => {
  const unhandled: unknown[] = [];
  const on = (e: unknown) => unhandled.push(e);
  process.on('unhandledRejection', on);
  try {
    const open = new Mailbox({ timeoutMs: 1000, maxHeld: 4 });
    const waiting = open.whenClosed();
    assert.equal(open.whenClosed(), waiting, 'the same promise each time');
    const why = new Error('stopped');
    open.close(why);
    await assert.rejects(waiting, (e) => e === why);
    assert.equal(open.closedBy, why);
    const late = new Mailbox({ timeoutMs: 1000, maxHeld: 4 });
    late.close(new Error('aborted'));
    void late.whenClosed(); // asked after the close, not awaited
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', on);
  }
});
