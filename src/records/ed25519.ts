/**
 * Ed25519 under one verification rule everywhere (DESIGN §2):
 * RFC 8032 cofactorless verification with S < L; the public key is a canonical
 * encoding of a point of the prime-order subgroup that is not of small order;
 * R is a canonical encoding of a point that is not of small order.
 *
 * Two backends give the same verdicts (test/unit/records/ed25519*.test.ts runs
 * every edge vector through both):
 *  - **libsodium** (`sodium-native`, a native addon with prebuilt binaries for
 *    Linux, macOS and Windows on x64 and arm64; no install script, no
 *    download): `crypto_sign_verify_detached` (about 2.2x node:crypto's verify
 *    here) and `crypto_core_ed25519_is_valid_point` for the key check
 *    (canonical y < p, on the curve, not small order, prime-order subgroup).
 *    libsodium's verify is cofactorless, refuses S >= L and a small-order R, and
 *    compares the recomputed R with the R bytes, which refuses a non-canonical R;
 *  - **node:crypto** (OpenSSL, the same cofactorless equation and R comparison)
 *    with the key check in pure JS (@noble/curves): used when the addon cannot
 *    be loaded on this platform (`cryptoBackend`).
 * Either way we add the explicit S < L and small-order R checks, so the rule
 * does not depend on the library's build. A key the fast check refuses goes
 * through @noble/curves, which names the reason (the error codes). The key
 * check is done once per key and cached (did.ts). docs/scale.md §1.
 */
import { createPrivateKey, createPublicKey, sign as nodeSign, verify as nodeVerify, randomBytes, type KeyObject } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { C0Error } from '../errors.js';
import { sodium } from '../util/sodium.js';

export const ED_ERR = {
  KEY_LENGTH: 'KEY_BAD_LENGTH',
  KEY_NON_CANONICAL: 'KEY_NON_CANONICAL',
  KEY_NOT_ON_CURVE: 'KEY_NOT_ON_CURVE',
  KEY_SMALL_ORDER: 'KEY_SMALL_ORDER',
  KEY_MIXED_ORDER: 'KEY_NOT_IN_PRIME_SUBGROUP',
} as const;

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** The group order L, little-endian, for the S < L check. */
const L_LE = (() => {
  const L = 2n ** 252n + 27742317777372353535851937790883648493n;
  const out = new Uint8Array(32);
  let x = L;
  for (let i = 0; i < 32; i++) {
    out[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return out;
})();

function sLessThanL(sig: Uint8Array): boolean {
  for (let i = 31; i >= 0; i--) {
    const s = sig[32 + i]!;
    const l = L_LE[i]!;
    if (s < l) return true;
    if (s > l) return false;
  }
  return false; // equal
}

/** Canonical encodings of the eight small-order points (the only ones OpenSSL could match as R). */
const SMALL_ORDER_R = new Set(
  [
    '0100000000000000000000000000000000000000000000000000000000000000',
    'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f',
    '0000000000000000000000000000000000000000000000000000000000000000',
    '0000000000000000000000000000000000000000000000000000000000000080',
    '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05',
    '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85',
    'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a',
    'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa',
  ].map((h) => h),
);

function hex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

export type CryptoBackend = 'libsodium' | 'node:crypto';
/** Which backend verifies signatures and checks keys in this process: libsodium when the addon loaded (util/sodium.ts); without it node:crypto and @noble/curves give the same verdicts. */
export const cryptoBackend: CryptoBackend = sodium ? 'libsodium' : 'node:crypto';

/**
 * The fast key check alone: true/false from libsodium (canonical, on the curve,
 * not small order, prime-order subgroup), undefined without the addon.
 * Exported for the equivalence tests; callers use checkPublicKey.
 */
export function fastKeyCheck(pub: Uint8Array): boolean | undefined {
  if (pub.length !== 32 || sodium === undefined) return undefined;
  return sodium.crypto_core_ed25519_is_valid_point(pub);
}

/**
 * The strict key check. Throws C0Error naming why the key is refused.
 * Costs a scalar multiplication, so callers cache by DID (see did.ts).
 * A key libsodium accepts is accepted; any other key goes through the noble
 * path, which decides and names the reason.
 */
export function checkPublicKey(pub: Uint8Array): void {
  if (pub.length !== 32) throw new C0Error(ED_ERR.KEY_LENGTH, `Ed25519 public key must be 32 bytes, got ${pub.length}`);
  if (sodium !== undefined && sodium.crypto_core_ed25519_is_valid_point(pub)) return;
  checkPublicKeyNoble(pub);
}

/** The reference key check (@noble/curves, pure JS): the rule as written, with the reason for a refusal. */
export function checkPublicKeyNoble(pub: Uint8Array): void {
  if (pub.length !== 32) throw new C0Error(ED_ERR.KEY_LENGTH, `Ed25519 public key must be 32 bytes, got ${pub.length}`);
  let p;
  try {
    p = ed25519.Point.fromBytes(pub, false);
  } catch (e) {
    // fromBytes (strict) refuses y >= p and x = 0 with the sign bit set, and points not on the curve.
    const y = BigInt('0x' + hex(Uint8Array.from(pub).reverse())) & ((1n << 255n) - 1n);
    const P = 2n ** 255n - 19n;
    // x = 0 with the sign bit set (y = ±1) is a non-canonical encoding of a point that is on the curve.
    const xZeroSignSet = (pub[31]! & 0x80) !== 0 && (y === 1n || y === P - 1n);
    const code = y >= P || xZeroSignSet ? ED_ERR.KEY_NON_CANONICAL : ED_ERR.KEY_NOT_ON_CURVE;
    throw new C0Error(code, `public key is not a canonical curve point: ${(e as Error).message}`);
  }
  if (p.isSmallOrder()) throw new C0Error(ED_ERR.KEY_SMALL_ORDER, 'public key is a small-order point');
  if (!p.isTorsionFree()) throw new C0Error(ED_ERR.KEY_MIXED_ORDER, 'public key is not in the prime-order subgroup');
}

const keyObjects = new Map<string, KeyObject>();
const KEY_CACHE_MAX = 65_536;

/** A cached node:crypto key object for a raw public key (the key must already have passed checkPublicKey). */
export function publicKeyObject(pub: Uint8Array, cacheKey: string = hex(pub)): KeyObject {
  let k = keyObjects.get(cacheKey);
  if (k === undefined) {
    k = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, pub]), format: 'der', type: 'spki' });
    if (keyObjects.size >= KEY_CACHE_MAX) keyObjects.clear();
    keyObjects.set(cacheKey, k);
  }
  return k;
}

