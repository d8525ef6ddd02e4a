/**
 * Signature threads that are lost (docs/network.md §3 "Signature threads"): a
 * lost thread is reported (why, whether it had started, its error), replaced at
 * once the first time and after a doubling backoff when its slot keeps losing
 * threads before any answers a batch (a thread that cannot start would
 * otherwise be restarted in a loop), and the backoff starts over once a
 * thread answers. A thread the system will not create is lost the same way.
 * The verdicts never wait on any of it: the event loop verifies meanwhile.
 * And the threads' metrics, each envelope counted where it was verified.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { Ed25519Signer } from '../../../src/records/index.js';
import { fakeClock } from '../../../src/util/clock.js';
import { registerVerifyThreadMetrics, type VerifyThreadStats } from '../../../src/net/metrics.js';
import { RESPAWN_BASE_MS, RESPAWN_MAX_MS, respawnDelayMs, VerifyPool, type ThreadLoss, type VerifyPoolOptions } from '../../../src/net/verify-pool.js';
import { sealJob } from './fixtures/records.js';

const clock = fakeClock();
const s = Ed25519Signer.generate();
/** Five envelopes, the second forged: enough to be handed to a thread (MIN_SHARED_BATCH). */
const batch = (): Uint8Array[] =>
  Array.from({ length: 5 }, (_, i) => {
    const b = sealJob(s, clock).bytes;
    if (i === 1) b[b.length - 10]! ^= 1;
    return b;
  });
const codes = async (pool: VerifyPool): Promise<Array<string | null>> => (await Promise.all(batch().map((b) => pool.verify(b)))).map((r) => r?.code ?? null);
const EXPECTED = [null, 'ENVELOPE_BAD_SIGNATURE', null, null, null];
/** A pool of one thread from `worker` (a fixture's file name, or a URL), with every loss it reports. */
function watched(worker: string | URL, opts: VerifyPoolOptions): { pool: VerifyPool; losses: ThreadLoss[]; unlisten: () => void } {
  const pool = new VerifyPool(1, { workerUrl: typeof worker === 'string' ? new URL(`./fixtures/${worker}`, import.meta.url) : worker, ...opts });
  const losses: ThreadLoss[] = [];
  const unlisten = pool.onThreadLost((l) => losses.push(l));
  return { pool, losses, unlisten };
}
async function until(what: string, cond: () => boolean): Promise<void> {
  const end = Date.now() + 30_000;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), what);
}

test('respawnDelayMs: the first loss is replaced at once, then 1 s doubling, at most 60 s', () => {
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((n) => respawnDelayMs(n)), [0, 0, RESPAWN_BASE_MS, 2 * RESPAWN_BASE_MS, 4 * RESPAWN_BASE_MS, 8 * RESPAWN_BASE_MS]);
  assert.equal(respawnDelayMs(50), RESPAWN_MAX_MS);
  assert.equal(respawnDelayMs(10_000), RESPAWN_MAX_MS, 'no overflow however long it goes on');
  assert.equal(respawnDelayMs(3, 100, 250), 200);
  assert.equal(respawnDelayMs(4, 100, 250), 250);
});

test('a thread that cannot start is reported with its error, replaced once at once, then only after the backoff; verdicts come from the event loop meanwhile', async () => {
  const { pool, losses } = watched('broken-verify-worker.js', { respawnBaseMs: 60_000 });
  try {
    await until('two threads were lost', () => losses.length >= 2);
    assert.deepEqual(
      losses.map((l) => [l.reason, l.wasReady, l.losses, l.respawnInMs, l.exitCode]),
      [
        ['exit', false, 1, 0, 1],
        ['exit', false, 2, 60_000, 1],
      ],
    );
    assert.match(losses[0]!.error ?? '', /the signature module failed to load \(test\)/, 'the error it died of is reported');
    assert.deepEqual([pool.ready, pool.starting, pool.waiting, pool.crashes], [0, 0, 1, 2], 'the third waits out its backoff');
    // no thread: a batch is verified on the event loop at once, not handed over
    assert.deepEqual(await codes(pool), EXPECTED);
    assert.deepEqual([pool.batches, pool.helped], [0, 0]);
    // the backoff is 60 s: nothing else starts (let a thread that did start have its time to fail)
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(losses.length, 2);
  } finally {
    await pool.close();
  }
  assert.equal(pool.waiting, 0, 'close() leaves no replacement waiting');
});

test('the backoff runs out and the next thread starts: the third loss in a row waits twice the base', async () => {
  const { pool, losses } = watched('broken-verify-worker.js', { respawnBaseMs: 50 });
  try {
    await until('four threads were lost', () => losses.length >= 4);
    assert.deepEqual(
      losses.slice(0, 4).map((l) => [l.losses, l.respawnInMs]),
      [
        [1, 0],
        [2, 50],
        [3, 100],
        [4, 200],
      ],
    );
  } finally {
    await pool.close();
  }
  // a replacement due after close() never starts, and nothing more is reported
  const after = losses.length;
  await new Promise((r) => setTimeout(r, 600));
  assert.equal(losses.length, after);
  assert.deepEqual([pool.ready, pool.starting, pool.waiting], [0, 0, 0]);
});

