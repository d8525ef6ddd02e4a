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
 *   weight(order, provider) = mix(SHA-256(order address)[0..8] ⊕ SHA-256(DID)[0..8])
 *
 * (murmur3's finaliser over the two 32-bit halves; see mixWeight).
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
 * An order's age counts only in its first `frontPeriods` periods
 * (MATCH_FRONT_PERIODS, 3): `announcedAt` is the buyer's word, so an order
 * claiming to be old (or one nobody claimed through three holders) would
 * otherwise come first for good and, if it can never be claimed, keep every
 * provider's slots from the orders behind it. Orders past their front periods
 * come after every order still in them, ranked among themselves by a weight
 * of (order address, its period) that changes each period, so each gets a turn
 * at the front whatever `announcedAt` it names.
 *
 * A lease tells a provider which orders to claim, so that providers watching
 * the same workload do not all race for the same jobs; the buyer's node takes
 * the first valid claim (src/matching/claims.ts). In claimMode `leased` a
 * provider claims an open bid only when it may (its lease, or escalation); a
 * key that publishes an advert and a presence can hold leases and never claim.
 * So an open bid's lease escalates while it stays open (escalation below): from
 * age G on, the first 2^⌊a/G⌋ providers of its rotated ranking may claim it too
 * (G = MATCH_ESCALATE_MS, 5 s), whatever the capacity rule gave. Hostile keys ranked
 * ahead of every honest provider stall it for about G · log2(their number).
 */
import { createHash } from 'node:crypto';
import { MATCH_ESCALATE_MS, MATCH_FRONT_PERIODS, MATCH_LEASE_MS, type LiveProvider } from './types.js';
import { isDesignated } from './candidates.js';

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
  /** Periods an order's age counts for (default MATCH_FRONT_PERIODS): after them it goes behind the orders still in theirs. */
  frontPeriods?: number;
  /**
   * May this provider claim this order (eligibility gates against its advert,
   * price, box key …)? Applied to open bids and to designated orders alike.
   * Default: the provider serves the order's workload now.
   */
  eligible?: (provider: LiveProvider, order: OpenOrder) => boolean;
  /**
   * A provider DID whose place in each open bid's ranking to record (LeaseView.places), for the escalation check
   * (rule 6) of the node's own claimer. Changes no lease.
   */
  placeOf?: string;
}

/**
 * A provider's place in an open bid's ranking (rule 2, not rotated): `ahead` of the `n` providers that may hold it
 * rank ahead of it; null when it may not hold the order.
 */
export type Place = { ahead: number; n: number } | null;

export interface LeaseView {
  /** Every lease, in lease order (leaseOrder: oldest first among orders in their front periods, then the others). */
  leases: Lease[];
  /** Leases per provider DID (in lease order); providers holding none are absent. */
  byProvider: Map<string, Lease[]>;
  /** The lease on each order address (absent: nobody may or can hold it now). */
  byOrder: Map<string, Lease>;
  /**
   * With LeaseInput.placeOf: that provider's place in the ranking of each open bid the computation ranked (every open
   * bid up to the one that took the last free slot; the others are absent).
   */
  places?: Map<string, Place>;
}

const byString = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** The first 64 bits of SHA-256(text), as two uint32 (each order and each DID is hashed once per computation). */
export function hash64(text: string): [number, number] {
  const h = createHash('sha256').update(text).digest();
  return [h.readUInt32BE(0), h.readUInt32BE(4)];
}

/** murmur3's 32-bit finaliser. */
function fmix32(x: number): number {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x >>> 0;
}

/**
 * Rendezvous weight of (order, provider) from their 64-bit hashes: the two
 * halves of order ⊕ provider mixed into a 53-bit integer (exact in a double).
 * Hashing each side once and mixing per pair keeps a lease computation over
 * 1k providers × 10k orders fast (docs/matching.md).
 */
export function mixWeight(order: readonly [number, number], provider: readonly [number, number]): number {
  const a = (order[0] ^ provider[0]) >>> 0;
  const b = (order[1] ^ provider[1]) >>> 0;
  const h1 = fmix32((a ^ Math.imul(b, 0x9e3779b1)) >>> 0);
  const h2 = fmix32((b ^ Math.imul(h1, 0x27d4eb2f)) >>> 0);
  return h1 * 2 ** 21 + (h2 >>> 11);
}

