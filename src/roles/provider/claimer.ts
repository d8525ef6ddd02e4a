/**
 * The provider's side of open orders (docs/matching.md "Open orders, claims
 * and leases"; spec/matching-and-leases.md "Leases"): from the node's open
 * orders (src/matching/open-orders.ts) and live view it computes the leases
 * every node would compute (computeLeases) on each change and on a timer, and
 * claims — over `/c0mpute/claim/1`, straight to the buyer's node — the orders
 * it holds a lease on and the orders designated to it, oldest first, while it
 * has a free slot, then the open bids whose lease escalated to it (an open bid
 * still open past MATCH_ESCALATE_MS may be claimed by more providers of its
 * rotated ranking, doubling each grace: src/matching/leases.ts `escalation`),
 * so keys that hold leases and never claim stall an order only for a while.
 * Mode `any` claims every order it may claim, leased or not (the first valid
 * claim wins). A lease it holds on an
 * order it already claimed without a winner would waste a slot until the period
 * ends: an open bid nobody holds a lease on is claimed in its place (this changes
 * only what this provider claims, not the leases every node computes).
 *
 * A claim is only sent when this provider would be a candidate for the order
 * (its own advert passes the eligibility gates, it prices the workload in the
 * order's currency within the bid, it has a box key for a sealed input, the
 * input is within its limit and the workload is configured). Its price is its
 * ask for the order (src/matching/candidates.ts askFor), at most the bid.
 *
 * Free slots count the claims in flight (within their answer window) and the
 * claims won whose work has not started yet (`pending`), so a provider never
 * claims more than it can run (but for a win answered past its window).
 * Each order is claimed at most once; an answer (won, refused) or an error
 * ends that claim. Refusals are kept (the buyer's signed word); a refusal, or
 * `ORDER_UNKNOWN` (the buyer's node takes no claims on the job), takes the
 * order out of the node's open set, and so does `NODE_CLOSING` (the buyer's node
 * is stopping: its run is broken off, nobody will win the order). The exception
 * is an error that says the buyer did not judge the claim — its node was
 * rate-limiting us (`NET_RATE_LIMITED`), its claim inbox was full, or the
 * stream failed before an answer — which a busy provider hits when many orders
 * are designated to it at once (a batch run): the same signed claim is sent
 * again after 1 s, doubling to 8 s, at most 6 times in all, while the order is
 * open and we still hold it (a buyer whose answer was lost answers the winning
 * claim again with the same selection, src/roles/buyer-orders.ts).
 *
 * No buyer may take every slot, however many keys it makes:
 * - one buyer holds at most `maxPerBuyer` claims at once (claimsPerBuyer: half
 *   the slots, rounded up), and every buyer this provider has no completed
 *   dealings with (`knownBuyer`: it never signed a receipt for it) counts as one
 *   and the same buyer for that bound — a buyer DID costs nothing to make;
 * - a claim not answered within CLAIM_ANSWER_WINDOW_MS stops holding its slot
 *   (its stream stays open until its deadline; a late `won` takes a slot again),
 *   and its buyer counts as not answering from then;
 * - a buyer whose claim got no answer (or who won a claim and never started
 *   it) has all its orders skipped for 1 s, doubling with each failure in a row
 *   up to BUYER_BACKOFF_MAX_MS, and comes after every other buyer when slots
 *   are short; any answer from it clears both.
 * Before, a buyer whose node took claim streams and never answered, with a few
 * orders designated to us under a few keys, held every slot (each claim 15 s,
 * six times), and an honest order designated to us was never claimed.
 */
import { C0Error } from '../../errors.js';
import { seal, type Opened } from '../../records/envelope.js';
import { T, type Advert, type Claim, type Job } from '../../records/kinds.js';
import type { Ed25519Signer } from '../../records/ed25519.js';
import { monotonicClock, type Clock } from '../../util/clock.js';
import type { Logger } from '../../util/log.js';
import { askFor, isDesignated, orderFromJob } from '../../matching/candidates.js';
import { cmpAmount } from '../../market/amount.js';
import { checkEligibility } from '../../market/eligibility.js';
import type { OpenOrders } from '../../matching/open-orders.js';
import { MATCH_FRONT_PERIODS, MATCH_LEASE_MS, type LiveProvider } from '../../matching/types.js';
import { leasePeriod } from '../../matching/leases.js';
import { CLAIM_ERR, type ClaimOutcome } from '../claim-protocol.js';
import { ExpiringKeys } from '../../util/expiring.js';

