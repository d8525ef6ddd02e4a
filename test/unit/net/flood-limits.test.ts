/** Flood limits: token buckets and the decaying abuse counter (fake clock), and the pipeline's per-peer, per-signer and new-advertiser limits. */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import pino from 'pino';
import { Ed25519Signer, seal, T, type Advert } from '../../../src/records/index.js';
import { didFromPublicKey, didChecked } from '../../../src/records/did.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline } from '../../../src/net/gossip-validation.js';
import { TokenBucket, KeyedBuckets, DecayingCounter } from '../../../src/net/rate-limit.js';
import { FloodGuard, PEER_BLAME_FACTOR, floodOptions, type FloodLimitOptions } from '../../../src/net/flood-limits.js';
import { AbusePolicy } from '../../../src/net/peer-abuse.js';
import { libp2pKey } from '../../../src/node/peer-id.js';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { sealJob } from './fixtures/records.js';

const clock = fakeClock();

test('TokenBucket: starts full, refills at its rate up to the burst, charge may go below zero', () => {
  const c = fakeClock(0);
  const b = new TokenBucket({ ratePerSec: 2, burst: 3 }, c);
  assert.ok(b.take() && b.take() && b.take());
  assert.equal(b.take(), false, 'burst spent');
  c.advance(499);
  assert.equal(b.take(), false, '0.998 token after 499 ms at 2/s');
  c.advance(1);
  assert.equal(b.take(), true, 'one token after 500 ms');
  c.advance(60_000);
  assert.equal(b.available(), 3, 'capped at the burst');
  b.charge(5);
  assert.equal(b.available(), -2);
  assert.equal(b.has(), false);
  c.advance(1_500);
  assert.equal(b.available(), 1);
  c.set(-1_000); // a clock going backwards refills nothing and takes nothing
  assert.equal(b.available(), 1);
});

test('a clock stepped backwards is no elapsed time: buckets refill and abuse decays from the new reading, never freeze for the step', () => {
  // the daemon gives these the monotonic clock; this is the backstop for a clock that steps anyway (NTP correcting a fast wall clock)
  const c = fakeClock(1_800_000_600_000);
  const b = new TokenBucket({ ratePerSec: 2, burst: 3 }, c);
  assert.ok(b.take() && b.take() && b.take());
  c.advance(-600_000); // stepped back 10 min
  assert.equal(b.available(), 0, 'the step refills nothing');
  c.advance(500);
  assert.equal(b.take(), true, 'half a second later one token is back, not 10 min later');
  const d = new DecayingCounter(1000, c);
  assert.equal(d.add('p', 8), 8);
  c.advance(-600_000);
  assert.equal(d.value('p'), 8, 'the step decays nothing');
  c.advance(1000);
  assert.equal(d.value('p'), 4, 'one half-life after the step, half is left');
  assert.equal(d.add('p', 4), 8);
  c.advance(1000);
  assert.equal(d.value('p'), 4);
});

test('an honest peer under its rate through a 10 min backward wall-clock step is never rate limited, blamed or banned (FloodGuard + AbusePolicy)', async () => {
  const c = fakeClock(1_800_000_600_000);
  const g = new FloodGuard({}, c);
  const hung: string[] = [];
  const policy = new AbusePolicy(g, {}, c, silentLogger(), (p) => void hung.push(p));
  const send = (secs: number): number => {
    let refused = 0;
    for (let i = 0; i < secs * 20; i++) {
      c.advance(50);
      if (!g.admitPeer('presence', 'honest')) refused++;
    }
    return refused;
  };
  assert.equal(send(60), 0);
  c.advance(-600_000);
  assert.equal(send(150), 0, '20 msgs/s, a fifth of the 100/s limit: nothing refused after the step');
  await new Promise((r) => setImmediate(r));
  assert.equal(g.abuse('honest'), 0);
  assert.deepEqual(hung, []);
  assert.equal(policy.denied('honest'), false);
});

