/**
 * A table LevelDB cannot read for a reason that is not damage (a permission: a 000005.ldb left root-owned, mode 0600,
 * by a `sudo c0mpute start`; the disk's EIO). It reached the CLI as LevelDB's bare LEVEL_IO_ERROR: `internal error …
 * (this is a bug …)`, exit 70, which a supervisor restarts in a loop (review s41 E F5). Now a read in the store is
 * STORE_READ_FAILED with the OS's reason and the file, and so is one that reaches the CLI's top level (exit 3); the API
 * answers it 500. And `status` said "store writable" while every read failed STORE_CORRUPT (review s41 E, minor): the
 * store now remembers the reads that failed, and `status` says so.
 *
 * The unreadable table here is a directory in its place (LevelDB's mmap of it fails: `IO error: …: No such device`),
 * which needs no second user; the top level is given LevelDB's EACCES error as it reads it.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeDb, openDb, storeHealth, sub } from '../../../src/store/db.js';
import { C0Error } from '../../../src/errors.js';
import { report } from '../../../src/cli/program.js';
import { EXIT } from '../../../src/cli/context.js';
import { Daemon } from '../../../src/node/daemon.js';

const root = mkdtempSync(join(tmpdir(), 'c0-db-read-failed-'));
after(() => rmSync(root, { recursive: true, force: true }));

function captureStderr(f: () => number): { code: number; err: string } {
  let err = '';
  const w = process.stderr.write;
  process.stderr.write = ((x: string) => ((err += x), true)) as typeof process.stderr.write;
  try {
    return { code: f(), err };
  } finally {
    process.stderr.write = w;
  }
}

describe('a table LevelDB cannot read (not damaged)', () => {
  it('a read is STORE_READ_FAILED naming the file and the reason; status then says reads fail, not only "writable"', async () => {
    const dir = join(root, 'db');
    let db = await openDb(dir);
    for (let i = 0; i < 50; i++) await sub(db, 'x').put(`k${i}`, new Uint8Array(100));
    await closeDb(db);
    db = await openDb(dir); // the log becomes a table
    await closeDb(db);
    const tables = readdirSync(dir).filter((f) => f.endsWith('.ldb'));
    assert.ok(tables.length > 0);
    for (const t of tables) {
      rmSync(join(dir, t));
      mkdirSync(join(dir, t));
    }
    db = await openDb(dir);
    try {
      const status = () => Daemon.prototype.storeStatus.call({ db } as unknown as Daemon);
      assert.equal(status().code, undefined);
      assert.equal(status().message, 'writable');
      await assert.rejects(sub(db, 'x').get('k1'), (e: unknown) => e instanceof C0Error && e.code === 'STORE_READ_FAILED' && e.message.includes(`${tables[0]}`) && /nothing was changed/.test(e.message));
      assert.equal(storeHealth(db).readFailed?.code, 'STORE_READ_FAILED');
      assert.equal(storeHealth(db).readFailed?.count, 1);
      const s = status();
      assert.equal(s.code, 'STORE_READ_FAILED');
      assert.match(s.message, /reads fail: 1 since the start.*\.ldb/);
    } finally {
      await closeDb(db);
    }
  });

  it("LevelDB's EACCES on a table at the CLI's top level: STORE_READ_FAILED with the reason, exit 3, not a bug (exit 70)", () => {
    const eacces = Object.assign(new Error('IO error: /srv/c0/db/000005.ldb: Permission denied'), { code: 'LEVEL_IO_ERROR' });
    const eio = Object.assign(new Error('IO error: /srv/c0/db/000007.ldb: Input/output error'), { code: 'LEVEL_IO_ERROR' });
    let r = captureStderr(() => report(eacces));
    assert.equal(r.code, EXIT.OPERATOR, r.err);
    assert.match(r.err, /^error STORE_READ_FAILED: a read of the database at \/srv\/c0\/db failed: permission denied \(EACCES\) on \/srv\/c0\/db\/000005\.ldb.*chown/);
    assert.doesNotMatch(r.err, /internal error|this is a bug/);
    r = captureStderr(() => report(Object.assign(new Error('Iterator is not open'), { code: 'LEVEL_ITERATOR_NOT_OPEN', cause: eio })));
    assert.equal(r.code, EXIT.OPERATOR, r.err);
    assert.match(r.err, /STORE_READ_FAILED: .*input\/output error \(EIO\) on \/srv\/c0\/db\/000007\.ldb/);
  });
});
