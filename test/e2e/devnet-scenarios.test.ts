/**
 * `c0mpute devnet`'s scenario flags: conflicting ones are refused before
 * anything starts, and Ctrl-C during `--training` stops every worker and
 * removes the directory. The scenarios themselves run to the end in
 * test/scenarios/devnet-demos.test.ts (`npm run sim -- --scenarios`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { BIN, track } from './node-helpers.js';

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
