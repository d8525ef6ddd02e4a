/**
 * Outcome catch-up (src/net/records-sync.ts `catchUp`, records/1 `live` `since`; docs/network.md §5 "Catching up on
 * outcomes"; review C2): a node that counts outcomes and was away asks the peers it connects to again for the
 * receipts, acceptances and non-deliveries they took since it left, bounded in time (never further back than
 * `maxAgeMs`), once per peer in a window after it came back, through the same pipeline as gossip. Before, the sync on
 * connect asked adverts and presence only, and a node stopped while 40 jobs ran never learnt their outcomes.
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
import type { CborValue } from '../../../src/records/cbor.js';
import type { Opened } from '../../../src/records/envelope.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline } from '../../../src/net/gossip-validation.js';
import { MemoryRecordCache } from '../../../src/net/record-cache.js';
import { recordsHandler } from '../../../src/net/records-protocol.js';
import { RecordsSync, type RecordsSyncDeps } from '../../../src/net/records-sync.js';
import { PROTOCOLS, type DirectProtocols } from '../../../src/net/protocols.js';
import { ALL_SHARDS, type TopicKind } from '../../../src/net/topics.js';
import { DIGEST_PREFIX_BYTES } from '../../../src/net/sync-digest.js';
import { NOW, P, acceptance, job, offer, receipt } from '../market/fixtures.js';

const provider = P(21);
const buyer = P(1);
const advert = 'sha256:' + '31'.repeat(32);
const peerA = peerIdFromString('12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA');
const peerB = peerIdFromString('12D3KooWSE2hKUTEnxSg9yF1ZwSotU3XLWTqUMu6QebmB89cHVq7');
const asPeer = (id: string) => ({ toString: () => id }) as unknown as PeerId;

function outcomeOf(i: number): { receipt: Opened; acceptance: Opened } {
  const j = job(buyer, { nonce: new Uint8Array([i >> 8, i & 255, 7]) });
  const o = offer(provider, j, advert);
  const r = receipt(provider, buyer, o, { energy: { uj: 1000 + i, grade: 'Estimator' } });
  return { receipt: r, acceptance: acceptance(buyer, r, 'accepted') };
}

const MIN = 60_000;
const OUTCOMES: TopicKind[] = ['receipt', 'acceptance', 'nondelivery', 'nondelivery2'];

/**
 * A requester whose records/1 calls are answered by `server` (a records/1 handler over the peer's cache), the
 * requests it made recorded. `catchUp` is given as the option; joined: the market kinds and the outcome kinds but
 * nondelivery2 (a kind not joined is never asked).
 */
function requester(server: ReturnType<typeof recordsHandler>, clock: ReturnType<typeof fakeClock>, catchUp: RecordsSyncDeps['catchUp']) {
  const metrics = createNetMetrics(new Registry());
  const asked: Array<Record<string, CborValue>> = [];
  const got: Opened[] = [];
  const served = { frames: 0 };
  const direct = {
    call: async (p: unknown, _proto: unknown, reqs: CborValue[]) => {
      asked.push(reqs[0] as Record<string, CborValue>);
      const frames: CborValue[] = [];
      await server(reqs, { peer: asPeer(String(p)), signal: new AbortController().signal, send: async (f: CborValue) => void frames.push(f) } as never);
      served.frames += frames.length;
      return frames;
    },
  } as unknown as DirectProtocols;
  const own = new MemoryRecordCache({ clock });
  // built apart from the constructor call: the option is checked at run time, not only by the compiler
  const deps = {
    direct,
    pipeline: new RecordPipeline({ metrics, log: silentLogger(), clock }),
    metrics,
    log: silentLogger(),
    joined: ['advert', 'presence', 'receipt', 'acceptance', 'nondelivery'] as TopicKind[],
    shards: ALL_SHARDS,
    syncKinds: ['advert', 'presence'] as TopicKind[],
    syncLimit: 1024,
    accept: (fresh: Array<{ kind: TopicKind; rec: Opened }>) => {
      for (const f of fresh) {
        got.push(f.rec);
        own.add(f.kind, f.rec);
      }
    },
    source: own,
    clock,
    connected: () => true,
    catchUp,
  };
  const sync = new RecordsSync(deps as unknown as RecordsSyncDeps);
  const settle = async (n: number) => {
    for (let i = 0; i < 200 && asked.length < n; i++) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 20));
  };
  return { sync, asked, got, own, settle, served, pipeline: deps.pipeline };
}

