/**
 * Noise's AEAD through libsodium (noise-crypto.ts) against @libp2p/noise's
 * default, both ways: what one seals the other opens, byte for byte the same
 * ciphertext, in place as Noise decrypts, from a Uint8ArrayList as Noise hands
 * it, and a frame that does not authenticate is refused by both.
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
