/**
 * `run`'s account of a decision nobody wins names each provider's reasons with their codes, and the hint: every ask
 * above maxPrice reads as ASK_ABOVE_PRICE with "raise maxPrice to …", not "has not quoted for this job" (the QA pass:
 * `run` and `market probe` disagreed on the same job).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderEvent } from '../../../src/cli/render.js';
import { explainMarket, select } from '../../../src/market/index.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const ask = (amount: string) => ({ prices: [{ workload: 'infer.llm', unit: 'job', price: { amount, currency: 'USD' } }] });

test('a decision with every ask above maxPrice: each provider line has ASK_ABOVE_PRICE, the summary names the price and the hints follow', () => {
  const j = job(P(100), { maxPrice: { amount: '0.0001', currency: 'USD' } });
  const ads = [advert(P(1), ask('0.0002')), advert(P(2), ask('0.0005'))];
  const result = select({ job: j, adverts: ads, offers: [], policy: 'balanced', now: NOW });
  const market = explainMarket({ job: j, adverts: ads, offers: [], now: NOW });
  // as the daemon sends it: JSON
  const decision = JSON.parse(JSON.stringify({ result, market })) as unknown;
  const lines: string[] = [];
  renderEvent({ e: 'decision', decision, policy: 'balanced' }, (did) => did.slice(-4), (s) => lines.push(s));
  const cheap = P(1).did.slice(-4);
  const dear = P(2).did.slice(-4);
  assert.ok(lines.includes(`  ✘ ${cheap}: asks 0.0002 USD per job: 0.0002 for the order, above 0.0001 [ASK_ABOVE_PRICE]`), lines.join('\n'));
  assert.ok(lines.includes(`  ✘ ${dear}: asks 0.0005 USD per job: 0.0005 for the order, above 0.0001 [ASK_ABOVE_PRICE]`), lines.join('\n'));
  assert.ok(!lines.some((l) => l.startsWith('  ✘ ') && /has not quoted/.test(l)), lines.join('\n'));
  assert.ok(lines.includes('✘ no eligible provider: No provider is eligible among 2 known: no provider asks at most 0.0001 USD. To widen the market: raise maxPrice to 0.0005 USD → 2 more providers (2 of them have not quoted yet).'), lines.join('\n'));
  assert.ok(lines.includes('  · raise maxPrice to 0.0002 USD → 1 more provider (1 of them has not quoted yet)'), lines.join('\n'));
});

test('a provider that could quote and has no offer here reads "no offer for this job", with its code: not "has not quoted", which the buyer cannot know (QA witness pass #6: the offer was lost on the way)', () => {
  const j = job(P(100), { maxPrice: { amount: '0.0001', currency: 'USD' } });
  const ads = [advert(P(1), ask('0.0001'))];
  const result = select({ job: j, adverts: ads, offers: [], policy: 'balanced', now: NOW });
  const market = explainMarket({ job: j, adverts: ads, offers: [], now: NOW });
  const lines: string[] = [];
  renderEvent({ e: 'decision', decision: JSON.parse(JSON.stringify({ result, market })) as unknown, policy: 'balanced' }, (did) => did.slice(-4), (s) => lines.push(s));
  assert.ok(lines.includes(`  ✘ ${P(1).did.slice(-4)}: no offer for this job [OFFER_MISSING]`), lines.join('\n'));
  assert.ok(!lines.some((l) => /not quoted/.test(l)), lines.join('\n'));
});
