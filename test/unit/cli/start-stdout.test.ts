/**
 * A daemon whose standard output cannot be written goes on (src/cli/pipe.ts divertErrors; review s42 R3 F3): stdout
 * on a full disk (`start >node.log` with the disk full: /dev/full here) or a closed pipe drops the start banner with
 * one STDOUT_UNWRITABLE warning on the log (stderr), and the node stops in order on SIGINT with exit 0. Before, the
 * banner's ENOSPC was a bug exit (70) and a closed pipe ended the daemon with 0 at once, with no orderly stop. The
 * real CLI, started on loopback.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync } from 'node:fs';
import { once } from 'node:events';
import { startRig } from './start-rig.js';

const rig = startRig('c0-start-stdout-');

/** `start` with `stdout` as given until its log says STDOUT_UNWRITABLE (then SIGINT) or it exits on its own. */
async function startWith(d: string, stdout: number | 'pipe', closePipe: boolean): Promise<{ code: number | null; warned: boolean; err: string }> {
  const p = spawn(process.execPath, [rig.bin, '--data-dir', d, 'start', ...rig.LOOPBACK], { stdio: ['ignore', stdout, 'pipe'], env: rig.env });
  if (closePipe) p.stdout!.destroy();
  const exit = once(p, 'exit');
  let err = '';
  let warned = false;
  const giveUp = setTimeout(() => p.kill('SIGKILL'), 60_000);
  p.stderr!.on('data', (b: Buffer) => {
    err += b.toString();
    if (!warned && err.includes('STDOUT_UNWRITABLE')) {
      warned = true;
      p.kill('SIGINT');
    }
  });
  const [code] = (await exit) as [number | null];
  clearTimeout(giveUp);
  return { code, warned, err };
}

test('stdout on a full disk: the banner is dropped with a warning and the node goes on until it is stopped', { timeout: 90_000, skip: existsSync('/dev/full') ? false : 'no /dev/full here' }, async () => {
  const d = await rig.keysInit('full');
  const full = openSync('/dev/full', 'w');
  try {
    const r = await startWith(d, full, false);
    assert.equal(r.warned, true, r.err.slice(-2000));
    assert.equal(r.code, 0, r.err.slice(-2000));
    assert.match(r.err, /"msg":"stopping"/, 'an orderly stop');
    assert.equal((r.err.match(/STDOUT_UNWRITABLE/g) ?? []).length, 1, 'warned once');
  } finally {
    closeSync(full);
  }
});

test('stdout a closed pipe: the same', { timeout: 90_000 }, async () => {
  const d = await rig.keysInit('pipe');
  const r = await startWith(d, 'pipe', true);
  assert.equal(r.warned, true, r.err.slice(-2000));
  assert.equal(r.code, 0, r.err.slice(-2000));
  assert.match(r.err, /"msg":"stopping"/, 'an orderly stop');
});
