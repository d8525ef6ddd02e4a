/**
 * Usage derived from ledger events (pool/1 §6.1–§6.2). The only durable state
 * is the ledger; this book is what a replay of it yields. Pure and in memory.
 *
 * `Admitted` reserves the estimate against the entitlement and records the
 * class; `Released` lifts the reservation and charges the actual figure in its
 * place (replaces, never adds). An admission still open keeps its reservation.
 * A release of a claim never admitted, or released already, is inconsistent
 * and refused with a code; so is a second admission of one claim id.
 *
 * It lives as long as its ledger (a steward's, for the ledger's whole accounting window), so nothing in it is a
 * list per claim: an open claim's figures until it is released, the released ids in a compact exact set
 * (claim-set.ts), and what §2.6 derives from as one ClassEvidence per class (estimate.ts), not the history.
 */
import { C0Error } from '../errors.js';
import { addUj, checkEnergy, checkUj, type Energy } from './grades.js';
import { addObservation, emptyEvidence, estimateFromEvidence, type ClassEvidence, type EstimateResult } from './estimate.js';
import { ClaimSet } from './claim-set.js';

export const USAGE_ERR = {
  RELEASE_UNKNOWN: 'LEDGER_RELEASE_UNKNOWN_CLAIM',
  RELEASE_TWICE: 'LEDGER_RELEASE_TWICE',
  DUPLICATE_CLAIM: 'LEDGER_DUPLICATE_CLAIM',
  BAD_EVENT: 'LEDGER_BAD_EVENT',
} as const;

export interface AdmittedEvent {
  event: 'Admitted';
  claim: string;
  entitlement: string;
  /** the comparability class the claim declared (absent: none) */
  class?: string;
  reserved: Energy;
  devices: number;
  /** how much of the reservation was borrowed surplus */
  borrowed_uj: number;
}

export interface ReleasedEvent {
  event: 'Released';
  claim: string;
  actual: Energy;
}

export type PoolEvent = AdmittedEvent | ReleasedEvent;

export interface EntitlementUsage {
  /** reservations of open claims + actual figures of released ones, µJ */
  usedUj: number;
  /**
   * the actual figures of released claims alone, µJ: the part of `usedUj` that can never shrink within a ledger
   * (an open reservation may still be released for less), so what admission tells the impossible from the pending by
   */
  settledUj: number;
  /** devices held by open claims */
  heldDevices: number;
}

/** A claim admitted and not yet released: its Admitted event's figures. */
export type OpenClaim = Omit<AdmittedEvent, 'event'>;

/** What an applied event changed for one entitlement. */
export interface UsageDelta {
  entitlement: string;
  before: EntitlementUsage;
  after: EntitlementUsage;
}

export class UsageBook {
  readonly entitlements = new Map<string, EntitlementUsage>();
  readonly open = new Map<string, OpenClaim>();
  /** every claim released: ids are unique in a ledger, and a buyer may ask again for one at any time */
  readonly released = new ClaimSet();
  /** per class, what its completed runs say (§2.6): counts, extremes and grade, folded as they are released */
  readonly #classes = new Map<string, ClassEvidence>();

  /** Each class's evidence so far (one entry per class a released claim declared). */
  get classes(): ReadonlyMap<string, Readonly<ClassEvidence>> {
    return this.#classes;
  }

  /**
   * The estimate derived for `cls` from every released claim of that class (§2.6): exactly what deriveEstimate
   * over the whole history answers (same checks, same codes), in O(1).
   */
  estimate(cls: string, opts: { required?: number } = {}): EstimateResult {
    return estimateFromEvidence(cls, this.#classes.get(cls), opts);
  }

  usage(id: string): EntitlementUsage {
    return this.entitlements.get(id) ?? { usedUj: 0, settledUj: 0, heldDevices: 0 };
  }

  /** Check an event against the book without changing it. Throws C0Error. */
  check(ev: PoolEvent): void {
    if (ev.event === 'Admitted') {
      checkUj(ev.reserved?.uj, 'reserved.uj');
      checkEnergy(ev.reserved, 'reserved');
      if (this.open.has(ev.claim) || this.released.has(ev.claim)) {
        throw new C0Error(USAGE_ERR.DUPLICATE_CLAIM, `claim: "${ev.claim}" was admitted already`, { field: 'claim' });
      }
      const u = this.usage(ev.entitlement);
      addUj(u.usedUj, ev.reserved.uj, 'reserved.uj');
    } else if (ev.event === 'Released') {
      checkEnergy(ev.actual, 'actual');
      if (this.released.has(ev.claim)) throw new C0Error(USAGE_ERR.RELEASE_TWICE, `claim: "${ev.claim}" was released already`, { field: 'claim' });
      const o = this.open.get(ev.claim);
      if (!o) throw new C0Error(USAGE_ERR.RELEASE_UNKNOWN, `claim: "${ev.claim}" was never admitted`, { field: 'claim' });
      const u = this.usage(o.entitlement);
      addUj(u.usedUj - o.reserved.uj, ev.actual.uj, 'actual.uj');
    } else {
      throw new C0Error(USAGE_ERR.BAD_EVENT, `event: unknown event ${(ev as { event?: unknown }).event as string}`, { field: 'event' });
    }
  }

  /** Apply an event (checked first; a refused event changes nothing). */
  apply(ev: PoolEvent): UsageDelta {
    this.check(ev);
    if (ev.event === 'Admitted') {
      const before = this.usage(ev.entitlement);
      const after = { usedUj: before.usedUj + ev.reserved.uj, settledUj: before.settledUj, heldDevices: before.heldDevices + ev.devices };
      this.entitlements.set(ev.entitlement, after);
      const oc: OpenClaim = { claim: ev.claim, entitlement: ev.entitlement, reserved: ev.reserved, devices: ev.devices, borrowed_uj: ev.borrowed_uj };
      if (ev.class !== undefined) oc.class = ev.class;
      this.open.set(ev.claim, oc);
      return { entitlement: ev.entitlement, before, after };
    }
    const o = this.open.get(ev.claim)!;
    const before = this.usage(o.entitlement);
    // the actual figure replaces the reservation
    const after = { usedUj: before.usedUj - o.reserved.uj + ev.actual.uj, settledUj: before.settledUj + ev.actual.uj, heldDevices: before.heldDevices - o.devices };
    this.entitlements.set(o.entitlement, after);
    this.open.delete(ev.claim);
    this.released.add(ev.claim);
    if (o.class !== undefined) {
      let c = this.#classes.get(o.class);
      if (!c) this.#classes.set(o.class, (c = emptyEvidence()));
      addObservation(c, ev.actual);
    }
    return { entitlement: o.entitlement, before, after };
  }
}
