/**
 * The batch runner's pure helpers (docs/matching.md "Batch runs"; issue #12
 * `c0mpute batch run`): the sub-batch a re-plan asks for, the lines each
 * provider of a plan gets, and what the completed lines cost (exact decimals).
 */
import { Decimal } from 'decimal.js';
import { C0Error } from '../errors.js';
import type { Money } from '../records/money.js';
import type { Batch, BatchPlan, BatchWorkload } from './batch-plan.js';

/** One line of a batch: its stable id (output file name) and its workload. What it carries is the ports' business. */
export interface RunLine {
  id: string;
  workload: string;
}

/** A receipt as the run reports it. */
export interface ReceiptView {
  line: string;
  address: string;
  job: string;
  status: string;
  provider: string;
  price: Money;
}

const D = Decimal.clone({ precision: 200 });
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The sub-batch of `count` lines of each workload: the same window, line time, price cap and requirements; units scaled down pro rata (rounded up at the 30th place). */
export function subBatch(batch: Batch, counts: ReadonlyMap<string, number>): Batch {
  const workloads: BatchWorkload[] = [];
  for (const w of batch.workloads) {
    const k = counts.get(w.workload) ?? 0;
    if (k <= 0) continue;
    const units: Record<string, string> = {};
    for (const [u, v] of Object.entries(w.units)) units[u] = new D(v).times(k).div(w.lines).toDecimalPlaces(30, Decimal.ROUND_UP).toFixed();
    workloads.push({ ...w, lines: k, units });
  }
  return { windowMs: batch.windowMs, workloads };
}

/** Give each assignment its lines: per workload, the lines in order, in the plan's assignment order. */
export function assign(plan: BatchPlan, lines: readonly RunLine[]): Map<string, RunLine[]> {
  const byWorkload = new Map<string, RunLine[]>();
  for (const l of lines) {
    const q = byWorkload.get(l.workload);
    if (q) q.push(l);
    else byWorkload.set(l.workload, [l]);
  }
  const out = new Map<string, RunLine[]>();
  for (const a of plan.assignments) {
    const q = byWorkload.get(a.workload) ?? [];
    const take = q.splice(0, a.lines);
    const mine = out.get(a.provider);
    if (mine) mine.push(...take);
    else out.set(a.provider, take);
  }
  const left = [...byWorkload.values()].reduce((s, q) => s + q.length, 0);
  if (left) throw new C0Error('BATCH_PLAN_SHORT', `the plan placed ${lines.length - left} of ${lines.length} lines`);
  return out;
}

/** The sum of the completed lines' receipt prices, per currency (currency order; never converted). */
export function costOfDone(perLine: ReadonlyArray<{ status: string; receipt?: string }>, receipts: readonly ReceiptView[]): Money[] {
  const byAddress = new Map(receipts.map((x) => [x.address, x]));
  const prices: Money[] = [];
  for (const r of perLine) {
    const rc = r.status === 'done' && r.receipt ? byAddress.get(r.receipt) : undefined;
    if (rc) prices.push(rc.price);
  }
  return sumMoney(prices);
}

/** Amounts summed per currency, exactly (currency order; never converted). */
export function sumMoney(list: readonly Money[]): Money[] {
  const cost = new Map<string, Decimal>();
  for (const m of list) cost.set(m.currency, (cost.get(m.currency) ?? new D(0)).plus(m.amount));
  return [...cost.entries()].sort((a, b) => cmp(a[0], b[0])).map(([currency, v]) => ({ amount: v.toFixed(), currency }));
}
