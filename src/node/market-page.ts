/**
 * A page of the market (`GET /v1/market?offset=K&limit=N…`, the console's
 * Market view; docs/node.md "Control API", docs/console.md "Market"): the
 * providers this node holds an advert for, filtered and sorted here, and only
 * the page's rows turned into JSON. A node at the advert cap (10,000) answered
 * the console with the whole book, 7.3 MB built and serialised in one step on
 * the event loop, every couple of seconds while the Market tab was open; a
 * page costs a filter and a sort over plain values plus `limit` rows, however
 * large the market.
 *
 * The order is total (ties go by the entry's DID, unique), and `next` is a
 * keyset cursor, not a position: the last row's sort value and DID (with the
 * order and filter it was made for), and the page after starts strictly after
 * that row in the order as it is now. An advert that drops out, or arrives, or
 * a provider whose free slots or reputation move, shifts no one else: walking
 * the pages by `next` lists every provider that is in the book and keeps its
 * sort value for the whole walk exactly once. One whose sort value changes
 * between pages may be listed twice or not at all (it moved across the
 * cursor); one that arrives mid-walk is listed if it sorts after the cursor.
 * (`next` was an offset into the order recomputed per request: an advert of
 * page 1 that expired made page 2 skip a provider, and under sort=slots a
 * presence heartbeat listed one twice and another never.)
 */
import { C0Error } from '../errors.js';
import { TIERS, type Advert, type Opened } from '../records/index.js';
import { compareAmounts, CURRENCY_RE, isAmount } from '../records/money.js';
import { cursorTag, decodeCursor, encodeCursor, keysetPage, parsePageWindow, queryFlag, queryText, type KeysetCursor } from './keyset-page.js';

export const MARKET_PAGE_DEFAULT = 100;
export const MARKET_PAGE_MAX = 1000;
/** How many workloads a page names for the filter (a market of hostile adverts could name one each). */
export const MARKET_WORKLOADS_MAX = 200;

export const MARKET_SORTS = ['provider', 'tier', 'region', 'cpu', 'memory', 'gpu', 'price', 'reputation', 'slots'] as const;
export type MarketSort = (typeof MARKET_SORTS)[number];

export interface MarketPageQuery {
  /** Start at this position in the order (a jump: positions shift as the book changes). 0 with `after`. */
  offset: number;
  /** Start strictly after this row (a `next`, decoded): the page after the one it ended. */
  after?: MarketCursor;
  limit: number;
  sort: MarketSort;
  desc: boolean;
  /** Lowercase text the provider's DID, its signer's, its region or a GPU model must contain. */
  q?: string;
  tier?: string;
  workload?: string;
  /** Only providers whose advert is live. */
  liveOnly: boolean;
  /** sort=price: the currency whose prices come first (default: the one most providers in the book quote in). */
  currency?: string;
}

/** The query parameters that ask for a page (any one of them does). */
const PAGE_PARAMS = ['offset', 'after', 'sort', 'desc', 'q', 'tier', 'workload', 'live', 'currency'];

/**
 * What a sort compares for one entry: a number, a string, or for `price` the first price as [currency, amount]
 * (compared exactly as decimals within one currency: amounts are never turned into floats), null for an advert with
 * no price (after every price).
 */
export type MarketSortValue = number | string | readonly [currency: string, amount: string] | null;

/** Where a page ended: its last row's sort value and DID (`id`), and for sort=price the currency that came first. */
export type MarketCursor = KeysetCursor<MarketSortValue>;

const STRING_SORTS: readonly MarketSort[] = ['provider', 'region'];

type Order = Omit<MarketPageQuery, 'offset' | 'after' | 'limit'>;

/** What a cursor is bound to: the order and the filter (not the page size, which may change between pages). */
function tagOf(q: Order): string {
  return cursorTag([q.sort, q.desc, q.q ?? '', q.tier ?? '', q.workload ?? '', q.liveOnly, q.currency ?? '']);
}

/** The opaque `next` of a page that ended at `c`. */
export function encodeMarketCursor(q: Order, c: MarketCursor): string {
  return encodeCursor(tagOf(q), c);
}

function decodeMarketCursor(token: string, q: Order): MarketCursor {
  const ok = (v: unknown): v is MarketSortValue =>
    STRING_SORTS.includes(q.sort)
      ? typeof v === 'string'
      : q.sort === 'price'
        ? v === null || (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && CURRENCY_RE.test(v[0]) && isAmount(v[1]))
        : typeof v === 'number' && Number.isFinite(v);
  const c = decodeCursor(token, tagOf(q), ok);
  if (c.ctx !== undefined && !(q.sort === 'price' && CURRENCY_RE.test(c.ctx))) throw new C0Error('API_BAD_CURSOR', 'after must be the "next" of an earlier page of the same order and filter: not a cursor', { field: 'after' });
  return c;
}

