/**
 * An open order's non-delivery, `c0mpute.nondelivery/3` (docs/matching.md "Open orders, claims and leases";
 * src/reputation/nondelivery.ts). Before, a first-claim winner that never delivered and never signed anything
 * (killed, not stalled) was charged nowhere: /1 and /2 prove by an offer, and an order has none. A /3 proves by the
 * buyer's order, its first-claim selection and the winning claim, links from the record alone (each check with its
 * own NONDELIVERY_* code), and counts against the claimant (or the pool its pooled advert stands for) by the weight
 * of its signer, one per (buyer, provider, job), first-hand and second-hand; it gives way to a receipt of the
 * claimant for the job that the buyer countersigned (a stall the provider admitted).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import '../../../src/pools/chain.js';
import { deriveReputation, linkNonDelivery, nonDeliveryProvider, signClaimNonDelivery } from '../../../src/reputation/index.js';
import { EvidenceStore } from '../../../src/reputation/store.js';
import { RecordSet } from '../../../src/market/recordset.js';
import { signFirstClaimSelection } from '../../../src/matching/first-claim.js';
import { open, seal, T, type Advert, type Claim, type ClaimNonDelivery, type Job, type Offer, type Opened, type Selection } from '../../../src/records/index.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import type { C0Error } from '../../../src/errors.js';
import { NOW, P, acceptance, advert, job, receipt } from '../market/fixtures.js';
import { MEMBERS, POOL, keyOf, pooledAdvert, proof, roster } from '../pools/helpers.js';

const BUYER = P(100);
const CLAIMANT = P(1);
const OTHER = P(2);
const TRUSTING = P(103);
const AD = advert(CLAIMANT);
const OTHER_AD = advert(OTHER);

/** BUYER's open order `n`, a claim on it citing `ad` (by CLAIMANT unless `by`), and BUYER's first-claim selection taking it. */
function won(n: number, o: { ad?: Opened<Advert>; by?: typeof CLAIMANT } = {}) {
  const by = o.by ?? CLAIMANT;
  const ad = o.ad ?? AD;
  const j = job(BUYER, { nonce: new Uint8Array([n]), order: {} });
  const c = seal(T.claim, { job: j.address, advert: ad.address, price: j.record.maxPrice, issuedAt: NOW - 100 }, by.signer) as Opened<Claim>;
  return { j, c, s: select(j, c) };
}

/** BUYER's first-claim selection of `j` taking claim `c` (the buyer's own signing: src/matching/first-claim.ts). */
function select(j: Opened<Job>, c: Opened<Claim>): Opened<Selection> {
  return signFirstClaimSelection(j, { job: j.address, winner: { seq: 1, receivedAt: NOW, claim: c }, answers: [], considered: [{ seq: 1, provider: c.signer, claim: c.address }] }, () => NOW, NOW, BUYER.signer);
}

function nd3(n: number, over: Partial<ClaimNonDelivery> = {}, proof: Partial<ClaimNonDelivery['proof']> = {}): Opened<ClaimNonDelivery> {
  const { j, c, s } = won(n);
  const rec: ClaimNonDelivery = { job: j.address, selection: s.address, claim: c.address, provider: CLAIMANT.did, reason: 'unreachable', signedAt: NOW + 1, proof: { job: j.bytes, selection: s.bytes, claim: c.bytes, ...proof }, ...over };
  return seal(T.nondelivery3, rec, BUYER.signer) as Opened<ClaimNonDelivery>;
}

const code = (nd: Opened<ClaimNonDelivery>): string => {
  try {
    linkNonDelivery(nd);
    return 'ok';
  } catch (e) {
    return (e as C0Error).code;
  }
};

test('signClaimNonDelivery: a /3 proving by the order, the first-claim selection and the claim; it links and opens as one', () => {
  const { j, c, s } = won(1);
  const nd = signClaimNonDelivery({ job: j, selection: s, claim: c, reason: 'unreachable', detail: 'EXEC_PROVIDER_GONE', signedAt: NOW + 5, signer: BUYER.signer });
  assert.equal(nd.type, T.nondelivery3);
  assert.deepEqual([nd.record.job, nd.record.selection, nd.record.claim, nd.record.provider], [j.address, s.address, c.address, CLAIMANT.did]);
  assert.equal(nd.record.proof.advert, undefined, 'a claim on an advert of its own carries none');
  assert.equal(code(nd), 'ok');
  const back = open(nd.bytes, T.nondelivery3) as Opened<ClaimNonDelivery>;
  assert.equal(back.address, nd.address);
  assert.equal(nonDeliveryProvider(back), CLAIMANT.did);
});

