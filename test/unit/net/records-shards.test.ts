/**
 * /c0mpute/records/1 `live` with `shards` (docs/network.md §14): the answer is exactly the held records on
 * the asked markets, filtered on the shards kept beside each record, with no record re-opened. The records
 * here carry envelope bytes that do not open, so any re-open to filter would drop them.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PeerId } from '@libp2p/interface';
import { fakeClock } from '../../../src/util/clock.js';
import { recordsHandler } from '../../../src/net/records-protocol.js';
import { MemoryRecordCache } from '../../../src/net/record-cache.js';
import { shardOf, type TopicKind } from '../../../src/net/topics.js';
import { overlayRecordSource } from '../../../src/node/overlay-records.js';
import { T, type Advert, type Presence } from '../../../src/records/kinds.js';
import type { Opened } from '../../../src/records/envelope.js';

const peer = { toString: () => 'p' } as unknown as PeerId;
const ASKED = ['03', '0a'];

/** Record i: its bytes are a 4-byte tag (not an envelope); workloads w<i> and w<i+1>, read through a counting getter. */
function fakes(n: number, type: string, reads: { n: number }): Array<Opened & { i: number; shards: string[] }> {
  return Array.from({ length: n }, (_, i) => {
    const workloads = [`w${i}`, `w${i + 1}`];
    const record = { issuedAt: 0, expiresAt: 1e12, windowMs: 1e12, seq: 1, get workloads() { reads.n++; return workloads; } };
    const bytes = new Uint8Array(new Uint32Array([i]).buffer);
    return { i, type, signer: `did:key:z${i}`, address: `sha256:${i.toString(16).padStart(64, '0')}`, record, bytes, shards: workloads.map(shardOf) };
  });
}

async function ask(source: Parameters<typeof recordsHandler>[0], kind: TopicKind, limit = 4096, shards: string[] = ASKED): Promise<number[]> {
  const h = recordsHandler(source, fakeClock(1), { maxResponseRecords: 10_000, maxResponseBytes: 1e9, peer: { ratePerSec: 1e9, burst: 1e9 } });
  const got: number[] = [];
  await h([{ op: 'live', kind, limit, shards }], { peer, signal: new AbortController().signal, send: async (f) => void got.push(new Uint32Array((f as Uint8Array).slice().buffer)[0]!) });
  return got.sort((a, b) => a - b);
}

const onAsked = (r: { shards: string[] }) => r.shards.some((s) => ASKED.includes(s));

test('records/1 live with shards (memory cache): exactly the records on those shards, none re-opened, shards computed once per record', async () => {
  const reads = { n: 0 };
  const recs = fakes(600, T.advert, reads);
  const cache = new MemoryRecordCache();
  for (const r of recs) cache.add('advert', r);
  const atAdd = reads.n;
  assert.ok(atAdd > 0, 'each record’s shards are computed when it is added');
  const want = recs.filter(onAsked).map((r) => r.i);
  assert.ok(want.length > 20 && want.length < 300, 'the asked shards hold some of the records, not all');
  assert.deepEqual(await ask(cache, 'advert'), want);
  assert.deepEqual(await ask(cache, 'advert'), want);
  assert.equal(reads.n, atAdd, 'answering reads the kept shards, not the records');
  assert.deepEqual(await ask(cache, 'advert', 5), want.slice(0, 5), 'the limit counts records on the asked shards');
  assert.equal((await ask(cache, 'advert', 4096, ['00', '01', '02', '03', '04', '05', '06', '07', '08', '09', '0a', '0b', '0c', '0d', '0e', '0f'])).length, 600);
});

test('records/1 live with shards (an overlay’s source): adverts and presence filtered on shards kept beside each record, computed once', async () => {
  const reads = { n: 0 };
  const adverts = fakes(300, T.advert, reads) as unknown as Array<Opened<Advert> & { i: number; shards: string[] }>;
  const presence = fakes(300, T.presence, reads) as unknown as Array<Opened<Presence> & { i: number; shards: string[] }>;
  const source = overlayRecordSource({ adverts: () => adverts, presence: () => presence, getBytes: async () => undefined, marketBytes: async () => undefined, cache: new MemoryRecordCache() });
  assert.deepEqual(await ask(source, 'advert'), adverts.filter(onAsked).map((r) => r.i));
  assert.deepEqual(await ask(source, 'presence'), presence.filter(onAsked).map((r) => r.i));
  const first = reads.n;
  await ask(source, 'advert');
  await ask(source, 'presence');
  assert.equal(reads.n, first, 'a second request reads the shards kept on the first, not the records');
});
