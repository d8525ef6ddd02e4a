/**
 * The kad-dht service of a c0mpute node and what it may cost in connections
 * (docs/network.md §15 "The DHT and connections", docs/scale.md §2 "Where the
 * hundred-node run's CPU went"; issue #16).
 *
 * What the node uses the DHT for: finding a buyer's addresses for a direct
 * offer when the peer store has none (`findPeer`, docs/network.md §13), and
 * peers for the connectivity top-up below `minPeers` (§11). Both are look-ups
 * (`FIND_NODE` walks), which dial the peers they ask; neither needs the routing
 * table to hold peers the node is not connected to.
 *
 * What kad-dht 16 does by default, and what this module changes:
 *
 * - Every peer named in any DHT answer (`closer` peers) is a "new contact":
 *   the routing table pings it before adding it, and the ping dials it. A
 *   walk that hears of 20 peers opens up to 20 connections, each with a Noise
 *   handshake, identify, a records/1 sync both ways, and — being a c0mpute
 *   node — a place among the remembered peers connectivity keeps connected.
 *   In a 40-node sim minute these were half of all connections opened.
 *   Here the routing table's contact check (libp2p `ping` as the DHT sees it)
 *   answers from the connections the node already has: a peer with an open
 *   connection is live (the connection monitor pings it anyway), a peer
 *   without one is not added now. So the table fills with the peers the node
 *   is, or was, connected to (bootstrap, gossip peers, peers a walk itself
 *   dialled), and a contact check never dials. The same check runs when a
 *   full bucket asks whether its oldest contacts still answer: an old contact
 *   without a connection is evicted for a connected one.
 * - The contact-check queue is bounded (concurrency and queue size below),
 *   so a burst of answers cannot pile up work.
 *
 * Cost: the table no longer learns peers it has never connected to, so a
 * look-up starts from fewer, nearer-by-acquaintance peers and may take one
 * more hop; the walk itself still dials whomever the answers name, so a
 * `findPeer` for a buyer still reaches the peers that know the buyer.
 */
import { kadDHT, passthroughMapper, removePrivateAddressesMapper, type KadDHT, type KadDHTComponents, type KadDHTInit } from '@libp2p/kad-dht';
import { isPeerId, type PeerId } from '@libp2p/interface';
import type { Multiaddr } from '@multiformats/multiaddr';

export const DHT_PROTOCOL = '/c0mpute/kad/1.0.0';

export const DHT_DEFAULTS = {
  /** Contact checks run at once (kad-dht's default 20). */
  pingNewContactConcurrency: 4,
  /** Contact checks waiting; more are dropped, the contact not added (kad-dht's default 100). */
  pingNewContactMaxQueueSize: 32,
  pingOldContactConcurrency: 4,
  pingOldContactMaxQueueSize: 32,
} as const;

export interface DhtServiceOptions {
  /** Keep private/loopback addresses, serve, self-query fast (devnets, tests, the sim). */
  loopback: boolean;
  /** DHT client mode (undefined: kad-dht's automatic choice). */
  clientMode?: boolean | undefined;
}

type PingService = KadDHTComponents['ping'];

/** The contact check the routing table sees: live = an open connection now; never dials. */
export function connectedOnlyPing(components: KadDHTComponents): PingService {
  return {
    async ping(peer: PeerId | Multiaddr | Multiaddr[]): Promise<number> {
      if (!isPeerId(peer)) throw new Error('contact check needs a PeerId');
      if (!components.connectionManager.getConnections(peer).some((c) => c.status === 'open')) throw new Error('not connected: contact not checked');
      return 0;
    },
  } as PingService;
}

/** The kad-dht service factory for createLibp2p's `services.dht`. */
export function dhtService(o: DhtServiceOptions): (components: KadDHTComponents) => KadDHT {
  const init: KadDHTInit = {
    protocol: DHT_PROTOCOL,
    peerInfoMapper: o.loopback ? passthroughMapper : removePrivateAddressesMapper,
    ...(o.clientMode === undefined ? {} : { clientMode: o.clientMode }),
    ...(o.loopback ? { initialQuerySelfInterval: 50, allowQueryWithZeroPeers: true } : {}),
    ...DHT_DEFAULTS,
  };
  const make = kadDHT(init);
  return (components) => {
    const ping = connectedOnlyPing(components);
    // libp2p's components object is a proxy that resolves services lazily: override only `ping`, as the DHT sees it.
    return make(new Proxy(components, { get: (t, p, r) => (p === 'ping' ? ping : Reflect.get(t, p, r)) as unknown }));
  };
}
