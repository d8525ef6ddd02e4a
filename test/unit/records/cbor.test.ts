/**
 * Canonical CBOR (DESIGN §3.1): RFC 8949 Appendix A examples inside our subset,
 * every refusal with its own code, a differential check against cborg's RFC 8949
 * deterministic encoder, and property tests.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encode as cborgEncode, rfc8949EncodeOptions } from 'cborg';
import { C0Error } from '../../../src/errors.js';
import { CBOR_ERR, decodeCanonical, encodeCanonical, scanCanonical, type CborValue } from '../../../src/records/cbor.js';
import { assertCode, hex, unhex } from './fixtures.js';

/** RFC 8949 Appendix A: [diagnostic value, expected hex]. Only the examples our subset can hold. */
const RFC_EXAMPLES: Array<[CborValue, string]> = [
  [0, '00'],
  [1, '01'],
  [10, '0a'],
  [23, '17'],
  [24, '1818'],
  [25, '1819'],
  [100, '1864'],
  [1000, '1903e8'],
  [1000000, '1a000f4240'],
  [1000000000000, '1b000000e8d4a51000'],
  [18446744073709551615n, '1bffffffffffffffff'],
  [-18446744073709551616n, '3bffffffffffffffff'],
  [-1, '20'],
  [-10, '29'],
  [-100, '3863'],
  [-1000, '3903e7'],
  [new Uint8Array(0), '40'],
  [unhex('01020304'), '4401020304'],
  ['', '60'],
  ['a', '6161'],
  ['IETF', '6449455446'],
  ['"\\', '62225c'],
  ['\u00fc', '62c3bc'],
  ['\u6c34', '63e6b0b4'],
  ['\ud800\udd51', '64f0908591'],
  [[], '80'],
  [[1, 2, 3], '83010203'],
  [[1, [2, 3], [4, 5]], '8301820203820405'],
  [Array.from({ length: 25 }, (_, i) => i + 1), '98190102030405060708090a0b0c0d0e0f101112131415161718181819'],
  [{}, 'a0'],
  [{ a: 1, b: [2, 3] }, 'a26161016162820203'],
  [['a', { b: 'c' }], '826161a161626163'],
  [{ a: 'A', b: 'B', c: 'C', d: 'D', e: 'E' }, 'a56161614161626142616361436164614461656145'],
];

/** Head-size boundaries (not in Appendix A, but where shortest-form bugs live). */
const BOUNDARIES: Array<[CborValue, string]> = [
  [255, '18ff'],
  [256, '190100'],
  [65535, '19ffff'],
  [65536, '1a00010000'],
  [4294967295, '1affffffff'],
  [4294967296, '1b0000000100000000'],
  [-24, '37'],
  [-25, '3818'],
  [-256, '38ff'],
  [-257, '390100'],
  [-4294967296, '3affffffff'],
  [-4294967297, '3b0000000100000000'],
  [Number.MAX_SAFE_INTEGER, '1b001fffffffffffff'],
  [9007199254740993n, '1b0020000000000001'],
  [-18446744073709551615n, '3bfffffffffffffffe'],
];

describe('canonical CBOR: RFC 8949 Appendix A', () => {
  for (const [value, want] of [...RFC_EXAMPLES, ...BOUNDARIES]) {
    const label = typeof value === 'bigint' ? `${value}n` : JSON.stringify(value, (_k, v: unknown) => (v instanceof Uint8Array ? `h'${hex(v)}'` : v));
    test(`${label} ⇄ ${want}`, () => {
      assert.equal(hex(encodeCanonical(value)), want);
      const back = decodeCanonical(unhex(want));
      assert.deepEqual(back, value);
      assert.equal(hex(encodeCanonical(back)), want);
    });
  }

  test('map keys are sorted by the bytewise order of their encodings (shorter first)', () => {
    // "b" < "aa" because a 1-byte key's head (0x61) sorts before a 2-byte key's head (0x62).
    assert.equal(hex(encodeCanonical({ aa: 1, b: 2, a: 3 })), 'a3616103616202626161' + '01');
    // Non-ASCII keys sort by their UTF-8 bytes, not by UTF-16 code units.
    assert.equal(hex(encodeCanonical({ '\uff61': 1, '\u{10000}': 2 })), 'a263efbda10164f090808002');
  });

  test('integers above 2^53 come back as bigints, the rest as numbers', () => {
    assert.equal(typeof decodeCanonical(unhex('1b001fffffffffffff')), 'number');
    assert.equal(decodeCanonical(unhex('1b0020000000000001')), 9007199254740993n);
    assert.equal(decodeCanonical(unhex('1b0000000100000000')), 4294967296);
  });

  test('byte strings decode as plain Uint8Array (not Buffer)', () => {
    const v = decodeCanonical(unhex('4401020304'));
    assert.equal((v as Uint8Array).constructor, Uint8Array);
  });
});

