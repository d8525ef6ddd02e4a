/**
 * Open orders off the network (docs/matching.md "Open orders, claims and
 * leases"): the first-claim selection and its audit, the claim-refusal
 * record, the open-order set, and the provider's claimer over leases (fakes:
 * a fake clock, a fake network that records claims).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decideClaims, type ReceivedClaim } from '../../../src/matching/claims.js';
import { auditFirstClaimSelection, signClaimRefusal, signFirstClaimSelection } from '../../../src/matching/first-claim.js';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { leasePeriod } from '../../../src/matching/leases.js';
import { MATCH_LEASE_MS, MATCH_LIVENESS_MS, type LiveProvider } from '../../../src/matching/types.js';
import { auditSelection, RecordSet } from '../../../src/market/index.js';
import { open, seal, T, type Advert, type Claim, type Job, type Opened, type Selection } from '../../../src/records/index.js';
import { C0Error, codeOf } from '../../../src/errors.js';
import { Claimer } from '../../../src/roles/provider/claimer.js';
import type { ClaimOutcome } from '../../../src/roles/claim-protocol.js';
import { NOW, P, advert, job } from '../market/fixtures.js';
import { silentLogger } from '../../../src/util/log.js';

const BUYER = P(100);
const W = 'infer.llm';
const prices = [{ workload: W, unit: 'job', price: { amount: '0.5', currency: 'USD' } }];
const ADS = new Map<number, Opened<Advert>>();
const ad = (n: number): Opened<Advert> => {
  let a = ADS.get(n);
  if (!a) ADS.set(n, (a = advert(P(n), { prices })));
  return a;
};
const order = (i: number, over: Partial<Job> = {}): Opened<Job> => job(BUYER, { nonce: new Uint8Array([i]), order: {}, ...over });
const claimOf = (n: number, j: Opened<Job>, amount = '0.5'): Opened<Claim> => seal(T.claim, { job: j.address, advert: ad(n).address, price: { amount, currency: 'USD' }, issuedAt: NOW - 100 }, P(n).signer);
const rc = (seq: number, c: Opened<Claim>): ReceivedClaim => ({ seq, receivedAt: NOW, bytes: c.bytes });

function live(n: number, freeSlots: number, issuedAt = NOW - 1_000): LiveProvider {
  const presence = seal(T.presence, { workloads: [W], freeSlots, issuedAt, windowMs: MATCH_LIVENESS_MS }, P(n).signer);
  return { did: P(n).did, presence, advert: ad(n), workloads: [W], freeSlots, liveUntil: issuedAt + MATCH_LIVENESS_MS };
}

describe('the first-claim selection and its audit', () => {
  const J = order(1);
  const late = claimOf(1, J, '0.9'); // valid
  const over = claimOf(2, J, '1.5'); // over the bid (maxPrice 1)
  const first = claimOf(3, J, '0.5'); // valid
  const adverts = (a: string) => [...ADS.values()].find((x) => x.address === a);
  const decide = (claims: ReceivedClaim[]) => decideClaims({ order: { job: J }, claims, adverts });

  it('lists every claim up to the winner in arrival order, and an audit from the records reproduces it', () => {
    const d = decide([rc(1, over), rc(2, first), rc(3, late)]);
    const sel = signFirstClaimSelection(J, d, () => NOW, NOW, BUYER.signer);
    const s = open(sel.bytes, T.selection).record;
    assert.equal(s.policy, 'first-claim');
    assert.equal(s.winner, first.address);
    assert.deepEqual(s.arrivals!.map((a) => [a.seq, a.claim]), [[1, over.address], [2, first.address]]);
    const rs = new RecordSet([J, over, first, late, ad(1), ad(2), ad(3)]);
    const a = auditSelection({ selection: sel, records: rs });
    assert.equal(a.reproduces, true, JSON.stringify(a.differences));
    assert.equal(a.recomputedWinner, first.address);
  });

  it('a selection that skips an earlier valid claim does not reproduce (FIRST_CLAIM_SKIPPED_VALID)', () => {
    // The buyer lists `first` (valid, arrival 1) but names `late` (arrival 2) the winner.
    const sel = seal(T.selection, { job: J.address, buyer: BUYER.did, policy: 'first-claim', winner: late.address, considered: [{ provider: P(1).did, offer: late.address }, { provider: P(3).did, offer: first.address }].sort((x, y) => (x.provider < y.provider ? -1 : 1)), decidedAt: NOW, arrivals: [{ seq: 1, receivedAt: NOW, provider: P(3).did, claim: first.address }, { seq: 2, receivedAt: NOW, provider: P(1).did, claim: late.address }] } as Selection, BUYER.signer);
    const a = auditFirstClaimSelection(sel, (x) => new RecordSet([J, first, late, ad(1), ad(3)]).get(x));
    assert.deepEqual(a.differences.map((x) => x.code), ['FIRST_CLAIM_SKIPPED_VALID']);
  });

  it('a missing claim, a selection by another signer, and a job that is no order are differences', () => {
    const d = decide([rc(1, first)]);
    const bySomeoneElse = signFirstClaimSelection(J, d, () => NOW, NOW, P(7).signer);
    assert.ok(auditFirstClaimSelection(bySomeoneElse, (x) => new RecordSet([J, first, ad(3)]).get(x)).differences.some((x) => x.code === 'AUDIT_DECIDER_NOT_BUYER'));
    const sel = signFirstClaimSelection(J, d, () => NOW, NOW, BUYER.signer);
    assert.deepEqual(auditFirstClaimSelection(sel, (x) => new RecordSet([J, ad(3)]).get(x)).differences.map((x) => x.code), ['AUDIT_MISSING_RECORD']);
    const auction = job(BUYER, { nonce: new Uint8Array([1]) });
    const c = seal(T.claim, { job: auction.address, advert: ad(3).address, price: { amount: '0.5', currency: 'USD' }, issuedAt: NOW - 100 }, P(3).signer);
    const s2 = signFirstClaimSelection(auction, decideClaims({ order: { job: auction }, claims: [rc(1, c)], adverts }), () => NOW, NOW, BUYER.signer);
    assert.ok(auditFirstClaimSelection(s2, (x) => new RecordSet([auction, c, ad(3)]).get(x)).differences.some((x) => x.code === 'AUDIT_NOT_AN_ORDER'));
  });

  it('arrivals go with first-claim and only with it; they end with the winner', () => {
    const base = { job: J.address, buyer: BUYER.did, winner: first.address, considered: [{ provider: P(3).did, offer: first.address }], decidedAt: NOW };
    assert.equal(codeOf(() => seal(T.selection, { ...base, policy: 'first-claim' } as Selection, BUYER.signer)), 'SELECTION_ARRIVALS_INVALID');
    assert.equal(codeOf(() => seal(T.selection, { ...base, policy: 'cheapest', arrivals: [{ seq: 1, receivedAt: NOW, provider: P(3).did, claim: first.address }] } as Selection, BUYER.signer)), 'SELECTION_ARRIVALS_INVALID');
    assert.equal(codeOf(() => seal(T.selection, { ...base, policy: 'first-claim', arrivals: [{ seq: 2, receivedAt: NOW, provider: P(3).did, claim: first.address }, { seq: 1, receivedAt: NOW, provider: P(1).did, claim: late.address }] } as Selection, BUYER.signer)), 'SELECTION_ARRIVALS_INVALID');
  });
});

describe('the claim refusal record', () => {
  const J = order(2);
  const c = claimOf(1, J);
  it('ORDER_TAKEN cites the winner; other codes do not; the buyer does not refuse itself', () => {
    const r = signClaimRefusal(J, { address: c.address, provider: P(1).did }, 'ORDER_TAKEN', claimOf(2, J).address, NOW, BUYER.signer);
    assert.equal(open(r.bytes, T.claimRefusal).record.code, 'ORDER_TAKEN');
    assert.equal(codeOf(() => seal(T.claimRefusal, { job: J.address, claim: c.address, provider: P(1).did, code: 'ORDER_TAKEN', signedAt: NOW }, BUYER.signer)), 'CLAIM_REFUSAL_WINNER');
    assert.equal(codeOf(() => seal(T.claimRefusal, { job: J.address, claim: c.address, provider: P(1).did, code: 'CLAIM_PRICE_OVER_BID', winner: c.address, signedAt: NOW }, BUYER.signer)), 'CLAIM_REFUSAL_WINNER');
    assert.equal(codeOf(() => seal(T.claimRefusal, { job: J.address, claim: c.address, provider: BUYER.did, code: 'CLAIM_BY_BUYER', signedAt: NOW }, BUYER.signer)), 'CLAIM_REFUSAL_SELF');
    assert.equal(codeOf(() => seal(T.claimRefusal, { job: J.address, claim: c.address, provider: P(1).did, code: 'NOT_A_CODE' as never, signedAt: NOW }, BUYER.signer)), 'RECORD_FIELD_INVALID');
  });
});

describe('the open-order set', () => {
  it('keeps orders until decided or past the deadline, never auctions, and counts designated orders', () => {
    const o = new OpenOrders({ maxOrders: 2 });
    assert.equal(o.add(job(BUYER, { nonce: new Uint8Array([50]) }), NOW), false, 'an auction is not an order');
    const a = order(3, { deadline: NOW + 10_000 });
    const b = order(4, { order: { designated: P(5).did } });
    assert.equal(o.add(a, NOW), true);
    assert.equal(o.add(b, NOW), true);
    assert.equal(o.add(a, NOW), false);
    assert.equal(o.designatedTo(P(5).did, NOW), 1);
    o.decided(b.address, NOW);
    assert.equal(o.add(b, NOW), false, 'a decided order is not taken back');
    assert.equal(o.designatedTo(P(5).did, NOW), 0);
    assert.deepEqual(o.open(NOW + 10_000).map((x) => x.job.address), [], 'past its deadline');
    for (let i = 0; i < 4; i++) o.add(order(10 + i), NOW);
    assert.equal(o.size, 2, 'bounded');
  });

  it('leases count only providers that may claim: over-priced or unserving providers hold none', () => {
    const o = new OpenOrders();
    const cheap = order(20, { maxPrice: { amount: '0.4', currency: 'USD' } }); // below every ask (0.5)
    o.add(cheap, NOW);
    assert.equal(o.leases(NOW, [live(1, 2), live(2, 2)]).leases.length, 0);
    const fine = order(21);
    o.add(fine, NOW);
    const v = o.leases(NOW, [live(1, 2), live(2, 2)]);
    assert.deepEqual(v.leases.map((l) => l.order), [fine.address]);
    assert.equal([...o.leasesHeld(NOW, [live(1, 2), live(2, 2)]).values()].reduce((s, n) => s + n, 0), 1);
  });
});

/** A claimer over a fake network: every claim is recorded and answered by `answer`. */
function claimer(n: number, orders: OpenOrders, view: () => LiveProvider[], clock: () => number, o: { free?: number; answer?: (j: Opened<Job>, c: Opened<Claim>) => ClaimOutcome | Error; mode?: 'leased' | 'any' } = {}) {
  const sent: Array<{ job: string; claim: Opened<Claim> }> = [];
  const cl = new Claimer({
    did: P(n).did,
    signer: P(n).signer,
    clock,
    monoClock: clock, // one fake time for both: these tests are not about a step
    log: silentLogger(),
    orders,
    advert: () => ad(n),
    freeSlots: () => o.free ?? 4,
    runs: () => false,
    live: () => view(),
    canRun: () => true,
    send: async (j, c) => {
      sent.push({ job: j.address, claim: c });
      const r = o.answer?.(j, c) ?? new Error('no answer');
      if (r instanceof Error) throw r;
      return r;
    },
    ...(o.mode ? { mode: o.mode } : {}),
  });
  return { cl, sent };
}
const settle = () => new Promise((r) => setTimeout(r, 5));