test('the pipeline’s flood limits follow its monotonic clock, not the wall clock it checks freshness with', async () => {
  const wall = fakeClock();
  const mono = fakeClock(0);
  const p = new RecordPipeline({ clock: wall, monoClock: mono, metrics: createNetMetrics(new Registry()), log: silentLogger(), floodLimits: { peer: { ratePerSec: 2, burst: 3 }, signer: {} } });
  const s = Ed25519Signer.generate();
  const reasons: string[] = [];
  for (let i = 0; i < 4; i++) reasons.push((await p.validate('job', sealJob(s, wall).bytes, 'peerA', 'gossip')).reason);
  assert.deepEqual(reasons, ['ok', 'ok', 'ok', 'RATE_LIMITED']);
  wall.advance(-600_000); // NTP steps the wall clock back 10 min; half a second passes
  mono.advance(500);
  assert.equal((await p.validate('job', sealJob(s, wall).bytes, 'peerA', 'gossip')).verdict, 'accept', 'refilled by the elapsed half second');
  wall.advance(3_600_000); // a step forwards refills nothing either
  assert.equal((await p.validate('job', sealJob(s, wall).bytes, 'peerA', 'gossip')).reason, 'RATE_LIMITED');
});

test('KeyedBuckets: one bucket per key; when full it forgets refilled buckets first, and never refuses a new key', () => {
  const c = fakeClock(0);
  const k = new KeyedBuckets({ ratePerSec: 1, burst: 2 }, c, 3);
  assert.ok(k.take('a') && k.take('a'));
  assert.equal(k.take('a'), false);
  assert.ok(k.take('b'), 'another key has its own bucket');
  assert.ok(k.take('c') && k.take('d') && k.take('e'), 'new keys beyond maxKeys are granted');
  assert.ok(k.size <= 3);
  assert.equal(k.has('zz'), true, 'an unknown key has a full bucket');
});

test('DecayingCounter: halves every half-life; exact over calls at increasing times', () => {
  const c = fakeClock(0);
  const d = new DecayingCounter(1000, c);
  assert.equal(d.add('p', 8), 8);
  c.advance(1000);
  assert.equal(d.value('p'), 4);
  assert.equal(d.add('p', 4), 8);
  c.advance(2000);
  assert.equal(d.value('p'), 2);
  c.advance(20_000);
  assert.equal(d.value('p'), 0, 'forgotten once negligible');
});

function pipe(floodLimits: Partial<FloodLimitOptions>) {
  const registry = new Registry();
  const metrics = createNetMetrics(registry);
  return { p: new RecordPipeline({ clock, monoClock: clock, metrics, log: silentLogger(), floodLimits }), registry };
}
async function limited(registry: Registry, kind: string, limiter: string): Promise<number> {
  const m = (await registry.getSingleMetric('c0mpute_net_rate_limited_total')!.get()).values.find((v) => v.labels.kind === kind && v.labels.limiter === limiter);
  return m?.value ?? 0;
}
let n = 0;
const job = (s: Ed25519Signer) => sealJob(s, clock);
const advert = (s: Ed25519Signer) => seal(T.advert, { seq: ++n, issuedAt: clock(), expiresAt: clock() + 600_000, workloads: ['infer.llm'], tier: 'standard', hardware: { cpuCores: 4, memoryMiB: 1024 } } as Advert, s);
async function peerIdOf(s: Ed25519Signer): Promise<string> {
  return peerIdFromPrivateKey(await libp2pKey(s)).toString();
}

test('per signer: a flooding signer’s excess jobs are ignored (RATE_LIMITED) and counted; another signer’s job passes; its own peer is blamed, a relay is not', async () => {
  const { p, registry } = pipe({ signer: { job: { ratePerSec: 1, burst: 5 } } });
  const flooder = Ed25519Signer.generate();
  const honest = Ed25519Signer.generate();
  const flooderPeer = await peerIdOf(flooder);
  const verdicts: string[] = [];
  for (let i = 0; i < 8; i++) verdicts.push((await p.validate('job', job(flooder).bytes, flooderPeer, 'gossip')).reason);
  assert.deepEqual(verdicts, ['ok', 'ok', 'ok', 'ok', 'ok', 'RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED']);
  assert.equal(await limited(registry, 'job', 'signer'), 3);
  assert.equal(p.guard.abuse(flooderPeer), 3, 'the signer sent them itself: 3 abuse points');
  // relayed by someone else: still limited, the relay is not blamed
  const relay = await peerIdOf(Ed25519Signer.generate());
  assert.equal((await p.validate('job', job(flooder).bytes, relay, 'gossip')).reason, 'RATE_LIMITED');
  assert.equal(p.guard.abuse(relay), 0);
  // another signer is untouched
  assert.equal((await p.validate('job', job(honest).bytes, relay, 'gossip')).verdict, 'accept');
  // the bucket refills with time
  clock.advance(1000);
  assert.equal((await p.validate('job', job(flooder).bytes, flooderPeer, 'gossip')).verdict, 'accept');
});

