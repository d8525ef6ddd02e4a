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
 * knows (QA witness pass #6). So is an offer a recipient dropped as dated in
 * its future or already expired by its clock (RECORD_FROM_FUTURE,
 * RECORD_EXPIRED): the recipient only counts it in a metric, and the remedy is
 * this machine's clock (QA qaPnet F2: a provider 45 s ahead got no job and no
 * word of why).
 */
import type { Opened } from '../records/envelope.js';
import type { Advert } from '../records/kinds.js';
import type { Network } from '../net/node.js';
import type { Logger } from '../util/log.js';
import type { PeerLog } from '../util/peer-log.js';

/** Send an offer to its recipients; resolves to how many took it (accepted or already held; not one dropped as dated outside the recipient's clock). */
export async function offerToBuyer(net: Network, offer: Opened, advert: Opened<Advert> | undefined, buyer: string | undefined, steward: string | undefined, log: Logger, missed?: PeerLog): Promise<number> {
  const to = [buyer, steward].filter((d): d is string => !!d && d !== net.did);
  if (!to.length) return 0;
  try {
    const { outcomes, codes } = await net.sendOffer(to, offer.bytes, advert ? [advert.bytes] : []);
    let dated = 0;
    for (const [did, o] of Object.entries(outcomes)) {
      // ignored as dated outside the recipient's clock's window: only this machine's clock can put that right
      const clock = o === 'ignored' && (codes[did] === 'RECORD_FROM_FUTURE' || codes[did] === 'RECORD_EXPIRED') ? codes[did] : undefined;
      if (clock) dated++;
      if (o !== 'unreachable' && o !== 'rejected' && !clock) continue;
      const whose = did === buyer ? "the job's buyer" : "the overlay's steward";
      const msg =
        o === 'unreachable'
          ? `an offer did not reach ${whose} (not found, not dialled, or no answer in time): dropped, not sent again (docs/network.md §13)`
          : clock === 'RECORD_FROM_FUTURE'
            ? `${whose} dropped an offer as dated in its future (RECORD_FROM_FUTURE): this machine's clock is ahead of the recipient's by more than its clock-skew window (network.clockSkewMs, 30 s by default), so buyers whose clocks are right drop every offer of this node; fix this machine's clock (NTP)`
            : clock === 'RECORD_EXPIRED'
              ? `${whose} dropped an offer as already expired by its clock (RECORD_EXPIRED): this machine's clock is behind the recipient's by more than the offer's lifetime, or the recipient's is ahead; check this machine's clock (NTP)`
              : `${whose} refused an offer`;
      const fields = { offer: offer.address, outcome: o };
      // the line names the recipient as `peer`, and the code (PeerLog's)
      if (missed) missed.warn(did, codes[did] ?? o, msg, fields);
      else log.debug({ ...fields, peer: did, code: codes[did] }, msg);
    }
    return Object.values(outcomes).filter((o) => o === 'accepted' || o === 'ignored').length - dated;
  } catch (e) {
    log.debug({ offer: offer.address, err: (e as Error).message }, 'offer not sent');
    return 0;
  }
}
