/**
 * `/c0mpute/claim/1` (docs/matching.md "Open orders, claims and leases";
 * docs/network.md direct streams): a provider sends one claim on an open
 * order straight to the buyer's node and waits for the answer.
 *
 *   provider → buyer   {t:'claim', claim, advert?}      one frame, then [1]
 *   buyer → provider   {t:'won', selection}             the signed first-claim selection
 *                    | {t:'refused', refusal}           a signed c0mpute.claim-refusal/1
 *                    | error frame (code)              not answerable with a signed record
 *
 * The server side (ClaimDesk) checks, cheapest first: one request frame within
 * the frame bound, the peer's claim budget (token bucket per peer:
 * NET_RATE_LIMITED; each refusal is also reported to the node's peer-abuse
 * score, `onRateLimited`, so a peer that keeps flooding claims is scored,
 * disconnected and banned like a gossip flooder), that the claim opens (CLAIM_INVALID) and is signed by the
 * peer that sent it (CLAIM_NOT_FROM_PEER), and that this node is taking claims
 * on that job (ORDER_UNKNOWN). Only then does the claim reach the buyer's
 * inbox, numbered in arrival order and opened (the buyer does not open it
 * again); the buyer decides and answers. Errors
 * carry no signature, so a stranger cannot make this node sign anything.
 *
 * No claim is left waiting on its stream's deadline: one still in an inbox when
 * its run ends is answered ORDER_UNKNOWN (inbox close), and when the node stops
 * (ClaimDesk.close, before the network stops) every waiting claim, and every
 * claim after, is answered NODE_CLOSING; a claim whose stream ends before the
 * buyer reads it leaves the inbox.
 */
import { C0Error } from '../errors.js';
import { MAX_ENVELOPE_BYTES, open, type Opened } from '../records/envelope.js';
import { T, type Claim, type ClaimRefusal, type Selection } from '../records/kinds.js';
import type { CborValue } from '../records/cbor.js';
import { monotonicClock, type Clock } from '../util/clock.js';
import { KeyedBuckets, type BucketSpec } from '../net/rate-limit.js';
import { NET_ERR, type ProtocolHandler, type ProtocolLimits } from '../net/protocols.js';
import { didFromPeerId } from '../node/peer-id.js';
import type { ArrivedClaim, ClaimAnswerFrame, ClaimInbox, OrderPorts } from './buyer-orders.js';

type ClaimErrorFrame = Extract<ClaimAnswerFrame, { t: 'error' }>;

export const CLAIM_PROTOCOL = '/c0mpute/claim/1';

/** Stream limits: a claim and an advert go up, one selection (it may list many arrivals) or refusal comes back. */
export const CLAIM_LIMITS: Partial<ProtocolLimits> = { maxFrameBytes: 2 * MAX_ENVELOPE_BYTES + 256, maxRequestFrames: 1, maxResponseFrames: 1, deadlineMs: 15_000, maxInboundStreams: 16 };

export interface ClaimDeskOptions {
  /** Claims a peer may send: sustained per second and burst (default 5/s, burst 20). */
  peer: BucketSpec;
  /** Claims waiting in one order's inbox before new ones are refused (default 256). */
  maxQueued: number;
  /** Told of each claim refused for the peer's rate (the network's `AbuseReports.report`: net/peer-abuse.ts). */
  onRateLimited?: (peer: string) => void;
  /** Monotonic clock for the per-peer buckets (default performance.now; the desk's own clock is the wall clock of receivedAt). */
  monoClock?: Clock;
}
export const CLAIM_DESK_DEFAULTS: ClaimDeskOptions = { peer: { ratePerSec: 5, burst: 20 }, maxQueued: 256 };

export const CLAIM_ERR = { INVALID: 'CLAIM_INVALID', NOT_FROM_PEER: 'CLAIM_NOT_FROM_PEER', ORDER_UNKNOWN: 'ORDER_UNKNOWN', BUSY: 'CLAIM_INBOX_FULL', RATE: 'NET_RATE_LIMITED', CLOSING: 'NODE_CLOSING' } as const;

/** The answer to a claim still waiting in an inbox that closes because its run ended (not judged: the order is over). */
const RUN_ENDED: ClaimErrorFrame = { t: 'error', code: CLAIM_ERR.ORDER_UNKNOWN, message: 'this node takes no more claims on that job: its run ended' };
/** The answer to every claim waiting, and every new one, once the node is stopping (ClaimDesk.close). */
export const NODE_CLOSING_FRAME: ClaimErrorFrame = { t: 'error', code: CLAIM_ERR.CLOSING, message: 'the buyer’s node is stopping: its open orders take no more claims' };

