/**
 * A pool's non-deliveries count against the pool (docs/pools.md "Reputation":
 * one provider, one reputation). A non-delivery names the offer's signer, the
 * member that quoted; selection scores a pooled offer by the pool's
 * reputation. Before, three non-deliveries on a coordinator's offer dropped the
 * member's score and left the pool's at 0.5, so a pool could refuse or vanish
 * at no cost. Now a buyer signs a `c0mpute.nondelivery/2` for an offer citing a
 * pooled advert, carrying that advert, and every node reads the pool from the
 * record alone (nonDeliveryProvider): derivation, the evidence store's index
 * (and its restart) and the live view's incremental update all charge the
 * pool. A /1 (any other offer) is unchanged and counts against the member.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import '../../../src/pools/chain.js';
import { deriveReputation, linkNonDelivery, nonDeliveryProvider, signNonDelivery } from '../../../src/reputation/index.js';
import { EvidenceStore } from '../../../src/reputation/store.js';
import { LiveReputation } from '../../../src/reputation/live.js';
import { select } from '../../../src/market/select.js';
import { RecordSet } from '../../../src/market/recordset.js';
import { open, seal, T, type Advert, type NonDelivery, type Opened, type Selection } from '../../../src/records/index.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import type { C0Error } from '../../../src/errors.js';
import { NOW, P, advert, job, offer } from '../market/fixtures.js';
import { MEMBERS, POOL, keyOf, pooledAdvert, proof, roster } from './helpers.js';

const BUYER = P(100);
const OTHER = P(101);
const member = MEMBERS[0]!;
const mk = keyOf(member);
const party = { did: member, signer: mk } as never;
const r1 = roster();
const pooledAd = (seq = 1, key = mk): Opened<Advert> => seal(T.advert, { ...pooledAdvert(proof(r1, key)), seq, workloads: ['infer.llm'], issuedAt: NOW - 1000 }, key) as Opened<Advert>;
const AD = pooledAd();

/** A job of BUYER's, the member's offer on it citing `ad`, and a selection naming that offer (the coordinator quoted for the pool). */
function selected(n: number, ad: Opened<Advert> = AD) {
  const j = job(BUYER, { nonce: new Uint8Array([n]) });
  const o = offer(party, j, ad);
  const s = seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'trusted', winner: o.address, considered: [{ provider: member, offer: o.address }], decidedAt: NOW }, BUYER.signer) as Opened<Selection>;
  return { j, o, s };
}

function refused(n: number, withAdvert: Opened<Advert> | null = AD, cited: Opened<Advert> = AD): Opened<NonDelivery> {
  const { j, o, s } = selected(n, cited);
  return signNonDelivery({ job: j, selection: s, offer: o, reason: 'refused', signedAt: NOW + 1, signer: BUYER.signer, ...(withAdvert ? { advert: withAdvert } : {}) });
}

const code = (nd: Opened<NonDelivery>): string => {
  try {
    linkNonDelivery(nd);
    return 'ok';
  } catch (e) {
    return (e as C0Error).code;
  }
};

test('three non-deliveries on a pool member’s offer lower the pool’s reputation, the one selection scores the pool by', () => {
  const nds = [1, 2, 3].map((n) => refused(n));
  for (const nd of nds) {
    assert.equal(nd.type, T.nondelivery2, 'an offer citing a pooled advert gets a /2');
    assert.equal(nd.record.provider, member, 'the record still names the member that quoted (the selection names it with the offer)');
    assert.ok(nd.record.proof.advert && Buffer.from(nd.record.proof.advert).equals(Buffer.from(AD.bytes)), 'it carries the pooled advert the offer cites');
    assert.equal(nonDeliveryProvider(nd), POOL);
  }
  const t = deriveReputation({ receipts: [], acceptances: [], offers: [], nondeliveries: nds }, { self: BUYER.did });
  assert.equal(t.get(POOL).nonDeliveries, 3);
  assert.equal(t.scoreOf(POOL), 1 / (2 + 2 * 3));
  assert.equal(t.has(member), false, 'the member alone is not charged: the pool is one provider');
  // what selection reads for the pool's next offer
  const { j, o } = selected(9);
  const r = select({ job: j, adverts: [AD], offers: [o], now: NOW, reputation: t });
  assert.ok(r.ok);
  assert.equal(r.ranked[0]!.scores.reputation, 1 / 8);
  // another node, holding only the records' bytes (no advert of its own), charges the same provider
  const elsewhere = nds.map((nd) => open(nd.bytes, T.nondelivery2) as Opened<NonDelivery>);
  const u = deriveReputation({ receipts: [], acceptances: [], offers: [], nondeliveries: elsewhere }, { self: OTHER.did, trust: { trustedBuyers: [BUYER.did] } });
  assert.equal(u.get(POOL).nonDeliveries, 1.5);
  assert.equal(u.has(member), false);
  // an audit's record set takes both versions
  assert.equal(new RecordSet([...nds, refused(4, null)]).nondeliveries.length, 4);
});