test('per signer: records with a forged header naming an honest signer do not drain its bucket', async () => {
  const { p } = pipe({ signer: { job: { ratePerSec: 0.001, burst: 2 } } });
  const honest = Ed25519Signer.generate();
  for (let i = 0; i < 10; i++) {
    const forged = Uint8Array.from(job(honest).bytes);
    forged[forged.length - 1]! ^= 1;
    assert.equal((await p.validate('job', forged, 'attacker', 'gossip')).reason, 'ENVELOPE_BAD_SIGNATURE');
  }
  assert.equal((await p.validate('job', job(honest).bytes, 'x', 'gossip')).verdict, 'accept');
  assert.equal((await p.validate('job', job(honest).bytes, 'x', 'gossip')).verdict, 'accept');
  assert.equal((await p.validate('job', job(honest).bytes, 'x', 'gossip')).reason, 'RATE_LIMITED');
});

test('per peer: gossip over the peer’s message rate is ignored and counted, not blamed (a relay passes on others’ records); a direct sender over it is blamed; sync answers are not limited per peer', async () => {
  const { p, registry } = pipe({ peer: { ratePerSec: 1, burst: 3 }, signer: {} });
  const s = Ed25519Signer.generate();
  const reasons: string[] = [];
  for (let i = 0; i < 5; i++) reasons.push((await p.validate('job', job(s).bytes, 'peerA', 'gossip')).reason);
  assert.deepEqual(reasons, ['ok', 'ok', 'ok', 'RATE_LIMITED', 'RATE_LIMITED']);
  assert.equal(await limited(registry, 'job', 'peer'), 2);
  assert.equal(p.guard.abuse('peerA'), 0, 'gossip: limited, not blamed');
  assert.equal((await p.validate('job', job(s).bytes, 'peerB', 'gossip')).verdict, 'accept', 'other peers have their own budget');
  assert.equal((await p.validate('job', job(s).bytes, 'peerA', 'sync')).verdict, 'accept', 'a sync answer is what we asked for');
  // sent directly (offer/1, outcome/1: the sender's own records), the excess is its own
  const d = Ed25519Signer.generate();
  const from = await peerIdOf(d);
  for (let i = 0; i < 3; i++) assert.equal((await p.validate('job', job(d).bytes, from, 'direct')).verdict, 'accept');
  assert.equal((await p.validate('job', job(d).bytes, from, 'direct')).reason, 'RATE_LIMITED');
  assert.equal(p.guard.abuse(from), 1, 'direct: blamed');
});

test('per peer: a gossip peer past PEER_BLAME_FACTOR × its rate and burst is blamed: one connection pushing without end is banned, not ignored for ever', async () => {
  const { p } = pipe({ peer: { ratePerSec: 1, burst: 3 }, signer: {} });
  const s = Ed25519Signer.generate();
  const reasons: string[] = [];
  // 3 taken, then ignored without blame up to the wider burst (3 × PEER_BLAME_FACTOR), then blamed for each one past it
  for (let i = 0; i < 3 * PEER_BLAME_FACTOR + 5; i++) reasons.push((await p.validate('job', job(s).bytes, 'flooder', 'gossip')).reason);
  assert.deepEqual(reasons.slice(0, 4), ['ok', 'ok', 'ok', 'RATE_LIMITED']);
  assert.equal(p.guard.abuse('flooder'), 5);
});

