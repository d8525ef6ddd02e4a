/**
 * One `batch run` writes an output directory at a time (src/cli/batch-resume.ts lockOutputDir; review s57): a second
 * run into a directory a live run holds is BATCH_OUTPUT_IN_USE naming its pid, before anything is posted (before, a
 * second run with --resume set the live run's journal aside, both posted the lines not yet done and paid twice, and
 * the first to end deleted the other's journal). A lock a killed run left is taken over.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { lockHolder, lockOutputDir, RUN_LOCK } from '../../../src/cli/batch-resume.js';
import { processStart } from '../../../src/node/daemon-info.js';

test('a live run holds the directory (BATCH_OUTPUT_IN_USE); a lock its killed run left is taken over; the release removes it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-batch-lock-'));
  // another run: a live process of its own, as a second `batch run` is
  const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' });
  try {
    await new Promise((ok) => other.once('spawn', ok));
    const pid = other.pid!;
    const start = processStart(pid);
    writeFileSync(join(dir, RUN_LOCK), JSON.stringify({ pid, ...(start === undefined ? {} : { procStart: start }) }));
    assert.deepEqual(lockHolder(dir), { pid, elsewhere: false });
    assert.throws(
      () => lockOutputDir(dir),
      (e: unknown) => e instanceof C0Error && e.code === 'BATCH_OUTPUT_IN_USE' && e.message.includes(`pid ${pid}`),
    );
    // the same pid, started at another time (the pid given to a later process): no run holds it (told only where
    // /proc gives start times; without it this check has nothing to compare)
    if (start !== undefined) {
      writeFileSync(join(dir, RUN_LOCK), JSON.stringify({ pid, procStart: `${start}1` }));
      assert.equal(lockHolder(dir), undefined);
    }
    // a lock taken on another machine or in another PID namespace (a container sharing the volume): held, whatever
    // its pid is here, this process's own included
    writeFileSync(join(dir, RUN_LOCK), JSON.stringify({ pid: process.pid, machine: 'another1' }));
    assert.deepEqual(lockHolder(dir), { pid: process.pid, elsewhere: true });
    assert.throws(() => lockOutputDir(dir), (e: unknown) => e instanceof C0Error && e.code === 'BATCH_OUTPUT_IN_USE' && /another machine or container .*remove .*run\.lock/.test(e.message));
    // its run killed: the lock it left is taken over
    writeFileSync(join(dir, RUN_LOCK), JSON.stringify({ pid }));
    other.kill('SIGKILL');
    await new Promise((ok) => other.once('exit', ok));
    assert.equal(lockHolder(dir), undefined);
    const release = lockOutputDir(dir);
    assert.equal((JSON.parse(readFileSync(join(dir, RUN_LOCK), 'utf8')) as { pid: number }).pid, process.pid);
    release();
    assert.equal(existsSync(join(dir, RUN_LOCK)), false);
    // a lock cut short as it was written holds nothing
    writeFileSync(join(dir, RUN_LOCK), '{"pid": 12');
    assert.equal(lockHolder(dir), undefined);
  } finally {
    other.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
