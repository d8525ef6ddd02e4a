/** /c0mpute/offer/1's receiving side (src/net/offer-route.ts) with a fake pipeline: what it refuses before validation, and what it hands on. */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ed25519Signer, seal, T } from '../../../src/records/index.js';
import { encodeMessage } from '../../../src/net/framing.js';
import { offerHandler, OFFER_ERR } from '../../../src/net/offer-route.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import type { ValidationOutcome } from '../../../src/net/gossip-validation.js';
import type { CborValue } from '../../../src/records/cbor.js';

const now = Date.now();
const provider = Ed25519Signer.generate();
const ad = seal(T.advert, { seq: 1, issuedAt: now, expiresAt: now + 600_000, workloads: ['infer.llm'], tier: 'standard', region: 'eu-west', hardware: { cpuCores: 8, memoryMiB: 16_384 } }, provider);
const of = seal(T.offer, { job: 'sha256:' + 'ab'.repeat(32), advert: ad.address, price: { amount: '1', currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 60_000, expiresAt: now + 30_000 }, provider);
const msg = encodeMessage(of.bytes, [ad.bytes]);

function run(frames: CborValue[], from: Ed25519Signer, verdict: ValidationOutcome['verdict'] = 'accept') {
  const calls = { validated: 0, accepted: 0, sent: [] as CborValue[] };
  const h = offerHandler({
    validate: async () => (calls.validated++, { verdict, reason: verdict === 'accept' ? 'ok' : 'SOME_CODE', fresh: [] }),
    accept: () => void calls.accepted++,
  });
  const ctx = { peer: peerIdFromDid(didFromPublicKey(from.publicKey)), signal: new AbortController().signal, send: async (f: CborValue) => void calls.sent.push(f) };
  return { calls, done: Promise.resolve().then(() => h(frames, ctx as never)) };
}

test('an offer from its signer is validated and handed on; the verdict is answered', async () => {
  const { calls, done } = run([msg], provider);
  await done;
  assert.deepEqual([calls.validated, calls.accepted], [1, 1]);
  assert.deepEqual(calls.sent, [{ verdict: 'accept', reason: 'ok' }]);
  const ig = run([msg], provider, 'ignore');
  await ig.done;
  assert.deepEqual([ig.calls.accepted, ig.calls.sent], [0, [{ verdict: 'ignore', reason: 'SOME_CODE' }]]);
});

test('refused before validation: another peer’s offer (OFFER_NOT_FROM_PEER), not an offer message (OFFER_BAD_REQUEST); a rejected one answers its code', async () => {
  const other = run([msg], Ed25519Signer.generate());
  await assert.rejects(other.done, { code: OFFER_ERR.NOT_FROM_PEER });
  assert.equal(other.calls.validated, 0);
  for (const frames of [[], [msg, msg], [{ not: 'bytes' }], [new Uint8Array([1, 2, 3])]] as CborValue[][]) {
    const bad = run(frames, provider);
    await assert.rejects(bad.done, { code: OFFER_ERR.BAD_REQUEST });
    assert.equal(bad.calls.validated, 0);
  }
  const rej = run([msg], provider, 'reject');
  await assert.rejects(rej.done, { code: 'SOME_CODE' });
  assert.equal(rej.calls.accepted, 0);
});
