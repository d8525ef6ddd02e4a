/**
 * A receipt's times must be possible (docs/node.md "Buyer"): not after the buyer's clock beyond the clock-skew window
 * (evidence counts as of its completedAt, so a receipt from the future would change the buyer's view, and its
 * audits, only later), and not started before the offer it answers was issued (both times are the provider's clock).
 * Such a receipt is refused like one that does not link: not stored, not countersigned, a non-delivery.
 * Before, the buyer checked no time in a receipt.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buyer, type BuyerDeps, type Decision, type JobSpec, type RankedCandidate } from '../../../src/roles/buyer.js';
import { seal, T, type Job, type Opened, type Receipt, type Selection } from '../../../src/records/index.js';
import { hashHex } from '../../../src/records/address.js';
import { NOW, P, advert, offer, receipt } from '../market/fixtures.js';

const ME = P(790);
const A = P(791);
const INPUT = new Uint8Array([1, 2, 3, 4]);
const OUTPUT = new Uint8Array([9, 9]);

async function run(times: Partial<Receipt>) {
  const noop = () => {};
  const log = { info: noop, warn: noop, debug: noop, error: noop, child: () => log };
  const published: string[] = [];
  const stored: string[] = [];
  let cand: RankedCandidate | undefined;
  const deps = {
    signer: ME.signer,
    did: ME.did,
    clock: () => NOW,
    log,
    collectWindowMs: 10,
    enoughOffers: 1,
    defaultPolicy: 'balanced',
    skewMs: 30_000,
    adverts: () => undefined,
    publish: async (kind: string) => void published.push(kind),
    store: async (r: Opened) => void stored.push(r.type),
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
      yield { t: 'output', data: OUTPUT };
      const r = receipt(A, ME, cand!.offer, { workload: 'infer.llm', inputHash: hashHex(INPUT), outputHash: hashHex(OUTPUT), ...times });
      yield { t: 'receipt', receipt: r.bytes };
    },
  } as unknown as BuyerDeps;
  const spec = { workload: 'infer.llm', maxPrice: { amount: '1', currency: 'USD' }, deadlineMs: 60_000, input: INPUT } as unknown as JobSpec;
  const result = await new Buyer(deps).run(spec);
  return { result, nondeliveries: published.filter((k) => k.startsWith('nondelivery')), storedReceipts: stored.filter((t) => t === T.receipt).length };
}

test('a receipt completed within the clock-skew window of now is taken', async () => {
  const r = await run({ startedAt: NOW, completedAt: NOW + 20_000 });
  assert.equal(r.result.status, 'completed', JSON.stringify(r.result.attempts));
  assert.equal(r.storedReceipts, 1);
});

test('a receipt started before its offer was issued, within the clock-skew window, is taken (a claim is dated by the buyer’s clock)', async () => {
  // an open order's claim is dated max(provider's now, the job's announcedAt): a provider 5 s behind starts "before" it
  const r = await run({ startedAt: NOW - 5_500, completedAt: NOW - 5_000 });
  assert.equal(r.result.status, 'completed', JSON.stringify(r.result.attempts));
  assert.equal(r.storedReceipts, 1);
});

test('a receipt dated after now beyond the clock-skew window, or started before its offer beyond it, is refused with a non-delivery', async () => {
  for (const times of [
    { startedAt: NOW, completedAt: NOW + 31_000 },
    { startedAt: NOW + 40_000, completedAt: NOW + 45_000 },
    { startedAt: NOW - 40_000, completedAt: NOW - 5_000 }, // the fixture's offer was issued at NOW - 500; the window is 30 s
  ]) {
    const r = await run(times);
    assert.equal(r.result.status, 'failed', JSON.stringify(times));
    assert.equal(r.result.attempts[0]!.outcome, 'receipt dated impossibly');
    assert.equal(r.nondeliveries.length, 1);
    assert.equal(r.storedReceipts, 0, 'not kept as evidence');
  }
});
