/**
 * Peers kept connected by name (src/node/keep-connected.ts; the trusted buyers,
 * docs/network.md §14), with a fake network and mocked timers: the first round
 * at 3 s dials only those not connected, a failed dial is tried next round, a
 * round still running is not overlapped, and stop() ends it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { keepConnected } from '../../../src/node/keep-connected.js';
import { silentLogger } from '../../../src/util/log.js';
import { NETWORK_DEFAULTS } from '../../../src/net/network-api.js';
import { ADDRESS_DIAL_TIMEOUT_MS } from '../../../src/net/libp2p-host.js';

const settle = () => new Promise((r) => setImmediate(r));

function fakeNet(o: { connected: string[]; down?: string[]; slow?: boolean }) {
  const dials: string[] = [];
  const timeouts: Array<number | undefined> = [];
  const pending: Array<() => void> = [];
  const net = {
    did: 'did:key:self',
    peers: () => o.connected.map((did) => ({ did })),
    dial: (did: string, opts?: { timeoutMs?: number }) => {
      dials.push(did);
      timeouts.push(opts?.timeoutMs);
      if (o.slow) return new Promise<never>((_, reject) => pending.push(() => reject(new Error('timeout'))));
      if (o.down?.includes(did)) return Promise.reject(new Error('unreachable'));
      o.connected.push(did);
      return Promise.resolve({});
    },
  };
  return { net: net as never, dials, timeouts, pending };
}

test('the first round at 3 s dials each wanted peer not connected, not this node, not one already connected; an unreachable one is tried next round', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const f = fakeNet({ connected: ['did:key:a'], down: ['did:key:c'] });
  const stop = keepConnected(f.net, ['did:key:a', 'did:key:b', 'did:key:c', 'did:key:b', 'did:key:self'], silentLogger());
  t.mock.timers.tick(2_999);
  await settle();
  assert.deepEqual(f.dials, []);
  t.mock.timers.tick(1);
  await settle();
  assert.deepEqual(f.dials, ['did:key:b', 'did:key:c']);
  // 10 s a dial: libp2p gives each of a peer's addresses 5 s in turn, so a silent first address leaves the second 5 s
  assert.deepEqual(f.timeouts, [NETWORK_DEFAULTS.dialTimeoutMs, NETWORK_DEFAULTS.dialTimeoutMs]);
  assert.ok(NETWORK_DEFAULTS.dialTimeoutMs >= 2 * ADDRESS_DIAL_TIMEOUT_MS);
  // 30 s on: b is connected now, c is tried again
  t.mock.timers.tick(30_000);
  await settle();
  assert.deepEqual(f.dials, ['did:key:b', 'did:key:c', 'did:key:c']);
  stop();
  t.mock.timers.tick(120_000);
  await settle();
  assert.equal(f.dials.length, 3, 'no round after stop()');
});

test('a round still dialling when the next is due is not overlapped', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const f = fakeNet({ connected: [], slow: true });
  const stop = keepConnected(f.net, ['did:key:a'], silentLogger());
  t.mock.timers.tick(3_000);
  await settle();
  t.mock.timers.tick(60_000);
  await settle();
  assert.deepEqual(f.dials, ['did:key:a'], 'the first dial is still out: no second one');
  f.pending.shift()!();
  await settle();
  t.mock.timers.tick(30_000);
  await settle();
  assert.deepEqual(f.dials, ['did:key:a', 'did:key:a'], 'once it failed, the next round dials again');
  stop();
});

test('nothing wanted but this node: nothing starts', (t) => {
  t.mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
  const f = fakeNet({ connected: [] });
  keepConnected(f.net, ['did:key:self'], silentLogger())();
  t.mock.timers.tick(60_000);
  assert.deepEqual(f.dials, []);
});
