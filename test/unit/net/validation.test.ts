import '../../../src/polyfill.js';
import { test } from 'node:test';
import { createHash } from 'node:crypto';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { Ed25519Signer, seal, T, type Advert } from '../../../src/records/index.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline, verdictOf, ignoreError, rejectError, ValidationError, Lru } from '../../../src/net/gossip-validation.js';
import { encodeMessage, decodeMessage } from '../../../src/net/framing.js';
import { topicFor, parseTopic, kindForType, TOPIC_KINDS, expectedType, shardOf, shardsOf, recordShards, ALL_SHARDS, isSharded, placementCheckable } from '../../../src/net/topics.js';
import { MemoryRecordCache } from '../../../src/net/record-cache.js';
import { messageId, messageType, topicBoundId } from '../../../src/net/libp2p-host.js';
import { C0Error } from '../../../src/errors.js';

const clock = fakeClock();
const s = Ed25519Signer.generate();
let seq = 0;
const ad = (over: Partial<Advert> = {}) =>
  seal(T.advert, { seq: ++seq, issuedAt: clock(), expiresAt: clock() + 600_000, workloads: ['infer.llm'], tier: 'standard', hardware: { cpuCores: 4, memoryMiB: 1024 }, ...over }, s);
const off = (advert: string, durationMs = 10) =>
  seal(T.offer, { job: 'sha256:' + 'ab'.repeat(32), advert, price: { amount: '1', currency: 'USD' }, durationMs, issuedAt: clock(), startBy: clock() + 60_000, expiresAt: clock() + 30_000 }, s);

function pipe(hooks = {}) {
  const metrics = createNetMetrics(new Registry());
  return { p: new RecordPipeline({ clock, metrics, log: silentLogger(), hooks, maxMessageBytes: 4096 }), metrics };
}

test('topics: names, parsing, type map', () => {
  assert.equal(topicFor('advert', 'public', '0a'), '/c0mpute/1/public/advert/0a');
  assert.throws(() => topicFor('advert'), (e: C0Error) => e.code === 'NET_SHARD_REQUIRED');
  assert.throws(() => topicFor('job', 'public', '10'), (e: C0Error) => e.code === 'NET_BAD_SHARD');
  assert.deepEqual(parseTopic('/c0mpute/1/acme/presence/0f'), { overlay: 'acme', kind: 'presence', shard: '0f' });
  assert.equal(parseTopic('/c0mpute/1/acme/advert'), undefined, 'a sharded kind has a shard');
  assert.deepEqual(parseTopic('/c0mpute/1/acme/receipt/01'), { overlay: 'acme', kind: 'receipt', shard: '01' }, 'a job’s outcome is in its market');
  assert.equal(parseTopic('/c0mpute/1/acme/receipt'), undefined);
  assert.equal(parseTopic('/c0mpute/1/acme/pool-head/01'), undefined, 'an unsharded kind has none');
  assert.equal(topicFor('pool-head', 'acme'), '/c0mpute/1/acme/pool-head');
  assert.deepEqual(parseTopic('/c0mpute/1/acme/offer'), { overlay: 'acme', kind: 'offer' });
  assert.equal(parseTopic('/c0mpute/1/acme/nope'), undefined);
  assert.equal(kindForType('pool-witness/1'), 'pool-witness');
  assert.equal(TOPIC_KINDS.length, 13); // nondelivery2: a pooled offer's non-delivery (c0mpute.nondelivery/2); nondelivery3: an open order's (/3)
  assert.deepEqual(parseTopic('/c0mpute/1/acme/nondelivery3/03'), { overlay: 'acme', kind: 'nondelivery3', shard: '03' });
  assert.deepEqual(parseTopic('/c0mpute/1/acme/nondelivery2/03'), { overlay: 'acme', kind: 'nondelivery2', shard: '03' });
  assert.equal(kindForType('pool-evidence/1'), 'pool-evidence');
  assert.equal(expectedType('pool-head'), 'pool/1');
  assert.throws(() => topicFor('advert', 'Bad Overlay'), (e: C0Error) => e.code === 'NET_BAD_OVERLAY');
});

