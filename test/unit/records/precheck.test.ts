/**
 * The signature precheck for keys not checked yet (issue #10: a cheaper first
 * check for a new key): it may only refuse what the strict rule of DESIGN §2
 * refuses. Differential over random keys and signatures, corrupted ones, and
 * the edge keys (small-order, mixed-order, non-canonical, off-curve).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { ed25519, ED25519_TORSION_SUBGROUP } from '@noble/curves/ed25519.js';
import { Ed25519Signer, checkPublicKey, precheckVerify, verifyStrict, cryptoBackend, type CryptoBackend } from '../../../src/records/ed25519.js';
import { precheckSignature, seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { concat, unhex, records } from './fixtures.js';

/** Both backends when the addon loads here; each precheck is held to its own backend's strict verdict. */
const BACKENDS: CryptoBackend[] = cryptoBackend === 'libsodium' ? ['libsodium', 'node:crypto'] : ['node:crypto'];

function strict(sig: Uint8Array, msg: Uint8Array, pub: Uint8Array, b: CryptoBackend): boolean {
  try {
    checkPublicKey(pub);
  } catch {
    return false;
  }
  return verifyStrict(sig, msg, pub, b);
}

const T8 = ed25519.Point.fromHex('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a');
const P = 2n ** 255n - 19n;
const le32 = (n: bigint): Uint8Array => unhex(n.toString(16).padStart(64, '0')).reverse();

/** Keys at the edges: every small-order encoding, mixed-order, non-canonical, off-curve. */
const EDGE_KEYS: Uint8Array[] = [
  ...ED25519_TORSION_SUBGROUP.map((h) => unhex(h)),
  ed25519.utils.getExtendedPublicKey(new Uint8Array(32).fill(7)).point.add(T8).toBytes(),
  le32(P + 3n),
  le32(P + 1n),
  le32(2n),
];

test('precheck false ⇒ the strict rule refuses (random keys, messages, corruptions)', () => {
  fc.assert(
    fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ maxLength: 64 }), fc.nat(63), fc.nat(7), fc.boolean(), (seed, msg, at, bit, corrupt) => {
      const s = new Ed25519Signer(seed);
      const sig = s.sign(msg);
      if (corrupt) sig[at]! ^= 1 << bit;
      for (const b of BACKENDS) {
        const pre = precheckVerify(sig, msg, s.publicKey, b);
        const ok = strict(sig, msg, s.publicKey, b);
        if (ok) assert.notEqual(pre, false, `${b}: the precheck refused a signature the strict rule accepts`);
        if (pre === false) assert.equal(ok, false);
        if (!corrupt) assert.equal(pre, true);
      }
    }),
    { numRuns: 300 },
  );
});

test('precheck false ⇒ the strict rule refuses (edge keys with signatures bent towards them)', () => {
  const msg = new TextEncoder().encode('edge');
  for (const pub of EDGE_KEYS) {
    const sigs = [
      concat(pub, new Uint8Array(32)), // R = A, S = 0
      concat(unhex('0100000000000000000000000000000000000000000000000000000000000000'), new Uint8Array(32)), // identity R, S = 0
      new Uint8Array(64),
      new Ed25519Signer(new Uint8Array(32).fill(9)).sign(msg),
    ];
    for (const sig of sigs) {
      for (const b of BACKENDS) {
        const pre = precheckVerify(sig, msg, pub, b);
        assert.equal(strict(sig, msg, pub, b), false, 'edge keys are refused by the strict rule');
        // a well-formed signature (R not of small order, S < L) under a refused key is the key's fault, not the
        // signature's: the libsodium precheck leaves it to the key check (ENVELOPE_BAD_SIGNER), it does not say false
        if (b === 'libsodium' && sig === sigs[3]) assert.equal(pre, undefined, 'libsodium precheck blamed the signature for a bad key');
      }
    }
  }
});

test('precheckSignature: a good record passes, a bit-flipped one is ENVELOPE_BAD_SIGNATURE', () => {
  const s = Ed25519Signer.generate();
  const env = seal(T.offer, records.offer(), s);
  precheckSignature(env.bytes);
  const bad = Uint8Array.from(env.bytes);
  bad[bad.length - 3]! ^= 4;
  assert.throws(() => precheckSignature(bad), (e: { code?: string }) => e.code === 'ENVELOPE_BAD_SIGNATURE');
});
