/**
 * Summaries for long listings (issue #10: a market of thousands of providers
 * must not print thousands of lines): the first K entries, then one line
 * counting the rest, e.g. "… and 1,960 more providers: 1,200 fail region,
 * 700 fail gpu". `--all` lists everything. docs/market.md "Summary output".
 */
import { CONSTRAINTS, constraintOf, type Constraint } from '../market/explain.js';
import { num } from './limit.js';

// The limit itself is in limit.ts, which commands load without the market's explanations.
export { DEFAULT_LIST_LIMIT, listLimit, num } from './limit.js';

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
  // the holder has no offer from them: that they did not quote it cannot know (an offer sent directly may be lost)
  if (c === 'quote') return `${num(n)} ${n === 1 ? 'has' : 'have'} no offer`;
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
 * (in the order given), then the ineligible that serve the job's workload,
 * then those that do not (or have no live advert); the rest is summarised.
 * Within the limit, every verdict in the order given. A flood of adverts for
 * another workload (a hundred fresh keys: QA s50) pushed the providers that
 * could take the job out of the lines shown, behind "does not offer
 * builtin.sha256" nine times over.
 */
export function pickShown<V extends VerdictLike>(verdicts: readonly V[], limit: number): { shown: V[]; hidden: V[] } {
  if (verdicts.length <= limit) return { shown: [...verdicts], hidden: [] };
  const offTopic = (v: V) => v.failures.some((f) => OFF_TOPIC.has(constraintOf(f.code as never)));
  const ordered = [...verdicts.filter((v) => v.eligible), ...verdicts.filter((v) => !v.eligible && !offTopic(v)), ...verdicts.filter((v) => !v.eligible && offTopic(v))];
  return { shown: ordered.slice(0, limit), hidden: ordered.slice(limit) };
}

/** Failures that say a provider is not in this job's market at all: no live advert, or not this workload. */
const OFF_TOPIC: ReadonlySet<Constraint> = new Set<Constraint>(['advert', 'workload']);
