import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { nameOrder, rankOrder } from '../../../src/market/rank-order.js';
import { compareRanked } from '../../../src/market/index.js';

/** The reference: a comparator sort of indices, as select did it before (compareRanked). */
function reference(keys: number[], names: string[]): number[] {
  return keys.map((_, i) => i).sort((a, b) => compareRanked({ total: keys[a]!, provider: names[a]! }, { total: keys[b]!, provider: names[b]! }));
}

const did = fc.stringMatching(/^[1-9A-HJ-NP-Za-km-z]{0,9}$/).map((s) => 'did:key:z6Mk' + s);
// totals as select makes them: weighted sums of scores in 0..1, with many exact ties (few distinct values)
const total = fc.oneof(
  fc.constantFrom(0, -0, 1, 0.5, 0.4 * 0.8 + 0.2, 1 / 3, Number.MIN_VALUE),
  fc.double({ min: 0, max: 1, noNaN: true }),
  fc.integer({ min: 0, max: 20 }).map((k) => k / 20),
);

test('rankOrder: total descending, ties by DID, exactly as the comparator sort, at every size (both sides of the radix threshold)', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(total, did), { minLength: 0, maxLength: 700, size: 'max' }), (rows) => {
      const keys = rows.map((r) => r[0]);
      const names = rows.map((r) => r[1]);
      assert.deepEqual([...rankOrder(Float64Array.from(keys), names)], reference(keys, names));
    }),
    { numRuns: 100 },
  );
});

test('rankOrder: keys outside 0..max (negative, NaN, infinite) fall back to the comparator sort', () => {
  const n = 300;
  const keys = Array.from({ length: n }, (_, i) => ((i * 7919) % 101) / 100 - (i % 5 === 0 ? 2 : 0));
  keys[17] = Infinity;
  const names = keys.map((_, i) => `did:key:z6Mk${((i * 31) % 97).toString(36)}`);
  assert.deepEqual([...rankOrder(Float64Array.from(keys), names)], reference(keys, names));
  // the count argument ranks a prefix of the columns
  assert.deepEqual([...rankOrder(Float64Array.from(keys), names, 150)], reference(keys.slice(0, 150), names.slice(0, 150)));
});

test('nameOrder: plain string order, with shared prefixes, names that prefix others, and non-ASCII names', () => {
  const plain = (names: string[]) => names.map((_, i) => i).sort((a, b) => (names[a]! < names[b]! ? -1 : names[a]! > names[b]! ? 1 : 0));
  const name = fc.oneof(
    did,
    fc.string({ maxLength: 12 }).map((s) => 'did:key:z6Mk' + s),
    fc.string({ unit: 'binary', maxLength: 6 }),
    fc.constantFrom('did:key:z6Mk', 'did:key:z6MkA', 'did:key:z6MkAAAAAAAA', 'did:key:z6MkAAAAAAAB', 'did:key:z6MkAAAAAAA', ''),
  );
  fc.assert(
    fc.property(fc.array(name, { minLength: 0, maxLength: 600, size: 'max' }), (names) => {
      // sorting is not stable across duplicates by index here: compare the names in order
      assert.deepEqual([...nameOrder(names)].map((i) => names[i]), plain(names).map((i) => names[i]));
    }),
    { numRuns: 200 },
  );
});
