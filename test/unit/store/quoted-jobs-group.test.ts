/**
 * The quoted order's writes are group-committed (src/store/records.ts `putQuoted`, #drain), on a real LevelDB in a
 * temp dir. They used to run one at a time on a promise chain, one synced batch each, with every other job write
 * behind them: a burst of quoted jobs cost one fsync per job (about 10× fewer job writes a second), and the job a
 * provider ran (its receipt waits for it), or its own job, waited behind every quoted job pending. Now the calls
 * waiting go in one batch with the evictions they need, and a job write that does not enter the order goes at once.
 * Ordering is checked by promises and a gate on the store's batches, not by a clock.
 */
import '../../../src/polyfill.js';
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { closeDb, openDb, type Db } from '../../../src/store/db.js';
import { RecordStore } from '../../../src/store/records.js';
import { DAY, NOW, did, held, job } from './quoted-rig.js';

type Op = { type: string; key?: unknown; value?: unknown };
/** A batch that gives a job a place in the quoted order (`o!<seq>`): a group commit of putQuoted calls. */
const isQuotedGroup = (ops: Op[]) => ops.some((o) => o.type === 'put' && typeof o.key === 'string' && /^o!\d{16}$/.test(o.key));

/**
 * The store's batches, counted and named in order ('quoted' for a group commit, 'other' else), and a gate: while shut,
 * the next quoted group waits before it reaches LevelDB (`reached` settles then), until `open()`.
 */
function rig(db: Db) {
  const orig = db.batch.bind(db) as (ops: unknown, o?: unknown) => Promise<void>;
  const r = {
    log: [] as Array<{ kind: 'quoted' | 'other'; ops: Op[] }>,
    shut: false,
    reached: undefined as Promise<void> | undefined,
    open: () => {},
    count: (kind: 'quoted' | 'other') => r.log.filter((b) => b.kind === kind).length,
  };
  let onReach = () => {};
  let release: Promise<void> = Promise.resolve();
  r.reached = new Promise<void>((res) => (onReach = res));
  const shut = () => {
    r.shut = true;
    r.reached = new Promise<void>((res) => (onReach = res));
    release = new Promise<void>((res) => (r.open = () => ((r.shut = false), res())));
  };
  (db as unknown as { batch: unknown }).batch = async (ops: unknown, o?: unknown) => {
    if (!Array.isArray(ops)) return orig(ops, o);
    const kind = isQuotedGroup(ops as Op[]) ? 'quoted' : 'other';
    r.log.push({ kind, ops: ops as Op[] });
    if (kind === 'quoted' && r.shut) {
      onReach();
      await release;
    }
    return orig(ops, o);
  };
  return Object.assign(r, { shutGate: shut });
}

