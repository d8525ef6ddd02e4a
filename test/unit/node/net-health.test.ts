/**
 * NET_NO_MARKET is for a node that buys or provides (src/node/net-health.ts): a witness-only or steward-only node
 * connected to peers and hearing no advert is fine, not warned about a market it does not use.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assessNetwork } from '../../../src/node/net-health.js';

test('no live advert: NET_NO_MARKET for a node in the market, ok for one that is not (a witness, a steward)', () => {
  const c = { peers: 3, remembered: 0, bootstrap: [] };
  assert.equal(assessNetwork(c, 0).code, 'NET_NO_MARKET', 'default: in the market');
  assert.equal(assessNetwork(c, 0, { market: true }).code, 'NET_NO_MARKET');
  const w = assessNetwork(c, 0, { market: false });
  assert.deepEqual([w.state, w.code, w.message], ['ok', undefined, '3 peers, 0 live adverts']);
  assert.equal(assessNetwork({ peers: 0, remembered: 0, bootstrap: [] }, 0, { market: false }).code, 'NET_NO_PEERS', 'no peers is said to every node');
});
