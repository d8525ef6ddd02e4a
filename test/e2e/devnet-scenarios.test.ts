/**
 * `c0mpute devnet`'s scenario flags: conflicting ones are refused before
 * anything starts, Ctrl-C during `--training` stops every worker and
 * removes the directory, and a `--training` run that fails (a worker killed)
 * keeps its directory with every worker's output and names the dead worker
 * and its signal. The scenarios themselves run to the end in
 * test/scenarios/devnet-demos.test.ts (`npm run sim -- --scenarios`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { BIN, track } from './node-helpers.js';

test('devnet: two scenarios at once, --keep with --training, or a walk option with a scenario are refused before anything starts (exit 2)', () => {
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  for (const [args, code] of [
    [['--pool', '--training'], 'DEVNET_BAD_OPTION'],
    [['--overlay', '--orders'], 'DEVNET_BAD_OPTION'],
    [['--training', '--keep'], 'DEVNET_BAD_OPTION'],
    [['--orders', '--providers', '9'], 'DEVNET_BAD_OPTION: --providers does not apply to --orders'],
    [['--orders', '--jobs', '0'], 'DEVNET_BAD_OPTION: --jobs must be'],
    [['--orders', '--policy', 'nope'], 'POLICY_UNKNOWN'],
  ] as const) {
    const r = spawnSync(process.execPath, [BIN, 'devnet', ...args], { encoding: 'utf8', timeout: 30_000, env });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.ok(r.stderr.includes(`error ${code}`), `${args.join(' ')}: ${r.stderr}`);
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

test('devnet --training: a worker killed by a signal fails the run, is named with its signal, and the directory is kept with the workers\' output', async () => {
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const child = spawn(process.execPath, [BIN, 'devnet', '--training'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, C0MPUTE_LOG_LEVEL: 'warn' } });
  track(child);
  let out = '';
  let err = '';
  let killed = false;
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    const dir = /in (\/\S+c0mpute-devnet-training-\S+?)\s/.exec(out)?.[1];
    if (!killed && dir && /^ {2}step {2}2 /m.test(out)) {
      const pid = spawnSync('pgrep', ['-f', `${dir}/worker3 train join`], { encoding: 'utf8' }).stdout.trim().split('\n')[0];
      if (pid) killed = process.kill(Number(pid), 'SIGKILL');
    }
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  const dir = /in (\/\S+c0mpute-devnet-training-\S+?)\s/.exec(out)?.[1];
  try {
    assert.ok(killed, out);
    assert.equal(code, 3, `${out}\n${err}`);
    assert.match(err, /DEVNET_TRAINING_FAILED/);
    assert.match(out, /^a worker failed: worker 1 exited 0, worker 2 exited 0, worker 3 killed by SIGKILL$/m);
    assert.ok(dir && out.includes(`▸ kept ${dir} for its nodes' logs (worker<N>/worker.log); remove it when done`), out);
    for (const w of ['worker1', 'worker2', 'worker3']) assert.ok(existsSync(`${dir}/${w}/worker.log`), `${w}/worker.log kept`);
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
});
