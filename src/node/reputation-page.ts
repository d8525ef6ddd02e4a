/**
 * A page of the reputation figures (`GET /v1/reputation?after=C&limit=N…`,
 * the console's Reputation view; docs/console.md "Reputation"): the providers
 * this node derives figures for, filtered and sorted here, and only the page's
 * rows sent. A node that hears outcomes (`network.outcomes: all`) holds a row
 * for every provider some receipt names, including throwaway keys whose only
 * evidence is from buyers it does not trust (`untrusted`: weight 0): 10,000
 * of them from one hostile peer made the view a 2.8 MB answer and a 140,000-
 * node table every couple of seconds, and buried the real providers below
 * them (review s43 R3 F3). Paged as the market is (src/node/keyset-page.ts).
 *
 * The default order, `evidence`, puts first the providers this node has
 * first-hand evidence about (its own jobs), then those with any evidence
 * that counts (second-hand from buyers it trusts or dealt with, its own work
 * as a provider), then the rest (outcomes from untrusted buyers only: score
 * 0.5, unknown), each group by score, highest first, then DID.
 */
import { C0Error } from '../errors.js';
import type { Figures } from '../reputation/derive.js';
import { cursorTag, decodeCursor, encodeCursor, keysetPage, parsePageWindow, queryFlag, queryText, type KeysetCursor } from './keyset-page.js';

export const REPUTATION_PAGE_DEFAULT = 100;
export const REPUTATION_PAGE_MAX = 1000;

export const REPUTATION_SORTS = ['evidence', 'score', 'jobs', 'provider'] as const;
export type ReputationSort = (typeof REPUTATION_SORTS)[number];

export interface ReputationPageQuery {
  offset: number;
  after?: KeysetCursor<number | string>;
  limit: number;
  sort: ReputationSort;
  desc: boolean;
  /** Lowercase text the provider's DID must contain. */
  q?: string;
}

/** The query parameters that ask for a page (any one of them does; none: every provider, as `c0mpute reputation` read it before it paged too). */
const PAGE_PARAMS = ['offset', 'after', 'limit', 'sort', 'desc', 'q'];

/** Which evidence a provider's figures rest on: 0 first-hand, 1 other evidence that counts, 2 none that counts. */
export function evidenceGroup(f: Figures): number {
  return f.firstHand > 0 ? 0 : f.jobs > 0 ? 1 : 2;
}

function sortValue(f: Figures, sort: ReputationSort): number | string {
  switch (sort) {
    case 'evidence':
      // the group, then the score highest first (a score is in [0, 1]: the groups never overlap)
      return evidenceGroup(f) * 2 + (1 - f.score);
    case 'score':
      return f.score;
    case 'jobs':
      return f.jobs;
    default:
      return f.did;
  }
}

function tagOf(q: Omit<ReputationPageQuery, 'offset' | 'after' | 'limit'>): string {
  return cursorTag(['reputation', q.sort, q.desc, q.q ?? '']);
}

/** The page a `/v1/reputation` request asks for, or undefined for every provider. API_BAD_LIMIT / API_BAD_CURSOR / API_BAD_QUERY. */
export function parseReputationPage(query: URLSearchParams): ReputationPageQuery | undefined {
  if (!PAGE_PARAMS.some((p) => query.has(p))) return undefined;
  const w = parsePageWindow(query, { dflt: REPUTATION_PAGE_DEFAULT, max: REPUTATION_PAGE_MAX });
  const sort = query.get('sort') ?? 'evidence';
  if (!(REPUTATION_SORTS as readonly string[]).includes(sort)) throw new C0Error('API_BAD_QUERY', `sort must be one of ${REPUTATION_SORTS.join(', ')}, got "${sort.slice(0, 40)}"`, { field: 'sort' });
  const q = queryText(query, 'q', 200)?.trim().toLowerCase();
  const page = { offset: w.offset, limit: w.limit, sort: sort as ReputationSort, desc: queryFlag(query, 'desc'), ...(q ? { q } : {}) };
  if (w.afterText === undefined) return page;
  const ok = (v: unknown): v is number | string => (page.sort === 'provider' ? typeof v === 'string' : typeof v === 'number' && Number.isFinite(v));
  const after = decodeCursor(w.afterText, tagOf(page), ok);
  if (after.ctx !== undefined) throw new C0Error('API_BAD_CURSOR', 'after must be the "next" of an earlier page of the same order and filter: not a cursor', { field: 'after' });
  return { ...page, after };
}

export interface ReputationPage {
  /** Providers with figures. */
  total: number;
  /** Of them, with evidence that counts (jobs > 0), and with first-hand evidence. */
  counted: number;
  firstHand: number;
  /** Providers that pass the filter; `providers` is the page of them, `offset` of them before it. */
  matched: number;
  offset: number;
  next?: string;
  providers: Figures[];
}

/** One page of `all` (the node's derived figures) in the order asked for, with the counts of the whole. */
export function reputationPage(all: Iterable<Figures>, q: ReputationPageQuery): ReputationPage {
  const dir = q.desc ? -1 : 1;
  let total = 0;
  let counted = 0;
  let firstHand = 0;
  const key = (f: Figures) => {
    total++;
    if (f.jobs > 0) counted++;
    if (f.firstHand > 0) firstHand++;
    if (q.q && !f.did.toLowerCase().includes(q.q)) return undefined;
    return { v: sortValue(f, q.sort), id: f.did };
  };
  const compare = (x: number | string, y: number | string) => dir * (x < y ? -1 : x > y ? 1 : 0);
  const p = keysetPage(all, key, compare, { offset: q.offset, limit: q.limit, after: q.after, desc: q.desc });
  const next = p.last ? encodeCursor(tagOf(q), p.last) : undefined;
  return { total, counted, firstHand, matched: p.matched, offset: p.offset, ...(next !== undefined ? { next } : {}), providers: p.rows.map((r) => r.e) };
}
