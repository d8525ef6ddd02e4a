import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { replay, replayParallel, sealEntries } from '../../../src/ledger/index.js';
import { admitted, released, steward } from './helpers.js';

describe('replayParallel', () => {
  const events = Array.from({ length: 60 }, (_, i) => (i % 2 === 0 ? admitted(`c${i}`, `e${i % 5}`, 100 + i) : released(`c${i - 1}`, 50 + i)));
  const es = sealEntries(events, steward).map((e) => e.bytes);
  it('gives the same result as replay(), including the first problem’s index', async () => {
    const a = replay(es);
    const b = await replayParallel(es, { workers: 2, minEntries: 0 });
    assert.equal(b.ok, true);
    assert.equal(b.head, a.head);
    assert.deepEqual([...b.book!.entitlements], [...a.book!.entitlements]);
    const bad = es.slice();
    const t = Uint8Array.from(bad[41]!);
    t[t.length - 1]! ^= 1;
    bad[41] = t;
    bad[50] = es[51]!;
    const pa = replay(bad).problem;
    const pb = (await replayParallel(bad, { workers: 3, minEntries: 0 })).problem;
    assert.deepEqual(pb, pa);
    assert.equal(pb!.index, 41);
  });
});

describe('replay properties', () => {
  const events = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? admitted(`c${i}`, 'a', 100 + i) : released(`c${i - 1}`, 50 + i)));
  const es = sealEntries(events, steward).map((e) => e.bytes);
  it('any single flipped bit is refused at exactly the index of the entry that carries it', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: es.length - 1 }), fc.nat(), fc.integer({ min: 0, max: 7 }), (i, pos, bit) => {
        const bad = es.slice();
        const b = Uint8Array.from(bad[i]!);
        b[pos % b.length]! ^= 1 << bit;
        bad[i] = b;
        const r = replay(bad);
        assert.equal(r.ok, false);
        assert.equal(r.problem!.index, i);
        assert.equal(r.book, undefined);
      }),
      { numRuns: 150 },
    );
  });
  it('removing or reordering any entry but the last is refused at that index', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: es.length - 2 }), (i) => {
        const dropped = [...es.slice(0, i), ...es.slice(i + 1)];
        assert.equal(replay(dropped).problem!.index, i);
        const swapped = es.slice();
        [swapped[i], swapped[i + 1]] = [swapped[i + 1]!, swapped[i]!];
        assert.equal(replay(swapped).problem!.index, i);
      }),
    );
  });
});