test('the schema and rules of a /3: its own fields (no offer), a reason from the list, not about its signer', () => {
  const good = nd3(2);
  const { claim: _claim, ...noClaim } = good.record;
  void _claim;
  assert.throws(() => seal(T.nondelivery3, { ...good.record, offer: good.record.claim } as never, BUYER.signer), { code: 'RECORD_UNKNOWN_FIELD' });
  assert.throws(() => seal(T.nondelivery3, noClaim as never, BUYER.signer), { code: 'RECORD_FIELD_MISSING' });
  assert.throws(() => seal(T.nondelivery3, { ...good.record, proof: { ...good.record.proof, offer: good.record.proof.claim } } as never, BUYER.signer), { code: 'RECORD_UNKNOWN_FIELD' });
  assert.throws(() => seal(T.nondelivery3, { ...good.record, reason: 'vanished' } as never, BUYER.signer), { code: 'RECORD_FIELD_INVALID' });
  assert.throws(() => seal(T.nondelivery3, { ...good.record, provider: BUYER.did }, BUYER.signer), { code: 'NONDELIVERY_SELF' });
  assert.throws(() => seal(T.nondelivery3, { ...good.record, detail: '  ' }, BUYER.signer), { code: 'NONDELIVERY_DETAIL_EMPTY' });
  // the wire refuses booleans: no yes/no field slips in
  assert.throws(() => seal(T.nondelivery3, { ...good.record, pooled: true } as never, BUYER.signer), { code: 'RECORD_UNKNOWN_FIELD' });
  // a /1 is not a /3: a /3's fields do not open as a /1, nor the other way round
  assert.throws(() => open(good.bytes, T.nondelivery), { code: 'RECORD_WRONG_TYPE' });
});

test('every link of a /3 is checked from the record alone, each with its code', () => {
  assert.equal(code(nd3(3)), 'ok');
  const { j, c, s } = won(4);
  const base = { job: j.address, selection: s.address, claim: c.address, provider: CLAIMANT.did, reason: 'timeout' as const, signedAt: NOW + 1, proof: { job: j.bytes, selection: s.bytes, claim: c.bytes } };
  const make = (over: Partial<ClaimNonDelivery>, signer = BUYER.signer) => seal(T.nondelivery3, { ...base, ...over, proof: { ...base.proof, ...over.proof } }, signer) as Opened<ClaimNonDelivery>;
  const other = won(5);
  // an auction's job (no `order`), a selection by another policy, a selection another key signed
  const auctionJob = job(BUYER, { nonce: new Uint8Array([6]) });
  const auctionSel = seal(T.selection, { job: auctionJob.address, buyer: BUYER.did, policy: 'cheapest', winner: c.address, considered: [{ provider: CLAIMANT.did, offer: c.address }], decidedAt: NOW }, BUYER.signer) as Opened<Selection>;
  const notFirstClaim = seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'cheapest', winner: c.address, considered: [{ provider: CLAIMANT.did, offer: c.address }], decidedAt: NOW }, BUYER.signer) as Opened<Selection>;
  const byGateway = seal(T.selection, { ...s.record }, P(104).signer) as Opened<Selection>;
  const theirJob = job(OTHER, { nonce: new Uint8Array([7]), order: {} });
  const otherClaim = seal(T.claim, { job: j.address, advert: OTHER_AD.address, price: j.record.maxPrice, issuedAt: NOW - 100 }, OTHER.signer) as Opened<Claim>;
  const claimOtherJob = seal(T.claim, { job: other.j.address, advert: AD.address, price: j.record.maxPrice, issuedAt: NOW - 100 }, CLAIMANT.signer) as Opened<Claim>;
  const tampered = Uint8Array.from(c.bytes);
  tampered[tampered.length - 1]! ^= 1;
  const cases: Array<[string, Opened<ClaimNonDelivery>]> = [
    ['NONDELIVERY_PROOF_INVALID', make({ proof: { ...base.proof, claim: tampered } })],
    ['NONDELIVERY_PROOF_INVALID', make({ proof: { ...base.proof, claim: AD.bytes } })], // not a claim
    ['NONDELIVERY_JOB_MISMATCH', make({ proof: { ...base.proof, job: other.j.bytes } })],
    ['NONDELIVERY_NOT_BUYER', make({ job: theirJob.address, proof: { ...base.proof, job: theirJob.bytes } })],
    ['NONDELIVERY_NOT_AN_ORDER', make({ job: auctionJob.address, selection: auctionSel.address, proof: { ...base.proof, job: auctionJob.bytes, selection: auctionSel.bytes } })],
    ['NONDELIVERY_SELECTION_MISMATCH', make({ proof: { ...base.proof, selection: other.s.bytes } })], // not the one cited
    ['NONDELIVERY_SELECTION_MISMATCH', make({ selection: other.s.address, proof: { ...base.proof, selection: other.s.bytes } })], // decides another job
    ['NONDELIVERY_SELECTION_MISMATCH', make({ claim: otherClaim.address, provider: OTHER.did, proof: { ...base.proof, claim: otherClaim.bytes } })], // its winner is another claim
    ['NONDELIVERY_NOT_FIRST_CLAIM', make({ selection: notFirstClaim.address, proof: { ...base.proof, selection: notFirstClaim.bytes } })],
    ['NONDELIVERY_NOT_FIRST_CLAIM', make({ selection: byGateway.address, proof: { ...base.proof, selection: byGateway.bytes } })],
    ['NONDELIVERY_BEFORE_SELECTION', make({ signedAt: NOW - 1 })],
    ['NONDELIVERY_CLAIM_MISMATCH', make({ proof: { ...base.proof, claim: otherClaim.bytes } })], // not the claim cited
    ['NONDELIVERY_SELECTION_MISMATCH', make({ provider: OTHER.did })], // the selection names the claimant, not OTHER
    ['NONDELIVERY_ADVERT_MISMATCH', make({ proof: { ...base.proof, advert: OTHER_AD.bytes } })], // not the advert the claim cites
    ['NONDELIVERY_ADVERT_MISMATCH', make({ proof: { ...base.proof, advert: AD.bytes } })], // the cited one, but not pooled
  ];
  for (const [want, nd] of cases) assert.equal(code(nd), want, `${want}: ${JSON.stringify({ ...nd.record, proof: undefined })}`);
  // the claim of another job: the selection names it, so the claim's own check is reached
  const selForOtherClaim = select(j, claimOtherJob);
  assert.equal(code(make({ selection: selForOtherClaim.address, claim: claimOtherJob.address, proof: { ...base.proof, selection: selForOtherClaim.bytes, claim: claimOtherJob.bytes } })), 'NONDELIVERY_CLAIM_MISMATCH');
});

