/**
 * A node's job history a page at a time (src/node/job-history.ts): a buyer's
 * jobs with the receipts held for each and only their own buyer's verdict, the
 * newest receipts naming a provider without sorting them all, and the page
 * query's stable error codes. On a real LevelDB, as the daemon keeps them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EvidenceStore } from '../../../src/reputation/store.js';
import { RecordStore } from '../../../src/store/records.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { attemptsOf, historyOf, jobHistory, newest, parseJobsPage, providedReceipts, JOBS_PAGE_DEFAULT } from '../../../src/node/job-history.js';
import { codeOf } from '../../../src/errors.js';
import { NOW, P, acceptance, advert, job, offer, receipt } from '../market/fixtures.js';
import { seal, T, type Advert, type Claim, type Opened, type Selection } from '../../../src/records/index.js';
import { signClaimNonDelivery, signNonDelivery } from '../../../src/reputation/nondelivery.js';
import { signFirstClaimSelection } from '../../../src/matching/first-claim.js';
import '../../../src/pools/chain.js';
import { MEMBERS, POOL, keyOf, pooledAdvert, proof, roster } from '../pools/helpers.js';

const BUYER = P(300);
const PROV = P(301);
const OTHER = P(302);

test('a buyer’s jobs newest first with their receipts, oldest first, and the verdict reputation counts: the receipt’s buyer’s latest', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-history-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const ev = new EvidenceStore();
    const jobs = Array.from({ length: 7 }, (_, i) => job(BUYER, { nonce: new Uint8Array([i, 31]), announcedAt: NOW + i * 1000, deadline: NOW + i * 1000 + 60_000 }));
    for (const j of jobs) await records.put(j);
    // job 3 failed over: a failure from PROV, then a success from OTHER; a stranger disputes the success
    const j3 = jobs[3]!;
    const o1 = offer(PROV, j3, advert(PROV));
    const r1 = receipt(PROV, BUYER, o1, { status: 'failed', startedAt: NOW + 3_100, completedAt: NOW + 3_200 });
    const o2 = offer(OTHER, j3, advert(OTHER));
    const r2 = receipt(OTHER, BUYER, o2, { startedAt: NOW + 3_300, completedAt: NOW + 3_400 });
    // the buyer accepted, then disputed later: the later verdict is the one reputation counts, and the one shown
    await ev.add(r2, o2, acceptance(P(303), r2, 'accepted', { signedAt: NOW + 90_000 }), acceptance(BUYER, r2, 'disputed', { signedAt: NOW + 50_000 }), acceptance(BUYER, r2, 'accepted'), r1, o1);
    const page = await jobHistory(records, ev, BUYER.did, { limit: 3 });
    assert.deepEqual(page.jobs.map((x) => x.job.address), [jobs[6]!, jobs[5]!, jobs[4]!].map((j) => j.address));
    const rest = await jobHistory(records, ev, BUYER.did, { limit: 3, before: page.next! });
    assert.equal(rest.jobs[0]!.job.address, j3.address);
    assert.deepEqual(rest.jobs[0]!.receipts.map((h) => [h.receipt.address, h.acceptance?.record.verdict]), [[r1.address, undefined], [r2.address, 'disputed']]);
    assert.ok(rest.next !== undefined);
    const last = await jobHistory(records, ev, BUYER.did, { limit: 3, before: rest.next });
    assert.deepEqual(last.jobs.map((x) => x.job.address), [jobs[0]!.address]);
    assert.equal(last.next, undefined);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the newest receipts naming a provider: the same as sorting them all, and the count held', async () => {
  const ev = new EvidenceStore();
  const starts = [5, 1, 9, 3, 9, 7, 2, 8, 6, 4, 0, 9];
  const rs = starts.map((t, i) => {
    const j = job(P(310 + (i % 3)), { nonce: new Uint8Array([i, 32]) });
    return receipt(PROV, P(310 + (i % 3)), offer(PROV, j, advert(PROV)), { startedAt: NOW + t * 1000, completedAt: NOW + t * 1000 + 10 });
  });
  await ev.add(...rs);
  await ev.add(receipt(OTHER, BUYER, offer(OTHER, job(BUYER), advert(OTHER))));
  const all = [...rs].sort((a, b) => b.record.startedAt - a.record.startedAt || (a.address < b.address ? 1 : -1)).map((r) => r.address);
  // in arrival order, in order oldest first (how the store returns a provider's own), and newest first
  assert.deepEqual(newest([...rs].sort((a, b) => a.record.startedAt - b.record.startedAt || (a.address < b.address ? -1 : 1)), 5, (r) => r.record.startedAt).map((r) => r.address), all.slice(0, 5));
  assert.deepEqual(newest([...rs].reverse().sort((a, b) => b.record.startedAt - a.record.startedAt), 5, (r) => r.record.startedAt).map((r) => r.address), all.slice(0, 5));
  for (const k of [1, 4, 12, 20]) {
    const got = providedReceipts(ev, PROV.did, k);
    assert.deepEqual(got.receipts.map((h) => h.receipt.address), all.slice(0, k), `newest ${k}`);
    assert.equal(got.total, 12);
  }
  assert.deepEqual(providedReceipts(ev, P(399).did, 5), { receipts: [], total: 0 });
});

test('the page query: limit 1–1000 (100 by default), before only as an earlier page’s next', () => {
  const q = (s: string) => parseJobsPage(new URLSearchParams(s));
  assert.deepEqual(q(''), { limit: JOBS_PAGE_DEFAULT });
  assert.deepEqual(q('limit=5'), { limit: 5 });
  const cursor = `${String(NOW).padStart(16, '0')}!sha256:${'ab'.repeat(32)}`;
  assert.deepEqual(q(`limit=1000&before=${encodeURIComponent(cursor)}`), { limit: 1000, before: cursor });
  for (const bad of ['limit=0', 'limit=1001', 'limit=-1', 'limit=x', 'limit=1e3']) assert.equal(codeOf(() => q(bad)), 'API_BAD_LIMIT', bad);
  for (const bad of ['before=', 'before=123', `before=${NOW}!sha256:${'ab'.repeat(32)}`, `before=${encodeURIComponent(cursor)}x`]) assert.equal(codeOf(() => q(bad)), 'API_BAD_CURSOR', bad);
});

test('a job with no receipt: each provider selected, with the non-delivery signed against that attempt or none (what `c0mpute jobs` lists)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-history-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const ev = new EvidenceStore();
    const j = job(BUYER, { nonce: new Uint8Array([9, 32]) });
    await records.put(j);
    assert.deepEqual(await attemptsOf(records, ev, j.address), [], 'no selection held');
    const o1 = offer(PROV, j, advert(PROV));
    const o2 = offer(OTHER, j, advert(OTHER));
    const sel = (o: typeof o1, at: number) => seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'cheapest', winner: o.address, considered: [{ provider: o.signer, offer: o.address }], decidedAt: at }, BUYER.signer) as Opened<Selection>;
    const s1 = sel(o1, NOW + 1);
    const s2 = sel(o2, NOW + 2);
    await records.put(s1);
    await records.put(s2);
    const nd = signNonDelivery({ job: j, selection: s1, offer: o1, reason: 'unreachable', signedAt: NOW + 10, signer: BUYER.signer });
    await ev.add(nd);
    const got = await attemptsOf(records, ev, j.address);
    assert.deepEqual(got.map((a) => [a.provider, a.selection.address, a.nondelivery?.address]), [[PROV.did, s1.address, nd.address], [OTHER.did, s2.address, undefined]]);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a failed attempt on a pool member’s offer shows the /2 non-delivery, filed under the pool’s DID (the one `c0mpute reputation` counts)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-history-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const ev = new EvidenceStore();
    const member = MEMBERS[0]!;
    const party = { did: member, signer: keyOf(member) };
    const ad = seal(T.advert, { ...pooledAdvert(proof(roster(), party.signer)), workloads: ['infer.llm'], issuedAt: NOW - 1000 }, party.signer) as Opened<Advert>;
    const j = job(BUYER, { nonce: new Uint8Array([9, 33]) });
    const o = offer(party, j, ad);
    const s = seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'cheapest', winner: o.address, considered: [{ provider: member, offer: o.address }], decidedAt: NOW + 1 }, BUYER.signer) as Opened<Selection>;
    for (const r of [j, ad, o, s]) await records.put(r);
    const nd = signNonDelivery({ job: j, selection: s, offer: o, advert: ad, reason: 'refused', signedAt: NOW + 10, signer: BUYER.signer });
    assert.equal(nd.type, T.nondelivery2);
    await ev.add(nd);
    assert.equal(ev.nondeliveriesAbout(POOL).length, 1, 'the store files it under the pool');
    const got = await attemptsOf(records, ev, j.address);
    assert.deepEqual(got.map((a) => [a.provider, a.selection.address, a.nondelivery?.address]), [[member, s.address, nd.address]]);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an open order whose winning claimant did not deliver: its attempt shows the /3, and the job reads failed with its reason (a pooled claim’s under the pool)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-history-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const ev = new EvidenceStore();
    const order = (n: number, by: { did: string; signer: typeof PROV.signer }, ad: Opened<Advert>) => {
      const j = job(BUYER, { nonce: new Uint8Array([9, n]), order: {} });
      const c = seal(T.claim, { job: j.address, advert: ad.address, price: j.record.maxPrice, issuedAt: NOW }, by.signer) as Opened<Claim>;
      const s = signFirstClaimSelection(j, { job: j.address, winner: { seq: 1, receivedAt: NOW, claim: c }, answers: [], considered: [{ seq: 1, provider: by.did, claim: c.address }] }, () => NOW, NOW + 1, BUYER.signer);
      return { j, c, s };
    };
    const plain = order(34, PROV, advert(PROV));
    for (const r of [plain.j, plain.c, plain.s]) await records.put(r);
    const nd = signClaimNonDelivery({ job: plain.j, selection: plain.s, claim: plain.c, reason: 'unreachable', signedAt: NOW + 10, signer: BUYER.signer });
    await ev.add(nd);
    const h = await historyOf(records, ev, BUYER.did, plain.j);
    assert.deepEqual(h.attempts.map((a) => [a.provider, a.selection.address, a.nondelivery?.address]), [[PROV.did, plain.s.address, nd.address]]);
    assert.deepEqual(h.outcome, { status: 'failed', provider: PROV.did, nondelivery: nd.address, reason: 'unreachable', at: NOW + 10 });
    // a pool member's claim on its pooled advert: the /3 is filed under the pool, found through the claim's advert
    // (the member's current advert, seq 2, is no longer pooled)
    const member = MEMBERS[0]!;
    const party = { did: member, signer: keyOf(member) };
    const pooled = seal(T.advert, { ...pooledAdvert(proof(roster(), party.signer)), workloads: ['infer.llm'], issuedAt: NOW - 1000 }, party.signer) as Opened<Advert>;
    const later = advert(party as never, { seq: 2 });
    const p = order(35, party, pooled);
    for (const r of [p.j, p.c, p.s, pooled, later]) await records.put(r);
    const pnd = signClaimNonDelivery({ job: p.j, selection: p.s, claim: p.c, advert: pooled, reason: 'refused', signedAt: NOW + 10, signer: BUYER.signer });
    await ev.add(pnd);
    assert.equal(ev.nondeliveriesAbout(POOL).length, 1, 'filed under the pool');
    const ph = await historyOf(records, ev, BUYER.did, p.j);
    assert.deepEqual(ph.attempts.map((a) => [a.provider, a.nondelivery?.address]), [[member, pnd.address]]);
    assert.equal(ph.outcome.status, 'failed');
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
