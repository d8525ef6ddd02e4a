/**
 * COSE interoperability (DESIGN §3.2: "any independent COSE library must verify
 * our records, and we must verify theirs").
 *
 * 1. The external vector cose-wg/Examples eddsa-examples/eddsa-sig-01.json
 *    ("EdDSA-01: EdDSA - 25519 - sign0", RFC 8032 test key 1): our Sig_structure
 *    code reproduces its ToBeSign bytes and its signature verifies under our
 *    strict verifier. Its protected header is {1: -8, 3: 0} with kid "11" in the
 *    unprotected header, which our profile does not accept as a record; so the
 *    Sig_structure + Ed25519 layer is what is tested against it.
 * 2. An independent stack (cborg + @noble/curves, no code of ours) verifies an
 *    envelope we sealed, and builds byte-identical envelopes that we open.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { decode as cborgDecode, encode as cborgEncode, rfc8949EncodeOptions } from 'cborg';
import { ed25519 } from '@noble/curves/ed25519.js';
import { base58btc } from 'multiformats/bases/base58';
import { ENV_ERR, kindOf, open, openAny, seal, sigStructure } from '../../../src/records/envelope.js';
import { Ed25519Signer, checkPublicKey, verifyStrict } from '../../../src/records/ed25519.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { T } from '../../../src/records/kinds.js';
import { toCore } from '../../../src/records/schema.js';
import { assertCode, concat, hex, provider, records, signerOf, unhex, utf8 } from './fixtures.js';

/** cose-wg/Examples eddsa-examples/eddsa-sig-01.json, as published. */
const EDDSA_SIG_01 = {
  key: {
    kty: 'OKP',
    crv: 'Ed25519',
    kid: '11',
    x_hex: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
    d_hex: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
  },
  plaintext: 'This is the content.',
  protected_hex: 'a201270300', // {1: -8 (EdDSA), 3: 0 (content type)}
  ToBeSign_hex: '846A5369676E61747572653145A2012703004054546869732069732074686520636F6E74656E742E',
  cbor_hex:
    'D28445A201270300A10442313154546869732069732074686520636F6E74656E742E5840' +
    '7142FD2FF96D56DB85BEE905A76BA1D0B7321A95C8C4D3607C5781932B7AFB8711497DFA751BF40B58B3BCC32300B1487F3DB34085EEF013BF08F4A44D6FEF0D',
};

/** Decode a tagged COSE_Sign1 with cborg only. */
function cborgSign1(bytes: Uint8Array): { prot: Uint8Array; unprot: unknown; payload: Uint8Array; sig: Uint8Array } {
  const tags: Array<(decode: () => unknown) => unknown> = [];
  tags[18] = (decode) => ({ sign1: decode() });
  const v = cborgDecode(bytes, { tags, useMaps: true }) as { sign1: [Uint8Array, unknown, Uint8Array, Uint8Array] };
  const [prot, unprot, payload, sig] = v.sign1;
  return { prot, unprot, payload, sig };
}

describe('COSE: the cose-wg eddsa-sig-01 vector', () => {
  const x = unhex(EDDSA_SIG_01.key.x_hex);
  const msg = cborgSign1(unhex(EDDSA_SIG_01.cbor_hex));

  test('the vector decodes as COSE_Sign1 with the documented parts', () => {
    assert.equal(hex(msg.prot), EDDSA_SIG_01.protected_hex);
    assert.deepEqual(msg.unprot, new Map([[4, utf8(EDDSA_SIG_01.key.kid)]]));
    assert.equal(new TextDecoder().decode(msg.payload), EDDSA_SIG_01.plaintext);
    assert.equal(msg.sig.length, 64);
  });

  test('our Sig_structure reproduces the ToBeSign bytes', () => {
    const tbs = sigStructure(unhex(EDDSA_SIG_01.protected_hex), utf8(EDDSA_SIG_01.plaintext));
    assert.equal(hex(tbs), EDDSA_SIG_01.ToBeSign_hex.toLowerCase());
    // and so does an independent encoding of ["Signature1", protected, h'', payload]
    const theirs = cborgEncode(['Signature1', msg.prot, new Uint8Array(0), msg.payload], rfc8949EncodeOptions);
    assert.equal(hex(tbs), hex(theirs));
  });

  test('the signature verifies under our strict rule (and noble agrees); our signer reproduces it', () => {
    const tbs = sigStructure(msg.prot, msg.payload);
    assert.doesNotThrow(() => checkPublicKey(x));
    assert.equal(verifyStrict(msg.sig, tbs, x), true);
    assert.equal(ed25519.verify(msg.sig, tbs, x, { zip215: false }), true);
    const signer = new Ed25519Signer(unhex(EDDSA_SIG_01.key.d_hex));
    assert.equal(hex(signer.publicKey), EDDSA_SIG_01.key.x_hex);
    assert.equal(hex(signer.sign(tbs)), hex(msg.sig), 'Ed25519 is deterministic: same bytes as the vector');
    // A changed payload does not verify.
    assert.equal(verifyStrict(msg.sig, sigStructure(msg.prot, utf8('This is the content!')), x), false);
  });

  test('as a c0mpute record the vector is refused: its unprotected header is not empty (our profile)', () => {
    assertCode(() => openAny(unhex(EDDSA_SIG_01.cbor_hex)), ENV_ERR.MALFORMED);
  });
});