export type ClaimMode = 'leased' | 'any';

/** Sends of one claim at most (the first and its resends). */
export const MAX_CLAIM_ATTEMPTS = 6;

/** The longest a buyer whose claims go unanswered is left alone, ms (its back-off doubles from 1 s up to this). */
export const BUYER_BACKOFF_MAX_MS = 60_000;

/**
 * How long a claim in flight holds its slot without an answer, ms. A buyer's node judges a claim as it arrives (a
 * signature check and a comparison: tens of ms after the stream opens); one that has not answered in this time is
 * slow or silent, and its claim no longer keeps the slot from other buyers' orders.
 */
export const CLAIM_ANSWER_WINDOW_MS = 3_000;

/** Claimed orders remembered at most (each until its order's deadline; past this the oldest live entry goes). */
export const MAX_CLAIMED = 100_000;

/** The key every buyer without completed dealings shares for the per-buyer bound (not a DID). */
const UNKNOWN_BUYERS = 'unknown buyers';

/** Buyers whose back-off is remembered at most (the oldest goes first). */
const MAX_BACKED_OFF = 10_000;

/**
 * Claims one buyer may hold at once at a provider with `slots` slots (in flight, or won and not started): half its
 * slots, rounded up, so a buyer that takes claim streams and never answers holds at most that many, and the rest stay
 * free for every other buyer (a one-slot provider: 1).
 */
export function claimsPerBuyer(slots: number): number {
  return Math.max(1, Math.ceil(slots / 2));
}

/** What an error frame that judged a claim says, in the provider's log (the buyer's node answered it). */
const ANSWERED: Readonly<Record<string, string>> = {
  [CLAIM_ERR.ORDER_UNKNOWN]: 'the buyer takes no claims on this job (its run ended, or it is no order there); the order is left alone',
  [CLAIM_ERR.CLOSING]: 'the buyer’s node is stopping; the order is left alone',
};

/** The buyer did not judge the claim: rate-limited or another network-level refusal (`NET_*`), inbox full, or no answer frame at all (a failed stream). */
function notJudged(e: unknown): boolean {
  if (!(e instanceof C0Error)) return true;
  return e.code.startsWith('NET_') || e.code === 'CLAIM_INBOX_FULL';
}

export interface ClaimerDeps {
  did: string;
  signer: Ed25519Signer;
  /** The wall clock: compared with orders' deadlines, adverts' expiry, and stamped on claims. */
  clock: Clock;
  /**
   * The monotonic clock (default `monotonicClock`) for what this node times for itself: a buyer's back-off, the wait
   * before a claim is sent again, the answer window. A wall-clock step leaves them as long as they are.
   */
  monoClock?: Clock;
  log: Logger;
  orders: OpenOrders;
  /** This provider's live advert. */
  advert: () => Opened<Advert> | undefined;
  /** Slots not running work now (configured slots − running jobs). */
  freeSlots: () => number;
  /** Is this job running here now? */
  runs: (job: string) => boolean;
  /** The live view (presence + adverts). */
  live: (now: number) => LiveProvider[];
  /** Can this provider run the job at all (workload configured, input within its limit)? */
  canRun: (job: Opened<Job>) => boolean;
  /** Send a claim (with our advert) to the job's buyer and read its answer (throws C0Error on an error frame or a failed stream). */
  send: (job: Opened<Job>, claim: Opened<Claim>, advert: Opened<Advert>) => Promise<ClaimOutcome>;
  /** Every claim's end (for logs, records and tests). */
  onOutcome?: (job: string, claim: Opened<Claim>, outcome: ClaimOutcome | { error: string }) => void;
  mode?: ClaimMode;
  /**
   * Claims one buyer may hold at once, in flight or won and not started (the daemon: claimsPerBuyer(slots); default
   * unbounded). Buyers `knownBuyer` does not know share it as one.
   */
  maxPerBuyer?: number;
  /** A buyer this provider has completed dealings with (the daemon: it signed a receipt for it; default: none). */
  knownBuyer?: (did: string) => boolean;
  /**
   * A buyer this provider gives nothing to for now: its exec input lapsed here (the daemon: QuoteBudget.paused, the
   * pause its auctions get, `buyer-lapsed`; default: none). Its orders, open or designated to us, are not claimed
   * meanwhile (before, a buyer paused for 32 min still had its orders claimed: review s40 F4).
   */
  paused?: (did: string) => boolean;
  /** Claimed orders remembered at most (default MAX_CLAIMED). */
  maxClaimed?: number;
  /** How long an unanswered claim holds its slot, ms (default CLAIM_ANSWER_WINDOW_MS). */
  answerWindowMs?: number;
  /** How often leases are recomputed without a change while orders are open, ms (default 500). */
  tickMs?: number;
  /** How often the claimer looks when no order is open and no claim waits to be resent, ms (default 5000; a new order wakes it at once). */
  idleTickMs?: number;
  skewMs?: number;
}

