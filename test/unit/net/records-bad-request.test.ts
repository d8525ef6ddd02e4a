/**
 * records/1 charges bad requests to the peer-abuse score (review s39 F3; docs/network.md §Abuse): one no node sends
 * (not a map with a string op, not one frame) is a strike; one a node of another version may send (an unknown op or
 * kind, a field refused) is free up to REFUSED_RATE per peer and reported past it; a `jobs` request to a source with
 * no by-job index (this node's lack) costs nothing. With the network's wiring a flood of them gets the peer banned.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { PeerId } from '@libp2p/interface';
import { fakeClock } from '../../../src/util/clock.js';
import { recordsHandler } from '../../../src/net/records-protocol.js';
import type { RecordSource } from '../../../src/net/record-cache.js';
import type { C0Error } from '../../../src/errors.js';
import { FloodGuard } from '../../../src/net/flood-limits.js';
import { AbusePolicy, REFUSED_RATE } from '../../../src/net/peer-abuse.js';
import { silentLogger } from '../../../src/util/log.js';

const source: RecordSource = { live: () => [], get: () => undefined };
const peer = (id: string) => ({ toString: () => id }) as unknown as PeerId;

async function ask(h: ReturnType<typeof recordsHandler>, who: string, ...reqs: unknown[]): Promise<string | undefined> {
  try {
    await h(reqs as never[], { peer: peer(who), signal: new AbortController().signal, send: async () => {} });
    return undefined;
  } catch (e) {
    return (e as C0Error).code;
  }
}

function rig() {
  const c = fakeClock(0);
  const blamed: string[] = [];
  const struck: string[] = [];
  const h = recordsHandler(source, c, {}, (p) => void blamed.push(p), c, (p) => void struck.push(p));
  return { h, blamed, struck, c };
}

test('records/1: a request no node sends is a strike, each time', async () => {
  const r = rig();
  for (const req of [7, 'get', [1, 2], new Uint8Array(3), null, { addresses: [] }, { op: 5 }]) assert.equal(await ask(r.h, 'm', req), 'NET_BAD_REQUEST');
  assert.equal(await ask(r.h, 'm', { op: 'get', addresses: ['sha256:' + '0'.repeat(64)] }, { op: 'x' }), 'NET_BAD_REQUEST', 'two frames');
  assert.equal(r.struck.length, 8);
  assert.deepEqual(r.blamed, []);
});

test('records/1: a request another version may send is free up to REFUSED_RATE, reported past it', async () => {
  const r = rig();
  const maybeHonest = [{ op: 'x' }, { op: 'live', kind: 'newkind', limit: 5 }, { op: 'get', addresses: ['md5:00'] }, { op: 'live', kind: 'advert', limit: 1e9 }];
  for (let i = 0; i < REFUSED_RATE.burst; i++) assert.equal(await ask(r.h, 'newer', maybeHonest[i % maybeHonest.length]), 'NET_BAD_REQUEST');
  assert.deepEqual(r.blamed, [], 'within the burst: nothing');
  assert.equal(await ask(r.h, 'newer', { op: 'x' }), 'NET_BAD_REQUEST');
  assert.equal(await ask(r.h, 'newer', { op: 'x' }), 'NET_BAD_REQUEST');
  assert.deepEqual(r.blamed, ['newer', 'newer'], 'past it: each reported');
  r.c.advance(1000 / REFUSED_RATE.ratePerSec);
  assert.equal(await ask(r.h, 'newer', { op: 'x' }), 'NET_BAD_REQUEST');
  assert.equal(r.blamed.length, 2, 'the bucket refills');
  assert.equal(await ask(r.h, 'other', { op: 'x' }), 'NET_BAD_REQUEST');
  assert.equal(r.blamed.length, 2, 'per peer');
  assert.deepEqual(r.struck, []);
});

test('records/1: a good request, and a jobs request this node cannot answer, cost nothing', async () => {
  const r = rig();
  for (let i = 0; i < REFUSED_RATE.burst + 5; i++) {
    assert.equal(await ask(r.h, 'honest', { op: 'get', addresses: ['sha256:' + '0'.repeat(64)] }), undefined);
    assert.equal(await ask(r.h, 'honest', { op: 'jobs', kinds: ['receipt'], jobs: ['sha256:' + '1'.repeat(64)] }), 'NET_BAD_REQUEST');
  }
  assert.deepEqual(r.blamed, []);
  assert.deepEqual(r.struck, []);
});

test('records/1: with the network wiring (blame, strike), a flood of bad requests gets the peer disconnected and banned', async () => {
  const c = fakeClock(0);
  const guard = new FloodGuard({ abuseHalfLifeMs: 60_000 }, c);
  const hung: string[] = [];
  const policy = new AbusePolicy(guard, {}, c, silentLogger(), (p) => void hung.push(p));
  const h = recordsHandler(source, c, {}, (p) => guard.blame(p), c, (p) => guard.strike(p));
  let n = 0;
  while (!policy.denied('flood') && n < 10_000) {
    await ask(h, 'flood', { op: 'x' });
    n++;
  }
  assert.ok(policy.denied('flood'), `banned after ${n} unknown ops`);
  assert.equal(n, REFUSED_RATE.burst + 400, 'the burst, then 400 reports of one point');
  let m = 0;
  while (!policy.denied('junk') && m < 10_000) {
    await ask(h, 'junk', 'junk');
    m++;
  }
  assert.equal(m, 40, 'malformed: 40 strikes of ten points');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(hung, ['flood', 'junk']);
});
