/**
 * A page of the market (`GET /v1/market?offset=…`, the console's Market view;
 * src/node/market-page.ts). The console asked for the whole book: at the
 * advert cap (10,000) one answer was 7.3 MB, built and serialised on the event
 * loop every couple of seconds. A page's answer is bounded by its `limit`
 * whatever the market's size, and walking the pages by `next` lists every
 * provider exactly once, in every order and under a filter.
 *
 * `next` is a keyset cursor (the last row's sort value and DID), not an
 * offset: an offset is a position in an order recomputed on every request, so
 * an advert that dropped out after page 1 shifted the rest back and the walk
 * skipped a provider (and a presence heartbeat under sort=slots listed one
 * twice and another never). Now a provider present and unchanged for the whole
 * walk is listed exactly once, whatever else comes, goes or moves.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { AdvertIndex } from '../../../src/market/index.js';
import { market, marketPageOf } from '../../../src/node/control.js';
import { MARKET_PAGE_MAX, MARKET_WORKLOADS_MAX, marketPage, parseMarketPage, type MarketPageQuery } from '../../../src/node/market-page.js';
import { C0Error } from '../../../src/errors.js';
import { compareAmounts } from '../../../src/records/money.js';
import type { Advert, Opened } from '../../../src/records/index.js';
import { NOW, P, advert } from '../market/fixtures.js';
import type { MarketEntry, MarketPageFacts } from '../../../src/node/market-page.js';

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
  assert.equal(typeof large.next, 'string');
  assert.equal(large.offset, 0);
  // the same 100 rows' worth of JSON whatever the book's size (the counts' digits aside)
  assert.ok(Math.abs(sizeLarge - sizeSmall) < 200, `page of 3,000: ${sizeLarge} B, of 300: ${sizeSmall} B`);
  assert.ok(sizeLarge * 20 < whole.length, `page ${sizeLarge} B against the whole list's ${whole.length} B`);
});

test('walking the pages by next lists every provider exactly once, in every order, filtered or not', () => {
  const d = node(book(1000));
  for (const params of ['sort=provider', 'sort=price&desc=1', 'sort=tier', 'sort=cpu&desc=1', 'sort=reputation', 'sort=slots', 'sort=region&live=1', 'tier=verified&workload=builtin.sha256', 'q=z6mk']) {
    const seen: string[] = [];
    let after: string | undefined;
    let matched: number;
    let pages = 0;
    do {
      const p = marketPageOf(d, q(`${params}&limit=37${after !== undefined ? `&after=${encodeURIComponent(after)}` : ''}`)) as { matched: number; offset: number; next?: string; adverts: Array<{ provider: string }> };
      assert.ok(p.adverts.length <= 37);
      // `offset` is where the page starts in the order, for the console's "showing 38–74"
      assert.equal(p.offset, seen.length, params);
      matched = p.matched;
      seen.push(...p.adverts.map((a) => a.provider));
      after = p.next;
      assert.ok(++pages < 100, 'paging ends');
    } while (after !== undefined);
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

test('sort=price compares amounts exactly as decimals, the most quoted currency first, no price last (never as floats)', () => {
  // 0.1 and 0.10000000000000000001 are the same float; 9007199254740993 is not a float at all
  const priced = (n: number, amount: string, currency = 'USD'): MarketEntry => ({ provider: P(n).did, a: advert(P(n), { prices: [{ workload: 'infer.llm', unit: 'job', price: { amount, currency } }] }) });
  const entries = [priced(1, '0.10000000000000000001'), priced(2, '0.1'), priced(3, '9007199254740993'), priced(4, '9007199254740992'), priced(5, '0.05', 'EUR'), { provider: P(6).did, a: advert(P(6), { prices: [] }) }];
  const facts = { now: NOW, scoreOf: () => 0, freeSlots: new Map<string, number>() };
  const order = (desc: boolean) => marketPage(entries, { offset: 0, limit: 10, sort: 'price', desc, liveOnly: false }, facts).page.map((e) => e.provider);
  const usd = [P(2), P(1), P(4), P(3)].map((p) => p.did);
  assert.deepEqual(order(false), [...usd, P(5).did, P(6).did]);
  assert.deepEqual(order(true), [...[...usd].reverse(), P(5).did, P(6).did], 'desc reverses the amounts, not the currencies; no price stays last');
  // a cursor carries the exact amount: the page after row 2 starts at row 3
  const first = marketPage(entries, { offset: 0, limit: 2, sort: 'price', desc: false, liveOnly: false }, facts);
  const next = parseMarketPage(new URLSearchParams(`sort=price&after=${first.next}`))!;
  assert.deepEqual(marketPage(entries, { ...next, limit: 10 }, facts).page.map((e) => e.provider), [...usd.slice(2), P(5).did, P(6).did]);
});

test('sort=price never ranks another currency as cheaper: prices in one currency first, the others after, grouped (review s43 R3 F2)', () => {
  // the reviewer's spoof: "0.0010000000 BTC" and "0.2 AAA" sorted before every USD price (the sort was [currency, amount])
  const priced = (n: number, amount: string, currency: string): MarketEntry => ({ provider: P(n).did, a: advert(P(n), { prices: [{ workload: 'infer.llm', unit: 'job', price: { amount, currency } }] }) });
  const book = [priced(1, '0.30', 'USD'), priced(2, '0.0010000000', 'BTC'), priced(3, '0.20', 'USD'), priced(4, '0.2', 'AAA'), priced(5, '0.25', 'USD'), priced(6, '0.0005', 'BTC')];
  const facts = { now: NOW, scoreOf: () => 0, freeSlots: new Map<string, number>() };
  const run = (params: string) => {
    const r = marketPage(book, { ...parseMarketPage(new URLSearchParams(params))!, limit: 10 }, facts);
    return { currency: r.currency, order: r.page.map((e) => e.a.record.prices![0]!.price) };
  };
  const text = (o: Array<{ amount: string; currency: string }>) => o.map((p) => `${p.amount} ${p.currency}`);
  const most = run('sort=price');
  assert.equal(most.currency, 'USD', 'the currency most providers quote in');
  assert.deepEqual(text(most.order), ['0.20 USD', '0.25 USD', '0.30 USD', '0.2 AAA', '0.0005 BTC', '0.0010000000 BTC']);
  const btc = run('sort=price&currency=BTC');
  assert.deepEqual(text(btc.order).slice(0, 2), ['0.0005 BTC', '0.0010000000 BTC']);
  assert.deepEqual(text(btc.order).slice(2), ['0.2 AAA', '0.20 USD', '0.25 USD', '0.30 USD'], 'the others grouped, in code order');
  assert.throws(() => parseMarketPage(new URLSearchParams('sort=price&currency=usd')), (e: unknown) => e instanceof C0Error && e.code === 'API_BAD_QUERY');
  // a walk keeps the currency it began with, even if the book's most quoted one changes under it
  const entries = new Map(book.map((e) => [e.provider, e]));
  const first = marketPage(entries.values(), { ...parseMarketPage(new URLSearchParams('sort=price&limit=2'))! }, facts);
  for (let n = 10; n < 14; n++) entries.set(P(n).did, priced(n, '0.01', 'BTC'));
  const second = marketPage(entries.values(), { ...parseMarketPage(new URLSearchParams(`sort=price&limit=10&after=${first.next}`))! }, facts);
  assert.equal(second.currency, 'USD');
  assert.deepEqual(text(second.page.slice(0, 2).map((e) => e.a.record.prices![0]!.price)), ['0.30 USD', '0.2 AAA']);
});

test('sort=price: the currency first is the one providers with evidence quote, among the rows matched; throwaway keys cannot choose it (second-round review s43 R9 F1)', () => {
  const priced = (n: number, amount: string, currency: string): MarketEntry => ({ provider: P(n).did, a: advert(P(n), { prices: [{ workload: 'infer.llm', unit: 'job', price: { amount, currency } }], region: n < 10 ? 'eu-west' : 'us-east' }) });
  // four honest USD providers with evidence; one hostile provider at 0.01 AAA and four throwaway keys quoting AAA
  const book = [1, 2, 3, 4].map((n) => priced(n, `0.2${n}`, 'USD'));
  for (let n = 10; n < 15; n++) book.push(priced(n, '0.01', 'AAA'));
  const proven = new Set([1, 2, 3, 4].map((n) => P(n).did));
  const facts = { now: NOW, scoreOf: (p: string) => (proven.has(p) ? 0.8 : 0.5), freeSlots: new Map<string, number>() };
  const r = marketPage(book, { ...parseMarketPage(new URLSearchParams('sort=price'))!, limit: 10 }, facts);
  assert.equal(r.currency, 'USD');
  assert.equal(r.page[0]!.a.record.prices![0]!.price.amount, '0.21');
  // with no evidence anywhere, the matched rows' most quoted; a search down to one USD provider answers USD
  const young = { ...facts, scoreOf: () => 0.5 };
  assert.equal(marketPage(book, { ...parseMarketPage(new URLSearchParams('sort=price'))!, limit: 10 }, young).currency, 'AAA');
  assert.equal(marketPage(book, { ...parseMarketPage(new URLSearchParams('sort=price&q=eu-west'))!, limit: 10 }, young).currency, 'USD');
});

test('the page is in the order asked for, ties by DID', () => {
  const d = node(book(300));
  const p = marketPageOf(d, q('sort=price&desc=1&limit=300')) as { adverts: Array<{ provider: string; record: Advert }> };
  const key = (a: { provider: string; record: Advert }) => a.record.prices![0]!.price.amount;
  for (let i = 1; i < p.adverts.length; i++) {
    const [a, b] = [p.adverts[i - 1]!, p.adverts[i]!];
    const c = compareAmounts(key(a), key(b));
    assert.ok(c > 0 || (c === 0 && a.provider > b.provider), `row ${i} out of order`);
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
    ['after=', 'API_BAD_CURSOR', 'after'],
    ['after=12', 'API_BAD_CURSOR', 'after'],
    [`after=${'A'.repeat(5000)}`, 'API_BAD_CURSOR', 'after'],
    [`after=${Buffer.from('[1,2,3]').toString('base64url')}`, 'API_BAD_CURSOR', 'after'],
    [`q=${'a'.repeat(201)}`, 'API_BAD_QUERY', 'q'],
  ] as const) {
    assert.throws(() => parseMarketPage(new URLSearchParams(s)), (e: unknown) => e instanceof C0Error && e.code === code && e.field === field, s);
  }
});

/** One walk over `entries` by `next`, `change(page)` run after each page but the last; the providers in the order shown. */
function walk(entries: Map<string, MarketEntry>, params: string, facts: MarketPageFacts, change: (page: number) => void): string[] {
  const seen: string[] = [];
  let after: string | undefined;
  for (let page = 0; ; page++) {
    assert.ok(page < 50, 'paging ends');
    const r = marketPage(entries.values(), q(`${params}${after !== undefined ? `&after=${encodeURIComponent(after)}` : ''}`), facts);
    seen.push(...r.page.map((e) => e.provider));
    if (r.next === undefined) return seen;
    after = String(r.next);
    change(page);
  }
}

