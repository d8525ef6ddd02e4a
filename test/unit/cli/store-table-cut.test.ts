/**
 * A table file cut short or emptied (a .ldb truncated to 100 or 0 bytes: a full disk during a copy, a bad restore).
 * LevelDB reports it as `IO error: …/000005.ldb: Invalid argument`, not as Corruption, and before (review s40 round 2
 * F4) `start`, `jobs` and `reputation` ended `internal error: … (this is a bug …)`, exit 70 (a supervisor restarts
 * that in a loop). Now it is STORE_CORRUPT, exit 3, as a flipped block is (docs/node.md "A damaged database"), both
 * where the store reads (src/store/db.ts) and at the top level (src/cli/program.ts). Real LevelDB, real CLI.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closeDb, openDb } from '../../../src/store/db.js';
import { C0Error } from '../../../src/errors.js';
import { report } from '../../../src/cli/program.js';
import { EXIT } from '../../../src/cli/context.js';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-store-table-cut-'));
after(() => rmSync(root, { recursive: true, force: true }));
const env = { ...process.env, C0MPUTE_PASSPHRASE: '', C0MPUTE_HOME: join(root, 'home') };

const c0 = async (d: string, ...args: string[]) => {
  const r = await runNode([bin, '--data-dir', d, ...args], { timeout: 120_000, env }); // (a hang's net, on a busy machine)
  return { code: r.status, out: r.stdout + r.stderr };
};

/**
 * An initialised data directory whose db/ holds one table spanning every key (from ' ' to '~', around every
 * sublevel's '!name!' prefix), so that any read of any store opens it; then each table cut to `size` bytes.
 */
async function cut(name: string, size: number): Promise<{ d: string; did: string }> {
  const d = join(root, name);
  const init = await c0(d, 'init', '--no-passphrase');
  assert.equal(init.code, 0, init.out);
  const did = /did:key:z[1-9A-HJ-NP-Za-km-z]+/.exec(init.out)?.[0];
  assert.ok(did, init.out);
  let db = await openDb(join(d, 'db'));
  const batch = [' low', '~high', ...Array.from({ length: 300 }, (_, i) => `!jobs!k${String(i).padStart(4, '0')}`)];
  for (const k of batch) await db.put(k, new TextEncoder().encode('v'.repeat(300)));
  await closeDb(db);
  db = await openDb(join(d, 'db')); // the log becomes a table
  await closeDb(db);
  const tables = readdirSync(join(d, 'db')).filter((f) => f.endsWith('.ldb'));
  assert.ok(tables.length > 0);
  for (const t of tables) {
    assert.ok(statSync(join(d, 'db', t)).size > size);
    truncateSync(join(d, 'db', t), size);
  }
  return { d, did };
}

// each case cuts its own data directory: two run side by side (the commands on one directory one after another)
describe('a table file cut short', { concurrency: 2 }, () => {
  for (const size of [100, 0]) {
    it(`(${size} bytes) a read in the store is STORE_CORRUPT, not LevelDB's bare IO error`, async () => {
      const { d } = await cut(`store-${size}`, size);
      const db = await openDb(join(d, 'db'));
      try {
        await assert.rejects(db.get('!jobs!k0001'), (e: unknown) => e instanceof C0Error && e.code === 'STORE_CORRUPT' && /\.ldb: Invalid argument/.test(e.message));
      } finally {
        await closeDb(db);
      }
    });

    it(`(${size} bytes) jobs, reputation and start: STORE_CORRUPT, exit 3, not a bug (exit 70)`, async () => {
      const { d, did } = await cut(`cli-${size}`, size);
      for (const args of [['jobs', '--all'], ['reputation', did], ['start', '--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0']]) {
        const r = await c0(d, ...args);
        assert.equal(r.code, 3, `${args[0]}: ${r.out}`);
        assert.match(r.out, /STORE_CORRUPT.*\.ldb: Invalid argument/, args[0]);
        assert.doesNotMatch(r.out, /internal error|this is a bug/, args[0]);
      }
    });
  }

  it("LevelDB's IO error naming a table, at the top level: STORE_CORRUPT, exit 3; another IO error is not the table's damage", () => {
    const cutShort = Object.assign(new Error('IO error: /srv/c0/db/000005.ldb: Invalid argument'), { code: 'LEVEL_IO_ERROR' });
    const other = Object.assign(new Error('IO error: /srv/c0/db/000005.ldb: Permission denied'), { code: 'LEVEL_IO_ERROR' });
    let err = '';
    const w = process.stderr.write;
    process.stderr.write = ((x: string) => ((err += x), true)) as typeof process.stderr.write;
    let codes: number[];
    try {
      codes = [report(cutShort), report(Object.assign(new Error('Iterator is not open'), { code: 'LEVEL_ITERATOR_NOT_OPEN', cause: cutShort }))];
    } finally {
      process.stderr.write = w;
    }
    assert.deepEqual(codes, [EXIT.OPERATOR, EXIT.OPERATOR], err);
    assert.match(err, /^error STORE_CORRUPT: the node's database is damaged \(IO error: \/srv\/c0\/db\/000005\.ldb: Invalid argument\).*A damaged database/);
    assert.doesNotMatch(err, /internal error|this is a bug/);
    err = '';
    process.stderr.write = ((x: string) => ((err += x), true)) as typeof process.stderr.write;
    try {
      // (not the table's damage: STORE_READ_FAILED, exit 3, since review s41 E F5: test/unit/store/db-read-failed)
      assert.equal(report(other), EXIT.OPERATOR);
    } finally {
      process.stderr.write = w;
    }
  });
});
