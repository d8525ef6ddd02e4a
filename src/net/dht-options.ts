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
 *
 * Which addresses the DHT passes on, and who serves it (docs/network.md §15
 * "Private overlays"): on the open network kad-dht's defaults hold — private
 * and loopback addresses are dropped from answers and from the routing table,
 * and a node serves the DHT only once it has a public address. On a keyed
 * private overlay (`swarmKey`) only members can reach the DHT, and members
 * are usually on one LAN or VPN, where the private addresses are the only
 * ones: there every member serves and every address is kept (libp2p dials
 * loopback addresses last). Before, a LAN overlay had no DHT at all (QA
 * witness pass #6): nobody served it and every answer came back without
 * addresses, so a provider bootstrapped only to the steward could never dial
 * the buyer its offer was for.
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
  /** A keyed private overlay: keep private/loopback addresses (members share a LAN or VPN); serve unless `clientMode` says otherwise. */
  privateNetwork?: boolean;
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

/** DHT client mode for a network: as asked, else serving in loopback mode and on a keyed private overlay, else kad-dht's automatic choice (serve once a public address is known). */
export function dhtClientMode(o: { dhtClientMode?: boolean | undefined; loopback: boolean; privateNetwork: boolean }): boolean | undefined {
  return o.dhtClientMode ?? (o.loopback || o.privateNetwork ? false : undefined);
}

/** The kad-dht service factory for createLibp2p's `services.dht`. */
export function dhtService(o: DhtServiceOptions): (components: KadDHTComponents) => KadDHT {
  const init: KadDHTInit = {
    protocol: DHT_PROTOCOL,
    peerInfoMapper: o.loopback || o.privateNetwork ? passthroughMapper : removePrivateAddressesMapper,
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
