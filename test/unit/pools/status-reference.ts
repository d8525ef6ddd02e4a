/**
 * The operator's figures as `pool-provider status` computed them before they were kept up to date (status.ts
 * TrailFigures): the whole trail read at once, each job's outcome worked out per figure. Kept verbatim as the
 * reference the kept figures must equal (status-figures.test.ts).
 */
import { Decimal } from 'decimal.js';
import { open } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import type { DispatchTrail, TrailEntry } from '../../../src/pools/trail.js';
import { outcomeOf, type MemberFigures, type TallyContext } from '../../../src/roles/pool-member/status.js';

function tryOpen<X>(f: () => X): X | undefined {
  try {
    return f();
  } catch {
    return undefined;
  }
}

function byJob(entries: ReadonlyArray<{ job: string; entry: TrailEntry }>): Map<string, TrailEntry[]> {
  const jobs = new Map<string, TrailEntry[]>();
  for (const { job, entry } of entries) {
    const list = jobs.get(job);
    if (list) list.push(entry);
    else jobs.set(job, [entry]);
  }
  return jobs;
}

export function tallyTrail(entries: ReadonlyArray<{ job: string; entry: TrailEntry }>, members: string[], c: TallyContext): Map<string, MemberFigures> {
  const per = new Map<string, MemberFigures>(members.map((m) => [m, { dispatched: 0, completed: 0, failed: 0, earned: {} }]));
  for (const list of byJob(entries).values()) {
    const o = outcomeOf(list, c);
    const member = o ? o.member : tryOpen(() => open(list[0]!.dispatch, T.poolDispatch, { trusted: true }).record.member);
    const p = member === undefined ? undefined : per.get(member);
    if (p) {
      p.dispatched++;
      if (o?.state === 'completed') p.completed++;
      if (o?.state === 'failed') p.failed++;
    }
    const s = o?.settlement;
    if (!s) continue;
    for (const part of s.parts) {
      const q = per.get(part.member);
      if (q) q.earned[s.price.currency] = new Decimal(q.earned[s.price.currency] ?? '0').add(part.amount).toFixed();
    }
  }
  return per;
}

/** The jobs completed under more than one coordinator's dispatch: counted neither completed nor failed, and neither settlement counts. */
export function disputedJobs(entries: ReadonlyArray<{ job: string; entry: TrailEntry }>, c: TallyContext): number {
  let n = 0;
  for (const list of byJob(entries).values()) if (outcomeOf(list, c)?.state === 'disputed') n++;
  return n;
}

/** How the failed jobs in a trail failed: failure code → jobs (each job once; a job that completed under any of its dispatches did not fail). */
export function failureCodes(entries: ReadonlyArray<{ job: string; entry: TrailEntry }>, c: TallyContext): Record<string, number> {
  const out: Record<string, number> = {};
  for (const list of byJob(entries).values()) {
    const o = outcomeOf(list, c);
    if (o?.state !== 'failed') continue;
    const f = o.failure ?? 'unknown';
    out[f] = (out[f] ?? 0) + 1;
  }
  return out;
}

/** What status showed: per member of `members`, the failure codes, the disputed jobs, the open entries. */
export async function referenceFigures(trail: DispatchTrail, members: string[], c: TallyContext): Promise<{ per: Record<string, MemberFigures>; failures: Record<string, number>; disputed: number; pending: number }> {
  const all = await trail.all();
  return {
    per: Object.fromEntries(tallyTrail(all, members, c)),
    failures: failureCodes(all, c),
    disputed: disputedJobs(all, c),
    pending: all.filter((x) => x.entry.state === 'dispatched').length,
  };
}
