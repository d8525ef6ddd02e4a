// An exec workload whose command is not there is refused at start (CONFIG_INVALID, naming the field and the path),
// as a missing cwd is: accepted, every job it wins would fail EXEC_SPAWN_FAILED and cost the provider reputation.
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { createExecutor, execExecutor, findCommand } from '../../../src/roles/provider/executors.js';

const dir = mkdtempSync(join(tmpdir(), 'c0-exec-cmd-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function refused(cfg: Parameters<typeof execExecutor>[0], path: string): void {
  assert.throws(
    () => execExecutor(cfg),
    (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.field === 'command' && e.message.includes(path),
    `${cfg.command[0]} is refused, naming ${path}`,
  );
}

describe('exec executor: the command is looked for at start', () => {
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  writeFileSync(join(bin, 'tool'), '#!/bin/sh\ncat\n', { mode: 0o755 });
  writeFileSync(join(bin, 'plain'), 'not executable\n', { mode: 0o644 });
  mkdirSync(join(bin, 'adir'));

  test('an absolute path that is not there, not executable, or a directory is CONFIG_INVALID naming field and path', () => {
    refused({ command: ['/usr/local/bin/c0mpute-no-such-job'] }, '/usr/local/bin/c0mpute-no-such-job');
    refused({ command: [join(bin, 'plain')] }, join(bin, 'plain'));
    refused({ command: [join(bin, 'adir')] }, join(bin, 'adir'));
    assert.equal(execExecutor({ command: [join(bin, 'tool')] }).kind, 'exec');
  });

  test('a name without a slash is looked for on PATH (the config’s env PATH when it sets one)', () => {
    refused({ command: ['c0mpute-no-such-job'] }, 'c0mpute-no-such-job');
    refused({ command: ['tool'] }, 'tool'); // not on the node's PATH
    assert.equal(execExecutor({ command: ['tool'], env: { PATH: bin } }).kind, 'exec');
    assert.equal(execExecutor({ command: ['sh', '-c', 'true'] }).kind, 'exec');
    refused({ command: ['plain'], env: { PATH: bin } }, 'plain');
  });

  test('a relative path with a slash is taken relative to cwd', () => {
    assert.equal(execExecutor({ command: ['./tool'], cwd: bin }).kind, 'exec');
    assert.equal(execExecutor({ command: ['bin/tool'], cwd: dir }).kind, 'exec');
    refused({ command: ['./tool'], cwd: dir }, './tool');
  });

  test('findCommand resolves as spawn does', () => {
    assert.equal(findCommand('tool', `/nonexistent:${bin}`, dir), join(bin, 'tool'));
    assert.equal(findCommand('tool', '', bin), join(bin, 'tool'), 'an empty PATH entry is the working directory');
    assert.equal(findCommand('', bin, dir), undefined);
  });

  test('through createExecutor (what the provider builds at start) too', () => {
    assert.throws(
      () => createExecutor({ type: 'exec', command: ['/usr/local/bin/my-job'] }),
      (e: unknown) => e instanceof C0Error && e.code === 'CONFIG_INVALID' && e.message.includes('/usr/local/bin/my-job'),
    );
  });
});
