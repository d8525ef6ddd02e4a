/**
 * The COSE_Sign1 envelope (DESIGN §3.2): the order of the checks in open()
 * (the first failing check wins), each kind's own rules on seal and on open,
 * content addresses, and a mutation property.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { C0Error } from '../../../src/errors.js';
import { encodeCanonical, encodeHead, encodeHeaderMap } from '../../../src/records/cbor.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import type { Signer } from '../../../src/records/ed25519.js';
import { ENV_ERR, MAX_ENVELOPE_BYTES, inspect, kindOf, open, openAny, peekType, seal, sealRaw, sigStructure } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { recordFromJson, toCore } from '../../../src/records/schema.js';
import { BUYER, GATEWAY, NOW, PROVIDER, addr, assertCode, buyer, concat, gateway, hex, provider, records, signerOf, unhex, utf8 } from './fixtures.js';

const bstr = (b: Uint8Array): Uint8Array => concat(encodeHead(2, b.length), b);

function header(type: string, did: string, extra: Array<[number, unknown]> = []): Uint8Array {
  return encodeHeaderMap([[1, -8], [3, type], [4, utf8(did)], ...extra]);
}

interface Parts {
  prot: Uint8Array;
  payload: Uint8Array;
  signer?: Signer;
  sig?: Uint8Array;
  unprotected?: Uint8Array;
  prefix?: Uint8Array;
}

/** Assemble a COSE_Sign1 by hand: tag 18, array(4), bstr protected, unprotected, bstr payload, bstr signature. */
function build(p: Parts): Uint8Array {
  const sig = p.sig ?? p.signer!.sign(sigStructure(p.prot, p.payload));
  return concat(p.prefix ?? Uint8Array.of(0xd2, 0x84), bstr(p.prot), p.unprotected ?? Uint8Array.of(0xa0), bstr(p.payload), bstr(sig));
}

const coreOf = (type: string, rec: unknown): Record<string, unknown> => toCore(kindOf(type).schema, rec);
/** Sign a core that skipped the kind's rules (seal() would refuse it): what a dishonest peer could send. */
const sealCore = (type: string, core: unknown, signer: Signer): Uint8Array => sealRaw(type, encodeCanonical(core), signer);

const offerCore = () => coreOf(T.offer, records.offer());
const goodOffer = () => build({ prot: header(T.offer, PROVIDER), payload: encodeCanonical(offerCore()), signer: provider });

/** A small-order public key (the identity point) and its did:key: refused by the key check. */
const IDENTITY_KEY = unhex('0100000000000000000000000000000000000000000000000000000000000000');
const SMALL_ORDER_DID = didFromPublicKey(IDENTITY_KEY);

function flip(b: Uint8Array, at: number): Uint8Array {
  const m = Uint8Array.from(b);
  m[at] = m[at]! ^ 0x01;
  return m;
}

describe('envelope: sealing and opening every kind', () => {
  for (const [name, make] of Object.entries(records)) {
    const type = T[name as keyof typeof T];
    test(`${type} seals, opens, and reads back the same record`, () => {
      const s = signerOf[name as keyof typeof signerOf];
      const sealed = seal(type, make() as never, s);
      const opened = open(sealed.bytes, type);
      assert.equal(opened.type, type);
      assert.equal(opened.signer, didFromPublicKey(s.publicKey));
      assert.equal(opened.address, sealed.address);
      assert.deepEqual(opened.record, make());
      assert.deepEqual(openAny(sealed.bytes).record, make());
    });
  }

  test('the envelope is the documented COSE_Sign1 layout', () => {
    const { bytes } = seal(T.offer, records.offer(), provider);
    assert.equal(bytes[0], 0xd2, 'tag 18');
    assert.equal(bytes[1], 0x84, 'array of 4');
    const prot = header(T.offer, PROVIDER);
    assert.equal(hex(bytes.subarray(2, 2 + bstr(prot).length)), hex(bstr(prot)));
    // protected = {1: -8, 3: "c0mpute.offer/1", 4: h'did:key:…'} in canonical order
    assert.equal(hex(prot.subarray(0, 4)), 'a3012703');
    assert.equal(bytes[2 + bstr(prot).length], 0xa0, 'empty unprotected map');
    assert.equal(hex(bytes.subarray(bytes.length - 66, bytes.length - 64)), '5840', '64-byte signature last');
  });

  test('content address = SHA-256 of the whole envelope, stable across re-seal (deterministic signatures)', () => {
    const a = seal(T.offer, records.offer(), provider);
    const b = seal(T.offer, records.offer(), provider);
    assert.equal(hex(a.bytes), hex(b.bytes));
    assert.equal(a.address, b.address);
    assert.equal(a.address, 'sha256:' + createHash('sha256').update(a.bytes).digest('hex'));
    assert.equal(open(a.bytes, T.offer).address, a.address);
    // A different record or a different signer gives a different address.
    assert.notEqual(seal(T.offer, { ...records.offer(), durationMs: 60_001 }, provider).address, a.address);
    assert.notEqual(seal(T.offer, records.offer(), gateway).address, a.address);
  });

  test('field order in the input does not change the bytes (canonical payload)', () => {
    const o = records.offer();
    const reversed = Object.fromEntries(Object.entries(o).reverse()) as typeof o;
    assert.equal(seal(T.offer, reversed, provider).address, seal(T.offer, o, provider).address);
  });

  test('peekType reads the type and signer without verifying', () => {
    assertCode(() => peekType(flip(goodOffer(), 0)), ENV_ERR.MALFORMED);
    assert.deepEqual(peekType(seal(T.offer, records.offer(), provider).bytes), { type: T.offer, signer: PROVIDER });
  });
});

