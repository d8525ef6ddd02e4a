/**
 * A stopped network leaves no timer holding the process (libp2p-patches.ts, `patchGossipsubStop` and
 * `cancelAddressUpdate`): gossipsub's stop left its next heartbeat pending, and libp2p's address manager
 * debounces its peer-store update by a second on every `transport:close`, so each `c0mpute start` stopped by
 * SIGTERM (every e2e test's teardown, every restart) lived on up to a second after "network stopped".
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createNetwork } from '../../../src/net/node.js';
import { Ed25519Signer } from '../../../src/records/index.js';
import { watchTimers } from '../util/timer-watch.js';

test('network stop: no referenced timer of 500 ms or more is left pending (the process exits at once)', async () => {
  // watched from before the start: the heartbeat's timer is armed by the start, then re-armed by each heartbeat
  const timers = watchTimers(500);
  try {
    const net = await createNetwork({ signer: Ed25519Signer.generate(), listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, connectivity: { minPeers: 0 }, verifyThreads: 0, gossip: { heartbeatInterval: 700 } });
    await net.start();
    await new Promise((r) => setTimeout(r, 1_000)); // a heartbeat or two ran and armed the next
    await net.stop();
    const holding = [...timers.pending].filter((t) => (t as NodeJS.Timeout).hasRef());
    assert.equal(holding.length, 0, `${holding.length} referenced timer(s) still pending after stop`);
  } finally {
    timers.restore();
  }
});
