/**
 * Receipts the exec stream could not deliver, sent to their buyer directly
 * (docs/network.md §14 "Who hears a job's outcome", docs/node.md "A receipt
 * the buyer did not get on the stream"). A buyer that left mid-job (killed,
 * restarted, its connection broke, the provider stalled past the buyer's
 * patience) does not join the receipt topics by default, so the gossiped copy
 * never reaches it. The provider sends the receipt over `/c0mpute/outcome/1`
 * (one message up, one verdict back) to the job's buyer; one it could not reach
 * is kept here and sent again each time that buyer connects (identifies) to
 * this node, and after a wait (`retryMs`, doubling with each failed try up to
 * RECEIPT_RETRY_MAX_MS), until the buyer answers or the entry lapses. One the
 * buyer took but could not keep (`not_kept`: its delivery queue was full, or
 * storing it failed; OUTCOME_NOT_KEPT) is kept the same way. The wait is for a
 * buyer still connected, whose next connection may be far off: one that did not
 * keep it, or one not reached though connected (its handler outlasted
 * outcome/1's deadline, a stream that broke); this node does not tell those
 * from a buyer that left, which a try after the wait only dials in vain.
 *
 * Bounded: at most `maxPending` receipts (the oldest go first), each for at
 * most `keepMs`. With `keep`, each waiting receipt is also written to the
 * provider's store (store/provider-runs.ts) and `restore`d at the next start,
 * so a provider restarted before its buyer came back still sends it.
 *
 * Every receipt starts out so on disk: its `entry` is written in the same
 * batch as the receipt itself, marked untried, and leaves the keep when the
 * buyer acknowledges it on the stream (`acknowledged`) or goes to `deliver`.
 * One still untried at the next start (the provider was killed, or stopped,
 * before either) is sent at once (`resume`), not only when its buyer connects.
 */
import type { Opened } from '../../records/envelope.js';
import type { Receipt } from '../../records/kinds.js';
import type { OfferSendOutcome } from '../../net/offer-route.js';
import type { Clock } from '../../util/clock.js';
import type { Logger } from '../../util/log.js';

/** Receipts waiting for their buyer at most (the oldest are dropped past it). */
export const RECEIPT_DELIVERY_MAX = 1024;
/** How long a receipt waits for its buyer to come back (6 hours). */
export const RECEIPT_DELIVERY_KEEP_MS = 6 * 60 * 60 * 1000;
/**
 * The first wait before a receipt its buyer could not keep, or was not reached for, is sent again (5 s; doubled each
 * time, up to RECEIPT_RETRY_MAX_MS). Short, because a buyer frozen (SIGSTOP, a paused VM) while its receipt was sent
 * keeps its connection, so no new connection sends it: with 1 minute (before, QA ffGang F5) a buyer frozen 50 s got
 * it 56 s after it ran again. A buyer gone for good costs a few more failed dials in the first minutes (about 19 in
 * the 6 hours a receipt waits, against 16).
 */
export const RECEIPT_RETRY_MS = 5_000;
/** The longest such wait (30 minutes). */
export const RECEIPT_RETRY_MAX_MS = 30 * 60_000;

/** What one send over outcome/1 came to: the outcome, and for one `ignored`, the buyer's reason (its verdict's code). */
export interface ReceiptSendResult {
  outcome: OfferSendOutcome;
  code?: string;
}

/**
 * The reasons of an `ignore` verdict that say the buyer did not take the receipt now, not that it holds it or that it
 * is not its own: its rate limit for the sending peer (RATE_LIMITED: a provider sending many waiting receipts at once),
 * its delivery queue or verify worker, a failing store (STORE_*), an internal error, or a receipt dated ahead of its
 * clock (the buyer's clock may catch up). Such a receipt waits as a `not_kept` one does; before (QA ffRcpt F2) every
 * `ignore` read as "it held it already", and a receipt past the buyer's rate limit was forgotten unsent.
 */
const NOT_TAKEN_NOW = new Set(['RATE_LIMITED', 'QUEUE_FULL', 'VERIFY_WORKER_FAILED', 'INTERNAL', 'RECORD_FROM_FUTURE', 'EVIDENCE_FROM_THE_FUTURE']);

/** The outcome a send's result counts as here: an `ignored` with a NOT_TAKEN_NOW (or STORE_*) reason is `not_kept`. */
export function deliveryOutcome(r: OfferSendOutcome | ReceiptSendResult): OfferSendOutcome {
  if (typeof r === 'string') return r;
  if (r.outcome === 'ignored' && r.code !== undefined && (NOT_TAKEN_NOW.has(r.code) || r.code.startsWith('STORE_'))) return 'not_kept';
  return r.outcome;
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
  /** The first wait before a receipt the buyer could not keep, or was not reached for, is sent again (default RECEIPT_RETRY_MS). */
  retryMs?: number;
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
  sending: boolean;
  /** Restored untried: sent by `resume`. */
  untried: boolean;
  /** Tries that failed (the buyer could not keep it, or was not reached): the wait before the next try doubles with each. */
  failed: number;
  /** The next try after a failed one. */
  retry?: ReturnType<typeof setTimeout>;
}

export class ReceiptDelivery {
  /** By receipt address, oldest first. */
  readonly #pending = new Map<string, Pending>();
  readonly #max: number;
  readonly #keepMs: number;
  readonly #retryMs: number;
  #stopped = false;

  constructor(private readonly d: ReceiptDeliveryDeps) {
    this.#max = Math.max(1, d.maxPending ?? RECEIPT_DELIVERY_MAX);
    this.#keepMs = d.keepMs ?? RECEIPT_DELIVERY_KEEP_MS;
    this.#retryMs = Math.max(0, d.retryMs ?? RECEIPT_RETRY_MS);
  }

