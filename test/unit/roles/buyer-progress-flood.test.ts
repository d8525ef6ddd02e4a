/**
 * The selected provider's progress frames (docs/node.md "Buyer"): an honest provider sends at most 10 a second, and
 * the buyer holds it to that. Frames past the rate are coalesced (the latest is passed on before the receipt), each
 * message is cut to 200 characters without splitting a surrogate pair, and a flood is dropped without a non-delivery.
 * Before, every frame became an event whole, so a winner could fill the buyer daemon's memory (the console hub kept
 * every event of the last 50 runs).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buyer, PROGRESS_BURST, PROGRESS_MESSAGE_MAX, type BuyerDeps, type BuyerEvent, type Decision, type JobSpec, type RankedCandidate } from '../../../src/roles/buyer.js';
import { seal, T, type Job, type Opened, type Selection } from '../../../src/records/index.js';
import { NOW, P, advert, offer } from '../market/fixtures.js';

const ME = P(780);
const A = P(781);

async function run(frames: (i: number) => unknown, n: number, clock: () => number) {
  const noop = () => {};
  const log = { info: noop, warn: noop, debug: noop, error: noop, child: () => log };
  const published: string[] = [];
  let cand: RankedCandidate | undefined;
  const deps = {
    signer: ME.signer,
    did: ME.did,
    clock,
    log,
    collectWindowMs: 10,
    enoughOffers: 1,
    defaultPolicy: 'balanced',
    adverts: () => undefined,
    publish: async (kind: string) => void published.push(kind),
    store: async () => {},
    waitForOffers: async () => 1,
    market: {
      decide: async (job: Opened<Job>, _p: unknown, _now: number, excluded?: ReadonlySet<string>) => {
        cand ??= { provider: A.did, offer: offer(A, job, advert(A)), total: 1, scores: {} };
        return { ranked: excluded?.has(A.did) ? [] : [cand], result: {}, market: {} } as unknown as Decision;
      },
      offerCount: () => 1,
      signSelection: (job: Opened<Job>, _d: Decision, w: RankedCandidate, now: number) =>
        seal(T.selection, { job: job.address, buyer: ME.did, policy: 'balanced', winner: w.offer.address, considered: [{ provider: w.provider, offer: w.offer.address }], decidedAt: now }, ME.signer) as Opened<Selection>,
    },
    exec: async function* () {
      yield { t: 'accepted', startedAt: NOW };
      for (let i = 0; i < n; i++) yield frames(i);
    },
  } as unknown as BuyerDeps;
  const spec = { workload: 'infer.llm', maxPrice: { amount: '1', currency: 'USD' }, deadlineMs: 60_000, input: new Uint8Array(4) } as unknown as JobSpec;
  const events: BuyerEvent[] = [];
  const result = await new Buyer(deps).run(spec, (e) => events.push(e));
  const progress = events.filter((e): e is Extract<BuyerEvent, { e: 'progress' }> => e.e === 'progress');
  return { result, progress, nondeliveries: published.filter((k) => k.startsWith('nondelivery')) };
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
