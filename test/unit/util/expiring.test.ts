/**
 * ExpiringKeys (src/util/expiring.ts): keys remembered each until its own time, bounded; lapsed keys are forgotten
 * before any live one, then the oldest set.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ExpiringKeys } from '../../../src/util/expiring.js';

const NOW = 1_800_000_000_000;

describe('ExpiringKeys', () => {
  it('forgets lapsed keys first, then the oldest live key; re-setting moves a key to the end', () => {
    const k = new ExpiringKeys(3);
    k.set('a', NOW + 100, NOW);
    k.set('b', NOW + 10, NOW);
    k.set('c', NOW + 100, NOW);
    k.set('a', NOW + 100, NOW); // a is now the newest
    k.set('d', NOW + 100, NOW + 20); // b lapsed (behind c at the front: swept past the bound)
    assert.deepEqual(['a', 'b', 'c', 'd'].map((x) => k.has(x, NOW + 20)), [true, false, true, true]);
    k.set('e', NOW + 100, NOW + 20); // nothing lapsed: the oldest set, c, goes
    assert.deepEqual(['a', 'c', 'd', 'e'].map((x) => k.has(x, NOW + 20)), [true, false, true, true]);
    assert.equal(k.size, 3);
    k.set('f', NOW + 5, NOW + 20); // already past: only forgotten
    assert.equal(k.has('f', NOW + 20), false);
    assert.equal(k.has('a', NOW + 100), false, 'until is exclusive');
  });
});
