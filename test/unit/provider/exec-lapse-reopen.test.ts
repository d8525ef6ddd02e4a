/**
 * exec/1 input lapses, second round (review s41 D round 2):
 * - F1: a buyer whose input lapsed could open exec again at once with the same offer or claim and selection: the pause
 *   stopped new offers and claims only, and a claim has no start-by, so one won claim was re-opened and held again
 *   until the job's deadline. Now a job whose input lapsed here is refused EXEC_JOB_LAPSED, and a buyer in a lapse
 *   pause gets no slot for any of its jobs (EXEC_BUYER_PAUSED) until the pause is over.
 * - F2: the work that forgives a lapse is the job's whole slot time (its input's upload included), and each lapse
 *   owes four times its own hold: one long hold no longer makes every short one after it owe as much.
 * - F3: the node's own byte budget refusing a chunk of an input coming at the minimum rate is not the buyer's lapse;
 *   a stall that ends in one still is.
 * - heldMs in the lapse's log line is whole milliseconds.
 * Fakes only: an ExecIO the test ends (lapse-rig heldIO), fake clocks. The reviewer's reexec-after-lapse.mjs,
 * forgive-model.mjs and lapse-provider-budget.mjs as tests.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { Provider } from '../../../src/roles/provider/provider.js';
import { QuoteBudget } from '../../../src/roles/provider/quote-budget.js';
import { MiB, NOW, buyerDid, buyerPeer, claimed, heldIO, lapseProvider, selected, streamedJob } from './lapse-rig.js';

const lapseLines = (s: ReturnType<typeof lapseProvider>) => s.lines.filter((l) => l.code === 'EXEC_INPUT_LAPSED');
const deadline = () => new C0Error('NET_DEADLINE', 'stream passed its input deadline');

/** Open exec with `header` and, once the slot is held (`ready`), let it lapse after `holdMs`; the refusals it got instead. */
async function holdAndLapse(s: ReturnType<typeof lapseProvider>, header: unknown, holdMs: number): Promise<string[]> {
  const h = heldIO([header], buyerPeer);
  const served = s.provider.handleExec(h.io).then(
    () => undefined,
    (e: unknown) => e,
  );
  await Promise.race([h.waiting, served]);
  if (h.refusals().length) return h.refusals();
  s.mono.advance(holdMs);
  s.clock.advance(holdMs);
  h.end(deadline());
  await served;
  return h.refusals();
}

/** Wait out the buyer's pause (the fake clocks stepped a second at a time); how long it was, ms. */
function waitPause(s: ReturnType<typeof lapseProvider>): number {
  let ms = 0;
  while (s.provider.budget.paused(buyerDid)) {
    s.mono.advance(1_000);
    s.clock.advance(1_000);
    ms += 1_000;
  }
  return ms;
}

describe('Provider: a job whose input lapsed is not opened again (review s41 D round 2 F1)', () => {
  const live: Provider[] = [];
  after(async () => {
    for (const p of live) await p.stop();
  });

  test('a won claim (no start-by) is held once, not again and again until the job’s deadline', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    const { header } = claimed(s.signer, MiB);
    let holds = 0;
    let refused: string[] = [];
    for (let i = 0; i < 10; i++) {
      refused = await holdAndLapse(s, header, 38_000);
      if (refused.length) break;
      holds++;
      // straight back, and after the pause too: neither opens it again
      if (i % 2) waitPause(s);
      else {
        s.mono.advance(1);
        s.clock.advance(1);
      }
    }
    // before: 10 holds of 38 s, the slot held all the time
    assert.equal(holds, 1);
    assert.deepEqual(refused, ['EXEC_JOB_LAPSED']);
    assert.equal(s.provider.running, 0);
    assert.equal(lapseLines(s).length, 1);
  });

  test('an auction’s offer whose input lapsed is refused within its start-by', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    const { header } = await selected(s.provider, MiB);
    assert.deepEqual(await holdAndLapse(s, header, 3_000), []);
    // at once, well before the offer's start-by (30 s): before, it was opened again and held again
    assert.deepEqual(await holdAndLapse(s, header, 3_000), ['EXEC_JOB_LAPSED']);
    assert.equal(lapseLines(s).length, 1);
    assert.deepEqual(s.struck, [], 'not an abuse strike: the buyer may have retried');
  });

  test('a buyer in a lapse pause gets no slot for another job it won; after the pause it does', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    const other = claimed(s.signer, 100);
    const { header } = claimed(s.signer, MiB);
    assert.deepEqual(await holdAndLapse(s, header, 38_000), []);
    const h = heldIO([{ ...other.header, input: new Uint8Array(100) }, undefined], buyerPeer);
    await s.provider.handleExec(h.io);
    // before: it took the slot (the pause stopped new offers and claims only)
    assert.deepEqual(h.refusals(), ['EXEC_BUYER_PAUSED']);
    assert.equal(s.provider.running, 0);
    waitPause(s);
    const again = heldIO([{ ...other.header, input: new Uint8Array(100) }, undefined], buyerPeer);
    await s.provider.handleExec(again.io);
    assert.ok(again.out.some((f) => f.t === 'receipt'), 'it runs once the pause is over');
  });

  test('a quick give-up (within the grace) is no lapse: the same job may be opened again', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    const { header } = await selected(s.provider, 100);
    const h = heldIO([header], buyerPeer);
    const served = s.provider.handleExec(h.io);
    await h.waiting;
    s.mono.advance(500);
    h.end(new C0Error('NET_STREAM_FAILED', 'the caller reset the stream'));
    await assert.rejects(served);
    const again = heldIO([{ ...header, input: new Uint8Array(100) }, undefined], buyerPeer);
    await s.provider.handleExec(again.io);
    assert.ok(again.out.some((f) => f.t === 'receipt'));
  });
});

