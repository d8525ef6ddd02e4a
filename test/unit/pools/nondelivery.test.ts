/**
 * A pool's non-deliveries count against the pool (docs/pools.md "Reputation":
 * one provider, one reputation; spec scheduling.md "Failures count"). A
 * non-delivery names the offer's signer, the member that quoted; selection
 * scores a pooled offer by the pool's reputation. Before, three non-deliveries
 * on a coordinator's offer dropped the member's score and left the pool's at
 * 0.5, so a pool could refuse or vanish without cost. Now the buyer attaches
 * the pooled advert the offer cites, and every node reads the pool from the
 * record alone (nonDeliveryProvider): derivation, the evidence store's index
 * and the live view's incremental update all charge the pool.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import '../../../src/pools/chain.js';
import { deriveReputation, linkNonDelivery, signNonDelivery } from '../../../src/reputation/index.js';
import { nonDeliveryProvider } from '../../../src/reputation/nondelivery.js';
import { EvidenceStore } from '../../../src/reputation/store.js';
import { LiveReputation } from '../../../src/reputation/live.js';
import { select } from '../../../src/market/select.js';
import { open, seal, T, type Advert, type NonDelivery, type Opened, type Selection } from '../../../src/records/index.js';
import type { C0Error } from '../../../src/errors.js';
import { NOW, P, advert, job, offer } from '../market/fixtures.js';
import { MEMBERS, POOL, keyOf, pooledAdvert, proof, roster } from './helpers.js';

const BUYER = P(100);
const OTHER = P(101);
const member = MEMBERS[0]!;
const mk = keyOf(member);
const party = { did: member, signer: mk } as never;
const r1 = roster();
const pooledAd = (seq = 1): Opened<Advert> => seal(T.advert, { ...pooledAdvert(proof(r1, mk)), seq, workloads: ['infer.llm'], issuedAt: NOW - 1000 }, mk) as Opened<Advert>;
const AD = pooledAd();

/** A job of BUYER's, the member's offer on it citing `ad`, and a selection naming that offer (the coordinator quoted for the pool). */
function selected(n: number, ad: Opened<Advert> = AD) {
  const j = job(BUYER, { nonce: new Uint8Array([n]) });
  const o = offer(party, j, ad);
  const s = seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'trusted', winner: o.address, considered: [{ provider: member, offer: o.address }], decidedAt: NOW }, BUYER.signer) as Opened<Selection>;
  return { j, o, s };
}

function refused(n: number, withAdvert: Opened<Advert> | null = AD): Opened<NonDelivery> {
  const { j, o, s } = selected(n);
  return signNonDelivery({ job: j, selection: s, offer: o, reason: 'refused', signedAt: NOW + 1, signer: BUYER.signer, ...(withAdvert ? { advert: withAdvert } : {}) });
}

test('non-deliveries on a pool member’s offer lower the pool’s reputation, the one selection scores the pool by', () => {
  const nds = [1, 2, 3].map((n) => refused(n));
  for (const nd of nds) {
    assert.equal(nd.record.provider, member, 'the record still names the member that quoted (the selection names it with the offer)');
    assert.ok(nd.record.proof.advert && Buffer.from(nd.record.proof.advert).equals(Buffer.from(AD.bytes)), 'it carries the pooled advert the offer cites');
    assert.equal(nonDeliveryProvider(nd), POOL);
  }
  const t = deriveReputation({ receipts: [], acceptances: [], offers: [], nondeliveries: nds }, { self: BUYER.did });
  const f = t.get(POOL);
  assert.equal(f.nonDeliveries, 3);
  assert.equal(t.scoreOf(POOL), 1 / (2 + 2 * 3));
  assert.equal(t.scoreOf(member), 0.5, 'the member alone is not charged: the pool is one provider');
  assert.equal(t.has(member), false);
  // what selection reads for the pool's next offer
  const { j, o } = selected(9);
  const r = select({ job: j, adverts: [AD], offers: [o], now: NOW, reputation: t });
  assert.ok(r.ok);
  assert.equal(r.ranked[0]!.scores.reputation, 1 / 8);
  // another node, holding only the records' bytes (no advert of its own), charges the same provider
  const elsewhere = nds.map((nd) => open(nd.bytes, T.nondelivery) as Opened<NonDelivery>);
  const u = deriveReputation({ receipts: [], acceptances: [], offers: [], nondeliveries: elsewhere }, { self: OTHER.did, trust: { trustedBuyers: [BUYER.did] } });
  assert.equal(u.get(POOL).nonDeliveries, 1.5);
  assert.equal(u.has(member), false);
});