/** A peer's record cache holding `n` outcomes (a receipt and its acceptance each) taken a minute ago, the clock now at NOW. */
function servedOutcomes(n: number) {
  const clock = fakeClock(NOW - MIN);
  const peer = new MemoryRecordCache({ clock });
  for (const o of Array.from({ length: n }, (_, i) => outcomeOf(i + 1))) {
    peer.add('receipt', o.receipt);
    peer.add('acceptance', o.acceptance);
  }
  clock.set(NOW);
  return { clock, peer };
}

/**
 * A records/1 server over `peer` where peerA answers its sync on connect and never its catch-up (a request with
 * `since`); the others answer a catch-up after `delayMs` (as over a network).
 */
function peerAHoldsBack(peer: MemoryRecordCache, clock: ReturnType<typeof fakeClock>, delayMs = 0): ReturnType<typeof recordsHandler> {
  const honest = recordsHandler(peer, clock);
  return (async (reqs: CborValue[], ctx: { peer: PeerId }) => {
    const catchUp = (reqs[0] as Record<string, CborValue>).since !== undefined;
    if (String(ctx.peer) === peerA.toString() && catchUp) return new Promise<void>(() => {});
    if (catchUp && delayMs) await new Promise((res) => setTimeout(res, delayMs));
    return honest(reqs, ctx as never);
  }) as unknown as ReturnType<typeof recordsHandler>;
}

test('a node back after a stop catches up, from the first peer it connects to, the outcomes taken while it was away, and no older ones', async () => {
  const clock = fakeClock(NOW - 3 * MIN);
  const peer = new MemoryRecordCache({ clock });
  // before the stop: one the requester already holds
  const before = outcomeOf(0);
  peer.add('receipt', before.receipt);
  // the requester stopped at NOW - 2 min; 40 jobs ran meanwhile
  clock.set(NOW - MIN);
  const during = Array.from({ length: 40 }, (_, i) => outcomeOf(i + 1));
  for (const o of during) {
    peer.add('receipt', o.receipt);
    peer.add('acceptance', o.acceptance);
  }
  clock.set(NOW);
  const r = requester(recordsHandler(peer, clock), clock, { kinds: OUTCOMES, from: NOW - 2 * MIN });
  r.sync.onIdentify(peerA, [PROTOCOLS.records]);
  await r.settle(5);
  assert.deepEqual(
    r.asked.map((q) => [q.kind, q.since]),
    [['advert', undefined], ['presence', undefined], ['receipt', NOW - 2 * MIN], ['acceptance', NOW - 2 * MIN], ['nondelivery', NOW - 2 * MIN]],
    'the outcome kinds it joined (nondelivery2 not joined: not asked), since it was away',
  );
  const addrs = new Set(r.got.map((g) => g.address));
  for (const o of during) {
    assert.ok(addrs.has(o.receipt.address), 'each receipt taken while it was away');
    assert.ok(addrs.has(o.acceptance.address), 'and each acceptance');
  }
  assert.ok(!addrs.has(before.receipt.address), 'not what the peer took before the gap');
  assert.equal(r.got.length, 80);
});