describe('envelope: open() checks in order, the first failing check wins', () => {
  const sig0 = new Uint8Array(64);

  test('size: an envelope over the bound is refused before anything else is read', () => {
    assertCode(() => open(new Uint8Array(MAX_ENVELOPE_BYTES + 1), T.offer), ENV_ERR.TOO_LARGE);
    // A well-formed, validly signed envelope that is too large is refused too.
    const big = build({ prot: header(T.offer, PROVIDER), payload: new Uint8Array(MAX_ENVELOPE_BYTES), signer: provider });
    assertCode(() => open(big, T.offer), ENV_ERR.TOO_LARGE);
  });

  test('shape: not tag 18, not an array of 4, unprotected not empty, signature not 64 bytes, trailing bytes', () => {
    const prot = header(T.offer, PROVIDER);
    const payload = encodeCanonical(offerCore());
    const cases: Array<[string, Uint8Array]> = [
      ['no tag', goodOffer().subarray(1)],
      ['tag 17', build({ prot, payload, signer: provider, prefix: Uint8Array.of(0xd1, 0x84) })],
      ['tag 18 in a 1-byte head', build({ prot, payload, signer: provider, prefix: Uint8Array.of(0xd8, 0x12, 0x84) })],
      ['array of 3', build({ prot, payload, signer: provider, prefix: Uint8Array.of(0xd2, 0x83) })],
      ['indefinite array', concat(build({ prot, payload, signer: provider, prefix: Uint8Array.of(0xd2, 0x9f) }), Uint8Array.of(0xff))],
      ['unprotected {4: h\'\'}', build({ prot, payload, signer: provider, unprotected: unhex('a10440') })],
      ['unprotected as an array', build({ prot, payload, signer: provider, unprotected: unhex('80') })],
      ['63-byte signature', build({ prot, payload, sig: new Uint8Array(63) })],
      ['65-byte signature', build({ prot, payload, sig: new Uint8Array(65) })],
      ['trailing byte', concat(goodOffer(), Uint8Array.of(0x00))],
      ['protected as text', concat(Uint8Array.of(0xd2, 0x84), unhex('6161'), unhex('a0'), bstr(payload), bstr(sig0))],
      ['protected length runs past the end', unhex('d2845a00010000')],
      ['payload length not in shortest form', concat(Uint8Array.of(0xd2, 0x84), bstr(prot), unhex('a0'), unhex('5800'), bstr(sig0))],
      ['empty input', new Uint8Array(0)],
    ];
    for (const [what, bytes] of cases) assertCode(() => open(bytes, T.job), ENV_ERR.MALFORMED, what); // wrong type too: shape comes first
  });

  test('protected header: not canonical', () => {
    const payload = encodeCanonical(offerCore());
    const did = utf8(PROVIDER);
    const type = utf8(T.offer);
    const cases: Array<[string, Uint8Array]> = [
      // alg -8 in a 1-byte head (38 07) instead of 27
      ['alg -8 in a 1-byte head (38 07)', concat(unhex('a301380703'), encodeCanonical(T.offer), unhex('04'), bstr(did))],
      ['keys out of order {3, 1, 4}', concat(unhex('a303'), encodeCanonical(T.offer), unhex('012704'), bstr(did))],
      ['duplicate key {1, 1, 3, 4}', concat(unhex('a40127012703'), encodeCanonical(T.offer), unhex('04'), bstr(did))],
      ['indefinite map', concat(unhex('bf012703'), encodeCanonical(T.offer), unhex('04'), bstr(did), unhex('ff'))],
      ['not a map', encodeCanonical([1, 2])],
      ['trailing byte in the header', concat(header(T.offer, PROVIDER), unhex('00'))],
      ['content type length not in shortest form', concat(unhex('a301270378'), Uint8Array.of(type.length), type, unhex('04'), bstr(did))],
    ];
    for (const [what, prot] of cases) {
      // Signed correctly (so only the header is wrong), and the expected type is wrong too: the header check comes first.
      assertCode(() => open(build({ prot, payload, signer: provider }), T.job), ENV_ERR.HEADER_NOT_CANONICAL, what);
    }
  });

  test('protected header: incomplete, unknown parameter, bad alg', () => {
    const payload = encodeCanonical(offerCore());
    const did = utf8(PROVIDER);
    const cases: Array<[string, Uint8Array, string]> = [
      ['no kid', encodeHeaderMap([[1, -8], [3, T.offer]]), ENV_ERR.HEADER_INCOMPLETE],
      ['no content type', encodeHeaderMap([[1, -8], [4, did]]), ENV_ERR.HEADER_INCOMPLETE],
      ['no alg', encodeHeaderMap([[3, T.offer], [4, did]]), ENV_ERR.HEADER_INCOMPLETE],
      ['empty header', encodeHeaderMap([]), ENV_ERR.HEADER_INCOMPLETE],
      ['content type as an integer (CoAP format)', encodeHeaderMap([[1, -8], [3, 60], [4, did]]), ENV_ERR.HEADER_INCOMPLETE],
      ['kid as text', encodeHeaderMap([[1, -8], [3, T.offer], [4, PROVIDER]]), ENV_ERR.HEADER_INCOMPLETE],
      ['extra parameter 5 (IV)', header(T.offer, PROVIDER, [[5, new Uint8Array(12)]]), ENV_ERR.HEADER_UNKNOWN],
      ['extra parameter 2 (crit)', header(T.offer, PROVIDER, [[2, [1]]]), ENV_ERR.HEADER_UNKNOWN],
      ['a text label', encodeHeaderMap([[1, -8], [3, T.offer], [4, did], ['x', 1]]), ENV_ERR.HEADER_UNKNOWN],
      ['unknown parameter and no kid: unknown is reported first', encodeHeaderMap([[1, -8], [3, T.offer], [7, 1]]), ENV_ERR.HEADER_UNKNOWN],
      ['alg -7 (ES256)', encodeHeaderMap([[1, -7], [3, T.offer], [4, did]]), ENV_ERR.BAD_ALG],
      ['alg as text "EdDSA"', encodeHeaderMap([[1, 'EdDSA'], [3, T.offer], [4, did]]), ENV_ERR.BAD_ALG],
    ];
    for (const [what, prot, code] of cases) assertCode(() => open(build({ prot, payload, signer: provider }), T.job), code, what);
  });

  test('content type: a record of another type is refused, even when its signature is also bad', () => {
    const good = goodOffer();
    assertCode(() => open(good, T.job), ENV_ERR.WRONG_TYPE);
    const badSig = flip(good, good.length - 1);
    assertCode(() => open(badSig, T.offer), ENV_ERR.SIGNATURE);
    assertCode(() => open(badSig, T.job), ENV_ERR.WRONG_TYPE);
    // …and even when the signer's key is refused: the type check comes before the key check.
    const refusedSigner = build({ prot: header(T.offer, SMALL_ORDER_DID), payload: encodeCanonical(offerCore()), sig: new Uint8Array(64) });
    assertCode(() => open(refusedSigner, T.job), ENV_ERR.WRONG_TYPE);
    const e = assertCode(() => open(good, T.job), ENV_ERR.WRONG_TYPE);
    assert.equal(e.field, 'type');
  });

  test('content type: a malformed or unknown type is refused', () => {
    const payload = encodeCanonical(offerCore());
    assertCode(() => openAny(build({ prot: header('Not A Type', PROVIDER), payload, signer: provider })), ENV_ERR.WRONG_TYPE);
    assertCode(() => open(build({ prot: header('Not A Type', PROVIDER), payload, signer: provider }), 'Not A Type'), ENV_ERR.WRONG_TYPE);
    const unknown = build({ prot: header('c0mpute.unknown/1', PROVIDER), payload, signer: provider });
    assertCode(() => openAny(unknown), ENV_ERR.UNKNOWN_TYPE);
    assertCode(() => open(unknown, 'c0mpute.unknown/1'), ENV_ERR.UNKNOWN_TYPE);
    assertCode(() => seal('c0mpute.unknown/1', {} as never, provider), ENV_ERR.UNKNOWN_TYPE);
  });

  test('signer: a malformed DID or a refused key is ENVELOPE_BAD_SIGNER, before the signature is checked', () => {
    const payload = encodeCanonical(offerCore());
    const cases: Array<[string, Uint8Array]> = [
      ['not a DID', header(T.offer, 'alice')],
      ['did:web', header(T.offer, 'did:web:example.com')],
      ['did:key with a bad base58 character', header(T.offer, PROVIDER.slice(0, -1) + '0')],
      ['did:key of a small-order key (the identity point)', header(T.offer, SMALL_ORDER_DID)],
      ['kid that is not UTF-8', encodeHeaderMap([[1, -8], [3, T.offer], [4, unhex('ff')]])],
    ];
    for (const [what, prot] of cases) {
      // Signed by a real key, but the kid does not name a usable key.
      assertCode(() => open(build({ prot, payload, signer: provider }), T.offer), ENV_ERR.SIGNER, what);
    }
    const e = assertCode(() => open(build({ prot: header(T.offer, SMALL_ORDER_DID), payload, sig: new Uint8Array(64) }), T.offer), ENV_ERR.SIGNER);
    assert.equal(e.detail?.reason, 'DID_BAD_KEY');
  });

  test('signer: the node:crypto edge (identity key, R = identity, S = 0 "verifies" any message) is refused', () => {
    // OpenSSL accepts this signature for any message under the identity public key; we refuse the key first.
    const sig = concat(IDENTITY_KEY, new Uint8Array(32));
    const env = build({ prot: header(T.offer, SMALL_ORDER_DID), payload: encodeCanonical(offerCore()), sig });
    assertCode(() => open(env, T.offer), ENV_ERR.SIGNER);
  });

  test('signature: flipped signature, flipped payload, another signer, S ≥ L', () => {
    const good = goodOffer();
    const n = good.length;
    assertCode(() => open(flip(good, n - 1), T.offer), ENV_ERR.SIGNATURE, 'last byte of S');
    assertCode(() => open(flip(good, n - 64), T.offer), ENV_ERR.SIGNATURE, 'first byte of R');
    // A payload byte: the payload is still canonical CBOR of the same shape, but not what was signed.
    const payload = encodeCanonical(offerCore());
    const tampered = Uint8Array.from(payload);
    tampered[payload.length - 1] = tampered[payload.length - 1]! ^ 0x01;
    const prot = header(T.offer, PROVIDER);
    const sig = provider.sign(sigStructure(prot, payload));
    assertCode(() => open(build({ prot, payload: tampered, sig }), T.offer), ENV_ERR.SIGNATURE, 'payload byte');
    // Signed by the buyer, naming the provider as signer.
    assertCode(() => open(build({ prot, payload, signer: buyer }), T.offer), ENV_ERR.SIGNATURE, 'wrong key');
    // S + L: the same signature, malleated. Refused (S must be < L).
    const L = 2n ** 252n + 27742317777372353535851937790883648493n;
    const S = BigInt('0x' + hex(Uint8Array.from(sig.subarray(32)).reverse()));
    const sPlusL = unhex((S + L).toString(16).padStart(64, '0')).reverse();
    assertCode(() => open(build({ prot, payload, sig: concat(sig.subarray(0, 32), sPlusL) }), T.offer), ENV_ERR.SIGNATURE, 'S + L');
    // A non-canonical payload with a bad signature: the signature is checked first.
    const unsorted = unhex('a2616200616101');
    assertCode(() => open(build({ prot, payload: unsorted, sig }), T.offer), ENV_ERR.SIGNATURE, 'non-canonical and unsigned');
  });

  test('payload: validly signed but not a canonical core → the CBOR_* code', () => {
    const cases: Array<[string, string, string]> = [
      ['unsorted keys', 'a2616200616101', 'CBOR_UNSORTED_KEYS'],
      ['duplicate keys', 'a2616100616101', 'CBOR_DUPLICATE_KEY'],
      ['non-shortest integer', 'a161611900ff', 'CBOR_NON_SHORTEST_HEAD'],
      ['indefinite map', 'bf616101ff', 'CBOR_INDEFINITE_LENGTH'],
      ['float', 'a16161f93c00', 'CBOR_FLOAT'],
      ['boolean', 'a16161f5', 'CBOR_BOOLEAN'],
      ['null', 'a16161f6', 'CBOR_NULL'],
      ['tag', 'a16161c11a514b67b0', 'CBOR_TAG'],
      ['trailing bytes', 'a0' + '00', 'CBOR_TRAILING_BYTES'],
      ['invalid UTF-8', 'a1616162c328', 'CBOR_INVALID_UTF8'],
      ['truncated', 'a2616101', 'CBOR_TRUNCATED'],
      ['empty payload', '', 'CBOR_TRUNCATED'],
    ];
    for (const [what, h, code] of cases) {
      const env = sealRaw(T.offer, unhex(h), provider);
      assertCode(() => open(env, T.offer), code, what);
    }
    // The offer itself with one head written long: same value, different bytes, and validly signed.
    const canonical = hex(encodeCanonical(offerCore()));
    const long = canonical.replace('6a6475726174696f6e4d7319ea60', '6a6475726174696f6e4d731a0000ea60');
    assert.notEqual(long, canonical, 'durationMs head found');
    assertCode(() => open(sealRaw(T.offer, unhex(long), provider), T.offer), 'CBOR_NON_SHORTEST_HEAD');
  });

  test('record: the payload is not a map → RECORD_NOT_A_MAP', () => {
    assertCode(() => open(sealCore(T.offer, [1, 2], provider), T.offer), 'RECORD_NOT_A_MAP');
    assertCode(() => open(sealCore(T.offer, 'offer', provider), T.offer), 'RECORD_NOT_A_MAP');
  });
});