test('framing: one envelope is itself; an offer with its advert is a CBOR array', () => {
  const a = ad();
  assert.equal(encodeMessage(a.bytes), a.bytes);
  const o = off(a.address);
  const m = encodeMessage(o.bytes, [a.bytes]);
  assert.equal(m[0], 0x82);
  const d = decodeMessage(m);
  assert.deepEqual(d.primary, o.bytes);
  assert.deepEqual(d.attachments, [a.bytes]);
  assert.throws(() => decodeMessage(Uint8Array.of(0x81, 0x40)), (e: C0Error) => e.code === 'MESSAGE_MALFORMED');
  assert.throws(() => decodeMessage(Uint8Array.of(0x01)), (e: C0Error) => e.code === 'MESSAGE_MALFORMED');
});

test('message ids: a record on its kind’s topic is its content address (on every market); on another kind’s topic, or not ours, bound to the topic', () => {
  const a = ad();
  const o = off(a.address);
  const framed = encodeMessage(o.bytes, [a.bytes]);
  const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
  const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
  const [adv0, adv1, job0] = [topicFor('advert', 'public', '00'), topicFor('advert', 'acme', '01'), topicFor('job', 'public', '00')];
  assert.equal(hex(messageId(adv0, a.bytes)), a.address.slice('sha256:'.length));
  assert.equal(hex(messageId(adv1, a.bytes)), a.address.slice('sha256:'.length), 'one message on every market');
  assert.equal(hex(messageId(topicFor('offer'), framed)), sha(framed), 'a framed offer: the hash of the message');
  const wrong = hex(messageId(job0, a.bytes));
  assert.notEqual(wrong, a.address.slice('sha256:'.length), 'an advert on the job topic does not take the advert’s id');
  assert.equal(wrong, hex(topicBoundId(job0, a.bytes)));
  assert.notEqual(wrong, hex(messageId(topicFor('job', 'public', '01'), a.bytes)), 'bound to its topic');
  assert.notEqual(hex(messageId('/not/ours', a.bytes)), a.address.slice('sha256:'.length));
  assert.equal(hex(messageId(adv0, framed)), hex(topicBoundId(adv0, framed)), 'a framed offer on the advert topic');
  assert.equal(hex(messageId(adv0, Uint8Array.of(1, 2))), hex(topicBoundId(adv0, Uint8Array.of(1, 2))), 'unreadable');
  assert.equal(messageType(framed), T.offer);
  assert.equal(messageType(Uint8Array.of(0xd2, 1)), undefined);
});

test('the adapter maps codes to verdicts', () => {
  assert.deepEqual(verdictOf(new C0Error('RECORD_EXPIRED', 'x')), { verdict: 'ignore', reason: 'RECORD_EXPIRED' });
  assert.deepEqual(verdictOf(new C0Error('ENVELOPE_BAD_SIGNATURE', 'x')), { verdict: 'reject', reason: 'ENVELOPE_BAD_SIGNATURE' });
  assert.deepEqual(verdictOf(ignoreError('X', 'x')), { verdict: 'ignore', reason: 'X' });
  assert.deepEqual(verdictOf(rejectError('Y', 'y')), { verdict: 'reject', reason: 'Y' });
  assert.deepEqual(verdictOf(new Error('boom')), { verdict: 'ignore', reason: 'INTERNAL' });
  assert.ok(rejectError('Y', 'y') instanceof ValidationError);
});

