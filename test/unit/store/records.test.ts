/** The record store on a real LevelDB in a temp dir: put/get/list, advert replacement by seq, restart. */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { hashHex } from '../../../src/records/address.js';
import { T, type Advert, type Job, type Offer, type Selection } from '../../../src/records/kinds.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { RecordStore } from '../../../src/store/records.js';
import { WITNESS_TYPE, type WitnessReceipt } from '../../../src/ledger/entry.js';

const NOW = 1_800_000_000_000;
/** What a prune reports, without its cursor. */
const counts = (r: { removed: number; more: boolean }) => ({ removed: r.removed, more: r.more });

function advert(signer: Ed25519Signer, seq: number): Opened<Advert> {
  return seal(T.advert, { seq, issuedAt: NOW, expiresAt: NOW + 600_000, workloads: ['builtin.sha256'], tier: 'community', hardware: { cpuCores: 4, memoryMiB: 8192 } }, signer);
}

function job(signer: Ed25519Signer, n: number): Opened<Job> {
  const input = new TextEncoder().encode(`input ${n}`);
  return seal(
    T.job,
    { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: NOW, deadline: NOW + 60_000, timeoutMs: 10_000, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no', nonce: Uint8Array.of(n) },
    signer,
  );
}

function offer(signer: Ed25519Signer, j: Opened<Job>, a: Opened<Advert>): Opened<Offer> {
  return seal(T.offer, { job: j.address, advert: a.address, price: { amount: '0.001', currency: 'USD' }, durationMs: 1000, issuedAt: NOW, startBy: NOW + 30_000, expiresAt: NOW + 30_000 }, signer);
}

describe('RecordStore (real LevelDB)', () => {
  let dir: string;
  const buyer = Ed25519Signer.generate();
  const p1 = Ed25519Signer.generate();
  const p2 = Ed25519Signer.generate();
  const did1 = didFromPublicKey(p1.publicKey);
  const did2 = didFromPublicKey(p2.publicKey);

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'c0-store-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('put, has, get, getBytes and list by type; a second put of the same record is a no-op', async () => {
    const db = await openDb(join(dir, 'basic'));
    try {
      const s = await RecordStore.open(db);
      const jobs = [job(buyer, 1), job(buyer, 2), job(buyer, 3)];
      for (const j of jobs) assert.equal(await s.put(j), true);
      assert.equal(await s.put(jobs[0]!), false);
      const a = advert(p1, 1);
      const o = offer(p1, jobs[0]!, a);
      assert.equal(await s.put(o), true);

      assert.equal(await s.has(jobs[1]!.address), true);
      assert.equal(await s.has(hashHex(new Uint8Array(1))), false);
      const got = await s.get(jobs[1]!.address, T.job);
      assert.ok(got);
      assert.equal(got.signer, didFromPublicKey(buyer.publicKey));
      assert.deepEqual(got.record, jobs[1]!.record);
      assert.deepEqual(new Uint8Array((await s.getBytes(o.address))!), o.bytes);
      assert.equal(await s.get(hashHex(new Uint8Array(1)), T.job), undefined);
      // Asking for the wrong type gives nothing, not a mistyped record.
      assert.equal(await s.get(o.address, T.job), undefined);

      const listed = await s.list(T.job);
      assert.deepEqual(
        listed.map((r) => r.address),
        jobs.map((j) => j.address).sort(),
      );
      assert.equal((await s.list(T.job, 2)).length, 2);
      assert.deepEqual(
        (await s.list(T.offer)).map((r) => r.address),
        [o.address],
      );
      assert.deepEqual(await s.list(T.receipt), []);
    } finally {
      await closeDb(db);
    }
  });

  test('adverts: a higher seq replaces the provider’s advert, an equal or lower one does not', async () => {
    const db = await openDb(join(dir, 'adverts'));
    try {
      const s = await RecordStore.open(db);
      const a5 = advert(p1, 5);
      assert.equal(await s.put(a5), true);
      assert.equal(s.advertOf(did1)?.address, a5.address);

      const a5b = seal(T.advert, { ...a5.record, workloads: ['builtin.primes'] }, p1); // same seq, other content
      assert.notEqual(a5b.address, a5.address);
      await s.put(a5b);
      await s.put(advert(p1, 4));
      assert.equal(s.advertOf(did1)?.address, a5.address, 'an equal or lower seq does not replace');
      assert.equal(await s.put(a5), false, 'the same advert again is already held');

      const a6 = advert(p1, 6);
      assert.equal(await s.put(a6), true);
      assert.equal(s.advertOf(did1)?.address, a6.address, 'a higher seq replaces');
      // Superseded adverts stay retrievable by address: live offers cite the advert they were made against.
      assert.deepEqual((await s.get(a5.address, T.advert))?.record, a5.record);

      const b1 = advert(p2, 1);
      assert.equal(await s.put(b1), true);
      // One advert per provider, in DID order.
      assert.deepEqual(
        s.adverts().map((a) => a.signer),
        [did1, did2].sort(),
      );
      assert.equal(s.adverts().length, 2);
    } finally {
      await closeDb(db);
    }
  });

  test('adverts heard concurrently: the highest seq wins whatever the order the writes finish', async () => {
    const db = await openDb(join(dir, 'adverts-race'));
    try {
      const s = await RecordStore.open(db);
      const hi = advert(p1, 10);
      const lo = advert(p1, 9);
      await Promise.all([s.put(hi), s.put(lo)]);
      assert.equal(s.advertOf(did1)?.address, hi.address);
      const lo2 = advert(p1, 8);
      const hi2 = advert(p1, 11);
      await Promise.all([s.put(lo2), s.put(hi2), s.put(advert(p1, 7))]);
      assert.equal(s.advertOf(did1)?.address, hi2.address);
      // And after a reopen the persisted pointer agrees.
      const s2 = await RecordStore.open(db);
      assert.equal(s2.advertOf(did1)?.address, hi2.address);
    } finally {
      await closeDb(db);
    }
  });

  test('the same record put twice at once is stored once', async () => {
    const db = await openDb(join(dir, 'dup-race'));
    try {
      const s = await RecordStore.open(db);
      const j = job(buyer, 42);
      const results = await Promise.all([s.put(j), s.put(j), s.put(j)]);
      assert.deepEqual(
        results.filter((r) => r),
        [true],
      );
    } finally {
      await closeDb(db);
    }
  });

  test('after closing and reopening the database everything is still there (restart)', async () => {
    const path = join(dir, 'restart');
    const j = job(buyer, 7);
    const a1 = advert(p1, 1);
    const a2 = advert(p1, 2);
    const b = advert(p2, 3);
    const o = offer(p2, j, b);
    {
      const db = await openDb(path);
      const s = await RecordStore.open(db);
      for (const r of [j, a1, a2, b, o]) await s.put(r);
      await closeDb(db);
    }
    const db = await openDb(path);
    try {
      const s = await RecordStore.open(db);
      assert.deepEqual((await s.get(j.address, T.job))?.record, j.record);
      assert.deepEqual(new Uint8Array((await s.getBytes(o.address))!), o.bytes);
      assert.equal(s.advertOf(did1)?.address, a2.address);
      assert.equal(s.advertOf(did2)?.address, b.address);
      assert.equal(await s.has(a1.address), true);
      assert.equal(await s.put(a2), false);
      assert.deepEqual(
        (await s.list(T.job)).map((r) => r.address),
        [j.address],
      );
      // The replacement rule still holds against what was persisted.
      const again = seal(T.advert, { ...a2.record, workloads: ['builtin.primes'] }, p1);
      await s.put(again);
      assert.equal(s.advertOf(did1)?.address, a2.address);
      const a3 = advert(p1, 3);
      await s.put(a3);
      assert.equal(s.advertOf(did1)?.address, a3.address);
    } finally {
      await closeDb(db);
    }
  });

  test('prefixes keep overlays apart in one database', async () => {
    const db = await openDb(join(dir, 'overlays'));
    try {
      const pub = await RecordStore.open(db);
      const priv = await RecordStore.open(db, 'acme/');
      const j = job(buyer, 9);
      await priv.put(j);
      await priv.put(advert(p1, 1));
      assert.equal(await pub.has(j.address), false);
      assert.equal(pub.advertOf(did1), undefined);
      assert.deepEqual(await pub.list(T.job), []);
      assert.equal(await priv.has(j.address), true);
    } finally {
      await closeDb(db);
    }
  });
  test('jobs by signer: newest first a page at a time, the live ones by deadline, a job\'s selections, and a store from before the index indexed at open', async () => {
    const db = await openDb(join(dir, 'jobindex'));
    try {
      const s = await RecordStore.open(db);
      const other = Ed25519Signer.generate();
      const me = didFromPublicKey(buyer.publicKey);
      // 25 jobs of this signer, announced a second apart (two at the same instant: the address breaks the tie), and some of another's
      const mk = (signer: Ed25519Signer, n: number, at: number, deadlineIn = 60_000) => {
        const input = new TextEncoder().encode(`job ${n}`);
        return seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: at, deadline: at + deadlineIn, timeoutMs: 10_000, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no', nonce: Uint8Array.of(n, 7) }, signer);
      };
      const mine = Array.from({ length: 25 }, (_, i) => mk(buyer, i, NOW + Math.min(i, 23) * 1000));
      for (const j of [...mine].reverse()) await s.put(j);
      for (let i = 0; i < 5; i++) await s.put(mk(other, 100 + i, NOW + i * 500));
      const newestFirst = [...mine].sort((a, b) => b.record.announcedAt - a.record.announcedAt || (a.address < b.address ? 1 : -1)).map((j) => j.address);
      const pages: string[][] = [];
      let before: string | undefined;
      do {
        const p = await s.jobsOf(me, { limit: 10, ...(before !== undefined ? { before } : {}) });
        pages.push(p.jobs.map((j) => j.address));
        assert.ok(p.jobs.every((j) => j.signer === me), 'only this signer’s jobs');
        before = p.next;
      } while (before !== undefined);
      assert.deepEqual(pages.map((p) => p.length), [10, 10, 5]);
      assert.deepEqual(pages.flat(), newestFirst);
      assert.equal((await s.jobsOf(didFromPublicKey(p2.publicKey), { limit: 10 })).jobs.length, 0);
      // live: deadline after now (jobs announced at NOW + i s with a 60 s deadline)
      const live = await s.liveJobsOf(me, NOW + 70_000);
      assert.deepEqual(live.map((j) => j.address).sort(), mine.filter((j) => j.record.deadline > NOW + 70_000).map((j) => j.address).sort());
      assert.ok(live.length > 0 && live.length < 25);
      // a job's selections (a failover signs a second one), by decision time, and no other job's
      const sel = (j: Opened<Job>, at: number, winner: Ed25519Signer) =>
        seal(T.selection, { job: j.address, buyer: me, policy: 'cheapest', winner: hashHex(Uint8Array.of(at & 0xff)), considered: [{ provider: didFromPublicKey(winner.publicKey), offer: hashHex(Uint8Array.of(at & 0xff)) }], decidedAt: at }, buyer);
      const sels = [sel(mine[3]!, NOW + 9_000, p2), sel(mine[3]!, NOW + 4_000, p1), sel(mine[4]!, NOW + 5_000, p1)];
      for (const x of sels) await s.put(x);
      assert.deepEqual((await s.selectionsOf(mine[3]!.address)).map((x) => x.address), [sels[1]!.address, sels[0]!.address]);
      assert.deepEqual(await s.selectionsOf(mine[9]!.address), []);
      // a store written before the index: its index entries are gone, the next open writes them again
      const idx = db.sublevel<string, Uint8Array>('jobindex', { valueEncoding: 'view' });
      await idx.clear();
      assert.equal((await s.jobsOf(me, { limit: 100 })).jobs.length, 0, 'the index is what jobsOf reads');
      const s2 = await RecordStore.open(db);
      assert.deepEqual((await s2.jobsOf(me, { limit: 100 })).jobs.map((j) => j.address), newestFirst);
      assert.equal((await s2.jobsOf(didFromPublicKey(other.publicKey), { limit: 100 })).jobs.length, 5);
      assert.equal((await s2.selectionsOf(mine[3]!.address)).length, 2);
      assert.equal((await s2.liveJobsOf(me, NOW + 70_000)).length, live.length);
      // a store indexed by the first version (jobs only; its marker says 1): the selections are indexed at the next open
      for await (const k of idx.keys({ gt: 's!', lt: 's!\xff' })) await idx.del(k);
      await idx.put('~indexed', new TextEncoder().encode('1'));
      assert.deepEqual(await s2.selectionsOf(mine[3]!.address), []);
      const s3 = await RecordStore.open(db);
      assert.equal((await s3.selectionsOf(mine[3]!.address)).length, 2);
      assert.equal((await s3.jobsOf(me, { limit: 100 })).jobs.length, 25);
    } finally {
      await closeDb(db);
    }
  });
  test('the job history is dropped by age: a job past its deadline with what belongs to it, a record whose job is not held at its own time, nothing else; a batch at a time; a store from before the age index indexed at open', async () => {
    const db = await openDb(join(dir, 'history'));
    try {
      const s = await RecordStore.open(db, '', { clock: () => NOW });
      const me = didFromPublicKey(buyer.publicKey);
      const DAY = 24 * 3600_000;
      const mk = (n: number, at: number, deadlineIn: number) => {
        const input = new TextEncoder().encode(`history ${n}`);
        return seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: at, deadline: at + deadlineIn, timeoutMs: 10_000, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no', nonce: Uint8Array.of(n, 9) }, buyer);
      };
      const a1 = advert(p1, 1);
      await s.put(a1);
      // an old job with a long deadline: its selection and offers were decided long before the deadline, and go with the job
      const old = mk(1, NOW - 40 * DAY, 5 * DAY);
      const recent = mk(2, NOW - 2 * DAY, 60_000);
      const live = mk(3, NOW, 60_000);
      // a job announced as long ago but running for 20 days: not due, and neither is what was decided for it then
      const long = mk(4, NOW - 40 * DAY, 20 * DAY);
      const offerOf = (j: Opened<Job>, at: number) =>
        seal(T.offer, { job: j.address, advert: a1.address, price: { amount: '0.001', currency: 'USD' }, durationMs: 1000, issuedAt: at, startBy: at + 30_000, expiresAt: at + 30_000 }, p1);
      const selOf = (j: Opened<Job>, o: Opened<Offer>, at: number): Opened<Selection> =>
        seal(T.selection, { job: j.address, buyer: me, policy: 'cheapest', winner: o.address, considered: [{ provider: did1, offer: o.address }], decidedAt: at }, buyer);
      const oOld = offerOf(old, old.record.announcedAt);
      const oRecent = offerOf(recent, recent.record.announcedAt);
      const oLong = offerOf(long, long.record.announcedAt);
      for (const j of [old, recent, live, long]) await s.put(j);
      await s.putMany([selOf(long, oLong, long.record.announcedAt + 1000), oLong]);
      await s.putMany([selOf(old, oOld, old.record.announcedAt + 1000), oOld]);
      await s.putMany([selOf(recent, oRecent, recent.record.announcedAt + 1000), oRecent]);
      // a provider's claim refusals and claims of jobs it never stored: each dated by its own time
      const orphanJob = hashHex(Uint8Array.of(7, 7));
      const oldRefusal = seal(T.claimRefusal, { job: orphanJob, claim: hashHex(Uint8Array.of(1)), provider: did2, code: 'CLAIM_INVALID', signedAt: NOW - 50 * DAY }, buyer);
      const newRefusal = seal(T.claimRefusal, { job: orphanJob, claim: hashHex(Uint8Array.of(2)), provider: did2, code: 'CLAIM_INVALID', signedAt: NOW - DAY }, buyer);
      const oldClaim = seal(T.claim, { job: orphanJob, advert: a1.address, price: { amount: '0.001', currency: 'USD' }, issuedAt: NOW - 45 * DAY }, p2);
      for (const r of [oldRefusal, newRefusal, oldClaim]) await s.put(r);
      const all = [old, recent, live, oOld, oRecent, oldRefusal, newRefusal, oldClaim];
      const heldBefore = await Promise.all(all.map((r) => s.has(r.address)));
      assert.ok(heldBefore.every(Boolean));

      // 30 days: the old job (deadline 35 days ago) with its selection and offer, the old refusal and claim; one record a batch
      const cutoff = NOW - 30 * DAY;
      let removed = 0;
      let passes = 0;
      let after: string | undefined;
      for (;;) {
        const r = await s.pruneHistory(cutoff, 1, after);
        removed += r.removed;
        passes++;
        if (!r.more) break;
        after = r.after;
      }
      assert.equal(removed, 5);
      assert.equal(passes, 5, 'one record a batch, the last saying there is no more');
      for (const r of [old, oOld, oldRefusal, oldClaim]) assert.equal(await s.has(r.address), false, `${r.type} dropped`);
      for (const r of [recent, live, oRecent, newRefusal, a1, long, oLong]) assert.equal(await s.has(r.address), true, `${r.type} kept`);
      assert.deepEqual(await s.selectionsOf(old.address), []);
      assert.equal((await s.selectionsOf(long.address)).length, 1, 'a selection goes with its job, not at its own time');
      assert.equal((await s.selectionsOf(recent.address)).length, 1);
      assert.deepEqual((await s.jobsOf(me, { limit: 10 })).jobs.map((j) => j.address), [live.address, recent.address, long.address]);
      assert.deepEqual((await s.list(T.job)).map((j) => j.address).sort(), [live.address, recent.address, long.address].sort());
      assert.equal((await s.list(T.selection)).length, 2);
      assert.equal(s.advertOf(did1)?.address, a1.address, 'adverts are not history');
      assert.deepEqual(counts(await s.pruneHistory(cutoff)), { removed: 0, more: false });

      // a store indexed by the second version (no history by age): indexed at the next open, then pruned alike
      const idx = db.sublevel<string, Uint8Array>('jobindex', { valueEncoding: 'view' });
      for await (const k of idx.keys({ gt: 'e!', lt: 'e!\xff' })) await idx.del(k);
      await idx.put('~indexed', new TextEncoder().encode('2'));
      assert.deepEqual(counts(await s.pruneHistory(NOW + DAY)), { removed: 0, more: false }, 'the age index is what pruning reads');
      const s2 = await RecordStore.open(db, '', { clock: () => NOW });
      assert.equal((await s2.selectionsOf(long.address)).length, 1);
      assert.deepEqual(counts(await s2.pruneHistory(NOW - 19 * DAY)), { removed: 3, more: false }, 'indexed at open, a selection and offer are dated by their held job: the long job goes with both');
      assert.deepEqual(await s2.selectionsOf(long.address), []);
      assert.deepEqual(counts(await s2.pruneHistory(NOW - DAY + 1)), { removed: 4, more: false }, 'the two-day-old job, its selection and offer, and the day-old refusal');
      assert.deepEqual((await s2.jobsOf(me, { limit: 10 })).jobs.map((j) => j.address), [live.address]);
    } finally {
      await closeDb(db);
    }
  });
  test('the job history by age: a time another node chose counts at most a day ahead of this node\'s clock (a job\'s deadline 30 days); a record that no longer opens is dropped by its key', async () => {
    const db = await openDb(join(dir, 'history-edge'));
    try {
      const s = await RecordStore.open(db, '', { clock: () => NOW });
      const DAY = 24 * 3600_000;
      const orphanJob = hashHex(Uint8Array.of(8, 8));
      // a buyer's refusal dated a hundred days ahead: dated a day ahead of this node's clock
      const future = seal(T.claimRefusal, { job: orphanJob, claim: hashHex(Uint8Array.of(3)), provider: did2, code: 'CLAIM_INVALID', signedAt: NOW + 100 * DAY }, buyer);
      await s.put(future);
      assert.deepEqual(counts(await s.pruneHistory(NOW + DAY)), { removed: 0, more: false });
      assert.equal((await s.pruneHistory(NOW + DAY + 1)).removed, 1);
      assert.equal(await s.has(future.address), false);
      // a job another node signed with a deadline a thousand days ahead: dated 30 days ahead; this node's own job as it is
      const mine = await RecordStore.open(db, 'mine/', { clock: () => NOW, self: didFromPublicKey(buyer.publicKey) });
      const far = (signer: Ed25519Signer, n: number) => {
        const input = new TextEncoder().encode(`far ${n}`);
        return seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: NOW, deadline: NOW + 1000 * DAY, timeoutMs: 10_000, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no', nonce: Uint8Array.of(n, 3) }, signer);
      };
      const foreign = far(p2, 1);
      const own = far(buyer, 2);
      await mine.put(foreign);
      await mine.put(own);
      assert.equal((await mine.pruneHistory(NOW + 30 * DAY)).removed, 0);
      assert.equal((await mine.pruneHistory(NOW + 30 * DAY + 1)).removed, 1);
      assert.equal(await mine.has(foreign.address), false);
      assert.equal((await mine.pruneHistory(NOW + 999 * DAY)).removed, 0, 'this node’s own job goes only once its deadline is past');
      assert.equal(await mine.has(own.address), true);
      // an offer whose stored bytes no longer open (a later build's stricter rules, a damaged value): dropped all the same
      const a = advert(p1, 1);
      const j = job(buyer, 40);
      const o = offer(p1, j, a);
      await s.put(o);
      await db.sublevel<string, Uint8Array>('records', { valueEncoding: 'view' }).put(o.address, Uint8Array.of(0xff, 0x00));
      assert.equal(await s.get(o.address, T.offer), undefined);
      assert.equal((await s.pruneHistory(NOW + DAY)).removed, 1);
      assert.equal(await s.has(o.address), false);
      assert.deepEqual(await s.list(T.offer), []);
    } finally {
      await closeDb(db);
    }
  });
  test("witness receipts: for each witness and steward the longest and the first stored of each doubling of length are kept, nothing else is stored; an earlier build's store keeps only those after open", async () => {
    const db = await openDb(join(dir, 'witness'));
    try {
      const [S1, S2] = [didFromPublicKey(Ed25519Signer.generate().publicKey), didFromPublicKey(Ed25519Signer.generate().publicKey)];
      const [A, B] = [Ed25519Signer.generate(), Ed25519Signer.generate()];
      const receipt = (w: Ed25519Signer, steward: string, length: number, head = length, at = NOW + length) => seal(WITNESS_TYPE, { steward, length, head: hashHex(Uint8Array.of(head & 255, head >> 8)), witnessedAt: at } satisfies WitnessReceipt, w);
      const lengths = async (st: RecordStore, steward: string) => (await st.witnessReceiptsFor(steward)).map((r) => `${r.signer === didFromPublicKey(A.publicKey) ? 'A' : 'B'}${r.record.length}`).sort();
      let s = await RecordStore.open(db, 'w/', { clock: () => NOW });
      const [a2, a5, a6, a7] = [2, 5, 6, 7].map((n) => receipt(A, S1, n));
      assert.equal(await s.put(a2!), true);
      assert.equal(await s.put(a5!), true, 'longer, and the first of lengths 4–7');
      assert.equal(await s.put(receipt(A, S1, 3)), false, 'neither the longest nor the first signed of lengths 2–3: not stored');
      assert.equal(await s.put(a6!), true, 'the longest');
      assert.equal(await s.put(a7!), true, 'the longest: 6 goes, 5 stays as the first of its doubling');
      assert.equal(await s.has(a6!.address), false);
      assert.equal(await s.put(receipt(A, S2, 1)), true, 'another steward: its own');
      // two of one witness at once are decided one after the other: 7 is the first of lengths 4–7 and the longest, so 6 is neither
      assert.deepEqual(await Promise.all([s.put(receipt(B, S1, 7)), s.put(receipt(B, S1, 6))]), [true, false]);
      assert.deepEqual(await lengths(s, S1), ['A2', 'A5', 'A7', 'B7']);
      assert.deepEqual(await lengths(s, S2), ['A1']);
      assert.equal((await s.list(WITNESS_TYPE)).length, 5);

      // a witness that later cosigns a rewritten history (its state lost, or in league with the steward): a checkpoint
      // of the history it first cosigned stays, so a ledger fetched from this node still shows the rewrite
      const S3 = didFromPublicKey(Ed25519Signer.generate().publicKey);
      for (const n of [10, 40, 70, 100]) await s.put(receipt(A, S3, n));
      for (const n of [120, 130]) await s.put(receipt(A, S3, n, n + 1000));
      // ... even when it backdates receipts of the rewritten history to take the checkpoints' places: the first stays
      for (const n of [10, 40, 70]) assert.equal(await s.put(receipt(A, S3, n, n + 1000, 0)), false);
      const s3 = (await s.witnessReceiptsFor(S3)).sort((x, y) => x.record.length - y.record.length);
      assert.deepEqual(s3.map((r) => r.record.length), [10, 40, 70, 130]);
      assert.deepEqual(s3.slice(0, 3).map((r) => r.record.head), [10, 40, 70].map((n) => hashHex(Uint8Array.of(n, 0))), 'the checkpoints are of the history first cosigned');

      // a store an earlier build wrote (index version 3): every receipt kept, no witness index
      const recs = db.sublevel<string, Uint8Array>('w/records', { valueEncoding: 'view' });
      const byType = db.sublevel<string, Uint8Array>('w/bytype', { valueEncoding: 'view' });
      const idx = db.sublevel<string, Uint8Array>('w/jobindex', { valueEncoding: 'view' });
      // several, so that in address order some come after those that displace them
      const raw = [1, 3, 4, 9, 6].map((n) => receipt(A, S1, n)).concat([receipt(B, S1, 2)]);
      for (const r of raw) {
        await recs.put(r.address, r.bytes);
        await byType.put(`${WITNESS_TYPE}!${r.address}`, new Uint8Array(0));
      }
      for await (const k of idx.keys({ gt: 'w!', lt: 'w!\xff' })) await idx.del(k);
      await idx.put('~indexed', new TextEncoder().encode('3'));
      s = await RecordStore.open(db, 'w/', { clock: () => NOW });
      // (sorting what an earlier build kept, in no known order of arrival, the earliest signed of a band takes it)
      // A: 1 (lengths 1), 2 (2–3), 4 (4–7, signed before 5, 6, 7), 9 (8–15, and the longest); B: 2, and 7
      assert.deepEqual(await lengths(s, S1), ['A1', 'A2', 'A4', 'A9', 'B2', 'B7']);
      assert.deepEqual(await lengths(s, S2), ['A1']);
      for (const n of [3, 5, 6, 7]) assert.equal(await s.has(receipt(A, S1, n).address), false, `A${n} dropped`);
      assert.equal((await s.list(WITNESS_TYPE)).length, 6 + 1 + 4);
      assert.equal(await s.put(receipt(A, S1, 3)), false, 'the index holds what is kept after the upgrade');
      // 9 is both the longest and the first of lengths 8–15: a longer 10 takes the top, and 9 stays for its band
      assert.equal(await s.put(receipt(A, S1, 10)), true);
      assert.equal(await s.has(receipt(A, S1, 9).address), true);
    } finally {
      await closeDb(db);
    }
  });
});
