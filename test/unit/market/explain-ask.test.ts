/**
 * A provider that has not quoted because its advert asks more than the job's maxPrice (or in another currency) is
 * explained by its ask, with the probe's codes, and the hint names the maxPrice that would admit it (docs/market.md
 * §2, §2.1). A provider does not quote above maxPrice (src/roles/provider/provider.ts), so "has not quoted" and a
 * binding "quote" hid the price: the QA pass saw `run` say "has not quoted" where `market probe` said ASK_ABOVE_PRICE.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AdvertIndex, explainMarket, judgeAll, select } from '../../../src/market/index.js';
import { prepareJob } from '../../../src/market/eligibility.js';
import { applyChange } from '../../../src/market/relax.js';
import { candidates, orderFromJob } from '../../../src/matching/candidates.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import type { Advert, Job, Opened } from '../../../src/records/index.js';
import { NOW, P, advert, job, offer } from './fixtures.js';

const ask = (amount: string, currency = 'USD', unit = 'job') => ({ prices: [{ workload: 'infer.llm', unit, price: { amount, currency } }] });
const codes = (e: ReturnType<typeof explainMarket>) => e.providers.map((v) => v.failures.map((f) => f.code));

test('every ask above maxPrice: the providers are ASK_ABOVE_PRICE (not "has not quoted"), price binds, and the hint names the asks', () => {
  const j = job(P(100), { maxPrice: { amount: '0.0001', currency: 'USD' } });
  const ads = [advert(P(1), ask('0.0002')), advert(P(2), ask('0.0005'))];
  const e = explainMarket({ job: j, adverts: ads, offers: [], now: NOW });
  assert.deepEqual(codes(e), [['ASK_ABOVE_PRICE'], ['ASK_ABOVE_PRICE']]);
  assert.ok(e.providers.every((v) => !v.failures.some((f) => /has not quoted/.test(f.message))));
  // the probe's words for the same advert and job
  const live = ads.map((a) => ({ did: a.signer, advert: a, liveUntil: NOW + 60_000, workloads: ['infer.llm'], freeSlots: 1 })) as unknown as LiveProvider[];
  const probe = candidates({ order: orderFromJob(j), live, now: NOW });
  const probeReason = (did: string) => probe.rejected.find((r) => r.provider === did)!.reasons.find((r) => r.code === 'ASK_ABOVE_PRICE')!;
  for (const v of e.providers) assert.equal(v.failures[0]!.message, probeReason(v.provider).message);
  assert.equal(e.providers.find((v) => v.provider === P(1).did)!.failures[0]!.message, 'asks 0.0002 USD per job: 0.0002 for the order, above 0.0001');
  assert.deepEqual(e.binding, [{ constraint: 'price', failing: 2, meeting: 0 }]);
  assert.deepEqual(e.counts, { ASK_ABOVE_PRICE: 2 });
  assert.deepEqual(
    e.relaxations.map((r) => [r.text, r.change.maxPrice]),
    [
      ['raise maxPrice to 0.0005 USD → 2 more providers (2 of them have not quoted yet)', { amount: '0.0005', currency: 'USD' }],
      ['raise maxPrice to 0.0002 USD → 1 more provider (1 of them has not quoted yet)', { amount: '0.0002', currency: 'USD' }],
    ],
  );
  assert.equal(e.summary, 'No provider is eligible among 2 known: no provider asks at most 0.0001 USD. To widen the market: raise maxPrice to 0.0005 USD → 2 more providers (2 of them have not quoted yet).');
  // the hint is what re-running gives: at 0.0002 the cheaper one could quote (it has not yet), the other still asks more
  const raised: Opened<Job> = { ...j, record: applyChange(j.record, e.relaxations[1]!.change) };
  const after = explainMarket({ job: raised, adverts: ads, offers: [], now: NOW });
  assert.deepEqual(
    after.providers.map((v) => [v.provider, v.failures.map((f) => f.code)]),
    e.providers.map((v) => [v.provider, v.provider === P(1).did ? ['OFFER_MISSING'] : ['ASK_ABOVE_PRICE']]),
  );
});

test('an ask in another currency is ASK_CURRENCY_MISMATCH: currency binds, and no maxPrice hint counts it', () => {
  const j = job(P(100), { maxPrice: { amount: '0.01', currency: 'EUR' } });
  const ads = [advert(P(1), ask('0.0002')), advert(P(2), ask('0.0005'))];
  const e = explainMarket({ job: j, adverts: ads, offers: [], now: NOW });
  assert.deepEqual(codes(e), [['ASK_CURRENCY_MISMATCH'], ['ASK_CURRENCY_MISMATCH']]);
  assert.equal(e.providers[0]!.failures[0]!.message, 'prices infer.llm in USD; the order pays in EUR (never converted)');
  assert.deepEqual(e.binding, [{ constraint: 'currency', failing: 2, meeting: 0 }]);
  assert.deepEqual(e.relaxations, []);
  assert.equal(e.summary, 'No provider is eligible among 2 known: no provider quotes in EUR.');
});

test('a provider that could quote and has not is still "has not quoted": an ask within maxPrice, no price, a unit the job cannot count', () => {
  const j = job(P(100), { maxPrice: { amount: '0.0001', currency: 'USD' } });
  const ads = [advert(P(1), ask('0.0001')), advert(P(2)), advert(P(3), ask('0.00001', 'USD', 'mtoken'))];
  const e = explainMarket({ job: j, adverts: ads, offers: [], now: NOW });
  assert.deepEqual(codes(e), [['OFFER_MISSING'], ['OFFER_MISSING'], ['OFFER_MISSING']]);
  assert.ok(e.providers.every((v) => v.failures[0]!.message === 'no offer for this job'));
  assert.deepEqual(e.binding, [{ constraint: 'quote', failing: 3, meeting: 0 }]);
  assert.equal(e.summary, 'No provider is eligible among 3 known: no provider has a live offer for this job.');
});

test('summary: a provider ruled out by its ask has no live offer all the same, and the one that may still quote holds price back', () => {
  const j = job(P(100), { maxPrice: { amount: '0.10', currency: 'USD' } });
  const a1 = advert(P(1));
  const a2 = advert(P(2), ask('0.5'));
  const a3 = advert(P(3), ask('0.05'));
  const o1 = offer(P(1), j, a1, { amount: '0.5' });
  // the offer over the cap and the advert over it: nobody asks at most 0.10
  const two = explainMarket({ job: j, adverts: [a1, a2], offers: [o1], now: NOW });
  assert.match(two.summary, /^No provider is eligible among 2 known: no provider asks at most 0\.10 USD\./);
  assert.deepEqual(two.binding, [{ constraint: 'price', failing: 2, meeting: 0 }]);
  assert.match(two.summary, /To widen the market: raise maxPrice to 0\.5 USD → 2 more providers \(1 of them has not quoted yet\)/);
  // with one that may still quote: the ask-ruled provider is not counted as having a live offer
  const three = explainMarket({ job: j, adverts: [a1, a2, a3], offers: [o1], now: NOW });
  assert.match(three.summary, /^No provider is eligible among 3 known: 1 of 3 has a live offer for this job; but it asks more than 0\.10 USD\./);
  // an offer that misses the deadline is said after the ask-ruled provider has left (the deadline is judged on offers only)
  const late = offer(P(1), j, a1, { amount: '0.05', startBy: NOW + 3_590_000 });
  const dl = explainMarket({ job: j, adverts: [a1, a2], offers: [late], now: NOW });
  assert.match(dl.summary, /^No provider is eligible among 2 known: 1 of 2 asks at most 0\.10 USD; but it cannot finish within the job's 10 min timeout and before its deadline\./);
  // two ruled out by their ask are not counted as able to finish before the deadline (3 of 4 would say so)
  const a4 = advert(P(4), ask('0.7'));
  const a5 = advert(P(5));
  const mixed = explainMarket({ job: j, adverts: [a1, a2, a4, a5], offers: [late, offer(P(5), j, a5, { amount: '0.05' })], now: NOW });
  assert.equal(mixed.summary, "1 of 4 known providers are eligible: 2 of 4 ask at most 0.10 USD; of those, 1 can finish within the job's 10 min timeout and before its deadline.");
});

test('an offer quoting longer than the job\'s timeout is said to miss the timeout, not only "the deadline" hours away', () => {
  const j = job(P(100), { maxPrice: { amount: '0.10', currency: 'USD' } });
  const a1 = advert(P(1));
  const slow = offer(P(1), j, a1, { amount: '0.05', durationMs: 1_200_000 });
  const e = explainMarket({ job: j, adverts: [a1], offers: [slow], now: NOW });
  assert.deepEqual(codes(e), [['OFFER_OVER_TIMEOUT']]);
  assert.equal(e.summary.split(/(?<=\.) /)[0], "No provider is eligible among 1 known: no provider can finish within the job's 10 min timeout and before its deadline.");
});

test('a provider failing a gate and asking above maxPrice gets a combined hint; select explains the same way', () => {
  const j = job(P(100), { maxPrice: { amount: '0.10', currency: 'USD' }, requirements: { tier: 'verified' } });
  const ads = [advert(P(1), { tier: 'standard', ...ask('0.2') })];
  const e = explainMarket({ job: j, adverts: ads, offers: [], now: NOW });
  assert.deepEqual(codes(e), [['TIER_NOT_SATISFIED', 'ASK_ABOVE_PRICE']]);
  assert.deepEqual(e.relaxations.map((r) => r.text), ['accept tier standard and raise maxPrice to 0.2 USD → 1 more provider (1 of them has not quoted yet)']);
  const s = select({ job: j, adverts: ads, offers: [], policy: 'balanced', now: NOW });
  assert.equal(s.ok, false);
  assert.deepEqual(!s.ok && s.explanation, e);
});

test('judgeAll without asks (the buyer\'s "has every provider quoted" check) is unchanged: no offer is OFFER_MISSING', () => {
  const j = job(P(100), { maxPrice: { amount: '0.0001', currency: 'USD' } });
  const ads: Array<Opened<Advert>> = [advert(P(1), ask('0.0002')), advert(P(2), ask('0.01', 'EUR'))];
  const vs = judgeAll(prepareJob(j), new AdvertIndex(ads), [], NOW, 30_000);
  assert.deepEqual(vs.map((v) => v.failures.map((f) => f.code)), [['OFFER_MISSING'], ['OFFER_MISSING']]);
});

test('an ask per second above maxPrice at the whole timeout is said as a bound: the provider quotes its own estimate, so the text names the longest run maxPrice buys', () => {
  const j = job(P(100), { maxPrice: { amount: '0.1', currency: 'USD' }, timeoutMs: 300_000 });
  const ads = [advert(P(1), ask('0.001', 'USD', 'second')), advert(P(2), ask('0.2', 'USD', 'second')), advert(P(3), ask('0.2'))];
  const e = explainMarket({ job: j, adverts: ads, offers: [], now: NOW });
  assert.deepEqual(codes(e), [['ASK_ABOVE_PRICE'], ['ASK_ABOVE_PRICE'], ['ASK_ABOVE_PRICE']]);
  const msg = (i: number) => e.providers.find((v) => v.provider === P(i).did)!.failures[0]!.message;
  assert.equal(msg(1), "asks 0.001 USD per second: above 0.1 for the job's whole 300 s timeout (0.3); it quotes only for a run it expects to take at most 100 s");
  assert.equal(msg(2), "asks 0.2 USD per second: above 0.1 for the job's whole 300 s timeout (60); even one second costs more");
  // per job, the ask is the price: the probe's words
  assert.equal(msg(3), 'asks 0.2 USD per job: 0.2 for the order, above 0.1');
});
