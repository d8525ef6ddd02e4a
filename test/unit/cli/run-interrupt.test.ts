/**
 * Ctrl-C on `c0mpute run` through a daemon (review s43 R6 F2): the line the command ends with says what becomes of the
 * job, from what it heard of the run (docs/node.md "A run whose client went away"); a second Ctrl-C exits at once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { brokenOff, ctrlCAnswer, goesOnHere, watchCtrlC } from '../../../src/cli/run-interrupt.js';
import { EXIT, Interrupted } from '../../../src/cli/context.js';

const JOB = 'sha256:' + 'ab'.repeat(32);

test('ctrlCAnswer: cancelled before a selection was heard, going on (and paid) after', () => {
  const none = ctrlCAnswer({});
  assert.ok(none instanceof Interrupted);
  assert.equal(none.code, 'RUN_CANCELLED');
  assert.match(none.message, /before the job was published/);
  const pub = ctrlCAnswer({ job: JOB });
  assert.equal(pub.code, 'RUN_CANCELLED');
  assert.match(pub.message, new RegExp(`job ${JOB} cancelled: no provider was selected yet`));
  const sel = ctrlCAnswer({ job: JOB, winner: 'did:key:z6Mkwin' });
  assert.equal(sel.code, 'RUN_CONTINUES');
  assert.match(sel.message, new RegExp(`job ${JOB} goes on at did:key:z6Mkwin: .*paid for; its output is not kept`));
});

test('without a daemon: cancelled lines do not speak of a daemon; the run that goes on here says so; a second Ctrl-C breaks it off', () => {
  for (const heard of [{}, { job: JOB }]) {
    const e = ctrlCAnswer(heard, 'here');
    assert.equal(e.code, 'RUN_CANCELLED');
    assert.doesNotMatch(e.message, /daemon/);
  }
  assert.match(ctrlCAnswer({ job: JOB }, 'here').message, new RegExp(`job ${JOB} cancelled: no provider was selected yet, so it was withdrawn`));
  assert.match(goesOnHere({ job: JOB, winner: 'did:key:z6Mkwin' }), new RegExp(`job ${JOB} goes on at did:key:z6Mkwin: .*runs to its end here and is paid for; Ctrl-C again breaks it off now`));
  const broke = brokenOff({ job: JOB, winner: 'did:key:z6Mkwin' });
  assert.ok(broke instanceof Interrupted);
  assert.equal(broke.code, 'RUN_BROKEN_OFF');
});

test('watchCtrlC: the first SIGINT aborts the signal, a second exits 130 at once; dispose stops listening', () => {
  const exits: number[] = [];
  const before = process.listenerCount('SIGINT');
  const w = watchCtrlC((c) => exits.push(c));
  process.emit('SIGINT', 'SIGINT');
  assert.ok(w.signal.aborted);
  assert.deepEqual(exits, []);
  process.emit('SIGINT', 'SIGINT');
  assert.deepEqual(exits, [EXIT.INTERRUPTED]);
  w.dispose();
  assert.equal(process.listenerCount('SIGINT'), before);
});

test('watchCtrlC takes SIGTERM and SIGHUP as Ctrl-C: `by` names the first, a second signal exits 128 + its number; the answers carry that exit', () => {
  for (const [sig, code] of [['SIGTERM', 143], ['SIGHUP', 129]] as const) {
    const exits: number[] = [];
    const before = process.listenerCount(sig);
    const w = watchCtrlC((c) => exits.push(c));
    process.emit(sig, sig);
    assert.ok(w.signal.aborted, sig);
    assert.equal(w.by(), sig);
    assert.equal(w.signal.reason, sig);
    assert.deepEqual(exits, []);
    process.emit(sig, sig);
    assert.deepEqual(exits, [code]);
    w.dispose();
    assert.equal(process.listenerCount(sig), before);
    assert.equal(ctrlCAnswer({ job: JOB }, 'daemon', sig).exit, code);
  }
  assert.equal(ctrlCAnswer({ job: JOB }).exit, EXIT.INTERRUPTED);
});