test('reputation: a /3 counts against the claimant first-hand, once per (buyer, provider, job), and second-hand at a node that trusts the buyer', () => {
  const a = nd3(10);
  const again = seal(T.nondelivery3, { ...a.record, signedAt: NOW + 2, reason: 'timeout' }, BUYER.signer) as Opened<ClaimNonDelivery>;
  const b = nd3(11);
  const ev = (nds: Array<Opened<ClaimNonDelivery>>) => ({ receipts: [], acceptances: [], offers: [], nondeliveries: nds });
  const mine = deriveReputation(ev([a, again, b]), { self: BUYER.did }).get(CLAIMANT.did);
  assert.deepEqual([mine.nonDeliveries, mine.jobs, mine.firstHand], [2, 2, 2], 'two jobs, the same job twice counted once');
  assert.equal(mine.score, 1 / (2 + 2 * 2));
  const trusting = deriveReputation(ev([a, b]), { self: TRUSTING.did, trust: { trustedBuyers: [BUYER.did] } }).get(CLAIMANT.did);
  assert.deepEqual([trusting.nonDeliveries, trusting.secondHand], [1, 1], 'second-hand, at weight 0.5 each');
  const stranger = deriveReputation(ev([a, b]), { self: TRUSTING.did }).get(CLAIMANT.did);
  assert.deepEqual([stranger.nonDeliveries, stranger.untrusted, stranger.score], [0, 2, 0.5], 'a buyer it has no reason to trust moves nothing');
  // one that does not link counts nowhere
  const bad = seal(T.nondelivery3, { ...a.record, provider: OTHER.did }, BUYER.signer) as Opened<ClaimNonDelivery>;
  assert.equal(deriveReputation(ev([bad]), { self: BUYER.did }).get(OTHER.did).nonDeliveries, 0);
});