/** Kind rule failures: a record a peer could sign but no honest node would. Each is refused on open, and seal() refuses to sign it. */
describe('envelope: each kind’s rules, on seal and on open', () => {
  const cases: Array<{ what: string; type: string; make: () => unknown; signer: Signer; code: string }> = [
    { what: 'dispute without a reason', type: T.acceptance, make: () => ({ ...records.acceptance(), verdict: 'disputed' }), signer: buyer, code: 'ACCEPTANCE_REASON_MISSING' },
    { what: 'dispute with a blank reason', type: T.acceptance, make: () => ({ ...records.acceptance(), verdict: 'disputed', reason: '   ' }), signer: buyer, code: 'ACCEPTANCE_REASON_MISSING' },
    { what: 'offer expiresAt > startBy', type: T.offer, make: () => ({ ...records.offer(), expiresAt: NOW + 200_000, startBy: NOW + 100_000 }), signer: provider, code: 'OFFER_EXPIRES_AFTER_START' },
    { what: 'offer expiring before it is issued', type: T.offer, make: () => ({ ...records.offer(), expiresAt: NOW - 1 }), signer: provider, code: 'OFFER_LIFETIME_INVALID' },
    { what: 'receipt signed by someone else than its provider', type: T.receipt, make: records.receipt, signer: buyer, code: 'RECEIPT_SIGNER_NOT_PROVIDER' },
    { what: 'receipt whose buyer is its provider', type: T.receipt, make: () => ({ ...records.receipt(), buyer: PROVIDER }), signer: provider, code: 'RECEIPT_BUYER_IS_PROVIDER' },
    { what: 'completed receipt without an output hash', type: T.receipt, make: () => ({ ...records.receipt(), outputHash: undefined }), signer: provider, code: 'RECEIPT_OUTPUT_HASH_MISSING' },
    { what: 'failed receipt without a failure', type: T.receipt, make: () => ({ ...records.receipt(), status: 'failed', outputHash: undefined }), signer: provider, code: 'RECEIPT_FAILURE_MISSING' },
    { what: 'receipt completing before it started', type: T.receipt, make: () => ({ ...records.receipt(), completedAt: NOW - 1 }), signer: provider, code: 'RECEIPT_TIMES_INVALID' },
    { what: 'advert lifetime too long', type: T.advert, make: () => ({ ...records.advert(), expiresAt: NOW + 24 * 3_600_000 + 1 }), signer: provider, code: 'ADVERT_LIFETIME_TOO_LONG' },
    { what: 'advert pricing a workload it does not offer', type: T.advert, make: () => ({ ...records.advert(), prices: [{ workload: 'infer.image', unit: 'job', price: { amount: '1', currency: 'USD' } }] }), signer: provider, code: 'ADVERT_PRICE_UNKNOWN_WORKLOAD' },
    { what: 'private job without an allowlist', type: T.job, make: () => ({ ...records.job(), requirements: { tier: 'private' } }), signer: buyer, code: 'JOB_PRIVATE_NEEDS_ALLOWLIST' },
    { what: 'job deadline before its announcement', type: T.job, make: () => ({ ...records.job(), deadline: NOW }), signer: buyer, code: 'JOB_DEADLINE_INVALID' },
    { what: 'selection whose winner was not considered', type: T.selection, make: () => ({ ...records.selection(), winner: addr('9') }), signer: buyer, code: 'SELECTION_WINNER_NOT_CONSIDERED' },
    { what: 'delegation to oneself', type: T.delegation, make: () => ({ ...records.delegation(), gateway: BUYER }), signer: buyer, code: 'DELEGATION_TO_SELF' },
  ];
  for (const c of cases) {
    test(`${c.what} → ${c.code}`, () => {
      assertCode(() => seal(c.type, c.make() as never, c.signer), c.code, 'seal');
      assertCode(() => open(sealCore(c.type, coreOf(c.type, c.make()), c.signer), c.type), c.code, 'open');
    });
  }

  test('a private job with an allowlist is fine', () => {
    const job = { ...records.job(), requirements: { tier: 'private' as const, allowlist: [PROVIDER, GATEWAY].sort() } };
    assert.deepEqual(open(seal(T.job, job, buyer).bytes, T.job).record, job);
  });
});

