/**
 * A page of the market (`GET /v1/market?offset=…`, the console's Market view;
 * src/node/market-page.ts). The console asked for the whole book: at the
 * advert cap (10,000) one answer was 7.3 MB, built and serialised on the event
 * loop every couple of seconds. A page's answer is bounded by its `limit`
 * whatever the market's size, and walking the pages by `next` lists every
 * provider exactly once, in every order and under a filter.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { AdvertIndex } from '../../../src/market/index.js';
import { market, marketPageOf } from '../../../src/node/control.js';
import { MARKET_PAGE_MAX, MARKET_WORKLOADS_MAX, marketPage, parseMarketPage, type MarketPageQuery } from '../../../src/node/market-page.js';
import { C0Error } from '../../../src/errors.js';
import type { Advert, Opened } from '../../../src/records/index.js';
import { NOW, P, advert } from '../market/fixtures.js';

const TIERS = ['community', 'standard', 'verified'] as const;
const ads: Array<Opened<Advert>> = [];
function book(n: number): Array<Opened<Advert>> {
  for (let i = ads.length; i < n; i++) {
    ads.push(
      advert(P(i + 1), {
        tier: TIERS[i % 3]!,
        expiresAt: i % 7 === 0 ? NOW - 1 : NOW + 3_600_000,
        workloads: i % 2 ? ['infer.llm'] : ['builtin.sha256', 'infer.llm'],
        hardware: { cpuCores: 1 + (i % 13) },
        prices: [{ workload: 'infer.llm', unit: 'job', price: { amount: ((i * 37) % 101 / 1000).toFixed(3), currency: 'USD' } }],
      }),
    );
  }
  return ads.slice(0, n);
}

function node(adverts: Array<Opened<Advert>>): OverlayNode {
  const idx = new AdvertIndex(adverts);
  return { clock: () => NOW, market: { adverts: idx, reputation: () => ({ scoreOf: (d: string) => (d.charCodeAt(d.length - 1) % 10) / 10 }) }, presence: { live: () => [] } } as unknown as OverlayNode;
}

const q = (s: string): MarketPageQuery => parseMarketPage(new URLSearchParams(s))!;

test('a page answer is bounded by its limit, not by the market: 100 rows of 3,000 cost what 100 rows of 300 do', () => {
  const small = marketPageOf(node(book(300)), q('offset=0&limit=100'));
  const large = marketPageOf(node(book(3000)), q('offset=0&limit=100'));
  const whole = JSON.stringify(market(node(book(3000))));
  const sizeSmall = JSON.stringify(small).length;
  const sizeLarge = JSON.stringify(large).length;
  assert.equal((large.adverts as unknown[]).length, 100);
  assert.equal(large.total, 3000);
  assert.equal(large.matched, 3000);
  assert.equal(large.next, 100);
  // the same 100 rows' worth of JSON whatever the book's size (the counts' digits aside)
  assert.ok(Math.abs(sizeLarge - sizeSmall) < 200, `page of 3,000: ${sizeLarge} B, of 300: ${sizeSmall} B`);
  assert.ok(sizeLarge * 20 < whole.length, `page ${sizeLarge} B against the whole list's ${whole.length} B`);
});

test('walking the pages by next lists every provider exactly once, in every order, filtered or not', () => {
  const d = node(book(1000));
  for (const params of ['sort=provider', 'sort=price&desc=1', 'sort=tier', 'sort=cpu&desc=1', 'sort=reputation', 'sort=slots', 'sort=region&live=1', 'tier=verified&workload=builtin.sha256', 'q=z6mk']) {
    const seen: string[] = [];
    let offset: number | undefined = 0;
    let matched = -1;
    let pages = 0;
    while (offset !== undefined) {
      const p = marketPageOf(d, q(`${params}&limit=37&offset=${offset}`)) as { matched: number; next?: number; adverts: Array<{ provider: string }> };
      assert.ok(p.adverts.length <= 37);
      matched = p.matched;
      seen.push(...p.adverts.map((a) => a.provider));
      offset = p.next;
      assert.ok(++pages < 100, 'paging ends');
    }
    assert.equal(seen.length, matched, params);
    assert.equal(new Set(seen).size, seen.length, `${params}: a provider listed twice`);
    const want = (market(d) as { adverts: Array<{ provider: string; live: boolean; record: Advert }> }).adverts.filter((a) => {
      const pq = q(params);
      return (!pq.liveOnly || a.live) && (!pq.tier || a.record.tier === pq.tier) && (!pq.workload || a.record.workloads.includes(pq.workload)) && (!pq.q || a.provider.toLowerCase().includes(pq.q));
    });
    assert.deepEqual([...seen].sort(), want.map((a) => a.provider).sort(), params);
    assert.ok(matched > 0, params);
  }
});

test('the page is in the order asked for, ties by DID', () => {
  const d = node(book(300));
  const p = marketPageOf(d, q('sort=price&desc=1&limit=300')) as { adverts: Array<{ provider: string; record: Advert }> };
  const key = (a: { provider: string; record: Advert }) => Number(a.record.prices![0]!.price.amount);
  for (let i = 1; i < p.adverts.length; i++) {
    const [a, b] = [p.adverts[i - 1]!, p.adverts[i]!];
    assert.ok(key(a) > key(b) || (key(a) === key(b) && a.provider > b.provider), `row ${i} out of order`);
  }
  const live = marketPageOf(d, q('live=1')) as { matched: number; live: number; total: number };
  assert.equal(live.matched, live.live);
  assert.ok(live.live < live.total);
});

test('the filter names at most MARKET_WORKLOADS_MAX workloads, the most offered', () => {
  const entries = Array.from({ length: MARKET_WORKLOADS_MAX + 50 }, (_, i) => ({ provider: `did:key:z${i}`, a: { signer: `did:key:z${i}`, record: { expiresAt: NOW + 1, tier: 'standard', workloads: [`w.${String(i).padStart(4, '0')}`, 'common.one'], hardware: { cpuCores: 1, memoryMiB: 1 } } } as unknown as Opened<Advert> }));
  const r = marketPage(entries, q('offset=0'), { now: NOW, scoreOf: () => 0, freeSlots: new Map() });
  assert.equal(r.workloads.length, MARKET_WORKLOADS_MAX);
  assert.ok(r.workloads.includes('common.one'));
});

test('the page parameters: no page parameter is the whole list; malformed ones are refused with their code and field', () => {
  assert.equal(parseMarketPage(new URLSearchParams('limit=5')), undefined);
  assert.equal(parseMarketPage(new URLSearchParams('')), undefined);
  assert.deepEqual(q('offset=0'), { offset: 0, limit: 100, sort: 'provider', desc: false, liveOnly: false });
  for (const [s, code, field] of [
    ['offset=-1', 'API_BAD_CURSOR', 'offset'],
    ['offset=x', 'API_BAD_CURSOR', 'offset'],
    [`offset=0&limit=${MARKET_PAGE_MAX + 1}`, 'API_BAD_LIMIT', 'limit'],
    ['offset=0&limit=0', 'API_BAD_LIMIT', 'limit'],
    ['sort=cost', 'API_BAD_QUERY', 'sort'],
    ['tier=gold', 'API_BAD_QUERY', 'tier'],
    ['live=yes', 'API_BAD_QUERY', 'live'],
    [`q=${'a'.repeat(201)}`, 'API_BAD_QUERY', 'q'],
  ] as const) {
    assert.throws(() => parseMarketPage(new URLSearchParams(s)), (e: unknown) => e instanceof C0Error && e.code === code && e.field === field, s);
  }
});
