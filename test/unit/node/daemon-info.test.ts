/**
 * daemon.json names a daemon by pid and, where the kernel tells it (Linux), by the process's start time: a live
 * process given the same pid later is not that daemon, so `start` is not refused with DAEMON_RUNNING for ever. A
 * daemon that was killed but not yet reaped (a zombie: `process.kill(pid, 0)` still succeeds) is gone too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAEMON_FILE, processEnded, processStart, readDaemonInfo, statFields, type DaemonInfo } from '../../../src/node/daemon-info.js';

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
    rmSync(dir, { recursive: true, force: true });
  }
});

test('/proc/<pid>/stat fields are counted from the last `)`: a command name may hold spaces and parentheses', () => {
  const tail = 'Z 1 7 7 0 -1 4228108 90 0 0 0 0 0 0 0 20 0 1 0 123456 0 0';
  for (const comm of ['sleep', 'a b', 'x) R (y', ') Z ))']) {
    const f = statFields(`4242 (${comm}) ${tail}\n`);
    assert.equal(f[0], 'Z', comm);
    assert.equal(f[1], '1', comm);
    assert.equal(f[19], '123456', comm);
  }
});

/** The children of `pid` in state Z, from /proc. */
function zombieChildren(pid: number): number[] {
  const out: number[] = [];
  for (const n of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(n)) continue;
    try {
      const f = statFields(readFileSync(`/proc/${n}/stat`, 'utf8'));
      if (f[1] === String(pid) && f[0] === 'Z') out.push(Number(n));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

test('a daemon killed but not reaped (a zombie under a parent that never waits) is not running', { skip: processStart('self') === undefined ? 'no /proc here' : false }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-daemon-info-'));
  // bash starts `sleep 1` and then becomes `sleep 30`, which never waits for it: once it exits, it stays a zombie
  const parent = spawn('bash', ['-c', 'sleep 1 & exec sleep 30'], { stdio: 'ignore' });
  try {
    let zombie: number | undefined;
    for (let i = 0; i < 200 && zombie === undefined; i++) {
      zombie = zombieChildren(parent.pid!)[0];
      if (zombie === undefined) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(zombie !== undefined, 'a zombie child appeared');
    assert.doesNotThrow(() => process.kill(zombie, 0), 'kill(pid, 0) succeeds on a zombie');
    assert.equal(processEnded(zombie), true);
    assert.equal(processEnded(parent.pid!), false, 'a live process has not ended');
    writeFileSync(join(dir, DAEMON_FILE), JSON.stringify({ pid: zombie, did: 'did:key:z6Mk', api: '127.0.0.1:1', startedAt: 1, procStart: processStart(zombie) }));
    assert.equal(readDaemonInfo(dir), undefined, 'a zombie is no running daemon');
  } finally {
    parent.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no daemon.json, or a half-written one, is no daemon; one that is there but cannot be read is DAEMON_INFO_UNREADABLE, not "none runs"', () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-daemon-info-'));
  try {
    assert.equal(readDaemonInfo(dir), undefined);
    writeFileSync(join(dir, DAEMON_FILE), '{"pid": 12');
    assert.equal(readDaemonInfo(dir), undefined);
    rmSync(join(dir, DAEMON_FILE));
    // a read that fails (EISDIR here; EIO from a failing disk, EACCES alike)
    mkdirSync(join(dir, DAEMON_FILE));
    assert.throws(() => readDaemonInfo(dir), (e: unknown) => (e as { code?: string }).code === 'DAEMON_INFO_UNREADABLE' && /EISDIR/.test((e as Error).message));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a daemon.json another directory's daemon wrote (a copy of a running node's directory) is no daemon here, and onForeign hears it (QA qaOps F7)", () => {
  const root = mkdtempSync(join(tmpdir(), 'c0-daemon-info-'));
  try {
    const orig = join(root, 'orig');
    const copy = join(root, 'copy');
    mkdirSync(orig);
    mkdirSync(copy);
    symlinkSync(orig, join(root, 'link'));
    // a live process that is not this one: the test runner's parent
    const info = { pid: process.ppid, did: 'did:key:z6Mk', api: '127.0.0.1:1', startedAt: 1, dataDir: realpathSync(orig) };
    for (const d of [orig, copy]) writeFileSync(join(d, DAEMON_FILE), JSON.stringify(info));
    let heard: DaemonInfo | undefined;
    assert.equal(readDaemonInfo(copy, (i) => (heard = i)), undefined, 'the copy has no daemon');
    assert.equal(heard?.dataDir, realpathSync(orig));
    heard = undefined;
    assert.equal(readDaemonInfo(orig, (i) => (heard = i))?.pid, process.ppid, 'the directory itself');
    assert.equal(readDaemonInfo(join(root, 'link'))?.pid, process.ppid, 'the directory through a link to it');
    assert.equal(heard, undefined);
    // the same directory by another real path (a bind mount, a container's view of a volume): its inode says it is
    // itself; a copy's inode is another
    const elsewhere = { ...info, dataDir: '/somewhere/else', dataDirIno: statSync(orig, { bigint: true }).ino.toString() };
    for (const d of [orig, copy]) writeFileSync(join(d, DAEMON_FILE), JSON.stringify(elsewhere));
    assert.equal(readDaemonInfo(orig)?.pid, process.ppid, 'the directory under another path, same inode');
    assert.equal(readDaemonInfo(copy), undefined, 'a copy: another path and another inode');
    const { dataDir: _, ...old } = info;
    writeFileSync(join(copy, DAEMON_FILE), JSON.stringify(old));
    assert.equal(readDaemonInfo(copy)?.pid, process.ppid, 'a file from before dataDir was recorded: as before');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
