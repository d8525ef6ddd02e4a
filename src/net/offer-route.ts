/**
 * `/c0mpute/offer/1`: an offer goes to the job's buyer only (issue #16,
 * docs/scale.md §4 "Offers go to the buyer only"; docs/network.md "Offers:
 * a direct stream to the buyer"). Offers were 96 % of the projected gossip
 * bytes when every node relayed every offer; an offer concerns one buyer (and,
 * on an overlay with a steward, the steward that selects for it).
 *
 *   provider → buyer   one frame: the offer message (the envelope, with the
 *                      advert it cites attached: docs/network.md framing)
 *   buyer → provider   one frame {verdict: 'accept'|'ignore', reason}
 *                    | error frame (code): OFFER_BAD_REQUEST, OFFER_NOT_FROM_PEER,
 *                      OFFER_NOT_KEPT, or the validation code of a rejected record
 *
 * The receiving side runs the message through the same record pipeline as a
 * gossiped one (size, seen, the per-peer rate limit of the offer kind, type,
 * shape, freshness, per-signer limits, signature, the offer hook), and an
 * accepted offer reaches the node's `subscribe('offer')` handlers exactly as a
 * gossiped one did. A peer may send only offers it signed (no relaying).
 *
 * `accept` is answered only once the handlers took the record (within the
 * stream's deadline): one the node dropped (its delivery queue full) or a
 * handler failed on (a write error) is answered OFFER_NOT_KEPT /
 * OUTCOME_NOT_KEPT and forgotten as seen, so the sender may send it again
 * (`not_kept`: try later), rather than taking an accept for a record the
 * recipient never kept (a provider forgets a receipt its buyer accepted).
 *
 * The sending side opens the stream by the buyer's PeerId (it derives from the
 * job's signer DID); libp2p dials it from the peer store, else finds it on the
 * DHT. An unreachable recipient drops the offer, counted in
 * `c0mpute_offers_direct_total{outcome}`.
 */
import { Counter, type Registry } from 'prom-client';
import { C0Error } from '../errors.js';
import { Slots } from '../util/serial.js';
import type { CborValue } from '../records/cbor.js';
import { peekType } from '../records/envelope.js';
import { didFromPeerId, peerIdFromDid } from '../node/peer-id.js';
import { decodeMessage } from './framing.js';
import { CODE_FORM } from './frames.js';
import type { ValidationOutcome } from './gossip-validation.js';
import type { CallOptions, ProtocolHandler, ProtocolLimits } from './protocols.js';
import { kindForType, type TopicKind } from './topics.js';
import type { PeerId } from '@libp2p/interface';

export const OFFER_PROTOCOL = '/c0mpute/offer/1';

/** Stream limits: one offer message up (envelope + attached advert, within the gossip message bound), one verdict back. */
export const OFFER_LIMITS: Partial<ProtocolLimits> = { maxFrameBytes: 128 * 1024 + 64, maxRequestFrames: 1, maxResponseFrames: 1, deadlineMs: 10_000, maxInboundStreams: 32 };

export const OFFER_ERR = { BAD_REQUEST: 'OFFER_BAD_REQUEST', NOT_FROM_PEER: 'OFFER_NOT_FROM_PEER', NOT_KEPT: 'OFFER_NOT_KEPT' } as const;

/**
 * `/c0mpute/outcome/1`: a job's outcome to the providers it concerns, not to
 * its market (docs/network.md §14 "A job's outcome"): a spot job's selection to
 * the providers it names, an acceptance to the provider whose receipt it
 * countersigns, and a receipt its exec stream could not deliver to the buyer
 * whose job it is (src/roles/provider/receipt-delivery.ts; the buyer keeps only
 * a receipt of its own job from the provider it selected: late-receipts.ts).
 * The same exchange as offer/1 (one message up, one verdict back; the signer
 * must be the sending peer), for a selection, an acceptance or a receipt;
 * anything else is refused OUTCOME_WRONG_KIND (a node before receipts came this
 * way refuses a receipt so, and the provider then sends it no more).
 */
export const OUTCOME_PROTOCOL = '/c0mpute/outcome/1';