test('per peer: an honest relay passing on a flood from many identities to its neighbour is limited there, never blamed (review E2, by jobs)', async () => {
  // five identities a second, each pushing its burst (400) of valid jobs from fresh keys (under their signer burst)
  // to an honest buyer, which passes on what it accepts to a neighbour that counts it all as the buyer's
  const buyer = pipe({}).p;
  const { p: neighbour, registry } = pipe({});
  const forwarded: Uint8Array[] = [];
  for (let peer = 0; peer < 5; peer++) {
    const keys = Array.from({ length: 8 }, () => Ed25519Signer.generate());
    const jobs = Array.from({ length: 400 }, (_, i) => job(keys[i % 8]!).bytes);
    for (const j of jobs) if ((await buyer.validate('job', j, `sybil-${peer}`, 'gossip')).verdict === 'accept') forwarded.push(j);
  }
  assert.equal(forwarded.length, 2_000, 'each identity within its own budgets');
  let taken = 0;
  for (const j of forwarded) if ((await neighbour.validate('job', j, 'buyer', 'gossip')).verdict === 'accept') taken++;
  assert.equal(taken, 400, 'the neighbour takes its burst for the buyer');
  assert.equal(await limited(registry, 'job', 'peer'), 1_600);
  assert.equal(neighbour.guard.abuse('buyer'), 0, 'and does not blame the buyer for the rest');
});

test('new advertisers: adverts from fresh keys are bounded per peer; known advertisers and other peers are not', async () => {
  const { p, registry } = pipe({ newAdvertisers: { ratePerSec: 1 / 60, burst: 3 } });
  const reasons: string[] = [];
  const keys = Array.from({ length: 5 }, () => Ed25519Signer.generate());
  for (const k of keys) reasons.push((await p.validate('advert', advert(k).bytes, 'sybil-peer', 'sync')).reason);
  assert.deepEqual(reasons, ['ok', 'ok', 'ok', 'RATE_LIMITED', 'RATE_LIMITED']);
  assert.equal(await limited(registry, 'advert', 'new-advertiser'), 2);
  assert.equal(p.guard.abuse('sybil-peer'), 0, 'a sync answer is what we asked for: limited, not blamed');
  assert.equal((await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'sybil-peer', 'gossip')).reason, 'RATE_LIMITED');
  assert.equal(p.guard.abuse('sybil-peer'), 1, 'pushed by gossip: blamed');
  clock.advance(600_000);
  // a known advertiser's new advert is not a new advertiser
  assert.equal((await p.validate('advert', advert(keys[0]!).bytes, 'sybil-peer', 'gossip')).verdict, 'accept');
  assert.equal((await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'other-peer', 'gossip')).verdict, 'accept');
});

test('new advertisers, node-wide: a budget spent by many peers refuses the next new advertiser by gossip without blaming its peer; sync answers and known advertisers pass', async () => {
  const { p, registry } = pipe({ newAdvertisersTotal: { ratePerSec: 1 / 60, burst: 3 } });
  const keys = Array.from({ length: 3 }, () => Ed25519Signer.generate());
  // three peers, one fresh key each: every peer well inside its own budget (default burst 200), the node's is spent
  for (const [i, k] of keys.entries()) assert.equal((await p.validate('advert', advert(k).bytes, `peer-${i}`, 'gossip')).verdict, 'accept');
  const next = await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'peer-3', 'gossip');
  assert.deepEqual([next.verdict, next.reason], ['ignore', 'RATE_LIMITED']);
  assert.equal(await limited(registry, 'advert', 'new-advertiser-total'), 1);
  assert.equal(await limited(registry, 'advert', 'new-advertiser'), 0);
  for (let i = 0; i < 4; i++) assert.equal(p.guard.abuse(`peer-${i}`), 0, `peer-${i} is not blamed`);
  // not passed on, not counted: a sync answer (what this node asked for) and a known advertiser's next advert
  assert.equal((await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'peer-3', 'sync')).verdict, 'accept');
  assert.equal((await p.validate('advert', advert(keys[0]!).bytes, 'peer-3', 'gossip')).verdict, 'accept');
  // refilled with time, at its rate
  clock.advance(60_000);
  assert.equal((await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'peer-3', 'gossip')).verdict, 'accept');
  assert.equal((await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'peer-3', 'gossip')).reason, 'RATE_LIMITED');
  assert.equal(p.guard.abuse('peer-3'), 0);
});