test('without the pooled advert (none held, a plain advert, another advert than the offer’s) a non-delivery counts against the offer’s signer, as before', () => {
  const bare = refused(1, null);
  assert.equal(bare.record.proof.advert, undefined);
  const other = refused(2, pooledAd(2)); // not the advert the offer cites: left out
  assert.equal(other.record.proof.advert, undefined);
  const plainParty = P(120);
  const plain = advert(plainParty);
  const j = job(BUYER, { nonce: new Uint8Array([3]) });
  const o = offer(plainParty, j, plain);
  const s = seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'trusted', winner: o.address, considered: [{ provider: plainParty.did, offer: o.address }], decidedAt: NOW }, BUYER.signer) as Opened<Selection>;
  const unpooled = signNonDelivery({ job: j, selection: s, offer: o, reason: 'timeout', signedAt: NOW + 1, signer: BUYER.signer, advert: plain });
  assert.equal(unpooled.record.proof.advert, undefined);
  const t = deriveReputation({ receipts: [], acceptances: [], offers: [], nondeliveries: [bare, other, unpooled] }, { self: BUYER.did });
  assert.equal(t.get(member).nonDeliveries, 2);
  assert.equal(t.get(plainParty.did).nonDeliveries, 1);
  assert.equal(t.has(POOL), false);
});

test('an attached advert must be the pooled advert the offer cites, signed by the provider named: else it does not link', () => {
  const good = refused(1);
  const reseal = (advertBytes: Uint8Array) => seal(T.nondelivery, { ...good.record, proof: { ...good.record.proof, advert: advertBytes } }, BUYER.signer) as Opened<NonDelivery>;
  const code = (nd: Opened<NonDelivery>) => {
    try {
      linkNonDelivery(nd);
      return 'ok';
    } catch (e) {
      return (e as C0Error).code;
    }
  };
  assert.equal(code(good), 'ok');
  assert.equal(code(reseal(pooledAd(2).bytes)), 'NONDELIVERY_ADVERT_MISMATCH', 'another advert of the member’s');
  assert.equal(code(reseal(advert(P(121)).bytes)), 'NONDELIVERY_ADVERT_MISMATCH', 'someone else’s advert');
  assert.equal(code(reseal(good.record.proof.offer)), 'NONDELIVERY_PROOF_INVALID', 'not an advert');
  // one that does not link is counted nowhere, not against the member either
  const t = deriveReputation({ receipts: [], acceptances: [], offers: [], nondeliveries: [reseal(pooledAd(2).bytes)] }, { self: BUYER.did });
  assert.deepEqual(t.all(), []);
});

test('the evidence store and the live view file a pooled offer’s non-delivery under the pool: the incremental update derives the pool again', async () => {
  const store = new EvidenceStore();
  const opts = { self: BUYER.did };
  const view = new LiveReputation(store, opts);
  view.get();
  const full = view.full;
  for (const n of [1, 2, 3]) {
    const nd = refused(n);
    assert.deepEqual([...store.providersOf([nd])], [POOL]);
    await store.add(nd);
    view.added([nd]);
    assert.equal(view.get().get(POOL).nonDeliveries, n);
    assert.deepEqual(view.get().all(), store.derive(opts).all());
  }
  assert.equal(view.full, full, 'only the pool was derived again');
  assert.equal(store.nondeliveriesAbout(POOL).length, 3);
  assert.equal(store.nondeliveriesAbout(member).length, 0);
  assert.equal(view.get().scoreOf(POOL), 1 / 8);
});
