/**
 * The operator's per-member figures of a pool (docs/pools.md "Operating a
 * pool"; `c0mpute pool-provider status`): dispatches, outcomes and earnings per
 * member, tallied from a member's dispatch trail (dispatch records and the
 * settlements kept with them). Each job counts once, however many coordinators
 * dispatched it (docs/pools.md "Settlement"). Every closed entry is checked on
 * read by the rule a `closed` message is checked by (src/pools/outcome.ts
 * `verifyOutcome`, the split included): one that does not check out — kept by a
 * build before those checks, or junk — counts as dispatched only. Pure: the
 * rosters this member holds come in as a lookup.
 */
import { Decimal } from 'decimal.js';
import { open, type Opened } from '../../records/envelope.js';
import { T, type PoolRoster, type PoolSettlement } from '../../records/kinds.js';
import type { TrailEntry } from '../../pools/trail.js';
import { verifyOutcome } from '../../pools/outcome.js';

export interface MemberFigures {
  dispatched: number;
  completed: number;
  failed: number;
  /** Earnings per currency (exact decimal strings). */
  earned: Record<string, string>;
}

/** What the figures check each kept outcome against: this member's pool and the rosters it holds. */
export interface TallyContext {
  pool: string;
  roster(address: string): Opened<PoolRoster> | undefined;
}

function tryOpen<X>(f: () => X): X | undefined {
  try {
    return f();
  } catch {
    return undefined;
  }
}

/** The entries of each job, in the order given. */
function byJob(entries: ReadonlyArray<{ job: string; entry: TrailEntry }>): Map<string, TrailEntry[]> {
  const jobs = new Map<string, TrailEntry[]>();
  for (const { job, entry } of entries) {
    const list = jobs.get(job);
    if (list) list.push(entry);
    else jobs.set(job, [entry]);
  }
  return jobs;
}

interface Outcome {
  /** `disputed`: more than one coordinator completed the job (at most one can have: the member runs a job once), so no settlement of it counts. */
  state: 'completed' | 'failed' | 'disputed';
  member: string | undefined;
  /** The coordinator whose own outcome it is (undefined: a lost dispatch's). */
  coordinator?: string;
  failure?: string;
  settlement?: PoolSettlement;
}

/** A job's one outcome from its entries that check out: a completed one (with its settlement), else a failed one. */
function outcomeOf(list: TrailEntry[], c: TallyContext): Outcome | undefined {
  const read = (e: TrailEntry): Outcome | undefined => {
    if (e.state === 'dispatched' || !e.receipt) return undefined;
    const o = tryOpen(() => verifyOutcome(e, e.receipt, e.settlement, { pool: c.pool, entries: list, roster: (a) => c.roster(a), trusted: true, unsettled: true }));
    if (!o || o.state !== e.state) return undefined;
    const member = tryOpen(() => open(e.dispatch, T.poolDispatch, { trusted: true }).record.member);
    if (o.state === 'failed') return { state: 'failed', member, failure: o.receipt.record.failure?.code ?? 'unknown' };
    // Closed with its coordinator's receipt alone (heard outside the pool): completed, its split not counted until its settlement comes.
    return { state: 'completed', member, coordinator: o.coordinator, ...(o.settlement ? { settlement: o.settlement.record } : {}) };
  };
  const outcomes = list.map(read).filter((o): o is Outcome => o !== undefined);
  const completed = outcomes.filter((o) => o.state === 'completed');
  // Completed by two coordinators: a member runs a job at most once (its run log), so one of them did not do the work
  // (a member that recorded and "completed" a dispatch of its own for a job another won). Which one the buyer took is
  // not in the trail, and the order entries are kept in (by DID) must not decide: neither settlement counts.
  if (new Set(completed.map((o) => o.coordinator)).size > 1) {
    const members = new Set(completed.map((o) => o.member));
    return { state: 'disputed', member: members.size === 1 ? completed[0]!.member : undefined };
  }
  return completed[0] ?? outcomes[0];
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
