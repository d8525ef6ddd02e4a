/**
 * A wrong command line exits 2 (README "Exit codes"), whether commander finds it or the command does: a bad option
 * value keeps its own stable code (CLI_BAD_LIMIT, CLI_BAD_WAIT, DEVNET_BAD_OPTION, POLICY_UNKNOWN, …) and exits 2, not
 * 3; a bad value in a file (a job file's policy) stays an operator error (3). With a daemon running, `run` refuses the
 * node options it would otherwise ignore (USAGE_NODE_FLAG_WITH_DAEMON, exit 2). Runs the real CLI: each case ends
 * before any node or network starts.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT, UsageError, defaultDataDir } from '../../../src/cli/context.js';
import { report } from '../../../src/cli/program.js';
import { refuseStartFlags } from '../../../src/cli/commands/node-actions.js';
import { C0Error } from '../../../src/errors.js';
import { buildProgram } from '../../../src/cli/program.js';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'c0-usage-exit-'));
after(() => rmSync(dir, { recursive: true, force: true }));

async function c0(home: string, ...args: string[]): Promise<{ code: number; stderr: string }> {
  const r = await runNode([bin, ...args], { env: { ...process.env, C0MPUTE_HOME: home }, timeout: 60_000 });
  return { code: r.status ?? -1, stderr: r.stderr };
}

/** Each case runs the CLI once and ends before any node starts: a few at a time. */
const SIDE_BY_SIDE = { concurrency: 4 };

const job = join(dir, 'job.yaml');
writeFileSync(job, 'workload: builtin.sha256\ninput: "hello"\nmaxPrice: "0.01 USD"\ndeadline: 60s\n');
const badPolicyJob = join(dir, 'bad-policy.yaml');
writeFileSync(badPolicyJob, 'workload: builtin.sha256\ninput: "hello"\nmaxPrice: "0.01 USD"\ndeadline: 60s\npolicy: nope\n');
const batch = join(dir, 'batch.yaml');
writeFileSync(batch, 'window: 2m\nworkloads:\n  - workload: builtin.sha256\n    lines: 2\n    lineTime: 2s\n    maxPrice: "0.01 USD"\n    inputText: "line {n}"\n');