test('verdicts: accept once, duplicate ignored, bad signature and wrong type rejected, expired and future ignored', async () => {
  const { p } = pipe();
  const a = ad();
  const r1 = await p.validate('advert', a.bytes, 'peer', 'gossip');
  assert.equal(r1.verdict, 'accept');
  assert.equal(r1.fresh.length, 1);
  const r2 = await p.validate('advert', a.bytes, 'peer', 'sync');
  assert.deepEqual([r2.verdict, r2.reason, r2.fresh.length], ['ignore', 'DUPLICATE', 0]);

  const flipped = Uint8Array.from(ad().bytes);
  flipped[flipped.length - 1]! ^= 1;
  assert.deepEqual(pick(await p.validate('advert', flipped, 'x', 'gossip')), ['reject', 'ENVELOPE_BAD_SIGNATURE']);
  assert.deepEqual(pick(await p.validate('advert', flipped, 'x', 'gossip')), ['reject', 'PREVIOUSLY_REJECTED']);
  assert.deepEqual(pick(await p.validate('advert', off(a.address).bytes, 'x', 'gossip')), ['reject', 'RECORD_WRONG_TYPE']);
  assert.deepEqual(pick(await p.validate('advert', Uint8Array.of(0xd2, 0x84, 0x41), 'x', 'gossip')), ['reject', 'ENVELOPE_MALFORMED']);
  assert.deepEqual(pick(await p.validate('advert', new Uint8Array(5000), 'x', 'gossip')), ['reject', 'MESSAGE_TOO_LARGE']);
  const t = clock();
  assert.deepEqual(pick(await p.validate('advert', ad({ issuedAt: t - 100_000, expiresAt: t - 1 }).bytes, 'x', 'gossip')), ['ignore', 'RECORD_EXPIRED']);
  const future = ad({ issuedAt: t + 120_000, expiresAt: t + 600_000 });
  assert.deepEqual(pick(await p.validate('advert', future.bytes, 'x', 'gossip')), ['ignore', 'RECORD_FROM_FUTURE']);
  // an ignored record may be accepted later (the clock caught up)
  clock.advance(120_000);
  assert.deepEqual(pick(await p.validate('advert', future.bytes, 'x', 'gossip')), ['accept', 'ok']);
  clock.advance(-120_000);
});

test('a refusal that depends on where the bytes came (their kind) is not remembered: the same bytes are taken on their own kind', async () => {
  const { p } = pipe();
  const a = ad();
  const o = off(a.address);
  const framed = encodeMessage(o.bytes, [a.bytes]);
  // a genuine advert, and an offer framed with its advert, each first on another kind's topic (or route, or sync request)
  for (const source of ['gossip', 'direct', 'sync'] as const) {
    assert.deepEqual(pick(await p.validate('job', a.bytes, 'x', source)), ['reject', 'RECORD_WRONG_TYPE']);
    assert.deepEqual(pick(await p.validate('advert', framed, 'x', source)), ['reject', 'RECORD_WRONG_TYPE']);
  }
  assert.ok(!p.known(a.address));
  assert.deepEqual(pick(await p.validate('advert', a.bytes, 'y', 'gossip')), ['accept', 'ok']);
  assert.deepEqual(pick(await p.validate('offer', framed, 'y', 'sync')), ['accept', 'ok']);
  // what the bytes themselves earn is remembered, on any kind: a bad signature
  const flipped = Uint8Array.from(ad().bytes);
  flipped[flipped.length - 1]! ^= 1;
  assert.deepEqual(pick(await p.validate('advert', flipped, 'x', 'gossip')), ['reject', 'ENVELOPE_BAD_SIGNATURE']);
  assert.deepEqual(pick(await p.validate('job', flipped, 'x', 'sync')), ['reject', 'PREVIOUSLY_REJECTED']);
});

test('an expired record with a bad signature is ignored (freshness is checked before the signature)', async () => {
  const { p } = pipe();
  const t = clock();
  const x = Uint8Array.from(ad({ issuedAt: t - 100_000, expiresAt: t - 1 }).bytes);
  x[x.length - 1]! ^= 1;
  assert.deepEqual(pick(await p.validate('advert', x, 'x', 'gossip')), ['ignore', 'RECORD_EXPIRED']);
});

test('a stale advert (seq not above the held one) is ignored', async () => {
  const { p } = pipe();
  const hi = ad({ seq: 1000 });
  const lo = ad({ seq: 999 });
  assert.equal((await p.validate('advert', hi.bytes, 'x', 'gossip')).verdict, 'accept');
  assert.deepEqual(pick(await p.validate('advert', lo.bytes, 'x', 'gossip')), ['ignore', 'ADVERT_STALE']);
  assert.deepEqual(pick(await p.validate('advert', ad({ seq: 1000, workloads: ['infer.other'] }).bytes, 'x', 'gossip')), ['ignore', 'ADVERT_STALE']);
});

