import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
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