describe('Provider: the work that forgives a lapse is the job’s slot time, its upload included (review s41 D round 2 F2)', () => {
  const live: Provider[] = [];
  after(async () => {
    for (const p of live) await p.stop();
  });

  test('a buyer on a poor link: big inputs and short runs forgive a 60 s drop', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    // the link drops 60 s into an upload
    const { header } = await selected(s.provider, 16 * MiB);
    await holdAndLapse(s, header, 60_000);
    assert.equal(waitPause(s), 30_000);
    // three jobs: 4 MiB each uploaded over 82 s, run 2 s: 252 s of slot time, past four times the 60 s held
    s.work.ms = 2_000;
    for (let i = 0; i < 3; i++) await streamedJob(s.provider, s.mono, s.clock, 4 * MiB, 82_000);
    await holdAndLapse(s, (await selected(s.provider, 16 * MiB)).header, 60_000);
    // before: only the 6 s of runs counted, and the next drop cost 60 s
    assert.equal(waitPause(s), 30_000);
  });
});

describe('QuoteBudget: each lapse owes four times its own hold (review s41 D round 2 F2)', () => {
  test('one long hold does not make the short ones after it owe as much', () => {
    let t = 0;
    const b = new QuoteBudget({ windowMs: 30_000, monoClock: () => t });
    const wait = () => {
      while (b.paused('did:x')) t += 1_000;
    };
    const pauses = [b.lapsed('did:x', 150_000)];
    wait();
    for (let i = 0; i < 4; i++) {
      t += 3_000;
      pauses.push(b.lapsed('did:x', 3_000));
      wait();
      // four times the 3 s blip, each time
      b.delivered('did:x', 48_000);
    }
    // before: 30, 60, 120, 240, 480 s (every lapse owed four times the longest hold, 600 s)
    assert.deepEqual(pauses, [30_000, 60_000, 60_000, 60_000, 60_000]);
    // the long hold's 600 s, paid: 30 s again
    b.delivered('did:x', 600_000);
    t += 3_000;
    assert.equal(b.lapsed('did:x', 3_000), 30_000);
  });

  test('a key that stalls as long as its work lasts still sees its pauses double', () => {
    let t = 0;
    const b = new QuoteBudget({ windowMs: 30_000, monoClock: () => t });
    const pauses: number[] = [];
    for (let i = 0; i < 4; i++) {
      t += 32_000;
      pauses.push(b.lapsed('did:h', 32_000));
      while (b.paused('did:h')) t += 1_000;
      b.delivered('did:h', 32_000);
    }
    assert.deepEqual(pauses, [30_000, 60_000, 120_000, 240_000]);
  });
});

describe('Provider: the node’s own byte budget refusing a chunk is not the buyer’s lapse (review s41 D round 2 F3)', () => {
  const live: Provider[] = [];
  after(async () => {
    for (const p of live) await p.stop();
  });

  const full = () => new C0Error('NET_BUFFER_LIMIT', 'this node holds 100663296 bytes of request data; 262144 more asked', { detail: { scope: 'total' } });

  test('an input coming at twice the minimum rate, refused a chunk by the node’s budget: no lapse, no pause', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    const h = heldIO([(await selected(s.provider, 4 * MiB)).header], buyerPeer);
    const served = s.provider.handleExec(h.io);
    await h.waiting;
    for (let i = 0; i < 3; i++) {
      s.mono.advance(1_000);
      h.send({ t: 'input', data: new Uint8Array(256 * 1024) });
      await new Promise((r) => setImmediate(r));
    }
    s.mono.advance(1_000);
    h.end(full());
    await assert.rejects(served, (e: unknown) => (e as C0Error).code === 'NET_BUFFER_LIMIT');
    assert.equal(s.provider.running, 0);
    // before: a lapse (ended 'caller'), the buyer paused 30 s
    assert.equal(lapseLines(s).length, 0);
    assert.equal(s.provider.budget.check(buyerDid, NOW), undefined);
  });

  test('a stall that ends in a budget refusal is still a lapse', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    const h = heldIO([(await selected(s.provider, 4 * MiB)).header], buyerPeer);
    const served = s.provider.handleExec(h.io);
    await h.waiting;
    s.mono.advance(31_000);
    h.end(full());
    await assert.rejects(served, (e: unknown) => (e as C0Error).code === 'NET_BUFFER_LIMIT');
    assert.equal(lapseLines(s).length, 1);
    assert.equal(s.provider.budget.check(buyerDid, NOW), 'buyer-lapsed');
  });
});

describe('Provider: the lapse line’s heldMs is whole milliseconds', () => {
  const live: Provider[] = [];
  after(async () => {
    for (const p of live) await p.stop();
  });

  test('a monotonic clock with fractions', async () => {
    const s = lapseProvider(live);
    await s.provider.start();
    s.mono.advance(0.123);
    await holdAndLapse(s, (await selected(s.provider, MiB)).header, 31_000.456);
    const line = lapseLines(s)[0];
    assert.equal(line?.heldMs, 31_000);
  });
});
