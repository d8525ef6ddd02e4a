/**
 * Noise's ChaCha20-Poly1305 and X25519 through libsodium (docs/scale.md §3
 * "Seventh round", "Ninth round").
 *
 * @libp2p/noise seals and opens every frame of every connection. For frames
 * under 1,200 bytes (every gossip copy, every yamux window update) its default
 * uses an AssemblyScript build in WebAssembly, node:crypto above: here 9.4 µs
 * to seal and 7.2 µs to open a 450-byte frame, against 2.2 and 2.3 µs with
 * libsodium's IETF ChaCha20-Poly1305 (`sodium-native`, which already verifies
 * the node's signatures). Same cipher, same nonce, same tag: the wire does not
 * change, and a peer on the default interoperates (the tests check both ways).
 *
 * At 16 KiB the two are about even (17 against 19 µs to seal) and at 64 KiB
 * node:crypto's OpenSSL is faster (51 against 62 µs), so frames from 16 KiB up
 * (a flood's packed RPCs) stay on the default.
 *
 * Every connection's handshake makes an ephemeral X25519 key pair and three
 * Diffie-Hellman agreements at each end. The default builds node:crypto key
 * objects from DER for each one: here 156 µs for a key pair and 530 µs for an
 * agreement, against 18 and 37 µs with libsodium's `crypto_scalarmult` (the
 * same function, RFC 7748: the same keys and shared secrets, which the tests
 * check against the default). SHA-256 and HKDF stay @libp2p/noise's default.
 * Without the addon (no prebuilt binary for the platform) Noise keeps its
 * default throughout.
 */
import { defaultCrypto } from '@libp2p/noise/crypto';
import type { ICryptoInterface } from '@libp2p/noise';
import { sodium } from '../util/sodium.js';

/** A Uint8Array or a Uint8ArrayList (Noise hands either); a list is flattened. */
type Bytes = Parameters<ICryptoInterface['chaCha20Poly1305Encrypt']>[0];
type Out = ReturnType<ICryptoInterface['chaCha20Poly1305Encrypt']>;
const flat = (b: Bytes): Uint8Array => (b instanceof Uint8Array ? b : b.subarray());
const TAG = 16;
/** From this size up a frame goes to the default (node:crypto there). */
const LARGE = 16 * 1024;
/** What the default throws for a frame that does not authenticate; Noise's callers see the same. */
const BAD_FRAME = 'Invalid chacha20poly1305 decryption';

function encrypt(plaintext: Bytes, nonce: Uint8Array, ad: Uint8Array, k: Uint8Array): Out {
  if (plaintext.byteLength >= LARGE) return defaultCrypto.chaCha20Poly1305Encrypt(plaintext, nonce, ad, k);
  const m = flat(plaintext);
  const c = Buffer.allocUnsafe(m.byteLength + TAG);
  sodium!.crypto_aead_chacha20poly1305_ietf_encrypt(c, m, ad, null, nonce, k);
  return c;
}

function decrypt(ciphertext: Bytes, nonce: Uint8Array, ad: Uint8Array, k: Uint8Array, dst?: Uint8Array): Out {
  if (ciphertext.byteLength >= LARGE + TAG) return defaultCrypto.chaCha20Poly1305Decrypt(ciphertext, nonce, ad, k, dst);
  const c = flat(ciphertext);
  if (c.byteLength < TAG) throw new Error(BAD_FRAME);
  // Noise passes the start of the ciphertext's own bytes as dst (decryption in place, which libsodium supports),
  // or a view of a copy. A dst in the same memory at another offset (Noise never passes one; two copies from Node's
  // buffer pool may share an ArrayBuffer) is not written through: the plaintext goes to a fresh buffer instead
  const inPlace = dst !== undefined && dst.byteLength === c.byteLength - TAG && (dst.buffer !== c.buffer || dst.byteOffset === c.byteOffset);
  const m = inPlace ? dst : Buffer.allocUnsafe(c.byteLength - TAG);
  try {
    sodium!.crypto_aead_chacha20poly1305_ietf_decrypt(m, null, c, ad, nonce, k);
  } catch (e) {
    // a tag that does not match is the peer's frame; anything else (a bad key or nonce length) is a bug: rethrown
    if (e instanceof Error && /verify/i.test(e.message)) throw new Error(BAD_FRAME, { cause: e });
    throw e;
  }
  return m;
}

const X25519_BYTES = 32;

/**
 * A fresh key pair: 32 random bytes, and their product with the base point (libsodium clamps the scalar, as RFC 7748
 * does). Secrets get memory of their own (`alloc`), not a slice of Node's shared pool.
 */
function x25519KeyPair(): ReturnType<ICryptoInterface['generateX25519KeyPair']> {
  const privateKey = Buffer.alloc(X25519_BYTES);
  sodium!.randombytes_buf(privateKey);
  return x25519FromSeed(privateKey);
}

function x25519FromSeed(seed: Uint8Array): ReturnType<ICryptoInterface['generateX25519KeyPairFromSeed']> {
  const publicKey = Buffer.allocUnsafe(X25519_BYTES);
  sodium!.crypto_scalarmult_base(publicKey, seed);
  return { publicKey, privateKey: seed };
}

/** The shared secret. A public key of small order gives all zeros, which libsodium refuses (it throws) as OpenSSL does: the handshake fails either way. */
function x25519Shared(privateKey: Bytes, publicKey: Bytes): Uint8Array {
  const out = Buffer.alloc(X25519_BYTES);
  sodium!.crypto_scalarmult(out, flat(privateKey), flat(publicKey));
  return out;
}

/** The crypto this node's Noise runs with: libsodium's AEAD and X25519 when the addon loaded, else @libp2p/noise's default. */
export const noiseCrypto: ICryptoInterface =
  sodium === undefined
    ? defaultCrypto
    : { ...defaultCrypto, chaCha20Poly1305Encrypt: encrypt, chaCha20Poly1305Decrypt: decrypt, generateX25519KeyPair: x25519KeyPair, generateX25519KeyPairFromSeed: x25519FromSeed, generateX25519SharedKey: x25519Shared };

/** Which AEAD (and X25519) this process's Noise uses. */
export const noiseAead: 'libsodium' | 'default' = sodium === undefined ? 'default' : 'libsodium';