test('hooks: tagged errors earn their verdict, untagged coded errors ignore; context carries attachments', async () => {
  let ctxSeen: unknown;
  const { p } = pipe({
    offer: (rec: { record: { durationMs: number } }, ctx: { attachments: unknown[] }) => {
      ctxSeen = ctx;
      if (rec.record.durationMs === 666) throw rejectError('OFFER_EVIL', 'evil');
      if (rec.record.durationMs === 10 && ctx.attachments.length === 0) throw new C0Error('OFFER_UNKNOWN_ADVERT', 'cite a known advert');
    },
  });
  const a = ad();
  const o = off(a.address);
  assert.deepEqual(pick(await p.validate('offer', o.bytes, 'x', 'gossip')), ['ignore', 'OFFER_UNKNOWN_ADVERT']);
  const r = await p.validate('offer', encodeMessage(o.bytes, [a.bytes]), 'x', 'gossip');
  assert.equal(r.verdict, 'accept');
  assert.deepEqual(
    r.fresh.map((f) => [f.kind, f.rec.address]),
    [
      ['offer', o.address],
      ['advert', a.address],
    ],
  );
  assert.equal((ctxSeen as { attachments: unknown[] }).attachments.length, 1);
  // the same offer alone is now a duplicate
  assert.deepEqual(pick(await p.validate('offer', o.bytes, 'x', 'gossip')), ['ignore', 'DUPLICATE']);
  // an attachment the offer does not cite, or of a kind that may not travel with it
  const o2 = off(a.address, 11);
  assert.deepEqual(pick(await p.validate('offer', encodeMessage(o2.bytes, [ad().bytes]), 'x', 'gossip')), ['reject', 'MESSAGE_BAD_ATTACHMENT']);
  assert.deepEqual(pick(await p.validate('advert', encodeMessage(ad().bytes, [ad().bytes]), 'x', 'gossip')), ['reject', 'MESSAGE_BAD_ATTACHMENT']);
});

test('bounded: validations in flight beyond the bound are dropped and counted', async () => {
  const metrics = createNetMetrics(new Registry());
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const p = new RecordPipeline({ clock, metrics, log: silentLogger(), maxInFlight: 2, hooks: { advert: () => gate } });
  const a = [ad(), ad(), ad()];
  const pending = [p.validate('advert', a[0]!.bytes, 'x', 'gossip'), p.validate('advert', a[1]!.bytes, 'x', 'gossip')];
  assert.deepEqual(pick(await p.validate('advert', a[2]!.bytes, 'x', 'gossip')), ['ignore', 'QUEUE_FULL']);
  release();
  assert.deepEqual((await Promise.all(pending)).map((r) => r.verdict), ['accept', 'accept']);
  assert.match(await metrics.registry.getSingleMetricAsString('c0mpute_net_queue_dropped_total'), /queue="validation"} 1/);
  assert.match(await metrics.registry.getSingleMetricAsString('c0mpute_net_records_total'), /kind="advert",verdict="ignore",reason="QUEUE_FULL"} 1/);
});

test('Lru evicts the oldest', () => {
  const l = new Lru<string, number>(2);
  l.set('a', 1);
  l.set('b', 2);
  l.set('c', 3);
  assert.equal(l.has('a'), false);
  assert.equal(l.size, 2);
});

test('the memory record cache serves live records, latest advert per signer', () => {
  const c = new MemoryRecordCache({ maxPerKind: 10 });
  const t = clock();
  const a1 = ad({ seq: 5000, expiresAt: t + 1000 });
  const a2 = ad({ seq: 5001, expiresAt: t + 2000 });
  c.add('advert', { ...a1, record: a1.record });
  c.add('advert', { ...a2, record: a2.record });
  assert.deepEqual(c.live('advert', t, 10), [a2.bytes]);
  assert.equal(c.get(a1.address), undefined);
  assert.deepEqual(c.get(a2.address), a2.bytes);
  assert.deepEqual(c.live('advert', t + 2000, 10), []);
});

