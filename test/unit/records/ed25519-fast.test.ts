/**
 * The fast strict key check (libsodium's crypto_core_ed25519_is_valid_point, via sodium-native,
 * ed25519.ts) against the reference check (@noble/curves, checkPublicKeyNoble):
 * the same accept set on random 32-byte strings, on every small-order point in
 * every encoding, on non-canonical encodings (y ≥ p) and on mixed-order keys
 * (a valid key plus each torsion point), and checkPublicKey refuses with the
 * reference's error code. DESIGN §2; docs/scale.md §1.
 */
import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ed25519, ED25519_TORSION_SUBGROUP } from '@noble/curves/ed25519.js';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer, checkPublicKey, checkPublicKeyNoble, cryptoBackend, fastKeyCheck } from '../../../src/records/ed25519.js';
import { hex, unhex } from './fixtures.js';

const Point = ed25519.Point;
const P = 2n ** 255n - 19n;
const le32 = (n: bigint): Uint8Array => unhex(n.toString(16).padStart(64, '0')).reverse();

/** The reference verdict: null when accepted, else the error code. */
function refCode(pub: Uint8Array, check: (p: Uint8Array) => void = checkPublicKeyNoble): string | null {
  try {
    check(pub);
    return null;
  } catch (e) {
    assert.ok(e instanceof C0Error, `a coded error, got ${String(e)}`);
    return e.code;
  }
}

/** Fast and reference agree on this key, and checkPublicKey gives the reference's verdict and code. */
function same(pub: Uint8Array, what: string): boolean {
  const ref = refCode(pub);
  const fast = fastKeyCheck(pub);
  assert.equal(fast, ref === null, `${what} ${hex(pub)}: libsodium says ${String(fast)}, noble says ${ref ?? 'valid'}`);
  assert.equal(refCode(pub, checkPublicKey), ref, `${what} ${hex(pub)}: checkPublicKey's code`);
  return ref === null;
}

const withSign = (b: Uint8Array): Uint8Array => {
  const c = Uint8Array.from(b);
  c[31]! |= 0x80;
  return c;
};

describe('Ed25519 fast key check (libsodium) ≡ reference (noble)', () => {
  before(() => {
    // the addon ships prebuilt for this platform: the tests must exercise it, not only the fallback
    assert.equal(cryptoBackend, 'libsodium', 'sodium-native loads');
    assert.notEqual(fastKeyCheck(new Uint8Array(32)), undefined);
  });

  test('real keys: accepted by both', () => {
    for (let i = 0; i < 200; i++) assert.ok(same(Ed25519Signer.generate().publicKey, 'generated key'));
  });

  test('3,000 random 32-byte strings: the same verdicts (and both outcomes occur)', () => {
    let accepted = 0;
    for (let i = 0; i < 3000; i++) if (same(new Uint8Array(randomBytes(32)), 'random')) accepted++;
    // about half of random y are on the curve, and of those 1 in 8 is in the prime-order subgroup
    assert.ok(accepted > 50 && accepted < 600, `accepted ${accepted} of 3000`);
  });

  test('every small-order point, canonical and with the sign bit flipped: refused by both, same code', () => {
    assert.equal(ED25519_TORSION_SUBGROUP.length, 8);
    for (const h of ED25519_TORSION_SUBGROUP) {
      const b = unhex(h);
      assert.equal(same(b, 'small-order'), false);
      const flipped = Uint8Array.from(b);
      flipped[31]! ^= 0x80;
      assert.equal(same(flipped, 'small-order, sign flipped'), false);
    }
  });

  test('non-canonical encodings y ≥ p (every one, both sign bits): refused by both, same code', () => {
    for (let y = P; y < 2n ** 255n; y++) {
      assert.equal(same(le32(y), 'y ≥ p'), false);
      assert.equal(same(withSign(le32(y)), 'y ≥ p, sign set'), false);
    }
  });

  test('mixed-order keys (a valid key plus each torsion point): refused by both with KEY_NOT_IN_PRIME_SUBGROUP', () => {
    for (let k = 0; k < 20; k++) {
      const A = Point.fromBytes(Ed25519Signer.generate().publicKey);
      for (const h of ED25519_TORSION_SUBGROUP) {
        const T = Point.fromHex(h);
        if (T.equals(Point.ZERO)) continue;
        const mixed = A.add(T).toBytes();
        assert.equal(same(mixed, 'mixed-order'), false);
        assert.equal(refCode(mixed), 'KEY_NOT_IN_PRIME_SUBGROUP');
        // the same y with the other sign is the negated point: mixed-order too
        assert.equal(same(Uint8Array.from(mixed, (x, i) => (i === 31 ? x ^ 0x80 : x)), 'mixed-order, sign flipped'), false);
      }
    }
  });

  test('points of the prime-order subgroup from small scalars and their negations: accepted by both', () => {
    for (let s = 1n; s < 64n; s++) {
      const Q = Point.BASE.multiply(s);
      assert.ok(same(Q.toBytes(), 'k·B'));
      assert.ok(same(Q.negate().toBytes(), '-k·B'));
    }
  });
});
