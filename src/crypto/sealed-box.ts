/**
 * Sealed inputs: encrypt to a provider's X25519 box key so only the winner can
 * read them. Construction (documented in docs/protocol.md): an ephemeral X25519
 * key pair; shared = X25519(eph, recipient); key = HKDF-SHA256(shared,
 * salt = eph_pub ‖ recipient_pub, info = "c0mpute sealed input v1", 32 bytes);
 * AES-256-GCM with a random 12-byte nonce. Wire: eph_pub(32) ‖ nonce(12) ‖
 * ciphertext ‖ tag(16).
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { x25519 } from '@noble/curves/ed25519.js';
import { C0Error } from '../errors.js';

const INFO = Buffer.from('c0mpute sealed input v1');

export interface BoxKeyPair {
  publicKey: Uint8Array;
  secretKey: Uint8Array;
}

export function generateBoxKeyPair(seed?: Uint8Array): BoxKeyPair {
  const secretKey = seed ? Uint8Array.from(seed) : new Uint8Array(randomBytes(32));
  return { secretKey, publicKey: x25519.getPublicKey(secretKey) };
}

function derive(shared: Uint8Array, eph: Uint8Array, recipient: Uint8Array): Buffer {
  return Buffer.from(hkdfSync('sha256', shared, Buffer.concat([eph, recipient]), INFO, 32));
}

export function seal(plaintext: Uint8Array, recipientPublicKey: Uint8Array): Uint8Array {
  if (recipientPublicKey.length !== 32) throw new C0Error('BOX_KEY_INVALID', 'box key must be 32 bytes');
  const eph = generateBoxKeyPair();
  const shared = x25519.getSharedSecret(eph.secretKey, recipientPublicKey);
  const key = derive(shared, eph.publicKey, recipientPublicKey);
  const nonce = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', key, nonce);
  const ct = Buffer.concat([c.update(plaintext), c.final()]);
  return new Uint8Array(Buffer.concat([eph.publicKey, nonce, ct, c.getAuthTag()]));
}

export function unseal(sealed: Uint8Array, kp: BoxKeyPair): Uint8Array {
  if (sealed.length < 32 + 12 + 16) throw new C0Error('BOX_MALFORMED', 'sealed input is too short');
  const eph = sealed.subarray(0, 32);
  const nonce = sealed.subarray(32, 44);
  const ct = sealed.subarray(44, sealed.length - 16);
  const tag = sealed.subarray(sealed.length - 16);
  let shared: Uint8Array;
  try {
    shared = x25519.getSharedSecret(kp.secretKey, eph);
  } catch {
    throw new C0Error('BOX_MALFORMED', 'sealed input has an invalid ephemeral key');
  }
  const key = derive(shared, eph, kp.publicKey);
  try {
    const d = createDecipheriv('aes-256-gcm', key, nonce);
    d.setAuthTag(tag);
    return new Uint8Array(Buffer.concat([d.update(ct), d.final()]));
  } catch {
    throw new C0Error('BOX_OPEN_FAILED', 'sealed input does not open with this node’s box key');
  }
}

/**
 * The provider's box key derives from its identity seed (HKDF-SHA256, info
 * "c0mpute box key v1"), so it is stable across restarts with no second secret.
 */
export function boxKeyFromIdentitySeed(seed: Uint8Array): BoxKeyPair {
  const sk = new Uint8Array(hkdfSync('sha256', seed, new Uint8Array(0), Buffer.from('c0mpute box key v1'), 32));
  return generateBoxKeyPair(sk);
}
