/**
 * A data directory that ran before whose db/ is empty or missing (db/ a link to a volume that is not mounted, or its
 * mount point; a restore that left db/ out) started on a new empty database: `start` exit 0, `jobs` "no jobs yet"
 * (review s41 E F3). Now the first open writes a record beside db/ (OpenDbOptions.createdMark, the daemon's
 * <data-dir>/db.created), and while it is there an empty or missing db/ is STORE_MISSING, nothing created. A fresh
 * directory, and one a first open killed before LevelDB wrote CURRENT (ec0edf1), are still created. Real LevelDB.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeDb, openDb, sub } from '../../../src/store/db.js';
import { C0Error } from '../../../src/errors.js';

const root = mkdtempSync(join(tmpdir(), 'c0-db-missing-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A data directory (a fresh one, or one whose database holds k = [7]). */
async function dataDir(used: boolean): Promise<{ d: string; db: string; mark: string }> {
  const d = join(root, `d${n++}`);
  mkdirSync(d);
  const r = { d, db: join(d, 'db'), mark: join(d, 'db.created') };
  if (used) {
    const db = await openDb(r.db, { createdMark: r.mark });
    await sub(db, 'x').put('k', new Uint8Array([7]));
    await closeDb(db);
  }
  return r;
}

const missing = (e: unknown) => e instanceof C0Error && e.code === 'STORE_MISSING' && /db\.created/.test(e.message) && /mount the volume or restore db\//.test(e.message);

describe('a database that was created, then is gone', () => {
  it('the first open writes the record; the database opens again as usual', async () => {
    const { db, mark } = await dataDir(true);
    assert.ok(existsSync(mark));
    const h = await openDb(db, { createdMark: mark });
    assert.deepEqual([...(await sub(h, 'x').get('k'))!], [7]);
    await closeDb(h);
  });

  it('db/ removed: STORE_MISSING, and no db/ is made', async () => {
    const { db, mark } = await dataDir(true);
    rmSync(db, { recursive: true });
    await assert.rejects(openDb(db, { createdMark: mark }), missing);
    assert.equal(existsSync(db), false);
  });

  it('db/ empty (a mount point not mounted): STORE_MISSING, and it stays empty', async () => {
    const { d, db, mark } = await dataDir(true);
    rmSync(db, { recursive: true });
    mkdirSync(join(d, 'mnt'));
    symlinkSync(join(d, 'mnt'), db);
    await assert.rejects(openDb(db, { createdMark: mark }), missing);
    assert.deepEqual(readdirSync(join(d, 'mnt')), []);
  });

  it('db/ a link to a directory that is not there (a volume not mounted): STORE_MISSING', async () => {
    const { d, db, mark } = await dataDir(true);
    rmSync(db, { recursive: true });
    symlinkSync(join(d, 'volume', 'c0db'), db);
    await assert.rejects(openDb(db, { createdMark: mark }), missing);
  });

  it('the record removed on purpose: a new empty database', async () => {
    const { db, mark } = await dataDir(true);
    rmSync(db, { recursive: true });
    rmSync(mark);
    const h = await openDb(db, { createdMark: mark });
    assert.equal(await sub(h, 'x').get('k'), undefined);
    await closeDb(h);
    assert.ok(existsSync(mark));
  });

  it('a fresh data directory is created, and so is one a first open was killed in (no CURRENT, no table or log)', async () => {
    const fresh = await dataDir(false);
    let h = await openDb(fresh.db, { createdMark: fresh.mark });
    await closeDb(h);
    assert.ok(existsSync(fresh.mark));
    const killed = await dataDir(false);
    mkdirSync(killed.db);
    writeFileSync(join(killed.db, 'LOCK'), '');
    writeFileSync(join(killed.db, 'MANIFEST-000001'), '');
    writeFileSync(join(killed.db, '000001.dbtmp'), 'MANIFEST-000001\n');
    h = await openDb(killed.db, { createdMark: killed.mark });
    await sub(h, 'x').put('k', new Uint8Array([1]));
    await closeDb(h);
    assert.ok(existsSync(killed.mark));
  });
});

describe('beforeCreate: told before a new database is begun, and may refuse it', () => {
  it('called (and awaited) only when the open would begin one: not on a database that is there, nor where one was created', async () => {
    const fresh = await dataDir(false);
    const calls: string[] = [];
    const h = await openDb(fresh.db, { createdMark: fresh.mark, beforeCreate: async () => void calls.push('fresh') });
    await closeDb(h);
    assert.deepEqual(calls, ['fresh']);
    const used = await dataDir(true);
    await closeDb(await openDb(used.db, { createdMark: used.mark, beforeCreate: () => void calls.push('used') }));
    rmSync(used.db, { recursive: true });
    await assert.rejects(openDb(used.db, { createdMark: used.mark, beforeCreate: () => void calls.push('gone') }), missing);
    assert.deepEqual(calls, ['fresh'], 'a database that is there, or STORE_MISSING: not called');
  });

  it('a refusal is the open’s error, and nothing is made (no directory, no mark)', async () => {
    const { db, mark } = await dataDir(false);
    await assert.rejects(openDb(db, { createdMark: mark, beforeCreate: async () => Promise.reject(new C0Error('REFUSED', 'no')) }), (e: unknown) => e instanceof C0Error && e.code === 'REFUSED');
    assert.equal(existsSync(db), false);
    assert.equal(existsSync(mark), false);
  });
});
