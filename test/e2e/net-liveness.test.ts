/**
 * Gossip liveness while connected (docs/network.md "Reconnection and
 * liveness"), on real libp2p nodes: when gossipsub drops a peer whose
 * connection stays open — after an error on its inbound pubsub stream, or a
 * router entry lost otherwise — publications reach 0 peers for as long as the
 * connection lives. The node repairs it by itself and counts the repair.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Network } from '../../src/net/node.js';
import { advert, startNode, stopAll, waitFor, link } from './net-helpers.js';

const nets: Network[] = [];
after(() => stopAll(nets));

async function repairs(n: Network): Promise<Record<string, number>> {
  const m = (await n.metrics.registry.getSingleMetricAsString('c0mpute_gossip_repairs_total')).matchAll(/action="([^"]+)"[^}]*\} (\d+)/g);
  return Object.fromEntries([...m].map((x) => [x[1]!, Number(x[2])]));
}

/** B publishes fresh adverts until one reaches A (each publish is a new record). */
async function gossipFlows(a: Network, b: Network & { signer: Parameters<typeof advert>[0] }, timeoutMs: number): Promise<void> {
  const got = new Set<string>();
  const off = a.subscribe('advert', (rec) => void got.add(rec.address));
  try {
    await waitFor(async () => {
      const r = await b.publish('advert', advert(b.signer).bytes);
      await new Promise((res) => setTimeout(res, 100));
      return r.recipients > 0 && got.has(r.address);
    }, timeoutMs, 'gossip to flow');
  } finally {
    off();
  }
}

test('an error on the inbound pubsub stream of a connected peer is repaired at once (stream-error)', async () => {
  const a = await startNode({ gossipHealth: { checkEveryMs: 0 } });
  const b = await startNode({ gossipHealth: { checkEveryMs: 0 } });
  nets.push(a, b);
  await link(a, b);
  await gossipFlows(a, b, 5_000);

  // What a flood does to a lagging reader: the pubsub stream from B is reset while the connection stays.
  const conn = a.libp2p.getConnections(b.peerId)[0]!;
  const s = conn.streams.find((x) => x.protocol?.startsWith('/meshsub/') && x.direction === 'inbound');
  assert.ok(s, 'an inbound pubsub stream');
  s.abort(new Error('read buffer overflow (test)'));
  await waitFor(() => a.libp2p.getConnections(b.peerId).length > 0, 1_000);

  await gossipFlows(a, b, 10_000);
  assert.ok(a.libp2p.getConnections(b.peerId).length > 0, 'still the same peers connected');
  assert.ok(((await repairs(a))['stream-error'] ?? 0) >= 1, 'the repair is counted');
});

test('a connected peer whose outbound pubsub stream is lost is found by the periodic self-check and re-attached (reopen)', async () => {
  const a = await startNode({ gossipHealth: { checkEveryMs: 200, repairAfterMs: 600 } });
  const b = await startNode({ gossipHealth: { checkEveryMs: 0 } });
  nets.push(a, b);
  await link(a, b);
  await gossipFlows(b, a, 5_000);

  // A lost outbound stream entry: A's publications reach nobody, nothing on either side errors.
  (a.libp2p.services.pubsub as unknown as { streamsOutbound: Map<string, unknown> }).streamsOutbound.delete(b.peerId.toString());
  assert.equal((await a.publish('advert', advert(a.signer).bytes)).recipients, 0, 'dead while connected');
  await gossipFlows(b, a, 15_000);
  assert.ok(((await repairs(a)).reopen ?? 0) >= 1, 'the repair is counted');
});

test('below minPeers a node asks the DHT for more peers and dials them', async () => {
  // Only p asks. A line p — r — c: only the DHT (through r) can tell p about c (with minPeers 0, as before, they never meet).
  // r names c in its answer whatever the key, but a walk goes on to c only when c is nearer the key than r: the
  // peers an answer names are candidates too (link-hosts.ts discover), or p would miss c for half its look-ups.
  const p = await startNode({ connectivity: { minPeers: 3 } });
  const r = await startNode({ connectivity: { minPeers: 0 } });
  const c = await startNode({ connectivity: { minPeers: 0 } });
  nets.push(p, r, c);
  await link(r, c);
  await link(p, r);
  await waitFor(() => p.libp2p.getConnections(c.peerId).length > 0, 20_000, 'the ends of the line to connect');
  // counted once the look-up's dials settle
  await waitFor(async () => /kind="discovered",outcome="ok"\} [1-9]/.test(await p.metrics.registry.getSingleMetricAsString('c0mpute_net_dials_total')), 10_000, 'the dial counted as discovered');
});
