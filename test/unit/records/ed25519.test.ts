/**
 * Ed25519 under the one rule of DESIGN §2: cofactorless verification, S < L,
 * canonical A and R, A not of small order and in the prime-order subgroup,
 * R not of small order. Pinned with RFC 8032 §7.1, CCTV and constructed edge
 * vectors, and compared with @noble/curves in strict mode (zip215: false).
 *
 * Where the rule and noble differ: noble verifies with the cofactored equation
 * [8](SB - R - kA) = 0 and does not test A for torsion, so it accepts a
 * mixed-order key and an R with a torsion component; our rule (cofactorless,
 * prime-subgroup keys, no small-order R) refuses both. Each such case says so.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey, verify as nodeVerify } from 'node:crypto';
import fc from 'fast-check';
import { ed25519, ED25519_TORSION_SUBGROUP } from '@noble/curves/ed25519.js';
import { DID_ERR, didFromPublicKey, parseDid } from '../../../src/records/did.js';
import { ED_ERR, Ed25519Signer, checkPublicKey, cryptoBackend, verifyStrict, type CryptoBackend } from '../../../src/records/ed25519.js';
import { assertCode, concat, hex, unhex, utf8 } from './fixtures.js';

// every vector runs through both backends (libsodium when the addon loads here, and node:crypto), which must agree
const BACKENDS: CryptoBackend[] = cryptoBackend === 'libsodium' ? ['libsodium', 'node:crypto'] : ['node:crypto'];

/** verifyStrict under every backend; they must give the same verdict. */
function vs(sig: Uint8Array, msg: Uint8Array, pub: Uint8Array): boolean {
  const verdicts = BACKENDS.map((b) => verifyStrict(sig, msg, pub, b));
  assert.ok(verdicts.every((v) => v === verdicts[0]), `backends disagree: ${BACKENDS.join('/')} = ${verdicts.join('/')}`);
  return verdicts[0]!;
}

const Point = ed25519.Point;
const L = Point.Fn.ORDER;
const P = 2n ** 255n - 19n;

/** Our verdict: the key check (as parseDid runs it), then verifyStrict. */
function ours(sig: Uint8Array, msg: Uint8Array, pub: Uint8Array): boolean {
  try {
    checkPublicKey(pub);
  } catch {
    return false;
  }
  return vs(sig, msg, pub);
}

function noble(sig: Uint8Array, msg: Uint8Array, pub: Uint8Array): boolean {
  try {
    return ed25519.verify(sig, msg, pub, { zip215: false });
  } catch {
    return false;
  }
}

/** Raw node:crypto (OpenSSL) verify, no extra checks: what the hot path would do without our rule. */
function openssl(sig: Uint8Array, msg: Uint8Array, pub: Uint8Array): boolean {
  try {
    const key = createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), pub]), format: 'der', type: 'spki' });
    return nodeVerify(null, msg, key, sig);
  } catch {
    return false;
  }
}

const le = (b: Uint8Array): bigint => BigInt('0x' + (hex(Uint8Array.from(b).reverse()) || '0'));
const le32 = (n: bigint): Uint8Array => unhex(n.toString(16).padStart(64, '0')).reverse();
const modL = (x: bigint): bigint => ((x % L) + L) % L;
const h512 = (...parts: Uint8Array[]): bigint => modL(le(new Uint8Array(createHash('sha512').update(concat(...parts)).digest())));

/** Sign by hand so R and A can be bent: S = r + k·a with k = H(R ‖ A ‖ M) over the given encodings. */
function forge(seed: Uint8Array, msg: Uint8Array, opts: { rTorsion?: InstanceType<typeof Point>; rBytes?: Uint8Array; aBytes?: Uint8Array; rZero?: boolean } = {}) {
  const { scalar: a, prefix, pointBytes } = ed25519.utils.getExtendedPublicKey(seed);
  const r = opts.rZero ? 0n : h512(prefix, msg);
  let R = opts.rZero ? Point.ZERO : Point.BASE.multiply(r);
  if (opts.rTorsion) R = R.add(opts.rTorsion);
  const rBytes = opts.rBytes ?? R.toBytes();
  const aBytes = opts.aBytes ?? pointBytes;
  const k = h512(rBytes, aBytes, msg);
  return { sig: concat(rBytes, le32(modL(r + k * a))), pub: aBytes };
}

