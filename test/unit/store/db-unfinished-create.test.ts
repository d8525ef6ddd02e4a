/**
 * A first open killed before LevelDB wrote CURRENT (src/store/db.ts openDb), on a real LevelDB in a temporary directory.
 * LevelDB creates a database by writing MANIFEST-000001, then 000001.dbtmp, then renaming that to CURRENT; a kill in
 * between (a `c0mpute start` stopped in its first milliseconds) left `LOCK, LOG, MANIFEST-000001, 000001.dbtmp`. openDb
 * took the manifest for a database and refused the directory as STORE_CORRUPT on every later open ("its tables and logs
 * are there", though it held none). Now a db/ with no CURRENT and no table or log is created anew; one with tables or
 * logs and no CURRENT is still refused, and the message names what is there.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeDb, openDb, sub } from '../../../src/store/db.js';
import { C0Error } from '../../../src/errors.js';

const root = mkdtempSync(join(tmpdir(), 'c0-db-unfinished-'));
after(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A db/ as a killed first open leaves it: no CURRENT, a manifest (`manifest` bytes), a .dbtmp, LevelDB's LOG and LOCK. */
function leftover(manifest: Uint8Array, dbtmp: string, extra: Record<string, string> = {}): string {
  const dir = join(root, `db${n++}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'LOCK'), '');
  writeFileSync(join(dir, 'LOG'), '2026/12/06-01:00:00.000000 1 Creating DB\n');
  writeFileSync(join(dir, 'MANIFEST-000001'), manifest);
  if (dbtmp !== '-') writeFileSync(join(dir, '000001.dbtmp'), dbtmp);
  for (const [f, v] of Object.entries(extra)) writeFileSync(join(dir, f), v);
  return dir;
}

async function roundTrip(dir: string): Promise<void> {
  let db = await openDb(dir);
  await sub(db, 'x').put('k', new Uint8Array([7]));
  await closeDb(db);
  db = await openDb(dir);
  assert.deepEqual([...(await sub(db, 'x').get('k'))!], [7]);
  await closeDb(db);
  assert.ok(readdirSync(dir).includes('CURRENT'));
}

describe('openDb after a first open was killed', () => {
  it('an empty manifest and an empty .dbtmp: created, written, opened again', async () => {
    await roundTrip(leftover(new Uint8Array(0), ''));
  });

  it('a partly written manifest and a half-written CURRENT (.dbtmp): created', async () => {
    await roundTrip(leftover(new TextEncoder().encode('\x00\x01leveldb.BytewiseComparator'), 'MANIFEST-0000'));
  });

  it('a manifest alone (no .dbtmp): created', async () => {
    await roundTrip(leftover(new Uint8Array(40), '-'));
  });

  it('a table with no CURRENT is still STORE_CORRUPT, and the message names the table', async () => {
    const dir = leftover(new Uint8Array(0), '', { '000005.ldb': 'x'.repeat(100) });
    const err = await openDb(dir).then(
      () => assert.fail('opened'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof C0Error && err.code === 'STORE_CORRUPT', String(err));
    assert.match(err.message, /CURRENT file is missing while 1 table file \(000005\.ldb\) is there/);
    assert.ok(readdirSync(dir).includes('000005.ldb'));
    assert.ok(!readdirSync(dir).includes('CURRENT'));
  });

  it('a log with no CURRENT is still STORE_CORRUPT, named as a log', async () => {
    const dir = leftover(new Uint8Array(0), '-', { '000003.log': 'x'.repeat(100) });
    await assert.rejects(openDb(dir), (e: unknown) => e instanceof C0Error && e.code === 'STORE_CORRUPT' && /while 1 log file \(000003\.log\) is there/.test(e.message));
    assert.ok(!readdirSync(dir).includes('CURRENT'));
  });
});
