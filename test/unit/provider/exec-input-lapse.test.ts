/**
 * The exec/1 input phase (src/roles/provider/exec-input.ts): its deadline moves with what has arrived, so a buyer that
 * was selected, got `ready` and sends nothing holds the provider's slot for a base time, not for the time its declared
 * size would take at the minimum rate (review s40 B F1: 158 s for 16 MiB, ~2.3 h for 1 GiB); a sender at the rate is
 * never cut; an input that lapses costs its buyer the provider's offers for a while (QuoteBudget.lapsed) and is
 * logged once per peer. Fakes only: an ExecIO whose deadline the test fires, fake clocks.
 */
import { describe, test, after } from 'node:test';
import { MiB, NOW, buyerDid, buyerPeer, lapseProvider, makeJob, selected } from './lapse-rig.js';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job, Offer, Selection } from '../../../src/records/kinds.js';
import { fakeClock } from '../../../src/util/clock.js';
import type { Provider } from '../../../src/roles/provider/provider.js';
import { QuoteBudget } from '../../../src/roles/provider/quote-budget.js';
import { readExecInput, type ExecIO } from '../../../src/roles/provider/exec-input.js';
import { EXEC_CHUNK_BYTES, type ExecFrame, type ExecHeader } from '../../../src/roles/exec-protocol.js';

const LIMITS = { maxInputBytes: 16 * MiB, requestMs: 30_000, minInputBytesPerSec: 128 * 1024 };

/**
 * A stream whose caller sends `frames` (then waits forever, as a stalled buyer does, unless `end`), records the
 * deadlines set (ms from when each was set, on `clock`) and lapses when the test calls `fire()`: the signal aborts with
 * the network's NET_DEADLINE and the pending read fails, as DirectProtocols' streams do.
 */
function stalledIO(frames: unknown[], clock: ReturnType<typeof fakeClock>, opts: { end?: boolean; peer?: string } = {}) {
  const ac = new AbortController();
  const queue = [...frames];
  const out: ExecFrame[] = [];
  const deadlines: Array<{ ms: number; what: string; at: number }> = [];
  let waiting: ((e: unknown) => void) | undefined;
  let reading!: () => void;
  const stalled = new Promise<void>((r) => (reading = r));
  const io: ExecIO = {
    next: () => {
      if (queue.length) return Promise.resolve(queue.shift());
      if (opts.end) return Promise.resolve(undefined);
      reading();
      return new Promise((_resolve, reject) => {
        waiting = reject;
        if (ac.signal.aborted) reject(ac.signal.reason);
      });
    },
    send: async (f) => void out.push(f),
    signal: ac.signal,
    reserve: () => {},
    setDeadline: (ms, what) => void deadlines.push({ ms, what, at: clock() }),
    ...(opts.peer ? { peer: opts.peer } : {}),
  };
  const fire = (why?: C0Error) => {
    const last = deadlines.at(-1)!;
    ac.abort(why ?? new C0Error('NET_DEADLINE', `stream passed its ${last.what} deadline of ${last.ms} ms`));
    waiting?.(ac.signal.reason);
  };
  return { io, out, deadlines, fire, stalled };
}

function header(job: Opened<Job>, offer?: Opened<Offer>, selection?: Opened<Selection>): ExecHeader {
  return { t: 'exec', job: job.bytes, offer: offer?.bytes ?? new Uint8Array(), selection: selection?.bytes ?? new Uint8Array() } as ExecHeader;
}