/** Stream limits: one selection, acceptance or receipt up (an envelope, within MAX_ENVELOPE_BYTES: the frame bound is offer/1's, more than it needs), one verdict back. */
export const OUTCOME_LIMITS: Partial<ProtocolLimits> = { maxFrameBytes: 128 * 1024 + 64, maxRequestFrames: 1, maxResponseFrames: 1, deadlineMs: 10_000, maxInboundStreams: 32 };

export const OUTCOME_ERR = { BAD_REQUEST: 'OUTCOME_BAD_REQUEST', NOT_FROM_PEER: 'OUTCOME_NOT_FROM_PEER', WRONG_KIND: 'OUTCOME_WRONG_KIND', NOT_KEPT: 'OUTCOME_NOT_KEPT' } as const;

/** The kinds `/c0mpute/outcome/1` carries. */
export const OUTCOME_DIRECT_KINDS: readonly TopicKind[] = ['selection', 'acceptance', 'receipt'];

/** One direct record route: its protocol, the kinds it carries, its error codes and its send counter. */
export interface DirectRoute {
  protocol: string;
  limits: Partial<ProtocolLimits>;
  kinds: readonly TopicKind[];
  /** NOT_KEPT: a valid record this node did not keep (dropped, or a handler failed): the sender may send it again later. */
  err: { BAD_REQUEST: string; NOT_FROM_PEER: string; WRONG_KIND?: string; NOT_KEPT: string };
  counter: { name: string; help: string };
}

export const OFFER_ROUTE: DirectRoute = {
  protocol: OFFER_PROTOCOL,
  limits: OFFER_LIMITS,
  kinds: ['offer'],
  err: OFFER_ERR,
  counter: { name: 'c0mpute_offers_direct_total', help: 'Offers sent over /c0mpute/offer/1, by outcome (unreachable: the recipient could not be dialled, the offer is dropped; not_kept: the recipient took it but could not keep it now)' },
};

export const OUTCOME_ROUTE: DirectRoute = {
  protocol: OUTCOME_PROTOCOL,
  limits: OUTCOME_LIMITS,
  kinds: OUTCOME_DIRECT_KINDS,
  err: OUTCOME_ERR,
  counter: { name: 'c0mpute_outcomes_direct_total', help: 'Selections and acceptances sent over /c0mpute/outcome/1 to the providers they concern, and receipts an exec stream did not deliver to their buyer, by kind and outcome (unreachable: the recipient could not be dialled or did not answer in time; not_kept: the recipient took it but could not keep it now; either way a receipt is sent again later, a selection or acceptance as docs/node.md says)' },
};

export interface DirectServeDeps {
  /** The record pipeline, as for gossip (source 'direct'); `from`: the sending peer. */
  validate(kind: TopicKind, data: Uint8Array, from: string): Promise<ValidationOutcome>;
  /**
   * Hand an accepted outcome (of the message `data`) to the subscribers (the same path as gossip); resolves once they
   * handled its primary record: true when they all took it, false when it was dropped (the delivery queue full) or a
   * handler failed (then it is no longer a duplicate: a copy sent again is taken afresh). Never rejects.
   */
  accept(out: ValidationOutcome, from: string, data: Uint8Array): Promise<boolean>;
  /**
   * Charge the sending peer for an invalid message (the network's FloodGuard.strike: `abusePerInvalid` points on its
   * abuse score): not a record message, a record another key signed, or one the pipeline rejected. Default none.
   */
  strike?(from: string): void;
  /**
   * The sending peer's message rate, for a message refused before the pipeline that may still be honest (a record
   * kind the route does not carry: a newer peer's): false when over it (FloodGuard.admitPeer counts and blames it).
   */
  admit?(kind: TopicKind, from: string): boolean;
}

/**
 * The receiving side of a direct route (the offer's buyer or steward; the outcome's provider). What the sender pays
 * (docs/network.md §10 "Direct records feed the same score"): an invalid message is a strike (`strike`); a record of a
 * kind the route does not carry costs a token of the peer's message rate (`admit`), blamed only past it; what the
 * pipeline ignores (a duplicate, an expired or late record, a rate limit: the pipeline's own blame) costs nothing more.
 */