describe('COSE: an independent implementation and ours agree', () => {
  test('cborg + noble verify an envelope we sealed (every kind)', () => {
    for (const [name, make] of Object.entries(records)) {
      const type = T[name as keyof typeof T];
      const signer = signerOf[name as keyof typeof signerOf];
      const { bytes } = seal(type, make() as never, signer);
      const m = cborgSign1(bytes);
      assert.deepEqual(m.unprot, new Map());
      const hdr = cborgDecode(m.prot, { useMaps: true }) as Map<number, unknown>;
      assert.equal(hdr.get(1), -8);
      assert.equal(hdr.get(3), type);
      const did = new TextDecoder().decode(hdr.get(4) as Uint8Array);
      // did:key → raw key, by hand: multibase z + base58btc(0xed 0x01 ‖ key)
      assert.ok(did.startsWith('did:key:z'));
      const mc = base58btc.decode(did.slice('did:key:'.length));
      assert.equal(hex(mc.subarray(0, 2)), 'ed01');
      const pub = mc.subarray(2);
      assert.equal(hex(pub), hex(signer.publicKey));
      const tbs = cborgEncode(['Signature1', m.prot, new Uint8Array(0), m.payload], rfc8949EncodeOptions);
      assert.equal(ed25519.verify(m.sig, tbs, pub, { zip215: false }), true, `${type} verifies independently`);
      // The payload is the canonical core cborg itself would write.
      const core = cborgDecode(m.payload);
      assert.equal(hex(cborgEncode(core, rfc8949EncodeOptions)), hex(m.payload));
    }
  });

  test('an envelope built by cborg + noble is byte-identical to ours, and opens', () => {
    const seed = new Uint8Array(32).fill(1); // the fixture provider's seed
    const pub = ed25519.getPublicKey(seed);
    const did = 'did:key:' + base58btc.encode(concat(Uint8Array.of(0xed, 0x01), pub));
    assert.equal(did, didFromPublicKey(provider.publicKey));
    const prot = cborgEncode(new Map<number, unknown>([[1, -8], [3, T.offer], [4, utf8(did)]]), rfc8949EncodeOptions);
    const payload = cborgEncode(toCore(kindOf(T.offer).schema, records.offer()), rfc8949EncodeOptions);
    const sig = ed25519.sign(cborgEncode(['Signature1', prot, new Uint8Array(0), payload], rfc8949EncodeOptions), seed);
    const theirs = concat(Uint8Array.of(0xd2), cborgEncode([prot, {}, payload, sig], rfc8949EncodeOptions));
    const ours = seal(T.offer, records.offer(), provider);
    assert.equal(hex(theirs), hex(ours.bytes));
    assert.equal(open(theirs, T.offer).address, ours.address);
  });

  test('a noble signature over a record of ours with a different (valid) key opens', () => {
    const seed = new Uint8Array(32).fill(42);
    const pub = ed25519.getPublicKey(seed);
    const did = didFromPublicKey(pub);
    const prot = cborgEncode(new Map<number, unknown>([[1, -8], [3, T.presence], [4, utf8(did)]]), rfc8949EncodeOptions);
    const payload = cborgEncode(toCore(kindOf(T.presence).schema, records.presence()), rfc8949EncodeOptions);
    const sig = ed25519.sign(cborgEncode(['Signature1', prot, new Uint8Array(0), payload], rfc8949EncodeOptions), seed);
    const env = concat(Uint8Array.of(0xd2), cborgEncode([prot, {}, payload, sig], rfc8949EncodeOptions));
    const opened = open(env, T.presence);
    assert.equal(opened.signer, did);
    assert.deepEqual(opened.record, records.presence());
  });
});
