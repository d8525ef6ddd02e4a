/**
 * Where a provider's offer goes (issue #16; docs/network.md "Offers: a direct
 * stream to the buyer"): to the job's buyer and, on an overlay with a steward
 * (which selects on managed overlays, pool/1), to the steward — over
 * /c0mpute/offer/1 (src/net/offer-route.ts), never on gossip. The advert the
 * offer cites is always attached: one copy to one or two nodes is cheap, and the
 * buyer need not hold it yet.
 */
import type { Opened } from '../records/envelope.js';
import type { Advert } from '../records/kinds.js';
import type { Network } from '../net/node.js';
import type { Logger } from '../util/log.js';

/** Send an offer to its recipients; resolves to how many took it (accepted or already held). */
export async function offerToBuyer(net: Network, offer: Opened, advert: Opened<Advert> | undefined, buyer: string | undefined, steward: string | undefined, log: Logger): Promise<number> {
  const to = [buyer, steward].filter((d): d is string => !!d && d !== net.did);
  if (!to.length) return 0;
  try {
    const { outcomes } = await net.sendOffer(to, offer.bytes, advert ? [advert.bytes] : []);
    const missed = Object.entries(outcomes).filter(([, o]) => o === 'unreachable' || o === 'rejected');
    if (missed.length) log.debug({ offer: offer.address, missed: Object.fromEntries(missed) }, 'offer not delivered to every recipient');
    return Object.values(outcomes).filter((o) => o === 'accepted' || o === 'ignored').length;
  } catch (e) {
    log.debug({ offer: offer.address, err: (e as Error).message }, 'offer not sent');
    return 0;
  }
}