export function directHandler(route: DirectRoute, d: DirectServeDeps): ProtocolHandler {
  const name = route.protocol.split('/').slice(-2).join('/');
  return async (frames, ctx) => {
    const from = ctx.peer.toString();
    const invalid = (code: string, message: string): C0Error => {
      d.strike?.(from);
      return new C0Error(code, message);
    };
    const data = frames[0];
    if (frames.length !== 1 || !(data instanceof Uint8Array)) throw invalid(route.err.BAD_REQUEST, `${name} takes one frame: the record message`);
    let head: { type: string; signer: string };
    let peer: string | undefined;
    try {
      head = peekType(decodeMessage(data).primary);
    } catch (e) {
      throw invalid(route.err.BAD_REQUEST, `${name}: not a record message (${(e as Error).message.slice(0, 120)})`);
    }
    const kind = kindForType(head.type);
    if (kind === undefined || !route.kinds.includes(kind)) {
      // a well-formed record of another kind: what a newer peer may send (outcome/1 took no receipts once), not proof of abuse
      d.admit?.(kind ?? route.kinds[0]!, from);
      throw new C0Error(route.err.WRONG_KIND ?? route.err.BAD_REQUEST, `${name} carries ${route.kinds.join(' and ')} records, not ${String(head.type).slice(0, 80)}`);
    }
    try {
      peer = didFromPeerId(ctx.peer);
    } catch {
      peer = undefined;
    }
    if (head.signer !== peer) throw invalid(route.err.NOT_FROM_PEER, `a peer may send only the ${route.kinds.join(' and ')} records it signed`);
    const out = await d.validate(kind, data, from);
    if (out.verdict === 'reject') throw invalid(out.reason, `${kind} rejected: ${out.reason}`);
    // accept only once the subscribers took it (the sender forgets what was accepted): within the stream's deadline
    if (out.verdict === 'accept' && !(await untilAborted(d.accept(out, from, data), ctx.signal)))
      throw new C0Error(route.err.NOT_KEPT, `the ${kind} was not kept here now (the node's delivery queue was full or storing it failed): send it again later`);
    await ctx.send({ verdict: out.verdict, reason: out.reason } as CborValue);
  };
}

/** `p`, or a rejection with the signal's reason once it aborts (the stream's deadline, the caller gone). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => (signal.removeEventListener('abort', onAbort), resolve(v)),
      (e: unknown) => (signal.removeEventListener('abort', onAbort), reject(e as Error)),
    );
  });
}

/**
 * What a recipient did with a record sent directly: took it (`accepted`), had it or could not judge it (`ignored`),
 * refused it with an error frame (`rejected`: sending it again changes nothing), took it but could not keep it now
 * (`not_kept`, its *_NOT_KEPT code: worth sending again later), or could not be reached (`unreachable`).
 */
export type OfferSendOutcome = 'accepted' | 'ignored' | 'rejected' | 'not_kept' | 'unreachable';

/**
 * The reasons of an `ignore` verdict that say the recipient did not take the record now, not that it holds it or that
 * it is not for it: its rate limit for the sending peer (RATE_LIMITED), its delivery queue or verify worker, a failing
 * store (STORE_*), an internal error, or a record dated ahead of its clock (its clock may catch up). A sender that
 * must get the record there (a receipt to its buyer, an acceptance to its provider) sends it again, as after
 * `not_kept` (QA ffRcpt F2: every `ignore` read as "it held it already", and a receipt past the buyer's rate limit
 * was forgotten unsent).
 */
const NOT_TAKEN_NOW = new Set(['RATE_LIMITED', 'QUEUE_FULL', 'VERIFY_WORKER_FAILED', 'INTERNAL', 'RECORD_FROM_FUTURE', 'EVIDENCE_FROM_THE_FUTURE']);

/** Whether an `ignored` send's `code` (the recipient's reason) means it did not take the record now (NOT_TAKEN_NOW). */
function notTakenNow(code: string | undefined): boolean {
  return code !== undefined && (NOT_TAKEN_NOW.has(code) || code.startsWith('STORE_'));
}

