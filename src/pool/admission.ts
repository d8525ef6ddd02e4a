/**
 * Admission (pool/1 §3–§4) and the pool state it decides against.
 *
 * `PoolState` joins a tree with the usage derived from the ledger and keeps,
 * per parent, the sums a decision needs (siblings' unspent guarantee and the
 * amount already borrowed), so a decision costs O(1) whatever the tree size.
 * The share (§2.2) comes from the tree alone, never from arrival order.
 *
 * Evaluation follows §4 in order; every reason that applies is reported, the
 * first in precedence order is `reason` (see docs/pool.md):
 *   Deny:  UNKNOWN_ENTITLEMENT, EMPTY_GANG, NO_DEVICES (§4.1)
 *          DEVICES_EXCEED_GUARANTEE, ENERGY_EXCEEDS_LIMIT (§4.2)
 *          UNOBSERVED_EXCEEDS_GUARANTEE, NO_WEIGHT_EXCEEDS_GUARANTEE,
 *          EXCEEDS_MAX_SHARE (can never fit as written: §4.2 read with §4.4;
 *          the energy tests count the estimate on top of what the
 *          entitlement's released claims spent, which never shrinks)
 *   Queue: DEVICES_HELD, GUARANTEE_EXHAUSTED_UNOBSERVED,
 *          GUARANTEE_EXHAUSTED_NO_WEIGHT, LIMIT_REACHED, SHARE_EXCEEDED,
 *          SURPLUS_INSUFFICIENT (§4.4–§4.5)
 */
import { C0Error } from '../errors.js';
import { checkEnergy, isObserved, type Energy } from './grades.js';
import type { Tree, Entitlement } from './tree.js';
import { UsageBook, type AdmittedEvent, type PoolEvent, type UsageDelta } from './usage.js';
import type { DenyBasis } from '../util/deny-text.js';

export const CLAIM_ERR = { INVALID: 'POOL_CLAIM_INVALID' } as const;

export interface Claim {
  /** unique claim id (the stable key for tie-breaks) */
  id: string;
  entitlement: string;
  /** the operator's comparability class (§2.4, §2.6) */
  class?: string;
  gang_size: number;
  devices_per_member: number;
  /** the gang's total energy, at its grade */
  estimate: Energy;
}

export const DENY_REASONS = [
  'UNKNOWN_ENTITLEMENT',
  'EMPTY_GANG',
  'NO_DEVICES',
  'DEVICES_EXCEED_GUARANTEE',
  'ENERGY_EXCEEDS_LIMIT',
  'UNOBSERVED_EXCEEDS_GUARANTEE',
  'NO_WEIGHT_EXCEEDS_GUARANTEE',
  'EXCEEDS_MAX_SHARE',
] as const;
export type DenyReason = (typeof DENY_REASONS)[number];

export const QUEUE_REASONS = ['DEVICES_HELD', 'GUARANTEE_EXHAUSTED_UNOBSERVED', 'GUARANTEE_EXHAUSTED_NO_WEIGHT', 'LIMIT_REACHED', 'SHARE_EXCEEDED', 'SURPLUS_INSUFFICIENT'] as const;
export type QueueReason = (typeof QUEUE_REASONS)[number];

export type Verdict =
  | {
      verdict: 'Admit';
      claim: string;
      entitlement: string;
      /** the reservation and the grade it rests on (§3, §4.6) */
      reserved: Energy;
      devices: number;
      borrowed_uj: number;
    }
  | { verdict: 'Queue'; claim: string; entitlement: string; reason: QueueReason; reasons: QueueReason[]; estimate: Energy; devices: number }
  | {
      verdict: 'Deny';
      claim: string;
      entitlement: string;
      reason: DenyReason;
      reasons: DenyReason[];
      estimate: Energy;
      devices: number;
      /** the figures the §4.2 tests compared (absent for UNKNOWN_ENTITLEMENT, EMPTY_GANG, NO_DEVICES): src/util/deny-text.ts */
      basis?: DenyBasis;
    };

const ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;

function nonNegInt(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new C0Error(CLAIM_ERR.INVALID, `${field}: expected a non-negative integer, got ${String(v)}`, { field });
  return v;
}

