/**
 * records/1 `jobs` (src/net/records-protocol.ts, src/net/record-cache.ts by-job index, src/net/records-sync.ts
 * syncJobs): the records of the asked kinds that name the asked jobs, whatever else the peer holds. What a steward's
 * catch-up asks for: a `live` sync is answered oldest first, so a party holding 2 500 older receipts never reaches the
 * one the steward missed (the newest); asked by job, one request brings it. The index holds what the cache holds (an
 * evicted record is not answered), the per-peer byte budget applies, and a source without the index answers
 * NET_BAD_REQUEST as a node before the op does.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PeerId } from '@libp2p/interface';
import { Registry } from 'prom-client';
import { peerIdFromString } from '@libp2p/peer-id';
import type { C0Error } from '../../../src/errors.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { hashHex } from '../../../src/records/address.js';
import type { Opened } from '../../../src/records/envelope.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline } from '../../../src/net/gossip-validation.js';
import { MemoryRecordCache, type RecordSource } from '../../../src/net/record-cache.js';
import { encodeRecordsRequest, parseRecordsRequest, recordsHandler, RECORDS_RATE_LIMITED } from '../../../src/net/records-protocol.js';
import { RecordsSync } from '../../../src/net/records-sync.js';
import { type DirectProtocols } from '../../../src/net/protocols.js';
import { ALL_SHARDS } from '../../../src/net/topics.js';
import { NOW, P, job, offer, receipt } from '../market/fixtures.js';

const provider = P(21);
const buyer = P(1);
const advert = 'sha256:' + '31'.repeat(32);
const asPeer = (id: string) => ({ toString: () => id }) as unknown as PeerId;

function receiptOf(i: number) {
  const j = job(buyer, { nonce: new Uint8Array([i >> 8, i & 255, 9]) });
  const o = offer(provider, j, advert);
  return { job: j, offer: o, receipt: receipt(provider, buyer, o, { energy: { uj: 1000 + i, grade: 'Estimator' } }) };
}

async function ask(h: ReturnType<typeof recordsHandler>, who: string, req: unknown): Promise<{ frames: Uint8Array[]; code?: string }> {
  const frames: Uint8Array[] = [];
  try {
    await h([req as never], { peer: asPeer(who), signal: new AbortController().signal, send: async (f) => void frames.push(f as Uint8Array) });
    return { frames };
  } catch (e) {
    return { frames, code: (e as C0Error).code };
  }
}

test('records/1 jobs: the receipt a steward missed is found by its job behind 2 500 older ones, where a live sync never reaches it', async () => {
  const clock = fakeClock(NOW);
  const party = new MemoryRecordCache({ clock });
  for (let i = 0; i < 2_500; i++) party.add('receipt', receiptOf(i).receipt);
  const missed = receiptOf(60_000);
  const sel = { address: 'sha256:' + '42'.repeat(32), signer: buyer.did, bytes: new Uint8Array([1, 2, 3]), type: 'c0mpute.selection/1', record: { job: missed.job.address } } as unknown as Opened;
  party.add('selection', sel);
  party.add('receipt', missed.receipt);
  const h = recordsHandler(party, clock);
  // live: the oldest 1 024, not the missed one
  const live = await ask(h, 'steward', { op: 'live', kind: 'receipt', limit: 1024 });
  assert.equal(live.frames.length, 1024);
  assert.ok(!live.frames.some((b) => hashHex(b) === missed.receipt.address));
  // by job: the selection then the receipt, nothing else
  const r = await ask(h, 'steward', encodeRecordsRequest({ op: 'jobs', kinds: ['selection', 'receipt'], jobs: [missed.job.address, 'sha256:' + '77'.repeat(32)] }));
  assert.equal(r.code, undefined);
  assert.deepEqual(
    r.frames.map((b) => Buffer.from(b).toString('hex')),
    [sel.bytes, missed.receipt.bytes].map((b) => Buffer.from(b).toString('hex')),
  );
  // only the kinds asked
  assert.equal((await ask(h, 'steward', { op: 'jobs', kinds: ['receipt'], jobs: [missed.job.address] })).frames.length, 1);
});

test('records/1 jobs: the index holds what the cache holds (an evicted or lapsed record is not answered); bad requests; no index: NET_BAD_REQUEST; the byte budget applies', async () => {
  const clock = fakeClock(NOW);
  const cache = new MemoryRecordCache({ clock, maxPerKind: 3, ttlMs: 60_000 });
  const rs = [0, 1, 2, 3].map(receiptOf);
  for (const r of rs) cache.add('receipt', r.receipt);
  assert.deepEqual(cache.byJob(['receipt'], [rs[0]!.job.address], clock(), 10), [], 'the oldest was evicted by the count bound: not indexed');
  assert.equal(cache.byJob(['receipt'], rs.map((r) => r.job.address), clock(), 10).length, 3);
  assert.equal(cache.byJob(['receipt'], rs.map((r) => r.job.address), clock(), 2).length, 2, 'at most the limit');
  clock.advance(60_001);
  assert.deepEqual(cache.byJob(['receipt'], rs.map((r) => r.job.address), clock(), 10), [], 'past the time-to-live');

  for (const bad of [
    { op: 'jobs', kinds: ['advert'], jobs: [rs[1]!.job.address] },
    { op: 'jobs', kinds: ['receipt', 'receipt'], jobs: [rs[1]!.job.address] },
    { op: 'jobs', kinds: ['receipt'], jobs: [] },
    { op: 'jobs', kinds: ['receipt'], jobs: ['nope'] },
    { op: 'jobs', kinds: ['receipt'], jobs: Array.from({ length: 257 }, () => rs[1]!.job.address) },
    // a job listed twice would walk its records twice: one cheap request, much work (review 28d)
    { op: 'jobs', kinds: ['receipt'], jobs: [rs[1]!.job.address, rs[1]!.job.address] },
  ]) {
    assert.throws(() => parseRecordsRequest(bad as never), (e: C0Error) => e.code === 'NET_BAD_REQUEST', JSON.stringify(bad).slice(0, 80));
  }
  // indexed by kind and job: a request for one kind answers (and walks) only that kind's records of the job
  const kinds = new MemoryRecordCache({ clock });
  const r9 = receiptOf(9);
  kinds.add('receipt', r9.receipt);
  kinds.add('nondelivery', { ...r9.receipt, address: 'sha256:' + '99'.repeat(32) });
  assert.equal(kinds.byJob(['receipt'], [r9.job.address], clock(), 10).length, 1);
  assert.equal(kinds.byJob(['nondelivery'], [r9.job.address], clock(), 10).length, 1);
  assert.equal(kinds.byJob(['receipt', 'nondelivery'], [r9.job.address], clock(), 10).length, 2);
  assert.deepEqual(kinds.byJob(['selection'], [r9.job.address], clock(), 10), []);

  const noIndex: RecordSource = { live: () => [], get: () => undefined };
  assert.equal((await ask(recordsHandler(noIndex, clock), 'a', { op: 'jobs', kinds: ['receipt'], jobs: [rs[1]!.job.address] })).code, 'NET_BAD_REQUEST');

  const full = new MemoryRecordCache({ clock });
  const many = Array.from({ length: 40 }, (_, i) => receiptOf(100 + i));
  for (const r of many) full.add('receipt', r.receipt);
  const size = many[0]!.receipt.bytes.length;
  const h = recordsHandler(full, clock, { peer: { ratePerSec: 1, burst: 10 * size + 1024 }, requestCostBytes: 1024 });
  const jobs = many.map((r) => r.job.address);
  assert.equal((await ask(h, 'greedy', { op: 'jobs', kinds: ['receipt'], jobs })).frames.length, 10, 'an answer never exceeds what is left of the budget');
  assert.equal((await ask(h, 'greedy', { op: 'jobs', kinds: ['receipt'], jobs })).code, RECORDS_RATE_LIMITED);
});

test('syncJobs: what a peer answers goes through the pipeline; a record naming a job not asked is not delivered; a peer before the op fails each kind NET_BAD_REQUEST', async () => {
  const clock = fakeClock(NOW);
  const party = new MemoryRecordCache({ clock });
  const [a, b] = [receiptOf(1), receiptOf(2)];
  party.add('receipt', a.receipt);
  party.add('receipt', b.receipt);
  let serve = recordsHandler(party, clock);
  // a dishonest party answers every receipt it holds, whatever was asked
  let extra: Uint8Array[] = [];
  const direct = {
    call: async (_p: unknown, _proto: unknown, reqs: unknown[]) => {
      const frames: Uint8Array[] = [];
      await serve([reqs[0] as never], { peer: asPeer('steward'), signal: new AbortController().signal, send: async (f) => void frames.push(f as Uint8Array) });
      return [...frames, ...extra];
    },
  } as unknown as DirectProtocols;
  const metrics = createNetMetrics(new Registry());
  const delivered: string[] = [];
  const sync = new RecordsSync({
    direct,
    pipeline: new RecordPipeline({ metrics, log: silentLogger() }),
    metrics,
    log: silentLogger(),
    joined: ['selection', 'receipt'],
    shards: ALL_SHARDS,
    syncKinds: [],
    syncLimit: 100,
    accept: (fresh) => void delivered.push(...fresh.map((f) => f.rec.address)),
    source: new MemoryRecordCache(),
    clock,
    connected: () => true,
  });
  const peer = peerIdFromString('12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA');
  extra = [b.receipt.bytes];
  const r = await sync.syncJobs(peer, ['selection', 'receipt'], [a.job.address]);
  assert.deepEqual([r.accepted, r.failed], [1, {}]);
  assert.deepEqual(delivered, [a.receipt.address]);
  // a previous-version node: its parser refuses the op
  serve = async (reqs) => void parseRecordsRequest({ ...(reqs[0] as object), op: 'nope' } as never);
  extra = [];
  assert.deepEqual((await sync.syncJobs(peer, ['selection', 'receipt'], [a.job.address])).failed, { selection: 'NET_BAD_REQUEST', receipt: 'NET_BAD_REQUEST' });
});