/** A send's outcome as its sender counts it: `ignored` for a reason that says "not now" (`code`: notTakenNow) is `not_kept`. */
export function takenOutcome(outcome: OfferSendOutcome, code: string | undefined): OfferSendOutcome {
  return outcome === 'ignored' && notTakenNow(code) ? 'not_kept' : outcome;
}

export interface OfferSendDeps {
  call(peer: PeerId, protocol: string, frames: CborValue[], opts?: CallOptions): Promise<CborValue[]>;
  registry: Registry;
  /** Whole exchange, dial included (default 10 s). */
  timeoutMs?: number;
  /** The node's places for direct exchanges, shared by all its sends (default: SEND_CONCURRENCY for this send alone). */
  slots?: Slots;
}

/** A route's send counter, by outcome (and kind, for a route of several kinds); one per process registry. */
function counter(registry: Registry, route: DirectRoute): Counter<string> {
  const labelNames = route.kinds.length > 1 ? ['kind', 'outcome'] : ['outcome'];
  return (registry.getSingleMetric(route.counter.name) as Counter<string> | undefined) ?? new Counter({ ...route.counter, labelNames, registers: [registry] });
}

/** Direct exchanges a node runs at a time, all its sends together (createNetwork's `Slots`). */
export const SEND_CONCURRENCY = 16;

/**
 * Send one record message over a direct route to each recipient DID; resolves to the outcome per recipient (never
 * throws). `codes`, when given, learns why each recipient that did not take it did not: the error's code (the
 * recipient's error frame, or this side's: NET_DEADLINE, NET_DIAL_FAILED, …), or the reason of its `ignore` verdict
 * (RECORD_FROM_FUTURE, RECORD_EXPIRED, a duplicate's code).
 */
export async function sendDirect(d: OfferSendDeps, route: DirectRoute, kind: TopicKind, to: readonly string[], data: Uint8Array, codes?: Record<string, string>): Promise<Record<string, OfferSendOutcome>> {
  const c = counter(d.registry, route);
  const out: Record<string, OfferSendOutcome> = {};
  // at most SEND_CONCURRENCY exchanges at a time across the node's sends: a selection may name hundreds of providers,
  // each a dial, and many jobs may be decided at once
  const slots = d.slots ?? new Slots(SEND_CONCURRENCY);
  const one = async (did: string): Promise<void> => {
    let outcome: OfferSendOutcome;
    try {
      const frames = await slots.run(() => d.call(peerIdFromDid(did), route.protocol, [data], { limits: { ...route.limits, deadlineMs: d.timeoutMs ?? route.limits.deadlineMs! } }));
      const answer = frames[0] as { verdict?: unknown; reason?: unknown } | undefined;
      outcome = answer?.verdict === 'accept' ? 'accepted' : 'ignored';
      // why it was ignored, as the recipient's pipeline said it (a duplicate; a record from the future or expired by the
      // recipient's clock, which only the sender can put right): a code, never free text
      if (outcome === 'ignored' && codes && typeof answer?.reason === 'string' && CODE_FORM.test(answer.reason)) codes[did] = answer.reason;
    } catch (e) {
      // an error frame from the recipient is its verdict (its NOT_KEPT: try later); anything else (no route, no such protocol, deadline) is unreachable
      const err = e as C0Error | undefined;
      outcome = err?.detail?.remote === true ? (err.code === route.err.NOT_KEPT ? 'not_kept' : 'rejected') : 'unreachable';
      if (codes) codes[did] = typeof err?.code === 'string' ? err.code : 'NET_STREAM_FAILED';
    }
    c.inc(route.kinds.length > 1 ? { kind, outcome } : { outcome });
    out[did] = outcome;
  };
  await Promise.all([...new Set(to)].map(one));
  return out;
}

/** Send one offer message to each recipient DID over offer/1 (sendDirect's offer route). */
export function sendOffer(d: OfferSendDeps, to: readonly string[], data: Uint8Array, codes?: Record<string, string>): Promise<Record<string, OfferSendOutcome>> {
  return sendDirect(d, OFFER_ROUTE, 'offer', to, data, codes);
}
