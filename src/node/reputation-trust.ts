/**
 * The daemon's side of reputation (docs/market.md "Reputation and its threat
 * model"): the trust sources a node derives its reputation view with, from its
 * config, and the gossip check that a `c0mpute.nondelivery/1` or `/2` links
 * before it is stored or forwarded.
 */
import { isC0Error } from '../errors.js';
import type { Opened } from '../records/envelope.js';
import type { AnyNonDelivery } from '../records/kinds.js';
import { rejectError, type SemanticHook } from '../net/gossip-validation.js';
import { linkNonDelivery } from '../reputation/nondelivery.js';
import type { TrustSources } from '../reputation/derive.js';
import type { NetworkConfig, NodeConfig } from './config.js';

/** Trust sources from the `reputation` section, plus the overlay's allowlist when `overlayMembers` is on. */
export function trustFor(config: NodeConfig, network: NetworkConfig): TrustSources {
  const rc = config.reputation;
  const members = rc.overlayMembers ? (network.allowlist ?? []) : [];
  return { trustedBuyers: [...new Set([...rc.trustedBuyers, ...members])].sort(), dealtWith: rc.dealtWith, secondHandWeight: rc.secondHandWeight };
}

/** A non-delivery that does not link (its proof) is provably invalid: reject (the sender's score drops). */
export const nondeliveryHook: SemanticHook = (rec) => {
  try {
    linkNonDelivery(rec as Opened<AnyNonDelivery>);
  } catch (e) {
    if (isC0Error(e)) throw rejectError(e.code, e.message, e.field);
    throw e;
  }
};
