/**
 * The open orders a node has heard (docs/matching.md "Open orders, claims and
 * leases"): jobs carrying `order`, from gossip, until they are decided (the
 * buyer's selection is seen, also before its job: `selected`) or past their deadline. Every node keeps one, so
 * every node computes the same leases from the same presence and orders
 * (computeLeases, src/matching/leases.ts) and the probe and batch planner
 * count leases held and designated orders. Memory only and bounded: past
 * `maxOrders` an order of the signer holding the most is dropped, the one whose
 * deadline is furthest (#evictee).
 *
 * Who may hold an order's lease: a live provider that would be a candidate
 * for it (src/matching/candidates.ts: live for the workload, the eligibility
 * gates, an ask within the bid, a box key for a sealed input, the designated
 * provider when it names one). Deterministic: same records, same answer.
 */
import type { Opened } from '../records/envelope.js';
import type { Advert, Job } from '../records/kinds.js';
import { candidates, orderFromJob } from './candidates.js';
import { computeLeases, escalation, leasePeriod, type Escalation, type LeaseView, type OpenOrder, type Place } from './leases.js';
import { MATCH_FRONT_PERIODS, MATCH_LEASE_MS, type LiveProvider } from './types.js';
import { ExpiringKeys } from '../util/expiring.js';

/** Which leases leasesHeld counts: every lease, or those on open bids only (the batch planner's). */
export type HeldLeases = 'all' | 'open-bids';

export interface OpenOrdersOptions {
  /** Orders held at most (default 10 000). */
  maxOrders: number;
  /** Lease length, ms (default MATCH_LEASE_MS, 20 s). */
  leaseMs?: number;
  skewMs?: number;
}

/** Eligibility answers kept at most, over every open order (OpenOrders #remember). */
const MEMO_MAX = 1_000_000;

/**
 * How long a buyer's selection heard before its job is remembered (OpenOrders.selected), ms: the network's record
 * cache serves a selection for an hour after it took it (RECORD_CACHE_DEFAULTS.ttlMs), so a sync can bring one that
 * old, and its job may come from another peer in a later round.
 */
export const DECIDED_EARLY_MS = 3_600_000;
/** How long an order dropped for room is refused when it comes again (a sync every 30 s brings it back). */
export const EVICTED_MEMORY_MS = 600_000;

export class OpenOrders {
  readonly opts: OpenOrdersOptions;
  readonly #jobs = new Map<string, { job: Opened<Job>; order: OpenOrder; heardAt: number }>();
  /**
   * Orders decided (a selection seen, or the buyer's node said so to a claim): not re-added when the job is heard
   * again. Each until its order's deadline (after it `add` refuses the job anyway), at most 4 × `maxOrders`: lapsed
   * entries go first, then the oldest (ExpiringKeys). Before, the set was cleared wholesale past its bound, and every
   * decided order still live came back as open (a buyer posting and deciding orders could force it).
   */
  readonly #decided: ExpiringKeys;
  /**
   * Selections heard before their job (`job signer` → until when): the job is not known yet, so whether the signer is
   * its buyer cannot be checked; `add` does it when the job comes. At most `maxOrders` entries, lapsed and then oldest
   * dropped first, each for DECIDED_EARLY_MS.
   */
  readonly #decidedEarly: ExpiringKeys;
  /** Orders dropped for room (address → refused until), so a sync that brings them back costs no scan nor new leases. */
  readonly #evicted: ExpiringKeys;
  /**
   * The latest lease computation: it stands for every `now` in [from, until) while the open orders (version) and the
   * live providers (by content, sameProviders) are unchanged (#validUntil).
   */
  #cache: { from: number; until: number; live: readonly LiveProvider[]; version: number; view: LeaseView; placeOf?: string; places?: Map<string, Place> } | undefined;
  /** Lease computations run (a cache miss each; for tests and diagnostics). */
  #computed = 0;
  /**
   * eligible() by order, then by provider (advert and workloads, #providerKey): the answer depends on nothing else once
   * the provider is live. An order's answers go when the order leaves the set (decided, past its deadline, dropped),
   * so what is kept is what the open orders can still ask: see #remember for the bounds.
   */
  readonly #memo = new Map<string, Map<string, boolean>>();
  /** Answers kept in #memo, over every order. */
  #memoSize = 0;
  /** How many live providers the latest lease computation was given (sizes an order's share of the memo). */
  #liveSeen = 0;
  /**
   * One key string per provider's advert and workloads, shared by every order's entry for it (not one copy per entry).
   * By the advert object, which the market's advert store keeps while it is current (a LiveProvider is built anew at
   * each presence read), then by workloads (from the presence, which can change under one advert).
   */
  readonly #providerKeys = new WeakMap<Opened<Advert>, Map<string, string>>();
  /** #providerKey's answer per LiveProvider object (with the advert it was built from), so the workloads are joined once per provider, not per pair. */
  readonly #keyOf = new WeakMap<LiveProvider, { advert: Opened<Advert>; key: string }>();
  #version = 0;

