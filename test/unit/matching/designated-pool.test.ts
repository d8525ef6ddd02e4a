/**
 * An order designated to a pool (docs/matching.md "A pooled claim"; QA qaOrd F5): the pool is one provider to buyers
 * (its receipts, reputation and market entry are the pool's), so an order may name its DID, and any member claims it
 * citing its pooled advert of that pool. The buyer's rule (claims.ts) and its audit take such a claim and no other;
 * the candidates engine (the pre-post check) and the leases count the pool's live members as the designated
 * provider; and the check's sentence says when its counts overlap (a provider counted under several reasons).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { seal, T, type Advert, type Claim, type Opened, type Presence } from '../../../src/records/index.js';
import { CLAIM_REFUSAL, auditFirstClaim, decideClaims, type ReceivedClaim } from '../../../src/matching/claims.js';
import { candidates, isDesignated, type CandidateOrder } from '../../../src/matching/candidates.js';
import { leaseRanking } from '../../../src/matching/leases.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { NOW, P, advert, job, type Party } from '../market/fixtures.js';
import { POOL, memberKeys, didOf, proof, roster } from '../pools/helpers.js';

const BUYER = P(100);
const J = job(BUYER, { maxPrice: { amount: '1', currency: 'USD' }, order: { designated: POOL } });
const r = roster();
const member = (i: number): Party => ({ signer: memberKeys[i]!, did: didOf(memberKeys[i]!) });
const prices = [{ workload: 'infer.llm', unit: 'job', price: { amount: '0.5', currency: 'USD' } }];
const BOX = new Uint8Array(32).fill(7);
const pooled = (i: number): Opened<Advert> => advert(member(i), { pool: proof(r, memberKeys[i]!), prices, boxKey: BOX });
const plain = (p: Party): Opened<Advert> => advert(p, { prices, boxKey: BOX });

const ADS = new Map<string, Opened<Advert>>();
const known = (a: Opened<Advert>): Opened<Advert> => (ADS.set(a.address, a), a);
const claim = (p: Party, a: Opened<Advert>): Opened<Claim> => seal(T.claim, { job: J.address, advert: a.address, price: { amount: '1', currency: 'USD' }, issuedAt: NOW - 100 }, p.signer);
const rc = (seq: number, c: Opened<Claim>): ReceivedClaim => ({ seq, receivedAt: NOW, bytes: c.bytes });

function live(p: Party, a: Opened<Advert>, liveUntil = NOW + 14_000): LiveProvider {
  const pres: Presence = { workloads: ['infer.llm'], freeSlots: 2, issuedAt: NOW - 1_000, windowMs: 15_000 };
  return { did: p.did, presence: seal(T.presence, pres, p.signer) as Opened<Presence>, advert: a, workloads: pres.workloads, freeSlots: 2, liveUntil };
}
const order = (o: Partial<CandidateOrder> = {}): CandidateOrder => ({ workload: 'infer.llm', requirements: {}, maxPrice: { amount: '1', currency: 'USD' }, inputSize: 1024, inputSealed: false, timeoutMs: 60_000, designated: POOL, ...o });

describe('an order designated to a pool', () => {
  test('the buyer takes the first claim of a member citing its pooled advert; others are not designated', () => {
    const outsider = P(1);
    const claims = [
      rc(1, claim(outsider, known(plain(outsider)))), // not the pool
      rc(2, claim(member(1), known(plain(member(1))))), // a member, but on its own advert: not for the pool
      rc(3, claim(member(0), known(pooled(0)))), // a member for the pool: first valid
      rc(4, claim(member(2), known(pooled(2)))),
    ];
    const d = decideClaims({ order: { job: J, designated: POOL }, claims, adverts: (a) => ADS.get(a) });
    assert.deepEqual(d.answers.map((a) => a.code ?? 'won'), [CLAIM_REFUSAL.NOT_DESIGNATED, CLAIM_REFUSAL.NOT_DESIGNATED, 'won', CLAIM_REFUSAL.ORDER_TAKEN]);
    assert.equal(d.winner?.claim.signer, member(0).did);
    // an auditor holding the same records agrees
    const audited = auditFirstClaim({ order: { job: J, designated: POOL }, claims: claims.slice(0, 3), adverts: (a) => ADS.get(a), winner: d.winner!.claim.address });
    assert.equal(audited.winner?.claim.address, d.winner!.claim.address);
    // designated to the member itself, its pooled claim still counts (its own DID)
    const own = decideClaims({ order: { job: J, designated: member(0).did }, claims: [rc(1, claim(member(0), pooled(0)))], adverts: (a) => ADS.get(a) });
    assert.equal(own.winner?.seq, 1);
  });

  test('a claimant whose advert is not known is refused CLAIM_ADVERT_UNKNOWN (not listed), never judged not designated', () => {
    const d = decideClaims({ order: { job: J, designated: POOL }, claims: [rc(1, claim(member(1), pooled(1)))], adverts: () => undefined });
    assert.equal(d.answers[0]!.code, CLAIM_REFUSAL.ADVERT_UNKNOWN);
  });

  test('the pre-post check and the leases count the live members as the designated provider', () => {
    const members = [live(member(0), pooled(0)), live(member(1), pooled(1))];
    assert.ok(members.every((p) => isDesignated(p, POOL)));
    assert.equal(isDesignated(live(P(1), plain(P(1))), POOL), false);
    const res = candidates({ order: order(), live: [...members, live(P(1), plain(P(1)))], now: NOW });
    assert.deepEqual(res.candidates.map((c) => c.provider).sort(), members.map((m) => m.did).sort());
    assert.deepEqual(res.rejected.map((x) => x.reasons.map((y) => y.code)), [['NOT_DESIGNATED']]);
    const ranked = leaseRanking({ address: J.address, buyer: BUYER.did, announcedAt: NOW - 1000, workload: 'infer.llm', designated: POOL, openBid: false }, [...members, live(P(1), plain(P(1)))], () => true);
    assert.deepEqual(ranked.map((p) => p.did).sort(), members.map((m) => m.did).sort());
    // no member live: the pool is known (its members are listed), so the sentence does not say it is not
    const none = candidates({ order: order(), live: members.map((p) => ({ ...p, liveUntil: NOW })), now: NOW });
    assert.equal(none.candidates.length, 0);
    assert.doesNotMatch(none.summary, /is not known/);
  });

  test('counts that overlap are said to overlap; a partition reads as one', () => {
    // P(1): not designated and over the price; P(2): not designated only. 3 counts for 2 providers.
    const over = live(P(1), advert(P(1), { prices: [{ workload: 'infer.llm', unit: 'job', price: { amount: '2', currency: 'USD' } }], boxKey: BOX }));
    const res = candidates({ order: order(), live: [over, live(P(2), plain(P(2)))], now: NOW });
    assert.deepEqual(res.counts, { ASK_ABOVE_PRICE: 1, NOT_DESIGNATED: 2 });
    assert.match(res.summary, /^No candidate among 2 providers for infer\.llm at 1 USD: 2 not the designated provider, 1 ask above the order’s price \(a provider may count under several reasons: 2 providers in all\)\. The designated provider did:key:\S+ is not known\.$/);
    const one = candidates({ order: order(), live: [live(P(2), plain(P(2)))], now: NOW });
    assert.doesNotMatch(one.summary, /several reasons/);
  });
});
