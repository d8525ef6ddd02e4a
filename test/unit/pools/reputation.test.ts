/**
 * A pool's reputation counts quote accuracy like any provider's (docs/pools.md
 * "Reputation"): a pooled receipt (provider = the pool, signed by the member
 * that coordinated) counts for the pool (before, receiptCounts dropped every
 * pooled receipt) and pairs with that member's offer; an offer by another
 * member does not pair.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import '../../../src/pools/chain.js';
import { deriveReputation, receiptCounts, type Evidence } from '../../../src/reputation/index.js';
import { seal, T, type Opened, type Receipt } from '../../../src/records/index.js';
import { NOW, P, acceptance, advert, job, offer } from '../market/fixtures.js';
import { MEMBERS, POOL, keyOf, proof, roster } from './helpers.js';

const BUYER = P(100);
const r1 = roster();
const [a, b] = MEMBERS as [string, string];
const party = (did: string) => ({ did, signer: keyOf(did) });

function pooled(by: string, quotedBy: string, quoted: number, actual: number) {
  const j = job(BUYER);
  const ad = advert(party(quotedBy) as never);
  const o = offer(party(quotedBy) as never, j, ad, { durationMs: quoted });
  const r: Receipt = {
    job: j.address, offer: o.address, buyer: BUYER.did, provider: POOL, workload: 'infer.llm', status: 'completed', startedAt: NOW, completedAt: NOW + actual,
    inputHash: 'sha256:' + '11'.repeat(32), outputHash: 'sha256:' + '22'.repeat(32), price: o.record.price, energy: { uj: 1000, grade: 'Estimator' }, pool: proof(r1, keyOf(by)),
  };
  const env = seal(T.receipt, r, keyOf(by)) as Opened<Receipt>;
  return { o, r: env, ok: acceptance(BUYER, env, 'accepted') };
}

test('a pooled receipt pairs with its coordinator’s offer for quote accuracy; another member’s offer does not pair', () => {
  const under = pooled(a, a, 10_000, 40_000);
  const f = deriveReputation({ receipts: [under.r], acceptances: [under.ok], offers: [under.o] } as unknown as Evidence, { self: BUYER.did }).get(POOL);
  assert.equal(f.successes, 1);
  assert.equal(f.quotePairs, 1);
  assert.equal(f.underQuoted, 1);
  assert.equal(f.accuracy, (1 + 0.25) / 2);
  const mismatched = pooled(a, b, 10_000, 40_000);
  const g = deriveReputation({ receipts: [mismatched.r], acceptances: [mismatched.ok], offers: [mismatched.o] } as unknown as Evidence, { self: BUYER.did }).get(POOL);
  assert.equal(g.quotePairs, 0);
  // An opened receipt whose signer the pool proof does not cover does not count at all.
  const forged = { ...under.r, signer: b } as Opened<Receipt>;
  assert.equal(receiptCounts(forged), false);
  assert.equal(receiptCounts(under.r), true);
});

test('a pooled receipt counts only under a roster that had not expired, nor been replaced by one without its signer, when the work was offered', () => {
  const DAY = 86_400_000;
  const [, , c] = MEMBERS as [string, string, string];
  const r2 = roster({ seq: 2, issuedAt: NOW + 10 * DAY, members: MEMBERS.filter((d) => d !== c).map((did) => ({ did })) });
  const signed = (by: string, under: Opened<typeof r1.record>, completedAt: number, status: 'completed' | 'failed' = 'failed') => {
    const j = job(BUYER, { nonce: new Uint8Array([completedAt % 251, (completedAt >> 8) & 0xff]) });
    const o = offer(party(by) as never, j, advert(party(by) as never));
    const r: Receipt = {
      job: j.address, offer: o.address, buyer: BUYER.did, provider: POOL, workload: 'infer.llm', status, startedAt: completedAt - 1_000, completedAt,
      inputHash: 'sha256:' + '11'.repeat(32), ...(status === 'completed' ? { outputHash: 'sha256:' + '22'.repeat(32) } : { failure: { code: 'OOM', message: 'x' } }), price: o.record.price, energy: { uj: 1, grade: 'Estimator' }, pool: proof(under, keyOf(by)),
    } as Receipt;
    const env = seal(T.receipt, r, keyOf(by)) as Opened<Receipt>;
    return { r: env, ok: acceptance(BUYER, env, 'accepted', { signedAt: completedAt + 1 }) };
  };
  const figs = (xs: Array<ReturnType<typeof signed>>) =>
    deriveReputation({ receipts: xs.map((x) => x.r), acceptances: xs.map((x) => x.ok), offers: [] } as unknown as Evidence, { self: BUYER.did }).get(POOL);
  // expired: roster seq 1 runs 30 days; a receipt of work offered (its offer not held: started) a year on does not count at all
  const late = signed(c, r1, NOW + 365 * DAY);
  assert.equal(receiptCounts(late.r), false);
  assert.equal(figs([late]).jobs, 0);
  assert.equal(receiptCounts(signed(c, r1, NOW + DAY).r), true);
  // replaced: seq 2 (issued on day 10) drops C; a receipt of C under seq 1 after that does not count once seq 2 is held
  const current = signed(a, r2, NOW + 11 * DAY, 'completed');
  const afterRemoval = signed(c, r1, NOW + 12 * DAY);
  assert.equal(figs([afterRemoval]).failures, 1, 'seq 2 not held: the record alone cannot say');
  const f = figs([current, afterRemoval]);
  assert.deepEqual([f.successes, f.failures, f.jobs], [1, 0, 1]);
  // before seq 2 was issued C was a member: its receipt counts; so does A's under seq 1 after it (A is still listed)
  const before = signed(c, r1, NOW + 5 * DAY);
  const stillListed = signed(a, r1, NOW + 12 * DAY);
  const g = figs([current, before, stillListed]);
  assert.deepEqual([g.successes, g.failures], [1, 2]);
});

test('roster expiry: a job offered before it counts, success or non-delivery /2, even when it ends after; past it the pool is not selected, and neither counts', async () => {
  const { signNonDelivery } = await import('../../../src/reputation/nondelivery.js');
  const { select } = await import('../../../src/market/select.js');
  const { AdvertIndex, REASON } = await import('../../../src/market/eligibility.js');
  const DAY = 86_400_000;
  // roster seq 1 expires at NOW + 10 min; A's pooled advert signed at NOW, live 12 h (gossip took it: the roster was live)
  const rx = roster({ issuedAt: NOW - 30 * DAY + 600_000 });
  const expiry = rx.record.expiresAt;
  const A = party(a);
  const ad = seal(T.advert, { seq: 1, issuedAt: NOW, expiresAt: NOW + 12 * 3600_000, workloads: ['infer.llm'], tier: 'standard', region: 'eu-west', hardware: { cpuCores: 12, memoryMiB: 24576 }, pool: proof(rx, A.signer) }, A.signer);
  let n = 0;
  const work = (offeredAt: number, startedAt: number, completedAt: number) => {
    const j = job(BUYER, { announcedAt: offeredAt - 1_000, deadline: offeredAt + 3600_000, nonce: new Uint8Array([n++, 42]) });
    const o = offer(A as never, j, ad, { issuedAt: offeredAt, startBy: offeredAt + 60_000, expiresAt: offeredAt + 60_000 });
    const r = seal(T.receipt, { job: j.address, offer: o.address, buyer: BUYER.did, provider: POOL, workload: 'infer.llm', status: 'completed', startedAt, completedAt, inputHash: 'sha256:' + '11'.repeat(32), outputHash: 'sha256:' + '22'.repeat(32), price: o.record.price, energy: { uj: 1, grade: 'Estimator' }, pool: proof(rx, A.signer) }, A.signer) as Opened<Receipt>;
    const sel = seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'balanced', winner: o.address, considered: [{ provider: A.did, offer: o.address }], decidedAt: offeredAt + 500 }, BUYER.signer);
    const nd = signNonDelivery({ job: j, selection: sel as never, offer: o, reason: 'timeout', signedAt: completedAt + 1_000, signer: BUYER.signer, advert: ad as never });
    return { j, o, r, ok: acceptance(BUYER, r, 'accepted', { signedAt: completedAt + 1_000 }), nd };
  };
  const view = (xs: Array<ReturnType<typeof work>>, nds: Array<ReturnType<typeof work>> = []) =>
    deriveReputation({ receipts: xs.map((x) => x.r), acceptances: xs.map((x) => x.ok), offers: [...xs, ...nds].map((x) => x.o), nondeliveries: nds.map((x) => x.nd) } as unknown as Evidence, { self: BUYER.did }).get(POOL);
  // offered and started before the expiry, completed after it: the accepted success counts (before: judged at completedAt, it did not)
  const straddling = work(expiry - 120_000, expiry - 60_000, expiry + 600_000);
  assert.deepEqual([view([straddling]).successes, view([straddling]).jobs], [1, 1]);
  // offered just before the expiry, started after it: the offer (held) dates the commitment; without it, the start does
  const offeredBefore = work(expiry - 1_000, expiry + 30_000, expiry + 90_000);
  assert.equal(view([offeredBefore]).successes, 1);
  assert.equal(receiptCounts(offeredBefore.r), false, 'without its offer: judged at its start');
  // and a non-delivery /2 for a job offered before the expiry counts, as before
  assert.equal(view([], [work(expiry - 1_000, expiry, expiry + 30_000)]).nonDeliveries, 1);
  // past the expiry: neither the success nor the /2 counts (before: the success 0, the /2 in full: the pool could only lose)
  const t = NOW + 2 * 3600_000;
  const after = work(t - 1_000, t, t + 30_000);
  const missed = work(t - 1_000, t, t + 40_000);
  const f = view([after], [missed]);
  assert.deepEqual([f.jobs, f.successes, f.nonDeliveries], [0, 0, 0]);
  // and the pool is not selected past it: its advert's roster has expired (ADVERT_ROSTER_EXPIRED)
  const sel = select({ job: after.j, adverts: new AdvertIndex([ad as never]), offers: [after.o], policy: 'balanced', now: t, skewMs: 30_000 });
  assert.equal(sel.ok, false);
  assert.deepEqual(sel.ineligible.flatMap((v) => v.failures.map((x) => x.code)), [REASON.ADVERT_ROSTER_EXPIRED]);
  // before the expiry it is
  const early = work(expiry - 120_000, expiry - 60_000, expiry - 30_000);
  assert.equal(select({ job: early.j, adverts: new AdvertIndex([ad as never]), offers: [early.o], policy: 'balanced', now: expiry - 90_000, skewMs: 30_000 }).ok, true);
});
