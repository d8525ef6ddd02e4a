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
import { createHash } from 'node:crypto';
import { C0Error } from '../errors.js';
import { TIERS, type Advert, type Opened } from '../records/index.js';
import { compareAmounts, CURRENCY_RE, isAmount } from '../records/money.js';

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
}

/** The query parameters that ask for a page (any one of them does). */
const PAGE_PARAMS = ['offset', 'after', 'sort', 'desc', 'q', 'tier', 'workload', 'live'];

/**
 * What a sort compares for one entry: a number, a string, or for `price` the first price as [currency, amount]
 * (compared by currency, then exactly as a decimal: amounts are never turned into floats), null for an advert with
 * no price (after every price).
 */
export type MarketSortValue = number | string | readonly [currency: string, amount: string] | null;

/** Where a page ended: its last row's sort value and DID. */
export interface MarketCursor {
  value: MarketSortValue;
  provider: string;
}

/** The longest `after` taken: a cursor is a DID, a short value and a tag, far below this. */
const CURSOR_MAX = 1024;
const STRING_SORTS: readonly MarketSort[] = ['provider', 'region'];

/** What a cursor is bound to: the order and the filter (not the page size, which may change between pages). */
function cursorTag(q: Omit<MarketPageQuery, 'offset' | 'after' | 'limit'>): string {
  return createHash('sha256')
    .update(JSON.stringify([q.sort, q.desc, q.q ?? '', q.tier ?? '', q.workload ?? '', q.liveOnly]))
    .digest('base64url')
    .slice(0, 16);
}

/** The opaque `next` of a page that ended at `c`: base64url of [tag, value, DID]. */
export function encodeMarketCursor(q: Omit<MarketPageQuery, 'offset' | 'after' | 'limit'>, c: MarketCursor): string {
  return Buffer.from(JSON.stringify([cursorTag(q), c.value, c.provider])).toString('base64url');
}

function decodeMarketCursor(token: string, q: Omit<MarketPageQuery, 'offset' | 'after' | 'limit'>): MarketCursor {
  const bad = (why: string) => new C0Error('API_BAD_CURSOR', `after must be the "next" of an earlier page of the same order and filter: ${why}`, { field: 'after' });
  if (token.length === 0 || token.length > CURSOR_MAX || !/^[A-Za-z0-9_-]+$/.test(token)) throw bad(`got "${token.slice(0, 40)}"`);
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw bad('not a cursor');
  }
  if (!Array.isArray(parts) || parts.length !== 3 || typeof parts[0] !== 'string' || typeof parts[2] !== 'string' || parts[2].length === 0) throw bad('not a cursor');
  const [tag, v, provider] = parts as [string, unknown, string];
  if (tag !== cursorTag(q)) throw bad('it was made for another sort or filter (start again without it)');
  const ok = STRING_SORTS.includes(q.sort)
    ? typeof v === 'string'
    : q.sort === 'price'
      ? v === null || (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && CURRENCY_RE.test(v[0]) && isAmount(v[1]))
      : typeof v === 'number' && Number.isFinite(v);
  if (!ok) throw bad('not a cursor');
  return { value: v as MarketSortValue, provider };
}

/**
 * The page a `/v1/market` request asks for, or undefined when it asks for the
 * whole list (no page parameter: the CLI's `c0mpute market`, scripts).
 * API_BAD_LIMIT / API_BAD_CURSOR / API_BAD_QUERY name the malformed parameter.
 */