test('a thread the system will not create (new Worker throws) is lost like one that cannot start, told to a node subscribing right after, and backed off', async () => {
  // a Worker takes only file: (and data:) URLs: this one throws in the constructor
  const { pool, losses } = watched(new URL('http://127.0.0.1/verify-worker.js'), { respawnBaseMs: 60_000 });
  try {
    await until('two threads were lost', () => losses.length >= 2);
    assert.deepEqual(
      losses.map((l) => [l.reason, l.wasReady, l.losses, l.respawnInMs]),
      [
        ['spawn', false, 1, 0],
        ['spawn', false, 2, 60_000],
      ],
    );
    assert.ok((losses[0]!.error ?? '').length > 0, 'why it could not be created is reported');
    assert.deepEqual(await codes(pool), EXPECTED, 'verdicts from the event loop');
    assert.deepEqual([pool.ready, pool.waiting, pool.batches], [0, 1, 0]);
  } finally {
    await pool.close();
  }
});

test('a thread that answered and is then lost is replaced at once every time (an answered batch resets the backoff)', async () => {
  const { pool, losses, unlisten } = watched('answer-once-verify-worker.js', { stallMs: 60_000, respawnBaseMs: 60_000 });
  try {
    for (let round = 1; round <= 3; round++) {
      // a fresh thread answers its first batch...
      await until('a thread is ready', () => pool.ready === 1);
      const answered = pool.byThreads + pool.refusedByThreads;
      assert.deepEqual(await codes(pool), EXPECTED);
      assert.equal(pool.byThreads + pool.refusedByThreads - answered, 5, 'the thread verified the batch');
      // ...and dies on its second: its batch is finished on the loop, with the right verdicts
      assert.deepEqual(await codes(pool), EXPECTED);
      await until(`thread ${round} was lost`, () => losses.length === round);
      assert.deepEqual([losses[round - 1]!.reason, losses[round - 1]!.wasReady, losses[round - 1]!.losses, losses[round - 1]!.respawnInMs, losses[round - 1]!.exitCode], ['exit', true, 1, 0, 7]);
      assert.equal(pool.waiting, 0);
    }
    unlisten();
    await until('a thread is ready', () => pool.ready === 1);
    await codes(pool);
    await codes(pool);
    await until('the fourth thread was lost', () => pool.crashes === 4);
    assert.equal(losses.length, 3, 'an unsubscribed listener is not told');
  } finally {
    await pool.close();
  }
});

test('the threads metrics: threads by state, threads lost, and envelopes by where they were verified', async () => {
  const registry = new Registry();
  let stats: VerifyThreadStats | undefined;
  registerVerifyThreadMetrics(registry, () => stats);
  const read = async () => (await registry.metrics()).split('\n').filter((l) => l.startsWith('c0mpute_'));
  assert.deepEqual(await read(), [
    'c0mpute_net_verify_threads{state="ready"} 0',
    'c0mpute_net_verify_threads{state="starting"} 0',
    'c0mpute_net_verify_threads{state="waiting"} 0',
    'c0mpute_net_verify_thread_losses_total 0',
    'c0mpute_net_verify_envelopes_total{by="thread"} 0',
    'c0mpute_net_verify_envelopes_total{by="loop"} 0',
  ]);
  stats = { ready: 1, starting: 0, waiting: 1, crashes: 3, byThreads: 880, refusedByThreads: 20, byLoop: 100 };
  assert.deepEqual(await read(), [
    'c0mpute_net_verify_threads{state="ready"} 1',
    'c0mpute_net_verify_threads{state="starting"} 0',
    'c0mpute_net_verify_threads{state="waiting"} 1',
    'c0mpute_net_verify_thread_losses_total 3',
    'c0mpute_net_verify_envelopes_total{by="thread"} 900',
    'c0mpute_net_verify_envelopes_total{by="loop"} 100',
  ]);
  stats = { ...stats, crashes: 4, byLoop: 600 };
  const again = await read();
  assert.ok(again.includes('c0mpute_net_verify_thread_losses_total 4') && again.includes('c0mpute_net_verify_envelopes_total{by="loop"} 600'), 'read afresh at each scrape, not added up');
});

test('the pool counts each envelope where it was verified: the loop\'s and the threads\' add up to the total once settled, and neither goes down', async () => {
  const pool = new VerifyPool(1, { stallMs: 60_000 });
  try {
    await until('a thread is ready', () => pool.ready === 1);
    let last = { thread: 0, loop: 0 };
    for (let round = 0; round < 5; round++) {
      // a lone record (the loop), and a read of 40 (handed over in chunks; the loop may take some past the lead)
      await Promise.all([sealJob(s, clock).bytes].map((b) => pool.verify(b)));
      await Promise.all(Array.from({ length: 40 }, () => pool.verify(sealJob(s, clock).bytes)));
      const now = { thread: pool.byThreads + pool.refusedByThreads, loop: pool.byLoop };
      assert.ok(now.thread >= last.thread && now.loop >= last.loop + 1, 'counters only grow; the lone record was the loop\'s');
      assert.equal(now.thread + now.loop, pool.total, 'every envelope counted once, where it was verified');
      last = now;
    }
  } finally {
    await pool.close();
  }
});
