import { test } from 'node:test';
import assert from 'node:assert/strict';
import { explainMarket } from '../../../src/market/index.js';
import { GiB, NOW, P, advert, job, offer } from './fixtures.js';

const twelve = { gpus: [{ model: 'RTX', vramMiB: 12 * GiB, count: 2 }] };
const big = { gpus: [{ model: 'A100', vramMiB: 80 * GiB, count: 2 }] };

test('nobody has 24 GiB on one card: the sentence says so, and counts which requirements bind', () => {
  const j = job(P(100), { requirements: { gpu: { count: 1, vramMiB: 24 * GiB } } });
  const ads = [1, 2, 3].map((n) => advert(P(n), { hardware: twelve }));
  const e = explainMarket({ job: j, adverts: ads, offers: ads.map((a, i) => offer(P(i + 1), j, a)), now: NOW });
  assert.equal(e.known, 3);
  assert.equal(e.eligible, 0);
  assert.equal(e.counts.GPU_VRAM_TOO_SMALL, 3);
  assert.deepEqual(e.binding, [{ constraint: 'gpu', failing: 3, meeting: 0 }]);
  assert.match(e.summary, /^No provider is eligible among 3 known: no provider has 24 GiB of VRAM on one card\./);
  assert.deepEqual(e.relaxations.map((r) => [r.constraint, r.gain, r.quoted]), [['gpu', 3, 3]]);
});

test('six providers have the GPUs but none disclosed a region: the cascade and the relaxation say so', () => {
  const j = job(P(100), { requirements: { gpu: { count: 2, vramMiB: 24 * GiB }, regions: ['eu-west'] } });
  const ads = [
    ...[1, 2, 3, 4, 5, 6].map((n) => advert(P(n), { hardware: big, region: undefined })),
    advert(P(7), { hardware: twelve, region: 'eu-west' }),
  ];
  const e = explainMarket({ job: j, adverts: ads, offers: ads.slice(0, 4).map((a, i) => offer(P(i + 1), j, a)), now: NOW });
  assert.equal(e.known, 7);
  assert.equal(e.counts.REGION_UNDISCLOSED, 6);
  assert.equal(e.counts.OFFER_MISSING, 3);
  assert.match(e.summary, /6 of 7 have 2 GPUs with 24 GiB each; but none of them disclosed a region in eu-west/);
  const region = e.relaxations.find((r) => r.constraint === 'region')!;
  assert.equal(region.gain, 6);
  assert.equal(region.quoted, 4);
  assert.equal(region.text, 'drop the region constraint: 6 more providers (2 of them have not quoted yet)');
  assert.match(e.summary, /To widen the market: drop the region constraint: 6 more providers/);
  // providers in DID order, every failure listed
  assert.deepEqual(e.providers.map((p) => p.provider), [...e.providers.map((p) => p.provider)].sort());
});

test('expired adverts are reported as expired, not silently dropped', () => {
  const j = job(P(100));
  const old = advert(P(1), { issuedAt: NOW - 7_200_000, expiresAt: NOW - 1000 });
  const e = explainMarket({ job: j, adverts: [old], offers: [], now: NOW });
  assert.deepEqual(e.expired, [P(1).did]);
  assert.equal(e.counts.ADVERT_EXPIRED, 1);
  assert.match(e.summary, /1 advert has expired/);
});

test('an unknown market and a thin one', () => {
  const j = job(P(100), { requirements: { tier: 'verified' } });
  assert.match(explainMarket({ job: j, adverts: [], offers: [], now: NOW }).summary, /No provider is known yet/);
  const a1 = advert(P(1), { tier: 'verified' });
  const a2 = advert(P(2), { tier: 'community' });
  const e = explainMarket({ job: j, adverts: [a1, a2], offers: [offer(P(1), j, a1), offer(P(2), j, a2)], now: NOW });
  assert.equal(e.eligible, 1);
  assert.match(e.summary, /^1 of 2 known providers are eligible: 1 of 2 claims tier verified or above\./);
  assert.deepEqual(e.relaxations.map((r) => r.text), ['accept a lower trust tier: 1 more provider']);
});

test('price binding: maxPrice is compared exactly and relaxing it is offered', () => {
  const j = job(P(100), { maxPrice: { amount: '0.10', currency: 'USD' } });
  const a1 = advert(P(1));
  const a2 = advert(P(2));
  const e = explainMarket({ job: j, adverts: [a1, a2], offers: [offer(P(1), j, a1, { amount: '0.9' }), offer(P(2), j, a2, { amount: '0.05', currency: 'EUR' })], now: NOW });
  assert.equal(e.counts.OFFER_OVER_MAX_PRICE, 1);
  assert.equal(e.counts.OFFER_CURRENCY_MISMATCH, 1);
  assert.match(e.summary, /no provider quoted within 0.10 USD/);
  assert.deepEqual(e.relaxations[0]!.constraint, 'price');
});
