/**
 * The requester side of records/1 sync (src/net/records-sync.ts): a peer that
 * refuses us for its byte budget (NET_RATE_LIMITED) is not asked for the
 * remaining kinds in the same sync — each further request would be refused
 * too, and counted against this node's abuse score there.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { peerIdFromString } from '@libp2p/peer-id';
import { C0Error } from '../../../src/errors.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline } from '../../../src/net/gossip-validation.js';
import { MemoryRecordCache } from '../../../src/net/record-cache.js';
import { RECORDS_RATE_LIMITED } from '../../../src/net/records-protocol.js';
import { RecordsSync, SYNC_PEER_GONE } from '../../../src/net/records-sync.js';
import type { DirectProtocols } from '../../../src/net/protocols.js';
import { ALL_SHARDS } from '../../../src/net/topics.js';

test('a sync refused for the peer\'s budget stops there: the remaining kinds are not asked, and are reported failed with the same code', async () => {
  const metrics = createNetMetrics(new Registry());
  const clock = fakeClock(1_000);
  let calls = 0;
  const direct = {
    call: async () => {
      calls++;
      throw new C0Error(RECORDS_RATE_LIMITED, 'budget spent');
    },
  } as unknown as DirectProtocols;
  const sync = new RecordsSync({
    direct,
    pipeline: new RecordPipeline({ metrics, log: silentLogger() }),
    metrics,
    log: silentLogger(),
    joined: ['advert', 'presence', 'job'],
    shards: ALL_SHARDS,
    syncKinds: ['advert', 'presence', 'job'],
    syncLimit: 100,
    accept: () => undefined,
    source: new MemoryRecordCache(),
    clock,
  });
  const peer = peerIdFromString('12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA');
  const res = await sync.sync(peer);
  assert.equal(calls, 1, 'one request, not one per kind');
  assert.deepEqual(res.failed, { advert: RECORDS_RATE_LIMITED, presence: RECORDS_RATE_LIMITED, job: RECORDS_RATE_LIMITED });
});

test('the sync on connect never dials: once the peer has gone, no request is made, and the kinds not asked are reported NET_PEER_GONE', async () => {
  const metrics = createNetMetrics(new Registry());
  const clock = fakeClock(1_000);
  const asked: string[] = [];
  let connected = true;
  const direct = {
    call: async (_p: unknown, proto: string) => {
      asked.push(proto);
      // the peer hangs up after the first request is answered (a provider's short connection to deliver an offer)
      connected = false;
      return [];
    },
  } as unknown as DirectProtocols;
  const sync = new RecordsSync({
    direct,
    pipeline: new RecordPipeline({ metrics, log: silentLogger() }),
    metrics,
    log: silentLogger(),
    joined: ['advert', 'presence', 'job'],
    shards: ALL_SHARDS,
    syncKinds: ['advert', 'presence', 'job'],
    syncLimit: 100,
    accept: () => undefined,
    source: new MemoryRecordCache(),
    clock,
    connected: () => connected,
  });
  const peer = peerIdFromString('12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA');
  const res = await sync.sync(peer, ['advert', 'presence', 'job'], { whileConnected: true });
  assert.equal(asked.length, 1, 'the first kind was asked while connected; none after the peer left');
  assert.deepEqual(res.failed, { presence: SYNC_PEER_GONE, job: SYNC_PEER_GONE });
  assert.equal(SYNC_PEER_GONE, 'NET_PEER_GONE');

  // an explicit sync (syncFrom: anti-entropy, a heal) still asks every kind, dialling if it must
  asked.length = 0;
  const all = await sync.sync(peer, ['advert', 'presence', 'job']);
  assert.equal(asked.length, 3);
  assert.deepEqual(all.failed, {});

  // onIdentify takes the first path: with the peer already gone, nothing is asked at all
  asked.length = 0;
  sync.onIdentify(peer, ['/c0mpute/records/1']);
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(asked.length, 0);
});
