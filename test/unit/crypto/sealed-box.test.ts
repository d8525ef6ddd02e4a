/** Sealed inputs: X25519 + HKDF-SHA256 + AES-256-GCM to a provider's box key. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { generateBoxKeyPair, seal, unseal } from '../../../src/crypto/sealed-box.js';

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof C0Error, `expected a C0Error, got ${String(e)}`);
    return e.code;
  }
  return undefined;
}

const msg = new TextEncoder().encode('the buyer’s private input');

describe('sealed box', () => {
  test('round trip; each seal is fresh (ephemeral key and nonce)', () => {
    const kp = generateBoxKeyPair();
    const a = seal(msg, kp.publicKey);
    const b = seal(msg, kp.publicKey);
    assert.equal(a.length, 32 + 12 + msg.length + 16);
    assert.notDeepEqual(a, b);
    assert.deepEqual(unseal(a, kp), msg);
    assert.deepEqual(unseal(b, kp), msg);
    assert.deepEqual(unseal(seal(new Uint8Array(0), kp.publicKey), kp), new Uint8Array(0));
  });

  test('a key pair from a seed is deterministic', () => {
    const seed = new Uint8Array(32).fill(7);
    assert.deepEqual(generateBoxKeyPair(seed).publicKey, generateBoxKeyPair(seed).publicKey);
    assert.notDeepEqual(generateBoxKeyPair(seed).publicKey, generateBoxKeyPair(new Uint8Array(32).fill(8)).publicKey);
  });

  test('another key cannot open it', () => {
    const kp = generateBoxKeyPair();
    const other = generateBoxKeyPair();
    assert.equal(code(() => unseal(seal(msg, kp.publicKey), other)), 'BOX_OPEN_FAILED');
  });

  test('any tampered byte is refused', () => {
    const kp = generateBoxKeyPair();
    const sealed = seal(msg, kp.publicKey);
    for (const i of [0, 31, 32, 43, 44, 44 + Math.floor(msg.length / 2), sealed.length - 17, sealed.length - 1]) {
      const t = Uint8Array.from(sealed);
      t[i]! ^= 0x01;
      const c = code(() => unseal(t, kp));
      assert.ok(c === 'BOX_OPEN_FAILED' || c === 'BOX_MALFORMED', `byte ${i}: got ${String(c)}`);
    }
    // Truncated by one byte: still long enough to parse, but the tag does not match.
    assert.equal(code(() => unseal(sealed.subarray(0, sealed.length - 1), kp)), 'BOX_OPEN_FAILED');
  });

  test('short input is BOX_MALFORMED; a bad recipient key is BOX_KEY_INVALID', () => {
    const kp = generateBoxKeyPair();
    assert.equal(code(() => unseal(new Uint8Array(59), kp)), 'BOX_MALFORMED');
    assert.equal(code(() => unseal(new Uint8Array(0), kp)), 'BOX_MALFORMED');
    assert.equal(code(() => seal(msg, new Uint8Array(31))), 'BOX_KEY_INVALID');
  });

  test('an all-zero (small-order) ephemeral key is refused, not opened', () => {
    const kp = generateBoxKeyPair();
    const forged = new Uint8Array(32 + 12 + 16 + 4); // eph = 0: shared secret would be all zeros
    const c = code(() => unseal(forged, kp));
    assert.ok(c === 'BOX_MALFORMED' || c === 'BOX_OPEN_FAILED', String(c));
  });
});
