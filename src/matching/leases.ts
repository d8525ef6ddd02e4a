/**
 * Leases on open orders without a coordinator (spec/matching-and-leases.md
 * "Leases", on the P2P network; docs/matching.md "Open orders, claims and
 * leases"). Pure and deterministic: every node that holds the same live
 * providers (signed presence + adverts) and the same open orders computes the
 * same leases, whatever order it heard them in. `now` is injected.
 *
 * The rule, per the spec: a provider with N free slots holds leases on up to N
 * open orders, oldest first (announcedAt, then address), among those it may
 * claim (open bids it is eligible for, or orders designated to it), skipping
 * orders another provider holds. Without a coordinator "who holds what" is
 * settled by rendezvous (highest-random-weight) hashing:
 *
 *   weight(order, provider) = SHA-256(order address ‖ 0x00 ‖ provider DID)
 *
 * For each order the providers that may claim it are ranked by weight (highest
 * first, DID as the tie-break). Lease periods run on the order's own grid:
 * period k covers [announcedAt + k·L, announcedAt + (k+1)·L), L = leaseMs
 * (MATCH_LEASE_MS, 20 s), so every lease lasts a full L and the period follows
 * from `now` alone (a restart does not lose its place). In period k the ranking
 * is rotated by k: the preferred holder is ranked[k mod n], then the next ones.
 * An order still open when its lease ends was not claimed by its holder, so the
 * next period prefers the next provider in the ranking: an expired lease always
 * passes to another provider when one may claim the order.
 *
 * Orders are processed oldest first; each goes to the first provider in its
 * rotated ranking that still has a free slot. So no provider holds more than its
 * free slots, and each order has at most one holder (collision-free).
 *
 * A lease reserves nothing: it only tells a provider which orders to claim, so
 * that providers watching the same workload do not all race for the same jobs.
 * Any provider may still claim any order it may claim; the buyer's node takes
 * the first valid claim (src/matching/claims.ts).
 */
import { createHash } from 'node:crypto';
import { MATCH_LEASE_MS, type LiveProvider } from './types.js';

/** An open order as the lease rule sees it (built from the buyer's signed job). */
export interface OpenOrder {
  /** The job record's address. */
  address: string;
  /** The buyer's DID (signer of the job). */
  buyer: string;
  /** When the job was announced (ms since the epoch). */
  announcedAt: number;
  /** The workload wanted. */
  workload: string;
  /** The one provider the order names, if any: only it may hold the lease. */
  designated?: string;
  /** Whether the order is an open bid (any eligible provider may claim it). */
  openBid: boolean;
}

/** One lease: `provider` holds `order` from `from` (inclusive) until `until` (exclusive). */
export interface Lease {
  order: string;
  provider: string;
  /** The lease period of this order (0 = the first L after announcedAt). */
  period: number;
  from: number;
  until: number;
}

export interface LeaseInput {
  providers: readonly LiveProvider[];
  orders: readonly OpenOrder[];
  /** The decision time (ms since the epoch); nothing here reads a clock. */
  now: number;
  /** Lease length (default MATCH_LEASE_MS). */
  leaseMs?: number;
  /**
   * May this provider claim this order (eligibility gates against its advert,
   * price, box key …)? Applied to open bids and to designated orders alike.
   * Default: the provider serves the order's workload now.
   */
  eligible?: (provider: LiveProvider, order: OpenOrder) => boolean;
}