// a few share each sort value (ties go by DID), and every fifth has no price (sorted as +Infinity)
const entryOf = (n: number): MarketEntry => ({ provider: P(n).did, a: advert(P(n), { hardware: { cpuCores: 1 + (n % 3) }, ...(n % 5 === 0 ? { prices: [] } : {}) }) });

test('an advert that drops out between pages does not shift the rest: the next page skips no one', () => {
  // the reviewer's walk (pc31 repro-2): 5 adverts, 2 a page, the first provider shown goes after page 1
  const entries = new Map([1, 2, 3, 4, 5].map((n) => [P(n).did, entryOf(n)]));
  const facts: MarketPageFacts = { now: NOW, scoreOf: () => 0, freeSlots: new Map() };
  const first = [...entries.keys()].sort()[0]!;
  const seen = walk(entries, 'sort=provider&limit=2', facts, (page) => page === 0 && entries.delete(first));
  const missed = [...entries.keys()].filter((d) => !seen.includes(d));
  assert.deepEqual(missed, [], 'a provider still in the book was skipped');
  assert.equal(new Set(seen).size, seen.length, 'a provider listed twice');
  assert.equal(seen.length, 5);
});

test('sort=slots: a provider whose free slots change between pages may move, every other is listed exactly once', () => {
  const entries = new Map([1, 2, 3, 4, 5].map((n) => [P(n).did, entryOf(n)]));
  const slots = new Map([1, 2, 3, 4, 5].map((n, i) => [P(n).did, i]));
  const facts: MarketPageFacts = { now: NOW, scoreOf: () => 0, freeSlots: slots };
  const seen = walk(entries, 'sort=slots&limit=2', facts, (page) => page === 0 && slots.set(P(1).did, 99));
  for (const d of entries.keys()) if (d !== P(1).did) assert.equal(seen.filter((s) => s === d).length, 1, `${d.slice(-6)} listed ${seen.filter((s) => s === d).length} times`);
});

