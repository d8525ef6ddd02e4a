import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer, ENV_ERR, open, seal, T, verifySignature } from '../../../src/records/index.js';

const now = 1_800_000_000_000;
const offer = { job: 'sha256:' + 'ab'.repeat(32), advert: 'sha256:' + 'cd'.repeat(32), price: { amount: '1', currency: 'USD' }, durationMs: 1, issuedAt: now, startBy: now + 2, expiresAt: now + 1 };

test('verifySignature accepts exactly what open() accepts as signed, and refuses a flipped signature bit', () => {
  const env = seal(T.offer, offer, Ed25519Signer.generate());
  assert.doesNotThrow(() => verifySignature(env.bytes));
  const bad = Uint8Array.from(env.bytes);
  bad[bad.length - 3]! ^= 0x10;
  // A trusted open (no signature work) still reads it; the signature check refuses it, as open() does.
  assert.equal(open(bad, T.offer, { trusted: true }).record.price.amount, '1');
  for (const f of [() => verifySignature(bad), () => open(bad, T.offer)]) {
    assert.throws(f, (e: unknown) => e instanceof C0Error && e.code === ENV_ERR.SIGNATURE);
  }
});
