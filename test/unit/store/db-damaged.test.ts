/**
 * A damaged database directory (src/store/db.ts openDb; docs/node.md "A damaged database"), on a real LevelDB in a
 * temporary directory:
 * - CURRENT lost: openDb made a new empty database there (LevelDB's createIfMissing) and LevelDB deleted the old
 *   tables and log as obsolete (a read-only `c0mpute jobs` wiped the job history); now STORE_CORRUPT, nothing changed.
 * - a CURRENT naming a manifest that is not there: STORE_CORRUPT, not STORE_OPEN_FAILED.
 * - a flipped table block met by a read: STORE_CORRUPT (a C0Error), not LevelDB's bare LEVEL_CORRUPTION (a bug, exit 70).
 * - a database held by another process (LevelDB's lock): with lockWaitMs openDb waits for it (the daemon's start, while
 *   a one-shot command holds it) and says who holds it.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
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

describe('openDb on a database another process holds', () => {
  /** A child process that opens `dir` with openDb (leaving its holder note), says "held", and closes it on a line on stdin. */
  async function holder(dir: string) {
    const mod = new URL('../../../src/store/db.js', import.meta.url).href;
    const src = `import(${JSON.stringify(mod)}).then(async (m) => { const d = await m.openDb(${JSON.stringify(dir)}); process.stdout.write('held\\n'); process.stdin.once('data', async () => { await m.closeDb(d); process.stdout.write('released\\n'); process.exit(0); }); });`;
    const c = spawn(process.execPath, ['--input-type=module', '-e', src, 'c0mpute', 'run', 'job.yaml'], { stdio: ['pipe', 'pipe', 'inherit'] });
    const exited = once(c, 'exit');
    let out = '';
    c.stdout.setEncoding('utf8');
    const said = (w: string) =>
      new Promise<void>((res, rej) => {
        const check = () => (out.includes(w) ? res() : undefined);
        c.stdout.on('data', (d: string) => ((out += d), check()));
        c.once('exit', (code) => (out.includes(w) ? res() : rej(new Error(`holder exited ${code} before "${w}"`))));
        check();
      });
    await said('held');
    return { child: c, said, exited };
  }

  it('at once: STORE_LOCKED naming the holding process and its command', async () => {
    const dir = await filled();
    const h = await holder(dir);
    try {
      await assert.rejects(openDb(dir), (e: unknown) => e instanceof C0Error && e.code === 'STORE_LOCKED' && e.message.includes(`held by process ${h.child.pid} (\`c0mpute run job.yaml\``) && /one-shot command/.test(e.message));
    } finally {
      h.child.stdin!.end('go\n');
      await h.exited;
    }
  });

  it('with lockWaitMs: waits for the holder to let go, then opens', async () => {
    const dir = await filled();
    const h = await holder(dir);
    let saw: string | undefined;
    // the holder lets go only once openDb has found the lock held and waits
    const opening = openDb(dir, {
      lockWaitMs: 60_000,
      onLockWait: (who: string | undefined) => {
        saw = who ?? 'unknown';
        h.child.stdin!.end('go\n');
      },
    });
    const db = await opening.finally(() => h.child.stdin!.end('go\n'));
    try {
      assert.match(saw ?? '', new RegExp(`^process ${h.child.pid} `));
      assert.ok((await sub(db, 'x').get('last')) !== undefined);
      assert.deepEqual(JSON.parse(readFileSync(join(dir, 'C0HOLDER'), 'utf8')).pid, process.pid);
    } finally {
      await closeDb(db);
      await h.exited;
    }
    assert.ok(!readdirSync(dir).includes('C0HOLDER'), 'the note is removed at the close');
  });
});
