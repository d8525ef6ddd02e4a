/**
 * Receipts the exec stream could not deliver, sent to their buyer directly
 * (docs/network.md §14 "Who hears a job's outcome", docs/node.md "A receipt
 * the buyer did not get on the stream"). A buyer that left mid-job (killed,
 * restarted, its connection broke, the provider stalled past the buyer's
 * patience) does not join the receipt topics by default, so the gossiped copy
 * never reaches it. The provider sends the receipt over `/c0mpute/outcome/1`
 * (one message up, one verdict back) to the job's buyer.
 *
 * One schedule per buyer, not per receipt: the receipts waiting for a buyer
 * are sent one after another, oldest first, in a "go"; a go ends when the
 * buyer is not reached (`unreachable`), did not keep one (`not_kept`, or an
 * `ignore` that says "not now": deliveryOutcome), or after RECEIPT_SEND_BATCH
 * sends (paced below the buyer's receipt rate limit). The next go comes after a
 * wait: not reached, `retryMs` doubling up to RECEIPT_RETRY_MAX_MS (and
 * RECEIPT_RETRY_LONG_MS once the buyer has been out of reach for
 * RECEIPT_RETRY_LONG_AFTER_MS); not kept, `notKeptRetryMs` doubling up to
 * RECEIPT_NOT_KEPT_MAX_MS; paced, `retryMs`. A sign of life (the buyer
 * connects or dials this node: libp2p identifies it, `onConnected`) starts a
 * go at once and ends the back-off. So a buyer gone for good costs one dial per
 * wait whatever the number of receipts waiting for it; before (QA ffRcpt F1)
 * each receipt had its own timer: 1,000 receipts for a gone buyer were 4,000
 * dials in the first minute, and all 1,000 were sent at once when it came back.
 *
 * Bounded: at most `maxPending` receipts (the oldest go first), each for at
 * most `keepMs`; one timer per buyer with a receipt waiting. With `keep`, each
 * waiting receipt is also written to the provider's store
 * (store/provider-runs.ts) and `restore`d at the next start, so a provider
 * restarted before its buyer came back still sends it.
 *
 * Every receipt starts out so on disk: its `entry` is written in the same
 * batch as the receipt itself, marked untried, and leaves the keep when the
 * buyer acknowledges it on the stream (`acknowledged`) or goes to `deliver`.
 * One still untried at the next start (the provider was killed, or stopped,
 * before either) is sent at once (`resume`), not only when its buyer connects;
 * `resume` starts a go for every buyer with a receipt restored.
 */
import type { Opened } from '../../records/envelope.js';
import type { Receipt } from '../../records/kinds.js';
import { takenOutcome, type OfferSendOutcome } from '../../net/offer-route.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/log.js';

/** Receipts waiting for their buyer at most (the oldest are dropped past it). */
export const RECEIPT_DELIVERY_MAX = 1024;
/**
 * How long a receipt waits for its buyer to come back (7 days): a buyer's machine off over a long weekend still gets
 * the receipts of the jobs it left (before, QA ffRcpt F3, 6 hours; the outcome catch-up reaches back 1 hour only).
 * With one schedule per buyer, a buyer gone for good costs 4 dials an hour after its first hour away.
 */
export const RECEIPT_DELIVERY_KEEP_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * The first wait before a buyer not reached is tried again (5 s; doubled each time, up to RECEIPT_RETRY_MAX_MS).
 * Short, because a buyer frozen (SIGSTOP, a paused VM) while its receipt was sent keeps its connection, so no new
 * connection sends it: with 1 minute (before, QA ffGang F5) a buyer frozen 50 s got it 56 s after it ran again.
 */
