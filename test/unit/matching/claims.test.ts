/** The buyer's first-valid-claim rule on open orders (src/matching/claims.ts, c0mpute.claim/1). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CLAIM_REFUSAL, auditFirstClaim, decideClaims, type ClaimInput, type ReceivedClaim } from '../../../src/matching/claims.js';
import { seal, T, type Advert, type Claim, type Opened } from '../../../src/records/index.js';
import { codeOf } from '../../../src/errors.js';
import { NOW, P, advert, job } from '../market/fixtures.js';
import { roster, proof, pooledAdvert, memberKeys, POOL } from '../pools/helpers.js';

const BUYER = P(100);
const J = job(BUYER, { maxPrice: { amount: '2', currency: 'USD' }, requirements: { gpu: { count: 1, vramMiB: 40 * 1024 } } });
const ADS = new Map<string, Opened<Advert>>();
const ad = (n: number, over: Parameters<typeof advert>[1] = {}): Opened<Advert> => {
  const a = advert(P(n), over);
  ADS.set(a.address, a);
  return a;
};
const A1 = ad(1);
const A2 = ad(2);
const A3 = ad(3);
const A4cpu = ad(4, { hardware: { gpus: undefined } }); // no GPU: ineligible
const A5 = ad(5);

function claim(n: number, a: Opened<Advert>, over: Partial<Claim> & { amount?: string; currency?: string } = {}): Opened<Claim> {
  const { amount, currency, ...rest } = over;
  return seal(T.claim, { job: J.address, advert: a.address, price: { amount: amount ?? '2', currency: currency ?? 'USD' }, issuedAt: NOW - 100, ...rest }, P(n).signer);
}
const rc = (seq: number, c: Opened<Claim> | Uint8Array, receivedAt = NOW): ReceivedClaim => ({ seq, receivedAt, bytes: c instanceof Uint8Array ? c : c.bytes });
const input = (claims: ReceivedClaim[], over: Partial<ClaimInput['order']> = {}): ClaimInput => ({ order: { job: J, ...over }, claims, adverts: (x) => ADS.get(x) });

describe('first valid claim wins', () => {
  it('the first valid claim by arrival wins; later valid claims are refused ORDER_TAKEN', () => {
    const d = decideClaims(input([rc(2, claim(2, A2)), rc(1, claim(1, A1)), rc(3, claim(3, A3, { amount: '1.5' }))]));
    assert.equal(d.winner?.claim.signer, P(1).did);
    assert.equal(d.winner?.seq, 1);
    assert.deepEqual(d.answers.map((a) => [a.seq, a.verdict, a.code]), [[1, 'won', undefined], [2, 'refused', 'ORDER_TAKEN'], [3, 'refused', 'ORDER_TAKEN']]);
    assert.deepEqual(d.considered.map((c) => c.seq), [1]);
  });

  it('invalid earlier claims are skipped, each with its reason; the selection considers them in arrival order', () => {
    const tampered = Uint8Array.from(claim(5, A5).bytes);
    tampered[tampered.length - 1]! ^= 1;
    const otherJob = job(BUYER, { nonce: new Uint8Array([9]) });
    const claims = [
      rc(1, claim(1, A1, { amount: '2.01' })), // over the bid
      rc(2, claim(4, A4cpu)), // ineligible (no GPU)
      rc(3, claim(2, A1)), // cites another provider's advert
      rc(4, claim(3, A3, { currency: 'EUR' })),
      rc(5, tampered),
      rc(6, claim(5, A5, { job: otherJob.address })),
      rc(7, seal(T.claim, { job: J.address, advert: A1.address, price: J.record.maxPrice, issuedAt: NOW - 100 }, BUYER.signer)),
      rc(8, claim(5, A5, { advert: 'sha256:' + 'ab'.repeat(32) })),
      rc(9, claim(2, A2, { issuedAt: J.record.announcedAt - 1 })),
      rc(10, claim(3, A3), J.record.deadline), // received at the deadline
      rc(11, claim(5, A5, { issuedAt: NOW + 60_000 })), // signed in the future beyond skew
      rc(12, claim(3, A3, { amount: '1.99' })), // first valid
      rc(13, claim(3, A3, { amount: '1.99' })), // the very same claim again
      rc(14, claim(1, A1, { amount: '2.02' })), // still refused for its own reason after the winner
      rc(15, claim(2, A2)),
    ];
    const d = decideClaims(input(claims));
    assert.equal(d.winner?.seq, 12);
    assert.deepEqual(
      d.answers.map((a) => a.code ?? 'won'),
      ['CLAIM_PRICE_OVER_BID', 'CLAIM_INELIGIBLE', 'CLAIM_ADVERT_NOT_CLAIMANTS', 'CLAIM_CURRENCY_MISMATCH', 'CLAIM_INVALID', 'CLAIM_WRONG_JOB', 'CLAIM_BY_BUYER', 'CLAIM_ADVERT_UNKNOWN', 'CLAIM_BEFORE_JOB', 'CLAIM_AFTER_DEADLINE', 'CLAIM_FROM_FUTURE', 'won', 'CLAIM_DUPLICATE', 'CLAIM_PRICE_OVER_BID', 'ORDER_TAKEN'],
    );
    assert.equal(d.answers[1]!.cause, 'GPU_NONE');
    assert.equal(d.answers[4]!.cause, 'ENVELOPE_BAD_SIGNATURE');
    // considered: every claim that opened, up to and including the winner, in arrival order, but the one
    // refused CLAIM_ADVERT_UNKNOWN (8: what the buyer held is not a record an auditor can check)
    assert.deepEqual(d.considered.map((c) => c.seq), [1, 2, 3, 4, 6, 7, 9, 10, 11, 12]);
  });

  it('a designated order takes only its provider, at the designated price', () => {
    const order = { designated: P(2).did, bid: { amount: '1.5', currency: 'USD' } };
    const d = decideClaims(input([rc(1, claim(1, A1, { amount: '1' })), rc(2, claim(2, A2, { amount: '2' })), rc(3, claim(2, A2, { amount: '1.5' }))], order));
    assert.deepEqual(d.answers.map((a) => a.code ?? 'won'), [CLAIM_REFUSAL.NOT_DESIGNATED, CLAIM_REFUSAL.OVER_BID, 'won']);
    assert.equal(d.winner?.claim.signer, P(2).did);
  });

  it('no valid claim: no winner, nothing to select', () => {
    const d = decideClaims(input([rc(1, claim(4, A4cpu)), rc(2, claim(1, A1, { amount: '3' }))]));
    assert.equal(d.winner, undefined);
    assert.deepEqual(d.considered, []);
    assert.ok(d.answers.every((a) => a.verdict === 'refused'));
  });

  it('bad input from the caller is a typed error', () => {
    assert.equal(codeOf(() => decideClaims(input([rc(1, claim(1, A1)), rc(1, claim(2, A2))]))), 'CLAIM_SEQ_DUPLICATE');
    assert.equal(codeOf(() => decideClaims(input([], { bid: { amount: '2.5', currency: 'USD' } }))), 'ORDER_BID_INVALID');
    assert.equal(codeOf(() => decideClaims(input([], { bid: { amount: '1', currency: 'EUR' } }))), 'ORDER_BID_INVALID');
  });

  it('property: the winner is the valid claim with the lowest arrival sequence, whatever order the list is in', () => {
    const pool = [claim(1, A1), claim(2, A2), claim(3, A3), claim(1, A1, { amount: '9' }), claim(4, A4cpu), claim(5, A5, { amount: '0.5' }), claim(2, A2, { amount: '2.5' })];
    const valid = new Set([0, 1, 2, 5]);
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 0, max: pool.length - 1 }), { maxLength: pool.length }), fc.uniqueArray(fc.integer({ min: 0, max: 1000 }), { minLength: pool.length, maxLength: pool.length }), (picks, seqs) => {
        const claims = picks.map((p, i) => rc(seqs[i]!, pool[p]!));
        const d = decideClaims(input([...claims].reverse()));
        const expected = claims.filter((_c, i) => valid.has(picks[i]!)).sort((a, b) => a.seq - b.seq)[0];
        assert.equal(d.winner?.seq, expected?.seq);
        assert.deepEqual(d.answers.map((a) => a.seq), claims.map((c) => c.seq).sort((a, b) => a - b));
        assert.equal(d.answers.filter((a) => a.verdict === 'won').length, expected ? 1 : 0);
      }),
      { numRuns: 200 },
    );
  });
});

describe('auditing a first-claim decision', () => {
  const c1 = claim(1, A1, { amount: '3' }); // over the bid
  const c2 = claim(2, A2);
  const c3 = claim(3, A3);
  const considered = [rc(1, c1), rc(2, c2), rc(3, c3)];
  it('passes when the named winner is the first valid claim', () => {
    assert.equal(auditFirstClaim({ ...input(considered), winner: c2.address }).winner?.seq, 2);
  });
  it('catches a buyer that skipped an earlier valid claim, named an invalid one, or named one it did not list', () => {
    assert.equal(codeOf(() => auditFirstClaim({ ...input(considered), winner: c3.address })), 'FIRST_CLAIM_SKIPPED_VALID');
    assert.equal(codeOf(() => auditFirstClaim({ ...input(considered), winner: c1.address })), 'FIRST_CLAIM_WINNER_INVALID');
    assert.equal(codeOf(() => auditFirstClaim({ ...input([rc(1, c1), rc(3, c3)]), winner: c1.address })), 'FIRST_CLAIM_WINNER_INVALID');
    assert.equal(codeOf(() => auditFirstClaim({ ...input(considered), winner: claim(5, A5).address })), 'FIRST_CLAIM_WINNER_NOT_CONSIDERED');
  });
});

describe('the buyer’s reputation floor (CLAIM_REPUTATION_TOO_LOW; docs/matching.md "Whom an order takes")', () => {
  // this node's view: P(1) it signed a /3 against (0.25), P(2) a stranger (0.5), P(3) with a good record
  const view = new Map([
    [P(1).did, 0.25],
    [P(3).did, 0.8],
  ]);
  const scoreOf = (did: string) => view.get(did) ?? 0.5;
  const floored = (claims: ReceivedClaim[], min: number, recorded = false): ClaimInput => ({ ...input(claims), standing: { min, recorded, scoreOf } });

  it('a claimant below the floor is refused, and the next valid claim wins; at the floor (a stranger at 0.5) is taken', () => {
    const d = decideClaims(floored([rc(1, claim(1, A1)), rc(2, claim(2, A2)), rc(3, claim(3, A3))], 0.5));
    assert.deepEqual(d.answers.map((a) => a.code ?? 'won'), [CLAIM_REFUSAL.REPUTATION_TOO_LOW, 'won', 'ORDER_TAKEN']);
    assert.equal(d.winner?.claim.signer, P(2).did);
    assert.match(d.answers[0]!.message, /0\.250.*below the order's floor 0\.5/);
    // buyer-local, as CLAIM_ADVERT_UNKNOWN: not listed in the selection (an auditor cannot recompute this node's view)
    assert.deepEqual(d.considered.map((c) => c.seq), [2]);
  });

  it('policy trusted (`recorded`) takes only a record above a stranger’s: fresh keys are refused', () => {
    const d = decideClaims(floored([rc(1, claim(2, A2)), rc(2, claim(5, A5)), rc(3, claim(1, A1)), rc(4, claim(3, A3))], 0, true));
    assert.deepEqual(d.answers.map((a) => a.code ?? 'won'), [CLAIM_REFUSAL.REPUTATION_TOO_LOW, CLAIM_REFUSAL.REPUTATION_TOO_LOW, CLAIM_REFUSAL.REPUTATION_TOO_LOW, 'won']);
    assert.match(d.answers[0]!.message, /no record above a stranger/);
    assert.deepEqual(d.considered.map((c) => c.seq), [4]);
  });

  it('the other refusals come first; a floor of 0 (or none) takes any claimant, as before', () => {
    const d = decideClaims(floored([rc(1, claim(1, A1, { amount: '3' })), rc(2, claim(1, A1))], 0));
    assert.deepEqual(d.answers.map((a) => a.code ?? 'won'), [CLAIM_REFUSAL.OVER_BID, 'won']);
    assert.equal(decideClaims(input([rc(1, claim(1, A1))])).winner?.seq, 1);
  });

  it('the audit: a selection without the refused claim passes; one listing it would read as a skipped valid claim', () => {
    const low = claim(1, A1);
    const ok = claim(2, A2);
    const d = decideClaims(floored([rc(1, low), rc(2, ok)], 0.5));
    // what the buyer lists (d.considered), an auditor without this node's view recomputes: the winner is first
    const listed = [rc(2, ok)].filter((r) => d.considered.some((c) => c.seq === r.seq));
    assert.equal(auditFirstClaim({ ...input(listed), winner: ok.address }).winner?.seq, 2);
    // listed, the auditor (no floor: it cannot know the buyer's evidence or trust) would call the honest buyer a skipper
    assert.equal(codeOf(() => auditFirstClaim({ ...input([rc(1, low), rc(2, ok)]), winner: ok.address })), 'FIRST_CLAIM_SKIPPED_VALID');
  });

  it('a pooled claim is judged by its pool’s record, which its non-delivery counts against', () => {
    const r = roster();
    const member = memberKeys[0]!;
    const pa = seal(T.advert, { ...pooledAdvert(proof(r, member)), workloads: ['infer.echo'] }, member) as Opened<Advert>;
    const pj = job(BUYER, { workload: 'infer.echo', nonce: new Uint8Array([7]) });
    const pc = seal(T.claim, { job: pj.address, advert: pa.address, price: { amount: '1', currency: 'USD' }, issuedAt: NOW - 100 }, member);
    const asked: string[] = [];
    const d = decideClaims({ order: { job: pj }, claims: [rc(1, pc)], adverts: (x) => (x === pa.address ? pa : undefined), standing: { min: 0.5, recorded: false, scoreOf: (did) => (asked.push(did), did === POOL ? 0.25 : 0.5) } });
    assert.deepEqual(asked, [POOL]);
    assert.equal(d.answers[0]!.code, CLAIM_REFUSAL.REPUTATION_TOO_LOW);
  });
});
