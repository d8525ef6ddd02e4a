/**
 * Signature work off the event loop (docs/network.md §Signature threads;
 * docs/scale.md §1 third round): the flood limits when the verify is awaited
 * (reserve before, keep on success, refund on failure), the seen and staleness
 * re-checks after the awaits, and the worker pool itself (batches handed to
 * the threads in chunks, verdicts identical to the inline path, a bounded lead,
 * a stalled or crashed thread's batch finished on the event loop, a dead
 * thread replaced).
 *
 * @own-process: the pool's verdicts are compared with the inline path's, and both read the process's DID cache,
 * which other files fill (a refused key cached answers ENVELOPE_BAD_SIGNER before a precheck could say
 * ENVELOPE_BAD_SIGNATURE; a fresh thread has no cache). scripts/run-tests.mjs runs it alone.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { Ed25519Signer, seal, T, type Advert, type Job, type Signer } from '../../../src/records/index.js';
import { hashHex } from '../../../src/records/address.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline, type SemanticHook } from '../../../src/net/gossip-validation.js';
import { NO_FLOOD_LIMITS, type FloodLimitOptions } from '../../../src/net/flood-limits.js';
import { CHUNK, LEAD, VerifyPool, verifyOne, type SignatureVerifier, type ThreadLoss, type VerifyFailure } from '../../../src/net/verify-pool.js';
import { encodeMessage } from '../../../src/net/framing.js';
import { sealJob } from './fixtures/records.js';
import { countVerifies } from './fixtures/count-verifies.js';

const clock = fakeClock();
const job = (s: Signer): Uint8Array => sealJob(s, clock).bytes;
let seq = 0;
const advert = (s: Signer, at = ++seq): Uint8Array =>
  seal(T.advert, { seq: at, issuedAt: clock(), expiresAt: clock() + 600_000, workloads: ['infer.llm'], tier: 'standard', hardware: { cpuCores: 4, memoryMiB: 1024 } } as Advert, s).bytes;
/** The same envelope with one bit of its signature flipped: the header still names the signer. */
const forged = (bytes: Uint8Array): Uint8Array => {
  const b = Uint8Array.from(bytes);
  b[b.length - 10]! ^= 1;
  return b;
};

/**
 * A verifier that holds every envelope until the test releases it (all, or
 * one by one), then verifies it for real: the await the pool puts between the
 * cheap checks and the verdict, under the test's control.
 */
class GateVerifier implements SignatureVerifier {
  readonly held: Array<{ bytes: Uint8Array; resolve: (r: VerifyFailure | null) => void }> = [];
  calls = 0;
  verify(bytes: Uint8Array): Promise<VerifyFailure | null> {
    this.calls++;
    return new Promise((resolve) => this.held.push({ bytes, resolve }));
  }
  /** Release the held envelope whose bytes are `b` (or every one). */
  release(b?: Uint8Array): void {
    for (let i = this.held.length - 1; i >= 0; i--) {
      const h = this.held[i]!;
      if (b && h.bytes !== b) continue;
      this.held.splice(i, 1);
      h.resolve(verifyOne(h.bytes));
    }
  }
}

const tick = () => new Promise((r) => setImmediate(r));
/** Until the pool has a thread ready for batches (before that, a batch is verified on the loop). */
async function ready(pool: VerifyPool): Promise<void> {
  const end = Date.now() + 30_000;
  while (pool.ready === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  assert.ok(pool.ready > 0, 'a thread came up');
}
const pipe = (verifier: SignatureVerifier | undefined, limits: Partial<FloodLimitOptions>, hooks: { advert?: SemanticHook } = {}) =>
  new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), floodLimits: { ...NO_FLOOD_LIMITS, ...limits }, hooks, ...(verifier ? { verifier } : {}) });
const count = (outs: Array<{ verdict: string; reason: string }>) => {
  const m: Record<string, number> = {};
  for (const o of outs) m[`${o.verdict}:${o.reason}`] = (m[`${o.verdict}:${o.reason}`] ?? 0) + 1;
  return m;
};

