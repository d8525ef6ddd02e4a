/**
 * Directories the CLI makes with their parents (a data directory, an `--out`'s directory, a ledger directory, a devnet
 * `--dir`) go through makeDirs (src/util/make-dirs.ts). Before, each used `mkdirSync(dir, { recursive: true })`,
 * which never returns where mkdir answers ENOENT under a parent that exists: `--data-dir /proc/1/x init`,
 * `overlay create --out /proc/1/x/k`, `devnet --dir /proc/1/x` spun at most of a core until killed; and a path through
 * a regular file (`overlay create --out afile/x`) was `internal error: EEXIST …`, exit 70. Now each ends at once with
 * the code of what it makes, exit 3. Runs the real CLI, each with a timeout, so a return of the loop fails rather
 * than hangs.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT } from '../../../src/cli/context.js';
import { Ed25519Signer } from '../../../src/records/index.js';
import { sealEntries } from '../../../src/ledger/index.js';
import { writeLedgerFile } from '../../../src/ledger/file.js';
import { admitted } from '../ledger/helpers.js';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'c0-make-dirs-exit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const afile = join(dir, 'afile');
writeFileSync(afile, 'x');
const ledger = join(dir, 'L.cbor');
writeLedgerFile(ledger, { entries: sealEntries([admitted('r1')], Ed25519Signer.generate()).map((e) => e.bytes), receipts: [] });

/** Each case ends before any node starts: a few at a time. */
const SIDE_BY_SIDE = { concurrency: 4 };
const PROC = !existsSync('/proc/self');

async function c0(...args: string[]): Promise<{ code: number | null; stderr: string; ms: number }> {
  const t0 = Date.now();
  // killed at 30 s: the old endless loop ends as a failure (status null), not a hung run
  const r = await runNode([bin, ...args], { env: { ...process.env, C0MPUTE_HOME: join(dir, 'unused-home') }, timeout: 30_000 });
  return { code: r.status, stderr: r.stderr, ms: Date.now() - t0 };
}

describe('a directory that cannot be made is the command’s own code, exit 3, at once', SIDE_BY_SIDE, () => {
  const cases: Array<[string, string[], string, RegExp, boolean?]> = [
    ['init under /proc', ['--data-dir', '/proc/1/x', 'init', '--no-passphrase'], 'DATA_DIR_INVALID', /cannot use \/proc\/1\/x as the data directory: cannot make \/proc\/1\/x \(its file system takes no new directories\)/, PROC],
    ['keys init under /proc', ['--data-dir', '/proc/1/x', 'keys', 'init', '--no-passphrase'], 'DATA_DIR_INVALID', /cannot make \/proc\/1\/x \(its file system takes no new directories\)/, PROC],
    ['pool-provider init --pool-dir under /proc', ['--data-dir', join(dir, 'd1'), 'pool-provider', 'init', '--pool-dir', '/proc/1/x'], 'DATA_DIR_INVALID', /cannot make \/proc\/1\/x/, PROC],
    ['overlay create --out under /proc', ['--data-dir', join(dir, 'd2'), 'overlay', 'create', 'foo', '--out', '/proc/1/x/foo.key'], 'OUTPUT_UNWRITABLE', /cannot write \/proc\/1\/x\/foo\.key: cannot make \/proc\/1\/x \(its file system takes no new directories\)/, PROC],
    ['ledger import into /proc', ['ledger', 'import', ledger, '/proc/1/x'], 'STORE_OPEN_FAILED', /cannot make \/proc\/1\/x/, PROC],
    ['devnet --dir under /proc', ['devnet', '--dir', '/proc/1/x'], 'DEVNET_DIR_UNUSABLE', /cannot use \/proc\/1\/x as a devnet directory: cannot make \/proc\/1\/x/, PROC],
    // the directory is there but takes no new file: the OS's words, not Node's "ENOENT: no such file or directory, open"
    ['overlay create --out in /proc itself', ['--data-dir', join(dir, 'd4'), 'overlay', 'create', 'foo', '--out', '/proc/foo.key'], 'OVERLAY_KEY_UNWRITABLE', /^error OVERLAY_KEY_UNWRITABLE: cannot write \/proc\/foo\.key: \/proc takes no new files \(ENOENT\)$/m, PROC],
    ['overlay create --out through a file', ['--data-dir', join(dir, 'd3'), 'overlay', 'create', 'foo', '--out', join(afile, 'x')], 'OUTPUT_UNWRITABLE', /is a file, not a directory/],
    ['init --data-dir through a file', ['--data-dir', join(afile, 'd'), 'init', '--no-passphrase'], 'DATA_DIR_INVALID', /is a file, not a directory/],
    ['devnet --dir a file', ['devnet', '--dir', afile], 'DEVNET_DIR_UNUSABLE', /is a file, not a directory/],
  ];
  for (const [what, args, code, message, skip] of cases) {
    it(`${what}: ${code}`, { skip: skip ?? false }, async () => {
      const r = await c0(...args);
      assert.notEqual(r.code, null, `killed after ${r.ms} ms: it did not return`);
      assert.equal(r.code, EXIT.OPERATOR, r.stderr);
      assert.match(r.stderr, new RegExp(`^error ${code}: `, 'm'), r.stderr);
      assert.match(r.stderr, message);
      assert.doesNotMatch(r.stderr, /internal error|this is a bug/);
    });
  }

  it('devnet --pool on a --dir whose roster.cose is no roster: DEVNET_STATE_INVALID, the file kept, and no "stopping every node" (none was started)', async () => {
    const d = join(dir, 'pooldev');
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, 'roster.cose'), 'junk');
    const r = await runNode([bin, 'devnet', '--pool', '--dir', d], { env: { ...process.env, C0MPUTE_HOME: join(dir, 'unused-home') }, timeout: 60_000 });
    assert.equal(r.status, EXIT.OPERATOR, r.stderr);
    assert.match(r.stderr, /^error DEVNET_STATE_INVALID: /m);
    assert.doesNotMatch(r.stdout, /stopping every node/);
    assert.equal(readFileSync(join(d, 'roster.cose'), 'utf8'), 'junk');
  });

  it('the file in the way is left as it was', () => {
    assert.ok(statSync(afile).isFile());
  });
});
