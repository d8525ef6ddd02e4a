/** did:key for Ed25519 (W3C vectors, refusals with codes) and DID ↔ libp2p PeerId both ways. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { base58btc } from 'multiformats/bases/base58';
import { generateKeyPair, generateKeyPairFromSeed, publicKeyFromRaw } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey, peerIdFromPublicKey } from '@libp2p/peer-id';
import { DID_ERR, compareDids, didFromPublicKey, isDid, parseDid } from '../../../src/records/did.js';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { didFromPeerId, libp2pKey, peerIdFromDid } from '../../../src/node/peer-id.js';
import { assertCode, concat, hex, unhex } from './fixtures.js';

const didOfBytes = (b: Uint8Array): string => 'did:key:' + base58btc.encode(b);

describe('did:key: W3C vectors', () => {
  // W3C did:key test vectors (Ed25519, from a 32-byte seed)
  const vectors: Array<[string, string]> = [
    ['00'.repeat(32), 'did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp'],
    ['00'.repeat(31) + '01', 'did:key:z6MkjchhfUsD6mmvni8mCdXHw216Xrm9bQe2mBH1P5RDjVJG'],
  ];
  for (const [seed, did] of vectors) {
    test(`seed ${seed.slice(-4)} → ${did}`, () => {
      const signer = new Ed25519Signer(unhex(seed));
      assert.equal(didFromPublicKey(signer.publicKey), did);
      const parsed = parseDid(did);
      assert.equal(parsed.did, did);
      assert.equal(hex(parsed.publicKey), hex(signer.publicKey));
      assert.ok(isDid(did));
    });
  }

  test('parsing is cached: the same DID gives the same parsed object; a refusal is cached as a refusal', () => {
    const did = vectors[0]![1];
    assert.equal(parseDid(did), parseDid(did));
    const bad = 'did:key:z6MkNotBase58l0';
    assertCode(() => parseDid(bad), DID_ERR.MALFORMED);
    assertCode(() => parseDid(bad), DID_ERR.MALFORMED);
  });
});

describe('did:key: refusals with codes', () => {
  const good = didFromPublicKey(new Ed25519Signer(new Uint8Array(32).fill(1)).publicKey);
  const key = parseDid(good).publicKey;

  test('malformed → DID_MALFORMED', () => {
    const cases = [
      '',
      'did:key:',
      'did:key:z', // regression: an empty key part was reported as DID_UNSUPPORTED_KEY_TYPE
      'did:web:example.com',
      'did:key:' + good.slice('did:key:z'.length), // no multibase prefix
      'did:key:m' + good.slice('did:key:z'.length), // base64 multibase prefix
      'DID:KEY:' + good.slice('did:key:'.length),
      good.slice(0, -1) + '0', // '0' is not base58
      good.slice(0, -1) + 'l', // 'l' is not base58
      good + ' ',
      'did:key:z' + '1'.repeat(200), // too long
    ];
    for (const d of cases) assertCode(() => parseDid(d), DID_ERR.MALFORMED, JSON.stringify(d));
    assertCode(() => parseDid(42 as unknown as string), DID_ERR.MALFORMED);
    assert.equal(isDid(42), false);
    assert.equal(isDid('did:key:'), false);
  });

  test('another multicodec → DID_UNSUPPORTED_KEY_TYPE', () => {
    assertCode(() => parseDid(didOfBytes(concat(unhex('e701'), new Uint8Array(33).fill(2)))), DID_ERR.UNSUPPORTED_KEY, 'secp256k1-pub');
    assertCode(() => parseDid(didOfBytes(concat(unhex('ec01'), key))), DID_ERR.UNSUPPORTED_KEY, 'x25519-pub');
    assertCode(() => parseDid(didOfBytes(concat(unhex('1200'), key))), DID_ERR.UNSUPPORTED_KEY, 'sha2-256 multihash');
    assertCode(() => parseDid(didOfBytes(unhex('ed'))), DID_ERR.UNSUPPORTED_KEY, 'one byte');
  });

  test('wrong key length → DID_BAD_KEY', () => {
    assertCode(() => parseDid(didOfBytes(concat(unhex('ed01'), key.subarray(0, 31)))), DID_ERR.BAD_KEY, '31 bytes');
    assertCode(() => parseDid(didOfBytes(concat(unhex('ed01'), key, Uint8Array.of(0)))), DID_ERR.BAD_KEY, '33 bytes');
    assertCode(() => parseDid(didOfBytes(unhex('ed01'))), DID_ERR.BAD_KEY, 'no key');
    assertCode(() => didFromPublicKey(new Uint8Array(31)), DID_ERR.BAD_KEY);
  });

  test('a key the strict check refuses → DID_BAD_KEY naming the reason', () => {
    const identity = unhex('0100000000000000000000000000000000000000000000000000000000000000');
    const e = assertCode(() => parseDid(didFromPublicKey(identity)), DID_ERR.BAD_KEY);
    assert.equal(e.detail?.reason, 'KEY_SMALL_ORDER');
  });

  test('DID order is the byte order of the DID string', () => {
    const dids = [1, 2, 3, 4, 5].map((n) => didFromPublicKey(new Ed25519Signer(new Uint8Array(32).fill(n)).publicKey));
    const sorted = [...dids].sort(compareDids);
    const byBytes = [...dids].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    assert.deepEqual(sorted, byBytes);
    assert.equal(compareDids(dids[0]!, dids[0]!), 0);
  });
});

describe('DID ↔ libp2p PeerId', () => {
  test('both ways, for string and object PeerIds, and it is the PeerId libp2p derives from the same seed', async () => {
    for (const n of [0, 1, 7, 255]) {
      const seed = new Uint8Array(32).fill(n);
      const signer = new Ed25519Signer(seed);
      const did = didFromPublicKey(signer.publicKey);
      const peer = peerIdFromDid(did);
      assert.equal(peer.type, 'Ed25519');
      assert.match(peer.toString(), /^12D3KooW/);
      assert.equal(didFromPeerId(peer), did);
      assert.equal(didFromPeerId(peer.toString()), did);
      const libp2pPriv = await generateKeyPairFromSeed('Ed25519', seed);
      assert.equal(peerIdFromPrivateKey(libp2pPriv).toString(), peer.toString());
      // The node's libp2p key is its identity key.
      const key = await libp2pKey(signer);
      assert.equal(hex(key.publicKey.raw), hex(signer.publicKey));
      assert.equal(hex(key.raw), hex(libp2pPriv.raw), 'the same private key as libp2p derives from the seed');
      const msg = new TextEncoder().encode(`msg ${n}`);
      assert.ok(await libp2pPriv.publicKey.verify(msg, await key.sign(msg)), 'its signatures verify under the identity key');
    }
  });

  test('a malformed PeerId → PEER_ID_MALFORMED; a non-Ed25519 PeerId → PEER_ID_NOT_ED25519', async () => {
    assertCode(() => didFromPeerId('not-a-peer-id'), 'PEER_ID_MALFORMED');
    assertCode(() => didFromPeerId(''), 'PEER_ID_MALFORMED');
    const secp = await generateKeyPair('secp256k1');
    assertCode(() => didFromPeerId(peerIdFromPrivateKey(secp)), 'PEER_ID_NOT_ED25519');
    assertCode(() => didFromPeerId(peerIdFromPrivateKey(secp).toString()), 'PEER_ID_NOT_ED25519');
  });

  test('a PeerId of a small-order Ed25519 key does not become a DID; a refused DID has no PeerId', () => {
    const identity = unhex('0100000000000000000000000000000000000000000000000000000000000000');
    const peer = peerIdFromPublicKey(publicKeyFromRaw(identity));
    assertCode(() => didFromPeerId(peer), DID_ERR.BAD_KEY);
    assertCode(() => peerIdFromDid(didFromPublicKey(identity)), DID_ERR.BAD_KEY);
  });
});

describe('did:key: made once per key object', () => {
  test('a signer’s DID is the same string every time; another array with the same key gives the same DID; a bad key is refused every time', () => {
    const s = Ed25519Signer.generate();
    const a = didFromPublicKey(s.publicKey);
    assert.equal(didFromPublicKey(s.publicKey), a);
    assert.equal(didFromPublicKey(new Uint8Array(s.publicKey)), a);
    assert.equal(a, 'did:key:' + base58btc.encode(concat(Uint8Array.of(0xed, 0x01), s.publicKey)));
    const short = new Uint8Array(31);
    assertCode(() => didFromPublicKey(short), DID_ERR.BAD_KEY);
    assertCode(() => didFromPublicKey(short), DID_ERR.BAD_KEY);
  });
});