/** Inputs refused, each with its own code. */
const INVALID: Array<[string, string, string]> = [
  ['a2616200616101', CBOR_ERR.UNSORTED_KEYS, '{"b":0,"a":1}: keys out of order'],
  ['a2616261626161616101', CBOR_ERR.UNSORTED_KEYS, '{"bb":…,"a":…}: a longer key before a shorter one'],
  ['a2616100616101', CBOR_ERR.DUPLICATE_KEY, '{"a":0,"a":1}'],
  ['1900ff', CBOR_ERR.NON_SHORTEST, '255 in a 2-byte head'],
  ['1817', CBOR_ERR.NON_SHORTEST, '23 in a 1-byte head'],
  ['1a0000ffff', CBOR_ERR.NON_SHORTEST, '65535 in a 4-byte head'],
  ['1b00000000ffffffff', CBOR_ERR.NON_SHORTEST, '2^32-1 in an 8-byte head'],
  ['3800', CBOR_ERR.NON_SHORTEST, '-1 in a 1-byte head'],
  ['580101', CBOR_ERR.NON_SHORTEST, 'byte string length in a 1-byte head'],
  ['780161', CBOR_ERR.NON_SHORTEST, 'text length in a 1-byte head'],
  ['980100', CBOR_ERR.NON_SHORTEST, 'array length in a 1-byte head'],
  ['b801616100', CBOR_ERR.NON_SHORTEST, 'map size in a 1-byte head'],
  ['9fff', CBOR_ERR.INDEFINITE, 'indefinite empty array'],
  ['9f0102ff', CBOR_ERR.INDEFINITE, 'indefinite array'],
  ['bf616101ff', CBOR_ERR.INDEFINITE, 'indefinite map'],
  ['5f42010243030405ff', CBOR_ERR.INDEFINITE, 'indefinite byte string'],
  ['7f657374726561646d696e67ff', CBOR_ERR.INDEFINITE, 'indefinite text string'],
  ['ff', CBOR_ERR.INDEFINITE, 'lone break code'],
  ['f93c00', CBOR_ERR.FLOAT, 'half float 1.0'],
  ['f90000', CBOR_ERR.FLOAT, 'half float 0.0'],
  ['fa47c35000', CBOR_ERR.FLOAT, 'single float 100000.0'],
  ['fb3ff199999999999a', CBOR_ERR.FLOAT, 'double float 1.1'],
  ['fb7ff8000000000000', CBOR_ERR.FLOAT, 'double NaN'],
  ['f4', CBOR_ERR.BOOLEAN, 'false'],
  ['f5', CBOR_ERR.BOOLEAN, 'true'],
  ['f6', CBOR_ERR.NULL, 'null'],
  ['f7', CBOR_ERR.UNDEFINED, 'undefined'],
  ['f0', CBOR_ERR.SIMPLE, 'simple(16)'],
  ['f8ff', CBOR_ERR.SIMPLE, 'simple(255)'],
  ['fc', CBOR_ERR.RESERVED, 'reserved info 28 in major 7'],
  ['1c', CBOR_ERR.RESERVED, 'reserved info 28 in major 0'],
  ['c074323031332d30332d32315432303a30343a30305a', CBOR_ERR.TAG, 'tag 0 (date string)'],
  ['c249010000000000000000', CBOR_ERR.TAG, 'tag 2 (bignum)'],
  ['d818456449455446', CBOR_ERR.TAG, 'tag 24 (encoded CBOR)'],
  ['d2840040a04100', CBOR_ERR.TAG, 'tag 18 inside a core'],
  ['0000', CBOR_ERR.TRAILING, 'two items'],
  ['8001', CBOR_ERR.TRAILING, 'array then an int'],
  ['62c328', CBOR_ERR.INVALID_UTF8, 'invalid continuation byte'],
  ['61ff', CBOR_ERR.INVALID_UTF8, '0xff in text'],
  ['63eda080', CBOR_ERR.INVALID_UTF8, 'UTF-8 encoded surrogate'],
  ['62c0af', CBOR_ERR.INVALID_UTF8, 'overlong encoding'],
  ['', CBOR_ERR.TRUNCATED, 'empty input'],
  ['18', CBOR_ERR.TRUNCATED, 'head without its argument'],
  ['1901', CBOR_ERR.TRUNCATED, '2-byte head cut short'],
  ['6261', CBOR_ERR.TRUNCATED, 'text cut short'],
  ['4401', CBOR_ERR.TRUNCATED, 'bytes cut short'],
  ['8201', CBOR_ERR.TRUNCATED, 'array missing an item'],
  ['a1', CBOR_ERR.TRUNCATED, 'map missing its key'],
  ['a16161', CBOR_ERR.TRUNCATED, 'map missing its value'],
  ['a10102', CBOR_ERR.KEY_TYPE, 'integer map key in a core'],
  ['a1410102', CBOR_ERR.KEY_TYPE, 'byte-string map key'],
  ['5b000000010000000000', CBOR_ERR.TOO_LARGE, 'byte string longer than 2^32'],
  ['81'.repeat(40) + '00', CBOR_ERR.TOO_DEEP, '40 nested arrays'],
];