/** Schema failures: the shape itself is wrong. Crafted at the core level for open(), at the record level for seal(). */
describe('envelope: field shapes (unknown, missing, wrong type, money)', () => {
  type Mutate = (o: Record<string, unknown>) => void;
  const cases: Array<{ what: string; record: Mutate; core?: Mutate; code: string; coreCode?: string }> = [
    { what: 'unknown top-level field', record: (o) => (o.extra = 1), code: 'RECORD_UNKNOWN_FIELD' },
    { what: 'unknown field in money', record: (o) => (o.price = { amount: '1', currency: 'USD', rate: '2' }), code: 'RECORD_UNKNOWN_FIELD' },
    { what: 'missing field', record: (o) => delete o.startBy, code: 'RECORD_FIELD_MISSING' },
    { what: 'missing money currency', record: (o) => (o.price = { amount: '1' }), code: 'RECORD_FIELD_MISSING' },
    { what: 'time as text', record: (o) => (o.issuedAt = '1800000000000'), code: 'RECORD_FIELD_TYPE' },
    { what: 'uint as a byte string', record: (o) => (o.durationMs = new Uint8Array(2)), code: 'RECORD_FIELD_TYPE' },
    { what: 'negative duration', record: (o) => (o.durationMs = -1), code: 'RECORD_FIELD_INVALID' },
    { what: 'zero duration (min 1)', record: (o) => (o.durationMs = 0), code: 'RECORD_FIELD_INVALID' },
    { what: 'money amount as a number', record: (o) => (o.price = { amount: 1, currency: 'USD' }), code: 'RECORD_FIELD_TYPE' },
    { what: 'money amount with a leading zero', record: (o) => (o.price = { amount: '01', currency: 'USD' }), code: 'RECORD_FIELD_INVALID' },
    { what: 'money amount with a trailing dot', record: (o) => (o.price = { amount: '1.', currency: 'USD' }), code: 'RECORD_FIELD_INVALID' },
    { what: 'money amount in exponent form', record: (o) => (o.price = { amount: '1e3', currency: 'USD' }), code: 'RECORD_FIELD_INVALID' },
    { what: 'money amount negative', record: (o) => (o.price = { amount: '-1', currency: 'USD' }), code: 'RECORD_FIELD_INVALID' },
    { what: 'money amount with 31 decimals', record: (o) => (o.price = { amount: '0.' + '1'.repeat(31), currency: 'USD' }), code: 'RECORD_FIELD_INVALID' },
    { what: 'money currency lower-case', record: (o) => (o.price = { amount: '1', currency: 'usd' }), code: 'RECORD_FIELD_INVALID' },
    { what: 'money as text', record: (o) => (o.price = '1 USD'), code: 'RECORD_FIELD_TYPE' },
    { what: 'address as text in the core', record: (o) => (o.job = 'sha256:' + '1'.repeat(63)), core: (o) => (o.job = 'sha256:' + '1'.repeat(64)), code: 'RECORD_FIELD_TYPE' },
    { what: 'address of 31 bytes in the core', record: (o) => (o.job = 42), core: (o) => (o.job = new Uint8Array(31)), code: 'RECORD_FIELD_TYPE', coreCode: 'RECORD_FIELD_INVALID' },
    // A 64-bit integer is canonical CBOR, but record fields are bounded by 2^53 − 1 (docs/protocol.md §1).
    { what: 'uint of 2^53 (bigint in the core)', record: (o) => (o.durationMs = 2 ** 53), core: (o) => (o.durationMs = 2n ** 53n), code: 'RECORD_INTEGER_RANGE' },
    { what: 'time of 2^64 − 1 (bigint in the core)', record: (o) => (o.issuedAt = 2n ** 64n - 1n), code: 'RECORD_INTEGER_RANGE' },
    { what: 'time below −2^53 (bigint in the core)', record: (o) => (o.startBy = -(2n ** 60n)), code: 'RECORD_FIELD_INVALID' },
  ];
  for (const c of cases) {
    test(`${c.what} → ${c.code}`, () => {
      const rec = records.offer() as unknown as Record<string, unknown>;
      c.record(rec);
      assertCode(() => seal(T.offer, rec as never, provider), c.code, 'seal');
      const core = offerCore();
      (c.core ?? c.record)(core);
      assertCode(() => open(sealCore(T.offer, core, provider), T.offer), c.coreCode ?? c.code, 'open');
    });
  }

  test('an unknown field named after an Object.prototype member is refused at every depth (own keys only are known)', () => {
    const names = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', '__defineGetter__', 'propertyIsEnumerable'];
    type Place = { what: string; type: string; signer: Signer; record: () => unknown; at: (core: Record<string, unknown>) => Record<string, unknown> };
    const sub = (o: Record<string, unknown>, ...path: Array<string | number>): Record<string, unknown> => path.reduce<Record<string, unknown>>((x, k) => (x as never)[k], o);
    const places: Place[] = [
      { what: 'top level', type: T.job, signer: buyer, record: records.job, at: (c) => c },
      { what: 'requirements', type: T.job, signer: buyer, record: records.job, at: (c) => sub(c, 'requirements') },
      { what: 'requirements.gpu', type: T.job, signer: buyer, record: records.job, at: (c) => sub(c, 'requirements', 'gpu') },
      { what: 'input', type: T.job, signer: buyer, record: records.job, at: (c) => sub(c, 'input') },
      { what: 'hardware.gpus[0] (an object in an array)', type: T.advert, signer: provider, record: records.advert, at: (c) => sub(c, 'hardware', 'gpus', 0) },
      { what: 'prices[0]', type: T.advert, signer: provider, record: records.advert, at: (c) => sub(c, 'prices', 0) },
      { what: 'considered[0]', type: T.selection, signer: buyer, record: records.selection, at: (c) => sub(c, 'considered', 0) },
    ];
    for (const p of places) {
      for (const name of names) {
        const core = coreOf(p.type, p.record());
        p.at(core)[name] = 1;
        assertCode(() => open(sealCore(p.type, core, p.signer), p.type), 'RECORD_UNKNOWN_FIELD', `${p.what}.${name}`);
      }
      // and the same record without the extra field opens
      assert.doesNotThrow(() => open(sealCore(p.type, coreOf(p.type, p.record()), p.signer), p.type), p.what);
    }
  });

  test('a record written as JSON: `constructor` and `__proto__` keys are unknown fields, at the top and nested', () => {
    const job = JSON.parse(JSON.stringify({ ...records.job(), input: { hash: addr('a'), size: 1024 } })) as Record<string, unknown>;
    for (const [what, text] of [
      ['constructor', JSON.stringify({ ...job, constructor: 1 })],
      ['nested toString', JSON.stringify({ ...job, requirements: { ...(job.requirements as object), toString: 'x' } })],
      // JSON.parse makes `__proto__` an own key; it must not become the record's prototype (filling in fields)
      ['__proto__', JSON.stringify(job).replace('{', '{"__proto__":{"extra":1},')],
    ] as const) {
      const rec = recordFromJson(kindOf(T.job).schema, JSON.parse(text));
      assertCode(() => seal(T.job, rec as never, buyer), 'RECORD_UNKNOWN_FIELD', what);
    }
    assert.doesNotThrow(() => seal(T.job, recordFromJson(kindOf(T.job).schema, job) as never, buyer));
  });

  test('workload, region and feature names must be well-formed', () => {
    assertCode(() => seal(T.advert, { ...records.advert(), workloads: ['LLM'] }, provider), 'RECORD_FIELD_INVALID');
    assertCode(() => seal(T.advert, { ...records.advert(), workloads: ['infer'] }, provider), 'RECORD_FIELD_INVALID');
    assertCode(() => seal(T.advert, { ...records.advert(), region: 'EU West' }, provider), 'RECORD_FIELD_INVALID');
    assertCode(() => seal(T.advert, { ...records.advert(), tier: 'gold' as never }, provider), 'RECORD_FIELD_INVALID');
    assertCode(() => seal(T.advert, { ...records.advert(), workloads: ['train.lora', 'infer.llm'] }, provider), 'RECORD_FIELD_INVALID'); // not sorted
    assertCode(() => seal(T.advert, { ...records.advert(), workloads: ['infer.llm', 'infer.llm'] }, provider), 'RECORD_FIELD_INVALID'); // duplicate
  });

  test('a DID field must name a usable key', () => {
    assertCode(() => seal(T.receipt, { ...records.receipt(), buyer: 'did:key:zNope' }, provider), 'RECORD_FIELD_INVALID');
    assertCode(() => seal(T.receipt, { ...records.receipt(), buyer: SMALL_ORDER_DID }, provider), 'RECORD_FIELD_INVALID');
  });
});

