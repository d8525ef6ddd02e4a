/**
 * Paging a list the daemon holds in memory for the console (the Market view's
 * `/v1/market?…`, src/node/market-page.ts; the Reputation view's
 * `/v1/reputation?…`, src/node/reputation-page.ts): the window's parameters
 * (`limit`, `offset`, `after`), the opaque keyset cursor, and the page
 * itself, so each list says only what it filters and sorts by.
 *
 * The order is total (ties go by the entry's id, a DID: unique), and `next`
 * is a keyset cursor, not a position: the last row's sort value and id (with
 * a tag of the order and filter it was made for), and the page after starts
 * strictly after that row in the order as it is now. An entry that drops out
 * or arrives shifts no one else; one whose sort value changes between pages
 * may be listed twice or not at all (it moved across the cursor).
 */
import { createHash } from 'node:crypto';
import { C0Error } from '../errors.js';

/** The longest `after` taken: a cursor is a DID, a short value and a tag, far below this. */
const CURSOR_MAX = 1024;

/** Where a page ended: its last row's sort value and id, and what the order was resolved with (`ctx`: see marketPage's first currency). */
export interface KeysetCursor<V> {
  value: V;
  id: string;
  ctx?: string;
}

/** The window a request asks for, `after` still encoded (its tag is checked against the order and filter). */
export interface PageWindow {
  /** Start at this position in the order (a jump: positions shift as the list changes). 0 with `after`. */
  offset: number;
  limit: number;
  afterText?: string;
}

/** `limit`, `offset` and `after` of a request; API_BAD_LIMIT / API_BAD_CURSOR name the malformed one. */
export function parsePageWindow(query: URLSearchParams, limits: { dflt: number; max: number }): PageWindow {
  const num = (name: string, code: string, min: number, max: number, dflt: number): number => {
    const v = query.get(name);
    if (v === null) return dflt;
    if (!/^[0-9]{1,9}$/.test(v) || Number(v) < min || Number(v) > max) throw new C0Error(code, `${name} must be a whole number from ${min} to ${max}, got "${v.slice(0, 40)}"`, { field: name });
    return Number(v);
  };
  const limit = num('limit', 'API_BAD_LIMIT', 1, limits.max, limits.dflt);
  const offset = num('offset', 'API_BAD_CURSOR', 0, 999_999_999, 0);
  const afterText = query.get('after');
  if (afterText !== null && query.has('offset')) throw new C0Error('API_BAD_CURSOR', 'give offset (a position) or after (the "next" of a page), not both', { field: 'after' });
  return { offset, limit, ...(afterText !== null ? { afterText } : {}) };
}

/** `name` as a flag: 1/true or 0/false (absent: false); API_BAD_QUERY otherwise. */
export function queryFlag(query: URLSearchParams, name: string): boolean {
  const v = query.get(name);
  if (v === null || v === '0' || v === 'false') return false;
  if (v === '1' || v === 'true') return true;
  throw new C0Error('API_BAD_QUERY', `${name} must be 1 or 0, got "${v.slice(0, 40)}"`, { field: name });
}

/** `name` as text of at most `max` characters (absent or blank: undefined); API_BAD_QUERY when longer. */
export function queryText(query: URLSearchParams, name: string, max: number): string | undefined {
  const v = query.get(name);
  if (v === null || v.trim() === '') return undefined;
  if (v.length > max) throw new C0Error('API_BAD_QUERY', `${name} is at most ${max} characters`, { field: name });
  return v;
}

/** What a cursor is bound to: the order and the filter (not the page size, which may change between pages). */
export function cursorTag(parts: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('base64url').slice(0, 16);
}

/** The opaque `next` of a page that ended at `c`: base64url of [tag, value, id(, ctx)]. */
export function encodeCursor<V>(tag: string, c: KeysetCursor<V>): string {
  return Buffer.from(JSON.stringify(c.ctx !== undefined ? [tag, c.value, c.id, c.ctx] : [tag, c.value, c.id])).toString('base64url');
}

/** A `next` read back: API_BAD_CURSOR unless it is one made for `tag` with a value `valueOk` takes. */
export function decodeCursor<V>(token: string, tag: string, valueOk: (v: unknown) => v is V): KeysetCursor<V> {
  const bad = (why: string) => new C0Error('API_BAD_CURSOR', `after must be the "next" of an earlier page of the same order and filter: ${why}`, { field: 'after' });
  if (token.length === 0 || token.length > CURSOR_MAX || !/^[A-Za-z0-9_-]+$/.test(token)) throw bad(`got "${token.slice(0, 40)}"`);
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw bad('not a cursor');
  }
  if (!Array.isArray(parts) || (parts.length !== 3 && parts.length !== 4) || typeof parts[0] !== 'string' || typeof parts[2] !== 'string' || parts[2].length === 0) throw bad('not a cursor');
  if (parts.length === 4 && (typeof parts[3] !== 'string' || parts[3].length > 64)) throw bad('not a cursor');
  const [t, v, id, ctx] = parts as [string, unknown, string, string | undefined];
  if (t !== tag) throw bad('it was made for another sort or filter (start again without it)');
  if (!valueOk(v)) throw bad('not a cursor');
  return { value: v, id, ...(ctx !== undefined ? { ctx } : {}) };
}

export interface KeysetPage<T, V> {
  /** Entries that pass the filter. */
  matched: number;
  /** The page, in order, with each row's sort value. */
  rows: Array<{ e: T; v: V; id: string }>;
  /** Where the page starts in the order as it is now (how many matched entries come before it). */
  offset: number;
  /** The last row's cursor when more come after it. */
  last?: KeysetCursor<V>;
}

/**
 * The page of `entries` in the order `compare` (by value, then id: total)
 * strictly after `w.after` (or at `w.offset`); ties by id, descending with `w.desc`. `key` gives an entry's sort
 * value and id, or undefined for one the filter leaves out. With a cursor, the
 * matched entries at or before it are only counted (the page's position), not
 * sorted. Only plain values are compared; the caller builds JSON for the
 * page's entries alone.
 */
export function keysetPage<T, V>(
  entries: Iterable<T>,
  key: (e: T) => { v: V; id: string } | undefined,
  compare: (x: V, y: V) => number,
  w: { offset: number; limit: number; after?: KeysetCursor<V> | undefined; desc?: boolean },
): KeysetPage<T, V> {
  const idDir = w.desc ? -1 : 1;
  const cmp = (xv: V, xi: string, yv: V, yi: string): number => compare(xv, yv) || idDir * (xi < yi ? -1 : xi > yi ? 1 : 0);
  const after = w.after;
  const keyed: Array<{ e: T; v: V; id: string }> = [];
  let before = 0;
  for (const e of entries) {
    const k = key(e);
    if (k === undefined) continue;
    if (after && cmp(k.v, k.id, after.value, after.id) <= 0) before++;
    else keyed.push({ e, v: k.v, id: k.id });
  }
  keyed.sort((x, y) => cmp(x.v, x.id, y.v, y.id));
  const start = after ? 0 : Math.min(w.offset, keyed.length);
  const end = Math.min(keyed.length, start + w.limit);
  const rows = keyed.slice(start, end);
  const last = rows[rows.length - 1];
  return { matched: before + keyed.length, rows, offset: before + start, ...(end < keyed.length && last ? { last: { value: last.v, id: last.id } } : {}) };
}