test('the catch-up window: each peer identified in it is asked once with the digest of what came since; after it none; a gap opens again when the last peer leaves', async () => {
  const clock = fakeClock(NOW);
  const peer = new MemoryRecordCache({ clock });
  const o = outcomeOf(1);
  peer.add('receipt', o.receipt);
  const r = requester(recordsHandler(peer, clock), clock, { kinds: OUTCOMES, from: NOW - 5 * 3_600_000, maxAgeMs: 30 * MIN, windowMs: MIN, marginMs: 10_000 });
  r.sync.onIdentify(peerA, [PROTOCOLS.records]);
  await r.settle(5);
  assert.equal(r.asked[2]?.since, NOW - 30 * MIN, 'never further back than maxAgeMs');
  assert.equal(r.got.length, 1);
  // a second peer within the window: asked too, listing the receipt already taken (not sent again)
  clock.advance(30_000);
  r.sync.onIdentify(peerB, [PROTOCOLS.records]);
  await r.settle(10);
  const again = r.asked.slice(5).find((q) => q.kind === 'receipt');
  assert.equal(again?.since, NOW - 30 * MIN);
  assert.equal((again?.have as Uint8Array).length, DIGEST_PREFIX_BYTES, 'the digest of what it holds since then');
  assert.equal(r.got.length, 1, 'nothing twice');
  // the same peer identified again on its connection: not asked again
  r.sync.onIdentify(peerB, [PROTOCOLS.records]);
  await r.settle(11);
  assert.equal(r.asked.length, 10);
  // after the window, a new peer is asked adverts and presence only
  clock.advance(MIN);
  r.sync.onDisconnect(peerA.toString());
  r.sync.onIdentify(peerA, [PROTOCOLS.records]);
  await r.settle(12);
  assert.deepEqual(r.asked.slice(10).map((q) => q.kind), ['advert', 'presence']);
  // every peer gone: a gap from then, less the margin; the next peer is asked from there
  r.sync.onDisconnect(peerA.toString());
  r.sync.onDisconnect(peerB.toString());
  const gone = clock();
  clock.advance(5 * MIN);
  r.sync.onIdentify(peerB, [PROTOCOLS.records]);
  await r.settle(17);
  assert.deepEqual(r.asked.slice(12).map((q) => [q.kind, q.since]), [['advert', undefined], ['presence', undefined], ['receipt', gone - 10_000], ['acceptance', gone - 10_000], ['nondelivery', gone - 10_000]]);
});

test('a node frozen for minutes (SIGSTOP, a VM paused) catches up from when it last ran, not from when it noticed its peers gone (review s43 R5 F1)', async () => {
  const clock = fakeClock(NOW);
  const peer = new MemoryRecordCache({ clock });
  const r = requester(recordsHandler(peer, clock), clock, { kinds: OUTCOMES, from: NOW, windowMs: MIN, marginMs: 10_000 });
  r.sync.tick();
  r.sync.onIdentify(peerA, [PROTOCOLS.records]);
  await r.settle(5); // the start's own catch-up
  clock.advance(2 * MIN);
  r.sync.tick(); // the last tick before the freeze
  const ran = clock();
  // three minutes frozen: the peers dropped it meanwhile; it notices once it runs again, before its overdue tick
  clock.advance(3 * MIN);
  const o = outcomeOf(7);
  peer.add('receipt', o.receipt); // gossiped while it was frozen
  r.sync.onDisconnect(peerA.toString());
  r.sync.onIdentify(peerA, [PROTOCOLS.records]);
  await r.settle(10);
  assert.deepEqual(r.asked.slice(5).map((q) => [q.kind, q.since]), [['advert', undefined], ['presence', undefined], ['receipt', ran - 10_000], ['acceptance', ran - 10_000], ['nondelivery', ran - 10_000]]);
  assert.deepEqual(r.got.map((g) => g.address), [o.receipt.address], 'the outcome gossiped during the freeze is caught');
});

test('peers identified together are asked for the catch-up one after another, each with the digest of what the ones before brought (second-round review s42 R1 F2)', async () => {
  // before: each of them asked at once with the same empty digest, and each sent the whole gap (here 3 x 80)
  const { clock, peer } = servedOutcomes(40);
  const r = requester(recordsHandler(peer, clock), clock, { kinds: OUTCOMES, from: NOW - 2 * MIN });
  const peerC = peerIdFromString('12D3KooWKnDdG3iXw9eTFijk3EWSunZcFi54Zka4wmtqtt6rPxc8');
  for (const p of [peerA, peerB, peerC]) r.sync.onIdentify(p, [PROTOCOLS.records]);
  await r.settle(15);
  assert.equal(r.asked.length, 15, 'each peer asked adverts, presence and the three outcome kinds');
  assert.equal(r.got.length, 80, 'every outcome once');
  assert.equal(r.served.frames, 80, 'and sent once: the later peers were asked with the digest of what the first brought');
});

