/**
 * Holds of the exec/1 slot that ended some other way than the ones counted before (review s41 D):
 * - F1: a hold is judged however the input failed and timed from the slot being taken: a malformed or oversized input
 *   chunk, or one byte more than declared, after a 31 s hold is a lapse (and still a strike); an inline input whose
 *   buyer sends no end and resets at 29 s is one too (before, no `ready` meant no hold clock); an inline input that is
 *   not the job's, refused after a hold, is one. Quick endings are not.
 * - F2: lapses are forgiven by the buyer's work run here (four times what the stall held), not per job delivered: four
 *   tiny jobs between 32 s stalls no longer keep every pause at 30 s; an honest buyer that lapsed once is forgiven by
 *   its ordinary work, and its next lapse costs 30 s again.
 * Fakes only: an ExecIO the test ends (lapse-rig heldIO), fake clocks.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { Provider } from '../../../src/roles/provider/provider.js';
import { QuoteBudget } from '../../../src/roles/provider/quote-budget.js';
import { MiB, NOW, buyerDid, buyerPeer, heldIO, lapseProvider, ranJob, selected } from './lapse-rig.js';

const reset = () => new C0Error('NET_STREAM_FAILED', 'the caller reset the stream');
const lapseLines = (s: ReturnType<typeof lapseProvider>) => s.lines.filter((l) => l.code === 'EXEC_INPUT_LAPSED');

describe('Provider: a hold that ends in a refusal, or on an inline input, is a lapse', () => {
  const live: Provider[] = [];
  after(async () => {
    for (const p of live) await p.stop();
  });

  for (const [what, size, frame, code] of [
    ['a malformed input frame', 16 * MiB, { t: 'input', data: 'not bytes' }, 'EXEC_BAD_REQUEST'],
    ['one byte more than declared', 100_000, { t: 'input', data: new Uint8Array(100_001) }, 'EXEC_INPUT_MISMATCH'],
  ] as const) {
    test(`${what} after a 31 s hold: refused, struck, and the buyer paused`, async () => {
      const s = lapseProvider(live);
      await s.provider.start();
      const h = heldIO([(await selected(s.provider, size)).header], buyerPeer);
      const served = s.provider.handleExec(h.io);
      await h.waiting;
      s.mono.advance(31_000);
      h.send(frame);
      await served;
      assert.deepEqual(h.refusals(), [code]);
      assert.equal(s.provider.running, 0);
      assert.deepEqual(s.struck, [buyerPeer], 'still an abuse strike');
      assert.equal(s.provider.budget.check(buyerDid, NOW), 'buyer-lapsed');
      const line = lapseLines(s)[0];
      assert.equal(line?.ended, 'refused');
      assert.equal(line?.heldMs, 31_000);
      assert.equal(line?.pauseMs, 30_000);
    });
  }

  test('a malformed input frame at once is a strike, not a lapse', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    const h = heldIO([(await selected(s.provider, 16 * MiB)).header], buyerPeer);
    const served = s.provider.handleExec(h.io);
    await h.waiting;
    s.mono.advance(500);
    h.send({ t: 'input', data: 'not bytes' });
    await served;
    assert.deepEqual(h.refusals(), ['EXEC_BAD_REQUEST']);
    assert.deepEqual(s.struck, [buyerPeer]);
    assert.equal(s.provider.budget.check(buyerDid, NOW), undefined);
    assert.equal(lapseLines(s).length, 0);
  });

  test('an inline input whose buyer sends no end and resets at 29 s is a lapse; one that resets at once is not', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    for (const [heldMs, paused] of [
      [500, false],
      [29_000, true],
    ] as const) {
      const { header } = await selected(s.provider, 1000);
      const h = heldIO([{ ...header, input: new Uint8Array(1000) }], buyerPeer);
      const served = s.provider.handleExec(h.io);
      await h.waiting;
      assert.equal(s.provider.running, 1, 'the slot is held');
      assert.deepEqual(h.out, [], 'no ready for an inline input');
      s.mono.advance(heldMs);
      h.end(reset());
      await assert.rejects(served, (e: unknown) => (e as C0Error).code === 'NET_STREAM_FAILED');
      assert.equal(s.provider.running, 0);
      assert.equal(s.provider.budget.check(buyerDid, NOW) === 'buyer-lapsed', paused, `held ${heldMs} ms`);
    }
    const line = lapseLines(s)[0];
    assert.equal(line?.ended, 'caller');
    assert.equal(line?.received, 1000);
    assert.deepEqual(s.struck, [], 'a reset is no strike');
  });

  test('an inline input that is not the job’s, ended after a 29 s hold, is refused and a lapse', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    const { header } = await selected(s.provider, 1000);
    const h = heldIO([{ ...header, input: new Uint8Array(1000).fill(1) }], buyerPeer);
    const served = s.provider.handleExec(h.io);
    await h.waiting;
    s.mono.advance(29_000);
    h.end();
    await served;
    assert.deepEqual(h.refusals(), ['EXEC_INPUT_MISMATCH']);
    assert.deepEqual(s.struck, [buyerPeer]);
    assert.equal(s.provider.budget.check(buyerDid, NOW), 'buyer-lapsed');
    assert.equal(lapseLines(s)[0]?.ended, 'refused');
  });
});

describe('Provider: lapses are forgiven by work run, not by jobs delivered', () => {
  const live: Provider[] = [];
  after(async () => {
    for (const p of live) await p.stop();
  });

  /** A 16 MiB job's exec whose buyer sends nothing until its deadline, 32 s after ready (a lapse). */
  async function stall(s: ReturnType<typeof lapseProvider>): Promise<void> {
    const h = heldIO([(await selected(s.provider, 16 * MiB)).header], buyerPeer);
    const served = s.provider.handleExec(h.io);
    await h.waiting;
    s.mono.advance(32_000);
    h.end(new C0Error('NET_DEADLINE', 'stream passed its input deadline'));
    await assert.rejects(served, (e: unknown) => (e as C0Error).code === 'NET_DEADLINE');
  }

  /** How long the buyer is refused offers from now, ms (the fake clock stepped a second at a time past its pause). */
  function pausedFor(s: ReturnType<typeof lapseProvider>): number {
    let ms = 0;
    while (s.provider.budget.check(buyerDid, NOW) === 'buyer-lapsed') {
      s.mono.advance(1_000);
      ms += 1_000;
    }
    return ms;
  }

  test('four tiny jobs between 32 s stalls do not stop the pauses doubling', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    s.work.ms = 5;
    await stall(s);
    const pauses = [pausedFor(s)];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 4; i++) await ranJob(s.provider);
      await stall(s);
      pauses.push(pausedFor(s));
    }
    // before: 30 s each time, the four jobs forgave the lapse
    assert.deepEqual(pauses, [30_000, 60_000, 120_000, 240_000]);
  });

  test('an honest buyer: one lapse costs 30 s, its ordinary work forgives it, and a lapse after that costs 30 s again', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    await stall(s);
    assert.equal(pausedFor(s), 30_000);
    // 16 jobs of 8 s each: 128 s of work, four times the 32 s the stall held
    s.work.ms = 8_000;
    for (let i = 0; i < 16; i++) await ranJob(s.provider);
    await stall(s);
    assert.equal(pausedFor(s), 30_000, 'paused 30 s, not 60 s');
  });
});

