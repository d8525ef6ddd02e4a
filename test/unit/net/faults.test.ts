import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { faultyHandler, seededRandom } from '../../../src/net/faults.js';
import { parseRecordsRequest } from '../../../src/net/records-protocol.js';
import type { ServeContext } from '../../../src/net/protocols.js';
import type { C0Error } from '../../../src/errors.js';

test('seededRandom is deterministic', () => {
  const a = seededRandom(7);
  const b = seededRandom(7);
  for (let i = 0; i < 5; i++) assert.equal(a(), b());
});

test('faultyHandler adds latency and loses requests until the deadline', async () => {
  const calls: number[] = [];
  const h = faultyHandler(() => void calls.push(1), { latencyMs: 30, loss: 0.5, random: seededRandom(1) });
  const ctx = (ms: number): ServeContext => {
    const ac = new AbortController();
    setTimeout(() => ac.abort(), ms);
    return { peer: undefined as never, signal: ac.signal, send: async () => {} };
  };
  const t0 = Date.now();
  for (let i = 0; i < 6; i++) await h([], ctx(60));
  assert.ok(Date.now() - t0 >= 6 * 30);
  assert.ok(calls.length > 0 && calls.length < 6, `answered ${calls.length} of 6`);
});

test('records/1 requests are parsed strictly', () => {
  assert.deepEqual(parseRecordsRequest({ op: 'live', kind: 'advert', limit: 3 }), { op: 'live', kind: 'advert', limit: 3 });
  const bad = (v: unknown) => assert.throws(() => parseRecordsRequest(v as never), (e: C0Error) => e.code === 'NET_BAD_REQUEST');
  bad({ op: 'live', kind: 'nope', limit: 3 });
  bad({ op: 'live', kind: 'advert', limit: 0 });
  bad({ op: 'get', addresses: ['x'] });
  bad({ op: 'get', addresses: [] });
  bad([1]);
});