export const RECEIPT_RETRY_MS = 5_000;
/** The longest such wait while the buyer has been out of reach for less than RECEIPT_RETRY_LONG_AFTER_MS (1 minute). */
export const RECEIPT_RETRY_MAX_MS = 60_000;
/** Out of reach this long (1 hour), a buyer is tried every RECEIPT_RETRY_LONG_MS; its connection still sends at once. */
export const RECEIPT_RETRY_LONG_AFTER_MS = 60 * 60_000;
/** The wait between tries of a buyer out of reach for over an hour (15 minutes). */
export const RECEIPT_RETRY_LONG_MS = 15 * 60_000;
/** The first wait before a buyer that did not keep a receipt (OUTCOME_NOT_KEPT, a full queue) is sent it again (1 minute, doubling). */
export const RECEIPT_NOT_KEPT_RETRY_MS = 60_000;
/** The longest such wait (10 minutes). */
export const RECEIPT_NOT_KEPT_MAX_MS = 10 * 60_000;
/**
 * Receipts sent to one buyer in one go (40); the rest go `retryMs` later: 8 a second at most, below a buyer's
 * receipt rate limit for a signer, this provider's key (10 a second, burst 60: src/net/flood-limits.ts), whose excess
 * it ignores (RATE_LIMITED) and counts against the sender. The same bucket takes this provider's receipts that reach
 * the buyer by gossip, so the pace keeps under it, it does not guarantee it.
 */
export const RECEIPT_SEND_BATCH = 40;
/**
 * Goes under way at once, over all buyers (8); the others wait their turn, in the order they came, and a buyer that
 * shows a sign of life (onConnected) goes to the front. A go to a buyer out of reach is a dial that waits for its
 * timeout: before, a provider restarted with receipts for 1,000 buyers gone dialled all 1,000 at once (`resume`),
 * filling libp2p's dial queue ahead of its own jobs' dials.
 */
export const RECEIPT_GOES_AT_ONCE = 8;

/** What one send over outcome/1 came to: the outcome, and for one `ignored`, the buyer's reason (its verdict's code). */
export interface ReceiptSendResult {
  outcome: OfferSendOutcome;
  code?: string;
}

/**
 * The outcome a send's result counts as here: an `ignored` for the buyer's rate limit is `busy` (the buyer is there:
 * the go pauses, no back-off); one with another reason it was not taken now is `not_kept` (offer-route.ts takenOutcome).
 */
export function deliveryOutcome(r: OfferSendOutcome | ReceiptSendResult): OfferSendOutcome | 'busy' {
  if (typeof r === 'string') return r;
  if (r.outcome === 'ignored' && r.code === 'RATE_LIMITED') return 'busy';
  return takenOutcome(r.outcome, r.code);
}

export interface ReceiptDeliveryDeps {
  /** Send the receipt to `buyer` over outcome/1; the outcome, with the buyer's reason for an `ignored` (never throws). */
  send(buyer: string, receipt: Opened<Receipt>): Promise<OfferSendOutcome | ReceiptSendResult>;
  clock: Clock;
  log: Logger;
  /** Where waiting receipts are kept across a restart (errors are logged, never thrown to the caller). */
  keep?: ReceiptKeep;
  /** This node's DID: a receipt for its own job is not sent. */
  self?: string;
  maxPending?: number;
  keepMs?: number;
  /** The first wait before a buyer not reached is tried again, and the pause between two goes of one buyer (default RECEIPT_RETRY_MS). */
  retryMs?: number;
  /** The first wait before a buyer that did not keep a receipt is sent it again (default RECEIPT_NOT_KEPT_RETRY_MS). */
  notKeptRetryMs?: number;
  /** Receipts sent to one buyer in one go (default RECEIPT_SEND_BATCH). */
  batch?: number;
  /** Goes under way at once, over all buyers (default RECEIPT_GOES_AT_ONCE). */
  goesAtOnce?: number;
}

export interface ReceiptKeep {
  /** Keep `receipt` waiting until `until`; `untried`: not sent to its buyer yet (the next start sends it at once). */
  save(receipt: Opened<Receipt>, until: number, untried?: boolean): Promise<void>;
  drop(address: string): Promise<void>;
}

/** What is kept of a receipt as it is stored (`entry`): its wait for the buyer, not tried yet. */
export interface ReceiptEntry {
  address: string;
  bytes: Uint8Array;
  until: number;
  untried: true;
}