describe('QuoteBudget: stalls between tiny jobs, two keys taking turns (review s41 D F2)', () => {
  test('hold a slot ever less of the time', () => {
    // one slot: a key not paused runs 4 jobs of 0.5 s, then holds the slot 32 s and lapses; over 2 hours
    let t = 0;
    const b = new QuoteBudget({ windowMs: 30_000, monoClock: () => t });
    const keys = ['did:A', 'did:B'].map((k) => ({ k, tiny: 4 }));
    let stalled = 0;
    let lastHour = 0;
    while (t < 2 * 3600_000) {
      const free = keys.find((x) => !b.paused(x.k));
      if (!free) {
        t += 500;
        continue;
      }
      if (free.tiny > 0) {
        t += 500;
        b.delivered(free.k, 500);
        free.tiny--;
        continue;
      }
      t += 32_000;
      stalled += 32_000;
      if (t > 3600_000) lastHour += 32_000;
      b.lapsed(free.k, 32_000);
      free.tiny = 4;
    }
    // before: 94% of the time, for ever; the pauses now double up to 32 min
    assert.ok(stalled / t < 0.1, `stalls held the slot ${Math.round((stalled / t) * 100)}% of 2 h`);
    assert.ok(lastHour / 3600_000 < 0.05, `stalls held the slot ${Math.round((lastHour / 3600_000) * 100)}% of the second hour`);
  });
});
