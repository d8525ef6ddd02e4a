import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { EvidenceStore, deriveReputation, signNonDelivery, type Evidence } from '../../../src/reputation/index.js';
import { open, seal, sealRaw, encodeCanonical, T, type Opened, type Selection } from '../../../src/records/index.js';
import { closeDb, openDb, sub } from '../../../src/store/db.js';
import { codeOf } from '../../../src/errors.js';
import { NOW, P, acceptance, advert, job, offer, receipt, shuffle, type Party } from '../market/fixtures.js';

const BUYER = P(100);
const PROV = P(1);
const AD = advert(PROV);

let n = 0;
function done(status: 'completed' | 'failed' = 'completed', quoted = 60_000, actual = 30_000, p = PROV) {
  const j = job(BUYER, { nonce: new Uint8Array([n & 0xff, (n++ >> 8) & 0xff]) });
  const o = offer(p, j, p === PROV ? AD : advert(p), { durationMs: quoted });
  const r = receipt(p, BUYER, o, { status, startedAt: NOW, completedAt: NOW + actual });
  return { j, o, r };
}
const ev = (receipts: Opened[], acceptances: Opened[] = [], offers: Opened[] = []): Evidence => ({ receipts, acceptances, offers }) as Evidence;
/** Reputation as BUYER sees it (the receipts' buyer: first-hand evidence). */
const derive = (e: Evidence) => deriveReputation(e, { self: BUYER.did });
/** The buyer's countersignature: a completed receipt counts as a success only with it. */
const ok = (r: Opened) => acceptance(BUYER, r as never, 'accepted');

test('an unknown provider scores exactly 0.5', () => {
  const t = derive(ev([]));
  assert.equal(t.scoreOf(PROV.did), 0.5);
  assert.equal(t.get(PROV.did).score, 0.5);
});

test('Laplace smoothing: one success → 2/3; a thousand jobs with two failures outrank one success', () => {
  const one = done();
  assert.equal(derive(ev([one.r], [ok(one.r)])).scoreOf(PROV.did), 2 / 3);
  // a completed receipt its buyer never countersigned proves nothing (its `buyer` is only the provider's claim)
  assert.equal(derive(ev([one.r])).scoreOf(PROV.did), 0.5);
  // the formula on counts (cheaper than signing a thousand receipts)
  const S = (s: number, f: number) => (1 + s) / (2 + s + f);
  assert.ok(S(998, 2) > S(1, 0));
  const fail = done('failed');
  assert.equal(derive(ev([fail.r], [ok(fail.r)])).scoreOf(PROV.did), 1 / 3);
});

test('a receipt counts only if signed by the provider it names; a duplicate counts once', () => {
  const x = done();
  // the record layer refuses a receipt naming another provider
  const bad = sealRaw(T.receipt, encodeCanonical({ ...coreOf(x.r), provider: P(2).did }), P(3).signer);
  assert.equal(codeOf(() => open(bad, T.receipt)), 'RECEIPT_SIGNER_NOT_PROVIDER');
  // and the evidence store refuses one handed over already "opened"
  const forged = { ...x.r, signer: P(3).did } as Opened;
  assert.equal(codeOf(() => EvidenceStore.check(forged)), 'REPUTATION_RECEIPT_NOT_PROVIDER');
  assert.equal(derive(ev([forged], [ok(forged)])).scoreOf(PROV.did), 0.5);
  assert.equal(derive(ev([x.r, x.r, x.r], [ok(x.r), ok(x.r)])).get(PROV.did).jobs, 1);
  // several receipts for one offer count once, the worst outcome
  const again = receipt(PROV, BUYER, x.o, { status: 'failed', startedAt: NOW, completedAt: NOW + 1 });
  const f = derive(ev([x.r, again], [ok(x.r), ok(again)])).get(PROV.did);
  assert.deepEqual([f.jobs, f.successes, f.failures], [1, 0, 1]);
});

function coreOf(r: Opened): Record<string, unknown> {
  const rec = { ...(r.record as Record<string, unknown>) };
  for (const k of ['job', 'offer', 'inputHash', 'outputHash']) if (typeof rec[k] === 'string') rec[k] = Buffer.from((rec[k] as string).slice(7), 'hex');
  return rec;
}