interface Pending {
  receipt: Opened<Receipt>;
  until: number;
  /** Restored untried: sent by `resume`. */
  untried: boolean;
}

/** One buyer's schedule: at most one go at a time, and one timer. */
interface BuyerSchedule {
  /** Goes in a row that ended unanswered (not reached, not kept): the wait before the next doubles with each. */
  failed: number;
  /** When this buyer was last found out of reach, the first time in a row (RECEIPT_RETRY_LONG_AFTER_MS). */
  since?: number;
  timer?: ReturnType<typeof setTimeout>;
  /** The timer is a pause between goes (its receipts being sent, paced), not a back-off. */
  paced: boolean;
  sending: boolean;
  /** Its go waits for a turn (RECEIPT_GOES_AT_ONCE under way): in #turns. */
  queued: boolean;
  /** How the last go ended (a back-off doubles over goes that ended the same way). */
  end?: GoEnd;
  /** A sign of life started a go since the last timer's go or answer: the next one waits for those (onConnected). */
  woken: boolean;
}

type GoEnd = 'unreachable' | 'not_kept' | 'busy' | 'paced';

export class ReceiptDelivery {
  /** By receipt address, oldest first. */
  readonly #pending = new Map<string, Pending>();
  /** By buyer DID: only buyers with a receipt waiting (or a go under way). */
  readonly #buyers = new Map<string, BuyerSchedule>();
  /** Receipts waiting per buyer DID (a peer's connection is judged on it at once, without a scan). */
  readonly #count = new Map<string, number>();
  readonly #max: number;
  readonly #keepMs: number;
  readonly #retryMs: number;
  readonly #notKeptMs: number;
  readonly #batch: number;
  readonly #goesAtOnce: number;
  /** Goes under way now. */
  #going = 0;
  /** Buyers whose go waits for a turn, in the order they came (a Set keeps it; a sign of life moves one to the front). */
  #turns = new Set<string>();
  #stopped = false;

  constructor(private readonly d: ReceiptDeliveryDeps) {
    this.#max = Math.max(1, d.maxPending ?? RECEIPT_DELIVERY_MAX);
    this.#keepMs = d.keepMs ?? RECEIPT_DELIVERY_KEEP_MS;
    this.#retryMs = Math.max(0, d.retryMs ?? RECEIPT_RETRY_MS);
    this.#notKeptMs = Math.max(0, d.notKeptRetryMs ?? RECEIPT_NOT_KEPT_RETRY_MS);
    this.#batch = Math.max(1, d.batch ?? RECEIPT_SEND_BATCH);
    this.#goesAtOnce = Math.max(1, d.goesAtOnce ?? RECEIPT_GOES_AT_ONCE);
  }