describe('exec input: the deadline moves with what has arrived', () => {
  test('after ready, a buyer that declared 16 MiB gets the base and one chunk’s time, not the whole size at the rate', async () => {
    const clock = fakeClock(0);
    const job = makeJob(16 * MiB);
    const s = stalledIO([], clock);
    const read = readExecInput(s.io, header(job), job, { ...LIMITS, clock });
    await s.stalled;
    assert.deepEqual(s.out.map((f) => f.t), ['ready']);
    // 30 s + one 256 KiB chunk at 128 KiB/s: 32 s (before: 30 s + 16 MiB at 128 KiB/s = 158 s)
    assert.deepEqual(s.deadlines, [{ ms: 32_000, what: 'input', at: 0 }]);
    s.fire();
    await assert.rejects(read, (e: unknown) => {
      // a lapse (inputLapse): the network's NET_DEADLINE, saying how much of the input was in
      assert.ok(e instanceof C0Error && e.code === 'NET_DEADLINE', String(e));
      assert.deepEqual(e.detail, { phase: 'input', received: 0, expected: 16 * MiB, ended: 'deadline', heldMs: 0 });
      return true;
    });
  });

  test('a sender at exactly the minimum rate is never cut; one that stops is cut a base time after its last chunk', async () => {
    const clock = fakeClock(0);
    const size = 16 * MiB;
    const job = makeJob(size);
    const chunkMs = (EXEC_CHUNK_BYTES / LIMITS.minInputBytesPerSec) * 1000;
    // each chunk arrives a chunk's time at the rate after the one before (the first, a chunk's time after ready)
    const n = 40;
    const frames: unknown[] = [];
    for (let i = 0; i < n; i++) frames.push({ t: 'input', data: new Uint8Array(EXEC_CHUNK_BYTES) });
    const s = stalledIO([], clock);
    const queue = [...frames];
    const inner = s.io.next;
    s.io.next = () => {
      if (!queue.length) return inner();
      // the deadline set last must not have passed when the next chunk comes
      const last = s.deadlines.at(-1)!;
      clock.advance(chunkMs);
      assert.ok(clock() < last.at + last.ms, `chunk at ${clock()} ms after its deadline at ${last.at + last.ms} ms`);
      return Promise.resolve(queue.shift());
    };
    const read = readExecInput(s.io, header(job), job, { ...LIMITS, clock });
    await s.stalled;
    assert.equal(s.deadlines.length, n + 1, 'the deadline moved with each chunk');
    // stopped after 10 MiB in 80 s: the deadline is the base (and a chunk’s time) from the last chunk, not the rest of 158 s
    const last = s.deadlines.at(-1)!;
    assert.equal(last.at, n * chunkMs);
    assert.equal(last.ms, LIMITS.requestMs + chunkMs);
    s.fire();
    await assert.rejects(read, (e: unknown) => {
      assert.deepEqual((e as C0Error).detail, { phase: 'input', received: n * EXEC_CHUNK_BYTES, expected: size, ended: 'deadline', heldMs: n * chunkMs });
      return true;
    });
    // never later than the whole declared size at the rate allows (the bound before: 158 s)
    for (const d of s.deadlines) assert.ok(d.at + d.ms <= LIMITS.requestMs + (size / LIMITS.minInputBytesPerSec) * 1000);
  });

  test('a fast sender banks no hold: after a burst, a pause longer than the base is cut', async () => {
    // 15 MiB in within the first second: on average it could then wait ~2 min, but it may not pause longer than the
    // base and one chunk's time
    const clock = fakeClock(0);
    const job = makeJob(16 * MiB);
    const frames = Array.from({ length: 60 }, () => ({ t: 'input', data: new Uint8Array(EXEC_CHUNK_BYTES) }));
    const s = stalledIO(frames, clock);
    const inner = s.io.send;
    s.io.send = async (f) => {
      await inner(f);
      clock.advance(1000);
    };
    const read = readExecInput(s.io, header(job), job, { ...LIMITS, clock });
    await s.stalled;
    assert.deepEqual(s.deadlines.at(-1), { ms: 32_000, what: 'input', at: 1000 });
    s.fire();
    await assert.rejects(read);
  });

  test('a small input gets the base and its own time at the rate', async () => {
    const clock = fakeClock(0);
    const job = makeJob(64 * 1024 + 1);
    const s = stalledIO([], clock);
    const read = readExecInput(s.io, header(job), job, { ...LIMITS, clock });
    await s.stalled;
    assert.deepEqual(s.deadlines, [{ ms: 30_501, what: 'input', at: 0 }]);
    s.fire();
    await assert.rejects(read);
  });

  test('a whole input arrives (ready, chunks, end) and is returned', async () => {
    const clock = fakeClock(0);
    const job = makeJob(300 * 1024);
    const s = stalledIO([{ t: 'input', data: new Uint8Array(256 * 1024) }, { t: 'input', data: new Uint8Array(44 * 1024) }], clock, { end: true });
    assert.equal((await readExecInput(s.io, header(job), job, { ...LIMITS, clock })).length, 300 * 1024);
    assert.deepEqual(s.deadlines.map((d) => d.what), ['input', 'input', 'input']);
  });
});