test('50 records of one signer in flight at once, bucket of 10: exactly 10 accepted, 40 RATE_LIMITED, and only 10 verified', async () => {
  const gate = new GateVerifier();
  const p = pipe(gate, { signer: { job: { ratePerSec: 1, burst: 10 } } });
  const s = Ed25519Signer.generate();
  const pending = Array.from({ length: 50 }, () => p.validate('job', job(s), 'peer-a', 'gossip'));
  await tick();
  assert.equal(gate.held.length, 10, 'only the reserved records reach the signature check');
  gate.release();
  const outs = await Promise.all(pending);
  assert.deepEqual(count(outs), { 'accept:ok': 10, 'ignore:RATE_LIMITED': 40 });
  assert.equal(gate.calls, 10);
});

test('forged-signer records hold the signer\'s tokens only while in flight: refunded when the signature fails', async () => {
  const gate = new GateVerifier();
  const p = pipe(gate, { signer: { job: { ratePerSec: 1, burst: 10 } } });
  const s = Ed25519Signer.generate();
  const forgeries = Array.from({ length: 10 }, () => p.validate('job', forged(job(s)), 'mallory', 'gossip'));
  await tick();
  // in flight, the forgeries hold the whole bucket (bounded per peer by the in-flight limit)
  const during = await Promise.race([p.validate('job', job(s), 'peer-a', 'gossip'), tick().then(() => undefined)]);
  assert.equal(during?.reason, 'RATE_LIMITED');
  gate.release();
  assert.deepEqual(count(await Promise.all(forgeries)), { 'reject:ENVELOPE_BAD_SIGNATURE': 10 });
  // refunded: the real signer's ten records all pass
  const real = Array.from({ length: 10 }, () => p.validate('job', job(s), 'peer-a', 'gossip'));
  await tick();
  gate.release();
  assert.deepEqual(count(await Promise.all(real)), { 'accept:ok': 10 });
});

test('a new-advertiser token is refunded when the signature fails', async () => {
  const gate = new GateVerifier();
  const p = pipe(gate, { newAdvertisers: { ratePerSec: 0.001, burst: 2 } });
  const bad = [0, 1].map(() => p.validate('advert', forged(advert(Ed25519Signer.generate())), 'peer-b', 'gossip'));
  await tick();
  gate.release();
  assert.deepEqual(count(await Promise.all(bad)), { 'reject:ENVELOPE_BAD_SIGNATURE': 2 });
  const good = [0, 1, 2].map(() => p.validate('advert', advert(Ed25519Signer.generate()), 'peer-b', 'gossip'));
  await tick();
  gate.release();
  assert.deepEqual(count(await Promise.all(good)), { 'accept:ok': 2, 'ignore:RATE_LIMITED': 1 });
});

test('an advert whose verify finishes after a newer one of its signer was accepted is refused ADVERT_STALE', async () => {
  const gate = new GateVerifier();
  const p = pipe(gate, {});
  const s = Ed25519Signer.generate();
  const older = advert(s, 100);
  const newer = advert(s, 101);
  const o = p.validate('advert', older, 'peer-a', 'gossip');
  const nw = p.validate('advert', newer, 'peer-b', 'gossip');
  await tick();
  gate.release(newer);
  assert.equal((await nw).verdict, 'accept');
  gate.release(older);
  const out = await o;
  assert.deepEqual([out.verdict, out.reason], ['ignore', 'ADVERT_STALE']);
});

test('an advert whose hook is still running when a newer one of its signer is accepted is refused ADVERT_STALE (inline verify too)', async () => {
  const s = Ed25519Signer.generate();
  const older = advert(s, 200);
  const newer = advert(s, 201);
  let open!: () => void;
  const slow = new Promise<void>((r) => (open = r));
  const hook: SemanticHook = async (rec) => {
    if ((rec.record as Advert).seq === 200) await slow;
  };
  const p = pipe(undefined, {}, { advert: hook });
  const o = p.validate('advert', older, 'peer-a', 'gossip');
  await tick();
  assert.equal((await p.validate('advert', newer, 'peer-b', 'gossip')).verdict, 'accept');
  open();
  const out = await o;
  assert.deepEqual([out.verdict, out.reason], ['ignore', 'ADVERT_STALE']);
});

