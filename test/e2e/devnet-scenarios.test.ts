/**
 * `c0mpute devnet --pool` and `--training` (`npm start -- --pool`, docs/pools.md;
 * `npm start -- --training`, docs/training.md) as smoke tests: each starts its
 * own processes, runs its scenario to the end, prints what a newcomer reads, and
 * stops every process (exit 0, its temp dir gone). Conflicting scenario flags
 * are refused before anything starts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { Decimal } from 'decimal.js';
import { BIN, runDevnet, track } from './node-helpers.js';

test('devnet --pool: member choice, a failed member output failed over, the coordinator killed mid-job, settlements that sum', async () => {
  const out = await runDevnet(['--pool']);
  assert.equal((out.match(/^ {2}completed: keccak256\(/gm) ?? []).length, 3, out);
  assert.match(out, /^ {2}completed; attempts: m\d: failed: POOL_OUTPUT_EMPTY; solo\d: completed$/m);
  assert.match(out, /^ {2}buyer: completed$/m);
  assert.match(out, /closed the dispatch from its trail with a failed receipt \(POOL_COORDINATOR_LOST\)$/m);
  const sum = /^ {2}settlements sum to ([0-9.]+) USD = (\d+) completed jobs × ([0-9.]+) USD$/m.exec(out);
  assert.ok(sum, out);
  assert.ok(new Decimal(sum[1]!).equals(new Decimal(sum[3]!).times(sum[2]!)), sum[0]);
  // and the members' earnings, as the status lists them, add up to it
  const earned = [...out.matchAll(/^ {2}m\d +weight \d .* earned ([0-9.]+) USD$/gm)].map((m) => m[1]!);
  assert.equal(earned.length, 3, out);
  assert.ok(earned.reduce((a, x) => a.plus(x), new Decimal(0)).equals(sum[1]!), `${earned.join(' + ')} = ${sum[1]}`);
  assert.match(out, /^=== outcomes: completed, completed, completed, completed, completed ===$/m);
});

test('devnet --training: bit-identical weights on every worker, the flooding peer refused, a two-stage pipeline', async () => {
  const out = await runDevnet(['--training']);
  assert.match(out, /→ bit-identical on every worker$/m);
  assert.match(out, /worker 1 refused them before reading them: 5 × TRAIN_NOT_MEMBER$/m);
  assert.match(out, /: refused as not a member; worker 1 ignored 0 step commitments;/);
  assert.equal((out.match(/^ {2}epoch \d root sha256:[0-9a-f]{64} signed by the elected coordinator/gm) ?? []).length, 3, out);
  assert.match(out, /output bit-identical to the single-process forward/);
});

test('devnet: two scenarios at once, or --keep with --training, are refused before anything starts', () => {
  for (const args of [['--pool', '--training'], ['--overlay', '--orders'], ['--training', '--keep']]) {
    const r = spawnSync(process.execPath, [BIN, 'devnet', ...args], { encoding: 'utf8', timeout: 30_000 });
    assert.notEqual(r.status, 0, args.join(' '));
    assert.match(r.stderr, /DEVNET_BAD_OPTION/, `${args.join(' ')}: ${r.stderr}`);
    assert.doesNotMatch(r.stdout, /c0mpute devnet/, 'nothing started');
  }
});

test('devnet --training: Ctrl-C while the workers train stops every worker and removes the directory (exit 130)', async () => {
  const child = spawn(process.execPath, [BIN, 'devnet', '--training'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, C0MPUTE_LOG_LEVEL: 'warn' } });
  track(child);
  let out = '';
  let sent = false;
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (!sent && /^ {2}step {2}2 /m.test(out)) sent = child.kill('SIGINT'); // once: a second Ctrl-C is Node's default, an immediate exit
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  assert.equal(code, 130, out);
  assert.match(out, /^▸ interrupted: every worker stopped$/m);
  const dir = /in (\/\S+c0mpute-devnet-training-\S+?)\s/.exec(out)?.[1];
  assert.ok(dir && !existsSync(dir), `the directory is gone (${dir})`);
  // its workers were started with the run file in that directory; none is left
  const left = spawnSync('pgrep', ['-f', dir], { encoding: 'utf8' }).stdout.trim();
  assert.equal(left, '', `workers left: ${left}`);
});
