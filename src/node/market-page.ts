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
 * The order is total (ties go by the entry's DID, unique), so walking the
 * pages by `next` lists every provider of an unchanged book exactly once.
 */
import { C0Error } from '../errors.js';
import { TIERS, type Advert, type Opened } from '../records/index.js';

export const MARKET_PAGE_DEFAULT = 100;
export const MARKET_PAGE_MAX = 1000;
/** How many workloads a page names for the filter (a market of hostile adverts could name one each). */
export const MARKET_WORKLOADS_MAX = 200;

export const MARKET_SORTS = ['provider', 'tier', 'region', 'cpu', 'memory', 'gpu', 'price', 'reputation', 'slots'] as const;
export type MarketSort = (typeof MARKET_SORTS)[number];

export interface MarketPageQuery {
  offset: number;
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
const PAGE_PARAMS = ['offset', 'sort', 'desc', 'q', 'tier', 'workload', 'live'];

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
  return { offset, limit, sort: sort as MarketSort, desc: flag('desc'), liveOnly: flag('live'), ...(q ? { q } : {}), ...(tier ? { tier } : {}), ...(workload ? { workload } : {}) };
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
  /** The offset of the next page, when there is one. */
  next?: number;
  /** The workloads entries offer (the filter's choices), name order: the MARKET_WORKLOADS_MAX offered most. */
  workloads: string[];
}

function gpuText(a: Opened<Advert>): string {
  return (a.record.hardware.gpus ?? []).map((g) => g.model.toLowerCase()).join(' ');
}

/** What a sort compares for one entry: a number or a string, never a built row. */
function sortValue(e: MarketEntry, key: MarketSort, f: MarketPageFacts): number | string {
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
      return p ? Number(p.price.amount) : Number.POSITIVE_INFINITY;
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
 * total), and return the page at `q.offset`. Only plain values are compared;
 * the caller builds JSON for the page's entries alone.
 */
export function marketPage(entries: Iterable<MarketEntry>, q: MarketPageQuery, f: MarketPageFacts): MarketPageResult {
  const workloads = new Map<string, number>();
  const keyed: Array<{ e: MarketEntry; v: number | string }> = [];
  for (const e of entries) {
    const r = e.a.record;
    for (const w of r.workloads) workloads.set(w, (workloads.get(w) ?? 0) + 1);
    if (q.liveOnly && !(r.expiresAt > f.now)) continue;
    if (q.tier && r.tier !== q.tier) continue;
    if (q.workload && !r.workloads.includes(q.workload)) continue;
    if (q.q && !(e.provider.toLowerCase().includes(q.q) || e.a.signer.toLowerCase().includes(q.q) || (r.region ?? '').toLowerCase().includes(q.q) || gpuText(e.a).includes(q.q))) continue;
    keyed.push({ e, v: sortValue(e, q.sort, f) });
  }
  const dir = q.desc ? -1 : 1;
  keyed.sort((x, y) => dir * (x.v < y.v ? -1 : x.v > y.v ? 1 : x.e.provider < y.e.provider ? -1 : x.e.provider > y.e.provider ? 1 : 0));
  const end = Math.min(keyed.length, q.offset + q.limit);
  const page = keyed.slice(q.offset, end).map((k) => k.e);
  return { matched: keyed.length, page, ...(end < keyed.length ? { next: end } : {}), workloads: mostOffered(workloads) };
}

function mostOffered(counts: Map<string, number>): string[] {
  const all = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
  return all.slice(0, MARKET_WORKLOADS_MAX).map(([w]) => w).sort();
}