test('whatever comes, goes or moves between pages, every provider present and unchanged throughout is listed exactly once, in every order', () => {
  let seed = 7;
  const rnd = (n: number) => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0), (seed >>> 8) % n);
  for (const params of ['sort=provider', 'sort=cpu', 'sort=cpu&desc=1', 'sort=reputation&desc=1', 'sort=slots', 'sort=price', 'sort=region&live=1', 'tier=standard&sort=memory']) {
    for (let round = 0; round < 5; round++) {
      const entries = new Map<string, MarketEntry>();
      for (let n = 1; n <= 60; n++) if (rnd(4)) entries.set(P(n).did, entryOf(n));
      const score = new Map<string, number>([...Array(60)].map((_, i) => [P(i + 1).did, rnd(5) / 4]));
      const slots = new Map<string, number>([...Array(60)].map((_, i) => [P(i + 1).did, rnd(4)]));
      const facts: MarketPageFacts = { now: NOW, scoreOf: (d) => score.get(d) ?? 0, freeSlots: slots };
      const touched = new Set<string>();
      const present = new Set(entries.keys());
      const seen = walk(entries, `${params}&limit=7`, facts, () => {
        for (let k = 0; k < 3; k++) {
          const n = 1 + rnd(60);
          const d = P(n).did;
          touched.add(d);
          const what = rnd(4);
          if (what === 0) entries.delete(d);
          else if (what === 1) entries.set(d, entryOf(n));
          else if (what === 2) score.set(d, rnd(5) / 4);
          else slots.set(d, rnd(4));
        }
      });
      const pq = q(params);
      let checked = 0;
      for (const d of present) {
        if (touched.has(d)) continue;
        const e = entries.get(d)!;
        if (pq.tier && e.a.record.tier !== pq.tier) continue;
        assert.equal(seen.filter((s) => s === d).length, 1, `${params} round ${round}: ${d.slice(-6)} listed ${seen.filter((s) => s === d).length} times`);
        checked++;
      }
      assert.ok(checked >= 10, `${params} round ${round}: only ${checked} providers left untouched`);
    }
  }
});