test('any other non-delivery is a /1, exactly as before, and counts against the offer’s signer', () => {
  const bare = refused(1, null); // the buyer holds no advert
  const other = refused(2, pooledAd(2)); // not the advert the offer cites
  const plainParty = P(120);
  const plain = advert(plainParty);
  const j = job(BUYER, { nonce: new Uint8Array([3]) });
  const o = offer(plainParty, j, plain);
  const s = seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'trusted', winner: o.address, considered: [{ provider: plainParty.did, offer: o.address }], decidedAt: NOW }, BUYER.signer) as Opened<Selection>;
  const unpooled = signNonDelivery({ job: j, selection: s, offer: o, reason: 'timeout', signedAt: NOW + 1, signer: BUYER.signer, advert: plain });
  for (const nd of [bare, other, unpooled]) {
    assert.equal(nd.type, T.nondelivery);
    assert.equal(nd.record.proof.advert, undefined);
    assert.equal(open(nd.bytes, T.nondelivery).address, nd.address, 'a previous-version node reads it (no new field)');
  }
  const t = deriveReputation({ receipts: [], acceptances: [], offers: [], nondeliveries: [bare, other, unpooled] }, { self: BUYER.did });
  assert.equal(t.get(member).nonDeliveries, 2);
  assert.equal(t.get(plainParty.did).nonDeliveries, 1);
  assert.equal(t.has(POOL), false);
  // /1 has no advert field; /2 requires it
  assert.throws(() => seal(T.nondelivery, { ...bare.record, proof: { ...bare.record.proof, advert: AD.bytes } }, BUYER.signer), { code: 'RECORD_UNKNOWN_FIELD' });
  assert.throws(() => seal(T.nondelivery2, bare.record, BUYER.signer), { code: 'RECORD_FIELD_MISSING' });
});

test('a /2’s advert must be the pooled advert the offer cites, signed by the provider named: else a coded error, and it counts nowhere', () => {
  const good = refused(1);
  assert.equal(code(good), 'ok');
  const reseal = (nd: Opened<NonDelivery>, advertBytes: Uint8Array) => seal(T.nondelivery2, { ...nd.record, proof: { ...nd.record.proof, advert: advertBytes } }, BUYER.signer) as Opened<NonDelivery>;
  // not the advert the offer cites
  assert.equal(code(reseal(good, pooledAd(2).bytes)), 'NONDELIVERY_ADVERT_MISMATCH', 'another advert of the member’s');
  assert.equal(code(reseal(good, advert(P(121)).bytes)), 'NONDELIVERY_ADVERT_MISMATCH', 'someone else’s advert');
  // the cited advert, but not pooled
  const plain = seal(T.advert, { ...advert(P(122)).record }, mk) as Opened<Advert>;
  const onPlain = refused(2, null, plain);
  assert.equal(onPlain.type, T.nondelivery);
  assert.equal(code(reseal(onPlain, plain.bytes)), 'NONDELIVERY_ADVERT_MISMATCH', 'a plain advert');
  // the cited advert, pooled, but another member's (the offer's signer cited an advert it did not sign)
  const otherMember = pooledAd(1, keyOf(MEMBERS[1]!));
  const onOthers = refused(3, otherMember, otherMember);
  assert.equal(onOthers.type, T.nondelivery, 'signNonDelivery attaches only the offer signer’s own advert');
  assert.equal(code(reseal(onOthers, otherMember.bytes)), 'NONDELIVERY_ADVERT_MISMATCH', 'not signed by the provider named');
  // not an advert at all
  assert.equal(code(reseal(good, good.record.proof.offer)), 'NONDELIVERY_PROOF_INVALID');
  // one that does not link is counted nowhere, not against the member either
  const t = deriveReputation({ receipts: [], acceptances: [], offers: [], nondeliveries: [reseal(good, pooledAd(2).bytes), reseal(onPlain, plain.bytes), reseal(onOthers, otherMember.bytes)] }, { self: BUYER.did });
  assert.deepEqual(t.all(), []);
});

test('the evidence store and the live view file a /2 under the pool, and a restart reads it back there', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-nd2-'));
  try {
    let db = await openDb(dir);
    const store = await EvidenceStore.open(db);
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
    const one = refused(4, null);
    await store.add(one);
    view.added([one]);
    assert.equal(view.full, full, 'only the providers concerned were derived again');
    assert.equal(store.nondeliveriesAbout(POOL).length, 3);
    assert.equal(store.nondeliveriesAbout(member).length, 1);
    assert.equal(view.get().scoreOf(POOL), 1 / 8);
    assert.equal(view.get().get(member).nonDeliveries, 1);
    // a tampered /2 is refused like a /1 that does not link
    await assert.rejects(store.add(seal(T.nondelivery2, { ...one.record, proof: { ...one.record.proof, advert: pooledAd(2).bytes } }, BUYER.signer)), { code: 'NONDELIVERY_ADVERT_MISMATCH' });
    const before = JSON.stringify(store.derive(opts).all());
    await closeDb(db);
    db = await openDb(dir);
    const again = await EvidenceStore.open(db);
    assert.equal(again.nondeliveries.size, 4);
    assert.equal(JSON.stringify(again.derive(opts).all()), before);
    assert.equal(again.nondeliveriesAbout(POOL).length, 3);
    await closeDb(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
