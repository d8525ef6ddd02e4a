/**
 * Network.gossip() (`/v1/status` `gossip`, `/v1/peers` `topics`): per kind of this node's topics, the peers heard
 * subscribed and those in its mesh; per peer, the kinds it shares with this node. What a test (or an operator) reads
 * to know that a record published now reaches a peer, instead of sleeping a heartbeat.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createNetwork, type Network } from '../../../src/net/node.js';
import { shardOf } from '../../../src/net/topics.js';
import { Ed25519Signer } from '../../../src/records/index.js';
import { gossipHost, gossipLinks } from '../../../src/net/link-hosts.js';

async function waitFor(cond: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('gossip view: a peer subscribed to the job topic of its market shows under job; the mesh follows a heartbeat', async () => {
  const base = { listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, connectivity: { minPeers: 0 }, verifyThreads: 0, gossip: { heartbeatInterval: 200 } };
  // a provider of one workload joins its shard's market topics only; a buyer joins every market
  const provider = await createNetwork({ ...base, signer: Ed25519Signer.generate(), topics: ['advert', 'job'], shards: [shardOf('builtin.sha256')] });
  const buyer = await createNetwork({ ...base, signer: Ed25519Signer.generate(), topics: ['advert', 'job', 'offer'] });
  const nets: Network[] = [provider, buyer];
  try {
    await provider.start();
    await buyer.start();
    const before = buyer.gossip();
    assert.deepEqual(before.kinds.job, { peers: 0, mesh: 0 });
    assert.equal(before.peerKinds.size, 0);
    await buyer.dial(provider.addrs()[0]!);
    const pid = provider.peerId.toString();
    await waitFor(() => buyer.gossip().kinds.job?.peers === 1);
    assert.deepEqual(buyer.gossip().peerKinds.get(pid), ['advert', 'job'], 'the provider does not take offers on gossip');
    assert.equal(buyer.gossip().kinds.offer?.peers, 0);
    assert.deepEqual(provider.gossip().peerKinds.get(buyer.peerId.toString()), ['advert', 'job'], 'on the provider: the kinds of its own topics');
    await waitFor(() => buyer.gossip().kinds.job?.mesh === 1 && buyer.gossip().kinds.advert?.mesh === 1);
    assert.deepEqual(buyer.gossip().peerMesh.get(pid), ['advert', 'job']);
    assert.deepEqual(buyer.gossip().peerLink.get(pid), { out: true, in: true, backoffMs: 0 }, 'both gossip streams, no prune backoff');
  } finally {
    for (const n of nets) await n.stop();
  }
});

test('mesh gap: a subscribed peer that a prune backoff keeps out of the mesh is named with the backoff; none while it is in the mesh', async () => {
  const base = { listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, connectivity: { minPeers: 0 }, verifyThreads: 0, gossip: { heartbeatInterval: 200 } };
  const provider = await createNetwork({ ...base, signer: Ed25519Signer.generate(), topics: ['advert', 'job'], shards: [shardOf('builtin.sha256')] });
  const buyer = await createNetwork({ ...base, signer: Ed25519Signer.generate(), topics: ['advert', 'job', 'offer'] });
  try {
    await provider.start();
    await buyer.start();
    await buyer.dial(provider.addrs()[0]!);
    const pid = provider.peerId.toString();
    // the mesh both ways: the provider sends its PRUNE on leaving only to the peers in its own mesh (a CI run under load
    // left before the buyer's GRAFT had reached it, and the buyer, never pruned, kept it in its mesh)
    const bid = buyer.peerId.toString();
    await waitFor(() => buyer.gossip().kinds.job?.mesh === 1 && buyer.gossip().kinds.advert?.mesh === 1 && provider.gossip().peerMesh.get(bid)?.length === 2);
    const health = gossipHost(buyer.libp2p, buyer.overlay).health;
    assert.equal(health.meshGap!(pid), undefined, 'in the mesh');
    // The provider leaves its topics and joins them again at once: leaving sends the buyer a PRUNE with a backoff, so
    // the buyer may not graft it back until the backoff ends (and answers a GRAFT before then with another PRUNE).
    const ps = provider.libp2p.services.pubsub;
    const topics = ps.getTopics();
    for (const t of topics) ps.unsubscribe(t);
    await waitFor(() => !buyer.gossip().peerKinds.get(pid)?.length);
    for (const t of topics) ps.subscribe(t);
    await waitFor(() => (health.meshGap!(pid)?.backoffMs ?? 0) > 0);
    const gap = health.meshGap!(pid)!;
    assert.ok(gap.backoffMs > 0 && gap.backoffMs <= 60_000, `backoff ${gap.backoffMs} ms`);
    assert.deepEqual(buyer.gossip().peerMesh.get(pid) ?? [], [], 'subscribed again, in no mesh');
    assert.deepEqual(buyer.gossip().peerKinds.get(pid), ['advert', 'job']);
  } finally {
    await provider.stop();
    await buyer.stop();
  }
});

test('gossip links: per router peer its streams and the longest backoff left on the given topics only', () => {
  const router = {
    peers: new Map([['a', {}], ['b', {}], ['c', {}]]),
    streamsOutbound: new Map([['a', {}], ['b', {}]]),
    streamsInbound: new Map([['a', {}], ['c', {}]]),
    backoff: new Map([
      ['ours/1', new Map([['b', 1_000 + 20_000], ['a', 1_000 - 5]])],
      ['ours/2', new Map([['b', 1_000 + 45_000], ['gone', 1_000 + 60_000]])],
      ['theirs', new Map([['c', 1_000 + 60_000]])],
    ]),
  };
  const links = gossipLinks(router, ['ours/1', 'ours/2'], 1_000);
  assert.deepEqual(Object.fromEntries(links), {
    a: { out: true, in: true, backoffMs: 0 }, // an expired backoff is none
    b: { out: true, in: false, backoffMs: 45_000 },
    c: { out: false, in: true, backoffMs: 0 }, // a backoff on a topic not this node's is not counted
  });
  assert.equal(gossipLinks({}, ['ours/1']).size, 0, 'no router internals: nothing read');
});
