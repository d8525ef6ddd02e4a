/**
 * A re-plan that finds only providers priced above maxPrice is tried again like one that finds no room
 * (docs/matching.md "Batch runs", "Failure and re-planning"). The planner refuses BATCH_MAX_PRICE_BELOW_ASK before
 * BATCH_EXCEEDS_CAPACITY, and `batch run` re-tried only the latter: once the within-price provider was struck off
 * (or its presence lapsed for a moment) and only a dearer one was live, the waiting lines failed at once ("could not
 * be re-planned") instead of waiting the usual re-plan retries for a within-price provider to come back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planBatch, type Batch } from '../../../src/matching/batch-plan.js';
import { runBatch, type BatchRunPorts, type LineOutcome, type RunLine } from '../../../src/matching/batch-run.js';
import { seal, T } from '../../../src/records/index.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { NOW, P, advert } from '../market/fixtures.js';

const WL = 'builtin.sha256';
function provider(n: number, price: string): LiveProvider {
  const ad = advert(P(n), { workloads: [WL], prices: [{ workload: WL, unit: 'job', price: { amount: price, currency: 'USD' } }] });
  return { did: P(n).did, presence: seal(T.presence, { workloads: [WL], freeSlots: 2, issuedAt: NOW - 1000, windowMs: 15000 }, P(n).signer), advert: ad, workloads: [WL], freeSlots: 2, liveUntil: NOW + 14000 };
}
const A = provider(1, '0.1'); // within maxPrice; fails its first line and is struck off
const B = provider(2, '0.1'); // within maxPrice; its presence lapsed a moment, back for the next re-plan
const X = provider(3, '1'); // live throughout, above maxPrice
const batch: Batch = { windowMs: 600_000, workloads: [{ workload: WL, lines: 4, units: {}, lineMs: 1000, maxPrice: { amount: '0.5', currency: 'USD' } }] };
const lines: RunLine[] = [1, 2, 3, 4].map((n) => ({ id: `${WL}-${n}`, workload: WL }));

test('a re-plan refused BATCH_MAX_PRICE_BELOW_ASK is tried again, and its lines run on the within-price provider that comes back', async () => {
  let plans = 0;
  const plan: BatchRunPorts['plan'] = async (b, exclude) => {
    // the first plan sees A and X; the first re-plan only X (B's presence lapsed); later ones B too
    const live = plans++ === 0 ? [A, X] : plans === 2 ? [X] : [B, X];
    return planBatch({ batch: b, live: live.filter((p) => !exclude.includes(p.did)), now: NOW, reputation: () => 1 });
  };
  const run = async (l: RunLine, prov: string): Promise<LineOutcome> => {
    await new Promise<void>((r) => setImmediate(r));
    if (prov === A.did) return { status: 'failed', job: `job-${l.id}`, detail: 'provider unreachable or gone' };
    return { status: 'completed', output: new Uint8Array([1]), job: `job-${l.id}`, receipt: { address: `rc-${l.id}`, job: `job-${l.id}`, status: 'completed', provider: prov, price: { amount: '0.1', currency: 'USD' } } };
  };
  const s = await runBatch({ batch, lines, concurrency: 1, replanRetryMs: 1 }, { plan, runLine: run, slots: () => 1, deliver: async () => {}, clock: () => Date.now(), onEvent: () => {} });
  assert.ok(s.replans.some((r) => r.refused?.startsWith('BATCH_MAX_PRICE_BELOW_ASK')), 'the first re-plan was refused for price');
  assert.equal(s.failed, 0, `lines failed: ${s.perLine.filter((l) => l.status === 'failed').map((l) => l.detail).join('; ')}`);
  assert.equal(s.done, 4);
  assert.ok(s.perLine.every((l) => l.provider === B.did));
});
