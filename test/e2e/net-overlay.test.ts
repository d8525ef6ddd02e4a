import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { generateSwarmKey, type Network } from '../../src/net/node.js';
import type { NetworkOptions } from '../../src/net/network-api.js';
import { C0Error } from '../../src/errors.js';
import { PROTOCOLS } from '../../src/net/protocols.js';
import { advert, link, offer, startNode, stopAll, waitFor, sleep } from './net-helpers.js';
import { isCoalescing } from '../../src/net/write-coalesce.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

test('private network: members connect and gossip on their overlay; no key or another key cannot connect', async () => {
  const key = generateSwarmKey();
  const a = await startNode({ swarmKey: key, overlay: 'acme' });
  const b = await startNode({ swarmKey: key, overlay: 'acme' });
  const nokey = await startNode({ overlay: 'acme' });
  const other = await startNode({ swarmKey: generateSwarmKey(), overlay: 'acme' });
  nets.push(a, b, nokey, other);
  await link(a, b);
  const got: string[] = [];
  b.subscribe('advert', (r) => void got.push(r.address));
  await sleep(300);
  const ad = advert(a.signer);
  await a.publish('advert', ad.bytes);
  await waitFor(() => got.length === 1);
  assert.ok(a.topicPeers('advert').length === 1);
  // under pnet too, the connection's socket writes are coalesced (write-coalesce.ts wraps the raw TCP connection)
  assert.ok([a, b].every((n) => n.libp2p.getConnections().length > 0 && n.libp2p.getConnections().every(isCoalescing)));
  await assert.rejects(nokey.dial(a.addrs()[0]!, { timeoutMs: 2_000 }), (e: C0Error) => e.code === 'NET_DIAL_FAILED');
  await assert.rejects(other.dial(a.addrs()[0]!, { timeoutMs: 2_000 }), (e: C0Error) => e.code === 'NET_DIAL_FAILED');
  await assert.rejects(a.dial(other.addrs()[0]!, { timeoutMs: 2_000 }), (e: C0Error) => e.code === 'NET_DIAL_FAILED');
  assert.deepEqual(
    a.peers().map((p) => p.did),
    [b.did],
  );
});

test('a DID allowlist: the gater refuses an unlisted peer both ways', async () => {
  const b = await startNode();
  const c = await startNode();
  const a = await startNode({ allowlist: [b.did] });
  nets.push(a, b, c);
  await b.dial(a.addrs()[0]!);
  // inbound: the dialler may complete its side of the handshake, but a drops the connection at once
  await c.dial(a.addrs()[0]!, { timeoutMs: 2_000 }).catch(() => undefined);
  await waitFor(() => !c.peers().some((p) => p.did === a.did), 3_000, 'c dropped');
  await assert.rejects(c.request(a.addrs()[0]!, PROTOCOLS.records, [{ op: 'live', kind: 'advert', limit: 1 }], { limits: { deadlineMs: 2_000 } }), (e: C0Error) => e instanceof C0Error);
  // outbound: a refuses to dial an unlisted peer
  await assert.rejects(a.dial(c.addrs()[0]!, { timeoutMs: 2_000 }), (e: C0Error) => e.code === 'NET_DIAL_FAILED');
  await sleep(200);
  assert.deepEqual(
    a.peers().map((p) => p.did),
    [b.did],
  );
});

test("findPeer returns a provider's addresses through the DHT", async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  const c = await startNode({ syncOnConnect: [] });
  nets.push(a, b, c);
  await a.dial(b.addrs()[0]!);
  await c.dial(b.addrs()[0]!);
  // let identify populate the DHT routing tables
  const rt = (n: Network) => (n.libp2p.services.dht as unknown as { routingTable: { size: number } }).routingTable.size;
  await waitFor(() => rt(a) > 0 && rt(b) > 1, 5_000, 'routing tables');
  assert.equal(
    a.peers().some((p) => p.did === c.did),
    false,
  );
  const addrs = await a.findPeer(c.did, { useCache: false, timeoutMs: 5_000 });
  const cPorts = c.addrs().map((x) => x.split('/')[4]);
  assert.ok(
    addrs.some((x) => cPorts.includes(x.split('/')[4])),
    `got ${addrs.join(', ')}`,
  );
  // and the addresses work
  await a.dial(c.did);
  assert.ok(a.peers().some((p) => p.did === c.did));
});

test('a private overlay where every member bootstraps only to the steward, as docs/overlays.md configures it (no `loopback`): an offer reaches a buyer the provider is not connected to', async () => {
  // QA witness pass #6: on a keyed overlay the DHT ran as on the open internet — client mode (no public address) and
  // private addresses stripped from its answers — so nobody served it, and the provider could not find the buyer.
  const key = generateSwarmKey();
  const member = { swarmKey: key, overlay: 'acme', loopback: false, syncOnConnect: [], connectivity: { minPeers: 0 } } satisfies Partial<NetworkOptions>;
  const steward = await startNode(member);
  nets.push(steward);
  const provider = await startNode({ ...member, bootstrap: [steward.addrs()[0]!] });
  const buyer = await startNode({ ...member, bootstrap: [steward.addrs()[0]!] });
  nets.push(provider, buyer);
  await waitFor(() => provider.peers().length > 0 && buyer.peers().length > 0, 10_000, 'both connected to the steward');
  assert.equal(provider.peers().some((p) => p.did === buyer.did), false, 'the provider is not connected to the buyer');
  const got: string[] = [];
  buyer.subscribe('offer', (r) => void got.push(r.address));
  const ad = advert(provider.signer);
  const o = offer(provider.signer, ad.address);
  const r = await provider.sendOffer([buyer.did], o.bytes, [ad.bytes]);
  assert.deepEqual(r.outcomes, { [buyer.did]: 'accepted' });
  await waitFor(() => got.length === 1, 5_000, 'the offer at the buyer');
  // every member serves the overlay's DHT, and keeps its members' addresses, private and loopback ones too
  for (const n of [steward, provider, buyer]) assert.equal(n.libp2p.services.dht.getMode(), 'server');
});
