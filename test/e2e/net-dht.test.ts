/**
 * The DHT's contact check never dials (src/net/dht-options.ts; docs/network.md
 * §15; issue #16): kad-dht's routing table, offered a peer it has only heard of
 * (as every `closer` peer in a DHT answer is), does not open a connection to
 * it and does not add it; a connected peer is added without a new connection;
 * and a buyer the provider is not connected to is still found through the DHT.
 */
import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { multiaddr } from '@multiformats/multiaddr';
import type { PeerId } from '@libp2p/interface';
import type { Network } from '../../src/net/node.js';
import { link, startNode, stopAll, waitFor } from './net-helpers.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

interface RoutingTable {
  add(peer: PeerId): Promise<void>;
  find(peer: PeerId): Promise<PeerId | undefined>;
}
const table = (n: Network): RoutingTable => (n.libp2p.services.dht as unknown as { routingTable: RoutingTable }).routingTable;
const connected = (a: Network, b: Network): boolean => a.libp2p.getConnections(b.peerId).some((c) => c.status === 'open');

test('a contact only heard of is not dialled by the routing table; a connected one is added; findPeer still works', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const relay = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, relay, b);

  // a knows b's addresses (as from a DHT answer) but is not connected to it.
  await a.libp2p.peerStore.merge(b.peerId, { multiaddrs: b.addrs().map((s) => multiaddr(s.replace(/\/p2p\/.*$/, ''))) });
  await table(a).add(b.peerId);
  assert.equal(connected(a, b), false, 'the contact check opened no connection');
  assert.equal(await table(a).find(b.peerId), undefined, 'an unverified contact is not in the table');

  // A connected peer is live: added, over the connection it has.
  await link(a, relay);
  await waitFor(async () => (await table(a).find(relay.peerId)) !== undefined, 10_000, 'the connected peer in the routing table');
  assert.equal(a.libp2p.getConnections(relay.peerId).length, 1);

  // b, connected only to the relay, is found through the DHT walk.
  await link(relay, b);
  await waitFor(async () => {
    try {
      return (await a.findPeer(b.did, { useCache: false })).length > 0;
    } catch {
      return false;
    }
  }, 20_000, 'b found through the relay');
});