test('a peer that holds its catch-up answer back holds the next one back CATCH_UP_TURN_MS, not for ever', { timeout: 20_000 }, async () => {
  const clock = fakeClock(NOW - MIN);
  const peer = new MemoryRecordCache({ clock });
  const o = outcomeOf(1);
  peer.add('receipt', o.receipt);
  clock.set(NOW);
  const r = requester(peerAHoldsBack(peer, clock), clock, { kinds: OUTCOMES, from: NOW - 2 * MIN });
  r.sync.onIdentify(peerA, [PROTOCOLS.records]);
  r.sync.onIdentify(peerB, [PROTOCOLS.records]);
  // peerA: advert, presence, receipt (held); peerB: advert, presence, then its catch-up once peerA's turn is over
  const askedB = () => r.asked.some((q) => q.kind === 'acceptance');
  for (let i = 0; i < 400 && !askedB(); i++) await new Promise((res) => setTimeout(res, 25));
  await r.settle(8);
  assert.ok(askedB(), 'peerB was asked for its catch-up');
  assert.deepEqual(r.got.map((g) => g.address), [o.receipt.address], 'and brought the receipt');
});

test('after a peer that holds its answer back, the next peers still go in turn: the turn is timed from when it began, not from when each was identified', { timeout: 20_000 }, async () => {
  // with the turn timed from identify, every peer identified with the stalled one started together 2 s later, with the
  // same digest (here: 160 frames served for 80 outcomes)
  const { clock, peer } = servedOutcomes(40);
  // the others take a moment to answer (as over a network): peerC's turn must wait for peerB's answer
  const r = requester(peerAHoldsBack(peer, clock, 300), clock, { kinds: OUTCOMES, from: NOW - 2 * MIN });
  const peerC = peerIdFromString('12D3KooWKnDdG3iXw9eTFijk3EWSunZcFi54Zka4wmtqtt6rPxc8');
  for (const p of [peerA, peerB, peerC]) r.sync.onIdentify(p, [PROTOCOLS.records]);
  // peerA: advert, presence, receipt (held); peerB and peerC: advert, presence and three outcome kinds each
  for (let i = 0; i < 400 && r.asked.length < 13; i++) await new Promise((res) => setTimeout(res, 25));
  await r.settle(13);
  assert.equal(r.asked.length, 13);
  assert.equal(r.got.length, 80);
  assert.equal(r.served.frames, 80, 'peerC asked after peerB answered, with the digest of what it brought');
});

test('a peer that reconnects within the window is not asked for the catch-up again (second-round review s42 R6 F2)', async () => {
  // before: each reconnection was a new peer to the window (30 reconnections, 30 catch-ups of up to 1,024 a kind)
  const clock = fakeClock(NOW);
  const r = requester(recordsHandler(new MemoryRecordCache({ clock }), clock), clock, { kinds: OUTCOMES, from: NOW - 5 * MIN });
  r.sync.onIdentify(peerA, [PROTOCOLS.records]);
  r.sync.onIdentify(peerB, [PROTOCOLS.records]);
  await r.settle(10);
  assert.equal(r.asked.length, 10);
  for (let i = 0; i < 3; i++) {
    clock.advance(5_000);
    r.sync.onDisconnect(peerB.toString()); // peerA stays: no new gap
    r.sync.onIdentify(peerB, [PROTOCOLS.records]);
    await r.settle(12 + 2 * i);
  }
  assert.deepEqual(r.asked.slice(10).map((q) => q.kind), ['advert', 'presence', 'advert', 'presence', 'advert', 'presence'], 'its sync on connect only');
});

test('a catch-up is history: a busy signer\'s hour of outcomes is taken whole, not cut at its live rate (second-round review s42 R1 F3)', async () => {
  // before: the per-signer limit (60 at once, then 10 a second) took the first 60 of the provider's 150 receipts and
  // of the buyer's 150 acceptances, and refused the rest from every peer asked
  const { clock, peer } = servedOutcomes(150);
  const r = requester(recordsHandler(peer, clock), clock, { kinds: OUTCOMES, from: NOW - 2 * MIN });
  r.sync.onIdentify(peerA, [PROTOCOLS.records]);
  await r.settle(5);
  assert.equal(r.got.filter((g) => g.type === 'c0mpute.receipt/1').length, 150);
  assert.equal(r.got.length, 300);
});

