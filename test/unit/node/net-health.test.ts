/**
 * NET_NO_MARKET is for a node that buys or provides (src/node/net-health.ts): a witness-only or steward-only node
 * connected to peers and hearing no advert is fine, not warned about a market it does not use.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assessNetwork, NO_GOSSIP_GRACE_MS } from '../../../src/node/net-health.js';

test('no live advert: NET_NO_MARKET for a node in the market, ok for one that is not (a witness, a steward)', () => {
  const c = { peers: 3, remembered: 0, bootstrap: [] };
  assert.equal(assessNetwork(c, 0).code, 'NET_NO_MARKET', 'default: in the market');
  assert.equal(assessNetwork(c, 0, { market: true }).code, 'NET_NO_MARKET');
  const w = assessNetwork(c, 0, { market: false });
  assert.deepEqual([w.state, w.code, w.message], ['ok', undefined, '3 peers, 0 live adverts']);
  assert.equal(assessNetwork({ peers: 0, remembered: 0, bootstrap: [] }, 0, { market: false }).code, 'NET_NO_PEERS', 'no peers is said to every node');
});

test('a peer key held by two processes is a warning beside the state: whose, where each listens, which serves exec/1, since or until when', () => {
  const c = { peers: 2, remembered: 0, bootstrap: [] };
  const peer = '12D3KooWPZNRsECXmgrJRhG6YRvo5hMGCd8EJ6YuxPGroGdwxdh5';
  const processes = [
    { listen: ['/ip4/127.0.0.1/tcp/18005'], remote: '/ip4/127.0.0.1/tcp/40001', protocols: ['/c0mpute/exec/1', '/c0mpute/records/1'] },
    { listen: ['/ip4/127.0.0.1/tcp/18013'], remote: '/ip4/127.0.0.1/tcp/40002', protocols: ['/c0mpute/records/1'] },
  ];
  const now = 1_000_000;
  const a = assessNetwork(c, 3, { duplicates: [{ peer, processes, firstSeenAt: now - 30_000, lastSeenAt: now, current: true }], now });
  assert.equal(a.state, 'ok', 'the node itself works: a warning, not a state');
  assert.equal(a.warnings?.length, 1);
  assert.equal(a.warnings[0]!.code, 'NET_DUPLICATE_IDENTITY');
  assert.match(a.warnings[0]!.message, /^did:key:z6MktCGJiLsFvL5H8JbNbQ9J9zpRXsMSgHingopmFZT4yukX is connected from 2 processes holding its one key/);
  assert.match(a.warnings[0]!.message, /now \(first seen 30 s ago\): one listening at \/ip4\/127\.0\.0\.1\/tcp\/18005 \(serves exec\/1: a provider\); one listening at \/ip4\/127\.0\.0\.1\/tcp\/18013$/);
  const gone = assessNetwork(c, 3, { duplicates: [{ peer, processes, firstSeenAt: now - 600_000, lastSeenAt: now - 240_000, current: false }], now });
  assert.match(gone.warnings![0]!.message, /^did:key:\S+ was connected from 2 processes .*, last seen 4 min ago: /);
  assert.equal(assessNetwork(c, 3, { duplicates: [], now }).warnings, undefined, 'none: no field');
});

test('connected but no gossip peer on any topic: NET_NO_GOSSIP once it lasted NO_GOSSIP_GRACE_MS (a node just started or connected is not flagged), before NET_NO_MARKET (QA qaNet F4)', () => {
  const c = { peers: 1, remembered: 0, bootstrap: [] };
  assert.equal(assessNetwork(c, 103, { gossipQuietMs: NO_GOSSIP_GRACE_MS - 1 }).state, 'ok', 'within the grace');
  const a = assessNetwork(c, 103, { gossipQuietMs: 45_000 });
  assert.deepEqual([a.state, a.code], ['no-gossip', 'NET_NO_GOSSIP']);
  assert.equal(a.message, "connected to 1 peer but gossips with none: no peer on any of this node's topics for 45 s (it neither publishes nor hears adverts and jobs by gossip; records reach it only by sync and direct streams)");
  assert.equal(assessNetwork(c, 0, { gossipQuietMs: 45_000 }).code, 'NET_NO_GOSSIP', 'the cause of hearing no market goes first');
  assert.equal(assessNetwork(c, 0, { gossipQuietMs: 45_000, market: false }).code, 'NET_NO_GOSSIP', 'said to every node: a witness or a steward hears by gossip too');
  assert.equal(assessNetwork({ peers: 0, remembered: 0, bootstrap: [] }, 0, { gossipQuietMs: 45_000 }).code, 'NET_NO_PEERS');
  assert.equal(assessNetwork(c, 3, {}).state, 'ok', 'not known: not flagged');
});

test('a bootstrap entry whose dials fail is a warning with its dial code when the network is ok; the other states name it in their message (QA qaNet F5)', () => {
  const bootstrap = [
    { addr: '/ip4/127.0.0.1/tcp/18001/p2p/A', peerId: 'A', connected: true, failures: 0 },
    { addr: '/ip4/127.0.0.1/tcp/18001/p2p/W', peerId: 'W', connected: false, failures: 5, lastError: { code: 'NET_PEER_ID_MISMATCH', message: 'unexpected peer' } },
    { addr: '/dns4/nowhere.invalid/tcp/1', connected: false, failures: 1, lastError: { code: 'NET_DIAL_FAILED', message: 'getaddrinfo ENOTFOUND nowhere.invalid' } },
    { addr: '/ip4/127.0.0.1/tcp/18009/p2p/N', peerId: 'N', connected: false, failures: 0 },
  ];
  const ok = assessNetwork({ peers: 1, remembered: 1, bootstrap }, 3);
  assert.equal(ok.state, 'ok');
  assert.deepEqual(ok.warnings, [
    { code: 'NET_PEER_ID_MISMATCH', message: 'bootstrap /ip4/127.0.0.1/tcp/18001/p2p/W is not connected: the peer at that address has another PeerId (check the /p2p/ part of network.bootstrap) (5 dials failed, still retrying)' },
    { code: 'NET_DIAL_FAILED', message: 'bootstrap /dns4/nowhere.invalid/tcp/1 is not connected: the dial failed: getaddrinfo ENOTFOUND nowhere.invalid (1 dial failed, still retrying)' },
  ]);
  assert.equal(assessNetwork({ peers: 1, remembered: 1, bootstrap }, 0).warnings, undefined, 'NET_NO_MARKET says them in its message');
  assert.match(assessNetwork({ peers: 1, remembered: 1, bootstrap }, 0).message, /another PeerId/);
});

test('adverts dated ahead: said in NET_NO_MARKET’s reason, else a NET_ADVERTS_FROM_FUTURE warning beside an ok state', () => {
  const c = { peers: 2, remembered: 0, bootstrap: [] };
  const one = [{ did: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', byMs: 45_200, at: 1 }];
  const none = assessNetwork(c, 0, { advertsAhead: one, skewMs: 30_000 });
  assert.equal(none.code, 'NET_NO_MARKET');
  assert.match(none.message, /^connected to 2 peers but hears no market: no live provider advert \(provider haXgBZDv…2doK's adverts came dated 45 s ahead of this node's clock, past the 30 s clock-skew window, and were dropped \(RECORD_FROM_FUTURE\): a clock is wrong, theirs or this node's \(NTP\)\)$/);
  assert.equal(none.warnings, undefined, 'said once: in the state');
  const two = [...one, { did: 'did:key:z6MkpTHR8VNsBxYAAWHut2Geadd9jSwuBV8xRoAnwWsdvktH', byMs: 90_000, at: 2 }];
  const ok = assessNetwork(c, 3, { advertsAhead: two, skewMs: 30_000 });
  assert.equal(ok.state, 'ok');
  assert.deepEqual(ok.warnings?.map((w) => w.code), ['NET_ADVERTS_FROM_FUTURE']);
  assert.match(ok.warnings![0]!.message, /^the adverts of 2 providers \(haXgBZDv…2doK, pTHR8VNs…vktH\) came dated up to 90 s ahead/);
  assert.equal(assessNetwork(c, 3, { advertsAhead: [] }).warnings, undefined);
  assert.equal(assessNetwork(c, 3, { advertsAhead: two, market: false }).warnings, undefined, 'a witness or steward alone needs no advert');
  assert.equal(assessNetwork({ peers: 0, remembered: 0, bootstrap: [] }, 3, { advertsAhead: two }).warnings, undefined, 'no peers is said first');
});
