/**
 * A claimant cannot make an honest buyer's first-claim selection fail its audit
 * (docs/matching.md "How "first" is audited"): a claim the buyer refused
 * CLAIM_ADVERT_UNKNOWN (it cites an advert the buyer's node did not hold, and
 * did not bring it along) is answered with a signed refusal but not listed in
 * the selection's `arrivals`, so publishing the advert afterwards does not turn
 * it into "a valid earlier claim the buyer skipped". Driven through runOrder
 * (src/roles/buyer-orders.ts) with a fake inbox, and through decideClaims.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideClaims } from '../../../src/matching/claims.js';
import { auditFirstClaimSelection } from '../../../src/matching/first-claim.js';
import { runOrder, type ArrivedClaim, type ClaimAnswerFrame, type OrderPorts } from '../../../src/roles/buyer-orders.js';
import type { BuyerDeps, JobSpec } from '../../../src/roles/buyer.js';
import { open, seal, T, type Advert, type Claim, type Job, type Opened } from '../../../src/records/index.js';
import { silentLogger } from '../../../src/util/log.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const prices = [{ workload: W, unit: 'job', price: { amount: '0.5', currency: 'USD' } }];
const BUYER = P(100);
const spec = { workload: W, order: {} } as unknown as JobSpec;
const claimOf = (n: number, j: Opened<Job>, a: Opened<Advert>, issuedAt = NOW): Opened<Claim> => seal(T.claim, { job: j.address, advert: a.address, price: { amount: '0.5', currency: 'USD' }, issuedAt }, P(n).signer);

/** Run an order over these arrivals (in order); the records the buyer stored, and each claim's answer. */
async function run(j: Opened<Job>, arrivals: Array<Omit<ArrivedClaim, 'answer' | 'from'>>) {
  const stored = new Map<string, Opened>([[j.address, j]]);
  const answers: ClaimAnswerFrame[] = [];
  const queue: ArrivedClaim[] = arrivals.map((a) => ({ ...a, from: '', answer: (f) => void answers.push(f) }));
  const ports: OrderPorts = {
    inbox: () => ({
      next: (signal) => (queue.length ? Promise.resolve(queue.shift()) : new Promise((r) => signal.addEventListener('abort', () => r(undefined)))),
      close: () => {},
    }),
  };
  const d = {
    clock: () => NOW + 60_000,
    log: silentLogger(),
    did: BUYER.did,
    signer: BUYER.signer,
    store: async (r: Opened) => void stored.set(r.address, r),
    publish: async () => {},
    adverts: () => undefined,
  } as unknown as BuyerDeps;
  const result = await runOrder(d, ports, j, spec, () => {}, async () => ({ outcome: 'failed' }));
  return { result, stored, answers };
}