test('a dispute by the receipt’s own buyer costs more than a failure; anyone else’s dispute is ignored', () => {
  const good = done();
  const failed = done('failed');
  const disputed = done();
  const dispute = acceptance(BUYER, disputed.r, 'disputed');
  const t = derive(ev([good.r, failed.r, disputed.r], [dispute, ok(good.r), ok(failed.r)]));
  const f = t.get(PROV.did);
  assert.deepEqual([f.successes, f.failures, f.disputes], [1, 1, 1]);
  assert.equal(f.successRate, (1 + 1) / (2 + 1 + 1 + 2));
  const other = done('failed');
  const withFailureInstead = derive(ev([good.r, failed.r, other.r], [ok(good.r), ok(failed.r), ok(other.r)])).scoreOf(PROV.did);
  assert.ok(t.scoreOf(PROV.did) < withFailureInstead);
  // a dispute signed by someone who is not the receipt's buyer: ignored
  const stranger = acceptance(P(300), disputed.r, 'disputed');
  assert.equal(derive(ev([disputed.r], [stranger])).get(PROV.did).disputes, 0);
  // latest verdict of the buyer wins; a tie goes to the dispute
  const later = acceptance(BUYER, disputed.r, 'accepted', { signedAt: NOW + 50_000 });
  assert.equal(derive(ev([disputed.r], [dispute, later])).get(PROV.did).disputes, 0);
  const same = acceptance(BUYER, disputed.r, 'accepted', { signedAt: NOW + 40_000 });
  assert.equal(derive(ev([disputed.r], [same, dispute])).get(PROV.did).disputes, 1);
});

test('quote accuracy: only (offer, receipt citing it, same provider) pairs; under-quoting costs', () => {
  const honest = done('completed', 60_000, 30_000);
  const under = done('completed', 10_000, 40_000);
  // no offers held: no pairs, accuracy 1
  const accs = [ok(honest.r), ok(under.r)];
  assert.equal(derive(ev([honest.r, under.r], accs)).get(PROV.did).accuracy, 1);
  const t = derive(ev([honest.r, under.r], accs, [honest.o, under.o]));
  const f = t.get(PROV.did);
  assert.equal(f.quotePairs, 2);
  assert.equal(f.underQuoted, 1);
  assert.equal(f.accuracy, (1 + 1 + 0.25) / 3);
  assert.equal(f.score, f.successRate * f.accuracy);
  // an offer the receipt does not cite gives nothing
  const other = done('completed', 10_000, 40_000);
  assert.equal(derive(ev([honest.r], accs, [other.o])).get(PROV.did).quotePairs, 0);
  // an offer by another provider cited by the receipt gives nothing
  const x = done('completed', 60_000, 30_000, P(2));
  const r = receipt(PROV, BUYER, x.o);
  assert.equal(derive(ev([r], [ok(r)], [x.o])).get(PROV.did).quotePairs, 0);
});

test('property: the same evidence in any order gives the same figures', () => {
  const items = [done(), done('failed'), done('completed', 10_000, 30_000), done(), done('completed', 60_000, 30_000, P(2)), done('failed', 60_000, 1, P(2))];
  const receipts = items.map((i) => i.r);
  const offers = items.map((i) => i.o);
  const acceptances = [acceptance(BUYER, items[3]!.r, 'disputed'), acceptance(BUYER, items[0]!.r, 'accepted'), acceptance(BUYER, items[4]!.r, 'disputed'), ok(items[2]!.r)];
  const ref = JSON.stringify(derive(ev(receipts, acceptances, offers)).all());
  fc.assert(
    fc.property(fc.integer(), (seed) => {
      const t = derive(ev(shuffle([...receipts, ...receipts], seed), shuffle(acceptances, seed + 1), shuffle(offers, seed + 2)));
      assert.equal(JSON.stringify(t.all()), ref);
    }),
    { numRuns: 100 },
  );
});

