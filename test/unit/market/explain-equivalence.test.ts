/**
 * The explanation (src/market/explain.ts: bit masks, radix DID order, the
 * node's OfferBook as input) gives exactly what the first implementation gave
 * (explain-reference.ts: a Set per provider, a string sort, a list of offers),
 * byte for byte as JSON, over random markets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { OfferBook, explainMarket } from '../../../src/market/index.js';
import { explainMarket as referenceExplain } from './explain-reference.js';
import { GiB, NOW, P, advert, job, offer, type AdvertOver } from './fixtures.js';

const BUYER = P(900);
const JOBS = [
  job(BUYER),
  job(BUYER, { requirements: { gpu: { count: 1, vramMiB: 24 * GiB, features: ['cuda12'] }, regions: ['eu-west'], tier: 'verified' } }),
  job(BUYER, { requirements: { cpuCores: 64, memoryMiB: 512 * GiB, tier: 'standard', allowlist: [P(1), P(2), P(3), P(4)].map((p) => p.did).sort() } }),
  job(BUYER, { requirements: { gpu: { count: 4, vramMiB: 40 * GiB, features: ['fp8'] }, regions: ['eu-west', 'us-east'] }, maxPrice: { amount: '0.6', currency: 'USD' } }),
];
const PROVIDERS = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => P(n));
const ADVERT_VARIANTS: AdvertOver[] = [
  {},
  { tier: 'community' },
  { tier: 'enterprise', seq: 2 },
  { region: undefined },
  { region: 'us-east', seq: 3 },
  { hardware: { gpus: undefined } },
  { hardware: { gpus: [{ model: 'T4', vramMiB: 16 * GiB, features: ['cuda12'], count: 4 }], cpuCores: 8, memoryMiB: 64 * GiB }, seq: 4 },
  { issuedAt: NOW - 7_200_000, expiresAt: NOW - 60_000, seq: 5 },
  { workloads: ['infer.diffusion'], seq: 6 },
];
const ADVERTS = PROVIDERS.flatMap((p) => ADVERT_VARIANTS.map((v) => advert(p, v)));
const OFFER_VARIANTS = [
  { amount: '0.2' },
  { amount: '0.45', durationMs: 30_000 },
  { amount: '5' },
  { amount: '0.1', currency: 'EUR' },
  { amount: '0.3', expiresAt: NOW - 1 },
  { amount: '0.3', startBy: NOW + 3_590_000 },
  { amount: '0.3', durationMs: 700_000 },
];
/** offers per job, each citing one of its provider's adverts (or an advert nobody holds) */
const OFFERS = JOBS.map((j, ji) =>
  PROVIDERS.flatMap((p, pi) =>
    OFFER_VARIANTS.map((v, vi) => {
      const k = (pi + vi + ji) % (ADVERT_VARIANTS.length + 1);
      const cited = k === ADVERT_VARIANTS.length ? 'sha256:' + 'ab'.repeat(32) : ADVERTS[pi * ADVERT_VARIANTS.length + k]!;
      return offer(p, j, cited, v);
    }),
  ),
);

test('property: the explanation equals the reference implementation, from a list and from the book', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: JOBS.length - 1 }),
      fc.shuffledSubarray(ADVERTS),
      fc.shuffledSubarray(OFFERS.flat()),
      fc.constantFrom(NOW, NOW + 30_000),
      (ji, adverts, offers, now) => {
        const j = JOBS[ji]!;
        const want = JSON.stringify(referenceExplain({ job: j, adverts, offers, now }));
        assert.equal(JSON.stringify(explainMarket({ job: j, adverts, offers, now })), want);
        // the node's path: the same offers held in a book (received while all were live)
        const book = new OfferBook();
        for (const o of offers) book.addSync(o, NOW - 100_000);
        assert.equal(JSON.stringify(explainMarket({ job: j, adverts, offers: book, now })), want);
      },
    ),
    { numRuns: 150 },
  );
});

test('a market past the radix threshold (300 providers) explains exactly as the reference', () => {
  const ps = Array.from({ length: 300 }, (_, i) => P(2000 + i));
  const j = JOBS[1]!;
  const ads = ps.map((p, i) => advert(p, ADVERT_VARIANTS[i % ADVERT_VARIANTS.length]!));
  const offers = ps.filter((_, i) => i % 3 !== 0).map((p, i) => offer(p, j, ads[ps.indexOf(p)]!, OFFER_VARIANTS[i % OFFER_VARIANTS.length]!));
  const e = explainMarket({ job: j, adverts: ads, offers, now: NOW });
  assert.equal(e.known, 300);
  assert.equal(JSON.stringify(e), JSON.stringify(referenceExplain({ job: j, adverts: ads, offers, now: NOW })));
});
