/**
 * The sync digest of /c0mpute/records/1 `live` (src/net/sync-digest.ts, docs/network.md §4 "Sync digest"):
 * with `have` the answer is exactly the live records the requester did not list (and the limit counts those);
 * without it the answer is unchanged (old requesters); a malformed `have` is NET_BAD_REQUEST and nothing is sent.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PeerId } from '@libp2p/interface';
import { C0Error } from '../../../src/errors.js';
import { fakeClock } from '../../../src/util/clock.js';
import { DIGEST_SKIP_COST_BYTES, encodeRecordsRequest, parseRecordsRequest, RECORDS_RATE_LIMITED, recordsHandler } from '../../../src/net/records-protocol.js';
import { MemoryRecordCache } from '../../../src/net/record-cache.js';
import { digestOf, DIGEST_PREFIX_BYTES } from '../../../src/net/sync-digest.js';
import { hashHex } from '../../../src/records/address.js';
import { T } from '../../../src/records/kinds.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { CborValue } from '../../../src/records/cbor.js';

const peer = { toString: () => 'p' } as unknown as PeerId;

/** n presence-like records whose bytes are a 4-byte tag; addresses are the bytes' SHA-256, as for real envelopes. */
function cacheOf(n: number): { cache: MemoryRecordCache; bytes: Uint8Array[] } {
  const cache = new MemoryRecordCache();
  const bytes: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const b = new Uint8Array(new Uint32Array([i]).buffer);
    bytes.push(b);
    const rec = { type: T.advert, signer: `did:key:z${i}`, address: hashHex(b), record: { issuedAt: 0, expiresAt: 1e12, seq: 1, workloads: ['w'] }, bytes: b } as unknown as Opened;
    cache.add('advert', rec);
  }
  return { cache, bytes };
}

async function ask(cache: MemoryRecordCache, req: Record<string, CborValue>): Promise<number[]> {
  const h = recordsHandler(cache, fakeClock(1), { maxResponseRecords: 10_000, maxResponseBytes: 1e9, peer: { ratePerSec: 1e9, burst: 1e9 } });
  const got: number[] = [];
  await h([req], { peer, signal: new AbortController().signal, send: async (f) => void got.push(new Uint32Array((f as Uint8Array).slice().buffer)[0]!) });
  return got.sort((a, b) => a - b);
}

test('records/1 live with a digest: only the records the requester lacks; the limit counts those', async () => {
  const { cache, bytes } = cacheOf(100);
  const all = Array.from({ length: 100 }, (_, i) => i);
  assert.deepEqual(await ask(cache, { op: 'live', kind: 'advert', limit: 4096 }), all, 'no digest: everything (an old requester)');
  const held = bytes.filter((_, i) => i % 3 !== 0);
  const req = encodeRecordsRequest({ op: 'live', kind: 'advert', limit: 4096, have: digestOf(held) }) as Record<string, CborValue>;
  assert.deepEqual(await ask(cache, req), all.filter((i) => i % 3 === 0), 'a digest: only what is not listed');
  assert.deepEqual(await ask(cache, { ...req, have: digestOf(bytes) }), [], 'in sync: nothing');
  const limited = await ask(cache, { ...req, limit: 5 });
  assert.equal(limited.length, 5, 'the limit counts records sent, not records skipped');
  assert.ok(limited.every((i) => i % 3 === 0));
});

test('records/1 live: a malformed digest is NET_BAD_REQUEST, and nothing is sent', async () => {
  const { cache } = cacheOf(10);
  for (const have of [new Uint8Array(DIGEST_PREFIX_BYTES + 1), 'abc', [1, 2], new Uint8Array(4097 * DIGEST_PREFIX_BYTES)] as CborValue[]) {
    assert.throws(() => parseRecordsRequest({ op: 'live', kind: 'advert', limit: 10, have }), (e: unknown) => e instanceof C0Error && e.code === 'NET_BAD_REQUEST');
    let sent = 0;
    const h = recordsHandler(cache, fakeClock(1));
    await assert.rejects(async () => h([{ op: 'live', kind: 'advert', limit: 10, have }], { peer, signal: new AbortController().signal, send: async () => void sent++ }), (e: unknown) => e instanceof C0Error && e.code === 'NET_BAD_REQUEST');
    assert.equal(sent, 0);
  }
});

test('records/1 live: each record skipped for a digest costs the requester budget (a listed digest cannot scan the market for free)', async () => {
  const { cache, bytes } = cacheOf(200);
  // a budget for the request's fixed cost and a little more: listing all 200 records and asking for one must spend it
  const opts = { maxResponseRecords: 10_000, maxResponseBytes: 1e9, requestCostBytes: 100, peer: { ratePerSec: 1, burst: 100 + 200 * DIGEST_SKIP_COST_BYTES } };
  const h = recordsHandler(cache, fakeClock(1), opts);
  const ctx = { peer, signal: new AbortController().signal, send: async () => undefined };
  const req = encodeRecordsRequest({ op: 'live', kind: 'advert', limit: 1, have: digestOf(bytes) }) as Record<string, CborValue>;
  await h([req], ctx);
  // the 200 records read and skipped used the budget up: the next request is refused
  await assert.rejects(async () => h([req], ctx), (e: unknown) => e instanceof C0Error && e.code === RECORDS_RATE_LIMITED);
});
