/**
 * The selected provider's progress frames (docs/node.md "Buyer"): an honest provider sends at most 10 a second, and
 * the buyer holds it to that. Frames past the rate are coalesced (the latest is passed on before the receipt), each
 * message is cut to 200 characters without splitting a surrogate pair, and a flood is dropped without a non-delivery.
 * Before, every frame became an event whole, so a winner could fill the buyer daemon's memory (the console hub kept
 * every event of the last 50 runs).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PROGRESS_BURST, PROGRESS_MESSAGE_MAX, type BuyerEvent } from '../../../src/roles/buyer.js';
import { NOW, P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(780);
const A = P(781);

async function run(frames: (i: number) => unknown, n: number, clock: () => number) {
  const f = buyerOnFakes(ME, {
    providers: [A],
    policy: 'balanced',
    clock,
    exec: async function* () {
      yield { t: 'accepted', startedAt: NOW };
      for (let i = 0; i < n; i++) yield frames(i);
    },
  });
  const events: BuyerEvent[] = [];
  const result = await f.buyer.run(fakeSpec({ policy: 'balanced' }), (e) => events.push(e));
  const progress = events.filter((e): e is Extract<BuyerEvent, { e: 'progress' }> => e.e === 'progress');
  return { result, progress, nondeliveries: f.nondeliveries() };
}

test('a flood of progress frames: a burst, then coalesced; the latest frame is passed on; messages cut; no penalty for the flood itself', async () => {
  const big = 'x'.repeat(100_000);
  const r = await run((i) => ({ t: 'progress', message: `${i} ${big}`, permille: i }), 5000, () => NOW);
  // a still clock: the burst, then the last frame held back, passed on when the stream ends
  assert.equal(r.progress.length, PROGRESS_BURST + 1);
  assert.ok(r.progress.every((e) => e.message.length <= PROGRESS_MESSAGE_MAX), 'every message cut');
  assert.ok(r.progress.at(-1)!.message.startsWith('4999 '), 'the latest frame is the one passed on');
  // the stream ended without a receipt: that (not the flood) is the non-delivery
  assert.equal(r.result.attempts[0]!.outcome, 'stream ended without a receipt');
  assert.equal(r.nondeliveries.length, 1);
});

test('progress at the documented rate is passed on whole; a message is cut without splitting a surrogate pair', async () => {
  let t = NOW;
  const face = '\u{1F600}';
  const r = await run(
    (i) => {
      t += 100;
      return { t: 'progress', message: i === 0 ? 'a'.repeat(PROGRESS_MESSAGE_MAX - 2) + face + 'tail' : `step ${i}`, permille: i === 1 ? 5000 : i };
    },
    50,
    () => t,
  );
  assert.equal(r.progress.length, 50);
  const first = r.progress[0]!.message;
  assert.ok(first.length <= PROGRESS_MESSAGE_MAX);
  assert.ok(!/[\uD800-\uDBFF]$/.test(first.slice(0, -1)), 'no lone high surrogate before the ellipsis');
  assert.equal(first, 'a'.repeat(PROGRESS_MESSAGE_MAX - 2) + '…');
  assert.equal(r.progress[1]!.permille, 1000, 'permille clamped');
  assert.equal(r.progress[2]!.message, 'step 2');
});