  /** Receipts waiting for their buyer now. */
  get size(): number {
    return this.#pending.size;
  }

  /** The buyers with a receipt waiting (for diagnostics and tests). */
  waitingFor(): string[] {
    return [...new Set([...this.#pending.values()].map((p) => p.receipt.record.buyer))];
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
   * Send a receipt its exec stream did not deliver to its buyer now; kept for the buyer's next connection, and
   * sent again after a wait, when it could not be reached or did not keep it. Resolves once this first try is over. After `stop` it is only kept (untried), so the next
   * start sends it.
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
    await this.#try(receipt.address);
  }

  /**
   * A receipt kept waiting before a restart: held again until `until`, and sent when its buyer connects; `untried`
   * (never acknowledged on the stream nor sent directly) also by `resume`. One lapsed, or of this node's own job, is
   * dropped from the keep.
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
   * At start, once the network is up: send each receipt restored untried to its buyer now (a provider killed or
   * stopped before its buyer acknowledged it on the stream). Returns them, for the caller to gossip as well: no one
   * may have heard them yet. One not reached waits for its buyer's connection, and a
   * wait, as any other.
   */
  resume(): Array<Opened<Receipt>> {
    if (this.#stopped) return [];
    const out: Array<Opened<Receipt>> = [];
    for (const [address, p] of this.#pending) {
      if (!p.untried) continue;
      p.untried = false;
      out.push(p.receipt);
      void this.#try(address);
    }
    return out;
  }

  /** A peer connected (libp2p identified it): send it each receipt waiting for it. */
  onConnected(did: string): void {
    if (this.#stopped || this.#pending.size === 0) return;
    this.#prune();
    // one restored untried waits for `resume`, which gossips it too
    for (const [address, p] of this.#pending) if (p.receipt.record.buyer === did && !p.sending && !p.untried) void this.#try(address);
  }

  #add(receipt: Opened<Receipt>, until: number, untried = false): void {
    this.#pending.set(receipt.address, { receipt, until, sending: false, untried, failed: 0 });
    while (this.#pending.size > this.#max) this.#forget(this.#pending.keys().next().value!);
  }

  /** No longer wait for `address`: out of memory and out of the keep. */
  #forget(address: string): void {
    clearTimeout(this.#pending.get(address)?.retry);
    this.#pending.delete(address);
    void this.#keepOp('drop', address, () => this.d.keep!.drop(address));
  }

  async #keepOp(op: 'save' | 'drop', address: string, f: () => Promise<void>): Promise<void> {
    if (!this.d.keep) return;
    try {
      await f();
    } catch (e) {
      this.d.log.warn({ receipt: address, err: (e as Error).message }, op === 'save' ? 'could not keep a waiting receipt on disk: a restart before its buyer returns loses its resend' : 'could not drop a delivered receipt from disk: it is sent again after a restart');
    }
  }

  stop(): void {
    this.#stopped = true;
    for (const p of this.#pending.values()) clearTimeout(p.retry);
    this.#pending.clear();
  }

  async #try(address: string): Promise<void> {
    const p = this.#pending.get(address);
    if (!p || p.sending) return;
    p.sending = true;
    const { buyer, job } = p.receipt.record;
    let outcome: OfferSendOutcome;
    try {
      outcome = deliveryOutcome(await this.d.send(buyer, p.receipt));
    } catch {
      outcome = 'unreachable';
    }
    p.sending = false;
    if (outcome === 'unreachable' || outcome === 'not_kept') {
      // kept (on disk too): after stop, for the next start
      if (this.#stopped || this.#pending.get(address) !== p) return;
      // sent again when the buyer connects, and after a wait: a buyer that did not keep it (OUTCOME_NOT_KEPT: its
      // delivery queue full, a failed write) is connected, and so may be one not reached (its handler outlasted the
      // exchange's deadline, a stream that broke): its next connection may be far off
      const waitMs = Math.min(this.#retryMs * 2 ** Math.min(p.failed++, 16), RECEIPT_RETRY_MAX_MS);
      clearTimeout(p.retry);
      p.retry = setTimeout(() => {
        p.retry = undefined;
        // lapsed meanwhile: no more tries
        if (this.#pending.get(address) === p && p.until <= this.d.clock()) this.#forget(address);
        else void this.#try(address);
      }, waitMs);
      p.retry.unref();
      if (outcome === 'not_kept') this.d.log.info({ job, receipt: address, buyer, waitMs }, 'the buyer could not keep the receipt sent directly: it is sent again later');
      else this.d.log.debug({ job, receipt: address, buyer, waitMs, waiting: this.#pending.size }, 'the buyer is not reachable: its receipt is sent when it connects again, or after a wait');
      return;
    }
    this.#forget(address);
    // rejected: a buyer before this version (OUTCOME_WRONG_KIND), or one that refused it: sending again changes nothing
    // `delivery`, not `outcome`: "accepted" here is the buyer's node taking the record, never its verdict on the work
    // (a crash's failed receipt logged `outcome: accepted` read as the buyer accepting it; QA pass, session 48)
    this.d.log.info({ job, receipt: address, buyer, delivery: outcome === 'accepted' ? 'taken' : outcome }, outcome === 'rejected' ? 'the buyer refused the receipt sent directly (a node before this version takes none)' : outcome === 'ignored' ? 'receipt delivered to the buyer directly: it held it already' : 'receipt delivered to the buyer directly: its node took it (no verdict implied)');
  }

  #prune(): void {
    const now = this.d.clock();
    for (const [a, p] of this.#pending) if (p.until <= now && !p.sending) this.#forget(a);
  }
}