/** Validate a claim's shape (bad input is an error; a gang of zero is a Deny, not an error). */
export function checkClaim(c: Claim): Claim {
  if (typeof c !== 'object' || c === null) throw new C0Error(CLAIM_ERR.INVALID, 'claim: expected a map', { field: 'claim' });
  if (typeof c.id !== 'string' || !ID_RE.test(c.id)) throw new C0Error(CLAIM_ERR.INVALID, `id: expected a name matching ${ID_RE.source}`, { field: 'id' });
  if (typeof c.entitlement !== 'string' || c.entitlement.length === 0) throw new C0Error(CLAIM_ERR.INVALID, 'entitlement: required', { field: 'entitlement' });
  if (c.class !== undefined && (typeof c.class !== 'string' || c.class.trim().length === 0 || c.class.length > 128)) {
    throw new C0Error(CLAIM_ERR.INVALID, 'class: expected a non-empty name of at most 128 characters (omit it for none)', { field: 'class' });
  }
  nonNegInt(c.gang_size, 'gang_size');
  nonNegInt(c.devices_per_member, 'devices_per_member');
  if (!Number.isSafeInteger(c.gang_size * c.devices_per_member)) throw new C0Error(CLAIM_ERR.INVALID, 'devices_per_member: gang devices beyond 2^53', { field: 'devices_per_member' });
  checkEnergy(c.estimate, 'estimate');
  return c;
}

interface ParentAgg {
  /** Σ over children of max(0, guarantee − used): unspent guarantee */
  unspent: number;
  /** Σ over children of max(0, used − guarantee): surplus already borrowed */
  borrowed: number;
}

const pos = (x: number) => (x > 0 ? x : 0);

export class PoolState {
  readonly tree: Tree;
  readonly book: UsageBook;
  readonly #agg = new Map<string, ParentAgg>();

  constructor(tree: Tree, book: UsageBook = new UsageBook()) {
    this.tree = tree;
    this.book = book;
    for (const e of tree.entitlements.values()) this.#add(e, this.book.usage(e.id).usedUj, 1);
  }

