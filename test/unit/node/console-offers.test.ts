/**
 * `GET /v1/offers/:job?providers=did,…` (src/node/control.ts; docs/console.md "Market"): the console's Market view
 * asks for the eligibility of the page it shows. It asked for every provider's verdict: 782 KiB at 2,404 adverts
 * (about 3.2 MB at the 10,000-advert cap) on each refresh, every 5 s, to show a page of 100. With `providers`, the
 * answer holds those providers' offers and verdicts only, and the whole market's counts and summary; without it,
 * every provider's, as `c0mpute offers` reads it. A job's walk (`/v1/console/job/:job`, refetched on the run's
 * events) carried every provider's verdict too: now those of the providers that offered.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { offers, parseOffersProviders, OFFERS_PROVIDERS_MAX } from '../../../src/node/control.js';
import { jobWalk } from '../../../src/node/console-routes.js';
import type { ConsoleHub } from '../../../src/node/console-hub.js';
import { AdvertIndex, explainMarket } from '../../../src/market/index.js';
import { C0Error } from '../../../src/errors.js';
import type { Advert, Offer, Opened } from '../../../src/records/index.js';
import { NOW, P, advert, job, offer } from '../market/fixtures.js';

const buyer = P(9999);
const j = job(buyer);
const ads: Array<Opened<Advert>> = [];
const offs: Array<Opened<Offer>> = [];
for (let i = 1; i <= 300; i++) {
  const a = advert(P(i), { tier: i % 3 ? 'standard' : 'community' });
  ads.push(a);
  if (i % 5 === 0) offs.push(offer(P(i), j, a));
}
const index = new AdvertIndex(ads);
const node = {
  clock: () => NOW,
  d: { config: { history: { keepDays: 0 } } },
  records: { get: async (a: string) => (a === j.address ? j : undefined), selectionsOf: async () => [], getBytes: async () => undefined },
  market: {
    offersFor: () => offs,
    explain: (jj: typeof j, now: number) => explainMarket({ job: jj, adverts: index, offers: offs, now }),
    evidence: { receiptsOf: () => [], acceptancesOf: () => [], nondeliveries: new Map() },
    earlierJobs: [],
  },
} as unknown as OverlayNode;

type Answer = { offers: Array<{ signer: string }>; explanation: { known: number; eligible: number; counts: Record<string, number>; summary: string; providers: Array<{ provider: string }>; expired: string[] } };
const ask = async (q: string): Promise<Answer> => (await offers(node, j.address, parseOffersProviders(new URLSearchParams(q)))) as unknown as Answer;

test('with ?providers=, only those providers: their offers and verdicts, with the whole market summary', async () => {
  const whole = await ask('');
  assert.equal(whole.explanation.providers.length, 300, 'without the parameter: every provider (the CLI)');
  assert.equal(whole.offers.length, 60);
  const page = ads.slice(0, 100).map((a) => a.signer);
  const some = await ask(`providers=${page.join(',')}`);
  assert.deepEqual(new Set(some.explanation.providers.map((p) => p.provider)), new Set(page));
  assert.deepEqual(new Set(some.offers.map((o) => o.signer)), new Set(offs.filter((o) => page.includes(o.signer)).map((o) => o.signer)));
  // the counts and the summary are the whole market's
  for (const k of ['known', 'eligible', 'counts', 'summary'] as const) assert.deepEqual(some.explanation[k], whole.explanation[k], k);
  // what goes over the wire: a page's worth, not the market's
  const sizeWhole = JSON.stringify(whole).length;
  const sizePage = JSON.stringify(some).length;
  assert.ok(sizePage * 2.5 < sizeWhole, `a page of 100 of 300: ${sizePage} B, every provider: ${sizeWhole} B`);
  const none = await ask('providers=');
  assert.equal(none.explanation.providers.length, 0);
  assert.equal(none.offers.length, 0);
  assert.equal(none.explanation.summary, whole.explanation.summary);
});

test('?providers= names at most a page of DIDs, each a did:key: else a coded error', () => {
  const dids = Array.from({ length: OFFERS_PROVIDERS_MAX + 1 }, (_, i) => P(i + 1).did);
  assert.equal(parseOffersProviders(new URLSearchParams(`providers=${dids.slice(0, OFFERS_PROVIDERS_MAX).join(',')}`))?.size, OFFERS_PROVIDERS_MAX);
  const code = (q: string) => {
    try {
      parseOffersProviders(new URLSearchParams(q));
      return 'none';
    } catch (e) {
      assert.ok(e instanceof C0Error);
      assert.equal(e.field, 'providers');
      return e.code;
    }
  };
  assert.equal(code(`providers=${dids.join(',')}`), 'API_BAD_QUERY');
  assert.equal(code(`providers=${P(1).did},not-a-did`), 'DID_MALFORMED');
  assert.equal(code(`providers=${P(1).did},`), 'DID_MALFORMED');
  assert.equal(parseOffersProviders(new URLSearchParams('limit=3')), undefined);
});

test("a job's walk carries the verdicts of the providers that offered, with the whole market's summary", async () => {
  const whole = await ask('');
  const w = (await jobWalk(node, { runs: [] } as unknown as ConsoleHub, j.address)) as unknown as { offers: Array<{ signer: string }>; explanation: Answer['explanation'] };
  assert.equal(w.offers.length, 60);
  assert.deepEqual(new Set(w.explanation.providers.map((p) => p.provider)), new Set(offs.map((o) => o.signer)));
  for (const k of ['known', 'eligible', 'counts', 'summary'] as const) assert.deepEqual(w.explanation[k], whole.explanation[k], k);
});