export interface ClaimRequest {
  t: 'claim';
  claim: Uint8Array;
  advert?: Uint8Array;
}

export function parseClaimRequest(v: CborValue | undefined): ClaimRequest {
  const o = v as Record<string, unknown>;
  if (typeof o !== 'object' || o === null || Array.isArray(o) || o instanceof Uint8Array || o.t !== 'claim') throw new C0Error(NET_ERR.BAD_REQUEST, 'claim/1: expected {t:"claim", claim, advert?}');
  if (!(o.claim instanceof Uint8Array) || o.claim.length > MAX_ENVELOPE_BYTES) throw new C0Error(NET_ERR.BAD_REQUEST, 'claim/1: claim must be an envelope', { field: 'claim' });
  if (o.advert !== undefined && (!(o.advert instanceof Uint8Array) || o.advert.length > MAX_ENVELOPE_BYTES)) throw new C0Error(NET_ERR.BAD_REQUEST, 'claim/1: advert must be an envelope', { field: 'advert' });
  return { t: 'claim', claim: o.claim, ...(o.advert ? { advert: o.advert as Uint8Array } : {}) };
}

/** What the claimant got back: the selection it won, or the buyer's signed refusal. */
export type ClaimOutcome = { won: true; selection: Opened<Selection> } | { won: false; refusal: Opened<ClaimRefusal> };

/** The claimant's reading of the buyer's answer: checked records, signed by `buyer`, about `claim`. */
export function parseClaimAnswer(v: CborValue | undefined, buyer: string, job: string, claim: string): ClaimOutcome {
  const o = v as Record<string, unknown>;
  if (typeof o === 'object' && o !== null && o.t === 'won' && o.selection instanceof Uint8Array) {
    const selection = open(o.selection, T.selection);
    if (selection.signer !== buyer || selection.record.job !== job || selection.record.winner !== claim) throw new C0Error('CLAIM_BAD_ANSWER', 'the selection is not the buyer’s, for this job, naming this claim');
    return { won: true, selection };
  }
  if (typeof o === 'object' && o !== null && o.t === 'refused' && o.refusal instanceof Uint8Array) {
    const refusal = open(o.refusal, T.claimRefusal);
    if (refusal.signer !== buyer || refusal.record.job !== job || refusal.record.claim !== claim) throw new C0Error('CLAIM_BAD_ANSWER', 'the refusal is not the buyer’s, for this job and claim');
    return { won: false, refusal };
  }
  throw new C0Error('CLAIM_BAD_ANSWER', 'claim/1: expected {t:"won", selection} or {t:"refused", refusal}');
}

interface InboxState {
  seq: number;
  queue: ArrivedClaim[];
  waiters: Array<(c: ArrivedClaim | undefined) => void>;
}

/** The buyer node's claim inboxes (one per open order it posted) and the protocol handler feeding them. */
export class ClaimDesk implements OrderPorts {
  readonly opts: ClaimDeskOptions;
  readonly #inboxes = new Map<string, InboxState>();
  /** The node is stopping (close): no claim is taken any more. */
  #closed = false;
  readonly #buckets: KeyedBuckets;
  /** Claims refused before reaching an inbox, by code (for metrics and tests). */
  readonly refusedEarly = new Map<string, number>();

  constructor(
    private readonly clock: Clock,
    opts: Partial<ClaimDeskOptions> = {},
  ) {
    this.opts = { ...CLAIM_DESK_DEFAULTS, ...opts };
    this.#buckets = new KeyedBuckets(this.opts.peer, this.opts.monoClock ?? monotonicClock);
  }