  #add(e: Entitlement, used: number, sign: 1 | -1): void {
    if (e.parent === undefined) return;
    let a = this.#agg.get(e.parent);
    if (!a) this.#agg.set(e.parent, (a = { unspent: 0, borrowed: 0 }));
    a.unspent += sign * pos(e.guarantee_uj - used);
    a.borrowed += sign * pos(used - e.guarantee_uj);
  }

  /** Apply a ledger event (after the ledger accepted it). */
  apply(ev: PoolEvent): UsageDelta {
    const d = this.book.apply(ev);
    const e = this.tree.entitlements.get(d.entitlement);
    if (e) {
      this.#add(e, d.before.usedUj, -1);
      this.#add(e, d.after.usedUj, 1);
    }
    return d;
  }

  /** The verdict a claim gets now (§4). Pure with respect to the state: decides, never reserves. */
  decide(claim: Claim): Verdict {
    checkClaim(claim);
    const est = claim.estimate;
    const devices = claim.gang_size * claim.devices_per_member;
    const base = { claim: claim.id, entitlement: claim.entitlement, estimate: { uj: est.uj, grade: est.grade }, devices };
    const deny: DenyReason[] = [];
    let basis: DenyBasis | undefined;
    // §4.1 resolution and shape
    const e = this.tree.entitlements.get(claim.entitlement);
    if (!e) deny.push('UNKNOWN_ENTITLEMENT');
    if (claim.gang_size === 0) deny.push('EMPTY_GANG');
    if (claim.devices_per_member === 0) deny.push('NO_DEVICES');
    if (e && deny.length === 0) {
      // §4.2 impossibility before pendency. What the entitlement's released claims spent never shrinks within a
      // ledger (only an open reservation may still be released for less), so a claim that cannot fit on top of it
      // can never fit as written (§4.5): it is denied, never queued. With nothing released yet, the estimate alone.
      const floor = this.book.usage(e.id).settledUj + est.uj;
      if (devices > e.guarantee_devices) deny.push('DEVICES_EXCEED_GUARANTEE');
      if (e.limit_uj !== undefined && floor > e.limit_uj) deny.push('ENERGY_EXCEEDS_LIMIT');
      // past the guarantee even at that floor: it can only ever run on surplus
      if (floor > e.guarantee_uj) {
        if (!isObserved(est.grade)) deny.push('UNOBSERVED_EXCEEDS_GUARANTEE');
        if (e.over_quota_weight === 0) deny.push('NO_WEIGHT_EXCEEDS_GUARANTEE');
        if (e.over_quota_weight > 0 && BigInt(floor - e.guarantee_uj) > this.#share(e)) deny.push('EXCEEDS_MAX_SHARE');
      }
      if (deny.length > 0) {
        const share = e.over_quota_weight > 0 ? this.#share(e) : 0n;
        basis = { settled_uj: floor - est.uj, estimate_uj: est.uj, guarantee_uj: e.guarantee_uj, ...(e.limit_uj === undefined ? {} : { limit_uj: e.limit_uj }), ...(share > 0n ? { share_uj: Number(share) } : {}), devices, guarantee_devices: e.guarantee_devices };
      }
    }
    if (deny.length > 0) return { verdict: 'Deny', ...base, reason: deny[0]!, reasons: deny, ...(basis ? { basis } : {}) };
    const ent = e!;
    const u = this.book.usage(ent.id);
    const queue: QueueReason[] = [];
    // §4.3 inside the guarantee (devices always bind at the guarantee)
    if (u.heldDevices + devices > ent.guarantee_devices) queue.push('DEVICES_HELD');
    const after = u.usedUj + est.uj;
    let borrowed = 0;
    if (after > ent.guarantee_uj) {
      // §4.4 past the guarantee: all four must hold
      const borrowedBefore = pos(u.usedUj - ent.guarantee_uj);
      const borrowedAfter = after - ent.guarantee_uj;
      borrowed = borrowedAfter - borrowedBefore;
      if (!isObserved(est.grade)) queue.push('GUARANTEE_EXHAUSTED_UNOBSERVED');
      if (ent.over_quota_weight === 0) queue.push('GUARANTEE_EXHAUSTED_NO_WEIGHT');
      if (ent.limit_uj !== undefined && after > ent.limit_uj) queue.push('LIMIT_REACHED');
      if (ent.over_quota_weight > 0) {
        if (BigInt(borrowedAfter) > this.#share(ent)) queue.push('SHARE_EXCEEDED');
        if (borrowed > this.#available(ent, u.usedUj)) queue.push('SURPLUS_INSUFFICIENT');
      }
    }
    if (queue.length > 0) return { verdict: 'Queue', ...base, reason: queue[0]!, reasons: queue };
    return { verdict: 'Admit', claim: claim.id, entitlement: ent.id, reserved: { uj: est.uj, grade: est.grade }, devices, borrowed_uj: borrowed };
  }

  /**
   * §2.2: floor(Σ siblings' guarantee × weight / Σ weights under the parent).
   * The share is a property of the tree: it does not move when a sibling
   * spends, borrows or claims first, so arrival order cannot enlarge it. What
   * siblings have actually left unspent bounds the *available* surplus below.
   */
  #share(e: Entitlement): bigint {
    if (e.parent === undefined) return 0n; // surplus never crosses roots
    const W = BigInt(this.tree.weightSum.get(e.parent) ?? 0);
    if (W === 0n) return 0n;
    const siblingsG = BigInt((this.tree.guaranteeSum.get(e.parent) ?? 0) - e.guarantee_uj);
    return (siblingsG * BigInt(e.over_quota_weight)) / W;
  }

  /** Surplus still available to `e`: siblings' unspent guarantee less what siblings already borrowed. */
  #available(e: Entitlement, used: number): number {
    if (e.parent === undefined) return 0;
    const a = this.#agg.get(e.parent) ?? { unspent: 0, borrowed: 0 };
    return a.unspent - pos(e.guarantee_uj - used) - (a.borrowed - pos(used - e.guarantee_uj));
  }

  /** The share and available surplus for an entitlement (for explanations). */
  explain(id: string): { usedUj: number; settledUj: number; heldDevices: number; shareUj: number; availableUj: number } | undefined {
    const e = this.tree.entitlements.get(id);
    if (!e) return undefined;
    const u = this.book.usage(id);
    return { ...u, shareUj: Number(this.#share(e)), availableUj: pos(this.#available(e, u.usedUj)) };
  }
}

/** The ledger event for an admission (the class the claim declared is recorded beside it, §6.2). */
export function admittedEvent(claim: Claim, v: Extract<Verdict, { verdict: 'Admit' }>): AdmittedEvent {
  const ev: AdmittedEvent = { event: 'Admitted', claim: v.claim, entitlement: v.entitlement, reserved: v.reserved, devices: v.devices, borrowed_uj: v.borrowed_uj };
  if (claim.class !== undefined) ev.class = claim.class;
  return ev;
}
