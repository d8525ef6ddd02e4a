/**
 * A damaged database directory (src/store/db.ts openDb; docs/node.md "A damaged database"), on a real LevelDB in a
 * temporary directory:
 * - CURRENT lost: openDb made a new empty database there (LevelDB's createIfMissing) and LevelDB deleted the old
 *   tables and log as obsolete (a read-only `c0mpute jobs` wiped the job history); now STORE_CORRUPT, nothing changed.
 * - a CURRENT naming a manifest that is not there: STORE_CORRUPT, not STORE_OPEN_FAILED.
 * - a flipped table block met by a read: STORE_CORRUPT (a C0Error), not LevelDB's bare LEVEL_CORRUPTION (a bug, exit 70).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeDb, openDb, sub } from '../../../src/store/db.js';
import { C0Error } from '../../../src/errors.js';

const root = mkdtempSync(join(tmpdir(), 'c0-db-damaged-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A database with 300 records in tables (.ldb) and a log: written, closed, opened again (the log becomes a table). */
async function filled(): Promise<string> {
  const dir = join(root, `db${n++}`);
  let db = await openDb(dir);
  const s = sub(db, 'x');
  for (let i = 0; i < 300; i++) await s.put(`k${String(i).padStart(4, '0')}`, new TextEncoder().encode('v'.repeat(300) + i));
  await closeDb(db);
  db = await openDb(dir);
  await sub(db, 'x').put('last', new Uint8Array([1]));
  await closeDb(db);
  return dir;
}

const listing = (dir: string) =>
  readdirSync(dir)
    .filter((f) => !/^(LOG|LOG\.old|LOCK)$/.test(f))
    .map((f) => `${f}:${statSync(join(dir, f)).size}`)
    .sort();

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'opened';
  } catch (e) {
    assert.ok(e instanceof C0Error, String(e));
    return e.code;
  }
}

describe('openDb on a damaged directory', () => {
  it('CURRENT missing: STORE_CORRUPT, and every table, log and manifest stays as it was', async () => {
    const dir = await filled();
    rmSync(join(dir, 'CURRENT'));
    const before = listing(dir);
    assert.ok(before.some((f) => f.includes('.ldb')), before.join(' '));
    const p = openDb(dir);
    const code = await codeOf(p);
    if (code === 'opened') await closeDb(await p);
    assert.equal(code, 'STORE_CORRUPT');
    assert.deepEqual(listing(dir), before);
    await assert.rejects(openDb(dir), /CURRENT file is missing.*nothing was changed.*A damaged database/);
  });

  it('a fresh directory is still created', async () => {
    const db = await openDb(join(root, 'fresh', 'db'));
    await sub(db, 'x').put('a', new Uint8Array([1]));
    await closeDb(db);
    assert.ok(readdirSync(join(root, 'fresh', 'db')).includes('CURRENT'));
  });

  it('a CURRENT naming a manifest that is not there: STORE_CORRUPT', async () => {
    const dir = await filled();
    for (const f of readdirSync(dir)) if (f.startsWith('MANIFEST-')) rmSync(join(dir, f));
    assert.equal(await codeOf(openDb(dir)), 'STORE_CORRUPT');
    const g = await filled();
    writeFileSync(join(g, 'CURRENT'), 'XXX\n');
    assert.equal(await codeOf(openDb(g)), 'STORE_CORRUPT');
  });

  it('a read meeting a flipped table block: STORE_CORRUPT', async () => {
    const dir = await filled();
    for (const f of readdirSync(dir).filter((x) => x.endsWith('.ldb'))) {
      const b = readFileSync(join(dir, f));
      const at = Math.floor(b.length / 3);
      for (let i = at; i < at + Math.min(64, at); i++) b[i]! ^= 0xff;
      writeFileSync(join(dir, f), b);
    }
    const db = await openDb(dir);
    try {
      const read = (async () => {
        for await (const _ of sub(db, 'x').keys()) void _;
      })();
      await assert.rejects(read, (e: unknown) => e instanceof C0Error && e.code === 'STORE_CORRUPT' && /damaged \(Corruption: /.test(e.message));
    } finally {
      await closeDb(db);
    }
  });
});
