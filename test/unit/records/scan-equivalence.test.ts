/**
 * open() relies on the byte-level scan as its canonicity check instead of
 * re-encoding (pool/1 §6.6). That is sound only if the two agree: every input
 * the scan accepts decodes and re-encodes to the same bytes, and every input
 * that re-encodes to itself passes the scan.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { C0Error } from '../../../src/errors.js';
import { compareBytes, decodeCanonical, encodeCanonical, scanCanonical } from '../../../src/records/cbor.js';

const core = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.integer(),
    fc.bigInt({ min: -(1n << 64n), max: (1n << 64n) - 1n }),
    fc.maxSafeInteger(),
    fc.string({ unit: 'grapheme' }),
    fc.uint8Array({ maxLength: 40 }),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.string({ maxLength: 6 }), tie('value'), { maxKeys: 4 }),
  ),
})).value;

function scanAccepts(b: Uint8Array): boolean {
  try {
    scanCanonical(b);
    return true;
  } catch (e) {
    if (e instanceof C0Error) return false;
    throw e;
  }
}

function reencodesToItself(b: Uint8Array): boolean {
  try {
    return compareBytes(encodeCanonical(decodeCanonical(b, { recheck: false })), b) === 0;
  } catch (e) {
    if (e instanceof C0Error) return false;
    throw e;
  }
}

test('scan accepts exactly the inputs that re-encode to themselves (mutated canonical cores)', () => {
  fc.assert(
    fc.property(core, fc.nat(), fc.integer({ min: 0, max: 255 }), (v, at, byte) => {
      let bytes: Uint8Array;
      try {
        bytes = encodeCanonical(v);
      } catch {
        return; // not a core (e.g. a "__proto__" key)
      }
      assert.ok(scanAccepts(bytes), 'a canonical encoding passes the scan');
      const m = Uint8Array.from(bytes);
      if (m.length) m[at % m.length] = byte;
      assert.equal(scanAccepts(m), reencodesToItself(m), `disagree on ${Buffer.from(m).toString('hex')}`);
    }),
    { numRuns: 2000 },
  );
});

test('scan accepts exactly the inputs that re-encode to themselves (random bytes)', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 24 }), (b) => {
      assert.equal(scanAccepts(b), reencodesToItself(b), `disagree on ${Buffer.from(b).toString('hex')}`);
    }),
    { numRuns: 3000 },
  );
});

test('a "__proto__" key is refused by the scan itself', () => {
  const b = Buffer.from('a1695f5f70726f746f5f5f01', 'hex'); // {"__proto__": 1}
  assert.equal(scanAccepts(b), false);
});

test('-2^53 and 2^53 decode exactly (number/bigint boundary)', () => {
  for (const v of [-(2n ** 53n), 2n ** 53n, -(2n ** 53n) + 1n, 2n ** 53n - 1n, -(2n ** 64n), 2n ** 64n - 1n]) {
    const b = encodeCanonical(v);
    const d = decodeCanonical(b);
    assert.equal(BigInt(d as number | bigint), v);
    assert.equal(compareBytes(encodeCanonical(d), b), 0);
  }
});