/** A point of order 8 (from the torsion subgroup). */
const T8 = Point.fromHex('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a');

describe('Ed25519: RFC 8032 §7.1 test vectors', () => {
  const vectors = [
    {
      name: 'TEST 1',
      seed: '9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60',
      pub: 'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
      msg: '',
      sig: 'e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b',
    },
    {
      name: 'TEST 2',
      seed: '4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb',
      pub: '3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c',
      msg: '72',
      sig: '92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00',
    },
    {
      name: 'TEST 3',
      seed: 'c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7',
      pub: 'fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025',
      msg: 'af82',
      sig: '6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a',
    },
    {
      name: 'TEST 1024 (1023-byte message)',
      seed: 'f5e5767cf153319517630f226876b86c8160cc583bc013744c6bf255f5cc0ee5',
      pub: '278117fc144c72340f67d0f2316e8386ceffbf2b2428c9c51fef7c597f1d426e',
      msg:
        '08b8b2b733424243760fe426a4b54908632110a66c2f6591eabd3345e3e4eb98fa6e264bf09efe12ee50f8f54e9f77b1' +
        'e355f6c50544e23fb1433ddf73be84d879de7c0046dc4996d9e773f4bc9efe5738829adb26c81b37c93a1b270b20329d' +
        '658675fc6ea534e0810a4432826bf58c941efb65d57a338bbd2e26640f89ffbc1a858efcb8550ee3a5e1998bd177e93a' +
        '7363c344fe6b199ee5d02e82d522c4feba15452f80288a821a579116ec6dad2b3b310da903401aa62100ab5d1a36553e' +
        '06203b33890cc9b832f79ef80560ccb9a39ce767967ed628c6ad573cb116dbefefd75499da96bd68a8a97b928a8bbc10' +
        '3b6621fcde2beca1231d206be6cd9ec7aff6f6c94fcd7204ed3455c68c83f4a41da4af2b74ef5c53f1d8ac70bdcb7ed1' +
        '85ce81bd84359d44254d95629e9855a94a7c1958d1f8ada5d0532ed8a5aa3fb2d17ba70eb6248e594e1a2297acbbb39d' +
        '502f1a8c6eb6f1ce22b3de1a1f40cc24554119a831a9aad6079cad88425de6bde1a9187ebb6092cf67bf2b13fd65f270' +
        '88d78b7e883c8759d2c4f5c65adb7553878ad575f9fad878e80a0c9ba63bcbcc2732e69485bbc9c90bfbd62481d9089b' +
        'eccf80cfe2df16a2cf65bd92dd597b0707e0917af48bbb75fed413d238f5555a7a569d80c3414a8d0859dc65a46128ba' +
        'b27af87a71314f318c782b23ebfe808b82b0ce26401d2e22f04d83d1255dc51addd3b75a2b1ae0784504df543af8969b' +
        'e3ea7082ff7fc9888c144da2af58429ec96031dbcad3dad9af0dcbaaaf268cb8fcffead94f3c7ca495e056a9b47acdb7' +
        '51fb73e666c6c655ade8297297d07ad1ba5e43f1bca32301651339e22904cc8c42f58c30c04aafdb038dda0847dd988d' +
        'cda6f3bfd15c4b4c4525004aa06eeff8ca61783aacec57fb3d1f92b0fe2fd1a85f6724517b65e614ad6808d6f6ee34df' +
        'f7310fdc82aebfd904b01e1dc54b2927094b2db68d6f903b68401adebf5a7e08d78ff4ef5d63653a65040cf9bfd4aca7' +
        '984a74d37145986780fc0b16ac451649de6188a7dbdf191f64b5fc5e2ab47b57f7f7276cd419c17a3ca8e1b939ae49e4' +
        '88acba6b965610b5480109c8b17b80e1b7b750dfc7598d5d5011fd2dcc5600a32ef5b52a1ecc820e308aa342721aac09' +
        '43bf6686b64b2579376504ccc493d97e6aed3fb0f9cd71a43dd497f01f17c0e2cb3797aa2a2f256656168e6c496afc5f' +
        'b93246f6b1116398a346f1a641f3b041e989f7914f90cc2c7fff357876e506b50d334ba77c225bc307ba537152f3f161' +
        '0e4eafe595f6d9d90d11faa933a15ef1369546868a7f3a45a96768d40fd9d03412c091c6315cf4fde7cb68606937380d' +
        'b2eaaa707b4c4185c32eddcdd306705e4dc1ffc872eeee475a64dfac86aba41c0618983f8741c5ef68d3a101e8a3b8ca' +
        'c60c905c15fc910840b94c00a0b9d0',
      sig: '0aab4c900501b3e24d7cdf4663326a3a87df5e4843b2cbdb67cbf6e460fec350aa5371b1508f9f4528ecea23c436d94b5e8fcd4f681e30a6ac00a9704a188a03',
    },
  ];
  for (const v of vectors) {
    test(v.name, () => {
      const msg = unhex(v.msg);
      if (v.name.startsWith('TEST 1024')) assert.equal(msg.length, 1023);
      const signer = new Ed25519Signer(unhex(v.seed));
      assert.equal(hex(signer.publicKey), v.pub);
      assert.equal(hex(signer.sign(msg)), v.sig, 'deterministic signature reproduces the RFC bytes');
      assert.doesNotThrow(() => checkPublicKey(unhex(v.pub)));
      assert.equal(ours(unhex(v.sig), msg, unhex(v.pub)), true);
      assert.equal(noble(unhex(v.sig), msg, unhex(v.pub)), true);
      // One flipped bit in the message or in the signature: both refuse.
      const m2 = concat(msg, Uint8Array.of(0));
      assert.equal(ours(unhex(v.sig), m2, unhex(v.pub)), false);
      assert.equal(noble(unhex(v.sig), m2, unhex(v.pub)), false);
      for (const at of [0, 31, 32, 63]) {
        const s2 = unhex(v.sig);
        s2[at] = s2[at]! ^ 0x01;
        assert.equal(ours(s2, msg, unhex(v.pub)), false, `sig bit at ${at}`);
        assert.equal(noble(s2, msg, unhex(v.pub)), false, `sig bit at ${at}`);
      }
    });
  }
});

