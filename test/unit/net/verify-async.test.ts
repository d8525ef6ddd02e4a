/**
 * Signature work off the event loop (docs/network.md §Signature threads;
 * docs/scale.md §1 third round): the flood limits when the verify is awaited
 * (reserve before, keep on success, refund on failure), the seen and staleness
 * re-checks after the awaits, and the worker pool itself (batches, verdicts
 * identical to the inline path, a crashed worker fails its items as ignore and
 * is replaced).
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
import { VerifyPool, verifyOne, type SignatureVerifier, type VerifyFailure } from '../../../src/net/verify-pool.js';

const clock = fakeClock();
let n = 0;
const job = (s: Signer): Uint8Array =>
  seal(
    T.job,
    {
      workload: 'infer.llm',
      requirements: { cpuCores: 1, memoryMiB: 64 },
      maxPrice: { amount: '1', currency: 'USD' },
      announcedAt: clock(),
      deadline: clock() + 600_000,
      timeoutMs: 60_000,
      input: { hash: 'sha256:' + (++n).toString(16).padStart(64, '0'), size: 1 },
      inputSealed: 'no',
    } as Job,
    s,
  ).bytes;
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

test('the same record through two paths at once is accepted once (seen re-checked after the await)', async () => {
  const gate = new GateVerifier();
  const p = pipe(gate, {});
  const r = job(Ed25519Signer.generate());
  const a = p.validate('job', r, 'peer-a', 'gossip');
  const b = p.validate('job', r, 'peer-b', 'sync');
  await tick();
  gate.release();
  const outs = await Promise.all([a, b]);
  assert.deepEqual(outs.map((o) => o.verdict).sort(), ['accept', 'ignore']);
  assert.equal(outs.find((o) => o.verdict === 'ignore')!.reason, 'DUPLICATE');
  assert.equal(outs.reduce((k, o) => k + o.fresh.length, 0), 1);
});

test('a verifier failure (a worker died) is ignore VERIFY_WORKER_FAILED: not accepted, not marked seen, the signer refunded', async () => {
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

test('the worker pool: one message per thread per batch, the inline verdicts, bad signatures and bad keys refused', async () => {
  const pool = new VerifyPool(2);
  try {
    const s = Ed25519Signer.generate();
    const good = Array.from({ length: 100 }, () => job(s));
    const before = pool.batches;
    const res = await Promise.all(good.map((b) => pool.verify(b)));
    assert.deepEqual(res, good.map(() => null));
    assert.equal(pool.batches - before, 2, '100 envelopes queued in one turn go out as one batch per thread');
    // a view into a larger buffer is sent as its own bytes
    const big = new Uint8Array(good[0]!.length + 20);
    big.set(good[0]!, 10);
    assert.equal(await pool.verify(big.subarray(10, 10 + good[0]!.length)), null);
    const bad = forged(job(s));
    assert.equal((await pool.verify(bad))?.code, verifyOne(bad)?.code);
    assert.equal((await pool.verify(bad))?.code, 'ENVELOPE_BAD_SIGNATURE');
    // a record under a small-order key: its signature may be anything, the key is refused
    const small: Signer = { publicKey: new Uint8Array(32).fill(0).map((_, i) => (i === 0 ? 1 : 0)), sign: () => new Uint8Array(64) };
    const weak = seal(T.job, { workload: 'infer.llm', requirements: {}, maxPrice: { amount: '1', currency: 'USD' }, announcedAt: clock(), deadline: clock() + 600_000, timeoutMs: 60_000, input: { hash: 'sha256:' + 'cd'.repeat(32), size: 1 }, inputSealed: 'no' } as Job, small).bytes;
    const w = await pool.verify(weak);
    assert.ok(w !== null && w.code.startsWith('ENVELOPE_'), `refused: ${w?.code}`);
    assert.equal(w.code, verifyOne(weak)?.code);
  } finally {
    await pool.close();
  }
});

test('a worker that dies fails the envelopes it held as VERIFY_WORKER_FAILED and is replaced', async () => {
  const pool = new VerifyPool(1, { workerUrl: new URL('./fixtures/crash-verify-worker.js', import.meta.url) });
  try {
    const s = Ed25519Signer.generate();
    const good = job(s);
    const [a, b] = await Promise.all([pool.verify(good), pool.verify(Uint8Array.of(0))]);
    assert.equal(a?.code, 'VERIFY_WORKER_FAILED', 'a good envelope in the dead worker\'s batch is not taken as verified');
    assert.equal(b?.code, 'VERIFY_WORKER_FAILED');
    assert.equal(pool.crashes, 1);
    assert.equal(await pool.verify(job(s)), null, 'a fresh thread took the next batch');
  } finally {
    await pool.close();
  }
  assert.equal((await pool.verify(job(Ed25519Signer.generate())))?.code, 'VERIFY_POOL_CLOSED');
});