describe('QuoteBudget: a buyer whose input lapsed', () => {
  test('gets no offer for lapseMs, twice as long for each lapse in a row, at most maxLapseMs; a quiet maxLapseMs forgives', () => {
    const mono = fakeClock(0);
    const b = new QuoteBudget({ windowMs: 30_000, monoClock: mono, maxLapseMs: 100_000 });
    assert.equal(b.check('did:b', NOW), undefined);
    assert.equal(b.lapsed('did:b'), 30_000);
    assert.equal(b.check('did:b', NOW), 'buyer-lapsed');
    assert.equal(b.check('did:other', NOW), undefined, 'another buyer is not paused');
    mono.advance(30_000);
    assert.equal(b.check('did:b', NOW), undefined);
    assert.equal(b.lapsed('did:b'), 60_000);
    assert.equal(b.lapsed('did:b'), 100_000, 'capped');
    mono.advance(99_999);
    assert.equal(b.check('did:b', NOW), 'buyer-lapsed');
    // work run here forgives (exec-lapse-holder.test.ts), the pause runs on
    b.delivered('did:b', 30_000);
    assert.equal(b.check('did:b', NOW), 'buyer-lapsed');
    // a quiet maxLapseMs after the pause ended: counted afresh
    mono.advance(30_000 + 100_000);
    assert.equal(b.lapsed('did:b'), 30_000);
  });
});

describe('Provider: an exec input that lapses', () => {
  const live: Provider[] = [];
  after(async () => {
    for (const p of live) await p.stop();
  });

  const setup = () => lapseProvider(live);

  test('the slot goes back, the buyer gets no offer for a while, the log says so once per peer', async () => {
    const s = setup();
    await s.provider.start();
    const lapses = s.lines.filter((l) => l.code === 'EXEC_INPUT_LAPSED');
    for (let i = 0; i < 2; i++) {
      const { job, offer, selection } = await selected(s.provider, 16 * MiB);
      const io = stalledIO([header(job, offer, selection)], s.mono, { peer: buyerPeer });
      const served = s.provider.handleExec(io.io);
      await io.stalled;
      assert.deepEqual(io.out.map((f) => f.t), ['ready']);
      assert.equal(s.provider.running, 1, 'the slot is held while the input may still come');
      assert.equal(io.deadlines.at(-1)!.ms, 32_000);
      io.fire();
      await assert.rejects(served, (e: unknown) => (e as C0Error).code === 'NET_DEADLINE');
      assert.equal(s.provider.running, 0, 'the slot went back');
      // paused: a job of that buyer's, pushed or heard, gets no offer
      assert.equal(await s.provider.onJob(makeJob(100)), undefined);
      assert.equal(await s.provider.onJob(makeJob(100), { invited: true }), undefined);
      assert.equal(s.provider.budget.check(buyerDid, NOW), 'buyer-lapsed');
      // another buyer is quoted
      assert.ok(await s.provider.onJob(makeJob(100, Ed25519Signer.generate())));
      // the pause ends (30 s, then 60 s): the buyer is quoted again
      s.mono.advance(30_000 * 2 ** i);
      assert.equal(s.provider.budget.check(buyerDid, NOW), undefined);
    }
    const logged = s.lines.filter((l) => l.code === 'EXEC_INPUT_LAPSED');
    assert.equal(logged.length - lapses.length, 1, 'one line for the peer (then a count a minute)');
    assert.equal(logged[0]!.peer, buyerPeer);
    assert.equal(logged[0]!.buyer, buyerDid);
    assert.equal(logged[0]!.received, 0);
    assert.equal(logged[0]!.expected, 16 * MiB);
  });

  test('a buyer that resets its stream (or loses its connection) is no lapse: no pause, no line', async () => {
    const s = setup();
    await s.provider.start();
    const { job, offer, selection } = await selected(s.provider, 16 * MiB);
    const io = stalledIO([header(job, offer, selection)], s.mono, { peer: buyerPeer });
    const served = s.provider.handleExec(io.io);
    await io.stalled;
    io.fire(new C0Error('NET_STREAM_FAILED', 'the caller reset the stream'));
    await assert.rejects(served, (e: unknown) => (e as C0Error).code === 'NET_STREAM_FAILED');
    assert.equal(s.provider.running, 0);
    assert.equal(s.provider.budget.check(buyerDid, NOW), undefined);
    assert.equal(s.lines.filter((l) => l.code === 'EXEC_INPUT_LAPSED').length, 0);
  });
});
