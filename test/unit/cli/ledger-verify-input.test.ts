/**
 * `c0mpute ledger verify` refuses bad input as a wrong command line (exit 2, a stable code), never as a verdict on the ledger:
 * a `--steward` that is not a DID is LEDGER_BAD_STEWARD, as a bad `--witness` is LEDGER_BAD_WITNESS, not "the
 * ledger is sealed by someone else" (LEDGER_WRONG_STEWARD, exit 1, kind authenticity). A directory whose head
 * record is damaged is a verdict with its code (LEDGER_HEAD_MISMATCH, exit 1), not an internal error (exit 70); it is exported only when
 * asked (--unverified), and imported with a rebuilt head only when asked (--rebuild-head).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ed25519Signer, didFromPublicKey, encodeCanonical } from '../../../src/records/index.js';
import { openDb, closeDb, sub } from '../../../src/store/db.js';
import { Ledger } from '../../../src/ledger/index.js';
import { EXIT } from '../../../src/cli/context.js';
import { admitted, tempDir } from '../ledger/helpers.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));

/** The environment without node:test's marker, so a CLI child is not taken for a test runner's. */
function withoutTestContext(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

/** Run the CLI: its stdout and stderr, and its exit code. */
function c0(...args: string[]): { code: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env: { ...withoutTestContext(), C0MPUTE_HOME: tmpdir() } });
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

describe('ledger verify: bad input', () => {
  const t = tempDir('c0-ledger-cli-');
  const dir = join(t.dir, 'led');
  const signer = Ed25519Signer.generate();
  const S = didFromPublicKey(signer.publicKey);
  before(async () => {
    const l = await Ledger.open(dir, { signer });
    await l.append(admitted('c1'));
    await l.close();
  });
  after(() => t.cleanup());

  for (const bad of ['notadid', 'did:key:nope', `${S}x`, S.slice(0, -3), '']) {
    it(`--steward ${JSON.stringify(bad)} is refused as a wrong command line: LEDGER_BAD_STEWARD, exit 2`, async () => {
      for (const json of [[], ['--json']]) {
        const r = c0('ledger', 'verify', dir, '--steward', bad, ...json);
        assert.equal(r.code, EXIT.USAGE, r.stdout + r.stderr);
        assert.match(r.stderr, /^error LEDGER_BAD_STEWARD: --steward: expected a did:key/);
        assert.doesNotMatch(r.stdout + r.stderr, /LEDGER_WRONG_STEWARD/);
      }
    });
  }

  it('a well-formed steward decides the verdict: its own verifies, another key is LEDGER_WRONG_STEWARD (exit 1)', async () => {
    assert.equal((c0('ledger', 'verify', dir, '--steward', S)).code, EXIT.OK);
    const other = didFromPublicKey(Ed25519Signer.generate().publicKey);
    const r = c0('ledger', 'verify', dir, '--steward', other, '--json');
    assert.equal(r.code, EXIT.NEGATIVE);
    assert.equal((JSON.parse(r.stdout) as { problem: { code: string } }).problem.code, 'LEDGER_WRONG_STEWARD');
  });
});

describe('ledger verify --steward on an empty ledger', () => {
  it('verifies (a steward before its first admission), and says no entry shows whose it is', async () => {
    const t = tempDir('c0-ledger-empty-');
    try {
      const dir = join(t.dir, 'led');
      await (await Ledger.open(dir, { signer: Ed25519Signer.generate() })).close();
      const S = didFromPublicKey(Ed25519Signer.generate().publicKey);
      const r = c0('ledger', 'verify', dir, '--steward', S);
      assert.equal(r.code, EXIT.OK, r.stderr);
      assert.match(r.stdout, new RegExp(`^steward {6}${S} \\(named by --steward; the ledger has no entry to show whose it is\\)$`, 'm'));
      assert.doesNotMatch(r.stdout, /as required by --steward/);
      assert.match(r.stdout, /^length {7}0$/m);
    } finally {
      t.cleanup();
    }
  });
});

describe('ledger verify: a damaged head record', () => {
  it('is LEDGER_HEAD_MISMATCH (exit 1) with the entries shown verified; export --unverified and import --rebuild-head rebuild it', async () => {
    const t = tempDir('c0-ledger-cli-');
    try {
      const dir = join(t.dir, 'led');
      const l = await Ledger.open(dir, { signer: Ed25519Signer.generate() });
      await l.append(admitted('c1'));
      const head = l.head();
      await l.close();
      const db = await openDb(dir);
      await sub(db, 'meta').put('head', encodeCanonical({ length: 1, head: 'x' }));
      await closeDb(db);
      const r = c0('ledger', 'verify', dir, '--json');
      assert.equal(r.code, EXIT.NEGATIVE, r.stdout + r.stderr);
      const out = JSON.parse(r.stdout) as { ok: boolean; length: number; head: string; problem: { code: string } };
      assert.deepEqual([out.ok, out.length, out.head, out.problem.code], [false, 1, head.head, 'LEDGER_HEAD_MISMATCH']);
      // the rebuild docs/pool.md describes: export (refused unless asked for: the head cannot be shown to match), then
      // import with a head rebuilt from the entries (asked for too: the file keeps the unreadable head)
      const file = join(t.dir, 'led.file');
      const refused = c0('ledger', 'export', dir, file);
      assert.equal(refused.code, EXIT.OPERATOR, refused.stdout + refused.stderr);
      assert.match(refused.stderr, /^error LEDGER_HEAD_MISMATCH: refusing to export /);
      const x = c0('ledger', 'export', dir, file, '--unverified');
      assert.equal(x.code, EXIT.OK, x.stdout + x.stderr);
      assert.match(x.stdout, /^warning: the ledger does not verify: LEDGER_HEAD_MISMATCH: the stored head record \(meta\/head\) is unreadable/m);
      assert.equal(c0('ledger', 'verify', file).code, EXIT.NEGATIVE);
      const rebuilt = join(t.dir, 'rebuilt');
      const i = c0('ledger', 'import', file, rebuilt, '--rebuild-head');
      assert.equal(i.code, EXIT.OK, i.stdout + i.stderr);
      assert.match(i.stdout, new RegExp(`^imported 1 entries, head ${head.head}$`, 'm'));
      assert.equal(c0('ledger', 'verify', rebuilt).code, EXIT.OK);
    } finally {
      t.cleanup();
    }
  });
});
