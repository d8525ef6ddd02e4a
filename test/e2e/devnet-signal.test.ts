/**
 * A stop signal sent to the devnet process alone (kill, systemd, a CI runner), not to its whole process group as a
 * terminal's Ctrl-C is: the signal's stop and the scenario's own end (its run broken off as the nodes stop) raced, one
 * printing "kept DIR … remove it when done" while the other had already removed DIR (QA qaDev F4). Now one routine
 * ends the devnet: it says what it did, and the directory is what it says. A kept network (`--keep`) says what
 * Ctrl-C does, and Ctrl-C on it says it stopped every node and that the directory stays (QA qaDev F12).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { BIN, track } from './node-helpers.js';

test('devnet: SIGTERM to the devnet process mid-job stops every node, removes its temporary directory and says so (exit 143)', async () => {
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const child = spawn(process.execPath, [BIN, 'devnet', '--providers', '3', '--jobs', '20'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, C0MPUTE_LOG_LEVEL: 'warn' } });
  track(child);
  let out = '';
  let err = '';
  let sent = false;
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (!sent && /accepted the work/.test(out)) sent = child.kill('SIGTERM');
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  const text = `${out}\n${err}`;
  assert.ok(sent, text);
  assert.equal(code, 143, text);
  const dir = /in (\/\S+c0mpute-devnet-\S+?)\s/.exec(out)?.[1];
  assert.ok(dir, text);
  assert.match(out, /^▸ interrupted \(SIGTERM\): stopping every node…$/m);
  assert.ok(out.includes(`\n▸ every node stopped; removed ${dir}\n`), text);
  assert.doesNotMatch(out, /kept \//, 'no line says the directory is kept');
  assert.equal((out.match(/stopping every node/g) ?? []).length, 1, 'one ending');
  assert.equal(existsSync(dir), false, `${dir} is gone`);
  assert.equal(spawnSync('pgrep', ['-f', dir], { encoding: 'utf8' }).stdout.trim(), '', 'no node left');
});

test('devnet --keep: the network runs on; Ctrl-C stops every node, says so, and the directory stays (exit 130)', async () => {
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const child = spawn(process.execPath, [BIN, 'devnet', '--providers', '3', '--jobs', '1', '--keep'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...env, C0MPUTE_LOG_LEVEL: 'warn' } });
  track(child);
  let out = '';
  let sent = false;
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    if (!sent && /^Ctrl-C stops every node; .* stays until you remove it\.$/m.test(out)) sent = child.kill('SIGINT');
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  const dir = /in (\/\S+c0mpute-devnet-\S+?)\s/.exec(out)?.[1];
  try {
    assert.ok(sent, out);
    assert.equal(code, 130, out);
    assert.ok(dir, out);
    assert.match(out, /^the network keeps running in \S+\.$/m);
    assert.match(out, /^ {2}node bin\/c0mpute\.js --data-dir \S+\/buyer market$/m);
    assert.match(out, /^▸ interrupted \(SIGINT\): stopping every node…$/m);
    assert.ok(out.includes(`\n▸ every node stopped; ${dir} stays (--keep); remove it when done\n`), out);
    assert.ok(existsSync(dir), 'the directory stays');
    assert.equal(spawnSync('pgrep', ['-f', dir], { encoding: 'utf8' }).stdout.trim(), '', 'no node left');
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true });
  }
});
