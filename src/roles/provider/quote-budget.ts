/**
 * The provider's quoting budget (issue #10, "valid-looking floods";
 * spec/scheduling.md "Offers"): a provider signs an offer only while it has
 * fewer than `maxLiveOffersPerBuyer` live (unexpired) offers for that job's
 * buyer and fewer than `maxLiveOffers` in total. A job over budget is skipped
 * and counted, never signed: one key publishing thousands of valid jobs gets a
 * handful of offers, and honest buyers keep theirs.
 *
 * An offer stops holding budget when it expires, when the buyer's selection
 * for the job is heard (the buyer has decided), or when the work starts. So
 * that deciding quickly cannot be used to cycle the budget (publish a job,
 * take the offer, sign a selection, again), a buyer also gets at most
 * `maxRecentOffersPerBuyer` offers per `windowMs`, decided or not.
 *
 * Buyers this provider has already worked for (it signed a receipt for one of
 * their jobs) are not held to the total: only to their own per-buyer bound, so
 * a flood of fresh buyer keys cannot crowd out the buyers it has dealt with.
 *
 * A buyer whose exec input lapsed here (it was selected, got `ready`, and did not
 * send its input in time: exec-input.ts) held a slot for nothing; it gets no
 * offer for a while (`lapsed`): `lapseMs` the first time, twice as long for each
 * lapse after it, at most `maxLapseMs`. The count is forgiven by real use of
 * the slot: the slot time of its jobs that complete here (`delivered`: from the
 * slot taken to the receipt kept, the input's upload included), each lapse
 * four times what it held the slot for (LAPSE_FORGIVEN_BY_WORK: a 32 s stall is
 * forgiven after 128 s of its jobs, whatever their number; the smallest debts
 * first, so one long hold does not keep the short ones after it counted); the
 * pause it is in runs on. A quiet `maxLapseMs` after the last pause clears it too. A
 * slow link is paused, never barred for good, and forgiven by the work it buys;
 * a key that takes slots and sends nothing gets ever fewer offers to do it with,
 * and its stalls can hold the slot at most a fifth of the time it keeps it busy
 * with paid work. Before, one job delivered cleared the count (review s40 F3),
 * then each input delivered took a quarter off whatever its size, and four jobs of
 * a few bytes between 32 s stalls kept every pause at 30 s (the slot held by
 * stalls half the time, 94% with two keys taking turns: review s41 D F2); and
 * until round 2 only run time counted (a buyer of big inputs and short runs on a
 * poor link was never forgiven) and every lapse owed four times the longest hold
 * on record. The claimer asks `paused` too: a paused buyer's orders are not
 * claimed either, and the provider opens no exec of its (EXEC_BUYER_PAUSED).
 *
 * Bookkeeping: the wall clock is passed in (`now`): offers' `expiresAt` are signed wall times. The per-buyer rate
 * window is a duration this provider measures for itself, on the monotonic clock (`monoClock`), so a wall-clock step
 * neither holds a buyer at `buyer-rate` for its length nor lets it past early. With `clock` (the daemon's),
 * expired offers also leave when they expire, by a timer, not only when the
 * next job reaches `check` (on a quiet market, or with every slot busy, none
 * may), and the live-offer gauge expires offers before it is read.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { monotonicClock, type Clock } from '../../util/clock.js';
import { INPUT_HOLD_GRACE_MS } from './exec-input.js';

export interface QuoteBudgetOptions {
  /** Live offers at once, all buyers together (known buyers aside). Default 256. */
  maxLiveOffers?: number;
  /** Live offers at once for one buyer. Default 8. */
  maxLiveOffersPerBuyer?: number;
  /** Offers one buyer gets per `windowMs`, decided or not. Default 64. */
  maxRecentOffersPerBuyer?: number;
  /** The window of `maxRecentOffersPerBuyer`, ms (the daemon passes `provider.offerLifetimeMs`). Default 30 000. */
  windowMs?: number;
  /** Metrics: `c0mpute_provider_quotes_skipped_total{reason}`, `c0mpute_provider_live_offers`. */
  registry?: Registry;
  /** The clock offers expire by: given, a timer frees expired offers as they expire and the gauge is read at scrape time; `close()` stops the timer. */
  clock?: Clock;
  /** The monotonic clock of the `windowMs` rate window (default `monotonicClock`). */
  monoClock?: Clock;
  /** How long a buyer gets no offer after its first exec input lapsed here, ms (doubled for each lapse after it). Default `windowMs`. */
  lapseMs?: number;
  /** The longest such pause, ms. Default 64 × `lapseMs`. */
  maxLapseMs?: number;
}