  inbox(job: string): ClaimInbox {
    const st: InboxState = { seq: 0, queue: [], waiters: [] };
    // the node is stopping: an inbox that takes nothing (Buyer.run refuses new runs by then; this is the backstop)
    if (this.#closed) return { next: () => Promise.resolve(undefined), close: () => {} };
    this.#inboxes.set(job, st);
    return {
      next: (signal) => {
        // a run that is ending (its deadline, its stop) takes no more claims, even ones already waiting: close answers them
        if (signal.aborted) return Promise.resolve(undefined);
        const c = st.queue.shift();
        if (c) return Promise.resolve(c);
        if (this.#inboxes.get(job) !== st) return Promise.resolve(undefined); // closed
        return new Promise((resolve) => {
          const onAbort = () => {
            st.waiters = st.waiters.filter((w) => w !== waiter);
            resolve(undefined);
          };
          const waiter = (x: ArrivedClaim | undefined) => {
            signal.removeEventListener('abort', onAbort);
            resolve(x);
          };
          st.waiters.push(waiter);
          signal.addEventListener('abort', onAbort, { once: true });
        });
      },
      close: (answer) => {
        if (this.#inboxes.get(job) === st) this.#inboxes.delete(job);
        this.#shut(st, this.#closed ? NODE_CLOSING_FRAME : (answer ?? RUN_ENDED));
      },
    };
  }

  /**
   * The node is stopping (OverlayNode.stop, before its network stops): every claim still waiting in an inbox is
   * answered NODE_CLOSING at once (before, it waited out its stream's 15 s deadline, and its provider's claim slot
   * with it), every buyer waiting on `next` gets undefined, and every claim from now on is refused NODE_CLOSING.
   */
  close(): void {
    this.#closed = true;
    for (const st of this.#inboxes.values()) this.#shut(st, NODE_CLOSING_FRAME);
    this.#inboxes.clear();
  }

  /** An inbox closes: its waiting claims are answered with `frame` (their streams end now), its waiting buyer gets undefined. */
  #shut(st: InboxState, frame: ClaimErrorFrame): void {
    for (const w of st.waiters.splice(0)) w(undefined);
    for (const a of st.queue.splice(0)) a.answer(frame);
  }

  /** Is this node taking claims on `job` now? */
  open(job: string): boolean {
    return this.#inboxes.has(job);
  }

  #early(code: string, message: string, field?: string): never {
    this.refusedEarly.set(code, (this.refusedEarly.get(code) ?? 0) + 1);
    throw new C0Error(code, message, field ? { field } : {});
  }

  /** The `/c0mpute/claim/1` server. */
  handler(): ProtocolHandler {
    return async (requests, ctx) => {
      if (requests.length !== 1) throw new C0Error(NET_ERR.BAD_REQUEST, 'claim/1 takes exactly one request frame');
      const peer = ctx.peer.toString();
      if (this.#closed) this.#early(CLAIM_ERR.CLOSING, NODE_CLOSING_FRAME.message);
      if (!this.#buckets.take(peer)) {
        this.opts.onRateLimited?.(peer);
        this.#early(CLAIM_ERR.RATE, `claim/1: this peer sends more than ${this.opts.peer.ratePerSec} claims a second`);
      }
      const req = parseClaimRequest(requests[0]);
      let c: Opened<Claim>;
      try {
        c = open(req.claim, T.claim);
      } catch (e) {
        if (!(e instanceof C0Error)) throw e;
        return this.#early(CLAIM_ERR.INVALID, `the claim does not open: ${e.code}`, 'claim');
      }
      const { signer, record: { job } } = c;
      if (didFromPeerId(peer) !== signer) this.#early(CLAIM_ERR.NOT_FROM_PEER, 'a claim is sent by its own signer', 'claim');
      const st = this.#inboxes.get(job);
      if (!st) this.#early(CLAIM_ERR.ORDER_UNKNOWN, 'this node is not taking claims on that job', 'claim');
      if (st.queue.length >= this.opts.maxQueued) this.#early(CLAIM_ERR.BUSY, 'too many claims waiting on this order');
      const frame = await new Promise<Exclude<ClaimAnswerFrame, { t: 'error' }>>((resolve, reject) => {
        const unanswered = () => new C0Error('CLAIM_UNANSWERED', 'the buyer did not answer the claim in time');
        if (ctx.signal.aborted) return reject(unanswered());
        const onAbort = () => {
          // the stream ended first (its deadline, the claimant gave up): the claim leaves the queue with it, so the
          // buyer does not judge a claim nobody hears the answer to, and it stops counting against maxQueued
          const i = st.queue.indexOf(arrived);
          if (i >= 0) st.queue.splice(i, 1);
          reject(unanswered());
        };
        ctx.signal.addEventListener('abort', onAbort, { once: true });
        let answered = false;
        const arrived: ArrivedClaim = {
          seq: ++st.seq,
          receivedAt: this.clock(),
          claim: req.claim,
          opened: c,
          ...(req.advert ? { advert: req.advert } : {}),
          from: peer,
          answer: (f) => {
            if (answered) return;
            answered = true;
            ctx.signal.removeEventListener('abort', onAbort);
            if (f.t === 'error') reject(new C0Error(f.code, f.message));
            else resolve(f);
          },
        };
        const w = st.waiters.shift();
        if (w) w(arrived);
        else st.queue.push(arrived);
      });
      await ctx.send(frame as unknown as CborValue);
    };
  }
}
