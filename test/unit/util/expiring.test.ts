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

  it('agrees with a plain model over random mixed lifetimes, re-sets and deletes (seeded)', () => {
    let seed = 7;
    const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let trial = 0; trial < 200; trial++) {
      const max = 1 + rnd(12);
      const k = new ExpiringKeys(max);
      // the model: key -> until, in the order set; set drops every lapsed key, then the oldest past max
      const m = new Map<string, number>();
      let now = NOW;
      for (let i = 0; i < 300; i++) {
        now += rnd(3);
        const key = 'k' + rnd(30);
        if (rnd(10) === 0) {
          k.delete(key);
          m.delete(key);
          continue;
        }
        const until = now + rnd(60) - 5;
        k.set(key, until, now);
        for (const [x, u] of m) if (u <= now) m.delete(x);
        m.delete(key);
        if (until > now) m.set(key, until);
        while (m.size > max) m.delete(m.keys().next().value!);
        assert.equal(k.size, m.size, `trial ${trial} step ${i}: size`);
        for (let j = 0; j < 30; j++) assert.equal(k.has('k' + j, now), m.has('k' + j), `trial ${trial} step ${i}: k${j}`);
      }
    }
  });
});