describe('a claim refused CLAIM_ADVERT_UNKNOWN cannot frame the buyer', () => {
  it('the buyer answers it with a signed refusal but does not list it; publishing the advert later leaves the audit clean', async () => {
    const j = job(BUYER, { order: {}, announcedAt: NOW - 1_000 });
    const secret = advert(P(2), { prices }); // signed, kept to itself for now
    const honestAd = advert(P(3), { prices });
    const hostile = claimOf(2, j, secret);
    const honest = claimOf(3, j, honestAd);
    const { result, stored, answers } = await run(j, [
      { seq: 1, receivedAt: NOW, claim: hostile.bytes }, // cites its advert, does not bring it
      { seq: 2, receivedAt: NOW + 5, claim: honest.bytes, advert: honestAd.bytes },
    ]);
    assert.deepEqual(result.claims!.map((c) => [c.seq, c.verdict, c.code]), [[1, 'refused', 'CLAIM_ADVERT_UNKNOWN'], [2, 'won', undefined]]);
    // The claimant still gets the buyer's signed answer.
    const first = answers[0]!;
    assert.equal(first.t, 'refused');
    assert.equal(first.t === 'refused' && open(first.refusal, T.claimRefusal).record.code, 'CLAIM_ADVERT_UNKNOWN');
    const sel = result.selection!;
    assert.equal(sel.record.winner, honest.address);
    const audit = (recs: Map<string, Opened>) => auditFirstClaimSelection(sel, (a) => recs.get(a)).differences.map((x) => x.code);
    // The claimant publishes its advert (and its claim) afterwards: the audit is still clean (it was
    // FIRST_CLAIM_SKIPPED_VALID when the selection listed the refused claim).
    assert.deepEqual(audit(new Map([...stored, [secret.address, secret], [hostile.address, hostile]])), []);
    assert.deepEqual(audit(stored), []);
    assert.deepEqual(sel.record.arrivals!.map((a) => [a.seq, a.claim]), [[2, honest.address]]);
    assert.deepEqual(sel.record.considered.map((c) => c.offer), [honest.address]);
  });

  it('decideClaims leaves it out of `considered` (what a selection lists); other refusals stay listed', () => {
    const j = job(BUYER, { order: {}, announcedAt: NOW - 1_000 });
    const ads = [advert(P(2), { prices }), advert(P(3), { prices }), advert(P(4), { prices })];
    const unknown = claimOf(2, j, ads[0]!);
    const over = seal(T.claim, { job: j.address, advert: ads[1]!.address, price: { amount: '1.5', currency: 'USD' }, issuedAt: NOW }, P(3).signer);
    const win = claimOf(4, j, ads[2]!);
    const known = new Map([ads[1]!, ads[2]!].map((a) => [a.address, a]));
    const d = decideClaims({ order: { job: j }, claims: [unknown, over, win].map((c, i) => ({ seq: i + 1, receivedAt: NOW, bytes: c.bytes })), adverts: (a) => known.get(a) });
    assert.deepEqual(d.answers.map((a) => a.code ?? a.verdict), ['CLAIM_ADVERT_UNKNOWN', 'CLAIM_PRICE_OVER_BID', 'won']);
    assert.deepEqual(d.considered.map((c) => [c.seq, c.claim]), [[2, over.address], [3, win.address]]);
  });
});

describe('a winning claim the buyer refused at an earlier arrival is listed where it won', () => {
  // The buyer judges each arrival alone, so the same claim sent again can pass a time-bound check it failed the
  // first time: here CLAIM_FROM_FUTURE (signed 60 s ahead of its first arrival, within the skew window of its second).
  const j = job(BUYER, { order: {}, announcedAt: NOW - 1_000 });
  const ad2 = advert(P(2), { prices });
  const early = claimOf(2, j, ad2, NOW + 60_000);

  it('alone: the selection lists its winning arrival, and the audit reproduces the winner', async () => {
    const { result, stored } = await run(j, [
      { seq: 1, receivedAt: NOW, claim: early.bytes, advert: ad2.bytes },
      { seq: 2, receivedAt: NOW + 40_000, claim: early.bytes, advert: ad2.bytes },
    ]);
    assert.deepEqual(result.claims!.map((c) => [c.seq, c.verdict, c.code]), [[1, 'refused', 'CLAIM_FROM_FUTURE'], [2, 'won', undefined]]);
    const sel = result.selection!;
    const a = auditFirstClaimSelection(sel, (x) => stored.get(x));
    assert.deepEqual(a.differences.map((x) => x.code), []); // was FIRST_CLAIM_WINNER_INVALID (judged at its first arrival)
    assert.equal(a.recomputedWinner, early.address);
    assert.deepEqual(sel.record.arrivals!.map((x) => [x.seq, x.receivedAt, x.claim]), [[2, NOW + 40_000, early.address]]);
  });

  it('with another refused claim between: the run still signs its selection', async () => {
    const ad3 = advert(P(3), { prices });
    const over = seal(T.claim, { job: j.address, advert: ad3.address, price: { amount: '1.5', currency: 'USD' }, issuedAt: NOW }, P(3).signer);
    const { result, stored } = await run(j, [
      { seq: 1, receivedAt: NOW, claim: early.bytes, advert: ad2.bytes },
      { seq: 2, receivedAt: NOW + 1, claim: over.bytes, advert: ad3.bytes },
      { seq: 3, receivedAt: NOW + 40_000, claim: early.bytes, advert: ad2.bytes },
    ]); // threw SELECTION_ARRIVALS_INVALID ("the last arrival is the winner") before
    const sel = result.selection!;
    assert.equal(sel.record.winner, early.address);
    assert.deepEqual(sel.record.arrivals!.map((x) => [x.seq, x.claim]), [[2, over.address], [3, early.address]]);
    assert.deepEqual(auditFirstClaimSelection(sel, (x) => stored.get(x)).differences, []);
  });
});
