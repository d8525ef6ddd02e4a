/**
 * The open orders a node has heard (docs/matching.md "Open orders, claims and
 * leases"): jobs carrying `order`, from gossip, until they are decided (the
 * buyer's selection is seen) or past their deadline. Every node keeps one, so
 * every node computes the same leases from the same presence and orders
 * (computeLeases, src/matching/leases.ts) and the probe and batch planner
 * count leases held and designated orders. Memory only and bounded: past
 * `maxOrders` the order whose deadline comes first is dropped.
 *
 * Who may hold an order's lease: a live provider that would be a candidate
 * for it (src/matching/candidates.ts: live for the workload, the eligibility
 * gates, an ask within the bid, a box key for a sealed input, the designated
 * provider when it names one). Deterministic: same records, same answer.
 */
import type { Opened } from '../records/envelope.js';
import type { Job } from '../records/kinds.js';
import { candidates, orderFromJob } from './candidates.js';
import { computeLeases, type LeaseView, type OpenOrder } from './leases.js';
import type { LiveProvider } from './types.js';

export interface OpenOrdersOptions {
  /** Orders held at most (default 10 000). */
  maxOrders: number;
  /** Lease length, ms (default MATCH_LEASE_MS, 20 s). */
  leaseMs?: number;
  skewMs?: number;
}

export class OpenOrders {
  readonly opts: OpenOrdersOptions;
  readonly #jobs = new Map<string, { job: Opened<Job>; order: OpenOrder }>();
  /** Orders decided (a selection seen): not re-added when the job is heard again. */
  readonly #decided = new Set<string>();
  #cache: { now: number; live: readonly LiveProvider[]; version: number; view: LeaseView } | undefined;
  /** eligible() by (advert, workloads, order): the answer depends on nothing else once the provider is live. */
  readonly #memo = new Map<string, boolean>();
  #version = 0;

  constructor(opts: Partial<OpenOrdersOptions> = {}) {
    this.opts = { maxOrders: 10_000, ...opts };
  }

  get size(): number {
    return this.#jobs.size;
  }

  /** Keep an open order (a job with `order`) until it is decided or its deadline passes. Returns whether it is new. */
  add(job: Opened<Job>, now: number): boolean {
    const o = job.record.order;
    if (!o || job.record.deadline <= now || this.#jobs.has(job.address) || this.#decided.has(job.address)) return false;
    if (this.#jobs.size >= this.opts.maxOrders) this.#dropFirstDeadline();
    this.#jobs.set(job.address, { job, order: { address: job.address, buyer: job.signer, announcedAt: job.record.announcedAt, workload: job.record.workload, ...(o.designated ? { designated: o.designated } : {}), openBid: o.designated === undefined } });
    this.#version++;
    return true;
  }

  /** The buyer decided the order (its selection names a winning claim): it leaves the open set. */
  decided(job: string): void {
    this.#decided.add(job);
    if (this.#decided.size > 4 * this.opts.maxOrders) this.#decided.clear();
    if (this.#jobs.delete(job)) this.#version++;
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
    for (const [k, v] of this.#jobs) {
      if (v.job.record.deadline <= now) {
        this.#jobs.delete(k);
        this.#version++;
      }
    }
  }

  #dropFirstDeadline(): void {
    let first: string | undefined;
    let at = Infinity;
    for (const [k, v] of this.#jobs) {
      if (v.job.record.deadline < at) {
        first = k;
        at = v.job.record.deadline;
      }
    }
    if (first) this.#jobs.delete(first);
  }

  /** May `p` claim this order: would it be a candidate for it (without counting what it holds)? */
  eligible(p: LiveProvider, o: OpenOrder, now: number): boolean {
    const e = this.#jobs.get(o.address);
    if (!e) return false;
    if (p.liveUntil <= now || p.advert.record.expiresAt <= now) return false;
    const key = `${p.advert.address} ${p.workloads.join(',')} ${o.address}`;
    const known = this.#memo.get(key);
    if (known !== undefined) return known;
    if (this.#memo.size >= 1_000_000) this.#memo.clear();
    const ok = candidates({ order: orderFromJob(e.job, o.designated), live: [p], now, ...(this.opts.skewMs !== undefined ? { skewMs: this.opts.skewMs } : {}) }).candidates.length === 1;
    this.#memo.set(key, ok);
    return ok;
  }

  /** Every lease at `now` over the live providers (computed once per `now` and view). */
  leases(now: number, live: readonly LiveProvider[]): LeaseView {
    this.prune(now);
    const c = this.#cache;
    if (c && c.now === now && c.live === live && c.version === this.#version) return c.view;
    const view = computeLeases({ providers: live, orders: [...this.#jobs.values()].map((x) => x.order), now, ...(this.opts.leaseMs ? { leaseMs: this.opts.leaseMs } : {}), eligible: (p, o) => this.eligible(p, o, now) });
    this.#cache = { now, live, version: this.#version, view };
    return view;
  }

  /**
   * Leases on open bids per provider DID at `now` (what the probe and the
   * planner count as held; designated orders are counted by designatedTo, so
   * a plan does not subtract them twice).
   */
  leasesHeld(now: number, live: readonly LiveProvider[]): Map<string, number> {
    const out = new Map<string, number>();
    for (const [did, ls] of this.leases(now, live).byProvider) {
      const n = ls.filter((l) => this.#jobs.get(l.order)?.order.openBid).length;
      if (n > 0) out.set(did, n);
    }
    return out;
  }

  /** Open orders designated to `did`. */
  designatedTo(did: string, now: number): number {
    this.prune(now);
    let n = 0;
    for (const v of this.#jobs.values()) if (v.order.designated === did) n++;
    return n;
  }
}