  /** Goes under way now, and buyers waiting for a turn (for diagnostics and tests). */
  get goes(): { going: number; waiting: number } {
    return { going: this.#going, waiting: this.#turns.size };
  }

  /** Receipts waiting for their buyer now. */
  get size(): number {
    return this.#pending.size;
  }

  /** The buyers with a receipt waiting (for diagnostics and tests). */
  waitingFor(): string[] {
    return [...new Set([...this.#pending.values()].map((p) => p.receipt.record.buyer))];
  }

  /** Timers armed now (one per buyer at most; for tests). */
  get timers(): number {
    let n = 0;
    for (const b of this.#buyers.values()) if (b.timer) n++;
    return n;
  }

  /**
   * The wait to keep with a receipt as it is stored, in the same batch (ProviderRuns.record): marked untried until
   * the buyer acknowledges the receipt on the exec stream (`acknowledged`) or it goes to `deliver`, so a provider
   * killed in between sends it at its next start (`resume`). Undefined for a receipt of this node's own job.
   */
  entry(receipt: Opened<Receipt>): ReceiptEntry | undefined {
    if (receipt.record.buyer === this.d.self) return undefined;
    return { address: receipt.address, bytes: receipt.bytes, until: this.d.clock() + this.#keepMs, untried: true };
  }

  /**
   * The buyer showed it got the receipt on the exec stream: its `entry` leaves the keep. An unsynced delete: one the
   * operating system loses only sends the receipt once more after a restart, which the buyer answers as a copy.
   */
  acknowledged(receipt: Opened<Receipt>): void {
    if (receipt.record.buyer === this.d.self || this.#pending.has(receipt.address)) return;
    void this.#keepOp('drop', receipt.address, () => this.d.keep!.drop(receipt.address));
  }

  /**
   * Send a receipt its exec stream did not deliver to its buyer: now, with whatever else waits for that buyer, unless
   * that buyer's schedule already runs (a go under way takes it; a wait after one sends it with the rest); kept for
   * the buyer's next go otherwise. Resolves once a go it started is over (at once when it waits for a turn). After `stop` it is only kept (untried), so
   * the next start sends it.
   */
  async deliver(receipt: Opened<Receipt>): Promise<void> {
    if (receipt.record.buyer === this.d.self) return;
    const until = this.d.clock() + this.#keepMs;
    if (this.#stopped) {
      await this.#keepOp('save', receipt.address, () => this.d.keep!.save(receipt, until, true));
      return;
    }
    this.#prune();
    if (this.#pending.has(receipt.address)) return;
    this.#add(receipt, until);
    await this.#keepOp('save', receipt.address, () => this.d.keep!.save(receipt, until));
    const b = this.#buyers.get(receipt.record.buyer);
    if (b && (b.sending || b.timer)) return;
    // a buyer whose receipt was just handed over is likely there (its exec stream broke, or it froze): first in turn
    await this.#go(receipt.record.buyer, true);
  }

  /**
   * A receipt kept waiting before a restart: held again until `until`, and sent at `resume` or when its buyer
   * connects; `untried` (never acknowledged on the stream nor sent directly) is also returned by `resume` to be
   * gossiped. One lapsed, or of this node's own job, is dropped from the keep.
   */
  restore(receipt: Opened<Receipt>, until: number, untried = false): void {
    if (this.#stopped || this.#pending.has(receipt.address)) return;
    if (until <= this.d.clock() || receipt.record.buyer === this.d.self) {
      void this.#keepOp('drop', receipt.address, () => this.d.keep!.drop(receipt.address));
      return;
    }
    this.#add(receipt, until, untried);
  }

  /**
   * At start, once the network is up: a go for every buyer with a receipt restored (one dial each, then its
   * schedule). Returns the receipts restored untried (a provider killed or stopped before its buyer acknowledged them
   * on the stream), for the caller to gossip as well: no one may have heard them yet.
   */
  resume(): Array<Opened<Receipt>> {
    if (this.#stopped) return [];
    const out: Array<Opened<Receipt>> = [];
    const buyers = new Set<string>();
    for (const p of this.#pending.values()) {
      buyers.add(p.receipt.record.buyer);
      if (!p.untried) continue;
      p.untried = false;
      out.push(p.receipt);
    }
    for (const did of buyers) void this.#go(did);
    return out;
  }

  /**
   * A peer connected (libp2p identified it, whichever side dialled): a sign of life. A buyer with receipts waiting has
   * them sent now; a pause between goes (paced) is kept, and so is its back-off, which starts over only when the
   * buyer answers. A go's own dial is identified too, while the go runs (nothing then) or a moment after it ended:
   * had that reset the back-off, or started a go each time, a buyer whose node connects and never answers would be
   * dialled again and again without a wait (review s55). So one sign of life is taken per wait: the next is taken once
   * a go the wait's timer started has run, or the buyer answered; such an identify costs one more try per wait.
   */
  onConnected(did: string): void {
    if (this.#stopped || this.#pending.size === 0) return;
    // lapsed receipts of any buyer go (one pass over at most RECEIPT_DELIVERY_MAX, each O(1)): one restored and never
    // sent has no timer to find it lapsed
    this.#prune();
    if (!this.#count.get(did)) return;
    const b = this.#buyers.get(did);
    // (#next drops the buyer's lapsed receipts, and its schedule with the last one, whether or not a go follows)
    if (!this.#next(did)) return;
    if (b?.queued && !b.woken) {
      // waiting for a turn: it is there now, so it goes next
      b.woken = true;
      this.#turns = new Set([did, ...this.#turns]);
      return;
    }
    if (b && (b.sending || b.queued || (b.timer && b.paced) || b.woken)) return;
    if (b) b.woken = true;
    void this.#go(did);
  }

  stop(): void {
    this.#stopped = true;
    for (const b of this.#buyers.values()) clearTimeout(b.timer);
    this.#buyers.clear();
    this.#turns.clear();
    this.#pending.clear();
    this.#count.clear();
  }

  #add(receipt: Opened<Receipt>, until: number, untried = false): void {
    this.#pending.set(receipt.address, { receipt, until, untried });
    const did = receipt.record.buyer;
    this.#count.set(did, (this.#count.get(did) ?? 0) + 1);
    while (this.#pending.size > this.#max) this.#forget(this.#pending.keys().next().value!);
  }

  /** No longer wait for `address`: out of memory and out of the keep; its buyer's schedule with it when it was the last. */
  #forget(address: string): void {
    const p = this.#pending.get(address);
    this.#pending.delete(address);
    void this.#keepOp('drop', address, () => this.d.keep!.drop(address));
    if (!p) return;
    const did = p.receipt.record.buyer;
    const left = (this.#count.get(did) ?? 1) - 1;
    if (left > 0) this.#count.set(did, left);
    else this.#count.delete(did);
    const b = this.#buyers.get(did);
    if (b && !b.sending && !this.#holds(did)) {
      clearTimeout(b.timer);
      this.#buyers.delete(did);
      this.#turns.delete(did);
    }
  }

  /** Whether a receipt for `did` waits (restored untried ones too). */
  #holds(did: string): boolean {
    return (this.#count.get(did) ?? 0) > 0;
  }

  /** The oldest receipt a go for `did` sends next (one restored untried waits for `resume`); lapsed ones are dropped. */
  #next(did: string): [string, Pending] | undefined {
    const now = this.d.clock();
    for (const [a, p] of this.#pending) {
      if (p.receipt.record.buyer !== did || p.untried) continue;
      if (p.until <= now) {
        this.#forget(a);
        continue;
      }
      return [a, p];
    }
    return undefined;
  }

  async #keepOp(op: 'save' | 'drop', address: string, f: () => Promise<void>): Promise<void> {
    if (!this.d.keep) return;
    try {
      await f();
    } catch (e) {
      this.d.log.warn({ receipt: address, err: (e as Error).message }, op === 'save' ? 'could not keep a waiting receipt on disk: a restart before its buyer returns loses its resend' : 'could not drop a delivered receipt from disk: it is sent again after a restart');
    }
  }

  /**
   * Send `did` its waiting receipts, oldest first, one at a time, until none is left, one is not taken, or the batch is
   * spent; with RECEIPT_GOES_AT_ONCE goes under way, once a turn comes (#turn): `first`, before the buyers waiting
   * (one likely there: a receipt just handed over, a pause between paced goes of a buyer that answered), else after.
   */
  async #go(did: string, first = false): Promise<void> {
    let b = this.#buyers.get(did);
    if (!b) this.#buyers.set(did, (b = { failed: 0, paced: false, sending: false, queued: false, woken: false }));
    // a go under way sends whatever waits for the buyer when its turn comes (#next): one at a time
    if (b.sending || b.queued) return;
    clearTimeout(b.timer);
    b.timer = undefined;
    if (this.#going >= this.#goesAtOnce) {
      b.queued = true;
      if (first) this.#turns = new Set([did, ...this.#turns]);
      else this.#turns.add(did);
      return;
    }
    this.#going++;
    try {
      await this.#send(did, b);
    } finally {
      this.#going--;
      this.#turn();
    }
  }

  /** Start the goes waiting for a turn, first come first, while fewer than RECEIPT_GOES_AT_ONCE run. */
  #turn(): void {
    while (!this.#stopped && this.#going < this.#goesAtOnce && this.#turns.size > 0) {
      const did = this.#turns.values().next().value!;
      this.#turns.delete(did);
      const b = this.#buyers.get(did);
      if (!b?.queued) continue;
      b.queued = false;
      void this.#go(did);
    }
  }

  async #send(did: string, b: BuyerSchedule): Promise<void> {
    b.sending = true;
    let end: GoEnd | undefined;
    let sent = 0;
    try {
      for (;;) {
        if (this.#stopped) return;
        const next = this.#next(did);
        if (!next) break;
        if (sent >= this.#batch) {
          end = 'paced';
          break;
        }
        const [address, p] = next;
        sent++;
        let outcome: OfferSendOutcome | 'busy';
        try {
          outcome = deliveryOutcome(await this.d.send(did, p.receipt));
        } catch {
          outcome = 'unreachable';
        }
        if (outcome === 'unreachable' || outcome === 'not_kept' || outcome === 'busy') {
          end = outcome;
          if (outcome === 'not_kept') this.d.log.info({ job: p.receipt.record.job, receipt: address, buyer: did }, 'the buyer could not keep the receipt sent directly: it is sent again later');
          break;
        }
        // the buyer answered: its back-off starts over
        b.failed = 0;
        b.woken = false;
        b.since = undefined;
        if (this.#pending.get(address) === p) this.#forget(address);
        // rejected: a buyer before this version (OUTCOME_WRONG_KIND), or one that refused it: sending again changes nothing
        // `delivery`, not `outcome`: "accepted" here is the buyer's node taking the record, never its verdict on the work
        // (a crash's failed receipt logged `outcome: accepted` read as the buyer accepting it; QA pass, session 48)
        this.d.log.info({ job: p.receipt.record.job, receipt: address, buyer: did, delivery: outcome === 'accepted' ? 'taken' : outcome }, outcome === 'rejected' ? 'the buyer refused the receipt sent directly (a node before this version takes none)' : outcome === 'ignored' ? 'receipt delivered to the buyer directly: it held it already' : 'receipt delivered to the buyer directly: its node took it (no verdict implied)');
      }
    } finally {
      b.sending = false;
    }
    if (this.#stopped || this.#buyers.get(did) !== b) return;
    if (!this.#next(did)) {
      // all sent (or only receipts restored untried left, which `resume` sends)
      this.#buyers.delete(did);
      return;
    }
    const now = this.d.clock();
    // a back-off doubles over goes that ended the same way: a buyer not reached, then reached but not keeping, starts
    // the second back-off at its first wait (review s55: 6 unanswered goes made the first not_kept wait 10 minutes)
    if (end !== b.end) b.failed = 0;
    b.end = end;
    // its rate limit answered: it is there, out of reach only from the next unanswered go on
    if (end === 'busy') b.since = undefined;
    let waitMs: number;
    if (end === 'paced' || end === 'busy') {
      waitMs = this.#retryMs;
    } else if (end === 'not_kept') {
      waitMs = Math.min(this.#notKeptMs * 2 ** Math.min(b.failed++, 16), RECEIPT_NOT_KEPT_MAX_MS);
    } else {
      b.since ??= now;
      const cap = now - b.since >= RECEIPT_RETRY_LONG_AFTER_MS ? RECEIPT_RETRY_LONG_MS : RECEIPT_RETRY_MAX_MS;
      waitMs = Math.min(this.#retryMs * 2 ** Math.min(b.failed++, 16), cap);
      this.d.log.debug({ buyer: did, waitMs, waiting: this.#pending.size }, 'the buyer is not reachable: its receipts are sent when it connects again, or after a wait');
    }
    b.paced = end === 'paced' || end === 'busy';
    b.timer = setTimeout(() => {
      b.timer = undefined;
      b.woken = false;
      // a paced go's buyer answered a moment ago: it goes before the buyers waiting that did not
      if (this.#buyers.get(did) === b) void this.#go(did, b.paced);
    }, waitMs);
    b.timer.unref();
  }

  #prune(): void {
    const now = this.d.clock();
    for (const [a, p] of this.#pending) if (p.until <= now) this.#forget(a);
  }
}