describe('Ed25519: public keys refused by the key check', () => {
  const CANONICAL_SMALL_ORDER = [
    '0100000000000000000000000000000000000000000000000000000000000000', // identity (order 1)
    'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // (0, -1), order 2
    '0000000000000000000000000000000000000000000000000000000000000000', // order 4
    '0000000000000000000000000000000000000000000000000000000000000080', // order 4
    '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05', // order 8
    '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85', // order 8
    'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a', // order 8
    'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa', // order 8
  ];

  test('the list is the whole torsion subgroup (as noble knows it)', () => {
    assert.deepEqual([...CANONICAL_SMALL_ORDER].sort(), [...ED25519_TORSION_SUBGROUP].sort());
  });

  test('all 8 canonical small-order encodings → KEY_SMALL_ORDER, and did:key → DID_BAD_KEY', () => {
    const msg = utf8('any message');
    for (const k of CANONICAL_SMALL_ORDER) {
      assertCode(() => checkPublicKey(unhex(k)), ED_ERR.KEY_SMALL_ORDER, k);
      const e = assertCode(() => parseDid(didFromPublicKey(unhex(k))), DID_ERR.BAD_KEY, k);
      assert.equal(e.detail?.reason, ED_ERR.KEY_SMALL_ORDER);
      // noble (strict) refuses small-order keys too: same verdict. R = A, S = 0 is the classic forgery.
      const sig = concat(unhex(k), new Uint8Array(32));
      assert.equal(ours(sig, msg, unhex(k)), false);
      assert.equal(noble(sig, msg, unhex(k)), false);
    }
  });

  test('non-canonical encodings of small-order points → KEY_NON_CANONICAL', () => {
    const cases = [
      'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p   (≡ 0)
      'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', // y = p+1 (≡ 1, the identity)
      'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff', // y = p, sign bit set
      'eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff', // y = p+1, sign bit set
      // regression: these two were reported as KEY_NOT_ON_CURVE, but they are points on the curve, badly encoded
      '0100000000000000000000000000000000000000000000000000000000000080', // identity with the sign bit set (x = 0)
      'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff', // (0, -1) with the sign bit set (x = 0)
    ];
    for (const k of cases) {
      assertCode(() => checkPublicKey(unhex(k)), ED_ERR.KEY_NON_CANONICAL, k);
      const e = assertCode(() => parseDid(didFromPublicKey(unhex(k))), DID_ERR.BAD_KEY, k);
      assert.equal(e.detail?.reason, ED_ERR.KEY_NON_CANONICAL);
      const sig = concat(unhex('0100000000000000000000000000000000000000000000000000000000000000'), new Uint8Array(32));
      assert.equal(noble(sig, utf8('m'), unhex(k)), false);
    }
  });

  test('non-canonical encodings (y ≥ p) of points that are not small-order → KEY_NON_CANONICAL', () => {
    // y = p+3, p+4, p+9 decode (leniently) to mixed-order points; y = p+2 is not on the curve at all.
    for (const d of [2n, 3n, 4n, 9n, 18n]) {
      const k = le32(P + d);
      assertCode(() => checkPublicKey(k), ED_ERR.KEY_NON_CANONICAL, `y = p+${d}`);
      assert.equal(noble(new Uint8Array(64), utf8('m'), k), false);
    }
  });

  test('a point not on the curve → KEY_NOT_ON_CURVE; a wrong length → KEY_BAD_LENGTH', () => {
    assertCode(() => checkPublicKey(le32(2n)), ED_ERR.KEY_NOT_ON_CURVE);
    assertCode(() => checkPublicKey(new Uint8Array(31)), ED_ERR.KEY_LENGTH);
    assertCode(() => checkPublicKey(new Uint8Array(33)), ED_ERR.KEY_LENGTH);
  });

  test('a mixed-order key (prime-order point + small-order point) → KEY_NOT_IN_PRIME_SUBGROUP', () => {
    const seed = new Uint8Array(32).fill(7);
    const { point } = ed25519.utils.getExtendedPublicKey(seed);
    const mixed = point.add(T8).toBytes();
    assertCode(() => checkPublicKey(mixed), ED_ERR.KEY_MIXED_ORDER);
    const e = assertCode(() => parseDid(didFromPublicKey(mixed)), DID_ERR.BAD_KEY);
    assert.equal(e.detail?.reason, ED_ERR.KEY_MIXED_ORDER);
    // A signature made with the secret scalar for the mixed key: SB - R - kA' = -kT, so the
    // cofactored equation holds. DIFFERENCE: noble accepts it (it neither tests A for torsion
    // nor verifies cofactorless); our rule refuses the key.
    const msg = utf8('mixed-order key');
    const { sig, pub } = forge(seed, msg, { aBytes: mixed });
    assert.equal(noble(sig, msg, pub), true, 'noble (cofactored) accepts');
    assert.equal(ours(sig, msg, pub), false, 'our rule refuses the key');
  });
});

