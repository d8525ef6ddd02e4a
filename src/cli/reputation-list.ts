/**
 * `c0mpute reputation` without a DID: the figures a page at a time, in the console's order (first-hand evidence
 * first, then other evidence that counts, then untrusted-only; each by score, highest first; src/node/reputation-page.ts)
 * with the counts of the whole. Before (review s43 R9 F2) it asked for every provider, sorted by DID: with ~1,300
 * throwaway keys flooding the network it printed 1,336 lines of `0.500 … untrusted 1`, a real provider wherever its
 * DID sorted, and no counts.
 */
import { REPUTATION_PAGE_MAX, parseReputationPage, reputationPage, type ReputationPage } from '../node/reputation-page.js';
import type { Figures } from '../reputation/derive.js';
import { UsageError } from './context.js';
import { DEFAULT_LIST_LIMIT, num } from './limit.js';
import { short } from './short.js';

/** What `c0mpute reputation --json` prints: the counts of the whole and the providers listed; `next` when more come after. */
export type ReputationListing = Pick<ReputationPage, 'total' | 'counted' | 'firstHand' | 'providers' | 'next'>;

/** `--limit <n>` of `c0mpute reputation`: 1 to REPUTATION_PAGE_MAX (one page); absent, DEFAULT_LIST_LIMIT. CLI_BAD_LIMIT. */
export function reputationLimit(limit: string | undefined): number {
  if (limit === undefined) return DEFAULT_LIST_LIMIT;
  const n = Number(limit);
  if (!/^[0-9]{1,9}$/.test(limit) || n < 1 || n > REPUTATION_PAGE_MAX) throw new UsageError('CLI_BAD_LIMIT', `--limit takes a whole number from 1 to ${REPUTATION_PAGE_MAX}, got "${limit.slice(0, 40)}"`, { field: 'limit' });
  return n;
}

/** The query of one page in the default (evidence) order: `size` providers after the cursor `after`. */
export function reputationQuery(size: number, after: string | undefined): URLSearchParams {
  return new URLSearchParams({ limit: String(size), ...(after !== undefined ? { after } : {}) });
}

/** That page of `all` (every provider's figures, in any order), as the daemon makes it: what the no-daemon path lists. */
export function reputationPageOf(all: Iterable<Figures>, size: number, after: string | undefined): ReputationPage {
  return reputationPage(all, parseReputationPage(reputationQuery(size, after))!);
}

/**
 * A page as a daemon answered it. One from before `/v1/reputation` took page parameters answers every provider
 * (`{providers}`, DID order): that page of them is made here, by the same rule, so the order and the counts are the same.
 */
export function asReputationPage(r: unknown, size: number, after: string | undefined): ReputationPage {
  const p = r as Partial<ReputationPage> & { providers: Figures[] };
  return typeof p.total === 'number' ? (p as ReputationPage) : reputationPageOf(p.providers, size, after);
}

/**
 * The listing: the first page of `limit`, or with `all` every page (`pageSize`, by default REPUTATION_PAGE_MAX, each, by the keyset
 * cursor: never one answer of every provider). The counts are the last page's (the latest).
 */
export async function collectReputation(
  pageOf: (size: number, after: string | undefined) => Promise<ReputationPage>,
  o: { limit: number; all: boolean; pageSize?: number },
): Promise<ReputationListing> {
  const providers: Figures[] = [];
  let p: ReputationPage;
  let after: string | undefined;
  do {
    p = await pageOf(o.all ? (o.pageSize ?? REPUTATION_PAGE_MAX) : o.limit, after);
    providers.push(...p.providers);
    after = p.next;
  } while (o.all && after !== undefined);
  return { total: p.total, counted: p.counted, firstHand: p.firstHand, providers, ...(after !== undefined ? { next: after } : {}) };
}

/** The counts line, as the console's Reputation view says them. */
export function reputationCountsLine(l: Pick<ReputationListing, 'total' | 'counted' | 'firstHand'>): string {
  return `${num(l.total)} provider${l.total === 1 ? '' : 's'} with evidence held; ${num(l.counted)} with evidence that counts, ${num(l.firstHand)} of them first-hand; ${num(l.total - l.counted)} with untrusted evidence only`;
}

/** The table's header and one line per provider. Counts are weighted (second-hand evidence weighs less than first-hand); `untrusted` is held but not counted (docs/market.md). */
export function reputationTable(rows: readonly Figures[]): string[] {
  const n = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(2));
  return [
    'provider            score  jobs  ok   failed  disputed  undelivered  accuracy  first-hand  untrusted',
    ...rows.map((x) => `${short(x.did).padEnd(18)}  ${x.score.toFixed(3)}  ${n(x.jobs).padEnd(4)}  ${n(x.successes).padEnd(3)}  ${n(x.failures).padEnd(6)}  ${n(x.disputes).padEnd(8)}  ${n(x.nonDeliveries).padEnd(11)}  ${x.accuracy.toFixed(3)}     ${n(x.firstHand).padEnd(10)}  ${x.untrusted}`),
  ];
}

/**
 * The note under a table with a provider that has both counted outcomes and `untrusted` ones: `untrusted` counts
 * outcomes held that weigh 0, each as its own, so a job can show in both (a late receipt of a job whose non-delivery
 * is counted: the QA's `jobs 2 … untrusted 1` for two jobs). Undefined when no row has both.
 */
export function untrustedNote(rows: readonly Figures[]): string | undefined {
  if (!rows.some((x) => x.untrusted > 0 && x.jobs > 0)) return undefined;
  return 'untrusted: outcomes held that weigh 0 here, each its own: one job can be in both jobs and untrusted (a late receipt of a job whose non-delivery counts)';
}

/** Everything `c0mpute reputation` prints for a listing. */
export function reputationLines(l: ReputationListing): string[] {
  if (!l.total) return ['no evidence yet: every provider scores 0.5 (unknown)'];
  const more = l.next !== undefined ? [`(the first ${num(l.providers.length)} of ${num(l.total)}, first-hand evidence first; --limit <n> or --all for more)`] : [];
  const note = untrustedNote(l.providers);
  return [reputationCountsLine(l), ...reputationTable(l.providers), ...more, ...(note ? [note] : [])];
}

/** What `c0mpute reputation <did>` prints: its row, and a note when nothing is held about the key (its row is all zeros). */
export function reputationOne(f: Figures): string[] {
  const none = f.jobs === 0 && f.untrusted === 0 && f.quotePairs === 0;
  const note = untrustedNote([f]);
  return [...reputationTable([f]), ...(none ? ['no evidence held for this key: it scores 0.5 (unknown), as every provider with none does'] : note ? [note] : [])];
}
