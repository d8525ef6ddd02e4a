/**
 * The grace a process group left by a crashed run gets between SIGTERM and SIGKILL (src/roles/provider/orphans.ts
 * ProcessRegistry.reap; docs/node.md "Orphaned work after a crash") is measured on the monotonic clock. Before, it read
 * the wall clock: stepped back 10 min while it waited, the provider's start waited 10 min on a group that ignores
 * SIGTERM; stepped forward, the group was killed at once, without the grace to end its work. Real process groups
 * (Linux /proc), the wall clock stepped by replacing Date.now.
 */
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { groupMembers, procStartTime, ProcessRegistry } from '../../../src/roles/provider/orphans.js';

/** A detached process group running `script` (sh), recorded in a fresh registry as a crashed run's. */
async function orphan(script: string) {
  const dir = mkdtempSync(join(tmpdir(), 'c0-reap-'));
  const child = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore' });
  child.unref();
  const pid = child.pid!;
  // the shell has set its trap once it started its sleep (a second member of the group)
  for (let i = 0; i < 200 && groupMembers(pid).length < 2; i++) await new Promise((r) => setTimeout(r, 10));
  const reg = new ProcessRegistry(join(dir, 'groups'));
  reg.add({ pid, pgid: pid, job: 'sha256:' + '00'.repeat(32), startedAt: Date.now(), procStart: procStartTime(pid)! });
  const cleanup = () => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    rmSync(dir, { recursive: true, force: true });
  };
  return { pid, reg, dir, cleanup };
}

/** Date.now as a wall clock stepped by `stepMs` once it has been read once. */
function stepWallClock(stepMs: number) {
  const real = Date.now.bind(Date);
  let reads = 0;
  return mock.method(Date, 'now', () => real() + (reads++ === 0 ? 0 : stepMs));
}

test('a wall clock stepped back 10 min does not hold the reap of a group that ignores SIGTERM past its grace', async () => {
  const o = await orphan("trap '' TERM; exec sleep 30");
  const now = stepWallClock(-10 * 60_000);
  try {
    const started = performance.now();
    const reaped = o.reg.reap(300);
    let timer: NodeJS.Timeout | undefined;
    const out = await Promise.race([reaped, new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), 5_000)))]);
    clearTimeout(timer);
    now.mock.restore();
    await reaped;
    assert.notEqual(out, 'late', 'the reap ended within its grace (not 10 min later)');
    assert.deepEqual(
      (out as Awaited<typeof reaped>).map((x) => x.outcome),
      ['killed'],
    );
    assert.ok(performance.now() - started >= 300, 'the grace was given');
    for (let i = 0; i < 100 && groupMembers(o.pid).length; i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(groupMembers(o.pid).length, 0, 'SIGKILL ended the group');
  } finally {
    now.mock.restore();
    o.cleanup();
  }
});

test('a wall clock stepped forward 10 min still gives a group its grace to end after SIGTERM', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-reap-flag-'));
  const flag = join(dir, 'ended');
  // on SIGTERM it takes 300 ms to end its work, then leaves a flag and exits: SIGKILL before that leaves none
  const o = await orphan(`trap 'sleep 0.3; touch ${flag}; exit 0' TERM; sleep 30 & wait`);
  const now = stepWallClock(10 * 60_000);
  try {
    const out = await o.reg.reap(5_000);
    now.mock.restore();
    assert.deepEqual(
      out.map((x) => x.outcome),
      ['killed'],
    );
    assert.ok(existsSync(flag), 'the group ended its work in its grace, not SIGKILLed at once');
  } finally {
    now.mock.restore();
    o.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});