  constructor(opts: Partial<OpenOrdersOptions> = {}) {
    this.opts = { maxOrders: 10_000, ...opts };
    this.#decided = new ExpiringKeys(4 * this.opts.maxOrders);
    this.#decidedEarly = new ExpiringKeys(this.opts.maxOrders);
    this.#evicted = new ExpiringKeys(this.opts.maxOrders);
  }

  get size(): number {
    return this.#jobs.size;
  }

  /** Keep an open order (a job with `order`) until it is decided or its deadline passes. Returns whether it is new. */
  add(job: Opened<Job>, now: number): boolean {
    const o = job.record.order;
    if (!o || job.record.deadline <= now || this.#jobs.has(job.address) || this.#decided.has(job.address, now)) return false;
    if (this.#decidedEarly.has(`${job.address} ${job.signer}`, now)) {
      // its buyer's selection came first (gossip out of order, or a sync after a restart)
      this.#decidedEarly.delete(`${job.address} ${job.signer}`);
      this.decided(job.address, now, job.record.deadline);
      return false;
    }
    // dropped for room a while ago and brought back by a sync: refused without a scan (the set would drop it again)
    if (this.#evicted.has(job.address, now)) return false;
    this.#evicted.delete(job.address);
    this.#jobs.set(job.address, { job, order: { address: job.address, buyer: job.signer, announcedAt: job.record.announcedAt, workload: job.record.workload, ...(o.designated ? { designated: o.designated } : {}), openBid: o.designated === undefined }, heardAt: now });
    if (this.#jobs.size > this.opts.maxOrders) {
      const out = this.#evictee();
      this.#rememberEvicted(out, this.#jobs.get(out)!.job.record.deadline, now);
      if (out === job.address) {
        // the set is as it was: no new version (the lease cache stands)
        this.#jobs.delete(job.address);
        return false;
      }
      this.#drop(out);
    }
    this.#version++;
    return true;
  }

  /** An order dropped for room, refused again until its deadline or EVICTED_MEMORY_MS (bounded as the set). */
  #rememberEvicted(address: string, deadline: number, now: number): void {
    this.#evicted.set(address, Math.min(deadline, now + EVICTED_MEMORY_MS), now);
  }

  /**
   * The buyer decided the order (its selection names a winning claim, or its node refused a claim ORDER_UNKNOWN): it
   * leaves the open set and is not taken again until its deadline — `deadline`, else the held job's, else (neither
   * known) DECIDED_EARLY_MS from `now`.
   */
  decided(job: string, now: number, deadline?: number): void {
    this.#decided.set(job, deadline ?? this.#jobs.get(job)?.job.record.deadline ?? now + DECIDED_EARLY_MS, now);
    this.#drop(job);
  }

  /**
   * A first-claim selection for `job` signed by `signer` was heard. Only the order's buyer decides it: when the job is
   * held, the order leaves the open set if `signer` is its buyer; when it is not held yet, the selection is remembered
   * (DECIDED_EARLY_MS, bounded) and the job is not taken when it comes from that buyer. Returns whether an open
   * order left the set.
   */
  selected(job: string, signer: string, now: number): boolean {
    const held = this.#jobs.get(job);
    if (held) {
      if (held.job.signer !== signer) return false;
      this.decided(job, now);
      return true;
    }
    if (this.#decided.has(job, now)) return false;
    this.#decidedEarly.set(`${job} ${signer}`, now + DECIDED_EARLY_MS, now);
    return false;
  }

  /** Answers kept for eligible(), over every open order (for tests and diagnostics). */
  get memoSize(): number {
    return this.#memoSize;
  }

  /** An order leaves the open set, and its eligibility answers with it. */
  #drop(job: string): void {
    if (this.#jobs.delete(job)) this.#version++;
    const m = this.#memo.get(job);
    if (m) {
      this.#memoSize -= m.size;
      this.#memo.delete(job);
    }
  }

  job(address: string): Opened<Job> | undefined {
    return this.#jobs.get(address)?.job;
  }

  /** Orders still open at `now`, oldest first (announcedAt, then address). */
  open(now: number): Array<{ job: Opened<Job>; order: OpenOrder }> {
    this.prune(now);
    return [...this.#jobs.values()].sort((a, b) => a.order.announcedAt - b.order.announcedAt || (a.order.address < b.order.address ? -1 : a.order.address > b.order.address ? 1 : 0));
  }

  prune(now: number): void {
    for (const [k, v] of this.#jobs) if (v.job.record.deadline <= now) this.#drop(k);
  }

  /**
   * The order to drop when the set is over its bound: of the signer holding the most orders, the one whose deadline is
   * furthest (then the highest address). Not the nearest deadline: that is always a genuine short-lived order, never
   * a flood of orders whose deadline is a year away. Equal counts (one order per key) go by the furthest deadline.
   */
  #evictee(): string {
    const count = new Map<string, number>();
    for (const v of this.#jobs.values()) count.set(v.job.signer, (count.get(v.job.signer) ?? 0) + 1);
    let out: { k: string; n: number; deadline: number } | undefined;
    for (const [k, v] of this.#jobs) {
      const n = count.get(v.job.signer)!;
      const deadline = v.job.record.deadline;
      if (!out || n > out.n || (n === out.n && (deadline > out.deadline || (deadline === out.deadline && k > out.k)))) out = { k, n, deadline };
    }
    return out!.k;
  }

  /** May `p` claim this order: would it be a candidate for it (without counting what it holds)? */
  eligible(p: LiveProvider, o: OpenOrder, now: number): boolean {
    const e = this.#jobs.get(o.address);
    if (!e) return false;
    if (p.liveUntil <= now || p.advert.record.expiresAt <= now) return false;
    const key = this.#providerKey(p);
    const known = this.#memo.get(o.address)?.get(key);
    if (known !== undefined) return known;
    const ok = candidates({ order: orderFromJob(e.job, o.designated), live: [p], now, ...(this.opts.skewMs !== undefined ? { skewMs: this.opts.skewMs } : {}) }).candidates.length === 1;
    this.#remember(o.address, key, ok);
    return ok;
  }

  #providerKey(p: LiveProvider): string {
    // a lease computation asks about each provider once per order: its key is built once per LiveProvider object
    const known = this.#keyOf.get(p);
    if (known !== undefined && known.advert === p.advert) return known.key;
    const key = this.#advertKey(p);
    this.#keyOf.set(p, { advert: p.advert, key });
    return key;
  }

  #advertKey(p: LiveProvider): string {
    const w = p.workloads.join(',');
    let byWorkloads = this.#providerKeys.get(p.advert);
    if (!byWorkloads) this.#providerKeys.set(p.advert, (byWorkloads = new Map()));
    let k = byWorkloads.get(w);
    if (k === undefined) {
      if (byWorkloads.size >= 16) byWorkloads.clear(); // a provider cycling its workloads under one advert
      byWorkloads.set(w, (k = `${p.advert.address} ${w}`));
    }
    return k;
  }

  /**
   * Keep one answer. A lease computation asks each open order about each live provider with a free slot, once: the
   * working set is (open orders) × (live providers), and each order's answers are dropped with it (#drop). What else
   * grows is an order's answers for providers' earlier adverts or workloads (a provider re-advertises, so its key
   * changes): an order holding twice the latest computation's live providers, plus 64, starts again (one
   * computation's misses for that order, then hits). So the memo holds at most about 2 × open orders × live
   * providers. Past MEMO_MAX answers over every order (1,000 orders × 1,000 providers reach it) it starts again too.
   * An answer costs about 30 bytes (a map slot: the key strings are shared per provider, the order's is its own
   * address; measured at 1,000 × 1,000), so some 30 MB at most; the flat key of advert, workloads and order it
   * replaced cost about 190 bytes an answer.
   */
  #remember(order: string, key: string, ok: boolean): void {
    if (this.#memoSize >= MEMO_MAX) {
      this.#memo.clear();
      this.#memoSize = 0;
    }
    let m = this.#memo.get(order);
    if (!m) this.#memo.set(order, (m = new Map()));
    else if (m.size >= 2 * this.#liveSeen + 64) {
      this.#memoSize -= m.size;
      m.clear();
    }
    m.set(key, ok);
    this.#memoSize++;
  }

  /** Lease computations run so far (each a cache miss in leases()). */
  get computed(): number {
    return this.#computed;
  }

  /**
   * Every lease at `now` over the live providers. Computed once and kept while the open orders and the live providers
   * (by content: a presence view builds a new list at every read) are the same and `now` is before the first time the
   * answer could change (#validUntil); then the same answer comes back for any `now` in between. With `placeOf` (the
   * claimer's own DID), a computation this call makes records that provider's places too (LeaseView.places, for
   * escalation); one made for another caller does not.
   */
  leases(now: number, live: readonly LiveProvider[], placeOf?: string): LeaseView {
    this.prune(now);
    const c = this.#cache;
    if (c && c.version === this.#version && c.from <= now && now < c.until && (c.live === live || sameProviders(c.live, live))) return c.view;
    this.#liveSeen = live.length;
    this.#computed++;
    const orders = [...this.#jobs.values()].map((x) => x.order);
    // places only for the call that names a DID (the claimer's): a probe's, the batch planner's or heldByProvider's
    // computation does not pay for them, and the claimer ranks an open bid such a view did not place once, on demand,
    // keeping it with the view (escalation)
    const view = computeLeases({ providers: live, orders, now, ...(this.opts.leaseMs ? { leaseMs: this.opts.leaseMs } : {}), eligible: (p, o) => this.eligible(p, o, now), ...(placeOf !== undefined ? { placeOf } : {}) });
    this.#cache = { from: now, until: Math.min(validUntil(view, live, now), rankingChanges(orders, now, this.opts.leaseMs ?? MATCH_LEASE_MS)), live, version: this.#version, view, ...(placeOf !== undefined ? { placeOf, places: view.places ?? new Map() } : {}) };
    return view;
  }

  /**
   * Escalation of the open bids' leases at `now` over the live providers (src/matching/leases.ts `escalation`, rule 6):
   * who may claim an open bid in claimMode `leased` besides its lease holder. Uses the same eligibility answers as the
   * leases; not counted in leasesHeld (it reserves nothing). An order's width counts its age from when this node first
   * heard it (add), when that is later than its announcedAt: an order that arrives already old is not open to every
   * provider at once. With `placeOf` (the node's own DID), may() for it takes its place in each open bid's ranking
   * from the lease view for the same live set (recorded when the leases were computed, or computed once and kept with
   * it), so a claimer tick costs a lookup per open bid, not a pass over the live providers.
   */
  escalation(now: number, live: readonly LiveProvider[], placeOf?: string): Escalation {
    let places: Map<string, Place> | undefined;
    if (placeOf !== undefined) {
      this.leases(now, live, placeOf); // the lease view for this live set, and with it the places
      const c = this.#cache!;
      if (c.placeOf !== placeOf || !c.places) {
        c.placeOf = placeOf;
        c.places = new Map();
      }
      places = c.places;
    }
    return escalation({
      providers: live,
      now,
      ...(this.opts.leaseMs ? { leaseMs: this.opts.leaseMs } : {}),
      eligible: (p, o) => this.eligible(p, o, now),
      heardAt: (o) => this.#jobs.get(o.address)?.heardAt,
      ...(places ? { places, placeOf: placeOf! } : {}),
    });
  }

  /**
   * Leases held per provider DID at `now`, on orders still in their first MATCH_FRONT_PERIODS lease periods. `all`
   * (the default): on open bids and on designated orders — what candidates, the probe and rankAhead count ("a free
   * slot after counting the jobs they currently lease"). `open-bids`: leases on open bids only — what the batch
   * planner counts, since it subtracts the orders designated to a provider separately (designatedTo) and would
   * otherwise count a leased designated order twice.
   *
   * A lease on an order past its front periods is not counted: such an order gets only the room no order in its front
   * periods wants (leaseOrder), so a new order takes that slot ahead of it, and the order — nobody claimed it through
   * three periods — may never be claimed (a buyer that never answers). Counted, orders designated to a provider and
   * never answered kept it "full" on every node until their deadline.
   */
  leasesHeld(now: number, live: readonly LiveProvider[], which: HeldLeases = 'all'): Map<string, number> {
    const out = new Map<string, number>();
    for (const [did, ls] of this.leases(now, live).byProvider) {
      let n = 0;
      for (const l of ls) if (l.period < MATCH_FRONT_PERIODS && (which === 'all' || this.#jobs.get(l.order)?.order.openBid)) n++;
      if (n > 0) out.set(did, n);
    }
    return out;
  }

  /**
   * Open orders designated to `did` that are still in their first MATCH_FRONT_PERIODS lease periods: one its provider
   * has not claimed by then (its buyer never answers, or the provider gave up on it) no longer counts against it.
   */
  designatedTo(did: string, now: number): number {
    this.prune(now);
    const leaseMs = this.opts.leaseMs ?? MATCH_LEASE_MS;
    let n = 0;
    for (const v of this.#jobs.values()) if (v.order.designated === did && leasePeriod(v.order.announcedAt, now, leaseMs) < MATCH_FRONT_PERIODS) n++;
    return n;
  }
}

/**
 * Until when a lease view computed at `now` stands, with the same orders and providers: the first time a lease's
 * period ends (its order moves on in its ranking), or a provider stops being live or its advert expires (it leaves the
 * computation, or stops being eligible). Nothing else in computeLeases reads `now`: an order that holds
 * no lease at `now` still holds none at a later `now` while every order before it keeps its lease (its candidates had
 * no room, or it had none), so its own period does not matter. An order past its deadline leaves the set, which
 * changes the version.
 */
function validUntil(view: LeaseView, live: readonly LiveProvider[], now: number): number {
  let until = Infinity;
  for (const l of view.leases) until = Math.min(until, l.until);
  for (const p of live) {
    if (p.liveUntil > now) until = Math.min(until, p.liveUntil);
    if (p.advert.record.expiresAt > now) until = Math.min(until, p.advert.record.expiresAt);
  }
  return until;
}

/**
 * The first time after `now` the lease order itself changes (leaseOrder): an order leaving its front periods goes
 * behind the others, and an order past them is ranked by a weight of its period, which changes at each of its period
 * boundaries. An order in its front periods keeps its place by age; its own period changing moves only its own
 * provider ranking, which matters only if it holds a lease (that lease's `until`, in validUntil).
 */
function rankingChanges(orders: readonly OpenOrder[], now: number, leaseMs: number): number {
  let until = Infinity;
  for (const o of orders) {
    const period = leasePeriod(o.announcedAt, now, leaseMs);
    const next = period < MATCH_FRONT_PERIODS ? o.announcedAt + MATCH_FRONT_PERIODS * leaseMs : o.announcedAt + (period + 1) * leaseMs;
    if (next > now) until = Math.min(until, next);
  }
  return until;
}

/** The same live providers, entry by entry (the same presence and advert records, workloads, slots and window). */
function sameProviders(a: readonly LiveProvider[], b: readonly LiveProvider[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x.did !== y.did || x.presence !== y.presence || x.advert !== y.advert || x.freeSlots !== y.freeSlots || x.liveUntil !== y.liveUntil || x.workloads.length !== y.workloads.length) return false;
    for (let k = 0; k < x.workloads.length; k++) if (x.workloads[k] !== y.workloads[k]) return false;
  }
  return true;
}