test('new advertisers, node-wide: what a node takes from identities rotated on one host stays within what its neighbour takes from it as one peer (defaults), so the neighbour never blames it', async () => {
  // the review's flood (E2): five fresh peers a second, each pushing its per-peer burst of fresh-key adverts to an
  // honest buyer, which passes on what it accepts to a neighbour that counts all of it as the buyer's
  const buyer = pipe({}).p;
  const { p: neighbour, registry } = pipe({});
  const forwarded: Uint8Array[] = [];
  for (let peer = 0; peer < 5; peer++) {
    const outs = await Promise.all(Array.from({ length: 200 }, () => advert(Ed25519Signer.generate()).bytes).map(async (a) => ({ a, out: await buyer.validate('advert', a, `sybil-${peer}`, 'gossip') })));
    for (const { a, out } of outs) if (out.verdict === 'accept') forwarded.push(a);
  }
  assert.equal(forwarded.length, 200, 'the node-wide burst, of 1,000 pushed');
  for (let peer = 0; peer < 5; peer++) assert.equal(buyer.guard.abuse(`sybil-${peer}`), 0, 'each within its own budget');
  const verdicts = await Promise.all(forwarded.map((a) => neighbour.validate('advert', a, 'buyer', 'gossip')));
  assert.equal(verdicts.filter((v) => v.verdict === 'accept').length, 200);
  assert.equal(await limited(registry, 'advert', 'new-advertiser'), 0);
  assert.equal(await limited(registry, 'advert', 'peer'), 0);
  assert.equal(neighbour.guard.abuse('buyer'), 0, 'the honest buyer is not blamed by its neighbour');
});

test('new advertisers, node-wide: an honest relay pushing valid adverts signed by others is never blamed past the node-wide budget', async () => {
  const { p, registry } = pipe({ newAdvertisersTotal: { ratePerSec: 1 / 60, burst: 3 } });
  const reasons: string[] = [];
  for (let i = 0; i < 50; i++) reasons.push((await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'relay', 'gossip')).reason);
  assert.deepEqual(reasons.slice(0, 4), ['ok', 'ok', 'ok', 'RATE_LIMITED']);
  assert.equal(reasons.filter((r) => r === 'RATE_LIMITED').length, 47);
  assert.equal(await limited(registry, 'advert', 'new-advertiser-total'), 47);
  assert.equal(p.guard.abuse('relay'), 0, '50 new advertisers, within its own burst of 200: refused for the node, not blamed');
  // its own budget still counts what it pushed (as a neighbour of it would): past that it is its own excess
  for (let i = 0; i < 150; i++) await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'relay', 'gossip');
  assert.equal(p.guard.abuse('relay'), 0);
  await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'relay', 'gossip');
  assert.equal(await limited(registry, 'advert', 'new-advertiser'), 1);
  assert.equal(p.guard.abuse('relay'), 1);
});

test('new advertisers, node-wide: a forged advert gives the node-wide token back', async () => {
  const { p } = pipe({ newAdvertisersTotal: { ratePerSec: 1 / 60, burst: 1 } });
  for (let i = 0; i < 3; i++) {
    const bad = Uint8Array.from(advert(Ed25519Signer.generate()).bytes);
    bad[bad.length - 1]! ^= 1;
    assert.equal((await p.validate('advert', bad, `forger-${i}`, 'gossip')).reason, 'ENVELOPE_BAD_SIGNATURE');
  }
  assert.equal((await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'honest', 'gossip')).verdict, 'accept');
  assert.equal((await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'honest', 'gossip')).reason, 'RATE_LIMITED');
  assert.deepEqual(floodOptions({ newAdvertisers: { ratePerSec: 2, burst: 10 } }).newAdvertisersTotal, { ratePerSec: 2, burst: 10 }, 'unset, it follows the per-peer one');
  assert.deepEqual(floodOptions().newAdvertisersTotal, floodOptions().newAdvertisers);
});

test('signature precheck: garbage signed in the name of a fresh key is refused without the strict key check', async () => {
  const { p } = pipe({});
  const fresh = Ed25519Signer.generate();
  const did = didFromPublicKey(fresh.publicKey);
  const bad = Uint8Array.from(job(fresh).bytes);
  bad[bad.length - 1]! ^= 1;
  assert.equal(didChecked(did), false);
  assert.equal((await p.validate('job', bad, 'x', 'gossip')).reason, 'ENVELOPE_BAD_SIGNATURE');
  assert.equal(didChecked(did), false, 'the strict key check never ran');
  assert.equal((await p.validate('job', job(fresh).bytes, 'x', 'gossip')).verdict, 'accept');
  assert.equal(didChecked(did), true);
});

