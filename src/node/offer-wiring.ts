/**
 * Where a provider's offer goes (issue #16; docs/network.md "Offers: a direct
 * stream to the buyer"): to the job's buyer and, on an overlay with a steward
 * (which selects on managed overlays, pool/1), to the steward — over
 * /c0mpute/offer/1 (src/net/offer-route.ts), never on gossip. The advert the
 * offer cites is always attached: one copy to one or two nodes is cheap, and the
 * buyer need not hold it yet.
 *
 * An offer a recipient did not take (it could not be reached, or it refused the
 * offer) is said in the log (`missed`, a PeerLog: the first per recipient and
 * code in full, then a summary a minute), with the code: the buyer cannot tell
 * an offer lost on the way from one never made, so this is the only place that
 * knows (QA witness pass #6).
 */
import type { Opened } from '../records/envelope.js';
import type { Advert } from '../records/kinds.js';
import type { Network } from '../net/node.js';
import type { Logger } from '../util/log.js';
import type { PeerLog } from '../util/peer-log.js';

/** Send an offer to its recipients; resolves to how many took it (accepted or already held). */
export async function offerToBuyer(net: Network, offer: Opened, advert: Opened<Advert> | undefined, buyer: string | undefined, steward: string | undefined, log: Logger, missed?: PeerLog): Promise<number> {
  const to = [buyer, steward].filter((d): d is string => !!d && d !== net.did);
  if (!to.length) return 0;
  try {
    const { outcomes, codes } = await net.sendOffer(to, offer.bytes, advert ? [advert.bytes] : []);
    for (const [did, o] of Object.entries(outcomes)) {
      if (o !== 'unreachable' && o !== 'rejected') continue;
      const whose = did === buyer ? "the job's buyer" : "the overlay's steward";
      const msg =
        o === 'unreachable'
          ? `an offer did not reach ${whose} (not found, not dialled, or no answer in time): dropped, not sent again (docs/network.md §13)`
          : `${whose} refused an offer`;
      const fields = { offer: offer.address, outcome: o };
      // the line names the recipient as `peer`, and the code (PeerLog's)
      if (missed) missed.warn(did, codes[did] ?? o, msg, fields);
      else log.debug({ ...fields, peer: did, code: codes[did] }, msg);
    }
    return Object.values(outcomes).filter((o) => o === 'accepted' || o === 'ignored').length;
  } catch (e) {
    log.debug({ offer: offer.address, err: (e as Error).message }, 'offer not sent');
    return 0;
  }
}
