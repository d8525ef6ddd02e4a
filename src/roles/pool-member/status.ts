/**
 * The operator's per-member figures of a pool (docs/pools.md "Operating a
 * pool"; `c0mpute pool-provider status`): dispatches, outcomes and earnings per
 * member, tallied from a member's dispatch trail (dispatch records and the
 * settlements kept with them). Each job counts once, however many coordinators
 * dispatched it (docs/pools.md "Settlement"): its outcome is its completed
 * entry's, if any, else its failed one's, and only a settlement signed by the
 * coordinator that signed the receipt it settles counts. An entry whose records
 * do not open (kept by a build before the checks of src/pools/outcome.ts)
 * counts as dispatched only. Pure.
 */
import { Decimal } from 'decimal.js';
import { open } from '../../records/envelope.js';
import { T, type PoolSettlement } from '../../records/kinds.js';
import type { TrailEntry } from '../../pools/trail.js';

export interface MemberFigures {
  dispatched: number;
  completed: number;
  failed: number;
  /** Earnings per currency (exact decimal strings). */
  earned: Record<string, string>;
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
  state: 'completed' | 'failed';
  member: string | undefined;
  failure?: string;
  settlement?: PoolSettlement;
}

/** A job's one outcome from its entries: a completed one (with the settlement that counts), else a failed one. */
function outcomeOf(list: TrailEntry[]): Outcome | undefined {
  const coordinators = new Set(list.map((e) => tryOpen(() => open(e.dispatch, T.poolDispatch, { trusted: true }).signer)));
  const read = (e: TrailEntry): Outcome | undefined => {
    if (e.state === 'dispatched' || !e.receipt) return undefined;
    const r = tryOpen(() => open(e.receipt!, T.receipt, { trusted: true }));
    if (!r || r.record.status !== e.state) return undefined;
    const member = tryOpen(() => open(e.dispatch, T.poolDispatch, { trusted: true }).record.member);
    if (e.state === 'failed') return { state: 'failed', member, failure: r.record.failure?.code ?? 'unknown' };
    const s = e.settlement ? tryOpen(() => open(e.settlement!, T.poolSettlement, { trusted: true })) : undefined;
    const counts = s && s.signer === r.signer && coordinators.has(r.signer) && s.record.receipt === r.address && s.record.job === r.record.job;
    return { state: 'completed', member, ...(counts ? { settlement: s.record } : {}) };
  };
  const outcomes = list.map(read).filter((o): o is Outcome => o !== undefined);
  return outcomes.find((o) => o.state === 'completed' && o.settlement) ?? outcomes.find((o) => o.state === 'completed') ?? outcomes[0];
}

export function tallyTrail(entries: ReadonlyArray<{ job: string; entry: TrailEntry }>, members: string[]): Map<string, MemberFigures> {
  const per = new Map<string, MemberFigures>(members.map((m) => [m, { dispatched: 0, completed: 0, failed: 0, earned: {} }]));
  for (const list of byJob(entries).values()) {
    const o = outcomeOf(list);
    const member = o?.member ?? tryOpen(() => open(list[0]!.dispatch, T.poolDispatch, { trusted: true }).record.member);
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

/** How the failed jobs in a trail failed: failure code → jobs (each job once; a job that completed under any of its dispatches did not fail). */
export function failureCodes(entries: ReadonlyArray<{ job: string; entry: TrailEntry }>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const list of byJob(entries).values()) {
    const o = outcomeOf(list);
    if (o?.state !== 'failed') continue;
    const c = o.failure ?? 'unknown';
    out[c] = (out[c] ?? 0) + 1;
  }
  return out;
}
