/** /c0mpute/records/1 answer bounds: per request (records, bytes) and per peer over time (byte budget), with a fake clock; refusals feed the peer-abuse score. */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PeerId } from '@libp2p/interface';
import { fakeClock } from '../../../src/util/clock.js';
import { recordsHandler, RECORDS_RATE_LIMITED } from '../../../src/net/records-protocol.js';
import type { RecordSource } from '../../../src/net/record-cache.js';
import type { C0Error } from '../../../src/errors.js';
import { FloodGuard } from '../../../src/net/flood-limits.js';
import { AbusePolicy } from '../../../src/net/peer-abuse.js';
import { silentLogger } from '../../../src/util/log.js';

const blobs = Array.from({ length: 100 }, (_, i) => new Uint8Array(1000).fill(i));
const source: RecordSource = { live: (_k, _t, limit) => blobs.slice(0, limit), get: (a) => blobs[Number(a.slice(-2)) % 100] };
const peer = (id: string) => ({ toString: () => id }) as unknown as PeerId;

async function ask(h: ReturnType<typeof recordsHandler>, who: string, req: unknown): Promise<{ frames: number; bytes: number; code?: string }> {
  let frames = 0;
  let bytes = 0;
  try {
    await h([req as never], { peer: peer(who), signal: new AbortController().signal, send: async (f) => void ((frames += 1), (bytes += (f as Uint8Array).length)) });
    return { frames, bytes };
  } catch (e) {
    return { frames, bytes, code: (e as C0Error).code };
  }
}

test('records/1: one answer is bounded in records and bytes', async () => {
  const c = fakeClock(0);
  const h = recordsHandler(source, c, { maxResponseRecords: 10, maxResponseBytes: 1_000_000, peer: { ratePerSec: 1e9, burst: 1e9 } });
  assert.deepEqual(await ask(h, 'a', { op: 'live', kind: 'advert', limit: 4096 }), { frames: 10, bytes: 10_000 });
  const h2 = recordsHandler(source, c, { maxResponseRecords: 1000, maxResponseBytes: 5_500, peer: { ratePerSec: 1e9, burst: 1e9 } });
  assert.deepEqual(await ask(h2, 'a', { op: 'live', kind: 'advert', limit: 4096 }), { frames: 5, bytes: 5_000 });
  const addrs = Array.from({ length: 20 }, (_, i) => 'sha256:' + i.toString().padStart(64, '0'));
  assert.deepEqual(await ask(h2, 'a', { op: 'get', addresses: addrs }), { frames: 5, bytes: 5_000 });
});

test('records/1: a peer’s byte budget bounds what repeated requests get; past it, NET_RATE_LIMITED; other peers unaffected; it refills', async () => {
  const c = fakeClock(0);
  const h = recordsHandler(source, c, { peer: { ratePerSec: 1_000, burst: 25_000 }, requestCostBytes: 500 }, undefined, c);
  const live = { op: 'live', kind: 'advert', limit: 4096 };
  let served = 0;
  const codes: Array<string | undefined> = [];
  for (let i = 0; i < 10; i++) {
    const r = await ask(h, 'greedy', live);
    served += r.bytes;
    codes.push(r.code);
  }
  assert.equal(served, 24_000, 'the 25 000-byte burst less 500 per request: 24 records, then nothing');
  assert.equal(codes[0], undefined);
  assert.equal(codes.at(-1), RECORDS_RATE_LIMITED);
  assert.equal((await ask(h, 'other', live)).bytes, 24_000, 'another peer has its own budget');
  c.advance(5_500);
  assert.deepEqual(await ask(h, 'greedy', live), { frames: 5, bytes: 5_000 }, '5.5 s at 1 000 B/s: 5 500 B less the 500-byte request cost (refusals cost nothing)');
});

test('records/1: each request refused for the peer’s budget charges its abuse score; enough of them get it disconnected and banned; a peer within its budget is not charged', async () => {
  const c = fakeClock(0);
  const guard = new FloodGuard({ abuseHalfLifeMs: 60_000 }, c);
  const hung: string[] = [];
  const policy = new AbusePolicy(guard, { disconnectAt: 10, banMs: 60_000 }, c, silentLogger(), (p) => void hung.push(p));
  // the wiring createNetwork uses (records-sync.ts): refusals blame the peer through the validation pipeline's FloodGuard
  const h = recordsHandler(source, c, { peer: { ratePerSec: 1_000, burst: 3_000 }, requestCostBytes: 1_000 }, (p) => guard.blame(p), c);
  const get = { op: 'get', addresses: ['sha256:' + '0'.repeat(64)] };
  for (let i = 0; i < 2; i++) assert.equal((await ask(h, 'honest', get)).code, undefined, 'within its budget');
  const codes: Array<string | undefined> = [];
  for (let i = 0; i < 10; i++) codes.push((await ask(h, 'greedy', get)).code);
  assert.deepEqual(codes.slice(0, 2), [undefined, undefined], 'two requests fit the budget (1 000 B record + 1 000 B cost each, burst 3 000)');
  assert.ok(codes.slice(2).every((x) => x === RECORDS_RATE_LIMITED));
  assert.equal(policy.appSpecificScore('greedy'), -8, 'eight refusals: eight abuse points (gossipsub P5)');
  assert.equal(policy.appSpecificScore('honest'), -0, 'a peer within its budget earns nothing');
  assert.equal(policy.denied('greedy'), false);
  await ask(h, 'greedy', get);
  await ask(h, 'greedy', get);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(hung, ['greedy'], 'the 10th refusal reaches disconnectAt: hung up');
  assert.equal(policy.denied('greedy'), true, 'and refused by the gater for banMs');
  assert.equal(policy.denied('honest'), false);
});

test('records/1: concurrent requests from one peer share its byte budget: together they are served no more than burst + rate × t', async () => {
  const c = fakeClock(0);
  const burst = 25_000;
  const rate = 1_000;
  const h = recordsHandler(source, c, { peer: { ratePerSec: rate, burst }, requestCostBytes: 500 }, undefined, c);
  let served = 0;
  let refused = 0;
  // each send yields (a real stream's write waits for the muxer), so every request is in flight at once
  const slowAsk = async (): Promise<void> => {
    try {
      await h([{ op: 'live', kind: 'advert', limit: 4096 } as never], {
        peer: peer('greedy'),
        signal: new AbortController().signal,
        send: async (f) => {
          await new Promise((r) => setImmediate(r));
          c.advance(1);
          served += (f as Uint8Array).length;
        },
      });
    } catch (e) {
      assert.equal((e as C0Error).code, RECORDS_RATE_LIMITED);
      refused++;
    }
  };
  const t0 = c();
  await Promise.all(Array.from({ length: 30 }, slowAsk));
  const bound = burst + (rate * (c() - t0)) / 1000;
  const charged = served + 500 * (30 - refused);
  assert.ok(charged <= bound, `served ${served} B (${charged} B with the request costs); the budget allows ${bound} B`);
  assert.ok(served >= 5_000, `what the burst holds beside the requests' costs is still served (${served} B)`);
});
