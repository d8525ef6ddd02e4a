/**
 * Which running claims the steward reclaims devices from (pool/1 §5), from
 * the figures it actually holds (pure):
 *
 * - spent µJ = the energy of every receipt the claim's providers signed so far
 *   (failed attempts spent energy too) + the live figure of the attempt now
 *   running (the provider's answer to `usage` over /c0mpute/preempt/1);
 * - completed units = the units the running attempt reports completed (an
 *   executor that counts its work, e.g. builtin.sha256's rounds); absent
 *   (nothing reported) is 0 completed, so the cost is undefined, never 0 (§5.1).
 *
 * Candidates are claims of entitlements with a lower priority than the
 * claimant's that hold devices and have a known provider; they are taken in
 * the §5.2 order (src/pool/preemption.ts: defined cost, most expensive first;
 * then undefined, lowest priority first; ties on the claim id) until enough
 * devices are freed.
 */
import { preemptionOrder, type RunningWorkload } from '../pool/preemption.js';
import type { OpenClaim } from '../pool/usage.js';

export interface ClaimFigures {
  /** µJ of the receipts signed for the claim so far */
  receiptsUj: number;
  /** µJ of the attempt now running, when sampled */
  liveUj?: number;
  /** units the running attempt reports completed, when it reports any */
  units?: number;
}

export interface PreemptInputs {
  open: readonly OpenClaim[];
  /** an entitlement's declared priority (undefined: unknown entitlement, never a candidate) */
  priority: (entitlement: string) => number | undefined;
  /** the claimant's priority: only claims below it are candidates */
  claimantPriority: number;
  figures: (claim: string) => ClaimFigures;
  hasProvider: (claim: string) => boolean;
}

/** The running workloads §5.2 ranks, with their real figures. */
export function runningWorkloads(i: PreemptInputs): RunningWorkload[] {
  const out: RunningWorkload[] = [];
  for (const c of i.open) {
    const priority = i.priority(c.entitlement);
    if (c.devices <= 0 || priority === undefined || priority >= i.claimantPriority || !i.hasProvider(c.claim)) continue;
    const f = i.figures(c.claim);
    out.push({ key: c.claim, spentUj: f.receiptsUj + (f.liveUj ?? 0), completedUnits: f.units ?? 0, priority });
  }
  return out;
}

/** Victims in §5.2 order until `over` devices are freed; empty when the candidates cannot free that many. */
export function chooseVictims(i: PreemptInputs, over: number): string[] {
  const devices = new Map(i.open.map((c) => [c.claim, c.devices]));
  const victims: string[] = [];
  let freed = 0;
  for (const r of preemptionOrder(runningWorkloads(i))) {
    if (freed >= over) break;
    victims.push(r.key);
    freed += devices.get(r.key) ?? 0;
  }
  return freed >= over ? victims : [];
}