/** The checks both backends get from us: 64 bytes, S < L, R not of small order. */
function sigShapeOk(sig: Uint8Array): boolean {
  return sig.length === 64 && sLessThanL(sig) && !SMALL_ORDER_R.has(hex(sig.subarray(0, 32)));
}

/**
 * Verify under the strict rule. The caller guarantees `pub` passed checkPublicKey
 * (did.ts does that once per DID). Never throws for a bad signature: returns false.
 * `backend` picks one explicitly (the equivalence tests); by default the process's.
 */
export function verifyStrict(sig: Uint8Array, msg: Uint8Array, pub: Uint8Array, backend: CryptoBackend = cryptoBackend): boolean {
  if (!sigShapeOk(sig)) return false;
  if (backend === 'libsodium') {
    if (sodium === undefined) throw new Error('the libsodium backend is not available in this process');
    return pub.length === 32 && sodium.crypto_sign_verify_detached(sig, msg, pub);
  }
  return nodeVerify(null, msg, publicKeyObject(pub), sig);
}

/**
 * A cheap first look at a signature under a key that has NOT passed
 * checkPublicKey yet: false means `verifyStrict` would refuse it too (same
 * checks, same verify of the same key bytes), so garbage is refused for the
 * price of one verify instead of a strict key check. True proves nothing about
 * the key: the caller still runs the strict check. Undefined: leave it all to
 * the strict check (with libsodium: the key is one the key check will name;
 * with node:crypto: OpenSSL cannot even build a key from the bytes).
 */
export function precheckVerify(sig: Uint8Array, msg: Uint8Array, pub: Uint8Array, backend: CryptoBackend = cryptoBackend): boolean | undefined {
  if (!sigShapeOk(sig)) return false;
  if (backend === 'libsodium' && sodium !== undefined) {
    if (pub.length !== 32) return undefined;
    if (sodium.crypto_sign_verify_detached(sig, msg, pub)) return true;
    // libsodium also refuses a non-canonical or small-order key here: only a good key makes it the signature's fault
    return sodium.crypto_core_ed25519_is_valid_point(pub) ? false : undefined;
  }
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, pub]), format: 'der', type: 'spki' });
  } catch {
    return undefined;
  }
  try {
    return nodeVerify(null, msg, key, sig);
  } catch {
    return undefined;
  }
}

/** A signing identity: an Ed25519 seed and what derives from it. */
export interface Signer {
  readonly publicKey: Uint8Array;
  sign(msg: Uint8Array): Uint8Array;
}

export class Ed25519Signer implements Signer {
  readonly publicKey: Uint8Array;
  readonly #key: KeyObject;
  readonly #seed: Uint8Array;

  constructor(seed: Uint8Array) {
    if (seed.length !== 32) throw new C0Error(ED_ERR.KEY_LENGTH, `Ed25519 seed must be 32 bytes, got ${seed.length}`);
    this.#seed = Uint8Array.from(seed);
    this.#key = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
    const spki = createPublicKey(this.#key).export({ format: 'der', type: 'spki' });
    this.publicKey = new Uint8Array(spki.subarray(spki.length - 32));
  }

  static generate(): Ed25519Signer {
    return new Ed25519Signer(randomBytes(32));
  }

  sign(msg: Uint8Array): Uint8Array {
    return new Uint8Array(nodeSign(null, msg, this.#key));
  }

  /** The secret seed; only the key file code should ever call this. */
  exportSeed(): Uint8Array {
    return Uint8Array.from(this.#seed);
  }

  /** Never serialise the secret by accident. */
  toJSON(): Record<string, string> {
    return { publicKey: hex(this.publicKey) };
  }
}