describe('envelope: an opened record owns its bytes', () => {
  test('an envelope that is a view of a larger buffer (a pool slab, a frame) is opened from a copy: neither the record nor its byte strings keep the larger buffer', () => {
    const env = seal(T.job, { ...records.job(), nonce: Uint8Array.of(1, 2, 3, 4) }, buyer).bytes;
    const slab = new Uint8Array(8192);
    slab.set(env, 100);
    const view = slab.subarray(100, 100 + env.length);
    for (const r of [open(view, T.job), openAny(view), open(view, T.job, { trusted: true })]) {
      assert.notEqual(r.bytes.buffer, slab.buffer);
      assert.equal(r.bytes.buffer.byteLength, env.length);
      assert.deepEqual(r.bytes, env);
      const nonce = (r.record as { nonce?: Uint8Array }).nonce;
      assert.ok(nonce instanceof Uint8Array && nonce.buffer !== slab.buffer, 'the nonce is not a view of the slab');
    }
    // an envelope in a buffer of its own is not copied
    const own = new Uint8Array(env);
    assert.equal(open(own, T.job).bytes, own);
  });
});

describe('envelope: inspect and trusted open', () => {
  test('inspect reports the first error with what could be read', () => {
    const good = goodOffer();
    const ok = inspect(good);
    assert.equal(ok.error, undefined);
    assert.equal(ok.type, T.offer);
    assert.equal(ok.signer, PROVIDER);
    const bad = inspect(flip(good, good.length - 1));
    assert.equal(bad.error?.code, ENV_ERR.SIGNATURE);
    assert.equal(bad.type, T.offer);
    assert.ok(bad.fields !== undefined);
    const junk = inspect(unhex('00'));
    assert.equal(junk.error?.code, ENV_ERR.MALFORMED);
    assert.match(junk.address, /^sha256:[0-9a-f]{64}$/);
  });

  test('trusted: skips only the signature; shape, type and rules are still checked', () => {
    const good = goodOffer();
    const badSig = flip(good, good.length - 1);
    assert.equal(open(badSig, T.offer, { trusted: true }).record.durationMs, 60_000);
    assertCode(() => open(badSig, T.job, { trusted: true }), ENV_ERR.WRONG_TYPE);
    const rule = sealCore(T.offer, coreOf(T.offer, { ...records.offer(), expiresAt: NOW + 200_000 }), provider);
    assertCode(() => open(rule, T.offer, { trusted: true }), 'OFFER_EXPIRES_AFTER_START');
  });
});

