/**
 * The bound on the jobs a provider quoted on and did not run (src/store/records.ts `putQuoted`, docs/node.md "Job
 * history"), on a real LevelDB in a temp dir. Anyone can sign a job with a fresh key and free the quoting budget with
 * its own selection, so every job quoted on used to be kept until the history dropped it (up to 59 days) with no
 * bound: a flood stays within the count and byte caps, the first quoted going first, also after a reopen; a job this
 * node ran (stored with `put`) is kept outside the caps, as is this node's own job.
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

describe('jobs quoted on and not run are bounded (real LevelDB)', () => {
  let dir: string;
  const self = Ed25519Signer.generate();
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'c0-quoted-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const open = (db: Db, maxJobs: number, maxBytes = 64 * 1024 * 1024, evicted?: (n: number) => void) =>
    RecordStore.open(db, '', { clock: () => NOW, self: did(self), quotedJobs: { maxJobs, maxBytes }, ...(evicted ? { onQuotedEvicted: evicted } : {}) });

  test('a flood of jobs from fresh keys stays at the count cap, the first quoted going first, with their index keys', async () => {
    const db = await openDb(join(dir, 'count'));
    try {
      let evicted = 0;
      const s = await open(db, 10, undefined, (n) => (evicted += n));
      const jobs = Array.from({ length: 25 }, (_, i) => job(i));
      for (const j of jobs) assert.equal(await s.putQuoted(j), true, 'the newest is always taken');
      assert.equal(await s.putQuoted(jobs[24]!), false, 'a job held is not taken twice');
      assert.deepEqual(await held(s), new Set(jobs.slice(15).map((j) => j.address)));
      assert.equal(s.quotedJobs.count, 10);
      assert.equal(s.quotedJobs.bytes, jobs.slice(15).reduce((n, j) => n + j.bytes.length, 0));
      assert.equal(evicted, 15);
      // an evicted job leaves the index too: its signer's list is empty, and the history has nothing left to drop for it
      assert.deepEqual((await s.jobsOf(jobs[0]!.signer, { limit: 10 })).jobs, []);
      assert.equal((await s.jobsOf(jobs[20]!.signer, { limit: 10 })).jobs.length, 1);
      // the newest history held is dated within the cutoff that drops all (history-prune.ts holds such a pass: QA qaOps F2)
      const newest = await s.newestHistoryAt();
      assert.ok(newest !== undefined && newest > NOW && newest < NOW + 400 * DAY, String(newest));
      const first = (await s.pruneHistory(newest, 1000)).removed;
      assert.equal(await s.newestHistoryAt(), newest, 'a cutoff at the newest leaves it');
      assert.equal(first + (await s.pruneHistory(NOW + 400 * DAY, 1000)).removed, 10, 'only the ten held are in the age index');
      assert.equal(await s.newestHistoryAt(), undefined, 'none held');
      assert.equal(s.quotedJobs.count, 0, 'the history pass keeps the count');
      assert.equal(s.quotedJobs.bytes, 0);
    } finally {
      await closeDb(db);
    }
  });

  test('the byte cap holds jobs with big params to it', async () => {
    const db = await openDb(join(dir, 'bytes'));
    try {
      const one = job(0, 4096).bytes.length;
      const s = await open(db, 1000, 5 * one + 100);
      for (let i = 0; i < 30; i++) await s.putQuoted(job(i, 4096));
      assert.ok(s.quotedJobs.bytes <= 5 * one + 100, `${s.quotedJobs.bytes} bytes held`);
      assert.ok(s.quotedJobs.count >= 4 && s.quotedJobs.count <= 5, `${s.quotedJobs.count} held`);
      assert.equal((await held(s)).size, s.quotedJobs.count);
    } finally {
      await closeDb(db);
    }
  });

  test('a job this node ran (put) is kept outside the caps, whether quoted first or not; so is its own job', async () => {
    const db = await openDb(join(dir, 'ran'));
    try {
      const s = await open(db, 5);
      const ran = job(1000);
      const ranLate = job(1001);
      const own = job(1002, 1, self);
      assert.equal(await s.putQuoted(ran), true);
      assert.equal(await s.putQuoted(ranLate), true);
      assert.equal(await s.putQuoted(own), true);
      assert.equal(s.quotedJobs.count, 2, 'this node’s own job is not a quoted one');
      // ran here: put() takes it out of the quoted set (it was held: not new)
      assert.equal(await s.put(ran), false);
      assert.equal(s.quotedJobs.count, 1);
      for (let i = 0; i < 20; i++) await s.putQuoted(job(i));
      // evicted before it ran, then run: stored again, outside the caps
      assert.equal(await s.has(ranLate.address), false);
      assert.equal(await s.put(ranLate), true);
      for (let i = 20; i < 40; i++) await s.putQuoted(job(i));
      const h = await held(s);
      for (const j of [ran, ranLate, own]) assert.ok(h.has(j.address), 'kept');
      assert.equal(s.quotedJobs.count, 5);
      assert.equal(h.size, 8);
    } finally {
      await closeDb(db);
    }
  });

  test('a reopen reads the count back and keeps the bound; a lower cap applies at open, the first quoted going first', async () => {
    const path = join(dir, 'reopen');
    const jobs = Array.from({ length: 30 }, (_, i) => job(i));
    const ran = job(100);
    let db = await openDb(path);
    try {
      const s = await open(db, 20);
      await s.putQuoted(ran);
      await s.put(ran);
      for (const j of jobs.slice(0, 15)) await s.putQuoted(j);
    } finally {
      await closeDb(db);
    }
    db = await openDb(path);
    try {
      const s = await open(db, 20);
      assert.equal(s.quotedJobs.count, 15);
      for (const j of jobs.slice(15)) await s.putQuoted(j);
      assert.equal(s.quotedJobs.count, 20);
      assert.deepEqual(await held(s), new Set([ran, ...jobs.slice(10)].map((j) => j.address)));
    } finally {
      await closeDb(db);
    }
    db = await openDb(path);
    try {
      let evicted = 0;
      const s = await open(db, 8, undefined, (n) => (evicted += n));
      assert.equal(s.quotedJobs.count, 8);
      assert.equal(evicted, 12);
      assert.deepEqual(await held(s), new Set([ran, ...jobs.slice(22)].map((j) => j.address)));
    } finally {
      await closeDb(db);
    }
  });
});
