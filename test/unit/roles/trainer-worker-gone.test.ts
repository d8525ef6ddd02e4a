/**
 * A training status that still says joining/training, read by `train status` and a restart (worker-gone.ts): its
 * process gone is an interrupted run; a live process under the same pid that started later is gone too (QA s49: a
 * reused pid read as alive, and the run as still training).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { interruptedPid } from '../../../src/roles/trainer/worker-gone.js';
import { processStart } from '../../../src/node/daemon-info.js';

const self = processStart('self');

test('this process, with its own start time or none written: alive, not interrupted', () => {
  assert.equal(interruptedPid({ status: 'training', pid: process.pid }), undefined);
  if (self !== undefined) assert.equal(interruptedPid({ status: 'joining', pid: process.pid, procStart: self }), undefined);
});

test('a live pid whose start time is not the one written: the pid was given to a later process, the run was interrupted', { skip: self === undefined ? 'no /proc here' : false }, () => {
  assert.equal(interruptedPid({ status: 'training', pid: process.pid, procStart: String(Number(self) - 1) }), process.pid);
});

test('a process that has exited: interrupted; a run that ended: never', () => {
  const done = spawnSync(process.execPath, ['-e', '0']);
  assert.equal(done.status, 0);
  const pid = done.pid!;
  assert.equal(interruptedPid({ status: 'training', pid }), pid);
  assert.equal(interruptedPid({ status: 'done', pid }), undefined);
  assert.equal(interruptedPid({ status: 'training' }), undefined);
  assert.equal(interruptedPid({ status: 'training', pid: -1 }), undefined);
});
