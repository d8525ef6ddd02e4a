/**
 * The buyer's record of a selected provider that did not deliver (docs/market.md "Reputation and its threat model";
 * src/reputation/nondelivery.ts): an auction's winner gets a `c0mpute.nondelivery/1`, or a /2 when its offer cites a
 * pooled advert (it counts against the pool: docs/pools.md "Reputation"); an open order's winning claim a /3
 * (docs/matching.md "Open orders, claims and leases"). Each is signed, kept and published on its own topic kind.
 * Used by the auction's run (src/roles/buyer.ts) and the open order's (src/roles/buyer-orders.ts).
 */
import type { Opened } from '../records/envelope.js';
import type { Advert, Claim, Job, NonDeliveryReason, NonDeliveryType, Offer, Selection } from '../records/kinds.js';
import { nonDeliveryTopicKind } from '../net/topics.js';
import { signClaimNonDelivery, signNonDelivery } from '../reputation/nondelivery.js';
import type { BuyerDeps, BuyerEvent } from './buyer.js';

/** What the provider committed by (an auction's offer, or an open order's claim), and who it is. */
export type NonDeliveryOf = { provider: string; offer: Opened<Offer>; claim?: undefined; cited?: undefined } | { provider: string; claim: Opened<Claim>; offer?: undefined; cited: Opened<Advert> | undefined };

/**
 * Sign, keep and publish a non-delivery for `of.provider`, the selected provider that sent no receipt, and say so
 * (`nondelivery` event); its address, or undefined when it cannot be signed or kept (logged, with `logFields`: the
 * run's outcome is unchanged). It carries the advert the offer or claim cites (`of.cited`, else the one held) when
 * that is the one, its signer's and pooled (signNonDelivery, signClaimNonDelivery).
 */
export async function recordNonDelivery(d: BuyerDeps, job: Opened<Job>, selection: Opened<Selection>, of: NonDeliveryOf, reason: NonDeliveryReason, detail: string, onEvent: (e: BuyerEvent) => void, logFields: Record<string, unknown> = {}): Promise<string | undefined> {
  try {
    const by = of.offer ?? of.claim;
    const advert = of.cited ?? d.advertAt?.(by.record.advert) ?? d.adverts(of.provider);
    const common = { job, selection, reason, detail, signedAt: Math.max(d.clock(), selection.record.decidedAt), signer: d.signer, ...(advert ? { advert } : {}) };
    const nd = of.offer ? signNonDelivery({ ...common, offer: of.offer }) : signClaimNonDelivery({ ...common, claim: of.claim });
    await d.store(nd);
    await d.publish(nonDeliveryTopicKind(nd.type as NonDeliveryType), nd).catch(() => {});
    onEvent({ e: 'nondelivery', provider: of.provider, reason, address: nd.address });
    return nd.address;
  } catch (e) {
    d.log.warn({ ...logFields, provider: of.provider, reason, err: (e as Error).message }, 'could not record the non-delivery');
    return undefined;
  }
}
