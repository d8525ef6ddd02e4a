/**
 * A bad argument or option value is a wrong command line: exit 2 with its own code (README "Exit codes"), as
 * `jobs --limit 0` and `run --policy nope` already were. Before (review s40 F9): `reputation notadid` was
 * DID_MALFORMED exit 3, `offers notajob` and `market export --job notajob` ADDRESS_MALFORMED exit 3, `market probe
 * --designated notadid` PROBE_SPEC_INVALID exit 3 (from the daemon), `run --designated notadid` JOB_SPEC_INVALID exit 3,
 * and `--role ""` was dropped, starting the node with the config's roles. Runs the real CLI on an empty data
 * directory: each case ends before any node or network starts.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'c0-arg-values-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const dataDir = join(dir, 'data');
mkdirSync(dataDir);
const job = join(dir, 'job.yaml');
writeFileSync(job, 'workload: builtin.sha256\ninput: "hello"\nmaxPrice: "0.01 USD"\ndeadline: 60s\n');

async function c0(...args: string[]): Promise<{ code: number | null; stderr: string }> {
  const r = await runNode([bin, '--data-dir', dataDir, ...args], { env: { ...process.env, C0MPUTE_HOME: join(dir, 'home') }, timeout: 60_000 });
  return { code: r.status, stderr: r.stderr };
}

// each case runs the CLI once and ends before anything opens: a few at a time
describe('a bad argument value exits 2 with its own code', { concurrency: 4 }, () => {
  const cases: Array<[string[], string]> = [
    [['reputation', 'notadid'], 'DID_MALFORMED'],
    [['reputation', 'did:key:zzzz'], 'DID_MALFORMED'],
    [['offers', 'notajob'], 'ADDRESS_MALFORMED'],
    [['offers', 'sha256:00'], 'ADDRESS_MALFORMED'],
    [['market', 'export', '--job', 'notajob', '--out', join(dir, 'exp')], 'ADDRESS_MALFORMED'],
    [['market', 'probe', job, '--designated', 'notadid'], 'PROBE_SPEC_INVALID'],
    [['run', job, '--designated', 'notadid'], 'JOB_SPEC_INVALID'],
    // an order any provider may claim and one only that provider may: --open was dropped without a word (QA s49)
    [['run', job, '--open', '--designated', 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK'], 'JOB_ORDER_CONFLICT'],
    // two options that say different things: one was taken and the other ignored without a word (QA, reputation and audit pass, F12)
    [['reputation', 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', '--limit', '3'], 'CLI_OPTIONS_CONFLICT'],
    [['reputation', 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', '--all'], 'CLI_OPTIONS_CONFLICT'],
    [['reputation', '--limit', '2', '--all'], 'CLI_OPTIONS_CONFLICT'],
    [['jobs', '--limit', '2', '--all'], 'CLI_OPTIONS_CONFLICT'],
    [['market', '--limit', '2', '--all'], 'CLI_OPTIONS_CONFLICT'],
    [['run', job, '--limit', '2', '--all'], 'CLI_OPTIONS_CONFLICT'],
    [['start', '--role', ''], 'USAGE_EMPTY_VALUE'],
    [['start', '--role', ' , '], 'USAGE_EMPTY_VALUE'],
    [['start', '--listen', ''], 'USAGE_EMPTY_VALUE'],
    [['run', job, '--bootstrap', ''], 'USAGE_EMPTY_VALUE'],
  ];
  for (const [args, code] of cases) {
    it(`${args.map((a) => (a === '' ? '""' : a)).join(' ')} → ${code}, exit 2`, async () => {
      const r = await c0(...args);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, new RegExp(`^error ${code}: `, 'm'));
    });
  }
});

it('run --open on a job file that designates a provider: JOB_ORDER_CONFLICT naming order.designated, exit 3 (a file, not the command line)', async () => {
  const designated = join(dir, 'designated.yaml');
  writeFileSync(designated, 'workload: builtin.sha256\ninput: "hello"\nmaxPrice: "0.01 USD"\ndeadline: 60s\norder: { designated: did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK }\n');
  const r = await c0('run', designated, '--open');
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /^error JOB_ORDER_CONFLICT: --open posts an order any provider may claim, and the job file's order\.designated names one/m);
});