describe('the quoted order is group-committed, and other job writes do not wait behind it (real LevelDB)', () => {
  let dir: string;
  const self = Ed25519Signer.generate();
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'c0-quoted-group-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const open = (db: Db, maxJobs: number, maxBytes = 64 * 1024 * 1024, evicted?: (n: number) => void) =>
    RecordStore.open(db, '', { clock: () => NOW, self: did(self), quotedJobs: { maxJobs, maxBytes }, ...(evicted ? { onQuotedEvicted: evicted } : {}) });

  test('N putQuoted calls at once are committed in far fewer synced batches than N, keeping what one at a time keeps', async () => {
    // the same jobs (mixed sizes, past both caps, one twice) one at a time and all at once: the same jobs held, the same counts
    const one = job(0, 2048).bytes.length;
    const jobs = Array.from({ length: 200 }, (_, i) => job(i, i % 3 === 0 ? 2048 : 1));
    const burst2 = Array.from({ length: 60 }, (_, i) => job(500 + i, i % 5 === 0 ? 2048 : 1));
    const results: Array<{ held: Set<string>; count: number; bytes: number; evicted: number; answers: boolean[] }> = [];
    for (const mode of ['serial', 'burst'] as const) {
      const db = await openDb(join(dir, `n-${mode}`));
      try {
        const r = rig(db);
        let evicted = 0;
        const s = await open(db, 50, 30 * one, (n) => (evicted += n));
        const before = r.count('quoted');
        const answers: boolean[] = [];
        if (mode === 'serial') for (const j of [...jobs, jobs[199]!, ...burst2]) answers.push(await s.putQuoted(j));
        else {
          answers.push(...(await Promise.all([...jobs, jobs[199]!].map((j) => s.putQuoted(j)))));
          // a second burst evicts from the jobs on disk
          answers.push(...(await Promise.all(burst2.map((j) => s.putQuoted(j)))));
          const batches = r.count('quoted') - before;
          assert.ok(batches <= 4, `${jobs.length + burst2.length + 1} putQuoted calls took ${batches} synced batches`);
        }
        results.push({ held: await held(s), count: s.quotedJobs.count, bytes: s.quotedJobs.bytes, evicted, answers });
        assert.equal(s.quotedJobs.count, (await held(s)).size);
        assert.ok(s.quotedJobs.count <= 50 && s.quotedJobs.bytes <= 30 * one);
      } finally {
        await closeDb(db);
      }
    }
    assert.deepEqual(results[1], results[0], 'a group commit keeps what one call at a time keeps');
    assert.equal(results[1]!.answers[200], false, 'a job twice in one burst is taken once');
    // the counts on disk agree with those kept in memory
    const db = await openDb(join(dir, 'n-burst'));
    try {
      const s = await open(db, 50, 30 * one);
      assert.equal(s.quotedJobs.count, results[1]!.count);
      assert.equal(s.quotedJobs.bytes, results[1]!.bytes);
    } finally {
      await closeDb(db);
    }
  });

  test('a job write not entering the quoted order completes while a quoted backlog waits', { timeout: 60_000 }, async () => {
    const db = await openDb(join(dir, 'backlog'));
    try {
      const r = rig(db);
      const s = await open(db, 1000);
      r.shutGate();
      const settled: string[] = [];
      const backlog = Array.from({ length: 100 }, (_, i) => s.putQuoted(job(i)).then((ok) => (settled.push('quoted'), ok)));
      await r.reached;
      // the group is held at the gate, short of the disk: these must not wait for it
      const own = job(1000, 1, self);
      const ranUnquoted = job(1001);
      const admitted = job(1002);
      assert.equal(await s.put(own), true, 'this node’s own job');
      assert.equal(await s.put(ranUnquoted), true, 'a job that ran, not quoted on (or evicted)');
      assert.equal(await s.putMany([admitted]), 1, 'a job stored with putMany (a buyer’s own, an admitted one)');
      assert.equal(await s.putQuoted(job(1003, 1, self)), true, 'this node’s own job given to putQuoted is stored as put stores it');
      assert.deepEqual(settled, [], 'the quoted backlog is still waiting');
      r.open();
      assert.ok((await Promise.all(backlog)).every(Boolean));
      assert.equal(s.quotedJobs.count, 100, 'the jobs written beside the backlog are not in the quoted order');
      assert.equal((await held(s)).size, 104);
    } finally {
      await closeDb(db);
    }
  });

  test('a job that ran is promoted after the batch on its way to disk, before the quoted jobs waiting', { timeout: 60_000 }, async () => {
    const db = await openDb(join(dir, 'promote'));
    try {
      const r = rig(db);
      const s = await open(db, 30);
      const ran = job(2000);
      assert.equal(await s.putQuoted(ran), true);
      r.shutGate();
      const order: string[] = [];
      const first = Array.from({ length: 20 }, (_, i) => s.putQuoted(job(i)));
      await r.reached;
      // the first group is on its way; these wait for the next
      const waiting = Array.from({ length: 40 }, (_, i) => s.putQuoted(job(100 + i)).then(() => order.push('quoted')));
      const promoted = s.put(ran).then((isNew) => (order.push('ran'), isNew));
      r.open();
      assert.equal(await promoted, false, 'held already: promoted, not new');
      await Promise.all([...first, ...waiting]);
      assert.equal(order[0], 'ran', 'the promotion did not wait for the quoted jobs behind it');
      const kinds = r.log.map((b) => b.kind);
      const promotion = r.log.findIndex((b) => b.kind === 'other' && b.ops.some((o) => o.type === 'del' && o.key === `a!${ran.address}`));
      assert.ok(promotion > 0, 'the promotion is its own batch');
      assert.deepEqual(kinds.slice(promotion - 1, promotion + 2), ['quoted', 'other', 'quoted'], 'between the group on its way and the next');
      // 30 held in the quoted order, the job that ran outside it: it outlives any flood
      for (let i = 0; i < 50; i++) await s.putQuoted(job(300 + i));
      assert.ok(await s.has(ran.address));
      assert.equal(s.quotedJobs.count, 30);
    } finally {
      await closeDb(db);
    }
  });

  test('a put of a job whose quoted copy is pending or on its way keeps it outside the quoted order', { timeout: 60_000 }, async () => {
    const db = await openDb(join(dir, 'same'));
    try {
      const r = rig(db);
      const s = await open(db, 10);
      r.shutGate();
      const onItsWay = job(1);
      const pendingJob = job(2);
      const first = [s.putQuoted(onItsWay), s.putQuoted(job(3))];
      await r.reached;
      const pendingAnswer = s.putQuoted(pendingJob);
      // waiting, not taken: it does not enter the order; this put writes it at once, while the gate is shut
      assert.equal(await s.put(pendingJob), true);
      assert.ok(await s.has(pendingJob.address));
      // on its way to disk: the put waits for that batch, then promotes it
      const promoted = s.put(onItsWay);
      r.open();
      assert.equal(await promoted, false);
      assert.equal(await pendingAnswer, false, 'the quoted call answers: held');
      assert.deepEqual(await Promise.all(first), [true, true]);
      assert.equal(s.quotedJobs.count, 1);
      for (let i = 0; i < 30; i++) await s.putQuoted(job(100 + i));
      assert.ok(await s.has(onItsWay.address), 'kept past a flood');
      assert.ok(await s.has(pendingJob.address), 'kept past a flood');
      assert.equal(s.quotedJobs.count, 10);
      // a history pass goes in the lane too: the counts do not drift
      assert.equal((await s.pruneHistory(NOW + 400 * DAY, 1000)).removed, 12);
      assert.equal(s.quotedJobs.count, 0);
      assert.equal(s.quotedJobs.bytes, 0);
    } finally {
      await closeDb(db);
    }
  });
});