test('without catchUp the sync on connect asks adverts and presence only (a node that does not count outcomes)', async () => {
  const clock = fakeClock(NOW);
  const r = requester(recordsHandler(new MemoryRecordCache({ clock }), clock), clock, undefined);
  r.sync.onIdentify(peerA, [PROTOCOLS.records]);
  await r.settle(2);
  assert.deepEqual(r.asked.map((q) => q.kind), ['advert', 'presence']);
});

test('records/1 live `since`: only what the server took at or after it; a bad one is NET_BAD_REQUEST', async () => {
  const clock = fakeClock(NOW);
  const cache = new MemoryRecordCache({ clock });
  const a = outcomeOf(1);
  const b = outcomeOf(2);
  cache.add('receipt', a.receipt);
  clock.advance(MIN);
  cache.add('receipt', b.receipt);
  const h = recordsHandler(cache, clock);
  const ask = async (req: unknown) => {
    const frames: CborValue[] = [];
    try {
      await h([req as CborValue], { peer: asPeer('p'), signal: new AbortController().signal, send: async (f: CborValue) => void frames.push(f) } as never);
      return { frames };
    } catch (e) {
      return { frames, code: (e as C0Error).code };
    }
  };
  assert.equal((await ask({ op: 'live', kind: 'receipt', limit: 10 })).frames.length, 2);
  assert.equal((await ask({ op: 'live', kind: 'receipt', limit: 10, since: NOW + 1 })).frames.length, 1);
  assert.equal((await ask({ op: 'live', kind: 'receipt', limit: 10, since: NOW + MIN + 1 })).frames.length, 0);
  for (const since of [-1, 1.5, 'x']) assert.equal((await ask({ op: 'live', kind: 'receipt', limit: 10, since })).code, 'NET_BAD_REQUEST');
});

test('a gap opened while peers are connected (the store reopened after failed writes): each connected peer asked in turn, since the gap, with the digest; a later one in the window too (review s43 R2 F1)', async () => {
  const { clock, peer } = servedOutcomes(10);
  // a node already caught up: its start's window has closed
  const r = requester(recordsHandler(peer, clock), clock, { kinds: OUTCOMES, from: NOW - 5 * MIN, windowMs: MIN });
  r.sync.onIdentify(peerA, [PROTOCOLS.records]);
  await r.settle(5);
  assert.equal(r.got.length, 20);
  // what the store did not keep is let go of (Network.notKept): no longer held, so not in the digest
  for (const g of r.got.splice(0)) {
    r.pipeline.forget(g.bytes, g.address);
    r.own.remove(g.address);
  }
  clock.advance(2 * MIN);
  r.sync.onIdentify(peerB, [PROTOCOLS.records]);
  await r.settle(7);
  assert.deepEqual(r.asked.slice(5).map((q) => q.kind), ['advert', 'presence'], 'outside the window: no catch-up');
  r.sync.openGap(NOW - 2 * MIN);
  await r.settle(13);
  assert.deepEqual(r.asked.slice(7).map((q) => [q.kind, q.since]), [['receipt', NOW - 2 * MIN], ['acceptance', NOW - 2 * MIN], ['nondelivery', NOW - 2 * MIN], ['receipt', NOW - 2 * MIN], ['acceptance', NOW - 2 * MIN], ['nondelivery', NOW - 2 * MIN]], 'both connected peers, the outcome kinds only, since the gap');
  assert.equal(r.got.length, 20, 'every outcome again, once: the second peer was asked with the digest of what the first brought');
  const peerC = peerIdFromString('12D3KooWKnDdG3iXw9eTFijk3EWSunZcFi54Zka4wmtqtt6rPxc8');
  r.sync.onIdentify(peerC, [PROTOCOLS.records]);
  await r.settle(18);
  assert.equal(r.asked[15]?.since, NOW - 2 * MIN, 'a peer identified in the window is asked too');
});