export function parseMarketPage(query: URLSearchParams): MarketPageQuery | undefined {
  if (!PAGE_PARAMS.some((p) => query.has(p))) return undefined;
  const num = (name: string, code: string, min: number, max: number, dflt: number): number => {
    const v = query.get(name);
    if (v === null) return dflt;
    if (!/^[0-9]{1,9}$/.test(v) || Number(v) < min || Number(v) > max) throw new C0Error(code, `${name} must be a whole number from ${min} to ${max}, got "${v.slice(0, 40)}"`, { field: name });
    return Number(v);
  };
  const limit = num('limit', 'API_BAD_LIMIT', 1, MARKET_PAGE_MAX, MARKET_PAGE_DEFAULT);
  const offset = num('offset', 'API_BAD_CURSOR', 0, 999_999_999, 0);
  const afterText = query.get('after');
  if (afterText !== null && query.has('offset')) throw new C0Error('API_BAD_CURSOR', 'give offset (a position) or after (the "next" of a page), not both', { field: 'after' });
  const sort = query.get('sort') ?? 'provider';
  if (!(MARKET_SORTS as readonly string[]).includes(sort)) throw new C0Error('API_BAD_QUERY', `sort must be one of ${MARKET_SORTS.join(', ')}, got "${sort.slice(0, 40)}"`, { field: 'sort' });
  const flag = (name: string): boolean => {
    const v = query.get(name);
    if (v === null || v === '0' || v === 'false') return false;
    if (v === '1' || v === 'true') return true;
    throw new C0Error('API_BAD_QUERY', `${name} must be 1 or 0, got "${v.slice(0, 40)}"`, { field: name });
  };
  const text = (name: string, max: number): string | undefined => {
    const v = query.get(name);
    if (v === null || v.trim() === '') return undefined;
    if (v.length > max) throw new C0Error('API_BAD_QUERY', `${name} is at most ${max} characters`, { field: name });
    return v;
  };
  const tier = text('tier', 32);
  if (tier !== undefined && !(TIERS as readonly string[]).includes(tier)) throw new C0Error('API_BAD_QUERY', `tier must be one of ${TIERS.join(', ')}, got "${tier}"`, { field: 'tier' });
  const q = text('q', 200)?.trim().toLowerCase();
  const workload = text('workload', 128);
  const page = { offset, limit, sort: sort as MarketSort, desc: flag('desc'), liveOnly: flag('live'), ...(q ? { q } : {}), ...(tier ? { tier } : {}), ...(workload ? { workload } : {}) };
  return afterText === null ? page : { ...page, after: decodeMarketCursor(afterText, page) };
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
 * total), and return the page strictly after `q.after` (or at `q.offset`).
 * Only plain values are compared; the caller builds JSON for the page's
 * entries alone.
 */
export function marketPage(entries: Iterable<MarketEntry>, q: MarketPageQuery, f: MarketPageFacts): MarketPageResult {
  const dir = q.desc ? -1 : 1;
  const cmp = (xv: MarketSortValue, xp: string, yv: MarketSortValue, yp: string): number => dir * (compareSortValues(xv, yv) || (xp < yp ? -1 : xp > yp ? 1 : 0));
  const after = q.after;
  const workloads = new Map<string, number>();
  const keyed: Array<{ e: MarketEntry; v: MarketSortValue }> = [];
  // with a cursor, the matched entries at or before it are only counted (the page's position), not sorted
  let before = 0;
  for (const e of entries) {
    const r = e.a.record;
    for (const w of r.workloads) workloads.set(w, (workloads.get(w) ?? 0) + 1);
    if (q.liveOnly && !(r.expiresAt > f.now)) continue;
    if (q.tier && r.tier !== q.tier) continue;
    if (q.workload && !r.workloads.includes(q.workload)) continue;
    if (q.q && !(e.provider.toLowerCase().includes(q.q) || e.a.signer.toLowerCase().includes(q.q) || (r.region ?? '').toLowerCase().includes(q.q) || gpuText(e.a).includes(q.q))) continue;
    const v = sortValue(e, q.sort, f);
    if (after && cmp(v, e.provider, after.value, after.provider) <= 0) before++;
    else keyed.push({ e, v });
  }
  keyed.sort((x, y) => cmp(x.v, x.e.provider, y.v, y.e.provider));
  const start = after ? 0 : Math.min(q.offset, keyed.length);
  const end = Math.min(keyed.length, start + q.limit);
  const rows = keyed.slice(start, end);
  const last = rows[rows.length - 1];
  const next = end < keyed.length && last ? encodeMarketCursor(q, { value: last.v, provider: last.e.provider }) : undefined;
  return { matched: before + keyed.length, page: rows.map((k) => k.e), offset: before + start, ...(next !== undefined ? { next } : {}), workloads: mostOffered(workloads) };
}

/** Two sort values of one sort: null (no price) after everything; prices by currency, then exactly by amount. */
function compareSortValues(x: MarketSortValue, y: MarketSortValue): number {
  if (x === null || y === null) return x === y ? 0 : x === null ? 1 : -1;
  if (Array.isArray(x) && Array.isArray(y)) return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : compareAmounts(x[1] as string, y[1] as string);
  return x < y ? -1 : x > y ? 1 : 0;
}

function mostOffered(counts: Map<string, number>): string[] {
  const all = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return all.slice(0, MARKET_WORKLOADS_MAX).map(([w]) => w).sort();
}