describe('a bad option value exits 2 with its own code', SIDE_BY_SIDE, () => {
  const home = join(dir, 'empty-home');
  const cases: Array<[string[], string]> = [
    [['jobs', '--limit', '0'], 'CLI_BAD_LIMIT'],
    [['run', job, '--wait', 'x'], 'CLI_BAD_WAIT'],
    [['run', job, '--policy', 'nope'], 'POLICY_UNKNOWN'],
    [['devnet', '--jobs', '0'], 'DEVNET_BAD_OPTION'],
    [['devnet', '--policy', 'nope'], 'POLICY_UNKNOWN'],
    [['devnet', '--start-timeout', '0'], 'DEVNET_BAD_OPTION'],
    [['batch', 'run', batch, '--concurrency', '0'], 'BATCH_FIELD_INVALID'],
    [['batch', 'run', batch, '--concurrency', '129'], 'BATCH_FIELD_INVALID'], // each line holds an API connection: at most 128
    // a ceiling of 0 places nothing: it was taken, then refused as capacity (QA s49)
    [['batch', 'run', batch, '--ceiling', '0'], 'BATCH_FIELD_INVALID'],
    [['batch', 'plan', batch, '--ceiling', '0'], 'BATCH_FIELD_INVALID'],
    [['ledger', 'fetch', 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', join(dir, 'out.led'), '--max-mib', '1000'], 'LEDGER_FETCH_BAD_LIMIT'],
    [['ledger', 'show', dir, '--from', '-1'], 'LEDGER_BAD_RANGE'],
    // a number written otherwise is refused, not read as another seq (QA ffWitnessDay2 F3: 0x10 listed from #16)
    [['ledger', 'show', dir, '--from', '0x10'], 'LEDGER_BAD_RANGE'],
    [['ledger', 'show', dir, '--from', '1e2'], 'LEDGER_BAD_RANGE'],
    [['ledger', 'show', dir, '--from', ' 3'], 'LEDGER_BAD_RANGE'],
    [['ledger', 'verify', dir, '--steward', 'notadid'], 'LEDGER_BAD_STEWARD'],
    [['train', 'buy', job, '--providers', '0'], 'TRAIN_GANG_SIZE'],
    [['train', 'buy', job, '--providers', '2x'], 'TRAIN_GANG_SIZE'],
    [['train', 'buy', job, '--providers', '65'], 'TRAIN_GANG_SIZE'],
    [['train', 'buy', job, '--providers', '2', '--members', 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'], 'TRAIN_GANG_SIZE'],
    [['train', 'buy', job, '--members', 'did:key:nope'], 'TRAIN_BAD_OPTION'],
    [['train', 'buy', job, '--providers', '2', '--deadline', '90s'], 'TRAIN_BAD_OPTION'],
    [['train', 'buy', job, '--providers', '2', '--deadline', '5000'], 'TRAIN_BAD_OPTION'],
    [['train', 'buy', job, '--providers', '2', '--max-price', '1e-3'], 'TRAIN_BAD_OPTION'],
    [['train', 'buy', job, '--providers', '2', '--energy', '-5'], 'TRAIN_BAD_OPTION'],
    [['train', 'buy', job, '--providers', '2', '--energy-grade', 'Guess'], 'TRAIN_BAD_OPTION'],
    [['train', 'buy', job, '--providers', '2', '--devices-per-member', '0'], 'TRAIN_BAD_OPTION'],
  ];
  for (const [args, code] of cases) {
    it(`${args.filter((a) => !a.startsWith(dir)).join(' ')}: ${code}, exit 2`, async () => {
      const r = await c0(home, ...args);
      assert.match(r.stderr, new RegExp(`^error ${code}: `), r.stderr);
      assert.equal(r.code, EXIT.USAGE, r.stderr);
    });
  }

  it('a bad policy in the job file is a bad file: exit 3', async () => {
    const r = await c0(home, 'run', badPolicyJob);
    assert.match(r.stderr, /^error JOB_FILE_INVALID: .*policy/);
    assert.equal(r.code, EXIT.OPERATOR);
  });

  it('report(): a UsageError or a USAGE_ code is exit 2, another C0Error 3', () => {
    const write = process.stderr.write;
    process.stderr.write = (() => true) as never;
    try {
      assert.equal(report(new UsageError('CLI_BAD_LIMIT', 'x')), EXIT.USAGE);
      assert.equal(report(new C0Error('USAGE_NODE_FLAG_WITH_DAEMON', 'x')), EXIT.USAGE);
      assert.equal(report(new C0Error('CONFIG_INVALID', 'x')), EXIT.OPERATOR);
    } finally {
      process.stderr.write = write;
    }
  });
});

describe('run with a daemon running: the node options are refused, not ignored', SIDE_BY_SIDE, () => {
  // a daemon as the CLI finds one: daemon.json naming a live process (this test's) and the API token; no option
  // case reaches the API
  const home = join(dir, 'daemon-home');
  mkdirSync(home);
  writeFileSync(join(home, 'daemon.json'), JSON.stringify({ pid: process.pid, did: 'did:key:z6Mk', api: '127.0.0.1:9', startedAt: Date.now() }));
  writeFileSync(join(home, 'api.token'), 'x'.repeat(32));

  for (const args of [['--config', '/nonexistent.yaml'], ['--role', 'provider'], ['--listen', 'garbage'], ['--bootstrap', '/ip4/127.0.0.1/tcp/1'], ['--api', '127.0.0.1:1'], ['--log-level', 'debug'], ['--log-format', 'json']]) {
    it(`run job.yaml ${args.join(' ')}: USAGE_NODE_FLAG_WITH_DAEMON, exit 2`, async () => {
      const r = await c0(home, 'run', job, ...args);
      assert.match(r.stderr, new RegExp(`^error USAGE_NODE_FLAG_WITH_DAEMON: ${args[0]} applies only to the node`), r.stderr);
      assert.equal(r.code, EXIT.USAGE);
    });
  }

  it('refuseStartFlags names every node option given, and none when none is', () => {
    assert.doesNotThrow(() => refuseStartFlags({}));
    assert.doesNotThrow(() => refuseStartFlags({ role: [], listen: [] }));
    assert.throws(() => refuseStartFlags({ config: 'c.yaml', role: ['provider'] }), (e: unknown) => e instanceof UsageError && e.code === 'USAGE_NODE_FLAG_WITH_DAEMON' && /--config, --role apply only/.test(e.message));
  });
});

describe('small things', () => {
  it('ledger --help lists fetch in its description', () => {
    const led = buildProgram().commands.find((c) => c.name() === 'ledger')!;
    assert.match(led.description(), /fetch/);
  });

  it('run and start --help list every log level', () => {
    for (const name of ['run', 'start']) {
      const o = buildProgram().commands.find((c) => c.name() === name)!.options.find((x) => x.long === '--log-level')!;
      assert.match(o.description, /trace\|debug\|info\|warn\|error\|fatal\|silent/);
    }
  });

  it('C0MPUTE_HOME with a leading ~ is the home directory, not a directory named ~', () => {
    assert.equal(defaultDataDir({ C0MPUTE_HOME: '~/x' }), join(homedir(), 'x'));
    assert.equal(defaultDataDir({ C0MPUTE_HOME: '~' }), homedir());
    assert.equal(defaultDataDir({ C0MPUTE_HOME: '/srv/c0' }), '/srv/c0');
    assert.equal(defaultDataDir({}), join(homedir(), '.c0mpute'));
    assert.throws(() => defaultDataDir({ C0MPUTE_HOME: '~bob/x' }), { code: 'DATA_DIR_INVALID' });
  });
});
