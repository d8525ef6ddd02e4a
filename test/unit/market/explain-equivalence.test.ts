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
import { NOW, P, advert, offer } from './fixtures.js';
import { ADVERTS, ADVERT_VARIANTS, JOBS, OFFERS, OFFER_VARIANTS } from './market-pool.js';

// with few offers, most providers are judged on their adverts' asks (market-pool.ts prices some of them)
for (const [name, maxOffers] of [['', undefined], [' (few offers)', 6]] as const) test(`property: the explanation equals the reference implementation, from a list and from the book${name}`, () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: JOBS.length - 1 }),
      fc.shuffledSubarray(ADVERTS),
      fc.shuffledSubarray(OFFERS.flat(), maxOffers === undefined ? {} : { maxLength: maxOffers }),
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
