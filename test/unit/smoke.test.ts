import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ed25519Signer, open, seal, T } from '../../src/records/index.js';

test('a sealed offer opens', () => {
  const s = Ed25519Signer.generate();
  const now = 1_800_000_000_000;
  const o = seal(T.offer, { job: 'sha256:' + 'ab'.repeat(32), advert: 'sha256:' + 'cd'.repeat(32), price: { amount: '1', currency: 'USD' }, durationMs: 1, issuedAt: now, startBy: now + 2, expiresAt: now + 1 }, s);
  assert.equal(open(o.bytes, T.offer).address, o.address);
});