test('reputation: a /3 gives way to the claimant’s receipt for the job that its buyer countersigned (a stall it admitted), not to one it did not', () => {
  const nd = nd3(12);
  const claimAsOffer = open(nd.record.proof.claim, T.claim) as unknown as Opened<Offer>;
  const stalled = receipt(CLAIMANT, BUYER, claimAsOffer, { status: 'failed', failure: { code: 'EXEC_PROVIDER_STALLED', message: 'frozen' }, price: (claimAsOffer.record as unknown as Claim).price });
  const ack = acceptance(BUYER, stalled, 'accepted');
  const f = deriveReputation({ receipts: [stalled], acceptances: [ack], offers: [], nondeliveries: [nd] }, { self: BUYER.did }).get(CLAIMANT.did);
  assert.deepEqual([f.failures, f.nonDeliveries, f.jobs], [1, 0, 1], 'the admitted stall, once');
  const second = deriveReputation({ receipts: [stalled], acceptances: [ack], offers: [], nondeliveries: [nd] }, { self: TRUSTING.did, trust: { trustedBuyers: [BUYER.did] } }).get(CLAIMANT.did);
  assert.deepEqual([second.failures, second.nonDeliveries], [0.5, 0], 'the same second-hand');
  // without the buyer's verdict the receipt is only the claimant's word: the /3 stands (at the buyer and second-hand)
  const noVerdict = deriveReputation({ receipts: [stalled], acceptances: [], offers: [], nondeliveries: [nd] }, { self: TRUSTING.did, trust: { trustedBuyers: [BUYER.did] } }).get(CLAIMANT.did);
  assert.deepEqual([noVerdict.nonDeliveries, noVerdict.failures], [0.5, 0]);
  assert.equal(deriveReputation({ receipts: [stalled], acceptances: [], offers: [], nondeliveries: [nd] }, { self: BUYER.did }).get(CLAIMANT.did).nonDeliveries, 1);
});

test('a /3 on a claim citing a pooled advert carries it and counts against the pool; the market audit’s record set holds /3s', () => {
  const member = MEMBERS[0]!;
  const mk = keyOf(member);
  const r1 = roster();
  const pooled = seal(T.advert, { ...pooledAdvert(proof(r1, mk)), seq: 1, workloads: ['infer.llm'], issuedAt: NOW - 1000 }, mk) as Opened<Advert>;
  const party = { did: member, signer: mk } as typeof CLAIMANT;
  const { j, c, s } = won(13, { ad: pooled, by: party });
  const nd = signClaimNonDelivery({ job: j, selection: s, claim: c, advert: pooled, reason: 'refused', signedAt: NOW + 1, signer: BUYER.signer });
  assert.ok(nd.record.proof.advert, 'the pooled advert travels with it');
  assert.equal(code(nd), 'ok');
  assert.equal(nonDeliveryProvider(nd), POOL);
  const t = deriveReputation({ receipts: [], acceptances: [], offers: [], nondeliveries: [nd] }, { self: BUYER.did });
  assert.equal(t.get(POOL).nonDeliveries, 1);
  assert.equal(t.get(member).nonDeliveries, 0);
  // an advert of the claimant's that is not the pooled one it cites is not carried: the /3 charges the claimant
  const plain = signClaimNonDelivery({ job: j, selection: s, claim: c, advert: AD, reason: 'refused', signedAt: NOW + 1, signer: BUYER.signer });
  assert.equal(plain.record.proof.advert, undefined);
  assert.equal(nonDeliveryProvider(plain), member);
  const rs = new RecordSet([nd, j]);
  assert.deepEqual(rs.nondeliveries.map((x) => x.address), [nd.address]);
});

test('the evidence store keeps a /3 (one per (buyer, provider, job)), refuses one that does not link with its code, and reads it back after a restart', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-nd3-'));
  try {
    const a = nd3(20);
    const again = seal(T.nondelivery3, { ...a.record, signedAt: NOW + 3 }, BUYER.signer) as Opened<ClaimNonDelivery>;
    let db = await openDb(dir);
    let store = await EvidenceStore.open(db);
    await store.add(a);
    await store.add(again);
    assert.equal(store.nondeliveries.size, 1, 'one per (buyer, provider, job)');
    assert.deepEqual(store.nondeliveriesAbout(CLAIMANT.did).map((x) => x.address), [a.address]);
    await assert.rejects(store.add(seal(T.nondelivery3, { ...a.record, proof: { ...a.record.proof, claim: won(21).c.bytes } }, BUYER.signer)), { code: 'NONDELIVERY_CLAIM_MISMATCH' });
    assert.equal(store.nondeliveries.size, 1, 'nothing stored is lost, nothing refused is kept');
    assert.equal(store.derive({ self: BUYER.did }).get(CLAIMANT.did).nonDeliveries, 1);
    await closeDb(db);
    db = await openDb(dir);
    store = await EvidenceStore.open(db);
    assert.deepEqual([...store.nondeliveries.keys()], [a.address]);
    assert.equal(store.derive({ self: BUYER.did }).get(CLAIMANT.did).nonDeliveries, 1);
    await closeDb(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