/** The expiry timer fires no more often than this, ms (offers that expire within it leave together). */
const SWEEP_MIN_MS = 100;
/** Buyers whose lapses are held at most (the oldest goes first). */
const MAX_LAPSED_BUYERS = 4096;
/**
 * How much work run here forgives one lapse, as a multiple of the time the lapse held the slot: a buyer's jobs must
 * keep the slot busy four times as long as its stalls held it, or its pauses go on doubling. Counted in run time, not
 * in jobs or bytes: many jobs of a few milliseconds forgive next to nothing (review s41 D F2), and however many keys
 * take turns, stalls forgiven this way hold a slot at most a fifth of the time paid work keeps it busy.
 */
const LAPSE_FORGIVEN_BY_WORK = 4;
/** The least hold a lapse is counted at, ms (exec-input.ts INPUT_HOLD_GRACE_MS: a shorter one is no lapse). */
const MIN_LAPSE_HOLD_MS = INPUT_HOLD_GRACE_MS;
/** A lapse count this close to a whole number is taken as it (work forgiven in many small parts adds up in floating point). */
const COUNT_EPSILON = 1e-9;
/**
 * Lapses whose debts are held apart for one buyer at most; a lapse past them is added to the largest debt held (its
 * pause is at `maxLapseMs` long before: 2^15 × `lapseMs`).
 */
const MAX_LAPSE_DEBTS = 16;
/** The longest delay setTimeout takes (2^31-1 ms); past it Node fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const QUOTE_BUDGET_DEFAULTS = { maxLiveOffers: 256, maxLiveOffersPerBuyer: 8, maxRecentOffersPerBuyer: 64, windowMs: 30_000 } as const;

/** Why a job got no offer (the metric's `reason` label). */
export type SkipReason = 'buyer-lapsed' | 'buyer-budget' | 'buyer-rate' | 'total-budget' | 'no-free-slot' | 'deadline' | 'input-too-large' | 'bad-params' | 'price' | 'ineligible' | 'outranked' | 'decided' | 'already-quoted';

export interface LiveOffer<R = unknown> {
  job: string;
  buyer: string;
  expiresAt: number;
  /** The signed offer itself (what a pushed job is answered with). */
  record: R;
}

export class QuoteBudget<R = unknown> {
  readonly maxLiveOffers: number;
  readonly maxLiveOffersPerBuyer: number;
  readonly maxRecentOffersPerBuyer: number;
  readonly windowMs: number;
  readonly lapseMs: number;
  readonly maxLapseMs: number;
  /**
   * buyer → its exec inputs that lapsed lately, each as the work that forgives it (LAPSE_FORGIVEN_BY_WORK × its hold,
   * ms) and what of that is still owed; until when it gets no offer (monotonic clock). Its count is the sum of the
   * parts still owed (lapseCount).
   */
  readonly #lapsed = new Map<string, { debts: Array<{ owedMs: number; leftMs: number }>; until: number }>();
  /** buyer → issue times of its offers within the window, oldest first (monotonic clock) */
  readonly #recent = new Map<string, number[]>();
  /** job address → the live offer made for it */
  readonly #byJob = new Map<string, LiveOffer<R>>();
  readonly #perBuyer = new Map<string, number>();
  readonly #known = new Set<string>();
  /** live offers that count against the total (those of buyers not known) */
  #counted = 0;
  /** when `#recent` was last swept of buyers with nothing left in the window (monotonic clock) */
  #sweptAt = -Infinity;
  readonly #skipped: Counter<'reason'> | undefined;
  readonly #clock: Clock | undefined;
  readonly #mono: Clock;
  #timer: NodeJS.Timeout | undefined;
  /** when the armed timer fires (clock time) */
  #timerAt = Infinity;
  #closed = false;
  #skips = 0;