describe('canonical CBOR: refusals, each with its own code', () => {
  for (const [h, code, what] of INVALID) {
    test(`${what} (${h.length > 24 ? h.slice(0, 24) + '…' : h || '∅'}) → ${code}`, () => {
      assertCode(() => decodeCanonical(unhex(h)), code, what);
      // The scanner alone names the same defect.
      assertCode(() => scanCanonical(unhex(h)), code, what);
    });
  }

  test('integer map keys are allowed only when asked for (COSE headers)', () => {
    assert.doesNotThrow(() => scanCanonical(unhex('a10102'), { intKeys: true }));
    assert.doesNotThrow(() => scanCanonical(unhex('a20102200a'), { intKeys: true })); // {1:2, -1:10}: 0x01 < 0x20
    assertCode(() => scanCanonical(unhex('a2200a0102'), { intKeys: true }), CBOR_ERR.UNSORTED_KEYS); // {-1:10, 1:2}
    assertCode(() => scanCanonical(unhex('a201020103'), { intKeys: true }), CBOR_ERR.DUPLICATE_KEY); // {1:2, 1:3}
  });

  test('NOT_CANONICAL: a "__proto__" key, which no decoded value can hold as data, is refused by the scan and the decoder', () => {
    // {"__proto__": {"x": 1}}: a JavaScript object cannot carry that key as data, so the
    // value could never re-encode to these bytes. The scan refuses it (open() relies on the
    // scan alone), and so does the decoder with its re-encode check. No prototype pollution.
    const bytes = unhex('a1695f5f70726f746f5f5fa1617801');
    assertCode(() => scanCanonical(bytes), CBOR_ERR.NOT_CANONICAL);
    assertCode(() => decodeCanonical(bytes), CBOR_ERR.NOT_CANONICAL);
    assertCode(() => decodeCanonical(bytes, { recheck: false }), CBOR_ERR.NOT_CANONICAL);
    assert.equal(({} as Record<string, unknown>).x, undefined);
  });

  test('every code in CBOR_ERR is distinct', () => {
    const codes = Object.values(CBOR_ERR);
    assert.equal(new Set(codes).size, codes.length);
  });
});

describe('canonical CBOR: what a core may not hold is refused when encoding', () => {
  const cases: Array<[string, unknown, string]> = [
    ['a float', 1.5, CBOR_ERR.FLOAT],
    ['NaN', NaN, CBOR_ERR.FLOAT],
    ['Infinity', Infinity, CBOR_ERR.FLOAT],
    ['a nested float', { a: [1, 0.1] }, CBOR_ERR.FLOAT],
    ['true', true, CBOR_ERR.BOOLEAN],
    ['false in a map', { ok: false }, CBOR_ERR.BOOLEAN],
    ['null', null, CBOR_ERR.NULL],
    ['null in an array', [null], CBOR_ERR.NULL],
    ['undefined at the top', undefined, CBOR_ERR.UNDEFINED],
    ['undefined in an array', [undefined], CBOR_ERR.UNDEFINED],
    ['an unsafe integer number', 2 ** 53, CBOR_ERR.TOO_LARGE],
    ['2^64 as a bigint', 2n ** 64n, CBOR_ERR.TOO_LARGE],
    ['-2^64-1 as a bigint', -(2n ** 64n) - 1n, CBOR_ERR.TOO_LARGE],
    ['a lone surrogate', 'a\ud800b', CBOR_ERR.INVALID_UTF8],
    ['a lone surrogate in a key', { '\udc00': 1 }, CBOR_ERR.INVALID_UTF8],
    ['a Map', new Map([['a', 1]]), CBOR_ERR.UNENCODABLE],
    ['a Date', new Date(0), CBOR_ERR.UNENCODABLE],
    ['a symbol', Symbol('x'), CBOR_ERR.UNENCODABLE],
    ['a function', () => 1, CBOR_ERR.UNENCODABLE],
  ];
  for (const [what, value, code] of cases) {
    test(`${what} → ${code}`, () => {
      assertCode(() => encodeCanonical(value), code, what);
    });
  }

  test('an undefined map field is omitted, never written as null', () => {
    assert.equal(hex(encodeCanonical({ a: 1, b: undefined })), 'a1616101');
  });

  test('objects whose key lists look alike still encode their own keys (regression: key-order cache collision)', () => {
    // Each pair below joined its keys to the same cache signature; the second lost its keys.
    assert.equal(hex(encodeCanonical({})), 'a0');
    assert.equal(hex(encodeCanonical({ '': 1 })), 'a16001');
    assert.equal(hex(encodeCanonical({ a: 1, b: 2 })), 'a2616101616202');
    assert.equal(hex(encodeCanonical({ 'a\u0000b': 1 })), 'a163610062' + '01');
    assert.equal(hex(encodeCanonical({ 'a\u0000': 1, b: 2 })), 'a2616202626100' + '01');
  });

  test('-2^64 inside a structure (regression: cbor-x writes it as a tagged bignum, so the encoder takes a slow path)', () => {
    const v = { a: [-(2n ** 64n), 5, 'x', new Uint8Array([1]), { b: 2 ** 40 }], z: -1 };
    assert.equal(hex(encodeCanonical(v)), hex(cborgEncode(v, rfc8949EncodeOptions)));
    assert.match(hex(encodeCanonical(v)), /3bffffffffffffffff/);
    assert.deepEqual(decodeCanonical(encodeCanonical(v)), v);
  });

  test('-0 encodes as 0', () => {
    assert.equal(hex(encodeCanonical(-0)), '00');
  });

  test('too deep a value is refused', () => {
    let v: unknown = 0;
    for (let i = 0; i < 40; i++) v = [v];
    assertCode(() => encodeCanonical(v), CBOR_ERR.TOO_DEEP);
  });
});

