/**
 * A provider whose offer this node dropped for its dates (src/net/clock-drops.ts) is explained by that, not by a bare
 * "no offer for this job": a provider's clock ahead looked like a provider that never quoted (session 52's note: the
 * buyer's `run` said OFFER_MISSING; only the provider's log said why). The code stays OFFER_MISSING (the selection's
 * audit never reads drops); the message and the summary say what came and why it was dropped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { explainMarket } from '../../../src/market/index.js';
import type { OfferDrop } from '../../../src/market/explain.js';
import { NOW, P, advert, job, offer } from './fixtures.js';

test('an offer dropped as from the future or expired is said per provider and in the summary; the code stays OFFER_MISSING', () => {
  const j = job(P(100));
  const ads = [advert(P(1)), advert(P(2)), advert(P(3))];
  const drops = new Map<string, OfferDrop>([
    [P(1).did, { code: 'RECORD_FROM_FUTURE', byMs: 45_200 }],
    [P(2).did, { code: 'RECORD_EXPIRED', byMs: 12_000 }],
    [P(3).did, { code: 'RECORD_FROM_FUTURE', byMs: 50_000 }],
  ]);
  // P(3) quoted after all (its clock put right): it has an offer, so no word of the drop
  const e = explainMarket({ job: j, adverts: ads, offers: [offer(P(3), j, ads[2]!)], now: NOW, dropped: drops });
  const of = (n: number) => e.providers.find((v) => v.provider === P(n).did)!;
  assert.deepEqual(of(1).failures.map((f) => f.code), ['OFFER_MISSING']);
  assert.equal(of(1).failures[0]!.message, "no offer for this job: its offer came dated 45 s ahead of this node's clock, past the 30 s clock-skew window, and was dropped (RECORD_FROM_FUTURE): its clock or this node's is wrong (NTP)");
  assert.equal(of(2).failures[0]!.message, "no offer for this job: its offer came 12 s after it expired by this node's clock and was dropped (RECORD_EXPIRED): its clock or this node's is wrong (NTP), or it came late");
  assert.ok(of(3).offer !== undefined && !of(3).failures.some((f) => f.code === 'OFFER_MISSING'));
  assert.match(e.summary, / 2 providers' offers were dropped for their dates \(RECORD_EXPIRED, RECORD_FROM_FUTURE\): a clock is wrong, theirs or this node's\.$/);

  // one provider; and without drops, the words of before
  const one = explainMarket({ job: j, adverts: [ads[0]!], offers: [], now: NOW, dropped: new Map([[P(1).did, drops.get(P(1).did)!]]) });
  assert.match(one.summary, / 1 provider's offer was dropped for its dates \(RECORD_FROM_FUTURE\): a clock is wrong, its or this node's\.$/);
  // a provider this node holds no advert of (its adverts came dated ahead too): said in the summary all the same
  const stranger = explainMarket({ job: j, adverts: [], offers: [], now: NOW, dropped: new Map([[P(7).did, { code: 'RECORD_FROM_FUTURE', byMs: 60_000 }]]) });
  assert.equal(stranger.known, 0);
  assert.match(stranger.summary, /^No provider is known yet: .* 1 provider not known here sent an offer dropped for its dates \(RECORD_FROM_FUTURE\): a clock is wrong, its or this node's\.$/);
  const none = explainMarket({ job: j, adverts: ads, offers: [], now: NOW });
  assert.ok(none.providers.every((v) => v.failures.some((f) => f.message === 'no offer for this job')));
  assert.doesNotMatch(none.summary, /dropped/);
});
