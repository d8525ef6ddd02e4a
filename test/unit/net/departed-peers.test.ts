/**
 * A departed peer leaves nothing for good inside the libp2p stack the node builds (libp2p-patches.ts
 * `patchGossipsubScoreCache`, `sweepPeerStore`): gossipsub kept the score-cache entry of every departed peer that had
 * a positive score, and the peer store kept every peer ever seen, since its expiry runs only when a peer is read
 * again. A peer-churn review measured one entry per departed peer on each (47 → 254 over ~210 peers).
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { multiaddr } from '@multiformats/multiaddr';
import { createNetwork } from '../../../src/net/node.js';
import { sweepPeerStore } from '../../../src/net/libp2p-patches.js';
import { Ed25519Signer } from '../../../src/records/index.js';
import type { Network } from '../../../src/net/network-api.js';

interface ScoreInternals {
  computeScore: (...args: unknown[]) => number;
  peerStats: Map<string, unknown>;
  scoreCache: Map<string, unknown>;
  addPeer(id: string): void;
  removePeer(id: string): void;
  score(id: string): number;
  refreshScores(): void;
}

async function withNetwork(fn: (net: Network) => Promise<void>): Promise<void> {
  const net = await createNetwork({ signer: Ed25519Signer.generate(), listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, connectivity: { minPeers: 0 }, verifyThreads: 0 });
  try {
    await fn(net);
  } finally {
    await net.stop();
  }
}

const HOUR = 3_600_000;

/** Run `fn` with Date.now moved `ms` forward (libp2p's expiries read Date.now). */
async function later<T>(ms: number, fn: () => Promise<T> | T): Promise<T> {
  const now = Date.now;
  Date.now = () => now() + ms;
  try {
    return await fn();
  } finally {
    Date.now = now;
  }
}

test('gossipsub: a departed peer with a positive score leaves no score-cache entry; one with a score kept (not positive) keeps it until the retention expires', async () => {
  await withNetwork(async (net) => {
    const ps = (net.libp2p.services.pubsub as unknown as { score: ScoreInternals }).score;
    let value = 5;
    ps.computeScore = () => value;
    ps.addPeer('good');
    assert.equal(ps.score('good'), 5);
    assert.ok(ps.scoreCache.has('good'));
    ps.removePeer('good');
    assert.equal(ps.peerStats.has('good'), false);
    assert.equal(ps.scoreCache.has('good'), false, 'the cache entry goes with the stats');

    // a peer whose non-positive score is retained (so that reconnecting does not clear it): stats and cache stay, then expire together
    value = -5;
    ps.addPeer('bad');
    assert.equal(ps.score('bad'), -5);
    ps.removePeer('bad');
    assert.ok(ps.peerStats.has('bad') && ps.scoreCache.has('bad'));
    await later(2 * HOUR, () => ps.refreshScores());
    assert.equal(ps.peerStats.has('bad'), false);
    assert.equal(ps.scoreCache.has('bad'), false);
  });
});

test('the peer store sweep drops a peer past libp2p’s expiry that was never read again, and keeps one seen lately', async () => {
  await withNetwork(async (net) => {
    const store = net.libp2p.peerStore;
    const gone = peerIdFromPrivateKey(await generateKeyPair('Ed25519'));
    await store.merge(gone, { multiaddrs: [multiaddr('/ip4/127.0.0.1/tcp/4001')] });
    assert.equal(await store.has(gone), true);
    // 7 h on, past maxPeerAge (6 h) and maxAddressAge (1 h): the record is still held until something walks the store
    const fresh = peerIdFromPrivateKey(await generateKeyPair('Ed25519'));
    await later(7 * HOUR, async () => {
      await store.merge(fresh, { multiaddrs: [multiaddr('/ip4/127.0.0.1/tcp/4002')] });
      const held = (net.libp2p as unknown as { components: { datastore: { data: Map<string, unknown> } } }).components.datastore.data;
      const before = held.size;
      await sweepPeerStore(store);
      assert.equal(held.size, before - 1, 'the departed peer’s record left the datastore');
      assert.equal(await store.has(fresh), true);
    });
  });
});
