/** Adverts that scale with the market (src/matching/advert-rate.ts; docs/scale.md §3 "Sixth round"). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { advertInterval, ADVERT_ADAPTIVE_MAX_LIFETIME_MS, ADVERT_TARGET_PER_MARKET } from '../../../src/matching/advert-rate.js';
import { MAX_ADVERT_LIFETIME_MS } from '../../../src/records/kinds.js';
import { Ed25519Signer, open, seal, T, type Advert } from '../../../src/records/index.js';

const TEN_MIN = 600_000;

test('a small market keeps the configured lifetime exactly, republished at half of it', () => {
  assert.equal(ADVERT_TARGET_PER_MARKET, 1);
  for (const live of [0, 1, 20, 100, 299, 300]) assert.deepEqual(advertInterval(live, TEN_MIN), { everyMs: 300_000, lifetimeMs: TEN_MIN }, `live ${live}`);
  assert.deepEqual(advertInterval(Number.NaN, TEN_MIN), { everyMs: 300_000, lifetimeMs: TEN_MIN });
  assert.deepEqual(advertInterval(5_000, TEN_MIN, 0), { everyMs: 300_000, lifetimeMs: TEN_MIN }, 'target 0: never adapt');
});

test('a large market: every = live / target, lifetime = 2 × every, so the market carries the target rate', () => {
  // 10k providers over 16 markets, half of them in two: 1,250 in one
  for (const live of [301, 625, 1_250, 1_799]) {
    const i = advertInterval(live, TEN_MIN);
    assert.equal(i.everyMs, live * 1000, `live ${live}`);
    assert.equal(i.lifetimeMs, 2 * i.everyMs);
    assert.ok(live / (i.everyMs / 1000) <= ADVERT_TARGET_PER_MARKET + 1e-9);
  }
  // a higher target: sooner
  assert.deepEqual(advertInterval(1_250, TEN_MIN, 5), { everyMs: 300_000, lifetimeMs: TEN_MIN });
  assert.deepEqual(advertInterval(2_000, TEN_MIN, 5), { everyMs: 400_000, lifetimeMs: 800_000 });
});

test('the lifetime stops at an hour (a departed provider’s advert is not held longer), or at a longer configured one; never past the record’s 24 h', () => {
  assert.deepEqual(advertInterval(100_000, TEN_MIN), { everyMs: ADVERT_ADAPTIVE_MAX_LIFETIME_MS / 2, lifetimeMs: ADVERT_ADAPTIVE_MAX_LIFETIME_MS });
  assert.deepEqual(advertInterval(100_000, 4 * 3600_000), { everyMs: 2 * 3600_000, lifetimeMs: 4 * 3600_000 }, 'a configured 4 h is the cap');
  assert.deepEqual(advertInterval(1e7, 24 * 3600_000), { everyMs: 12 * 3600_000, lifetimeMs: MAX_ADVERT_LIFETIME_MS });
  // what a provider signs at any size is a valid advert
  const signer = Ed25519Signer.generate();
  for (const live of [1, 1_000, 1e6]) {
    const { lifetimeMs } = advertInterval(live, TEN_MIN);
    const a: Advert = { seq: 1, issuedAt: 1_000, expiresAt: 1_000 + lifetimeMs, workloads: ['infer.llm'], tier: 'standard', hardware: { cpuCores: 1, memoryMiB: 1024 } };
    assert.equal(open(seal(T.advert, a, signer).bytes, T.advert).record.expiresAt, a.expiresAt, `live ${live}`);
  }
});
