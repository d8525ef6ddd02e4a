/**
 * A one-shot node (`c0mpute run` without a daemon: it listens on /tcp/0, a new port each run, and is gone when its
 * command ends) says so in its user agent (`c0mpute-oneshot`, src/net/peer-conns.ts), and its peers do not remember
 * it, whichever side dialled (docs/network.md §11). Before (QA qaUp F8), every member remembered each run's port,
 * and every restart of a steward redialled them all, one NET_CONNECTION_REFUSED line each. A lasting node is
 * remembered as before. Real libp2p nodes on 127.0.0.1.
 */
import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { Network } from '../../src/net/node.js';
import type { RememberedPeer } from '../../src/net/connectivity.js';
import { startNode, stopAll, waitFor } from './net-helpers.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

test('one-shot peers are not remembered, dialled in or out; a lasting peer is', async () => {
  let saved: RememberedPeer[] = [];
  const a = await startNode({ syncOnConnect: [], rememberStore: { load: () => [], save: (peers) => void (saved = structuredClone(peers)) } });
  const inbound = await startNode({ syncOnConnect: [], oneShot: true });
  const outbound = await startNode({ syncOnConnect: [], oneShot: true });
  const lasting = await startNode({ syncOnConnect: [] });
  nets.push(a, inbound, outbound, lasting);
  await inbound.dial(a.addrs()[0]!);
  await a.dial(outbound.addrs()[0]!);
  await lasting.dial(a.addrs()[0]!);
  for (const n of [inbound, outbound, lasting]) await waitFor(async () => (await a.listenAddrsOf(n.peerId.toString())).length > 0, 5_000, 'identified');
  await waitFor(() => saved.some((p) => p.peerId === lasting.peerId.toString()), 5_000, 'the lasting peer remembered');
  assert.deepEqual(
    saved.map((p) => p.peerId),
    [lasting.peerId.toString()],
    'only the lasting peer',
  );
  assert.equal(a.connectivity().remembered, 1);
  // the one-shot nodes remember the lasting one as before (the next run finds its peers at once)
  await waitFor(() => inbound.connectivity().remembered === 1, 5_000, 'the one-shot node remembers its peer');
});