describe('Ed25519: signatures refused by the verifier', () => {
  const seed = new Uint8Array(32).fill(5);
  const signer = new Ed25519Signer(seed);
  const pub = signer.publicKey;
  const msg = utf8('a message worth forging');

  test('a well-formed forge() signature is a normal signature (the helper is right)', () => {
    const { sig } = forge(seed, msg);
    assert.equal(hex(sig), hex(signer.sign(msg)));
    assert.equal(ours(sig, msg, pub), true);
    assert.equal(noble(sig, msg, pub), true);
  });

  test('S ≥ L (S + L, and S = L exactly) is refused; noble agrees', () => {
    const sig = signer.sign(msg);
    const S = le(sig.subarray(32));
    const plusL = concat(sig.subarray(0, 32), le32(S + L));
    assert.equal(vs(plusL, msg, pub), false);
    assert.equal(noble(plusL, msg, pub), false);
    const exactlyL = concat(sig.subarray(0, 32), le32(L));
    assert.equal(vs(exactlyL, msg, pub), false);
    assert.equal(noble(exactlyL, msg, pub), false);
    // The largest S < L is not refused by the S check itself (the equation then fails).
    assert.equal(vs(concat(sig.subarray(0, 32), le32(L - 1n)), msg, pub), false);
  });

  test('R = the identity with S = k·a satisfies the cofactorless equation, and is still refused (R small order)', () => {
    const { sig } = forge(seed, msg, { rZero: true });
    assert.equal(hex(sig.subarray(0, 32)), '0100000000000000000000000000000000000000000000000000000000000000');
    assert.equal(openssl(sig, msg, pub), true, 'OpenSSL alone would accept it');
    assert.equal(vs(sig, msg, pub), false, 'our rule refuses a small-order R');
    // noble does not test R for small order, and the equation holds: it accepts. DIFFERENCE, by the DESIGN rule.
    assert.equal(noble(sig, msg, pub), true);
  });

  test('R = a small-order point of order 8 with S = k·a: refused (equation fails cofactorless; noble’s cofactored check passes)', () => {
    const { sig } = forge(seed, msg, { rZero: true, rTorsion: T8 });
    assert.equal(vs(sig, msg, pub), false);
    assert.equal(openssl(sig, msg, pub), false);
    // DIFFERENCE: SB - R - kA = -T8, which the cofactor 8 clears; noble accepts.
    assert.equal(noble(sig, msg, pub), true);
  });

  test('R with a torsion component (rB + T8): refused cofactorless; noble (cofactored) accepts', () => {
    const { sig } = forge(seed, msg, { rTorsion: T8 });
    assert.equal(vs(sig, msg, pub), false);
    assert.equal(openssl(sig, msg, pub), false);
    // DIFFERENCE documented in the header: cofactored verification accepts an R with a torsion component.
    assert.equal(noble(sig, msg, pub), true);
  });

  test('non-canonical R (y ≥ p) is refused; noble agrees', () => {
    // R = p+1, a non-canonical encoding of the identity, with S = k·a over those bytes.
    const { sig } = forge(seed, msg, { rZero: true, rBytes: le32(P + 1n) });
    assert.equal(vs(sig, msg, pub), false);
    assert.equal(noble(sig, msg, pub), false);
    assert.equal(openssl(sig, msg, pub), false);
  });

  test('the node:crypto edge: identity key, R = identity, S = 0 verifies for ANY message under OpenSSL; we refuse', () => {
    const identity = unhex('0100000000000000000000000000000000000000000000000000000000000000');
    const sig = concat(identity, new Uint8Array(32));
    for (const m of [utf8(''), utf8('pay me'), utf8('anything at all')]) {
      assert.equal(openssl(sig, m, identity), true, 'OpenSSL accepts (this is the hazard)');
      assert.equal(ours(sig, m, identity), false);
      assert.equal(noble(sig, m, identity), false);
      // Even if the identity key slipped past the key check, verifyStrict refuses R = identity.
      assert.equal(vs(sig, m, identity), false);
    }
    assertCode(() => checkPublicKey(identity), ED_ERR.KEY_SMALL_ORDER);
  });

  test('wrong signature lengths are refused without throwing', () => {
    const sig = signer.sign(msg);
    assert.equal(vs(sig.subarray(0, 63), msg, pub), false);
    assert.equal(vs(concat(sig, Uint8Array.of(0)), msg, pub), false);
    assert.equal(vs(new Uint8Array(0), msg, pub), false);
  });

  test('random keys, messages and one-bit flips: our verdict equals noble’s', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ maxLength: 64 }), fc.nat({ max: 64 * 8 - 1 }), (sd, m, bit) => {
        const s = new Ed25519Signer(sd);
        const sig = s.sign(m);
        assert.equal(ours(sig, m, s.publicKey), true);
        assert.equal(noble(sig, m, s.publicKey), true);
        const bad = Uint8Array.from(sig);
        bad[bit >> 3] = bad[bit >> 3]! ^ (1 << (bit & 7));
        assert.equal(ours(bad, m, s.publicKey), noble(bad, m, s.publicKey));
        assert.equal(ours(bad, m, s.publicKey), false);
      }),
      { numRuns: 60 }, // noble verify and the key check cost a few ms each
    );
  });
});

