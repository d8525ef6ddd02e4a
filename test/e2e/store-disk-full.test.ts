/**
 * A LevelDB write that fails part-way on a full disk leaves a torn record in the write-ahead log: LevelDB's recovery
 * at the next open drops every record written after it. Here, on a real 8 MiB tmpfs (root only: skipped elsewhere),
 * a steward's ledger and the node's database each hit ENOSPC, space comes back, and writes go on: every write that
 * was acknowledged must still be there after a reopen (before the fix, those after the failed one were lost, and
 * the ledger signed a second entry at an acknowledged seq).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, openSync, writeSync, closeSync, rmSync, mkdirSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { C0Error } from '../../src/errors.js';
import { Ledger } from '../../src/ledger/index.js';
import { openDb, closeDb, sub, syncBatch, setRecovery, storeHealth } from '../../src/store/db.js';
import { admitted, steward } from '../unit/ledger/helpers.js';
import { checkDataDirWritable } from '../../src/node/data-files.js';
import { ensureToken } from '../../src/node/api.js';

function mountTmpfs(): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'c0-diskfull-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', dir], { stdio: 'ignore' });
    return dir;
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
}
function unmount(dir: string): void {
  execFileSync('umount', [dir], { stdio: 'ignore' });
  rmSync(dir, { recursive: true, force: true });
}
/** Fill the file system page by page; returns the filler's path. */
function fill(root: string): string {
  const p = join(root, 'filler');
  const fd = openSync(p, 'w');
  const page = Buffer.alloc(4096);
  try {
    for (;;) writeSync(fd, page);
  } catch (e) {
    assert.equal((e as NodeJS.ErrnoException).code, 'ENOSPC');
  }
  closeSync(fd);
  return p;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isWriteFailed = (e: unknown) => e instanceof C0Error && e.code === 'STORE_WRITE_FAILED';

const root = mountTmpfs();

test('a ledger whose disk filled keeps every acknowledged append across a reopen', { skip: root ? false : 'needs root and a tmpfs mount' }, async () => {
  const dir = join(root!, 'ledger');
  mkdirSync(dir);
  try {
    let l = await Ledger.open(dir, { signer: steward });
    const acked = new Map<number, string>();
    let n = 0;
    for (; n < 20; n++) {
      const r = await l.append(admitted(`c${n}`, 'a', 100));
      acked.set(r.seq, r.address);
    }
    const filler = fill(root!);
    let failed: unknown;
    for (; n < 400 && !failed; n++) {
      try {
        const r = await l.append(admitted(`c${n}`, 'a', 100));
        acked.set(r.seq, r.address);
      } catch (e) {
        failed = e;
      }
    }
    assert.ok(failed, 'an append failed on the full disk');
    rmSync(filler);
    // space is back: appends are refused until the store is reopened, then acknowledged again
    const deadline = Date.now() + 5000;
    let after = 0;
    while (after < 3 && Date.now() < deadline) {
      try {
        const r = await l.append(admitted(`c${n++}`, 'a', 100));
        acked.set(r.seq, r.address);
        after++;
      } catch (e) {
        assert.ok(isWriteFailed(e), `refused with STORE_WRITE_FAILED, got ${(e as Error).message}`);
        await sleep(20);
      }
    }
    assert.equal(after, 3, 'appends are taken again once the disk has space');
    const length = l.length;
    await l.close();
    l = await Ledger.open(dir, { signer: steward });
    try {
      assert.equal(l.length, length, 'every acknowledged entry is still there after the reopen');
      for (const [seq, address] of acked) assert.equal(await l.addressAt(seq), address, `seq ${seq} is the acknowledged entry`);
    } finally {
      await l.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the node's database: after a failed write nothing is acknowledged until the reopen, and what was survives it", { skip: root ? false : 'needs root and a tmpfs mount' }, async () => {
  const dir = join(root!, 'db');
  try {
    let db = await openDb(dir);
    setRecovery(db, { firstDelayMs: 20, maxDelayMs: 100, probeBytes: 256 * 1024 });
    const s = sub(db, 'jobs');
    const acked: string[] = [];
    const value = new Uint8Array(600).fill(7);
    for (let i = 0; i < 20; i++) {
      await syncBatch(db, [{ type: 'put', sublevel: s, key: `k${i}`, value }]);
      acked.push(`k${i}`);
    }
    const filler = fill(root!);
    let i = 20;
    let failed: unknown;
    for (; i < 400 && !failed; i++) {
      try {
        await s.put(`k${i}`, value, { sync: true } as never);
        acked.push(`k${i}`);
      } catch (e) {
        failed = e;
      }
    }
    assert.ok(isWriteFailed(failed), `the failed write says STORE_WRITE_FAILED: ${(failed as Error)?.message}`);
    assert.match((failed as Error).message, /No space left on device/);
    assert.equal(storeHealth(db).ok, false);
    rmSync(filler);
    const deadline = Date.now() + 5000;
    let after = 0;
    while (after < 3 && Date.now() < deadline) {
      try {
        await syncBatch(db, [{ type: 'put', sublevel: s, key: `k${i}`, value }]);
        acked.push(`k${i++}`);
        after++;
      } catch (e) {
        assert.ok(isWriteFailed(e), (e as Error).message);
        await sleep(20);
      }
    }
    assert.equal(after, 3, 'writes are taken again once the disk has space (through the same sublevel)');
    assert.equal(storeHealth(db).ok, true);
    await closeDb(db);
    db = await openDb(dir);
    try {
      const have = new Set<string>();
      for await (const k of sub(db, 'jobs').keys()) have.add(k);
      for (const k of acked) assert.ok(have.has(k), `acknowledged ${k} survives the reopen`);
    } finally {
      await closeDb(db);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a full data directory at start: DATA_DIR_UNWRITABLE and STORE_OPEN_FAILED say "no space left", not a bug', { skip: root ? false : 'needs root and a tmpfs mount' }, async () => {
  const dir = join(root!, 'node');
  mkdirSync(dir);
  const filler = fill(root!);
  try {
    const codeOf = async (f: () => unknown) => {
      try {
        await f();
        return 'none';
      } catch (e) {
        return e instanceof C0Error ? `${e.code}: ${e.message}` : `not a C0Error: ${(e as Error).message}`;
      }
    };
    assert.match(await codeOf(() => checkDataDirWritable(dir)), /^DATA_DIR_UNWRITABLE: .*no space left on the device \(ENOSPC/);
    assert.match(await codeOf(() => ensureToken(dir)), /^DATA_DIR_UNWRITABLE: cannot write the API token .*no space left on the device/);
    assert.match(await codeOf(() => openDb(join(dir, 'db'))), /^STORE_OPEN_FAILED: .*No space left on device/);
    assert.deepEqual(readdirSync(dir).filter((f) => f.includes('tmp') || f.includes('check')), [], 'no temporary file left');
  } finally {
    rmSync(filler);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('unmount', { skip: root ? false : 'nothing mounted' }, () => unmount(root!));
