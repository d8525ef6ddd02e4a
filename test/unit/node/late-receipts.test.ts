/**
 * A receipt that reaches the buyer directly (its exec stream broke; src/node/late-receipts.ts) is kept only as the
 * buyer's own evidence: its own job, from the provider it selected, linking as the stream's receipt must. Through the
 * validation pipeline with the overlay's receipt hook: checked on the direct route only.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { seal, T, type Job, type Offer, type Opened, type Receipt, type Selection } from '../../../src/records/index.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { RecordPipeline } from '../../../src/net/gossip-validation.js';
import { recordHooks } from '../../../src/node/record-hooks.js';
import { LATE_RECEIPT_ERR, receiptHook, type OwnReceiptLookups } from '../../../src/node/late-receipts.js';
import { jobsNoOutcome } from '../../../src/cli/commands/node.js';
import { records, provider, buyer, gateway, NOW, PROVIDER, BUYER, GATEWAY } from '../records/fixtures.js';

const clock = fakeClock(NOW + 5_000);
const job = seal(T.job, records.job(), buyer) as Opened<Job>;
const offer = seal(T.offer, { ...records.offer(), job: job.address }, provider) as Opened<Offer>;
const other = seal(T.offer, { ...records.offer(), job: job.address }, gateway) as Opened<Offer>;
const selection = seal(T.selection, { ...records.selection(), job: job.address, winner: offer.address, considered: [{ provider: PROVIDER, offer: offer.address }, { provider: GATEWAY, offer: other.address }] }, buyer) as Opened<Selection>;
const receipt = (r: Partial<Receipt> = {}, signer = provider) => seal(T.receipt, { ...records.receipt(), job: job.address, offer: offer.address, inputHash: job.record.input.hash, ...r }, signer) as Opened<Receipt>;

function setup(o: { selections?: Array<Opened<Selection>> } = {}) {
  const held = new Map<string, Opened>([job, offer, other].map((r) => [r.address, r]));
  const lookups: OwnReceiptLookups = {
    did: BUYER,
    job: async (a) => held.get(a) as Opened<Job> | undefined,
    selections: async (j) => (o.selections ?? [selection]).filter((s) => s.record.job === j),
    offer: async (a) => held.get(a) as Opened<Offer> | undefined,
    advert: () => undefined,
  };
  const base = recordHooks({ advert: () => undefined, offer: (a) => held.get(a) as never, job: (a) => held.get(a) as never, receipt: () => undefined }, { pendingMs: 0 });
  return new RecordPipeline({ clock, metrics: createNetMetrics(new Registry()), log: silentLogger(), hooks: { ...base, receipt: receiptHook(base.receipt, () => lookups) }, floodLimits: { signer: {} } });
}
const verdict = async (p: RecordPipeline, r: Opened<Receipt>, source: 'direct' | 'gossip' = 'direct') => {
  const o = await p.validate('receipt', r.bytes, 'peer', source);
  return `${o.verdict}:${o.reason}`;
};

test('a receipt of this buyer’s own job from the provider it selected is taken directly (completed or failed)', async () => {
  const p = setup();
  assert.equal(await verdict(p, receipt()), 'accept:ok');
  assert.equal(await verdict(p, receipt({ status: 'failed', outputHash: undefined, outputSize: undefined, failure: { code: 'EXEC_BUYER_GONE', message: 'the buyer closed the stream' } } as Partial<Receipt>)), 'accept:ok');
});

test('directly, a receipt that is not this buyer’s own is ignored RECEIPT_NOT_OWN_JOB', async () => {
  const foreignJob = seal(T.job, { ...records.job(), deadline: NOW + 1 }, gateway) as Opened<Job>;
  assert.equal(await verdict(setup(), receipt({ job: foreignJob.address, offer: 'sha256:' + 'd'.repeat(64) })), `ignore:${LATE_RECEIPT_ERR.NOT_OWN_JOB}`, 'a job not held here');
  assert.equal(await verdict(setup(), receipt({ job: foreignJob.address, offer: 'sha256:' + 'd'.repeat(64), buyer: GATEWAY })), `ignore:${LATE_RECEIPT_ERR.NOT_OWN_JOB}`, 'another buyer’s');
  // (one naming this buyer's held job with another buyer is rejected by the base hook: RECEIPT_JOB_MISMATCH)
});

test('directly, a receipt from a provider the buyer did not select, or not linking, is ignored RECEIPT_NOT_SELECTED', async () => {
  assert.equal(await verdict(setup({ selections: [] }), receipt()), `ignore:${LATE_RECEIPT_ERR.NOT_SELECTED}`, 'no selection held');
  // the losing provider's receipt for its own offer: no selection names that offer as winner
  assert.equal(await verdict(setup(), receipt({ offer: other.address, provider: GATEWAY }, gateway)), `ignore:${LATE_RECEIPT_ERR.NOT_SELECTED}`, 'not the winner');
  assert.equal(await verdict(setup(), receipt({ inputHash: 'sha256:' + 'c'.repeat(64) })), `ignore:${LATE_RECEIPT_ERR.NOT_SELECTED}`, 'another input');
  assert.equal(await verdict(setup(), receipt({ startedAt: NOW + 3_600_000, completedAt: NOW + 3_600_001 })), 'ignore:EVIDENCE_FROM_THE_FUTURE', 'dated in the future (the hook every path runs, first)');
  const issued = offer.record.issuedAt;
  assert.equal(await verdict(setup(), receipt({ startedAt: issued - 40_000 })), `ignore:${LATE_RECEIPT_ERR.NOT_SELECTED}`, 'started before the offer beyond the clock-skew window');
});

test('directly, a receipt started before its offer within the clock-skew window is taken, as on the exec stream (a claim is dated by the buyer’s clock)', async () => {
  assert.equal(await verdict(setup(), receipt({ startedAt: offer.record.issuedAt - 5_000 })), 'accept:ok');
});

test('on gossip a receipt of this buyer’s own job is checked as on the direct route: one from a provider it did not select is ignored, not kept as its outcome', async () => {
  assert.equal(await verdict(setup(), receipt(), 'gossip'), 'accept:ok', 'the selected provider’s');
  // any provider that quoted the job can sign a receipt for its own offer: without this it was kept, and `c0mpute jobs`
  // showed it as the job's late receipt ("the provider reports failed after this node’s run of the job ended")
  assert.equal(await verdict(setup(), receipt({ offer: other.address, provider: GATEWAY, status: 'failed', outputHash: undefined, outputSize: undefined, failure: { code: 'EXEC_CRASHED', message: 'x' } } as Partial<Receipt>, gateway), 'gossip'), `ignore:${LATE_RECEIPT_ERR.NOT_SELECTED}`, 'a provider not selected');
  assert.equal(await verdict(setup({ selections: [] }), receipt(), 'gossip'), `ignore:${LATE_RECEIPT_ERR.NOT_SELECTED}`, 'no selection held');
});

test('on gossip a receipt of another buyer’s job is left to the base hook (second-hand evidence)', async () => {
  const foreignJob = seal(T.job, records.job(), gateway) as Opened<Job>;
  const foreignOffer = seal(T.offer, { ...records.offer(), job: foreignJob.address }, provider) as Opened<Offer>;
  assert.equal(await verdict(setup({ selections: [] }), receipt({ job: foreignJob.address, offer: foreignOffer.address, buyer: GATEWAY, inputHash: foreignJob.record.input.hash }), 'gossip'), 'accept:ok');
});

test('`c0mpute jobs` for a job with no receipt: no outcome held, and the attempts it has', () => {
  assert.equal(jobsNoOutcome(undefined), 'no outcome held');
  assert.equal(jobsNoOutcome([]), 'no outcome held (no provider was selected)');
  const line = jobsNoOutcome([{ provider: PROVIDER, reason: 'unreachable' }, { provider: GATEWAY }]);
  assert.match(line, /^no outcome held; selected: /);
  assert.match(line, /non-delivery signed \(unreachable\)/);
  assert.match(line, /no receipt, no non-delivery$/);
});