  constructor(o: QuoteBudgetOptions = {}) {
    this.maxLiveOffers = o.maxLiveOffers ?? QUOTE_BUDGET_DEFAULTS.maxLiveOffers;
    this.maxLiveOffersPerBuyer = o.maxLiveOffersPerBuyer ?? QUOTE_BUDGET_DEFAULTS.maxLiveOffersPerBuyer;
    this.maxRecentOffersPerBuyer = o.maxRecentOffersPerBuyer ?? QUOTE_BUDGET_DEFAULTS.maxRecentOffersPerBuyer;
    this.windowMs = o.windowMs ?? QUOTE_BUDGET_DEFAULTS.windowMs;
    this.lapseMs = o.lapseMs ?? this.windowMs;
    this.maxLapseMs = o.maxLapseMs ?? 64 * this.lapseMs;
    this.#clock = o.clock;
    this.#mono = o.monoClock ?? monotonicClock;
    if (o.registry) {
      this.#skipped = new Counter({ name: 'c0mpute_provider_quotes_skipped_total', help: 'Jobs this provider did not quote on, by reason (budget, capacity, deadline…)', labelNames: ['reason'], registers: [o.registry] });
      // Read at scrape time, expired offers dropped first: true however long ago the last job was heard.
      const live: Gauge = new Gauge({
        name: 'c0mpute_provider_live_offers',
        help: 'Unexpired offers this provider has signed',
        registers: [o.registry],
        collect: () => {
          if (this.#clock) this.#expire(this.#clock());
          live.set(this.#byJob.size);
        },
      });
    }
  }

  /** Offers held now, expired or not (those expired leave at the next sweep: the timer, a check, a scrape). */
  get held(): number {
    return this.#byJob.size;
  }

  /** Stop the expiry timer (the provider stopping); the bookkeeping still answers. */
  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  /** Arm the timer for the earliest expiry held (with a clock, not closed); one timer, re-armed only for an earlier expiry. */
  #arm(): void {
    if (!this.#clock || this.#closed) return;
    let next = Infinity;
    for (const o of this.#byJob.values()) if (o.expiresAt < next) next = o.expiresAt;
    if (next === Infinity) {
      if (this.#timer) clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#timerAt = Infinity;
      return;
    }
    if (this.#timer && this.#timerAt <= next) return;
    if (this.#timer) clearTimeout(this.#timer);
    const now = this.#clock();
    // At most Node's longest timer (2^31-1 ms, ~24.8 days): a longer delay fires at once, every millisecond, with a
    // warning each time. An offer that lives longer (a long provider.offerLifetimeMs) is met by re-arming.
    const wait = Math.min(MAX_TIMER_MS, Math.max(SWEEP_MIN_MS, next - now + 1));
    this.#timerAt = now + wait;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Infinity;
      this.#expire(this.#clock!());
    }, wait);
    this.#timer.unref();
  }

  /** A buyer this provider has worked for: held to its own bound only, not to the total. */
  markKnownBuyer(did: string): void {
    if (this.#known.has(did)) return;
    this.#known.add(did);
    this.#counted -= this.#perBuyer.get(did) ?? 0;
  }

  isKnownBuyer(did: string): boolean {
    return this.#known.has(did);
  }

  /** Drop offers that have expired by `now`, and (once a window) the buyers whose offer times have all left it. */
  #expire(now: number): void {
    let dropped = false;
    for (const [job, o] of this.#byJob) {
      if (o.expiresAt > now) continue;
      this.#byJob.delete(job);
      this.#release(o.buyer);
      dropped = true;
    }
    if (dropped || !this.#timer) this.#arm();
    // A buyer's times are otherwise trimmed only when it is seen again: every buyer ever offered to, and every
    // made-up key whose job got an offer, would stay for good.
    const mono = this.#mono();
    if (mono - this.#sweptAt >= this.windowMs) {
      this.#sweptAt = mono;
      for (const [buyer, r] of this.#recent) if (!r.length || r[r.length - 1]! <= mono - this.windowMs) this.#recent.delete(buyer);
      for (const [buyer, l] of this.#lapsed) if (l.until + this.maxLapseMs <= mono) this.#lapsed.delete(buyer);
    }
  }

  /** Buyers with an offer time still held for the per-buyer rate (at most a window old once swept). */
  get recentBuyers(): number {
    return this.#recent.size;
  }

  #release(buyer: string): void {
    const n = (this.#perBuyer.get(buyer) ?? 1) - 1;
    if (n <= 0) this.#perBuyer.delete(buyer);
    else this.#perBuyer.set(buyer, n);
    if (!this.#known.has(buyer)) this.#counted--;
  }

  /**
   * The buyer's exec input lapsed here (readExecInput: no input, too slow, or a hold it ended without its input, or
   * with input refused, past the grace) after holding the slot `heldMs` (default `lapseMs`): no offer for it for
   * `lapseMs` × 2^(⌈count⌉ − 1), at most `maxLapseMs`, where the count is its lapses less what its work run here since
   * forgave (`delivered`). Returns how long, ms.
   */
  lapsed(buyer: string, heldMs: number = this.lapseMs): number {
    const mono = this.#mono();
    const was = this.#lapsed.get(buyer);
    // a quiet maxLapseMs after the last pause ended: counted afresh
    const debts = was !== undefined && was.until + this.maxLapseMs > mono ? was.debts : [];
    // this lapse owes four times its own hold (before round 2: four times the longest hold on record, for every lapse)
    const owedMs = LAPSE_FORGIVEN_BY_WORK * Math.max(MIN_LAPSE_HOLD_MS, heldMs);
    const merged = debts.length >= MAX_LAPSE_DEBTS;
    if (!merged) debts.push({ owedMs, leftMs: owedMs });
    else {
      const largest = debts.reduce((x, y) => (y.owedMs > x.owedMs ? y : x));
      largest.owedMs += owedMs;
      largest.leftMs += owedMs;
    }
    // (merged: still one lapse more; the debts held are all owed but one at most, delivered paying the smallest first)
    const n = lapseCount(debts) + (merged ? 1 : 0);
    const pauseMs = Math.min(this.maxLapseMs, this.lapseMs * 2 ** Math.min(Math.ceil(n - COUNT_EPSILON) - 1, 52));
    this.#lapsed.delete(buyer);
    while (this.#lapsed.size >= MAX_LAPSED_BUYERS) this.#lapsed.delete(this.#lapsed.keys().next().value!);
    this.#lapsed.set(buyer, { debts, until: mono + pauseMs });
    return pauseMs;
  }

  /**
   * A job of the buyer's completed here after holding its slot `workedMs` (from the slot taken, its input's upload
   * included, to its receipt kept): that much of its lapses' debts is forgiven, the smallest first (a lapse paid off
   * leaves the count; one long hold does not keep the short ones after it counted); the record goes when nothing is
   * owed and its pause is over. A pause it is in runs on (the offer it ran on was made before it).
   */
  delivered(buyer: string, workedMs: number): void {
    const l = this.#lapsed.get(buyer);
    if (!l || !(workedMs > 0)) return;
    let work = workedMs;
    l.debts.sort((a, b) => a.leftMs - b.leftMs);
    for (const d of l.debts) {
      const paid = Math.min(work, d.leftMs);
      d.leftMs -= paid;
      work -= paid;
      if (work <= 0) break;
    }
    l.debts = l.debts.filter((d) => d.leftMs / d.owedMs >= COUNT_EPSILON);
    if (l.debts.length === 0 && l.until <= this.#mono()) this.#lapsed.delete(buyer);
  }

  /** Whether the buyer is in a pause for an exec input that lapsed here (`check`'s `buyer-lapsed`; the claimer asks too). */
  paused(buyer: string): boolean {
    const lapse = this.#lapsed.get(buyer);
    return lapse !== undefined && lapse.until > this.#mono();
  }

  /** Whether a new offer for `buyer` fits the budget now (undefined) or why not. */
  check(buyer: string, now: number): SkipReason | undefined {
    this.#expire(now);
    if (this.paused(buyer)) return 'buyer-lapsed';
    if ((this.#perBuyer.get(buyer) ?? 0) >= this.maxLiveOffersPerBuyer) return 'buyer-budget';
    if (this.#recentOf(buyer).length >= this.maxRecentOffersPerBuyer) return 'buyer-rate';
    if (!this.#known.has(buyer) && this.#counted >= this.maxLiveOffers) return 'total-budget';
    return undefined;
  }

  /** The buyer's offer times still within the window now (older ones dropped; monotonic clock). */
  #recentOf(buyer: string): number[] {
    const r = this.#recent.get(buyer);
    if (!r) return [];
    const now = this.#mono();
    while (r.length && r[0]! <= now - this.windowMs) r.shift();
    if (!r.length) this.#recent.delete(buyer);
    return r;
  }

  /** Record an offer just signed (its time in the rate window is read from the monotonic clock). */
  add(o: LiveOffer<R>): void {
    if (this.#byJob.has(o.job)) return;
    const r = this.#recentOf(o.buyer);
    if (!this.#recent.has(o.buyer)) this.#recent.set(o.buyer, r);
    r.push(this.#mono());
    this.#byJob.set(o.job, o);
    this.#perBuyer.set(o.buyer, (this.#perBuyer.get(o.buyer) ?? 0) + 1);
    if (!this.#known.has(o.buyer)) this.#counted++;
    if (o.expiresAt < this.#timerAt) this.#arm();
  }

  /**
   * The buyer has decided `job` (its selection was heard) or the work ran:
   * the offer no longer holds budget. Only `by` the job's buyer (or whom
   * `authorised` accepts for it) counts. Returns whether an offer was released.
   */
  release(job: string, by: string, authorised: (signer: string, buyer: string) => boolean = () => false): boolean {
    const o = this.#byJob.get(job);
    if (!o || (o.buyer !== by && !authorised(by, o.buyer))) return false;
    this.#byJob.delete(job);
    this.#release(o.buyer);
    return true;
  }

  /** The live offer made for `job`, if any. */
  offerFor(job: string, now: number): LiveOffer<R> | undefined {
    const o = this.#byJob.get(job);
    return o && o.expiresAt > now ? o : undefined;
  }

  /** Count a job that got no offer. */
  skip(reason: SkipReason): void {
    this.#skips++;
    this.#skipped?.inc({ reason });
  }

  /** Live offers now (all buyers). */
  live(now: number): number {
    this.#expire(now);
    return this.#byJob.size;
  }

  liveFor(buyer: string, now: number): number {
    this.#expire(now);
    return this.#perBuyer.get(buyer) ?? 0;
  }

  get skipped(): number {
    return this.#skips;
  }
}

/** A buyer's lapse count: each lapse counts by the part of its debt still owed (a half-paid one is half a lapse). */
function lapseCount(debts: ReadonlyArray<{ owedMs: number; leftMs: number }>): number {
  let n = 0;
  for (const d of debts) n += d.leftMs / d.owedMs;
  return n;
}