test('the evidence store persists evidence (not scores), refuses what is not evidence, and a restart derives the same figures', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-rep-'));
  try {
    let db = await openDb(dir);
    const s = await EvidenceStore.open(db);
    const a = done();
    const b = done('failed');
    assert.equal(await s.add(a.r, a.o, b.r), 3);
    assert.equal(await s.add(a.r), 0);
    await assert.rejects(s.add(AD), { code: 'REPUTATION_UNSUPPORTED_TYPE' });
    await assert.rejects(s.add(b.o, { ...a.r, signer: P(9).did } as Opened), { code: 'REPUTATION_RECEIPT_NOT_PROVIDER' });
    assert.equal(s.size, 3); // nothing from the refused batch was kept
    assert.equal(await s.addBytes(acceptance(BUYER, a.r, 'disputed').bytes), 1);
    const view = { self: BUYER.did };
    const before = JSON.stringify(s.derive(view).all());
    await closeDb(db);
    db = await openDb(dir);
    const s2 = await EvidenceStore.open(db);
    assert.equal(JSON.stringify(s2.derive(view).all()), before);
    assert.equal(s2.derive(view).get(PROV.did).disputes, 1);
    await closeDb(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the evidence store is bounded: past maxEvidence second-hand outcomes go whole, the oldest first, on disk too; first-hand ones stay while second-hand can go', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-rep-'));
  const OTHER = P(60);
  const LATER = NOW + 1e9; // arrivals: after every record here was made
  const second = (t: number, buyer = OTHER, prov = P(2)) => {
    const j = job(buyer, { nonce: new Uint8Array([n & 0xff, (n++ >> 8) & 0xff]) });
    const o = offer(prov, j, advert(prov), { durationMs: 60_000 });
    const r = receipt(prov, buyer, o, { status: 'completed', startedAt: NOW, completedAt: NOW + t });
    return { o, r, a: acceptance(buyer, r, 'accepted', { signedAt: NOW + t + 1 }) };
  };
  try {
    let db = await openDb(dir);
    const evicted: number[] = [];
    const bound = { max: 30, self: BUYER.did, clock: () => LATER, onEvict: (k: number) => void evicted.push(k) };
    const s = await EvidenceStore.open(db, 'reputation-evidence', bound);
    const mine = Array.from({ length: 5 }, () => done());
    for (const m of mine) await s.add(m.r, m.o, ok(m.r)); // 15 first-hand records
    const theirs = Array.from({ length: 10 }, (_, i) => second(1_000 * (i + 1)));
    for (const t of theirs) await s.add(t.r, t.o, t.a);
    assert.ok(s.size <= 30, `held ${s.size}`);
    assert.ok(evicted.length > 0 && evicted.every((k) => k > 0));
    for (const m of mine) assert.ok(s.receipts.has(m.r.address) && s.offers.has(m.o.address) && s.acceptances.has(ok(m.r).address), 'first-hand evidence stays');
    // a job's outcome goes whole: no acceptance or offer is left without its receipt
    for (const t of theirs) assert.equal(s.receipts.has(t.r.address), s.offers.has(t.o.address) && s.acceptances.has(t.a.address), 'receipt, offer and acceptance go together');
    // the oldest went: the newest second-hand outcome is held, the oldest is not
    assert.ok(s.receipts.has(theirs.at(-1)!.r.address));
    assert.ok(!s.receipts.has(theirs[0]!.r.address));
    const held = [...s.receipts.keys(), ...s.offers.keys(), ...s.acceptances.keys()].sort();
    // the eviction is on disk: a reopen holds the same records
    await closeDb(db);
    db = await openDb(dir);
    const s2 = await EvidenceStore.open(db, 'reputation-evidence', bound);
    assert.deepEqual([...s2.receipts.keys(), ...s2.offers.keys(), ...s2.acceptances.keys()].sort(), held);
    // a store opened under a lower bound is trimmed at open
    await closeDb(db);
    db = await openDb(dir);
    const s4 = await EvidenceStore.open(db, 'reputation-evidence', { ...bound, max: 18 });
    assert.ok(s4.size <= 18 && mine.every((m) => s4.receipts.has(m.r.address)), `held ${s4.size}`);
    await closeDb(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('evidence eviction: what counts here goes last, a future date buys nothing, this node\'s own outcomes go last (as a buyer after as a provider) but are bounded too, a failed write loses nothing', async () => {
  const TRUSTED = P(61);
  const ANYONE = P(62);
  let clockNow = NOW + 1e9;
  const outcome = (buyer: typeof TRUSTED, t: number, prov = P(3)) => {
    const j = job(buyer, { nonce: new Uint8Array([n & 0xff, (n++ >> 8) & 0xff]) });
    const o = offer(prov, j, advert(prov), { durationMs: 60_000 });
    const r = receipt(prov, buyer, o, { status: 'completed', startedAt: NOW, completedAt: NOW + t });
    return { o, r, a: acceptance(buyer, r, 'accepted', { signedAt: NOW + t + 1 }) };
  };
  // a trusted buyer's old outcome outlives an untrusted buyer's newer ones
  const s = new EvidenceStore(undefined, { max: 10, self: BUYER.did, trusted: [TRUSTED.did], clock: () => clockNow });
  const old = outcome(TRUSTED, 1_000);
  await s.add(old.r, old.o, old.a);
  for (let i = 0; i < 3; i++) {
    const x = outcome(ANYONE, 5_000 + i);
    await s.add(x.r, x.o, x.a);
  }
  assert.ok(s.receipts.has(old.r.address), 'the trusted buyer’s outcome stays');
  assert.ok(s.size <= 10);
  // a receipt dated a year ahead is dated by its arrival: it goes before a later arrival dated now
  const t = new EvidenceStore(undefined, { max: 6, self: BUYER.did, clock: () => clockNow });
  const future = outcome(ANYONE, 365 * 86_400_000);
  await t.add(future.r, future.o, future.a);
  clockNow += 1_000;
  const now1 = outcome(ANYONE, 1e9 + 500); // made before it arrives, after the future one arrived
  await t.add(now1.r, now1.o, now1.a);
  const now2 = outcome(ANYONE, 1e9 + 600);
  await t.add(now2.r, now2.o, now2.a);
  assert.ok(!t.receipts.has(future.r.address), 'the future-dated outcome went first');
  assert.ok(t.receipts.has(now2.r.address));
  // this node as the provider: its receipts and the buyers' verdicts on them are first-hand, and go last but for
  // its jobs as a buyer; past the bound with nothing else held, the oldest go, each outcome whole
  const prov = new EvidenceStore(undefined, { max: 7, self: P(3).did, clock: () => clockNow });
  const own = Array.from({ length: 2 }, (_, i) => outcome(ANYONE, 10_000 + i));
  for (const x of own) await prov.add(x.r, x.o, x.a);
  const bought = outcome(P(3), 5_000, P(4)); // older than both, but this node's own job as a buyer: 9 records, down to 6 (own[0] goes)
  await prov.add(bought.r, bought.o, bought.a);
  const heard = outcome(ANYONE, 20_000, P(5)); // newest, but second-hand
  await prov.add(heard.r, heard.o, heard.a); // 9 records again: the second-hand outcome goes
  assert.ok(!prov.receipts.has(heard.r.address), 'second-hand first');
  assert.ok(!prov.receipts.has(own[0]!.r.address) && !prov.acceptances.has(own[0]!.a.address) && !prov.offers.has(own[0]!.o.address), 'then the oldest of its jobs as a provider, whole');
  assert.ok(prov.acceptances.has(own[1]!.a.address) && prov.receipts.has(bought.r.address) && prov.acceptances.has(bought.a.address));
  assert.equal(prov.size, 6);
  assert.equal(prov.derive({ self: P(3).did }).get(P(3).did).successes, 1);
  // nothing but its jobs as a buyer: the bound holds them too, the oldest going first
  const buyerOnly = new EvidenceStore(undefined, { max: 7, self: BUYER.did, clock: () => clockNow });
  const mine = Array.from({ length: 3 }, (_, i) => outcome(BUYER, 30_000 + i, P(6 + i)));
  for (const x of mine) await buyerOnly.add(x.r, x.o, x.a);
  assert.deepEqual(mine.map((x) => buyerOnly.receipts.has(x.r.address)), [false, true, true]);
  // a failed eviction: the add still succeeds, nothing is lost, the error is reported
  const errors: unknown[] = [];
  const failing = { batch: async (ops: Array<{ type: string }>) => { if (ops[0]?.type === 'del') throw new Error('disk full'); } };
  const f = new EvidenceStore(failing as never, { max: 3, self: BUYER.did, clock: () => clockNow, onError: (e) => void errors.push(e) });
  const a = outcome(ANYONE, 1), b = outcome(ANYONE, 2);
  await f.add(a.r, a.o, a.a);
  assert.equal(await f.add(b.r, b.o, b.a), 3);
  assert.equal(f.size, 6);
  assert.equal((errors[0] as { code?: string }).code, 'STORE_WRITE_FAILED');
  assert.throws(() => new EvidenceStore(undefined, { max: 0 }), { code: 'REPUTATION_BAD_BOUND' });
});

test('evidence eviction: an offer goes with every receipt it prices, never while one of them stays; a receipt citing another signer’s offer goes without it', async () => {
  const OTHER = P(63);
  const clockNow = NOW + 1e9;
  const mk = (t: number, prov = P(4), buyer = OTHER) => {
    const j = job(buyer, { nonce: new Uint8Array([n & 0xff, (n++ >> 8) & 0xff]) });
    const o = offer(prov, j, advert(prov), { durationMs: 60_000 });
    const r = receipt(prov, buyer, o, { status: 'completed', startedAt: NOW, completedAt: NOW + t });
    return { o, r, a: acceptance(buyer, r, 'accepted', { signedAt: NOW + t + 1 }) };
  };
  const counted: number[] = [];
  // A third party's store (BUYER takes part in none of these jobs except where said).
  const s = new EvidenceStore(undefined, { max: 10, self: BUYER.did, clock: () => clockNow, onEvict: (k) => void counted.push(k) });
  // A job with two receipts for one offer: the first old, the second (a retry) new.
  const twice = mk(1_000);
  const retry = receipt(P(4), OTHER, twice.o, { status: 'failed', startedAt: NOW, completedAt: NOW + 9_000 });
  // A first-hand receipt citing the same offer as an old second-hand one: this node's own through the acceptance it
  // countersigned (its `buyer` field alone is only the provider's claim).
  const shared = mk(500);
  const mine = receipt(P(4), BUYER, shared.o, { status: 'completed', startedAt: NOW, completedAt: NOW + 600 });
  const mineOk = acceptance(BUYER, mine, 'accepted', { signedAt: NOW + 601 });
  // A receipt signed by someone else citing P(4)'s offer: it prices nothing, and must not take the offer or pin it.
  const foreign = receipt(P(5), OTHER, twice.o, { status: 'completed', startedAt: NOW, completedAt: NOW + 100 });
  await s.add(twice.r, twice.o, twice.a, retry, shared.r, shared.o, shared.a, mine, mineOk, foreign); // 10 records
  const added = 10 + 3 * 2;
  for (const t of [mk(3_000), mk(4_000)]) await s.add(t.r, t.o, t.a); // 16: past the bound, down to 9
  assert.ok(s.size <= 10, `held ${s.size}`);
  assert.equal(counted.reduce((x, y) => x + y, 0), added - s.size, 'every record evicted is counted once');
  // the first-hand receipt keeps its offer, and the second-hand receipt that shares it stays with them
  assert.ok(s.receipts.has(mine.address) && s.offers.has(shared.o.address) && s.receipts.has(shared.r.address));
  // the two receipts of one offer and the offer: all held or all gone (dated by the newer, so held here)
  assert.equal(s.receipts.has(twice.r.address), s.offers.has(twice.o.address));
  assert.equal(s.receipts.has(retry.address), s.offers.has(twice.o.address));
  assert.ok(s.receipts.has(retry.address), 'the pair is dated by its newer receipt');
  // the foreign receipt, the oldest, went alone
  assert.ok(!s.receipts.has(foreign.address));
  // with the bound lower still, the retried job goes whole and the first-hand one stays
  const t = new EvidenceStore(undefined, { max: 7, self: BUYER.did, clock: () => clockNow });
  await t.add(twice.r, twice.o, twice.a, retry, shared.r, shared.o, shared.a, mine, mineOk);
  const newer = mk(20_000);
  await t.add(newer.r, newer.o, newer.a);
  assert.ok(!t.receipts.has(retry.address) && !t.receipts.has(twice.r.address) && !t.offers.has(twice.o.address) && !t.acceptances.has(twice.a.address));
  assert.ok(t.receipts.has(mine.address) && t.offers.has(shared.o.address));
});

test('evidence eviction: an add arriving while an eviction deletes waits for it, so a receipt added with its offer keeps it', async () => {
  const OTHER = P(64);
  const clockNow = NOW + 1e9;
  const mk = (t: number) => {
    const j = job(OTHER, { nonce: new Uint8Array([n & 0xff, (n++ >> 8) & 0xff, 64]) });
    const o = offer(P(7), j, advert(P(7)), { durationMs: 60_000 });
    const r = receipt(P(7), OTHER, o, { status: 'completed', startedAt: NOW, completedAt: NOW + t });
    return { o, r, a: acceptance(OTHER, r, 'accepted', { signedAt: NOW + t + 1 }) };
  };
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const slow = { batch: async (ops: Array<{ type: string }>) => { if (ops[0]?.type === 'del') await gate; } };
  const s = new EvidenceStore(slow as never, { max: 6, self: BUYER.did, clock: () => clockNow });
  const old = mk(1_000);
  const mid = mk(2_000);
  await s.add(old.r, old.o, old.a, mid.r, mid.o, mid.a);
  // past the bound: the eviction takes `old` whole and waits on its delete
  const newer = mk(3_000);
  const evicting = s.add(newer.r, newer.o, newer.a);
  await new Promise((r) => setImmediate(r));
  // a second receipt for old's offer (a retry), sent with the offer, arrives meanwhile
  const retry = receipt(P(7), OTHER, old.o, { status: 'failed', startedAt: NOW, completedAt: NOW + 9_000 });
  const racing = s.add(retry, old.o);
  release();
  await Promise.all([evicting, racing]);
  assert.ok(!s.receipts.has(old.r.address), 'the eviction took the old outcome');
  assert.ok(s.receipts.has(retry.address) && s.offers.has(old.o.address), 'the retry came after it, with its offer');
});

test('evidence eviction: a record is this node\'s own only when it signed it; a stranger naming it as buyer or provider ranks nothing, and one non-delivery is kept per (signer, provider, job)', async () => {
  const SELF = P(70), BAD = P(71), HONEST = P(72), STRANGER = P(73);
  let clockNow = NOW + 1e9;
  const nonce = () => new Uint8Array([n & 0xff, (n++ >> 8) & 0xff, 70]);
  const nd = (buyer: Party, prov: Party, j = job(buyer, { nonce: nonce() }), o = offer(prov, j, advert(prov)), signedAt = NOW + 1_000) => {
    const sel = seal(T.selection, { job: j.address, buyer: buyer.did, policy: 'balanced', winner: o.address, considered: [{ provider: prov.did, offer: o.address }], decidedAt: NOW }, buyer.signer) as Opened<Selection>;
    return signNonDelivery({ job: j, selection: sel, offer: o, reason: 'timeout', signedAt, signer: buyer.signer });
  };
  // a buyer's real history: two non-deliveries it signed, two jobs it accepted
  const s = new EvidenceStore(undefined, { max: 20, self: SELF.did, clock: () => clockNow });
  const mine = [nd(SELF, BAD), nd(SELF, BAD)];
  await s.add(...mine);
  const jobs = [0, 1].map(() => {
    const o = offer(HONEST, job(SELF, { nonce: nonce() }), advert(HONEST));
    const r = receipt(HONEST, SELF, o, { completedAt: NOW + 2_000 });
    return { o, r, a: acceptance(SELF, r, 'accepted', { signedAt: NOW + 2_001 }) };
  });
  for (const x of jobs) await s.add(x.r, x.o, x.a);
  // a flood of receipts from throwaway providers naming this node as buyer, dated now: its `buyer` is their claim
  for (let i = 0; i < 40; i++) {
    const p = P(200 + i);
    clockNow += 1;
    await s.add(receipt(p, SELF, offer(p, job(STRANGER, { nonce: nonce() }), advert(p)), { completedAt: clockNow }));
  }
  assert.ok(s.size <= 20);
  for (const x of mine) assert.ok(s.nondeliveries.has(x.address), 'its signed non-deliveries stay');
  for (const x of jobs) assert.ok(s.receipts.has(x.r.address) && s.acceptances.has(x.a.address), 'its accepted jobs stay');
  const t = s.derive({ self: SELF.did });
  assert.equal(t.get(BAD.did).nonDeliveries, 2);
  assert.equal(t.get(HONEST.did).successes, 2);

  // a provider: a stranger's non-deliveries naming it do not rank as its own, and one real offer buys one of them
  const prov = new EvidenceStore(undefined, { max: 20, self: BAD.did, clock: () => clockNow });
  const served = [0, 1, 2].map(() => {
    const o = offer(BAD, job(HONEST, { nonce: nonce() }), advert(BAD));
    const r = receipt(BAD, HONEST, o, { completedAt: NOW + 3_000 });
    return { o, r, a: acceptance(HONEST, r, 'accepted', { signedAt: NOW + 3_001 }) };
  });
  for (const x of served) await prov.add(x.r, x.o, x.a);
  const j = job(STRANGER, { nonce: nonce() });
  const o = offer(BAD, j, advert(BAD));
  const first = nd(STRANGER, BAD, j, o, clockNow);
  assert.equal(await prov.add(first), 1);
  const again = Array.from({ length: 30 }, (_, i) => nd(STRANGER, BAD, j, o, clockNow + 1 + i));
  assert.equal(await prov.add(...again.slice(0, 2)), 0, 'a second non-delivery for one (signer, provider, job) is dropped, in one add too');
  for (const x of again.slice(2)) assert.equal(await prov.add(x), 0);
  assert.equal(prov.nondeliveries.size, 1);
  // many strangers' jobs, each with a real offer: their non-deliveries count for nothing here and go before its own
  for (let i = 0; i < 30; i++) {
    clockNow += 1;
    await prov.add(nd(P(300 + i), BAD, undefined, undefined, clockNow));
  }
  assert.ok(prov.size <= 20);
  for (const x of served) assert.ok(prov.receipts.has(x.r.address) && prov.acceptances.has(x.a.address), 'its own jobs as a provider stay');
  assert.equal(prov.derive({ self: BAD.did }).get(BAD.did).successes, 3);
});

test('the evidence store keeps one non-delivery per (signer, provider, job) across a restart: extra ones stored before go at open', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-ev-nd-'));
  try {
    const B = P(74), PR = P(75);
    const j = job(B, { nonce: new Uint8Array([74, 74]) });
    const o = offer(PR, j, advert(PR));
    const sel = seal(T.selection, { job: j.address, buyer: B.did, policy: 'balanced', winner: o.address, considered: [{ provider: PR.did, offer: o.address }], decidedAt: NOW }, B.signer) as Opened<Selection>;
    const nds = [1, 2, 3].map((i) => signNonDelivery({ job: j, selection: sel, offer: o, reason: 'timeout', signedAt: NOW + i, signer: B.signer }));
    let db = await openDb(dir);
    // as a previous version stored them: every one under its own key
    await sub(db, 'reputation-evidence').batch(nds.map((x) => ({ type: 'put' as const, key: `nondelivery!${x.address}`, value: x.bytes })));
    let s = await EvidenceStore.open(db);
    assert.equal(s.nondeliveries.size, 1);
    await closeDb(db);
    db = await openDb(dir);
    let keys = 0;
    for await (const k of sub(db, 'reputation-evidence').keys()) keys += k ? 1 : 0;
    assert.equal(keys, 1, 'the extra ones are gone on disk');
    s = await EvidenceStore.open(db);
    assert.equal(s.nondeliveries.size, 1);
    await closeDb(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the evidence store is bounded by bytes too: large non-deliveries from throwaway buyers go first, what counts here stays', async () => {
  const SELF = P(80), BAD = P(81), TRUST = P(82), OTHER = P(83);
  let clockNow = NOW + 1e9;
  const nonce = () => new Uint8Array([n & 0xff, (n++ >> 8) & 0xff, 80]);
  // a job padded to some 8 KiB (a long allowlist): its non-delivery carries it
  const pad = Array.from({ length: 150 }, (_, i) => P(400 + i).did).sort();
  const nd = (buyer: Party, big = false) => {
    const j = job(buyer, { nonce: nonce(), ...(big ? { requirements: { allowlist: [...pad, BAD.did].sort() } } : {}) } as never);
    const o = offer(BAD, j, advert(BAD));
    const sel = seal(T.selection, { job: j.address, buyer: buyer.did, policy: 'balanced', winner: o.address, considered: [{ provider: BAD.did, offer: o.address }], decidedAt: NOW }, buyer.signer) as Opened<Selection>;
    return signNonDelivery({ job: j, selection: sel, offer: o, reason: 'timeout', signedAt: clockNow, signer: buyer.signer });
  };
  const held = (s: EvidenceStore) => [...s.receipts.values(), ...s.acceptances.values(), ...s.offers.values(), ...s.nondeliveries.values()].reduce((t, r) => t + r.bytes.length, 0);
  const maxBytes = 60_000;
  const s = new EvidenceStore(undefined, { max: 1_000, maxBytes, self: SELF.did, trusted: [TRUST.did], clock: () => clockNow });
  const mine = nd(SELF);
  const theirs = nd(TRUST);
  const o = offer(OTHER, job(SELF, { nonce: nonce() }), advert(OTHER));
  const r = receipt(OTHER, SELF, o, { completedAt: NOW + 5 });
  const a = acceptance(SELF, r, 'accepted', { signedAt: NOW + 6 });
  await s.add(mine, theirs, r, o, a);
  const big = nd(P(84), true);
  assert.ok(big.bytes.length > 8_000, `a padded non-delivery is ${big.bytes.length} bytes`);
  for (let i = 0; i < 20; i++) {
    clockNow += 1;
    await s.add(nd(P(500 + i), true)); // each a throwaway buyer: counts for nothing here
  }
  assert.ok(s.size < 30, `far under the count bound (${s.size}), yet bounded`);
  assert.ok(held(s) <= maxBytes, `held ${held(s)} bytes, over ${maxBytes}`);
  assert.equal(s.bytes, held(s));
  for (const x of [mine, theirs]) assert.ok(s.nondeliveries.has(x.address), 'this node\'s own and a trusted buyer\'s non-deliveries stay');
  assert.ok(s.receipts.has(r.address) && s.acceptances.has(a.address) && s.offers.has(o.address));
  const t = s.derive({ self: SELF.did, trust: { trustedBuyers: [TRUST.did] } });
  assert.equal(t.get(BAD.did).nonDeliveries, 1.5);
  assert.throws(() => new EvidenceStore(undefined, { max: 10, maxBytes: 0 }), { code: 'REPUTATION_BAD_BOUND' });
});

test('a receipt naming this node as buyer is first-hand only with this node\'s verdict on it; without, it weighs nothing and displaces no proven outcome', () => {
  // a failed receipt any provider key can sign naming this node: its `buyer` is only that signer's claim
  const claimed = done('failed');
  const f = derive(ev([claimed.r])).get(PROV.did);
  assert.deepEqual([f.failures, f.firstHand, f.untrusted, f.score], [0, 0, 1, 0.5]);
  // countersigned by this node (it accepts every receipt of its jobs, a failed one too): first-hand
  const g = derive(ev([claimed.r], [ok(claimed.r)])).get(PROV.did);
  assert.deepEqual([g.failures, g.firstHand, g.score], [1, 1, 1 / 3]);
  // an unproven failure for a job this node accepted a success of does not take its place
  const x = done();
  const again = receipt(PROV, BUYER, x.o, { status: 'failed', startedAt: NOW, completedAt: NOW + 1 });
  const h = derive(ev([x.r, again], [ok(x.r)])).get(PROV.did);
  assert.deepEqual([h.successes, h.failures, h.firstHand, h.untrusted], [1, 0, 1, 1]);
  // a trusted buyer's evidence is unchanged: a failed receipt naming it is the provider's admission
  const T2 = P(150);
  const o = offer(PROV, job(T2, { nonce: new Uint8Array([150]) }), AD);
  const theirs = receipt(PROV, T2, o, { status: 'failed' });
  assert.equal(deriveReputation(ev([theirs]), { self: BUYER.did, trust: { trustedBuyers: [T2.did] } }).get(PROV.did).failures, 0.5);
});

test('a failed receipt saying its buyer went away (EXEC_BUYER_GONE) counts only with that buyer\'s verdict, at every node: a trusted buyer\'s restart costs its providers nothing', () => {
  // a trusted buyer stopped (or was killed) with work in flight: its provider ends the work EXEC_BUYER_GONE and the
  // buyer, gone, signs no verdict. The buyer counts nothing; before (review s43 R5 F2) a node trusting it counted a failure
  const T3 = P(151);
  const o = offer(PROV, job(T3, { nonce: new Uint8Array([151]) }), AD);
  const gone = receipt(PROV, T3, o, { status: 'failed', failure: { code: 'EXEC_BUYER_GONE', message: 'the buyer closed the stream' } });
  const trusting = { self: BUYER.did, trust: { trustedBuyers: [T3.did] } };
  const f = deriveReputation(ev([gone]), trusting).get(PROV.did);
  assert.deepEqual([f.failures, f.secondHand, f.untrusted, f.score], [0, 0, 1, 0.5]);
  for (const self of [T3.did, PROV.did]) {
    const g = deriveReputation(ev([gone]), { self }).get(PROV.did);
    assert.deepEqual([g.failures, g.untrusted], [0, 1], 'as at the buyer itself, and at the provider');
  }
  // with the buyer's verdict (it was still there and countersigned) it is a failure like any other
  const signed = acceptance(T3, gone, 'accepted');
  assert.equal(deriveReputation(ev([gone], [signed]), trusting).get(PROV.did).failures, 0.5);
  // another failure code without a verdict stays the provider's admission
  const oom = receipt(PROV, T3, o, { status: 'failed', startedAt: NOW + 1 });
  assert.equal(deriveReputation(ev([oom]), trusting).get(PROV.did).failures, 0.5);
});