export interface LeaseView {
  /** Every lease, oldest order first. */
  leases: Lease[];
  /** Leases per provider DID (oldest first); providers holding none are absent. */
  byProvider: Map<string, Lease[]>;
  /** The lease on each order address (absent: nobody may or can hold it now). */
  byOrder: Map<string, Lease>;
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Rendezvous weight of (order, provider), as a hex string (compared as text = as bytes). */
export function leaseWeight(order: string, provider: string): string {
  return createHash('sha256').update(order).update('\u0000').update(provider).digest('hex');
}

/** The lease period of an order at `now` (0 before or at announcement). */
export function leasePeriod(announcedAt: number, now: number, leaseMs: number = MATCH_LEASE_MS): number {
  return now <= announcedAt ? 0 : Math.floor((now - announcedAt) / leaseMs);
}

/** Oldest first: announcedAt, then address. */
export function compareOrders(a: OpenOrder, b: OpenOrder): number {
  return a.announcedAt - b.announcedAt || byString(a.address, b.address);
}

/**
 * The providers that may claim `order`, ranked by rendezvous weight (highest
 * first, DID order on a tie). Exported for the provider side and for tests.
 */
export function leaseRanking(order: OpenOrder, providers: readonly LiveProvider[], eligible: (p: LiveProvider, o: OpenOrder) => boolean): LiveProvider[] {
  const may = providers.filter((p) => (order.designated !== undefined ? p.did === order.designated : order.openBid) && eligible(p, order));
  const w = new Map(may.map((p) => [p.did, leaseWeight(order.address, p.did)]));
  return may.sort((a, b) => byString(w.get(b.did)!, w.get(a.did)!) || byString(a.did, b.did));
}

const servesWorkload = (p: LiveProvider, o: OpenOrder): boolean => p.workloads.includes(o.workload);

/** One entry per DID (the newest presence, then its address), DID order; only those live at `now`. */
function normaliseProviders(providers: readonly LiveProvider[], now: number): LiveProvider[] {
  const best = new Map<string, LiveProvider>();
  for (const p of providers) {
    if (p.liveUntil <= now) continue;
    const q = best.get(p.did);
    if (!q || p.presence.record.issuedAt > q.presence.record.issuedAt || (p.presence.record.issuedAt === q.presence.record.issuedAt && p.presence.address > q.presence.address)) best.set(p.did, p);
  }
  return [...best.values()].sort((a, b) => byString(a.did, b.did));
}

/** One entry per address (the first in compareOrders order of equal addresses is kept deterministically), oldest first. */
function normaliseOrders(orders: readonly OpenOrder[]): OpenOrder[] {
  const sorted = [...orders].sort((a, b) => compareOrders(a, b) || byString(JSON.stringify(a), JSON.stringify(b)));
  const seen = new Set<string>();
  return sorted.filter((o) => (seen.has(o.address) ? false : (seen.add(o.address), true)));
}

/** Every lease at `now`, from one view of live providers and open orders. */
export function computeLeases(input: LeaseInput): LeaseView {
  const leaseMs = input.leaseMs ?? MATCH_LEASE_MS;
  if (!Number.isSafeInteger(leaseMs) || leaseMs <= 0) throw new RangeError(`leaseMs must be a positive integer, got ${leaseMs}`);
  const eligible = input.eligible ?? servesWorkload;
  const providers = normaliseProviders(input.providers, input.now);
  const room = new Map(providers.map((p) => [p.did, Math.max(0, Math.floor(p.freeSlots))]));
  const withRoom = providers.filter((p) => room.get(p.did)! > 0);
  const leases: Lease[] = [];
  const byProvider = new Map<string, Lease[]>();
  const byOrder = new Map<string, Lease>();
  for (const o of normaliseOrders(input.orders)) {
    const ranked = leaseRanking(o, withRoom, eligible);
    if (ranked.length === 0) continue;
    const period = leasePeriod(o.announcedAt, input.now, leaseMs);
    for (let i = 0; i < ranked.length; i++) {
      const p = ranked[(period + i) % ranked.length]!;
      const left = room.get(p.did)!;
      if (left <= 0) continue;
      room.set(p.did, left - 1);
      const from = o.announcedAt + period * leaseMs;
      const lease: Lease = { order: o.address, provider: p.did, period, from, until: from + leaseMs };
      leases.push(lease);
      byOrder.set(o.address, lease);
      let mine = byProvider.get(p.did);
      if (!mine) byProvider.set(p.did, (mine = []));
      mine.push(lease);
      break;
    }
  }
  return { leases, byProvider, byOrder };
}

/** The leases one provider holds at `now` (what its poll would return). */
export function leasesOf(provider: string, input: LeaseInput): Lease[] {
  return computeLeases(input).byProvider.get(provider) ?? [];
}
