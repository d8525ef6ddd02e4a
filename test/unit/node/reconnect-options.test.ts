/** `network.reconnect` → the network module's options (src/node/net-health.ts reconnectOptions): each key reaches its place; unset keys keep the module's defaults. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { reconnectOptions } from '../../../src/node/net-health.js';
import { CONNECTIVITY_DEFAULTS } from '../../../src/net/connectivity.js';
import { parseConfig } from '../../../src/node/config.js';

test('every network.reconnect key reaches the network options; unset keys stay unset', () => {
  const none = reconnectOptions(undefined, '/tmp/peers.json');
  assert.deepEqual(none.connectivity, {});
  assert.equal(none.gossipHealth, undefined);
  assert.ok(none.rememberStore);

  const cfg = parseConfig({ network: { reconnect: { minPeers: 3, bootstrapMaxBackoffMs: 4000, peerMaxBackoffMs: 9000, rememberPeers: 7, gossipRepairMs: 3000 } } }).network.reconnect;
  const o = reconnectOptions(cfg, '/tmp/peers.json');
  assert.equal(o.connectivity!.minPeers, 3);
  assert.deepEqual(o.connectivity!.bootstrap, { ...CONNECTIVITY_DEFAULTS.bootstrap, maxMs: 4000 });
  assert.deepEqual(o.connectivity!.remembered, { ...CONNECTIVITY_DEFAULTS.remembered, maxMs: 9000 });
  assert.equal(o.connectivity!.rememberMax, 7);
  assert.deepEqual(o.gossipHealth, { repairAfterMs: 3000, checkEveryMs: 1500 });
  // 0 turns the periodic self-check off; a long repair time checks at most every 5 s
  assert.deepEqual(reconnectOptions({ gossipRepairMs: 0 }, '/tmp/p.json').gossipHealth, { checkEveryMs: 0 });
  assert.deepEqual(reconnectOptions({ gossipRepairMs: 60_000 }, '/tmp/p.json').gossipHealth, { repairAfterMs: 60_000, checkEveryMs: 5000 });
  assert.deepEqual(reconnectOptions({ gossipRepairMs: 200 }, '/tmp/p.json').gossipHealth, { repairAfterMs: 200, checkEveryMs: 500 });
});