/**
 * The page a `/v1/market` request asks for, or undefined when it asks for the
 * whole list (no page parameter: the CLI's `c0mpute market`, scripts).
 * API_BAD_LIMIT / API_BAD_CURSOR / API_BAD_QUERY name the malformed parameter.
 */
export function parseMarketPage(query: URLSearchParams): MarketPageQuery | undefined {
  if (!PAGE_PARAMS.some((p) => query.has(p))) return undefined;
  const w = parsePageWindow(query, { dflt: MARKET_PAGE_DEFAULT, max: MARKET_PAGE_MAX });
  const sort = query.get('sort') ?? 'provider';
  if (!(MARKET_SORTS as readonly string[]).includes(sort)) throw new C0Error('API_BAD_QUERY', `sort must be one of ${MARKET_SORTS.join(', ')}, got "${sort.slice(0, 40)}"`, { field: 'sort' });
  const tier = queryText(query, 'tier', 32);
  if (tier !== undefined && !(TIERS as readonly string[]).includes(tier)) throw new C0Error('API_BAD_QUERY', `tier must be one of ${TIERS.join(', ')}, got "${tier}"`, { field: 'tier' });
  const q = queryText(query, 'q', 200)?.trim().toLowerCase();
  const workload = queryText(query, 'workload', 128);
  const currency = queryText(query, 'currency', 16);
  if (currency !== undefined && !CURRENCY_RE.test(currency)) throw new C0Error('API_BAD_QUERY', `currency must be an upper-case currency code, got "${currency}"`, { field: 'currency' });
  const page = {
    offset: w.offset,
    limit: w.limit,
    sort: sort as MarketSort,
    desc: queryFlag(query, 'desc'),
    liveOnly: queryFlag(query, 'live'),
    ...(q ? { q } : {}),
    ...(tier ? { tier } : {}),
    ...(workload ? { workload } : {}),
    ...(currency ? { currency } : {}),
  };
  return w.afterText === undefined ? page : { ...page, after: decodeMarketCursor(w.afterText, page) };
}

export interface MarketEntry {
  /** The DID the market knows it as (a pool's for a pool member's advert). */
  provider: string;
  a: Opened<Advert>;
}

export interface MarketPageFacts {
  now: number;
  scoreOf: (provider: string) => number;
  /** Free slots by signer, for the live providers (presence). */
  freeSlots: ReadonlyMap<string, number>;
}

export interface MarketPageResult {
  /** Entries that pass the filters. */
  matched: number;
  /** The page, in order. */
  page: MarketEntry[];
  /** Where the page starts in the order as it is now (how many matched entries come before it). */
  offset: number;
  /** The cursor of the page after (pass it as `after`), when there is one. */
  next?: string;
  /** The workloads entries offer (the filter's choices), name order: the MARKET_WORKLOADS_MAX offered most. */
  workloads: string[];
  /** sort=price: the currency whose prices came first (the others follow, grouped by currency). */
  currency?: string;
}

function gpuText(a: Opened<Advert>): string {
  return (a.record.hardware.gpus ?? []).map((g) => g.model.toLowerCase()).join(' ');
}

/** What a sort compares for one entry (MarketSortValue), never a built row. */
function sortValue(e: MarketEntry, key: MarketSort, f: MarketPageFacts): MarketSortValue {
  const r = e.a.record;
  switch (key) {
    case 'tier':
      return (TIERS as readonly string[]).indexOf(r.tier);
    case 'region':
      return r.region ?? '~';
    case 'cpu':
      return r.hardware.cpuCores;
    case 'memory':
      return r.hardware.memoryMiB;
    case 'gpu':
      return (r.hardware.gpus ?? []).reduce((n, g) => n + g.count * g.vramMiB, 0);
    case 'price': {
      const p = r.prices?.[0];
      return p ? [p.price.currency, p.price.amount] : null;
    }
    case 'reputation':
      return f.scoreOf(e.provider);
    case 'slots':
      return f.freeSlots.get(e.a.signer) ?? -1;
    default:
      return e.provider;
  }
}

/**
 * Filter `entries`, sort them by `q.sort` (ties by DID, so the order is
 * total), and return the page strictly after `q.after` (or at `q.offset`)
 * (src/node/keyset-page.ts). Only plain values are compared; the caller
 * builds JSON for the page's entries alone.
 *
 * sort=price never compares amounts of two currencies: the prices in one
 * currency come first (`q.currency`, else the one most of the matching
 * providers with a score above the prior quote their first price in, else
 * the one most matching providers quote, ties by code; a cursor keeps the
 * one its walk began with), by amount, then each other currency's, grouped in code
 * order, then the adverts with no price. `desc` reverses the amounts within
 * each currency, not the groups. (It sorted by [currency, amount]: a provider
 * quoting in "AAA" or "BTC" topped the "cheapest" list of a USD market,
 * review s43 R3 F2.)
 */
