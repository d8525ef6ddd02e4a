/**
 * The advert index forgets what the advert cap evicts (docs/market.md "The
 * advert cap"): an evicted advert is not kept in any of its views, so a flood
 * of throwaway providers holds no memory past the cap and an evicted advert
 * never stands in for a provider's live one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdvertIndex } from '../../../src/market/index.js';
import { NOW, P, advert } from './fixtures.js';

test('an evicted provider that comes back: its evicted adverts are not its advert at any time', () => {
  const p = P(1);
  const old = advert(p, { seq: 1, issuedAt: NOW - 120_000, expiresAt: NOW - 1_000 });
  const idx = new AdvertIndex([old]);
  assert.equal(idx.liveAt(p.did, NOW), old);
  idx.remove([old]);
  assert.equal(idx.get(old.address), undefined);
  assert.equal(idx.liveAt(p.did, NOW), undefined);
  // it republishes (issued a little ahead of this node's clock): the evicted advert must not stand in for it
  const next = advert(p, { seq: 2, issuedAt: NOW + 10_000, expiresAt: NOW + 3_600_000 });
  idx.add(next);
  assert.equal(idx.liveAt(p.did, NOW), next);
  assert.equal(idx.liveAt(p.did, NOW + 20_000), next);
});

test('removing part of a provider’s adverts keeps the rest in its history; removing twice is harmless', () => {
  const p = P(2);
  const a1 = advert(p, { seq: 1, issuedAt: NOW - 120_000, expiresAt: NOW - 60_000 });
  const a2 = advert(p, { seq: 2, issuedAt: NOW - 60_000, expiresAt: NOW + 60_000 });
  const a3 = advert(p, { seq: 3, issuedAt: NOW + 60_000, expiresAt: NOW + 120_000 });
  const idx = new AdvertIndex([a1, a2, a3]);
  assert.equal(idx.liveAt(p.did, NOW), a2);
  idx.remove([a2]);
  idx.remove([a2]);
  assert.equal(idx.latest.get(p.did), a3);
  // a2 gone: at NOW the highest-seq advert issued by then is a1 (expired), reported as such
  assert.equal(idx.liveAt(p.did, NOW), a1);
  idx.remove([a1, a3]);
  assert.equal(idx.latest.size, 0);
  assert.equal(idx.entries.size, 0);
});
