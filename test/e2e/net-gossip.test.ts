import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { Network } from '../../src/net/node.js';
import type { Opened } from '../../src/records/envelope.js';
import { advert, link, startNode, stopAll, waitFor, sleep } from './net-helpers.js';
import { isCoalescing } from '../../src/net/write-coalesce.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

test('an advert published in a 4-node line reaches every node exactly once', async () => {
  for (let i = 0; i < 4; i++) nets.push(await startNode());
  for (let i = 0; i < 3; i++) await link(nets[i]!, nets[i + 1]!);
  // also a cross link, so the record arrives by two paths
  await link(nets[0]!, nets[2]!);
  const got: Array<Opened[]> = nets.map(() => []);
  nets.forEach((n, i) => n.subscribe('advert', (rec) => void got[i]!.push(rec)));
  const a = advert((nets[0] as Network & { signer: never }).signer);
  await sleep(300); // mesh heartbeat
  const res = await nets[0]!.publish('advert', a.bytes);
  assert.ok(res.recipients >= 1);
  await waitFor(() => got.slice(1).every((g) => g.length >= 1), 5_000, 'delivery');
  await sleep(300);
  for (const g of got.slice(1)) {
    assert.equal(g.length, 1);
    assert.equal(g[0]!.address, a.address);
  }
  assert.equal(got[0]!.length, 0, 'the publisher does not receive its own record');
  // every connection, dialled or accepted, sends its turn's frames in one write (write-coalesce.ts)
  const conns = nets.flatMap((n) => n.libp2p.getConnections());
  assert.ok(conns.length >= 8);
  assert.ok(conns.every(isCoalescing));
});

test('gossipQuietMs: how long a node has had peers but none on any topic it joined (NET_NO_GOSSIP), undefined once one is, or with no peer', async () => {
  const a = await startNode({ syncOnConnect: [], gossipHealth: { checkEveryMs: 0 } });
  // a peer that joins no topic: connected, and no gossip with it (the QA's key copy heard no subscription either)
  const mute = await startNode({ syncOnConnect: [], topics: [] });
  nets.push(a, mute);
  assert.equal(a.gossipQuietMs(), undefined, 'no peer: not quiet, alone (NET_NO_PEERS says that)');
  await a.dial(mute.addrs()[0]!);
  await waitFor(() => (a.gossipQuietMs() ?? 0) >= 1_500, 5_000, 'quiet for 1.5 s');
  const b = await startNode({ syncOnConnect: [] });
  nets.push(b);
  await link(a, b, ['advert']);
  assert.equal(a.gossipQuietMs(), undefined, 'a peer on one of its topics');
});
