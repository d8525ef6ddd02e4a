/**
 * A pool is one provider in the buyer's market (docs/pools.md "One entry in the
 * market"): the advert index's entries, the offer book's slots and the
 * `/v1/market` listing take a pool's members' pooled adverts and offers once,
 * under the pool's DID; unpooled adverts are unchanged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seal, T, type Advert, type Offer, type Opened } from '../../../src/records/index.js';
import { AdvertIndex, MAX_STANDBY, OfferBook, auditSelection, explainMarket, select, signSelection } from '../../../src/market/index.js';
import { closeDb, openDb, type Sub } from '../../../src/store/db.js';
import { market } from '../../../src/node/control.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { NOW, P, advert, job, offer, type Party } from './fixtures.js';
import { POOL, memberKeys, pooledAdvert, proof, roster, didOf } from '../pools/helpers.js';

const R = roster();
const M: Party[] = memberKeys.map((k) => ({ signer: k, did: didOf(k) }));
const pooled = (p: Party, over: Partial<Advert> = {}): Opened<Advert> => seal(T.advert, { ...pooledAdvert(proof(R, p.signer)), workloads: ['infer.llm'], ...over }, p.signer) as Opened<Advert>;
const J = job(P(100));

test('two members’ pooled adverts: one market entry under the pool’s DID, the newer by issuedAt; every member advert still resolves', () => {
  const a0 = pooled(M[0]!, { issuedAt: NOW - 1000 });
  const a1 = pooled(M[1]!, { issuedAt: NOW - 500 });
  const solo = advert(P(1));
  for (const order of [[a0, a1, solo], [solo, a1, a0]]) {
    const idx = new AdvertIndex(order);
    assert.deepEqual([...idx.entries.keys()].sort(), [POOL, P(1).did].sort());
    assert.equal(idx.entries.get(POOL), a1);
    assert.equal(idx.membersOf(POOL), 2);
    assert.equal(idx.entryOf(M[0]!.did), POOL);
    // the member-level view is kept: each member's latest, each advert by address
    assert.equal(idx.latest.size, 3);
    assert.equal(idx.get(a0.address), a0);
    assert.equal(idx.get(a1.address), a1);
    // an unpooled advert's entry is its latest
    assert.equal(idx.entries.get(P(1).did), solo);
    assert.equal(idx.membersOf(P(1).did), 1);
  }
  // equal issuedAt: the lower address, whatever the arrival order
  const b0 = pooled(M[0]!, { issuedAt: NOW });
  const b1 = pooled(M[1]!, { issuedAt: NOW });
  const want = b0.address < b1.address ? b0 : b1;
  assert.equal(new AdvertIndex([b0, b1]).entries.get(POOL), want);
  assert.equal(new AdvertIndex([b1, b0]).entries.get(POOL), want);
  // the newer member's advert evicted: the other member's stands for the pool; both gone: the pool leaves
  const idx = new AdvertIndex([a0, a1]);
  idx.remove([a1]);
  assert.equal(idx.entries.get(POOL), a0);
  assert.equal(idx.membersOf(POOL), 1);
  idx.remove([a0]);
  assert.equal(idx.entries.size, 0);
  assert.equal(idx.membersOf(POOL), 0);
});

test('two members’ offers for one job: one book slot, the pool’s, holding the better offer (the same rule as one signer)', async () => {
  const a0 = pooled(M[0]!);
  const a1 = pooled(M[1]!);
  const idx = new AdvertIndex([a0, a1]);
  const o0 = offer(M[0]!, J, a0, { amount: '0.5' });
  const o1 = offer(M[1]!, J, a1, { amount: '0.4' });
  const book = new OfferBook(undefined, (o) => idx.providerFor(o));
  assert.equal(book.addSync(o0, NOW).status, 'best');
  assert.equal(book.addSync(o1, NOW).status, 'best');
  assert.deepEqual(book.best(J.address, NOW), [o1]);
  assert.deepEqual(book.candidates(J.address, 'USD', NOW), [o1]);
  assert.equal(book.liveCount(J.address, NOW), 1);
  assert.deepEqual(book.snapshot(NOW), [{ job: J.address, provider: POOL, offer: o1.address }]);
  assert.equal(book.slot(J.address, POOL, NOW), o1);
  // an offer citing a plain advert keeps its signer's slot
  const s = advert(P(1));
  idx.add(s);
  const os = offer(P(1), J, s, { amount: '0.45' });
  book.addSync(os, NOW);
  assert.equal(book.best(J.address, NOW).length, 2);
  assert.equal(book.slot(J.address, P(1).did, NOW), os);
});

// indexing every offer for refile (a SlotOf given alone), and only those whose slot may still change (the node's: the
// advert index's `settled`)
for (const index of ['every offer', 'offers not settled'] as const) {
  test(`an offer whose pooled advert becomes held (or is let go) moves to the slot it stands for now: the same book as that order would have made (${index} indexed)`, () => {
    const a0 = pooled(M[0]!);
    const a1 = pooled(M[1]!);
    const idx = new AdvertIndex([a1]);
    const book = index === 'every offer' ? new OfferBook(undefined, (o) => idx.providerFor(o)) : new OfferBook(undefined, (o) => idx.providerFor(o), (o) => idx.settled(o));
    const o0 = offer(M[0]!, J, a0, { amount: '0.4' });
    const o1 = offer(M[1]!, J, a1, { amount: '0.5' });
    // a dearer offer of member 0 that lives longer: a standby behind o0, moved with it
    const o0b = offer(M[0]!, J, a0, { amount: '0.45', expiresAt: NOW + 90_000 });
    book.addSync(o0, NOW);
    book.addSync(o0b, NOW);
    book.addSync(o1, NOW);
    assert.deepEqual(book.snapshot(NOW).map((x) => x.provider).sort(), [M[0]!.did, POOL].sort(), 'a0 not held: o0 under its signer');
    idx.add(a0);
    assert.equal(book.refile([a0.address]), 2);
    assert.equal(book.refile([a0.address]), 0, 'nothing left to move');
    assert.deepEqual(book.snapshot(NOW), [{ job: J.address, provider: POOL, offer: o0.address }]);
    assert.deepEqual(book.candidates(J.address, 'USD', NOW), [o0]);
    assert.equal(book.liveCount(J.address, NOW), 1);
    assert.equal(book.slot(J.address, M[0]!.did, NOW), undefined);
    assert.equal(book.size, 3);
    // the same as a book that held a0 first
    const ahead = new OfferBook(undefined, (o) => idx.providerFor(o));
    for (const o of [o0, o0b, o1]) ahead.addSync(o, NOW);
    for (const t of [NOW, NOW + 61_000]) assert.deepEqual(book.snapshot(t), ahead.snapshot(t), `at +${t - NOW} ms`);
    // a later offer of the pool's is filed by the rule one provider's offers follow (dominated: o0 is cheaper and lives as long)
    assert.equal(book.addSync(offer(M[1]!, J, a1, { amount: '0.6' }), NOW).status, 'dominated');
    // a0 let go (the advert cap): member 0's offers stand for member 0 again
    idx.remove([a0]);
    assert.equal(book.refile([a0.address]), 2);
    assert.deepEqual(book.snapshot(NOW).map((x) => [x.provider, x.offer]).sort(), [[M[0]!.did, o0.address], [POOL, o1.address]].sort());
    // a plain advert's offers never move; an advert no offer cites moves nothing
    const s = advert(P(1));
    const os = offer(P(1), J, s);
    book.addSync(os, NOW);
    idx.add(s);
    assert.equal(book.refile([s.address, 'sha256:' + 'cd'.repeat(32)]), 0);
    assert.equal(book.slot(J.address, P(1).did, NOW), os);
  });
}

test('the market listing (/v1/market, providersKnown) counts a pool once, under its DID, with the members seen', () => {
  const idx = new AdvertIndex([pooled(M[0]!), pooled(M[1]!), pooled(M[2]!), advert(P(1))]);
  const d = { clock: () => NOW, market: { adverts: idx, reputation: () => ({ scoreOf: () => 0.5 }) }, presence: { live: () => [] } } as unknown as OverlayNode;
  const m = market(d) as { total: number; live: number; adverts: Array<{ provider: string; signer: string; pool?: { did: string; members: number } }> };
  assert.equal(m.total, 2);
  assert.equal(m.live, 2);
  const p = m.adverts.find((a) => a.provider === POOL)!;
  assert.deepEqual(p.pool, { did: POOL, members: 3 });
  assert.ok(M.some((x) => x.did === p.signer));
  const solo = m.adverts.find((a) => a.provider === P(1).did)!;
  assert.equal(solo.pool, undefined);
  assert.equal((market(d, 1) as { total: number; adverts: unknown[] }).adverts.length, 1);
});

test('a member a newer roster removed is not counted as the pool’s: members, presence and free slots are the listed members’, and its stale advert does not stand for the pool (QA ffPoolChurn F2)', () => {
  // roster seq 2 drops the member first in DID order; the other two re-sign their adverts with it, the removed one
  // keeps its advert on seq 1 (it cannot sign with a roster it is not on), later dated than theirs
  const [gone, ...kept] = [...M].sort((a, b) => (a.did < b.did ? -1 : 1));
  const R2 = roster({ seq: 2, members: kept.map((k) => ({ did: k.did })) });
  const onR2 = (p: Party) => seal(T.advert, { ...pooledAdvert(proof(R2, p.signer)), seq: 2, issuedAt: NOW - 1000, workloads: ['infer.llm'] }, p.signer) as Opened<Advert>;
  const stale = pooled(gone!, { issuedAt: NOW - 10 });
  for (const order of [[stale, ...kept.map(onR2)], [...kept.map(onR2), stale]]) {
    const idx = new AdvertIndex(order);
    assert.equal(idx.membersOf(POOL), 2, 'the two members roster seq 2 lists');
    assert.equal(idx.onRoster(gone!.did), false);
    assert.ok(kept.every((k) => idx.onRoster(k.did)));
    assert.notEqual(idx.entries.get(POOL)!.signer, gone!.did, 'the removed member’s advert does not stand for the pool');
    assert.notEqual(idx.firstMember(POOL), gone!.did);
    const present = M.map((m) => ({ did: m.did, freeSlots: 2, workloads: ['infer.llm'], liveUntil: NOW + 60_000 }));
    const d = { clock: () => NOW, market: { adverts: idx, reputation: () => ({ scoreOf: () => 0.5 }) }, presence: { live: () => present } } as unknown as OverlayNode;
    const m = market(d) as { presence: { live: number; freeSlots: number; pooled?: { members: number } }; adverts: Array<{ provider: string; pool?: { members: number; present?: number; freeSlots?: number } }> };
    assert.deepEqual(m.adverts.find((a) => a.provider === POOL)!.pool, { did: POOL, members: 2, present: 2, freeSlots: 4 });
    assert.equal(m.presence.live, 3, 'the removed member is still a live provider …');
    assert.equal(m.presence.pooled?.members, 2, '… but not one of the pool’s members');
  }
  // before any member holds the newer roster, all three count (seq 1 lists them)
  assert.equal(new AdvertIndex(M.map((p) => pooled(p))).membersOf(POOL), 3);
});

test('selection and the explanation over a plain list of offers take a pool’s members’ offers once', () => {
  const a0 = pooled(M[0]!);
  const a1 = pooled(M[1]!);
  const s = advert(P(1));
  const offers = [offer(M[0]!, J, a0, { amount: '0.5' }), offer(M[1]!, J, a1, { amount: '0.4' }), offer(P(1), J, s, { amount: '0.45' })];
  const r = select({ job: J, adverts: [a0, a1, s], offers, policy: 'cheapest', now: NOW });
  assert.deepEqual(r.ranked.map((x) => x.offer), [offers[1]!.address, offers[2]!.address]);
  const e = explainMarket({ job: J, adverts: [a0, a1, s], offers, now: NOW });
  assert.equal(e.providers.length, 2);
  assert.equal(e.known, 2);
});

test('the explanation lists an unquoted pool once, as its member first in DID order; a quoted pool as the member that quoted', () => {
  const ads = M.map((m) => pooled(m));
  const s = advert(P(1));
  const first = [...M.map((m) => m.did)].sort()[0]!;
  const none = explainMarket({ job: J, adverts: [...ads, s], offers: [], now: NOW });
  assert.deepEqual(none.providers.map((v) => v.provider).sort(), [first, P(1).did].sort(), 'one verdict for the pool (its first member by DID), one for the plain provider');
  const last = M.find((m) => m.did !== first)!;
  const quoted = explainMarket({ job: J, adverts: [...ads, s], offers: [offer(last, J, ads[M.indexOf(last)]!, { amount: '0.5' })], now: NOW });
  assert.deepEqual(quoted.providers.map((v) => v.provider).sort(), [last.did, P(1).did].sort(), 'the member that quoted stands for the pool');
  assert.equal(quoted.providers.find((v) => v.provider === last.did)!.offer !== undefined, true);
});

test('an insert whose write fails after a refile moved it is taken back from the slot it is in now: no offer left showing that the book does not hold', async () => {
  const a0 = pooled(M[0]!);
  const idx = new AdvertIndex([pooled(M[1]!)]);
  // a store whose one write waits until the test fails it (a full disk), so the refile comes while it is pending
  let fail!: (e: Error) => void;
  const store = { batch: () => new Promise<void>((_, reject) => (fail = reject)) } as unknown as Sub;
  const book = new OfferBook(store, (o) => idx.providerFor(o), (o) => idx.settled(o));
  const o0 = offer(M[0]!, J, a0, { amount: '0.4' });
  const adding = book.add(o0, NOW);
  assert.deepEqual(book.snapshot(NOW).map((x) => x.provider), [M[0]!.did], 'filed under its signer: a0 not held');
  idx.add(a0);
  assert.equal(book.refile([a0.address]), 1);
  fail(new Error('ENOSPC'));
  await assert.rejects(adding, { code: 'STORE_WRITE_FAILED' });
  assert.deepEqual(book.snapshot(NOW), []);
  assert.deepEqual(book.candidates(J.address, 'USD', NOW), []);
  assert.equal(book.size, 0);
});

test('a pool slot a refile took past MAX_STANDBY reopens as it was: every offer the book accepted is loaded, so selection after a restart equals selection before', async () => {
  const a0 = pooled(M[0]!);
  const a1 = pooled(M[1]!);
  // six offers from each member, none dominating another (the cheaper expires sooner), interleaved in price
  const mine = (p: Party, a: Opened<Advert>, at: number): Opened<Offer>[] =>
    Array.from({ length: 6 }, (_, i) => offer(p, J, a, { amount: (0.4 + 0.02 * i + at).toFixed(3), expiresAt: NOW + 10_000 * (i + 1) + at * 100_000 }));
  const o0 = mine(M[0]!, a0, 0);
  const o1 = mine(M[1]!, a1, 0.01);
  const dir = mkdtempSync(join(tmpdir(), 'c0-pool-book-'));
  try {
    let db = await openDb(dir);
    const idx = new AdvertIndex([a1]);
    const book = await OfferBook.open(db, NOW, 'offers', (o) => idx.providerFor(o), (o) => idx.settled(o));
    // a0 not held yet: member 0's offers fill its own slot, member 1's the pool's, each within the bound
    for (const o of [...o0, ...o1]) assert.notEqual((await book.add(o, NOW)).status, 'refused');
    idx.add(a0);
    assert.equal(book.refile([a0.address]), 6);
    assert.equal(book.size, 12, 'the refile refuses nothing: the pool slot holds twelve');
    assert.ok(12 > MAX_STANDBY);
    const times = [NOW, NOW + 15_000, NOW + 35_000, NOW + 55_000];
    const before = times.map((t) => book.snapshot(t));
    await closeDb(db);
    // restarted: the advert index holds both members' adverts before the book opens (as the node opens them)
    db = await openDb(dir);
    const again = await OfferBook.open(db, NOW, 'offers', (o) => idx.providerFor(o), (o) => idx.settled(o));
    assert.equal(again.size, 12);
    assert.deepEqual(times.map((t) => again.snapshot(t)), before);
    // the bound still refuses a further offer that dominates none of them
    assert.equal((await again.add(offer(M[1]!, J, a1, { amount: '0.9', expiresAt: NOW + 100_000 }), NOW)).status, 'refused');
    await closeDb(db);
    // and a second restart keeps them all too
    db = await openDb(dir);
    assert.equal((await OfferBook.open(db, NOW, 'offers', (o) => idx.providerFor(o), (o) => idx.settled(o))).size, 12);
    await closeDb(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('audit of a failover selection: a pool tried through one member is left out as tried, whichever member quotes later', () => {
  const a0 = pooled(M[0]!);
  const a1 = pooled(M[1]!);
  const solo = advert(P(1));
  const o0 = offer(M[0]!, J, a0, { amount: '0.1' });
  const o1 = offer(M[1]!, J, a1, { amount: '0.1', issuedAt: NOW });
  const os = offer(P(1), J, solo, { amount: '0.5' });
  // attempt 1 chose the pool through M0; attempt 2 leaves out the pool, and M1's later offer with it (§6)
  const r1 = select({ job: J, adverts: [a0, a1, solo], offers: [o0, os], policy: 'cheapest', now: NOW });
  assert.ok(r1.ok && r1.winner.offer === o0.address);
  const first = signSelection({ result: r1, job: J, signer: P(100).signer });
  const r2 = select({ job: J, adverts: [a0, a1, solo], offers: [os], policy: 'cheapest', now: NOW + 1 });
  assert.ok(r2.ok);
  const second = signSelection({ result: r2, job: J, signer: P(100).signer });
  const a = auditSelection({ selection: second, records: [J, a0, a1, solo, o0, o1, os, first] });
  assert.equal(a.reproduces, true, JSON.stringify(a.differences));
  assert.deepEqual(a.notes, [`1 provider with a live offer for this job was left out as tried in an earlier attempt (the winner of the decider's earlier selection ${first.address})`]);
});