describe('envelope: mutations never open', () => {
  const envelopes = Object.entries(records).map(([name, make]) => {
    const type = T[name as keyof typeof T];
    return { type, bytes: seal(type, make() as never, signerOf[name as keyof typeof signerOf]).bytes };
  });

  test('random mutations of valid envelopes never open unless the bytes are unchanged', () => {
    const mutation = fc.oneof(
      fc.record({ op: fc.constant('xor' as const), at: fc.nat(), v: fc.integer({ min: 1, max: 255 }) }),
      fc.record({ op: fc.constant('set' as const), at: fc.nat(), v: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ op: fc.constant('insert' as const), at: fc.nat(), v: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ op: fc.constant('delete' as const), at: fc.nat(), v: fc.constant(0) }),
      fc.record({ op: fc.constant('truncate' as const), at: fc.nat(), v: fc.constant(0) }),
    );
    fc.assert(
      fc.property(fc.nat({ max: envelopes.length - 1 }), fc.array(mutation, { minLength: 1, maxLength: 3 }), (which, muts) => {
        const { type, bytes } = envelopes[which]!;
        let m: number[] = [...bytes];
        for (const { op, at, v } of muts) {
          const i = at % Math.max(m.length, 1);
          if (op === 'xor') m[i] = (m[i] ?? 0) ^ v;
          else if (op === 'set') m[i] = v;
          else if (op === 'insert') m.splice(i, 0, v);
          else if (op === 'delete') m.splice(i, 1);
          else m = m.slice(0, i);
        }
        const mutated = Uint8Array.from(m);
        if (hex(mutated) === hex(bytes)) {
          assert.equal(open(mutated, type).address, open(bytes, type).address);
          return;
        }
        let opened = false;
        try {
          open(mutated, type);
          opened = true;
        } catch (e) {
          assert.ok(e instanceof C0Error, `not a C0Error: ${String(e)}`);
        }
        assert.equal(opened, false, `a mutated ${type} envelope opened`);
        // openAny (no expected type) refuses it too.
        assert.throws(() => openAny(mutated), C0Error);
      }),
      { numRuns: 600 },
    );
  });
});
