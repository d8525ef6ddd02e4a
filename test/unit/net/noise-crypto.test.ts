/**
 * Noise's AEAD and X25519 through libsodium (noise-crypto.ts) against
 * @libp2p/noise's default, both ways: what one seals the other opens, byte for
 * byte the same ciphertext, in place as Noise decrypts, from a Uint8ArrayList
 * as Noise hands it, and a frame that does not authenticate is refused by
 * both; the same X25519 keys and secrets (RFC 7748's vectors too), and a
 * small-order public key refused by both.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { defaultCrypto } from '@libp2p/noise/crypto';
import { noiseAead, noiseCrypto } from '../../../src/net/noise-crypto.js';

const k = randomBytes(32);
const nonce = new Uint8Array(12);
nonce.set([0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0]);
const flat = (x: Uint8Array | { subarray(): Uint8Array }): Uint8Array => (x instanceof Uint8Array ? x : x.subarray());

test('libsodium is in use here (the addon is a dependency with a prebuilt binary)', () => {
  assert.equal(noiseAead, 'libsodium');
});

test('the same ciphertext as the default, and each opens the other’s, at every frame size Noise sends', () => {
  for (const size of [0, 1, 12, 60, 450, 1199, 1200, 4000, 16383, 16384, 65519]) {
    for (const ad of [new Uint8Array(0), randomBytes(32)]) {
      const m = randomBytes(size);
      const ours = flat(noiseCrypto.chaCha20Poly1305Encrypt(m, nonce, ad, k));
      const theirs = flat(defaultCrypto.chaCha20Poly1305Encrypt(m, nonce, ad, k));
      assert.deepEqual(Buffer.from(ours), Buffer.from(theirs), `size ${size}, ad ${ad.length}`);
      assert.deepEqual(Buffer.from(flat(defaultCrypto.chaCha20Poly1305Decrypt(Uint8Array.from(ours), nonce, ad, k))), m);
      assert.deepEqual(Buffer.from(flat(noiseCrypto.chaCha20Poly1305Decrypt(Uint8Array.from(theirs), nonce, ad, k))), m);
    }
  }
});

test('in place, as Noise decrypts (dst is the start of the ciphertext)', () => {
  const m = randomBytes(450);
  const c = Uint8Array.from(flat(noiseCrypto.chaCha20Poly1305Encrypt(m, nonce, new Uint8Array(0), k)));
  const dst = c.subarray(0, c.length - 16);
  const out = noiseCrypto.chaCha20Poly1305Decrypt(c, nonce, new Uint8Array(0), k, dst);
  assert.equal(out, dst);
  assert.deepEqual(Buffer.from(dst), m);
});

test('a Uint8ArrayList in, as Noise hands a frame made of several buffers', () => {
  const m = randomBytes(300);
  const parts = [m.subarray(0, 12), m.subarray(12)];
  const list = { byteLength: 300, subarray: () => Buffer.concat(parts) };
  const c = flat(noiseCrypto.chaCha20Poly1305Encrypt(list as never, nonce, new Uint8Array(0), k));
  assert.deepEqual(Buffer.from(c), Buffer.from(flat(defaultCrypto.chaCha20Poly1305Encrypt(m, nonce, new Uint8Array(0), k))));
});

test('decrypting a frame held in several buffers, as Noise hands a frame split across socket reads', () => {
  const m = randomBytes(450);
  const c = Uint8Array.from(flat(defaultCrypto.chaCha20Poly1305Encrypt(m, nonce, new Uint8Array(0), k)));
  const parts = [c.subarray(0, 100), c.subarray(100)];
  // the list flattens into a copy, and Noise's dst is then a view of that copy's start, not of the list's memory
  const list = { byteLength: c.length, subarray: () => Buffer.concat(parts) };
  const dst = Buffer.alloc(450);
  assert.deepEqual(Buffer.from(flat(noiseCrypto.chaCha20Poly1305Decrypt(list as never, nonce, new Uint8Array(0), k, dst))), m);
});

test('a dst overlapping the ciphertext at an offset is not written through (a fresh buffer is)', () => {
  const m = randomBytes(200);
  const c = Uint8Array.from(flat(noiseCrypto.chaCha20Poly1305Encrypt(m, nonce, new Uint8Array(0), k)));
  const shifted = c.subarray(8, 8 + 200);
  const out = noiseCrypto.chaCha20Poly1305Decrypt(c, nonce, new Uint8Array(0), k, shifted);
  assert.notEqual(out, shifted);
  assert.deepEqual(Buffer.from(flat(out)), m);
});

test('a bad key or nonce length is a thrown programming error, not a refused frame', () => {
  const c = Uint8Array.from(flat(noiseCrypto.chaCha20Poly1305Encrypt(randomBytes(10), nonce, new Uint8Array(0), k)));
  assert.throws(
    () => noiseCrypto.chaCha20Poly1305Decrypt(c, new Uint8Array(5), new Uint8Array(0), k),
    (e: Error) => !/Invalid chacha20poly1305 decryption/.test(e.message),
  );
});

test('a frame that does not authenticate is refused, as by the default', () => {
  const m = randomBytes(100);
  const c = Uint8Array.from(flat(noiseCrypto.chaCha20Poly1305Encrypt(m, nonce, new Uint8Array(0), k)));
  for (const at of [0, 50, c.length - 1]) {
    const bad = Uint8Array.from(c);
    bad[at] = bad[at]! ^ 1;
    assert.throws(() => noiseCrypto.chaCha20Poly1305Decrypt(Uint8Array.from(bad), nonce, new Uint8Array(0), k), /Invalid chacha20poly1305 decryption/);
    assert.throws(() => defaultCrypto.chaCha20Poly1305Decrypt(Uint8Array.from(bad), nonce, new Uint8Array(0), k));
  }
  // wrong nonce, wrong key, too short
  assert.throws(() => noiseCrypto.chaCha20Poly1305Decrypt(Uint8Array.from(c), new Uint8Array(12), new Uint8Array(0), k), /Invalid/);
  assert.throws(() => noiseCrypto.chaCha20Poly1305Decrypt(Uint8Array.from(c), nonce, new Uint8Array(0), randomBytes(32)), /Invalid/);
  assert.throws(() => noiseCrypto.chaCha20Poly1305Decrypt(new Uint8Array(15), nonce, new Uint8Array(0), k), /Invalid/);
});

test('X25519: a key pair from a seed, and the shared secret, are the default’s; each side’s keys agree with the other’s', () => {
  for (let i = 0; i < 20; i++) {
    const seed = randomBytes(32);
    const ours = noiseCrypto.generateX25519KeyPairFromSeed(seed);
    const theirs = defaultCrypto.generateX25519KeyPairFromSeed(seed);
    assert.deepEqual(Buffer.from(ours.publicKey), Buffer.from(theirs.publicKey));
    // a fresh pair of ours with a fresh pair of the default's: both ends compute the same secret, whichever crypto
    const a = noiseCrypto.generateX25519KeyPair();
    const b = defaultCrypto.generateX25519KeyPair();
    assert.equal(a.publicKey.length, 32);
    assert.equal(a.privateKey.length, 32);
    const ab = Buffer.from(noiseCrypto.generateX25519SharedKey(a.privateKey, b.publicKey));
    assert.deepEqual(ab, Buffer.from(defaultCrypto.generateX25519SharedKey(b.privateKey, a.publicKey)));
    assert.deepEqual(ab, Buffer.from(defaultCrypto.generateX25519SharedKey(a.privateKey, b.publicKey)));
    assert.deepEqual(ab, Buffer.from(noiseCrypto.generateX25519SharedKey(b.privateKey, a.publicKey)));
  }
});

test('X25519: the RFC 7748 §6.1 vectors', () => {
  const hex = (h: string) => Buffer.from(h, 'hex');
  const aPriv = hex('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a');
  const bPriv = hex('5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb');
  assert.equal(Buffer.from(noiseCrypto.generateX25519KeyPairFromSeed(aPriv).publicKey).toString('hex'), '8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a');
  const bPub = noiseCrypto.generateX25519KeyPairFromSeed(bPriv).publicKey;
  assert.equal(Buffer.from(bPub).toString('hex'), 'de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f');
  assert.equal(Buffer.from(noiseCrypto.generateX25519SharedKey(aPriv, bPub)).toString('hex'), '4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742');
});

test('X25519: a public key of small order (an all-zero secret) fails the agreement, as with the default', () => {
  const a = noiseCrypto.generateX25519KeyPair();
  for (const bad of [new Uint8Array(32), Uint8Array.from([1, ...new Uint8Array(31)])]) {
    assert.throws(() => noiseCrypto.generateX25519SharedKey(a.privateKey, bad));
    assert.throws(() => defaultCrypto.generateX25519SharedKey(a.privateKey, bad));
  }
});

test('X25519 from a Uint8ArrayList, as Noise may hand a key', () => {
  const a = noiseCrypto.generateX25519KeyPair();
  const b = noiseCrypto.generateX25519KeyPair();
  const list = { byteLength: 32, subarray: () => Buffer.from(b.publicKey) };
  assert.deepEqual(Buffer.from(noiseCrypto.generateX25519SharedKey(a.privateKey, list as never)), Buffer.from(defaultCrypto.generateX25519SharedKey(a.privateKey, b.publicKey)));
});
