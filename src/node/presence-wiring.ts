/**
 * Presence on an overlay (spec/matching-and-leases.md "Presence" on the P2P
 * network; docs/matching.md "Presence"): the gossip semantic hook for
 * `c0mpute.presence/1`, and the provider's presence publisher wired to its
 * slots and the network.
 *
 *   presence   signer has no live advert held here          → ignore PRESENCE_NO_ADVERT
 *              a workload its live advert does not list     → ignore PRESENCE_WORKLOAD_NOT_ADVERTISED
 *
 * Both are `ignore` (not relayed, not stored, no penalty): the advert this node
 * holds may be older or newer than the one the provider had when it signed.
 */
import { storeProblem } from '../store/db.js';
import { C0Error } from '../errors.js';
import { ignoreError, type SemanticHook } from '../net/gossip-validation.js';
import type { Opened } from '../records/envelope.js';
import type { Ed25519Signer } from '../records/ed25519.js';
import type { Presence } from '../records/kinds.js';
import type { AdvertLookup } from '../matching/presence.js';
import { PresencePublisher, presenceOptions } from '../roles/provider/presence-publisher.js';
import type { Clock } from '../util/clock.js';
import { shardsOf } from '../net/topics.js';
import type { ProviderConfig } from './config.js';
import type { OverlayNode } from './overlay.js';

export const PRESENCE_HOOK_ERR = {
  PRESENCE_NO_ADVERT: 'PRESENCE_NO_ADVERT',
  PRESENCE_WORKLOAD_NOT_ADVERTISED: 'PRESENCE_WORKLOAD_NOT_ADVERTISED',
} as const;

export function presenceHook(advertOf: AdvertLookup, clock: Clock): SemanticHook {
  return (rec) => {
    const p = rec as Opened<Presence>;
    const advert = advertOf(p.signer, clock());
    if (!advert) throw ignoreError(PRESENCE_HOOK_ERR.PRESENCE_NO_ADVERT, 'presence from a provider with no live advert held here', 'signer');
    const offered = new Set(advert.record.workloads);
    if (p.record.workloads.some((w) => !offered.has(w))) throw ignoreError(PRESENCE_HOOK_ERR.PRESENCE_WORKLOAD_NOT_ADVERTISED, 'presence names a workload the provider’s live advert does not list', 'workloads');
  };
}

/** The providers this node's presence view holds in the largest of its workloads' markets (itself included, once its first record is in). */
export function liveInMarket(o: OverlayNode, workloads: string[]): () => number {
  const shards = shardsOf(workloads);
  return () => {
    o.presence.prune(o.clock());
    return o.presence.heldIn(shards);
  };
}

/** The provider's presence: its configured workloads, slots less running jobs; its own records go into its own view too. */
export function providerPresence(o: OverlayNode, pc: ProviderConfig, signer: Ed25519Signer): PresencePublisher {
  const opts = presenceOptions({ windowMs: pc.presenceWindowMs, everyMs: pc.presenceEveryMs, targetPerMarket: pc.presenceTargetPerMarket });
  if (opts.everyMs >= opts.windowMs) {
    throw new C0Error('CONFIG_INVALID', `provider.presenceEveryMs (${opts.everyMs}) must be shorter than provider.presenceWindowMs (${opts.windowMs})`, { field: 'provider.presenceEveryMs' });
  }
  return new PresencePublisher(
    {
      signer,
      clock: o.clock,
      log: o.log.child({ role: 'provider', overlay: o.name, mod: 'presence' }),
      // a store that takes no writes (a write failed, not reopened yet) runs nothing: no slot is free meanwhile
      state: () => ({ workloads: Object.keys(pc.workloads), freeSlots: storeProblem(o.d.db) !== undefined ? 0 : pc.slots - (o.provider?.running ?? 0) - (o.orders?.claimer?.pending ?? 0) }),
      publish: async (env) => {
        o.presence.add(env, o.clock());
        await o.net.publish('presence', env.bytes);
      },
      liveInMarket: liveInMarket(o, Object.keys(pc.workloads)),
    },
    opts,
  );
}
