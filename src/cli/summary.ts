/**
 * Summaries for long listings (issue #10: a market of thousands of providers
 * must not print thousands of lines): the first K entries, then one line
 * counting the rest, e.g. "… and 1,960 more providers: 1,200 fail region,
 * 700 fail gpu". `--all` lists everything. docs/market.md "Summary output".
 */
import { C0Error } from '../errors.js';
import { CONSTRAINTS, constraintOf, type Constraint } from '../market/explain.js';

/** Entries listed before the rest is summarised (`--limit` changes it, `--all` lifts it). */
export const DEFAULT_LIST_LIMIT = 12;

export const num = (n: number): string => n.toLocaleString('en-US');

interface VerdictLike {
  eligible: boolean;
  failures: Array<{ code: string }>;
}

/** How many of `verdicts` fail each constraint (a provider counts once per constraint), most failing first. */
export function tallyFailures(verdicts: Iterable<VerdictLike>): Array<{ constraint: Constraint; failing: number }> {
  const counts = new Map<Constraint, number>();
  for (const v of verdicts) {
    const seen = new Set<Constraint>();
    for (const f of v.failures) seen.add(constraintOf(f.code as never));
    for (const c of seen) counts.set(c, (counts.get(c) ?? 0) + 1);
  }
  return [...counts.entries()].map(([constraint, failing]) => ({ constraint, failing })).sort((a, b) => b.failing - a.failing || CONSTRAINTS.indexOf(a.constraint) - CONSTRAINTS.indexOf(b.constraint));
}

function failPhrase(c: Constraint, n: number): string {
  if (c === 'quote') return `${num(n)} ${n === 1 ? 'has' : 'have'} not quoted`;
  if (c === 'advert') return `${num(n)} ${n === 1 ? 'has' : 'have'} no live advert`;
  return `${num(n)} fail ${c}`;
}

/** "… and 1,960 more providers (3 eligible): 1,200 fail region, 700 fail gpu" for the verdicts not listed. */
export function moreProviders(hidden: readonly VerdictLike[], hint = '--all lists every one'): string {
  const eligible = hidden.filter((v) => v.eligible).length;
  const tally = tallyFailures(hidden.filter((v) => !v.eligible));
  const parts = tally.slice(0, 6).map((t) => failPhrase(t.constraint, t.failing));
  return `… and ${num(hidden.length)} more ${hidden.length === 1 ? 'provider' : 'providers'}${eligible ? ` (${num(eligible)} eligible)` : ''}${parts.length ? `: ${parts.join(', ')}` : ''} (${hint})`;
}

/**
 * Which verdicts to list when there are more than `limit`: the eligible first
 * (in the order given), then the ineligible; the rest is summarised. Within
 * the limit, every verdict in the order given.
 */
export function pickShown<V extends VerdictLike>(verdicts: readonly V[], limit: number): { shown: V[]; hidden: V[] } {
  if (verdicts.length <= limit) return { shown: [...verdicts], hidden: [] };
  const ordered = [...verdicts.filter((v) => v.eligible), ...verdicts.filter((v) => !v.eligible)];
  return { shown: ordered.slice(0, limit), hidden: ordered.slice(limit) };
}

/** Parse `--limit <n>` / `--all` into a limit. */
export function listLimit(o: { all?: boolean; limit?: string }): number {
  if (o.all) return Infinity;
  if (o.limit === undefined) return DEFAULT_LIST_LIMIT;
  const n = Number(o.limit);
  if (!/^[0-9]{1,9}$/.test(o.limit) || !Number.isInteger(n)) throw new C0Error('CLI_BAD_LIMIT', `--limit takes a whole number of entries, got "${o.limit.slice(0, 40)}"`, { field: 'limit' });
  return n;
}