export class Claimer {
  /**
   * Orders claimed (each at most once), each remembered until its order's deadline (an order past it is not open), at
   * most `maxClaimed`: lapsed entries go first, then the oldest (ExpiringKeys). Before, the set was cleared wholesale
   * past 100,000, and every order claimed and still open was claimed again.
   */
  readonly #claimed: ExpiringKeys;
  /**
   * Claims holding a slot: in flight (until `sentAt` + the answer window, or the deadline) or won and not started
   * (until the exec starts, or a grace period). The job's buyer, for the bounds. `deadline` is the order's (wall
   * clock), `until` the end of the window or grace period (monotonic clock).
   */
  readonly #pending = new Map<string, { deadline: number; until: number; buyer: string; won: boolean }>();
  /** Claims in flight past the answer window: they hold no slot, and their buyer was counted as not answering. */
  readonly #overdue = new Set<string>();
  /**
   * Buyers whose claims went unanswered (no answer frame: a failed or timed-out stream, a rate limit, a full inbox):
   * consecutive failures and until when their orders are skipped (monotonic clock). Any answer clears it.
   */
  readonly #backoff = new Map<string, { failures: number; until: number }>();
  /** Claims to send again (the buyer did not judge them): job → the claim, attempts so far, not before (monotonic clock). */
  readonly #retry = new Map<string, { claim: Opened<Claim>; attempts: number; at: number }>();
  #timer: NodeJS.Timeout | undefined;
  #soon: NodeJS.Immediate | undefined;
  #stopped = false;
  #ticking = false;
  readonly #mono: Clock;

  constructor(private readonly d: ClaimerDeps) {
    this.#claimed = new ExpiringKeys(d.maxClaimed ?? MAX_CLAIMED);
    this.#mono = d.monoClock ?? monotonicClock;
  }

  /** Claims holding a slot now (in flight, or won and not started). */
  get pending(): number {
    this.#release(this.d.clock());
    return this.#pending.size;
  }

  /** Start the timer: every `tickMs` while an order is open or a claim waits to be resent, else every `idleTickMs` (docs/scale.md "Idle cost"). */
  start(): void {
    this.#arm();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#soon) clearImmediate(this.#soon);
  }