/** Rendezvous weight of (order address, provider DID). */
export function leaseWeight(order: string, provider: string): number {
  return mixWeight(hash64(order), hash64(provider));
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
export function leaseRanking(order: OpenOrder, providers: readonly LiveProvider[], eligible: (p: LiveProvider, o: OpenOrder) => boolean, didHash?: (did: string) => readonly [number, number]): LiveProvider[] {
  const oh = hash64(order.address);
  const dh = didHash ?? hash64;
  const may: Array<{ p: LiveProvider; w: number }> = [];
  for (const p of providers) if ((order.designated !== undefined ? isDesignated(p, order.designated) : order.openBid) && eligible(p, order)) may.push({ p, w: mixWeight(oh, dh(p.did)) });
  may.sort((a, b) => b.w - a.w || byString(a.p.did, b.p.did));
  return may.map((x) => x.p);
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

/** The weight ranking an order among those past their front periods in `period` (highest first). */
export function lateWeight(orderHash: readonly [number, number], period: number): number {
  return mixWeight(orderHash, [period >>> 0, Math.floor(period / 2 ** 32) ^ 0x5bd1e995]);
}

/**
 * The order leases are handed out in at `now` (one entry per address): orders in their first `frontPeriods` periods
 * oldest first (announcedAt, then address), then the rest by lateWeight (highest first, then address). Each with its
 * period and address hash.
 */
export function leaseOrder(orders: readonly OpenOrder[], now: number, leaseMs: number = MATCH_LEASE_MS, frontPeriods: number = MATCH_FRONT_PERIODS): Array<{ order: OpenOrder; period: number; hash: [number, number] }> {
  const front: Array<{ order: OpenOrder; period: number; hash: [number, number] }> = [];
  const late: Array<{ order: OpenOrder; period: number; hash: [number, number]; w: number }> = [];
  for (const o of normaliseOrders(orders)) {
    const period = leasePeriod(o.announcedAt, now, leaseMs);
    const hash = hash64(o.address);
    if (period < frontPeriods) front.push({ order: o, period, hash });
    else late.push({ order: o, period, hash, w: lateWeight(hash, period) });
  }
  late.sort((a, b) => b.w - a.w || byString(a.order.address, b.order.address));
  return [...front, ...late.map(({ order, period, hash }) => ({ order, period, hash }))];
}

/** Every lease at `now`, from one view of live providers and open orders. */
export function computeLeases(input: LeaseInput): LeaseView {
  const leaseMs = input.leaseMs ?? MATCH_LEASE_MS;
  if (!Number.isSafeInteger(leaseMs) || leaseMs <= 0) throw new RangeError(`leaseMs must be a positive integer, got ${leaseMs}`);
  const frontPeriods = input.frontPeriods ?? MATCH_FRONT_PERIODS;
  if (!Number.isSafeInteger(frontPeriods) || frontPeriods < 0) throw new RangeError(`frontPeriods must be a non-negative integer, got ${frontPeriods}`);
  const eligible = input.eligible ?? servesWorkload;
  const withRoom = normaliseProviders(input.providers, input.now).filter((p) => p.freeSlots >= 1);
  const np = withRoom.length;
  const room = Int32Array.from(withRoom, (p) => Math.min(Math.floor(p.freeSlots), 0x7fffffff));
  const dh = withRoom.map((p) => hash64(p.did));
  let roomLeft = room.reduce((n, r) => n + r, 0);
  const leases: Lease[] = [];
  const byProvider = new Map<string, Lease[]>();
  const byOrder = new Map<string, Lease>();
  // per-order scratch, reused: the providers that may claim it and their weights
  const cand = new Int32Array(np);
  const ws = new Float64Array(np);
  const places = input.placeOf !== undefined ? new Map<string, Place>() : undefined;
  const me = input.placeOf !== undefined ? withRoom.findIndex((p) => p.did === input.placeOf) : -1;
  for (const { order: o, period, hash: oh } of leaseOrder(input.orders, input.now, leaseMs, frontPeriods)) {
    if (roomLeft === 0) break; // every slot is leased: no later order can be
    let n = 0;
    let mine = -1; // placeOf's slot in cand
    for (let j = 0; j < np; j++) {
      const p = withRoom[j]!;
      if ((o.designated !== undefined ? isDesignated(p, o.designated) : o.openBid) && eligible(p, o)) {
        if (j === me) mine = n;
        cand[n] = j;
        ws[n++] = mixWeight(oh, dh[j]!);
      }
    }
    if (places && o.openBid && o.designated === undefined) places.set(o.address, mine < 0 ? null : { ahead: aheadOf(mine, n, cand, ws, withRoom), n });
    if (n === 0) continue;
    const sorted = ws.slice(0, n).sort(); // ascending; rank r (0 = highest weight) sits at n-1-r
    let at: Map<number, number[]> | undefined; // weight → candidate slots, DID order within a weight (built on demand)
    for (let i = 0; i < n; i++) {
      const pos = n - 1 - ((period + i) % n);
      const w = sorted[pos]!;
      // equal weights rank by DID: find the group, and this position's place in it
      let hi = pos;
      while (hi + 1 < n && sorted[hi + 1] === w) hi++;
      let j: number;
      if (hi === pos && (pos === 0 || sorted[pos - 1] !== w) && !at) {
        let c = 0;
        while (ws[c] !== w) c++;
        j = cand[c]!;
      } else {
        if (!at) {
          at = new Map();
          for (let c = 0; c < n; c++) {
            const l = at.get(ws[c]!);
            if (l) l.push(cand[c]!);
            else at.set(ws[c]!, [cand[c]!]);
          }
          for (const l of at.values()) if (l.length > 1) l.sort((a, b) => byString(withRoom[a]!.did, withRoom[b]!.did));
        }
        j = at.get(w)![hi - pos]!;
      }
      if (room[j]! <= 0) continue;
      room[j]!--;
      roomLeft--;
      const did = withRoom[j]!.did;
      const from = o.announcedAt + period * leaseMs;
      const lease: Lease = { order: o.address, provider: did, period, from, until: from + leaseMs };
      leases.push(lease);
      byOrder.set(o.address, lease);
      let mine = byProvider.get(did);
      if (!mine) byProvider.set(did, (mine = []));
      mine.push(lease);
      break;
    }
  }
  return { leases, byProvider, byOrder, ...(places ? { places } : {}) };
}

/** How many of the n candidates rank ahead of candidate `mine` (a higher weight, or an equal one and a lower DID). */
function aheadOf(mine: number, n: number, cand: Int32Array, ws: Float64Array, providers: readonly LiveProvider[]): number {
  const w = ws[mine]!;
  const did = providers[cand[mine]!]!.did;
  let ahead = 0;
  for (let c = 0; c < n; c++) if (ws[c]! > w || (ws[c] === w && c !== mine && providers[cand[c]!]!.did < did)) ahead++;
  return ahead;
}

/**
 * `did`'s place in an open bid's ranking over `providers` (already normalised and with room, as computeLeases takes
 * them): the same as LeaseView.places gives, for an order the lease computation did not rank.
 */
export function placeIn(order: OpenOrder, providers: readonly LiveProvider[], did: string, eligible: (p: LiveProvider, o: OpenOrder) => boolean, didHash: (j: number) => readonly [number, number] = (j) => hash64(providers[j]!.did)): Place {
  if (!order.openBid || order.designated !== undefined) return null;
  const me = providers.findIndex((p) => p.did === did);
  if (me < 0 || !eligible(providers[me]!, order)) return null;
  const oh = hash64(order.address);
  const mine = mixWeight(oh, didHash(me));
  let n = 0;
  let ahead = 0;
  for (let j = 0; j < providers.length; j++) {
    const p = providers[j]!;
    if (j !== me && !eligible(p, order)) continue;
    n++;
    if (j === me) continue;
    const w = mixWeight(oh, didHash(j));
    if (w > mine || (w === mine && p.did < did)) ahead++;
  }
  return { ahead, n };
}

/**
 * May the provider at `place` in an open bid's ranking claim it by escalation at `now` (rule 6)? The rotation is by
 * the order's lease period (from announcedAt, as the leases); the width by its age counted from `since` (default
 * announcedAt; the node passes the later of announcedAt and when it first heard the order).
 */
export function escalatesTo(place: Place, order: OpenOrder, now: number, leaseMs: number = MATCH_LEASE_MS, graceMs: number = MATCH_ESCALATE_MS, since: number = order.announcedAt): boolean {
  if (place === null || !order.openBid || order.designated !== undefined) return false;
  const width = escalationWidth(Math.max(order.announcedAt, since), now, place.n, graceMs);
  if (width === 0) return false;
  if (width >= place.n) return true;
  const k = leasePeriod(order.announcedAt, now, leaseMs);
  return (((place.ahead - k) % place.n) + place.n) % place.n < width;
}

/**
 * How many providers of an open bid's rotated ranking may claim it at `now` besides its lease holder (rule 6): none in
 * its first grace, then 2^⌊a/graceMs⌋ at age a = now − announcedAt (an order announced after `now` is at age 0), at
 * most `n`. None in the first grace: the lease alone says who claims a new order, so a preferred provider whose slots
 * the capacity rule gave to older orders does not race the holder it was passed to.
 */
export function escalationWidth(announcedAt: number, now: number, n: number, graceMs: number = MATCH_ESCALATE_MS): number {
  const steps = now <= announcedAt ? 0 : Math.floor((now - announcedAt) / graceMs);
  if (n <= 0 || steps === 0) return 0;
  return steps >= 31 ? n : Math.min(n, 2 ** steps);
}

export interface EscalationInput {
  providers: readonly LiveProvider[];
  now: number;
  leaseMs?: number;
  /** Escalation grace (default MATCH_ESCALATE_MS). */
  graceMs?: number;
  /** As LeaseInput.eligible. */
  eligible?: (provider: LiveProvider, order: OpenOrder) => boolean;
  /**
   * When this node first heard the order (undefined: not known). The width counts the order's age from the later of
   * this and announcedAt, so an order that arrives already old (a slow buyer clock, gossip heard late, a sync) is not
   * open to 2^⌊age/G⌋ providers at once. The rotation still counts from announcedAt, as the leases.
   */
  heardAt?: (order: OpenOrder) => number | undefined;
  /**
   * Places of the provider `placeOf` in open bids' rankings, computed over the same providers (LeaseView.places of a
   * lease view for the same live set): may() for `placeOf` takes its place from here, and adds those it computes.
   */
  places?: Map<string, Place>;
  placeOf?: string;
}

export interface Escalation {
  /** The DIDs that may claim the open bid now by escalation, in rotated-ranking order ([] for a designated order). */
  claimers(order: OpenOrder): string[];
  /** May `did` claim the open bid now by escalation? (claimers(order).includes(did), without ranking every provider when it can be avoided.) */
  may(order: OpenOrder, did: string): boolean;
}

/**
 * Escalation of open bids' leases over one view of live providers at `now` (docs/matching.md, rule 6): the providers
 * that may claim an open bid `order` in claimMode `leased` besides its lease holder are, in lease period k at age
 * a ≥ G, the first min(n, 2^⌊a/G⌋) of its ranking rotated by k (ranked[k], ranked[k+1], … mod n), the ranking being leaseRanking's over
 * the same providers computeLeases considers (live, a free slot, eligible). Deterministic from the records and `now`
 * like the leases (with `heardAt`, the width also from when this node heard the order); it does not change them
 * (heldByProvider, probes and plans count the leases only). Designated orders do not escalate: only their provider
 * may claim them.
 */
export function escalation(input: EscalationInput): Escalation {
  const leaseMs = input.leaseMs ?? MATCH_LEASE_MS;
  const graceMs = input.graceMs ?? MATCH_ESCALATE_MS;
  if (!Number.isSafeInteger(graceMs) || graceMs <= 0) throw new RangeError(`graceMs must be a positive integer, got ${graceMs}`);
  const eligible = input.eligible ?? servesWorkload;
  let withRoom: LiveProvider[] | undefined; // normalised on first need (a tick whose open bids are all in their first grace needs none)
  let index: Map<string, number> | undefined;
  const dh: Array<[number, number] | undefined> = [];
  const providers = (): LiveProvider[] => {
    if (!withRoom) {
      withRoom = normaliseProviders(input.providers, input.now).filter((p) => p.freeSlots >= 1);
      index = new Map(withRoom.map((p, j) => [p.did, j]));
    }
    return withRoom;
  };
  const hashOf = (j: number): [number, number] => dh[j] ?? (dh[j] = hash64(providers()[j]!.did));
  const since = (order: OpenOrder): number => Math.max(order.announcedAt, input.heardAt?.(order) ?? order.announcedAt);
  return {
    claimers(order) {
      if (!order.openBid || order.designated !== undefined) return [];
      const ps = providers();
      const ranked = leaseRanking(order, ps, eligible, (did) => hashOf(index!.get(did)!));
      const n = ranked.length;
      const k = leasePeriod(order.announcedAt, input.now, leaseMs);
      const width = escalationWidth(since(order), input.now, n, graceMs);
      const out: string[] = [];
      for (let i = 0; i < width; i++) out.push(ranked[(k + i) % n]!.did);
      return out;
    },
    may(order, did) {
      if (!order.openBid || order.designated !== undefined) return false;
      const from = since(order);
      // in its first grace: the lease alone (no ranking to compute)
      if (escalationWidth(from, input.now, Number.MAX_SAFE_INTEGER, graceMs) === 0) return false;
      const kept = did === input.placeOf ? input.places : undefined;
      let place = kept?.get(order.address);
      if (place === undefined) {
        const ps = providers();
        const me = index!.get(did);
        if (me === undefined || !eligible(ps[me]!, order)) return false;
        // escalated to every provider that may claim it, whatever its rank: no ranking to compute
        if (escalationWidth(from, input.now, ps.length, graceMs) >= ps.length) return true;
        place = placeIn(order, ps, did, eligible, hashOf);
        kept?.set(order.address, place);
      }
      return escalatesTo(place, order, input.now, leaseMs, graceMs, from);
    },
  };
}

/** The leases one provider holds at `now` (what its poll would return). */
export function leasesOf(provider: string, input: LeaseInput): Lease[] {
  return computeLeases(input).byProvider.get(provider) ?? [];
}
