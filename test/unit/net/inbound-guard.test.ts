/**
 * Inbound connections still handshaking, per address (src/net/inbound-guard.ts; QA ffNetDay2 F1), and the status
 * warning that names their refusals (src/node/net-health.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addressKey, PendingInbound, RECENT_MS } from '../../../src/net/inbound-guard.js';
import { assessNetwork } from '../../../src/node/net-health.js';

test('an address is an IPv4 address, or the /64 of an IPv6 one', () => {
  assert.equal(addressKey('/ip4/203.0.113.7/tcp/4001'), '203.0.113.7');
  assert.equal(addressKey('/ip6/2001:db8:0:1::5/tcp/4001'), '2001:db8:0:1::/64');
  assert.equal(addressKey('/ip6/2001:db8:0:1:ffff:1:2:3/tcp/4001'), '2001:db8:0:1::/64');
  assert.equal(addressKey('/ip6/::1/tcp/4001'), '0:0:0:0::/64');
  assert.equal(addressKey('/ip6/2001:DB8::/tcp/1'), '2001:db8:0:0::/64');
});

test('one address holds at most its bound; a release frees a slot; refusals are kept for RECENT_MS', () => {
  let now = 0;
  const p = new PendingInbound({ perIp: 2, clock: () => now });
  assert.equal(p.take('a'), true);
  assert.equal(p.take('a'), true);
  assert.equal(p.take('a'), false, 'the third from one address');
  assert.equal(p.take('b'), true, 'another address is not held back');
  assert.equal(p.take('a'), false, 'a still holds its two');
  p.release('a');
  assert.equal(p.take('a'), true);
  p.noteRefused('NET_INBOUND_PENDING_PER_IP', 'a');
  now = 1_000;
  p.noteRefused('NET_INBOUND_PENDING_PER_IP', 'c');
  assert.deepEqual(p.recent(), [{ code: 'NET_INBOUND_PENDING_PER_IP', count: 2, lastFrom: 'c', from: 2 }]);
  now = RECENT_MS + 500;
  assert.deepEqual(p.recent().map((r) => [r.count, r.from]), [[1, 1]], 'the first is past the window');
  now = RECENT_MS + 2_000;
  assert.deepEqual(p.recent(), []);
});

test('status names inbound refusals beside an ok state, but not libp2p’s per-address rate alone', () => {
  const c = { peers: 2, remembered: 0, bootstrap: [] };
  const a = assessNetwork(c, 3, { inboundRefusals: [{ code: 'NET_INBOUND_PENDING_PER_IP', count: 40, lastFrom: '198.51.100.9', from: 1 }, { code: 'NET_INBOUND_RATE_LIMIT', count: 3, lastFrom: '127.0.0.1', from: 1 }] });
  assert.equal(a.state, 'ok');
  assert.deepEqual(a.warnings?.map((w) => w.code), ['NET_INBOUND_PENDING_PER_IP']);
  assert.match(a.warnings![0]!.message, /^40 inbound connections refused in the last 10 min from 1 address \(last from 198\.51\.100\.9\): more than 8 connections from one address were still handshaking/);
});

test('on loopback, 127.0.0.1 and ::1 (every local node dials from them) are held to the node-wide bound only; other addresses keep theirs (review s56)', () => {
  const local = new PendingInbound({ perIp: 2, clock: () => 0, localShared: true });
  for (let i = 0; i < 5; i++) assert.equal(local.take('127.0.0.1'), true);
  for (let i = 0; i < 5; i++) assert.equal(local.take('0:0:0:0::/64'), true);
  assert.equal(local.take('127.0.0.2'), true);
  assert.equal(local.take('127.0.0.2'), true);
  assert.equal(local.take('127.0.0.2'), false, 'another loopback address keeps its bound');
  const wild = new PendingInbound({ perIp: 2, clock: () => 0 });
  assert.equal(wild.take('127.0.0.1') && wild.take('127.0.0.1'), true);
  assert.equal(wild.take('127.0.0.1'), false, 'not on loopback: 127.0.0.1 is an address like any other');
});
