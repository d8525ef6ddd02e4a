/**
 * A provider chosen for two of our jobs at once has its slots taken by the first; it refuses the second EXEC_BUSY. That
 * refusal is our own doing: no non-delivery is signed against it. The same refusal with none of our runs there is the
 * provider's (it quoted and then had no slot) and counts as before (review s41 C3: a one-slot provider's score wore down
 * to 0.595 over ~560 jobs of a buyer running two at a time, with no failure of its own).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { P } from '../market/fixtures.js';
import { attemptRig, firstHeld } from './buyer-attempt-rig.js';

const ME = P(751);
const PROV = P(752);

test('EXEC_BUSY while another of our jobs runs at that provider signs no non-delivery; alone it still does', async () => {
  // the first job holds the provider's one slot while it runs
  const { exec, release } = firstHeld(async function* () {
    yield { t: 'refused', code: 'EXEC_BUSY', message: 'all slots are busy' };
  });
  const { mk, attempt } = attemptRig(ME, exec);
  const p1 = attempt(mk(PROV, 1));
  const r2 = await attempt(mk(PROV, 2));
  assert.equal(r2.nondelivery, undefined, 'busy with our own other job: no non-delivery');
  assert.match(r2.outcome, /busy with another of our jobs: refused: EXEC_BUSY/);
  release();
  await p1;
  // nothing of ours there now: the provider quoted and had no slot, a non-delivery as before
  const r3 = await attempt(mk(PROV, 3));
  assert.equal(r3.nondelivery, 'refused');
  assert.equal(r3.outcome, 'refused: EXEC_BUSY');
});

test('a provider’s lapse refusal (EXEC_BUYER_PAUSED, EXEC_JOB_LAPSED) after an attempt of ours there ended without its receipt signs no non-delivery; with no such attempt it counts', async () => {
  const answers: string[] = [];
  const { mk, attempt } = attemptRig(ME, async function* () {
    const a = answers.shift()!;
    if (a === 'fail') throw new C0Error('NET_STREAM_FAILED', 'the link dropped during the upload');
    yield { t: 'refused', code: a, message: 'paused' };
  });
  const other = P(753);
  // no attempt of ours at `other` that could have lapsed (a refusal of its own is none): its word alone
  answers.push('EXEC_BUSY', 'EXEC_BUYER_PAUSED');
  assert.equal((await attempt(mk(other, 109))).nondelivery, 'refused');
  assert.equal((await attempt(mk(other, 100))).nondelivery, 'refused');
  // our upload to PROV dropped: its pause is our doing, for any job; its job refusal, for that job only
  const a = mk(PROV, 101);
  answers.push('fail', 'EXEC_JOB_LAPSED', 'EXEC_BUYER_PAUSED', 'EXEC_JOB_LAPSED');
  assert.equal((await attempt(a)).nondelivery, 'unreachable');
  const again = await attempt(a);
  assert.equal(again.nondelivery, undefined);
  assert.match(again.outcome, /paused us after an attempt of ours there ended without its input: refused: EXEC_JOB_LAPSED/);
  assert.equal((await attempt(mk(PROV, 102))).nondelivery, undefined);
  assert.equal((await attempt(mk(PROV, 103))).nondelivery, 'refused', 'another job: not explained by our attempt');
});