test('the same record through two paths at once is accepted once (seen re-checked after the await), and its signer is charged once', async () => {
  const gate = new GateVerifier();
  const p = pipe(gate, { signer: { job: { ratePerSec: 0.001, burst: 2 } } });
  const s = Ed25519Signer.generate();
  const r = job(s);
  const a = p.validate('job', r, 'peer-a', 'gossip');
  const b = p.validate('job', r, 'peer-b', 'sync');
  await tick();
  gate.release();
  const outs = await Promise.all([a, b]);
  assert.deepEqual(outs.map((o) => o.verdict).sort(), ['accept', 'ignore']);
  assert.equal(outs.find((o) => o.verdict === 'ignore')!.reason, 'DUPLICATE');
  assert.equal(outs.reduce((k, o) => k + o.fresh.length, 0), 1);
  // the duplicate's reservation went back: the signer's second token is still there for its next record
  const next = p.validate('job', job(s), 'peer-a', 'gossip');
  await tick();
  gate.release();
  assert.equal((await next).verdict, 'accept');
});

test('a verifier that fails (VERIFY_WORKER_FAILED) earns ignore: not accepted, not marked seen, the signer refunded', async () => {
  let fail = true;
  const flaky: SignatureVerifier = { verify: async (b) => (fail ? { code: 'VERIFY_WORKER_FAILED', message: 'worker died' } : verifyOne(b)) };
  const p = pipe(flaky, { signer: { job: { ratePerSec: 0.001, burst: 1 } } });
  const r = job(Ed25519Signer.generate());
  const first = await p.validate('job', r, 'peer-a', 'gossip');
  assert.deepEqual([first.verdict, first.reason, first.fresh.length], ['ignore', 'VERIFY_WORKER_FAILED', 0]);
  assert.equal(p.known(hashHex(r)), false);
  fail = false;
  const again = await p.validate('job', r, 'peer-a', 'gossip');
  assert.deepEqual([again.verdict, again.reason], ['accept', 'ok'], 'the same bytes are taken once the verify works, within the one-record bucket');
});

test('the pool: a read of 100 envelopes is handed to the threads in chunks, each settled with the inline verdicts', async () => {
  const pool = new VerifyPool(2);
  try {
    await ready(pool);
    const s = Ed25519Signer.generate();
    const good = Array.from({ length: 100 }, () => job(s));
    const before = pool.batches;
    const res = await Promise.all(good.map((b) => pool.verify(b)));
    assert.deepEqual(res, good.map(() => null));
    assert.equal(pool.batches - before, Math.ceil(100 / CHUNK), `100 envelopes queued in one turn are handed over in chunks of ${CHUNK}`);
    assert.equal(pool.ahead, 0, 'nothing is left handed over once every verdict is in');
    // a view into a larger buffer is copied as its own bytes
    const big = new Uint8Array(good[0]!.length + 20);
    big.set(good[0]!, 10);
    assert.equal(await pool.verify(big.subarray(10, 10 + good[0]!.length)), null);
    // a thread slow to answer (a loaded machine) has its batch finished on the loop after stallMs: hand batches
    // until a thread's verdicts are taken
    const end = Date.now() + 30_000;
    while (pool.byThreads === 0 && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(await Promise.all(good.map((b) => pool.verify(b))), good.map(() => null));
    }
    assert.ok(pool.byThreads > 0, 'the threads verified handed envelopes');
    // refusals carry the inline path's code, each on its own envelope, from a thread's statuses
    const bad = forged(job(s));
    const small: Signer = { publicKey: Uint8Array.from([1, ...new Array<number>(31).fill(0)]), sign: () => new Uint8Array(64) };
    const weak = seal(T.job, { workload: 'infer.llm', requirements: {}, maxPrice: { amount: '1', currency: 'USD' }, announcedAt: clock(), deadline: clock() + 600_000, timeoutMs: 60_000, input: { hash: 'sha256:' + 'cd'.repeat(32), size: 1 }, inputSealed: 'no' } as Job, small).bytes;
    const mixed = [job(s), bad, job(s), weak, job(s), job(s), bad, job(s)];
    // until one round is the thread's alone (on a loaded machine the loop may finish a chunk itself)
    let whole = false;
    while (!whole && Date.now() < end) {
      const [verified, refused, helped] = [pool.byThreads, pool.refusedByThreads, pool.helped];
      const got = await Promise.all(mixed.map((b) => pool.verify(b)));
      assert.deepEqual(got.map((r) => r?.code ?? null), mixed.map((b) => verifyOne(b)?.code ?? null));
      assert.equal(got[1]?.code, 'ENVELOPE_BAD_SIGNATURE');
      assert.ok(got[3]?.code.startsWith('ENVELOPE_'));
      whole = pool.helped === helped;
      // the thread did the whole batch: its statuses landed on the right envelopes
      if (whole) assert.deepEqual([pool.byThreads - verified, pool.refusedByThreads - refused], [5, 3]);
    }
    assert.ok(whole, 'a round was the thread’s alone');
    // a lone record is verified on the event loop: no thread's round trip on a hop
    const handed = pool.batches;
    assert.equal(await pool.verify(job(s)), null);
    assert.equal(pool.batches, handed);
  } finally {
    await pool.close();
  }
});