  /** Something changed (an order arrived, one was decided): recompute soon (coalesced). */
  changed(): void {
    if (this.#stopped || this.#soon) return;
    this.#soon = setImmediate(() => {
      this.#soon = undefined;
      this.tick();
      this.#arm();
    });
  }

  /** Nothing to recompute until an order arrives: no open order and no claim to resend. */
  get idle(): boolean {
    return this.#retry.size === 0 && this.d.orders.size === 0;
  }

  #arm(): void {
    if (this.#stopped) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(
      () => {
        this.tick();
        this.#arm();
      },
      this.idle ? (this.d.idleTickMs ?? 5_000) : (this.d.tickMs ?? 500),
    );
    this.#timer.unref();
  }

  #release(now: number): void {
    const mono = this.#mono();
    for (const [job, p] of this.#pending) {
      if (this.d.runs(job)) this.#pending.delete(job);
      else if (p.deadline <= now || p.until <= mono) {
        this.#pending.delete(job);
        if (p.won) {
          // the buyer took our claim and never ran it: as good as no answer, for its other orders
          this.#unanswered(p.buyer);
          this.d.log.info({ job, buyer: p.buyer }, 'claim won but never started; its slot is free');
        } else {
          // in flight past the answer window (or the order's deadline): the slot goes back to other buyers' orders; the
          // stream stays open until its own deadline, and a late answer is taken as any answer
          this.#overdue.add(job);
          this.#unanswered(p.buyer);
          this.d.log.info({ job, buyer: p.buyer }, 'claim not answered in time; its slot is free');
        }
      }
    }
    // A claim waiting to be sent again goes once its order is no longer open here (decided, dropped) or past its
    // deadline: #claim, the only other place that takes it out, runs only for open orders, so the entry would stay and
    // keep the claimer off its idle pace.
    for (const [job] of this.#retry) {
      const j = this.d.orders.job(job);
      if (!j || j.record.deadline <= now) this.#retry.delete(job);
    }
  }

  /** Claimed already and not due to be sent again (a claim waiting for its retry time). */
  #claimedNow(address: string, now: number): boolean {
    const again = this.#retry.get(address);
    return this.#claimed.has(address, now) && !(again && again.at <= this.#mono());
  }

  /** A buyer whose orders are not claimed now: this node itself, one backed off, one paused for a lapsed input. */
  #skipsBuyer(signer: string): boolean {
    return signer === this.d.did || this.backedOff(signer) || (this.d.paused?.(signer) ?? false);
  }

  /** The orders this provider would claim now, oldest first (leases computed from the node's view). */
  targets(now: number): Array<{ job: Opened<Job>; price: Claim['price']; advert: Opened<Advert> }> {
    const advert = this.d.advert();
    if (!advert || advert.record.expiresAt <= now) return [];
    const open = this.d.orders.open(now);
    if (open.length === 0) return [];
    const mode = this.d.mode ?? 'leased';
    const live = mode === 'leased' ? this.d.live(now) : undefined;
    const view = live ? this.d.orders.leases(now, live, this.d.did) : undefined;
    const out: Array<{ job: Opened<Job>; price: Claim['price']; advert: Opened<Advert> }> = [];
    // leases this provider holds on orders it already claimed with no winner (the claim failed, or went unanswered)
    let spent = 0;
    for (const { job, order } of open) {
      if (this.#claimedNow(job.address, now)) {
        if (view?.byOrder.get(job.address)?.provider === this.d.did && !this.#retry.has(job.address) && !this.#pending.has(job.address)) spent++;
        continue;
      }
      if (this.#skipsBuyer(job.signer)) continue;
      // Designated to this provider, or to the pool its advert stands for (each member claims it as the pool: the first
      // claim wins, the others are refused ORDER_TAKEN; docs/matching.md "A pooled claim").
      const mine = order.designated !== undefined ? isDesignated({ did: this.d.did, advert }, order.designated) : mode === 'any' || view!.byOrder.get(job.address)?.provider === this.d.did;
      if (!mine) continue;
      const price = this.#price(job, advert, now);
      if (price) out.push({ job, price, advert });
    }
    // Each such lease holds a slot every node counts as ours until its period ends, which this provider will not use
    // (an order is claimed once): as many open bids that nobody holds a lease on go in their place, oldest first. Only
    // what this provider claims changes; the leases every node computes stay the same (docs/matching.md).
    if (view) {
      for (const { job, order } of open) {
        if (spent <= 0) break;
        if (!order.openBid || view.byOrder.has(job.address) || this.#claimed.has(job.address, now) || this.#skipsBuyer(job.signer)) continue;
        const price = this.#price(job, advert, now);
        if (price) {
          out.push({ job, price, advert });
          spent--;
        }
      }
      // Open bids whose lease escalated to us (docs/matching.md rule 6): still open past their grace, so their holder
      // did not claim them (a key that advertises and never claims holds leases as any provider does). After our own
      // leases and designated orders; orders in their front periods first, oldest first, then the others.
      const taken = new Set(out.map((t) => t.job.address));
      const esc = this.d.orders.escalation(now, live!, this.d.did);
      const front: typeof out = [];
      const late: typeof out = [];
      for (const { job, order } of open) {
        if (!order.openBid || taken.has(job.address) || view.byOrder.get(job.address)?.provider === this.d.did) continue;
        if (this.#claimedNow(job.address, now) || this.#skipsBuyer(job.signer) || !esc.may(order, this.d.did)) continue;
        const price = this.#price(job, advert, now);
        if (price) (leasePeriod(order.announcedAt, now, this.d.orders.opts.leaseMs ?? MATCH_LEASE_MS) < MATCH_FRONT_PERIODS ? front : late).push({ job, price, advert });
      }
      out.push(...front, ...late);
    }
    return out;
  }

  /** Our price for the job when we may claim it (a candidate's checks against our own advert), else undefined. */
  #price(job: Opened<Job>, advert: Opened<Advert>, now: number): Claim['price'] | undefined {
    if (!this.d.canRun(job)) return undefined;
    if (checkEligibility(job, advert, undefined, now, this.d.skewMs !== undefined ? { skewMs: this.d.skewMs } : {}).length > 0) return undefined;
    if (job.record.inputSealed === 'yes' && !advert.record.boxKey) return undefined;
    const ask = askFor(advert.record, orderFromJob(job));
    if (!ask.ok || cmpAmount(ask.cost.amount, job.record.maxPrice.amount) > 0) return undefined;
    return ask.cost;
  }

  /** Recompute and claim what this provider should claim now. */
  tick(): void {
    if (this.#stopped || this.#ticking) return;
    this.#ticking = true;
    try {
      const now = this.d.clock();
      this.#release(now);
      let free = this.d.freeSlots() - this.#pending.size;
      if (free <= 0) return;
      const max = this.d.maxPerBuyer ?? Infinity;
      const held = new Map<string, number>();
      for (const p of this.#pending.values()) {
        const k = this.#boundKey(p.buyer);
        held.set(k, (held.get(k) ?? 0) + 1);
      }
      // Buyers whose latest claim went unanswered come after every other buyer (oldest first within each): a crowd of
      // silent keys older than an honest order does not stand in front of it once each has failed to answer once.
      const targets = this.targets(now);
      const ordered = [...targets.filter((t) => !this.#backoff.has(t.job.signer)), ...targets.filter((t) => this.#backoff.has(t.job.signer))];
      for (const t of ordered) {
        if (free <= 0) break;
        // one buyer — or all the buyers we have no dealings with, together — holds at most `max` of our slots: a buyer
        // that never answers cannot take them all, however many keys it makes
        const k = this.#boundKey(t.job.signer);
        const n = held.get(k) ?? 0;
        if (n >= max) continue;
        held.set(k, n + 1);
        free--;
        this.#claim(t.job, t.price, t.advert, now);
      }
    } catch (e) {
      this.d.log.warn({ err: (e as Error).message }, 'claiming failed');
    } finally {
      this.#ticking = false;
    }
  }

  /** What `buyer`'s claims count against for maxPerBuyer: its own DID when we have dealt with it, else one key shared by every buyer we have not. */
  #boundKey(buyer: string): string {
    return this.d.knownBuyer?.(buyer) ? buyer : UNKNOWN_BUYERS;
  }

  /** Is `buyer` being left alone now (its claims went unanswered)? Timed on the monotonic clock. */
  backedOff(buyer: string): boolean {
    const b = this.#backoff.get(buyer);
    return b !== undefined && b.until > this.#mono();
  }

  /** A claim to `buyer` got no answer: its orders are skipped for 1 s, doubling with each failure in a row, at most BUYER_BACKOFF_MAX_MS. */
  #unanswered(buyer: string): void {
    const failures = (this.#backoff.get(buyer)?.failures ?? 0) + 1;
    this.#backoff.delete(buyer);
    this.#backoff.set(buyer, { failures, until: this.#mono() + Math.min(1000 * 2 ** Math.min(failures - 1, 30), BUYER_BACKOFF_MAX_MS) });
    if (this.#backoff.size > MAX_BACKED_OFF) this.#backoff.delete(this.#backoff.keys().next().value!);
  }

  #claim(job: Opened<Job>, price: Claim['price'], advert: Opened<Advert>, now: number): void {
    this.#claimed.set(job.address, job.record.deadline, now);
    // holds its slot until answered, for the answer window at most (#release)
    this.#pending.set(job.address, { deadline: job.record.deadline, until: this.#mono() + (this.d.answerWindowMs ?? CLAIM_ANSWER_WINDOW_MS), buyer: job.signer, won: false });
    const again = this.#retry.get(job.address);
    this.#retry.delete(job.address);
    const attempts = (again?.attempts ?? 0) + 1;
    const claim = again?.claim ?? seal(T.claim, { job: job.address, advert: advert.address, price, issuedAt: Math.max(now, job.record.announcedAt) }, this.d.signer);
    this.d.log.info({ job: job.address, claim: claim.address, price: `${price.amount} ${price.currency}` }, 'claim sent');
    void this.d
      .send(job, claim, advert)
      .then((o) => {
        // an answer after the window is still an answer: a late win takes a slot again (if none is free by the time its
        // exec comes, the provider refuses it EXEC_BUSY)
        const late = this.#overdue.delete(job.address);
        this.#backoff.delete(job.signer); // it answers
        if (o.won) {
          // Holds its slot until the buyer's exec starts it (or a grace period passes).
          this.#pending.set(job.address, { deadline: job.record.deadline, until: this.#mono() + 30_000, buyer: job.signer, won: true });
          this.d.log.info({ job: job.address, claim: claim.address, selection: o.selection.address, ...(late ? { late } : {}) }, 'claim won');
        } else {
          this.#pending.delete(job.address);
          this.d.orders.decided(job.address, this.d.clock(), job.record.deadline);
          this.d.log.info({ job: job.address, claim: claim.address, code: o.refusal.record.code, refusal: o.refusal.address, winner: o.refusal.record.winner }, 'claim refused');
        }
        this.d.onOutcome?.(job.address, claim, o);
      })
      .catch((e: unknown) => {
        // past the answer window its buyer was already counted as not answering (#release)
        const late = this.#overdue.delete(job.address);
        this.#pending.delete(job.address);
        const code = e instanceof C0Error ? e.code : (e as Error).message;
        // The buyer's node takes no claims on this job (its run ended, or it never was an order there): it is not open,
        // whatever this node's view says (a selection missed), so it leaves the open set here as a refusal's order does.
        // NODE_CLOSING: the buyer's node is stopping, its run broken off; nobody will ever win this order.
        if (e instanceof C0Error && (e.code === CLAIM_ERR.ORDER_UNKNOWN || e.code === CLAIM_ERR.CLOSING)) this.d.orders.decided(job.address, this.d.clock(), job.record.deadline);
        if (notJudged(e)) {
          if (!late) this.#unanswered(job.signer);
        } else this.#backoff.delete(job.signer); // an error frame that judged the claim is an answer
        if (attempts < MAX_CLAIM_ATTEMPTS && notJudged(e)) {
          const at = this.#mono() + Math.min(1000 * 2 ** (attempts - 1), 8000);
          this.#retry.set(job.address, { claim, attempts, at });
          if (this.#retry.size > 10_000) this.#retry.delete(this.#retry.keys().next().value!);
          this.d.log.info({ job: job.address, claim: claim.address, code, attempts }, 'claim not judged; sending it again later');
          return;
        }
        // an error frame that judged the claim is the buyer's answer, said as one (QA qaOrd F7: ORDER_UNKNOWN read as silence)
        if (notJudged(e)) this.d.log.info({ job: job.address, claim: claim.address, code }, 'claim not answered');
        else this.d.log.info({ job: job.address, claim: claim.address, code }, `claim answered ${code}: ${ANSWERED[code] ?? (e as Error).message}`);
        this.d.onOutcome?.(job.address, claim, { error: code });
      })
      .finally(() => this.changed());
  }
}