test('per-peer in-flight share: one peer cannot hold every validation slot', async () => {
  const g = new FloodGuard({ maxInFlightPerPeer: 2 }, clock);
  assert.ok(g.enter('job', 'a') && g.enter('job', 'a'));
  assert.equal(g.enter('job', 'a'), false);
  assert.ok(g.enter('job', 'b'));
  g.release('a');
  assert.ok(g.enter('job', 'a'));
  assert.deepEqual(floodOptions({ signer: { job: { ratePerSec: 1, burst: 1 } } }).signer.offer, floodOptions().signer.offer, 'per-kind options merge by kind');
});

test('abuse policy: P5 is minus the abuse score; past disconnectAt the peer is hung up on and refused until banMs passes', async () => {
  const c = fakeClock(0);
  const g = new FloodGuard({ peer: { ratePerSec: 0.001, burst: 1 }, abuseHalfLifeMs: 60_000 }, c);
  const hung: string[] = [];
  const policy = new AbusePolicy(g, { disconnectAt: 5, banMs: 10_000 }, c, silentLogger(), (peer) => void hung.push(peer));
  assert.ok(g.admitPeer('job', 'bad'));
  for (let i = 0; i < 4; i++) assert.equal(g.admitPeer('job', 'bad'), false);
  assert.equal(policy.appSpecificScore('bad'), -4);
  assert.equal(policy.appSpecificScore('good'), -0);
  assert.equal(policy.denied('bad'), false);
  g.admitPeer('job', 'bad');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(hung, ['bad']);
  assert.equal(policy.denied('bad'), true);
  g.admitPeer('job', 'bad');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(hung, ['bad'], 'hung up once while banned');
  c.advance(10_000);
  assert.equal(policy.denied('bad'), false, 'the ban ends');
});

test('per signer: non-deliveries (/1, /2 and /3) are limited like the other outcome records; another signer passes', () => {
  const c = fakeClock(0);
  const g = new FloodGuard({}, c);
  for (const kind of ['nondelivery', 'nondelivery2', 'nondelivery3'] as const) {
    assert.deepEqual(floodOptions().signer[kind], floodOptions().signer.acceptance);
    let taken = 0;
    while (g.reserveSigner(kind, 'did:key:zflood') && taken < 1_000) taken++;
    assert.equal(taken, 60, `${kind}: the burst, then refused`);
    assert.ok(g.reserveSigner(kind, 'did:key:zother'));
    c.advance(1_000);
    assert.ok(g.reserveSigner(kind, 'did:key:zflood'), 'refilled at its rate');
  }
});

test('adverts turned away by a new-advertiser limit: counted since start (market, console) and said at info, the first in full, then one summary line a window (QA qaWit F4)', async () => {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(JSON.parse(l) as Record<string, unknown>) });
  const p = new RecordPipeline({ clock, monoClock: clock, metrics: createNetMetrics(new Registry()), log, floodLimits: { newAdvertisers: { ratePerSec: 1 / 60, burst: 2 }, newAdvertisersTotal: { ratePerSec: 1 / 60, burst: 3 } } });
  for (let i = 0; i < 5; i++) await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'flooder', 'gossip');
  // the node-wide budget: two more from another peer, one of them over it
  for (let i = 0; i < 2; i++) await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'relay', 'gossip');
  assert.equal(p.guard.advertsTurnedAway, 4, 'three over the flooder’s own limit, one over the node’s');
  const said = lines.filter((l) => l.code === 'NET_NEW_ADVERTISER_LIMIT');
  assert.equal(said.length, 1, 'one line, not one per advert');
  assert.equal(said[0]!.level, 30);
  clock.advance(61_000);
  await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'flooder', 'gossip');
  await p.validate('advert', advert(Ed25519Signer.generate()).bytes, 'flooder', 'gossip');
  const summary = lines.filter((l) => l.code === 'NET_NEW_ADVERTISER_LIMIT');
  assert.ok(summary.length <= 2, JSON.stringify(summary));
});
