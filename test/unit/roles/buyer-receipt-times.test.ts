/**
 * A receipt's times must be possible (docs/node.md "Buyer"): not after the buyer's clock beyond the clock-skew window
 * (evidence counts as of its completedAt, so a receipt from the future would change the buyer's view, and its
 * audits, only later), and not started before the offer it answers was issued (both times are the provider's clock).
 * Such a receipt is refused like one that does not link: not stored, not countersigned, a non-delivery.
 * Before, the buyer checked no time in a receipt.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { T, type Receipt } from '../../../src/records/index.js';
import { hashHex } from '../../../src/records/address.js';
import { NOW, P, receipt } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(790);
const A = P(791);
const INPUT = new Uint8Array([1, 2, 3, 4]);
const OUTPUT = new Uint8Array([9, 9]);

async function run(times: Partial<Receipt>) {
  const f: ReturnType<typeof buyerOnFakes> = buyerOnFakes(ME, {
    providers: [A],
    policy: 'balanced',
    deps: { skewMs: 30_000 },
    exec: async function* () {
      yield { t: 'accepted', startedAt: NOW };
      yield { t: 'output', data: OUTPUT };
      const r = receipt(A, ME, f.candidate(A)!.offer, { workload: 'infer.llm', inputHash: hashHex(INPUT), outputHash: hashHex(OUTPUT), ...times });
      yield { t: 'receipt', receipt: r.bytes };
    },
  });
  const result = await f.buyer.run(fakeSpec({ input: INPUT, policy: 'balanced' }));
  return { result, nondeliveries: f.nondeliveries(), storedReceipts: f.stored.filter((r) => r.type === T.receipt).length };
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
