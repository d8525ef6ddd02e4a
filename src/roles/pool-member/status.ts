/**
 * The operator's per-member figures of a pool (docs/pools.md "Operating a
 * pool"; `c0mpute pool-provider status`): dispatches, outcomes and earnings per
 * member, tallied from a member's dispatch trail (dispatch records and the
 * settlements kept with them). Pure.
 */
import { Decimal } from 'decimal.js';
import { open } from '../../records/envelope.js';
import { T } from '../../records/kinds.js';
import type { TrailEntry } from '../../pools/trail.js';

export interface MemberFigures {
  dispatched: number;
  completed: number;
  failed: number;
  /** Earnings per currency (exact decimal strings). */
  earned: Record<string, string>;
}

export function tallyTrail(entries: Array<{ entry: TrailEntry }>, members: string[]): Map<string, MemberFigures> {
  const per = new Map<string, MemberFigures>(members.map((m) => [m, { dispatched: 0, completed: 0, failed: 0, earned: {} }]));
  for (const { entry } of entries) {
    const p = per.get(open(entry.dispatch, T.poolDispatch).record.member);
    if (p) {
      p.dispatched++;
      if (entry.state === 'completed') p.completed++;
      if (entry.state === 'failed') p.failed++;
    }
    if (!entry.settlement) continue;
    const s = open(entry.settlement, T.poolSettlement);
    const cur = s.record.price.currency;
    for (const part of s.record.parts) {
      const q = per.get(part.member);
      if (q) q.earned[cur] = new Decimal(q.earned[cur] ?? '0').add(part.amount).toFixed();
    }
  }
  return per;
}

/** How the failed jobs in a trail failed: failure code → jobs (each job once). */
export function failureCodes(entries: Array<{ job: string; entry: TrailEntry }>): Record<string, number> {
  const out: Record<string, number> = {};
  const seen = new Set<string>();
  for (const { job, entry } of entries) {
    if (entry.state !== 'failed' || !entry.receipt || seen.has(job)) continue;
    seen.add(job);
    const c = open(entry.receipt, T.receipt).record.failure?.code ?? 'unknown';
    out[c] = (out[c] ?? 0) + 1;
  }
  return out;
}