test('the pool: before a thread is ready (starting, or replaced) a batch is verified on the event loop at once, not handed over', async () => {
  const pool = new VerifyPool(1, { stallMs: 60_000 });
  try {
    const s = Ed25519Signer.generate();
    const batch = [job(s), forged(job(s)), job(s), job(s), job(s)];
    // the 'ready' message needs a turn of the event loop: this batch is gathered before it
    const got = await Promise.all(batch.map((b) => pool.verify(b)));
    assert.deepEqual(got.map((r) => r?.code ?? null), [null, 'ENVELOPE_BAD_SIGNATURE', null, null, null]);
    assert.deepEqual([pool.batches, pool.helped, pool.stalled, pool.ahead], [0, 0, 0, 0]);
  } finally {
    await pool.close();
  }
});

test('the pool: a thread that never answers holds nothing up: its batch is finished on the event loop after stallMs, with the right verdicts', async () => {
  const pool = new VerifyPool(1, { workerUrl: new URL('./fixtures/stall-verify-worker.js', import.meta.url), stallMs: 30, replaceMs: 200 });
  const losses: ThreadLoss[] = [];
  pool.onThreadLost((l) => losses.push(l));
  try {
    await ready(pool);
    const s = Ed25519Signer.generate();
    const batch = [job(s), forged(job(s)), job(s), job(s), job(s)];
    const t0 = performance.now();
    const got = await Promise.all(batch.map((b) => pool.verify(b)));
    assert.deepEqual(got.map((r) => r?.code ?? null), [null, 'ENVELOPE_BAD_SIGNATURE', null, null, null]);
    assert.ok(performance.now() - t0 >= 25, 'settled by the stall timer, not the thread');
    assert.equal(pool.helped, 1);
    assert.equal(pool.stalled, 1);
    assert.equal(pool.byThreads, 0);
    assert.equal(pool.ahead, 0);
    assert.equal(pool.crashes, 0, 'one stall is not a stuck thread');
    // a thread that has answered nothing for replaceMs while holding batches is stopped and replaced
    while (performance.now() - t0 < 250) assert.deepEqual((await Promise.all(batch.map((b) => pool.verify(b)))).map((x) => x?.code ?? null), [null, 'ENVELOPE_BAD_SIGNATURE', null, null, null]);
    assert.equal(pool.crashes, 1, 'replaced once it had answered nothing for replaceMs');
    assert.deepEqual(losses.map((l) => [l.reason, l.wasReady, l.losses, l.respawnInMs]), [['stuck', true, 1, 0]], 'reported as stuck, replaced at once');
  } finally {
    await pool.close();
  }
});

test('the pool: the threads lead by at most LEAD envelopes: past it the event loop finishes the oldest batches in the same turn', async () => {
  // a stalled thread and a stall timer far away: only the lead can settle the excess
  const pool = new VerifyPool(1, { workerUrl: new URL('./fixtures/stall-verify-worker.js', import.meta.url), stallMs: 60_000 });
  try {
    await ready(pool);
    const s = Ed25519Signer.generate();
    const n = LEAD + 3 * CHUNK;
    const batch = Array.from({ length: n }, () => job(s));
    const settled: number[] = [];
    const all = batch.map((b, i) => pool.verify(b).then((r) => (assert.equal(r, null), settled.push(i))));
    await tick();
    assert.equal(pool.ahead, LEAD, 'the lead is left with the thread, no more and no less');
    assert.equal(pool.helped, 3, 'the three oldest chunks were finished on the loop');
    assert.deepEqual(settled, Array.from({ length: 3 * CHUNK }, (_, i) => i), 'oldest first, in the turn that queued them');
    // close() finishes what the thread still holds
    await pool.close();
    await Promise.all(all);
    assert.equal(settled.length, n);
  } finally {
    await pool.close();
  }
});

