/**
 * The real CLI on a damaged or held database (docs/node.md "A damaged database"):
 * - `jobs` (no daemon) on a db/ whose CURRENT is lost printed `no jobs yet`, exit 0, and LevelDB deleted the old tables
 *   (the whole job history); now `error STORE_CORRUPT`, exit 3, and db/ is as it was.
 * - LevelDB's LEVEL_CORRUPTION reaching the top level was `internal error: Corruption: …`, exit 70 (a supervisor's
 *   Restart=on-failure restarted it in a loop); now STORE_CORRUPT, exit 3.
 * - `start` while a one-shot command holds the database (a `run` during a restart) exited 3 STORE_LOCKED at once; now it
 *   waits for it (up to 10 s), saying who holds it, and starts.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { report } from '../../../src/cli/program.js';
import { EXIT } from '../../../src/cli/context.js';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-store-damaged-'));
after(() => rmSync(root, { recursive: true, force: true }));

const c0 = async (d: string, ...args: string[]) => {
  const r = await runNode([bin, '--data-dir', d, ...args], { timeout: 60_000, env: { ...process.env, C0MPUTE_PASSPHRASE: '' } });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
};

/** An initialised data directory whose db/ exists (an offline `jobs` made it). */
async function dataDir(name: string): Promise<string> {
  const d = join(root, name);
  assert.equal((await c0(d, 'init', '--no-passphrase')).code, 0);
  const j = await c0(d, 'jobs', '--all');
  assert.equal(j.code, 0, j.stderr);
  return d;
}

const listing = (dir: string) =>
  readdirSync(dir)
    .filter((f) => !/^(LOG|LOG\.old|LOCK)$/.test(f))
    .map((f) => `${f}:${statSync(join(dir, f)).size}`)
    .sort();

// each case has its own data directory: they run side by side
describe('the CLI on a damaged or held database', { concurrency: true }, () => {
  describe('the CLI on a damaged database', () => {
    it('jobs with db/CURRENT lost: STORE_CORRUPT, exit 3, nothing deleted', async () => {
      const d = await dataDir('current');
      rmSync(join(d, 'db', 'CURRENT'));
      const before = listing(join(d, 'db'));
      const r = await c0(d, 'jobs', '--all');
      assert.equal(r.code, 3, r.stdout + r.stderr);
      assert.match(r.stderr, /^error STORE_CORRUPT: .*CURRENT file is missing.*A damaged database/);
      assert.doesNotMatch(r.stdout, /no jobs yet/);
      assert.deepEqual(listing(join(d, 'db')), before);
    });

    it("LevelDB's LEVEL_CORRUPTION at the top level: STORE_CORRUPT, exit 3, not a bug", () => {
      const e = Object.assign(new Error('Corruption: corrupted compressed block contents'), { code: 'LEVEL_CORRUPTION' });
      let err = '';
      const w = process.stderr.write;
      process.stderr.write = ((s: string) => ((err += s), true)) as typeof process.stderr.write;
      let code: number;
      try {
        code = report(e);
        code = report(Object.assign(new Error('Database failed to open'), { code: 'LEVEL_DATABASE_NOT_OPEN', cause: e })) === code ? code : -1;
      } finally {
        process.stderr.write = w;
      }
      assert.equal(code, EXIT.OPERATOR, err);
      assert.match(err, /^error STORE_CORRUPT: the node's database is damaged \(Corruption: corrupted compressed block contents\).*A damaged database/);
      assert.doesNotMatch(err, /internal error|this is a bug/);
    });
  });

  describe('start while a one-shot command holds the database', () => {
    it('waits for it, naming the holder, then starts', async () => {
      const d = await dataDir('held');
      const db = join(d, 'db');
      // the one-shot command: a process that opens db/ as every command does (openDb) and lets go on a line on stdin
      const mod = new URL('../../../src/store/db.js', import.meta.url).href;
      const src = `import(${JSON.stringify(mod)}).then(async (m) => { const d = await m.openDb(${JSON.stringify(db)}); process.stdout.write('held\\n'); process.stdin.once('data', async () => { await m.closeDb(d); process.exit(0); }); });`;
      const holder = spawn(process.execPath, ['--input-type=module', '-e', src, 'c0mpute', 'run', 'job.yaml'], { stdio: ['pipe', 'pipe', 'inherit'] });
      const holderExit = once(holder, 'exit');
      await new Promise<void>((res) => holder.stdout.on('data', (b: Buffer) => (b.toString().includes('held') ? res() : undefined)));
      const start = spawn(process.execPath, [bin, '--data-dir', d, 'start', '--listen', '/ip4/127.0.0.1/tcp/0', '--api', '127.0.0.1:0', '--log-format', 'json'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, C0MPUTE_PASSPHRASE: '' } });
      const startExit = once(start, 'exit');
      let log = '';
      let released = false;
      let stopped = false;
      const onLog = (b: Buffer) => {
        log += b.toString();
        // the holder lets go once start says it waits; start is stopped once it has started
        if (!released && log.includes('waiting up to 10 s')) {
          released = true;
          holder.stdin!.end('go\n');
        }
        if (!stopped && log.includes('node started')) {
          stopped = true;
          start.kill('SIGINT');
        }
      };
      start.stdout.on('data', onLog);
      start.stderr.on('data', onLog);
      const timer = setTimeout(() => start.kill('SIGKILL'), 60_000);
      const [code] = await startExit;
      clearTimeout(timer);
      if (!released) holder.stdin!.end('go\n');
      await holderExit;
      assert.ok(released, log);
      assert.match(log, new RegExp(`held by process ${holder.pid} \\(\`c0mpute run job\\.yaml\``));
      assert.doesNotMatch(log, /error STORE_LOCKED/);
      assert.ok(stopped, log);
      assert.equal(code, 0, log);
    });
  });
});
