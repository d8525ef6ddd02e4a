/**
 * The requester side of records/1 sync (src/net/records-sync.ts): a peer that
 * refuses us for its byte budget (NET_RATE_LIMITED) is not asked for the
 * remaining kinds in the same sync — each further request would be refused
 * too, and counted against this node's abuse score there; and the sync on
 * connect never dials a peer that has gone.
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
import { PROTOCOLS, type DirectProtocols } from '../../../src/net/protocols.js';
import { ALL_SHARDS } from '../../../src/net/topics.js';

const peer = peerIdFromString('12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA');

/** A RecordsSync over a fake `direct.call` (which counts the requests), the three market kinds joined and synced. */
function makeSync(
  call: () => Promise<unknown[]>,
  connected: () => boolean = () => true,
  seen: Array<{ maxResponseFrames?: number } | undefined> = [],
): { sync: RecordsSync; metrics: ReturnType<typeof createNetMetrics>; calls: () => number } {
  const metrics = createNetMetrics(new Registry());
  let n = 0;
  const direct = {
    call: async (_p: unknown, _proto: unknown, _reqs: unknown, opts?: { limits?: { maxResponseFrames?: number } }) => {
      n++;
      seen.push(opts?.limits);
      return call();
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
    clock: fakeClock(1_000),
    connected,
  });
  return { sync, metrics, calls: () => n };
}

test('a sync takes no more records than it asks for, and a fetch no more than the addresses it names (the call fails past them: protocols.ts)', async () => {
  const seen: Array<{ maxResponseFrames?: number } | undefined> = [];
  const { sync } = makeSync(async () => [], undefined, seen);
  await sync.sync(peer);
  assert.deepEqual(
    seen.map((l) => l?.maxResponseFrames),
    [100, 100, 100],
    'syncLimit for each kind',
  );
  await sync.fetch(peer, ['sha256:' + '1'.repeat(64), 'sha256:' + '2'.repeat(64), 'sha256:' + '1'.repeat(64)]);
  assert.equal(seen.at(-1)?.maxResponseFrames, 2, 'one per distinct address');
});

test('a sync refused for the peer\'s budget stops there: the remaining kinds are not asked, and are reported failed with the same code', async () => {
  const { sync, calls } = makeSync(async () => {
    throw new C0Error(RECORDS_RATE_LIMITED, 'budget spent');
  });
  const res = await sync.sync(peer);
  assert.equal(calls(), 1, 'one request, not one per kind');
  assert.deepEqual(res.failed, { advert: RECORDS_RATE_LIMITED, presence: RECORDS_RATE_LIMITED, job: RECORDS_RATE_LIMITED });
});

test('the sync on connect never dials: once the peer has gone, no request is made, and the kinds not asked are reported NET_PEER_GONE', async () => {
  assert.equal(SYNC_PEER_GONE, 'NET_PEER_GONE');
  let connected = true;
  let checks = 0;
  const { sync, metrics, calls } = makeSync(
    async () => {
      // the peer hangs up once the first request is answered (a provider's short connection to deliver an offer)
      connected = false;
      return [];
    },
    () => {
      checks++;
      return connected;
    },
  );
  const res = await sync.sync(peer, ['advert', 'presence', 'job'], { whileConnected: true });
  assert.equal(calls(), 1, 'the first kind was asked while connected; none after the peer left');
  assert.deepEqual(res.failed, { presence: SYNC_PEER_GONE, job: SYNC_PEER_GONE });
  assert.match(await metrics.registry.metrics(), /c0mpute_net_syncs_total\{outcome="gone"\} 1/);

  // an explicit sync (syncFrom: anti-entropy, a heal) asks every kind, dialling if it must: the check is not made
  checks = 0;
  const all = await sync.sync(peer, ['advert', 'presence', 'job']);
  assert.equal(calls(), 4);
  assert.deepEqual(all.failed, {});
  assert.equal(checks, 0);

  // a newly identified peer is synced on the first path: gone already, it is checked and nothing is asked
  sync.onIdentify(peer, [PROTOCOLS.records]);
  for (let i = 0; i < 50 && checks === 0; i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(checks > 0, 'onIdentify started a sync that checked the connection');
  assert.equal(calls(), 4, 'and made no request');
});
