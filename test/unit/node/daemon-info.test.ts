/**
 * daemon.json names a daemon by pid and, where the kernel tells it (Linux), by the process's start time: a live
 * process given the same pid later is not that daemon, so `start` is not refused with DAEMON_RUNNING for ever.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAEMON_FILE, processStart, readDaemonInfo } from '../../../src/node/daemon-info.js';

test('a live pid whose process started after the daemon that wrote daemon.json is not that daemon', { skip: processStart('self') === undefined ? 'no /proc here' : false }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-daemon-info-'));
  const other = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    const pid = other.pid!;
    const write = (extra: Record<string, unknown>) => writeFileSync(join(dir, DAEMON_FILE), JSON.stringify({ pid, did: 'did:key:z6Mk', api: '127.0.0.1:1', startedAt: 1, ...extra }));
    write({ procStart: processStart(pid) });
    assert.equal(readDaemonInfo(dir)?.pid, pid, 'the process that wrote it, still running');
    write({ procStart: '1' });
    assert.equal(readDaemonInfo(dir), undefined, 'a later process under the same pid');
    write({});
    assert.equal(readDaemonInfo(dir)?.pid, pid, 'a file from a daemon that did not record its start: as before, the pid alone');
  } finally {
    other.kill();
  }
});