describe('the provider claimer', () => {
  it('claims exactly the orders leased to it (and none another provider holds); each once', async () => {
    const orders = new OpenOrders();
    const js = Array.from({ length: 6 }, (_, i) => order(30 + i));
    for (const j of js) orders.add(j, NOW);
    const view = () => [live(1, 3), live(2, 3)];
    const leases = orders.leases(NOW, view());
    const a = claimer(1, orders, view, () => NOW);
    const b = claimer(2, orders, view, () => NOW);
    a.cl.tick();
    b.cl.tick();
    await settle();
    const mineA = leases.leases.filter((l) => l.provider === P(1).did).map((l) => l.order).sort();
    const mineB = leases.leases.filter((l) => l.provider === P(2).did).map((l) => l.order).sort();
    assert.deepEqual(a.sent.map((s) => s.job).sort(), mineA);
    assert.deepEqual(b.sent.map((s) => s.job).sort(), mineB);
    assert.equal(new Set([...mineA, ...mineB]).size, mineA.length + mineB.length, 'no order claimed by both');
    assert.equal(mineA.length + mineB.length, 6);
    for (const s of a.sent) assert.equal(s.claim.record.price.amount, '0.5', 'claims at its ask');
    a.cl.tick();
    await settle();
    assert.equal(a.sent.length, mineA.length, 'an order is claimed once');
  });

  it('an expired lease lets another provider take the order', async () => {
    const orders = new OpenOrders();
    const j = order(40);
    orders.add(j, NOW);
    const view = () => [live(1, 1, t - 1000), live(2, 1, t - 1000)];
    let t = NOW;
    const holder = orders.leases(t, view()).byOrder.get(j.address)!.provider;
    const other = holder === P(1).did ? 2 : 1;
    const c = claimer(other, orders, view, () => t);
    c.cl.tick();
    await settle();
    assert.equal(c.sent.length, 0, 'the order is leased to the other provider');
    // The holder never claims; its lease ends with the period and rotates to the next provider.
    t = j.record.announcedAt + MATCH_LEASE_MS * (leasePeriod(j.record.announcedAt, NOW) + 1);
    c.cl.tick();
    await settle();
    assert.deepEqual(c.sent.map((s) => s.job), [j.address]);
  });

  it('claims designated orders only when they name it, counts pending claims in its free slots, and mode any ignores leases', async () => {
    const orders = new OpenOrders();
    const mine = order(50, { order: { designated: P(1).did } });
    const theirs = order(51, { order: { designated: P(2).did } });
    const open1 = order(52);
    const open2 = order(53);
    for (const j of [mine, theirs, open1, open2]) orders.add(j, NOW);
    // No presence at all: no leases, but a designated order is still claimed.
    const c = claimer(1, orders, () => [], () => NOW, { free: 1, mode: 'leased' });
    c.cl.tick();
    await settle();
    assert.deepEqual(c.sent.map((s) => s.job), [mine.address]);
    const anyOrders = new OpenOrders();
    for (const j of [open1, open2, theirs]) anyOrders.add(j, NOW);
    const any = claimer(1, anyOrders, () => [], () => NOW, { free: 1, mode: 'any', answer: () => new Promise(() => {}) as never });
    any.cl.tick();
    await settle();
    any.cl.tick();
    await settle();
    assert.equal(any.sent.length, 1, 'one free slot: one claim until it is answered');
    assert.notEqual(any.sent[0]!.job, theirs.address);
  });
  it('a claim the buyer did not judge (rate-limited) is sent again, the same claim, after a back-off; a judged one is not', async () => {
    const orders = new OpenOrders();
    const j = order(60, { order: { designated: P(1).did } });
    orders.add(j, NOW);
    let t = NOW;
    let limited = 2;
    const c = claimer(1, orders, () => [], () => t, {
      answer: () => (limited-- > 0 ? new C0Error('NET_RATE_LIMITED', 'slow down') : new C0Error('CLAIM_INVALID', 'judged')),
    });
    c.cl.tick();
    await settle();
    assert.equal(c.sent.length, 1);
    c.cl.tick();
    await settle();
    assert.equal(c.sent.length, 1, 'not before the back-off');
    t += 1000;
    c.cl.tick();
    await settle();
    assert.equal(c.sent.length, 2, 'sent again after 1 s');
    t += 1999;
    c.cl.tick();
    await settle();
    assert.equal(c.sent.length, 2, 'the back-off doubles');
    t += 1;
    c.cl.tick();
    await settle();
    assert.equal(c.sent.length, 3);
    assert.equal(new Set(c.sent.map((s) => s.claim.address)).size, 1, 'the same signed claim each time');
    t += 5_000;
    c.cl.tick();
    await settle();
    assert.equal(c.sent.length, 3, 'an error that says the claim was judged ends it');
  });
});