test('a cursor is for the order and filter it was made in: with another it is refused, not read as a position in the wrong order', () => {
  const d = node(book(100));
  const first = marketPageOf(d, q('sort=price&tier=standard&limit=10')) as { next: string };
  const after = encodeURIComponent(first.next);
  assert.equal((marketPageOf(d, q(`sort=price&tier=standard&limit=25&after=${after}`)) as { offset: number }).offset, 10, 'another page size is fine');
  for (const other of ['sort=cpu&tier=standard', 'sort=price&desc=1&tier=standard', 'sort=price', 'sort=price&tier=standard&live=1', 'sort=price&tier=standard&q=z6', 'sort=price&tier=standard&workload=infer.llm']) {
    assert.throws(() => parseMarketPage(new URLSearchParams(`${other}&after=${after}`)), (e: unknown) => e instanceof C0Error && e.code === 'API_BAD_CURSOR' && e.field === 'after', other);
  }
  assert.throws(() => parseMarketPage(new URLSearchParams(`sort=price&tier=standard&offset=10&after=${after}`)), (e: unknown) => e instanceof C0Error && e.code === 'API_BAD_CURSOR', 'offset and after together');
  // `offset` still starts at a position (a jump), and its `next` is a cursor like any page's
  const at = marketPageOf(d, q('sort=price&tier=standard&limit=10&offset=10')) as { offset: number; next: string; adverts: Array<{ provider: string }> };
  const byCursor = marketPageOf(d, q(`sort=price&tier=standard&limit=10&after=${after}`)) as { adverts: Array<{ provider: string }> };
  assert.equal(at.offset, 10);
  assert.deepEqual(at.adverts.map((a) => a.provider), byCursor.adverts.map((a) => a.provider));
});
