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
 *                      or the validation code of a rejected record
 *
 * The receiving side runs the message through the same record pipeline as a
 * gossiped one (size, seen, the per-peer rate limit of the offer kind, type,
 * shape, freshness, per-signer limits, signature, the offer hook), and an
 * accepted offer reaches the node's `subscribe('offer')` handlers exactly as a
 * gossiped one did. A peer may send only offers it signed (no relaying).
 *
 * The sending side opens the stream by the buyer's PeerId (it derives from the
 * job's signer DID); libp2p dials it from the peer store, else finds it on the
 * DHT. An unreachable recipient drops the offer, counted in
 * `c0mpute_offers_direct_total{outcome}`.
 */
import { Counter, type Registry } from 'prom-client';
import { C0Error } from '../errors.js';
import type { CborValue } from '../records/cbor.js';
import { peekType } from '../records/envelope.js';
import { didFromPeerId, peerIdFromDid } from '../node/peer-id.js';
import { decodeMessage } from './framing.js';
import type { ValidationOutcome } from './gossip-validation.js';
import type { CallOptions, ProtocolHandler, ProtocolLimits } from './protocols.js';
import type { PeerId } from '@libp2p/interface';

export const OFFER_PROTOCOL = '/c0mpute/offer/1';

/** Stream limits: one offer message up (envelope + attached advert, within the gossip message bound), one verdict back. */
export const OFFER_LIMITS: Partial<ProtocolLimits> = { maxFrameBytes: 128 * 1024 + 64, maxRequestFrames: 1, maxResponseFrames: 1, deadlineMs: 10_000, maxInboundStreams: 32 };

export const OFFER_ERR = { BAD_REQUEST: 'OFFER_BAD_REQUEST', NOT_FROM_PEER: 'OFFER_NOT_FROM_PEER' } as const;

export interface OfferServeDeps {
  /** The record pipeline, as for gossip (source 'direct'). */
  validate(data: Uint8Array, from: string): Promise<ValidationOutcome>;
  /** Hand an accepted outcome to the subscribers (the same path as gossip). */
  accept(out: ValidationOutcome, from: string): void;
}

/** The receiving (buyer's or steward's) side. */
export function offerHandler(d: OfferServeDeps): ProtocolHandler {
  return async (frames, ctx) => {
    const data = frames[0];
    if (frames.length !== 1 || !(data instanceof Uint8Array)) throw new C0Error(OFFER_ERR.BAD_REQUEST, 'offer/1 takes one frame: the offer message');
    let signer: string;
    let peer: string | undefined;
    try {
      signer = peekType(decodeMessage(data).primary).signer;
    } catch (e) {
      throw new C0Error(OFFER_ERR.BAD_REQUEST, `offer/1: not an offer message (${(e as Error).message.slice(0, 120)})`);
    }
    try {
      peer = didFromPeerId(ctx.peer);
    } catch {
      peer = undefined;
    }
    if (signer !== peer) throw new C0Error(OFFER_ERR.NOT_FROM_PEER, 'a peer may send only the offers it signed');
    const from = ctx.peer.toString();
    const out = await d.validate(data, from);
    if (out.verdict === 'reject') throw new C0Error(out.reason, `offer rejected: ${out.reason}`);
    if (out.verdict === 'accept') d.accept(out, from);
    await ctx.send({ verdict: out.verdict, reason: out.reason } as CborValue);
  };
}

export type OfferSendOutcome = 'accepted' | 'ignored' | 'rejected' | 'unreachable';

export interface OfferSendDeps {
  call(peer: PeerId, protocol: string, frames: CborValue[], opts?: CallOptions): Promise<CborValue[]>;
  registry: Registry;
  /** Whole exchange, dial included (default 10 s). */
  timeoutMs?: number;
}

/** Counter of offers sent directly, by outcome (one per process registry). */
function counter(registry: Registry): Counter<'outcome'> {
  const name = 'c0mpute_offers_direct_total';
  return (registry.getSingleMetric(name) as Counter<'outcome'> | undefined) ?? new Counter({ name, help: 'Offers sent over /c0mpute/offer/1, by outcome (unreachable: the recipient could not be dialled; the offer is dropped)', labelNames: ['outcome'], registers: [registry] });
}

/** Send one offer message to each recipient DID; resolves to the outcome per recipient (never throws). */
export async function sendOffer(d: OfferSendDeps, to: readonly string[], data: Uint8Array): Promise<Record<string, OfferSendOutcome>> {
  const c = counter(d.registry);
  const out: Record<string, OfferSendOutcome> = {};
  await Promise.all(
    [...new Set(to)].map(async (did) => {
      let outcome: OfferSendOutcome;
      try {
        const frames = await d.call(peerIdFromDid(did), OFFER_PROTOCOL, [data], { limits: { ...OFFER_LIMITS, deadlineMs: d.timeoutMs ?? OFFER_LIMITS.deadlineMs! } });
        outcome = (frames[0] as { verdict?: unknown } | undefined)?.verdict === 'accept' ? 'accepted' : 'ignored';
      } catch (e) {
        // an error frame from the recipient is its verdict; anything else (no route, no such protocol, deadline) is unreachable
        outcome = (e as C0Error).detail?.remote === true ? 'rejected' : 'unreachable';
      }
      c.inc({ outcome });
      out[did] = outcome;
    }),
  );
  return out;
}