export function marketPage(entries: Iterable<MarketEntry>, q: MarketPageQuery, f: MarketPageFacts): MarketPageResult {
  const dir = q.desc ? -1 : 1;
  const workloads = new Map<string, number>();
  const all: MarketEntry[] = [];
  for (const e of entries) {
    for (const w of e.a.record.workloads) workloads.set(w, (workloads.get(w) ?? 0) + 1);
    all.push(e);
  }
  const passes = (e: MarketEntry): boolean => {
    const r = e.a.record;
    if (q.liveOnly && !(r.expiresAt > f.now)) return false;
    if (q.tier && r.tier !== q.tier) return false;
    if (q.workload && !r.workloads.includes(q.workload)) return false;
    return !q.q || e.provider.toLowerCase().includes(q.q) || e.a.signer.toLowerCase().includes(q.q) || (r.region ?? '').toLowerCase().includes(q.q) || gpuText(e.a).includes(q.q);
  };
  const firstCurrency = q.sort !== 'price' ? undefined : (q.after?.ctx ?? q.currency ?? firstQuoted(all.filter(passes), f));
  const group = (v: MarketSortValue): number => (v === null ? 2 : Array.isArray(v) && v[0] === firstCurrency ? 0 : 1);
  const compare = (x: MarketSortValue, y: MarketSortValue): number => {
    if (q.sort !== 'price') return dir * compareSortValues(x, y);
    const gx = group(x);
    const gy = group(y);
    if (gx !== gy || gx === 2) return gx - gy;
    const [cx, ax] = x as readonly [string, string];
    const [cy, ay] = y as readonly [string, string];
    return cx < cy ? -1 : cx > cy ? 1 : dir * compareAmounts(ax, ay);
  };
  const key = (e: MarketEntry): { v: MarketSortValue; id: string } | undefined => (passes(e) ? { v: sortValue(e, q.sort, f), id: e.provider } : undefined);
  const p = keysetPage(all, key, compare, { offset: q.offset, limit: q.limit, after: q.after, desc: q.desc });
  const next = p.last ? encodeMarketCursor(q, { ...p.last, ...(firstCurrency !== undefined ? { ctx: firstCurrency } : {}) }) : undefined;
  return {
    matched: p.matched,
    page: p.rows.map((k) => k.e),
    offset: p.offset,
    ...(next !== undefined ? { next } : {}),
    workloads: mostOffered(workloads),
    ...(firstCurrency !== undefined ? { currency: firstCurrency } : {}),
  };
}

/**
 * The currency a price sort puts first: the one most of `rows`' providers with a score above the prior (0.5: evidence
 * that counts for this node, which a fresh key has none of) quote their first price in; when none has, the one most
 * of `rows` quote (ties: code order); undefined when none has a price. Counting every advert in the book let a stranger
 * choose it: four throwaway keys quoting in "AAA" made a hostile 0.01 AAA the top of "Price ▲" in a USD market, and a
 * search down to one USD provider still answered AAA (second-round review s43 R9 F1).
 */
function firstQuoted(rows: readonly MarketEntry[], f: MarketPageFacts): string | undefined {
  const proven = new Map<string, number>();
  const any = new Map<string, number>();
  for (const e of rows) {
    const c = e.a.record.prices?.[0]?.price.currency;
    if (c === undefined) continue;
    any.set(c, (any.get(c) ?? 0) + 1);
    if (f.scoreOf(e.provider) > 0.5) proven.set(c, (proven.get(c) ?? 0) + 1);
  }
  return mostQuoted(proven) ?? mostQuoted(any);
}

/** The currency with the highest count (ties: code order); undefined when there is none. */
function mostQuoted(counts: Map<string, number>): string | undefined {
  let best: [string, number] | undefined;
  for (const [c, n] of counts) if (!best || n > best[1] || (n === best[1] && c < best[0])) best = [c, n];
  return best?.[0];
}

/** Two sort values of one sort (not price's groups: marketPage): null after everything; else by value. */
function compareSortValues(x: MarketSortValue, y: MarketSortValue): number {
  if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
  if (Array.isArray(x) && Array.isArray(y)) return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : compareAmounts(x[1] as string, y[1] as string);
  return x < y ? -1 : x > y ? 1 : 0;
}

function mostOffered(counts: Map<string, number>): string[] {
  const all = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return all.slice(0, MARKET_WORKLOADS_MAX).map(([w]) => w).sort();
}
