/**
 * How `c0mpute train buy` ends (src/cli/commands/train-buy.ts gangEnd, gangRefused; docs/training.md "`c0mpute train
 * buy`"): a gang the steward refused is a negative answer, exit 1, as the docs say (QA ffGang F3: it was exit 3); a
 * daemon lost under the member jobs is the daemon's error, exit 3, not "the gang did not finish" (F4); a failed member
 * is named (F7).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gangEnd, gangRefused } from '../../../src/cli/commands/train-buy.js';
import { NegativeAnswer } from '../../../src/cli/context.js';
import { report } from '../../../src/cli/program.js';
import { C0Error } from '../../../src/errors.js';
import type { GangReport } from '../../../src/roles/trainer/gang-buy.js';

const W = 'sha256:' + 'aa'.repeat(32);
const R = 'sha256:' + 'bb'.repeat(32);
const RUN = 'sha256:' + 'cc'.repeat(32);

/** The exit code and stderr the CLI gives for `e`. */
function exitOf(e: unknown): { code: number; err: string } {
  const write = process.stderr.write.bind(process.stderr);
  let err = '';
  process.stderr.write = ((s: string) => ((err += s), true)) as typeof process.stderr.write;
  try {
    return { code: report(e), err };
  } finally {
    process.stderr.write = write;
  }
}

test('a gang the steward refused: `error TRAIN_GANG_REFUSED: …` with the verdict and reason, exit 1', () => {
  const e = gangRefused({ verdict: 'Deny', reason: 'DEVICES_EXCEED_GUARANTEE' } as never, 3);
  assert.ok(e instanceof NegativeAnswer);
  const { code, err } = exitOf(e);
  assert.equal(code, 1);
  assert.equal(err, 'error TRAIN_GANG_REFUSED: the steward did not admit the gang of 3: Deny DEVICES_EXCEED_GUARANTEE\n');
});

test('gangEnd: nothing when ok; the daemon lost is its own code, exit 3; a failed member named, exit 1; disagreement and reference said as such', () => {
  const ok: GangReport = { run: RUN, ok: true, weights: W, members: [{ did: 'did:a', status: 'completed', weights: W }] };
  assert.equal(gangEnd(ok, undefined, undefined), undefined);

  const lostReport: GangReport = { run: RUN, ok: false, members: ['did:a', 'did:b'].map((did) => ({ did, status: 'error', problem: 'DAEMON_STREAM_LOST: the connection broke' })) };
  const lost = gangEnd(lostReport, { code: 'DAEMON_STREAM_LOST', message: 'the connection to the daemon broke' }, '/x/g.json.result.json');
  assert.ok(lost instanceof C0Error);
  assert.equal(lost.code, 'DAEMON_STREAM_LOST');
  const l = exitOf(lost);
  assert.equal(l.code, 3);
  assert.match(l.err, /^error DAEMON_STREAM_LOST: train buy lost its daemon: the connection to the daemon broke\. 0 of 2 member jobs completed; .*Per member: \/x\/g\.json\.result\.json\n$/);

  // the daemon stopping under the member jobs (JOB_INTERRUPTED, review s54): its side too, exit 3, said as stopping
  const stopping = gangEnd(lostReport, { code: 'JOB_INTERRUPTED', message: 'the run was broken off because this node is stopping' }, undefined);
  const st = exitOf(stopping);
  assert.equal(st.code, 3);
  assert.match(st.err, /^error JOB_INTERRUPTED: its daemon is stopping: the run was broken off because this node is stopping\. 0 of 2/);

  const oneFailed: GangReport = {
    run: RUN,
    ok: false,
    members: [
      { did: 'did:a', status: 'completed', weights: W },
      { did: 'did:b', status: 'failed', problem: 'provider unreachable or gone: NET_STREAM_FAILED' },
      { did: 'did:c', status: 'completed', weights: W },
    ],
  };
  const f = exitOf(gangEnd(oneFailed, undefined, undefined));
  assert.equal(f.code, 1);
  assert.equal(f.err, '✘ 1 of 3 members did not complete: did:b failed (provider unreachable or gone: NET_STREAM_FAILED)\n');

  const disagree: GangReport = { run: RUN, ok: false, members: [{ did: 'did:a', status: 'completed', weights: W, problem: 'members disagree on the final weights' }, { did: 'did:b', status: 'completed', weights: R, problem: 'members disagree on the final weights' }] };
  assert.match(exitOf(gangEnd(disagree, undefined, undefined)).err, /members disagree on the final weights/);
  const notRef: GangReport = { run: RUN, ok: false, weights: W, reference: R, members: [{ did: 'did:a', status: 'completed', weights: W }] };
  assert.match(exitOf(gangEnd(notRef, undefined, undefined)).err, new RegExp(`agree on ${W}, but the single-process run reaches ${R}`));
});