test('the memory record cache serves the latest presence per signer (a sync answers with what a peer needs)', () => {
  const c = new MemoryRecordCache({ maxPerKind: 10 });
  const t = clock();
  const pr = (issuedAt: number, signer = s) => seal(T.presence, { workloads: ['infer.llm'], freeSlots: 1, issuedAt, windowMs: 45_000 }, signer);
  const p1 = pr(t - 2000);
  const p2 = pr(t - 1000);
  const other = pr(t - 3000, Ed25519Signer.generate());
  c.add('presence', p2);
  c.add('presence', p1); // earlier than the held one: not kept
  c.add('presence', other);
  assert.deepEqual(c.live('presence', t, 10), [p2.bytes, other.bytes]);
  assert.equal(c.get(p1.address), undefined);
  const p3 = pr(t);
  c.add('presence', p3); // replaces p2
  assert.deepEqual(c.live('presence', t, 10), [other.bytes, p3.bytes]);
  assert.equal(c.get(p2.address), undefined);
  assert.deepEqual(c.live('presence', t + 45_000, 10), []);
});

function pick(r: { verdict: string; reason: string }): [string, string] {
  return [r.verdict, r.reason];
}

test('markets: a workload’s shard is fixed and in range; a record belongs on its workloads’ shards', () => {
  assert.equal(ALL_SHARDS.length, 16);
  for (const w of ['builtin.sha256', 'builtin.sleep', 'infer.llm', 'x']) {
    assert.equal(shardOf(w), shardOf(w));
    assert.ok(ALL_SHARDS.includes(shardOf(w)));
  }
  // a fixed vector: the first byte of SHA-256("builtin.sha256") mod 16
  assert.equal(shardOf('builtin.sha256'), (createHash('sha256').update('builtin.sha256').digest()[0]! % 16).toString(16).padStart(2, '0'));
  assert.deepEqual(shardsOf(['a', 'a', 'b']), [...new Set([shardOf('a'), shardOf('b')])].sort());
  assert.deepEqual(recordShards('job', { workload: 'infer.llm' }), [shardOf('infer.llm')]);
  assert.deepEqual(recordShards('advert', { workloads: ['infer.llm', 'builtin.sha256'] }), shardsOf(['infer.llm', 'builtin.sha256']));
  assert.deepEqual(recordShards('presence', { workloads: [] }), []);
});

test('markets: a job’s outcome goes to the job’s market; a selection or an acceptance is placed by its publisher, unchecked', () => {
  const job = seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '1', currency: 'USD' }, announcedAt: clock(), deadline: clock() + 60_000, timeoutMs: 30_000, input: { hash: 'sha256:' + '00'.repeat(32), size: 1 }, inputSealed: 'no' }, s);
  assert.deepEqual(recordShards('receipt', { workload: 'builtin.sha256' }), [shardOf('builtin.sha256')]);
  // a non-delivery carries the job it is about (its proof): the job's market
  assert.deepEqual(recordShards('nondelivery', { proof: { job: job.bytes } }), [shardOf('builtin.sha256')]);
  assert.deepEqual(recordShards('nondelivery', { proof: { job: new Uint8Array([1, 2, 3]) } }), []);
  // a pooled offer's (/2) likewise, on its own topic kind, which carries only /2
  assert.deepEqual(recordShards('nondelivery2', { proof: { job: job.bytes } }), [shardOf('builtin.sha256')]);
  assert.equal(expectedType('nondelivery'), T.nondelivery);
  assert.equal(expectedType('nondelivery2'), T.nondelivery2);
  assert.equal(kindForType(T.nondelivery2), 'nondelivery2');
  // an open order's (/3) likewise, on its own topic kind, which carries only /3
  assert.deepEqual(recordShards('nondelivery3', { proof: { job: job.bytes } }), [shardOf('builtin.sha256')]);
  assert.equal(expectedType('nondelivery3'), T.nondelivery3);
  assert.equal(kindForType(T.nondelivery3), 'nondelivery3');
  for (const k of ['selection', 'acceptance'] as const) {
    assert.deepEqual(recordShards(k, { job: job.address, receipt: job.address }), []);
    assert.equal(placementCheckable(k), false);
    assert.ok(isSharded(k));
  }
  for (const k of ['advert', 'job', 'presence', 'receipt', 'nondelivery', 'nondelivery2', 'nondelivery3'] as const) assert.equal(placementCheckable(k), true);
  for (const k of ['offer', 'pool-head', 'pool-witness', 'pool-evidence'] as const) assert.equal(isSharded(k), false);
});
