/**
 * The figures a pool/1 Deny rests on (§4.2, docs/pool.md "Admission"), and the words for them: what `c0mpute run`
 * prints after "✘ the steward denied: CODE", what `c0mpute pool check` prints, and the console's run narration.
 *
 * A deny for energy compares what the entitlement's released claims settled plus the claim's estimate (the floor,
 * which never shrinks within a ledger) against its limit, or its guarantee (then it may only run on surplus, which an
 * unobserved estimate, or an entitlement of weight 0, never gets; or more than its share of the siblings'). The buyer
 * holds none of the settled figure (other buyers charge the same entitlement), so the steward sends them beside the
 * reason in its `denied` frame (`basis`, integers in µJ; a steward before it sends none, and the line is as before).
 * Before (QA qaUp F4) the line was the code alone, and an operator could not tell how much budget was left.
 * Free of Node and of the DOM.
 */
import { joulesText } from './joules.js';

/** The figures of a Deny verdict (µJ, devices): present when the entitlement is known and the claim is well formed. */
export interface DenyBasis {
  /** what the entitlement's released claims spent (their actual figures) */
  settled_uj: number;
  /** the claim's estimate (the gang's total) */
  estimate_uj: number;
  guarantee_uj: number;
  /** absent: the entitlement has no limit */
  limit_uj?: number;
  /** the most surplus it may borrow (§2.2); absent when it can borrow none (a root, or weight 0) */
  share_uj?: number;
  /** the devices the claim asks for, and the entitlement's device guarantee */
  devices: number;
  guarantee_devices: number;
}

const FIELDS = ['settled_uj', 'estimate_uj', 'guarantee_uj', 'limit_uj', 'share_uj', 'devices', 'guarantee_devices'] as const;
const OPTIONAL = new Set(['limit_uj', 'share_uj']);

/** `basis` from another node's frame: a map of non-negative safe integers, else nothing (the line is the code alone). */
export function denyBasisOf(x: unknown): DenyBasis | undefined {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) return undefined;
  const out: Record<string, number> = {};
  for (const f of FIELDS) {
    const v = (x as Record<string, unknown>)[f];
    if (v === undefined && OPTIONAL.has(f)) continue;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) return undefined;
    out[f] = v;
  }
  return out as unknown as DenyBasis;
}

/**
 * The figures behind a deny `reason`, as a phrase ("settled 43.5 J + asked 380.0 J = 423.5 J, over the limit
 * 400.0 J"), or undefined when the reason does not rest on them (UNKNOWN_ENTITLEMENT, EMPTY_GANG, NO_DEVICES) or no
 * basis came.
 */
export function denyFiguresText(reason: string | undefined, b: DenyBasis | undefined): string | undefined {
  if (!b) return undefined;
  const floor = b.settled_uj + b.estimate_uj;
  const sum = `settled ${joulesText(b.settled_uj)} + asked ${joulesText(b.estimate_uj)} = ${joulesText(floor)}`;
  switch (reason) {
    case 'DEVICES_EXCEED_GUARANTEE':
      return `${b.devices} device${b.devices === 1 ? '' : 's'} asked, over the guarantee of ${b.guarantee_devices}`;
    case 'ENERGY_EXCEEDS_LIMIT':
      return b.limit_uj === undefined ? undefined : `${sum}, over the limit ${joulesText(b.limit_uj)}; ${joulesText(Math.max(0, b.limit_uj - b.settled_uj))} left under it`;
    case 'UNOBSERVED_EXCEEDS_GUARANTEE':
      return `${sum}, over the guarantee ${joulesText(b.guarantee_uj)} (${joulesText(Math.max(0, b.guarantee_uj - b.settled_uj))} left), and an unobserved estimate never borrows surplus`;
    case 'NO_WEIGHT_EXCEEDS_GUARANTEE':
      return `${sum}, over the guarantee ${joulesText(b.guarantee_uj)} (${joulesText(Math.max(0, b.guarantee_uj - b.settled_uj))} left), and over_quota_weight 0 never borrows surplus`;
    case 'EXCEEDS_MAX_SHARE':
      return `${sum}, ${joulesText(floor - b.guarantee_uj)} over the guarantee ${joulesText(b.guarantee_uj)}, more than its share of surplus ${joulesText(b.share_uj ?? 0)}`;
    default:
      return undefined;
  }
}

/** A Deny's figures as a parenthesis after its reason (` (settled … over the limit …)`), or '' (none sent, or another verdict). */
export function denyFigures(a: { verdict?: string; reason?: string; basis?: unknown } | undefined): string {
  const t = a?.verdict === 'Deny' ? denyFiguresText(a.reason, denyBasisOf(a.basis)) : undefined;
  return t ? ` (${t})` : '';
}