/**
 * A handful of C2SP/CCTV ed25519vectors.json cases (every one of them has a
 * low-order A, R or component). Keys 10eb7c3a… and fe894df1… are mixed-order.
 * Our rule refuses every one; noble's strict mode accepts those where only the
 * cofactored equation holds on a mixed-order key (listed as DIFFERENCE).
 */
describe('Ed25519: CCTV vectors (C2SP/CCTV ed25519/ed25519vectors.json)', () => {
  const MIXED_1 = '10eb7c3acfb2bed3e0d6ab89bf5a3d6afddd1176ce4812e38d9fd485058fdb1f';
  const MIXED_2 = 'fe894df18abf1c20088bfbe6c9ad45d42ec20663eaf7111eaea1d851da0d7f89';
  const Z64 = '00'.repeat(64);
  const cases: Array<{ n: number; key: string; sig: string; msg: string; code: string; noble: boolean; openssl: boolean }> = [
    { n: 0, key: '00'.repeat(32), sig: Z64, msg: 'ed25519vectors 3', code: ED_ERR.KEY_SMALL_ORDER, noble: false, openssl: false },
    // DIFFERENCE (noble true): mixed-order A, low-order R, residue cleared by the cofactor.
    { n: 4, key: MIXED_1, sig: '00'.repeat(32) + '5e176f12cfb0d4e6eb6929b19ae4c998ef05c1c2cf628a9b1fa1c21312627108', msg: 'ed25519vectors 7', code: ED_ERR.KEY_MIXED_ORDER, noble: true, openssl: false },
    // DIFFERENCE (noble true): mixed-order A, low-order R; OpenSSL accepts too (no residue).
    { n: 5, key: MIXED_1, sig: '00'.repeat(32) + '9472a69cd9a701a50d130ed52189e2455b23767db52cacb8716fb896ffeeac09', msg: 'ed25519vectors 3', code: ED_ERR.KEY_MIXED_ORDER, noble: true, openssl: true },
    // DIFFERENCE (noble true): mixed-order A; the cofactorless equation holds, so OpenSSL accepts as well.
    { n: 7, key: MIXED_1, sig: '36684ea91032ba5b1dbab2d02f4debc74c3327f2b3802e2e4d371aa42b12b56bbbfd00bd9c259d8d222d15e67a3d8228585050dbb9b9585be20d8fadc721da03', msg: 'ed25519vectors', code: ED_ERR.KEY_MIXED_ORDER, noble: true, openssl: true },
    { n: 8, key: 'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', sig: Z64, msg: 'ed25519vectors 8', code: ED_ERR.KEY_NON_CANONICAL, noble: false, openssl: false },
    // Non-canonical R: everyone refuses (the key is refused first by us).
    { n: 17, key: MIXED_1, sig: 'edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7fad7a355469b5c87e550469f6b2de409ee723acd584bf35f86b80c384e8ceb702', msg: 'ed25519vectors 3', code: ED_ERR.KEY_MIXED_ORDER, noble: false, openssl: false },
    // Small-order A = R = (0, -1), S = 0: OpenSSL accepts; noble and we refuse.
    { n: 893, key: 'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f', sig: 'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f' + '00'.repeat(32), msg: 'ed25519vectors 5', code: ED_ERR.KEY_SMALL_ORDER, noble: false, openssl: true },
    // DIFFERENCE (noble true): mixed-order A with a torsion component in R.
    { n: 899, key: MIXED_2, sig: '37d3076f21bd3bec4ee4ebee360fe0e3b288557810e7dda72edae09650d5caf9327f51a83cacea96d1f3fc6be0e2682f22ce35400ccb707aa30a7321ed6dff05', msg: 'ed25519vectors 3', code: ED_ERR.KEY_MIXED_ORDER, noble: true, openssl: true },
    // DIFFERENCE (noble true): as 899 but with a residue only the cofactor clears; OpenSSL refuses.
    { n: 898, key: MIXED_2, sig: '37d3076f21bd3bec4ee4ebee360fe0e3b288557810e7dda72edae09650d5caf92adec0cbdc3718697e370f88b291cbe1965f51921474e0fe35973dbc471c3e01', msg: 'ed25519vectors 1', code: ED_ERR.KEY_MIXED_ORDER, noble: true, openssl: false },
  ];
  for (const c of cases) {
    test(`#${c.n}: refused (${c.code}); noble ${c.noble ? 'accepts — DIFFERENCE' : 'refuses'}; OpenSSL ${c.openssl ? 'accepts' : 'refuses'}`, () => {
      const [key, sig, msg] = [unhex(c.key), unhex(c.sig), utf8(c.msg)];
      assertCode(() => checkPublicKey(key), c.code);
      assert.equal(ours(sig, msg, key), false);
      assert.equal(noble(sig, msg, key), c.noble);
      assert.equal(openssl(sig, msg, key), c.openssl);
    });
  }
});