test('the pool: a forged record a thread refuses costs one verify in all: the loop takes the thread’s code and does not verify it again', async () => {
  const pool = new VerifyPool(2);
  try {
    await ready(pool);
    const s = Ed25519Signer.generate();
    const n = 64;
    // the threads start in the background: give them batches until one takes a share
    const end = Date.now() + 30_000;
    let helped = false;
    while (!helped && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 20));
      const batch = Array.from({ length: n }, () => forged(job(s)));
      const before = pool.refusedByThreads;
      let codes: Array<string | undefined> = [];
      const onLoop = await countVerifies(async () => {
        codes = (await Promise.all(batch.map((b) => pool.verify(b)))).map((r) => r?.code);
      });
      assert.deepEqual(codes, batch.map(() => 'ENVELOPE_BAD_SIGNATURE'), 'the exact code, from a thread or the loop');
      const byThreads = pool.refusedByThreads - before;
      assert.equal(onLoop + byThreads, n, `each forged record verified once: ${onLoop} on the loop, ${byThreads} on the threads`);
      helped = onLoop < n;
    }
    assert.ok(helped, 'the loop verified fewer than the batch: the threads’ refusals were not verified again');
  } finally {
    await pool.close();
  }
});

test('a thread that dies loses nothing: its batch is finished on the event loop with the right verdicts, and it is replaced', async () => {
  // no stall timer in reach: only the exit can finish the batch
  const pool = new VerifyPool(1, { workerUrl: new URL('./fixtures/crash-verify-worker.js', import.meta.url), stallMs: 60_000 });
  try {
    await ready(pool);
    const s = Ed25519Signer.generate();
    const batch = () => [job(s), forged(job(s)), job(s), job(s), job(s)];
    const one = batch();
    assert.deepEqual((await Promise.all(one.map((b) => pool.verify(b)))).map((r) => r?.code ?? null), [null, 'ENVELOPE_BAD_SIGNATURE', null, null, null]);
    const end = Date.now() + 30_000;
    while (pool.crashes < 1 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    assert.equal(pool.crashes, 1);
    // its replacement is offered the next batch once it is up
    await ready(pool);
    const two = batch();
    assert.deepEqual((await Promise.all(two.map((b) => pool.verify(b)))).map((r) => r?.code ?? null), [null, 'ENVELOPE_BAD_SIGNATURE', null, null, null]);
    while (pool.crashes < 2 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    assert.equal(pool.crashes, 2, 'a fresh thread was offered the next batch (and died too)');
    assert.equal(pool.byThreads, 0);
    assert.equal(pool.stalled, 0);
  } finally {
    await pool.close();
  }
});

test('two offers carrying the same new advert, validated side by side: both accepted (the advert accepted with the first is not stale for the second)', async () => {
  // found end to end: a provider's offers on two jobs reached a buyer together, and the second was ignored ADVERT_STALE
  const gate = new GateVerifier();
  const p = pipe(gate, {});
  const s = Ed25519Signer.generate();
  const ad = advert(s, 500);
  const offerOn = (j: string) =>
    encodeMessage(seal(T.offer, { job: 'sha256:' + j.repeat(32), advert: hashHex(ad), price: { amount: '1', currency: 'USD' }, durationMs: 1000, issuedAt: clock(), startBy: clock() + 60_000, expiresAt: clock() + 30_000 }, s).bytes, [ad]);
  const a = p.validate('offer', offerOn('aa'), 'peer-a', 'direct');
  const b = p.validate('offer', offerOn('bb'), 'peer-a', 'direct');
  await tick();
  gate.release();
  assert.deepEqual([(await a).reason, (await b).reason], ['ok', 'ok']);
});
