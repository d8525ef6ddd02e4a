/**
 * The node options' values and --data-dir, at the edges (review s41 rvE): a bad option value is a wrong command line,
 * exit 2 with its own code (README "Exit codes", 117bdb5). Before: `start --api ""` and `--log-level ""` were dropped
 * (the config's value used); `--api nohost`, `--listen garbage` were CONFIG_INVALID exit 3; `--data-dir ""` ran on the
 * default data directory; a data directory that is a link to nothing said KEY_MISSING "run c0mpute keys init". Runs
 * the real CLI: each case ends before any node or network starts.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'c0-node-flag-values-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const dataDir = join(dir, 'data');
mkdirSync(dataDir);
const home = join(dir, 'home');
const job = join(dir, 'job.yaml');
writeFileSync(job, 'workload: builtin.sha256\ninput: "hello"\nmaxPrice: "0.01 USD"\ndeadline: 60s\n');

async function c0(args: string[], extraEnv: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  const { NODE_TEST_CONTEXT: _, ...parent } = process.env; // the child is the CLI, not a test runner
  const r = await runNode([bin, ...args], { env: { ...parent, C0MPUTE_HOME: home, ...extraEnv }, timeout: 60_000 });
  return { code: r.status, stderr: r.stderr };
}

/** Each case runs the CLI and ends before any node starts (none makes the default data directory): a few at a time. */
const SIDE_BY_SIDE = { concurrency: 4 };

describe('a node option naming nothing, or a malformed one, exits 2 with its own code', SIDE_BY_SIDE, () => {
  for (const [flag, v] of [['--api', ''], ['--log-level', ''], ['--log-format', ''], ['--api', ' ']] as const) {
    it(`start ${flag} "${v}": USAGE_EMPTY_VALUE`, async () => {
      const r = await c0(['--data-dir', dataDir, 'start', flag, v]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`^error USAGE_EMPTY_VALUE: ${flag} takes a value`, 'm'));
    });
  }

  it('run --api "": USAGE_EMPTY_VALUE too (the node options are the same)', async () => {
    const r = await c0(['--data-dir', dataDir, 'run', job, '--api', '']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^error USAGE_EMPTY_VALUE: --api/m);
  });

  for (const [flag, v, field] of [['--api', 'nohost', 'api.listen'], ['--listen', 'garbage', 'network.listen'], ['--bootstrap', 'garbage', 'network.bootstrap'], ['--log-level', 'loud', 'log.level']] as const) {
    it(`start ${flag} ${v}: CONFIG_INVALID, exit 2, said to be the command line's`, async () => {
      const r = await c0(['--data-dir', dataDir, 'start', flag, v]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`^error CONFIG_INVALID: the command line: ${field.replace('.', '\\.')}`, 'm'));
    });
  }

  it("an unknown key in the file's `network` is the file's (exit 3), with a --listen or C0MPUTE_LISTEN set beside it (QA qaOps F3)", async () => {
    const d = join(dir, 'unknown-key');
    mkdirSync(d);
    writeFileSync(join(d, 'config.yaml'), 'network: { lisen: ["/ip4/127.0.0.1/tcp/1"] }\n');
    for (const [args, env] of [[['--listen', '/ip4/127.0.0.1/tcp/1'], {}], [[], { C0MPUTE_LISTEN: '/ip4/127.0.0.1/tcp/1' }], [[], {}]] as const) {
      const r = await c0(['--data-dir', d, 'start', ...args], env);
      assert.equal(r.code, 3, `${args.join(' ')} ${JSON.stringify(env)}: ${r.stderr}`);
      assert.match(r.stderr, /^error CONFIG_INVALID: \S*unknown-key\/config\.yaml: network: Unrecognized key: "lisen"/m);
    }
  });

  it('the same value from the environment stays CONFIG_INVALID, exit 3 (not the command line)', async () => {
    const r = await c0(['--data-dir', dataDir, 'start'], { C0MPUTE_API: 'nohost' });
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /^error CONFIG_INVALID: the environment/m);
  });
});

describe('--data-dir', SIDE_BY_SIDE, () => {
  for (const args of [['--data-dir', ''], ['--data-dir=']]) {
    it(`jobs ${args.join(' ')}: USAGE_EMPTY_VALUE (it ran on the default data directory)`, async () => {
      const r = await c0([...args, 'jobs']);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /^error USAGE_EMPTY_VALUE: --data-dir takes a directory/m);
      assert.ok(!existsSync(home), 'the default data directory was used');
    });
  }

  it('a data directory that is a link to nothing: DATA_DIR_MISSING naming where it points, for every command', async () => {
    const link = join(dir, 'link');
    symlinkSync(join(dir, 'volume', 'c0'), link);
    const cmds = [['jobs'], ['start'], ['keys', 'init', '--no-passphrase'], ['init', '--no-passphrase']];
    const runs = await Promise.all(cmds.map((cmd) => c0(['--data-dir', link, ...cmd])));
    for (const [i, cmd] of cmds.entries()) {
      const r = runs[i]!;
      assert.equal(r.code, 3, `${cmd.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^error DATA_DIR_MISSING: the data directory .*link is a link to .*volume\/c0, which does not exist/m, cmd.join(' '));
    }
    assert.ok(!existsSync(join(dir, 'volume')), 'something was made through the link');
  });
});