// ---------------------------------------------------------------------------
// Property tests
// ---------------------------------------------------------------------------

const U64 = 2n ** 64n;
const key = fc.string({ unit: 'binary', maxLength: 8 }).filter((k) => k !== '__proto__');
const leaf = fc.oneof(
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 }),
  fc.maxSafeInteger(),
  fc.bigInt({ min: -U64, max: U64 - 1n }),
  fc.constantFrom(0, 23, 24, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, -24, -25, -(2 ** 32), U64 - 1n, -U64),
  fc.string({ unit: 'binary', maxLength: 24 }),
  fc.string({ maxLength: 24 }),
  fc.uint8Array({ maxLength: 40 }),
);
const { core } = fc.letrec<{ core: unknown }>((tie) => ({
  core: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('core'), { maxLength: 5 }),
    fc.dictionary(key, tie('core'), { maxKeys: 5, noNullPrototype: true }),
  ),
}));

/** Normalise what encodeCanonical accepts to what decodeCanonical returns (small bigints become numbers). */
function normalise(v: unknown): unknown {
  if (typeof v === 'bigint') return v >= -BigInt(Number.MAX_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  if (Array.isArray(v)) return v.map(normalise);
  if (v instanceof Uint8Array) return v;
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normalise(x)]));
  return v;
}

describe('canonical CBOR: properties', () => {
  test('encode → decode → encode is the identity on random cores', () => {
    fc.assert(
      fc.property(core, (v) => {
        const bytes = encodeCanonical(v);
        const back = decodeCanonical(bytes);
        assert.deepEqual(back, normalise(v));
        assert.equal(hex(encodeCanonical(back)), hex(bytes));
      }),
      { numRuns: 1000 },
    );
  });

  test('cborg with its RFC 8949 deterministic options writes the same bytes', () => {
    fc.assert(
      fc.property(core, (v) => {
        const theirs = cborgEncode(v, rfc8949EncodeOptions);
        assert.equal(hex(encodeCanonical(v)), hex(theirs));
      }),
      { numRuns: 1000 },
    );
  });

  test('random byte strings never crash the decoder: a value or a C0Error with a CBOR_* code', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        try {
          const v = decodeCanonical(bytes);
          // Whatever decodes is canonical: it re-encodes to exactly the input.
          assert.equal(hex(encodeCanonical(v)), hex(bytes));
        } catch (e) {
          assert.ok(e instanceof C0Error, `not a C0Error: ${String(e)}`);
          assert.match(e.code, /^CBOR_/);
        }
      }),
      { numRuns: 1000 },
    );
  });

  test('single-byte mutations of valid cores: decoded or refused with a CBOR_* code, never a wrong value for the same bytes', () => {
    fc.assert(
      fc.property(core, fc.nat(), fc.integer({ min: 1, max: 255 }), (v, at, x) => {
        const bytes = encodeCanonical(v);
        const m = Uint8Array.from(bytes);
        const i = at % m.length;
        m[i] = m[i]! ^ x;
        try {
          const back = decodeCanonical(m);
          assert.equal(hex(encodeCanonical(back)), hex(m));
        } catch (e) {
          assert.ok(e instanceof C0Error, `not a C0Error: ${String(e)}`);
          assert.match(e.code, /^CBOR_/);
        }
      }),
      { numRuns: 500 },
    );
  });
});
