/**
 * `c0mpute run`'s last lines when the run did not complete (runFailureLines). A steward's Deny, or a claim still queued
 * at its deadline, is the run's whole answer: once the admission event said it, nothing follows it. Before (QA witness
 * pass, finding 4) a Deny already printed fell through to the generic failure, "the job failed: no attempt could be
 * made before the deadline", a false cause.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runFailureLines } from '../../../src/util/run-failure.js';

describe('run: the final lines of a run that did not complete', () => {
  const denied = { status: 'denied', admission: { verdict: 'Deny', reason: 'UNOBSERVED_EXCEEDS_GUARANTEE', reasons: ['UNOBSERVED_EXCEEDS_GUARANTEE'] }, attempts: [] };
  const expired = { status: 'queue-expired', admission: { verdict: 'Queue', reason: 'DEVICES_HELD' }, attempts: [] };

  it('a Deny the admission event said already adds nothing (no deadline line)', () => {
    assert.deepEqual(runFailureLines(denied, { verdictSaid: true }), []);
    assert.deepEqual(runFailureLines(expired, { verdictSaid: true }), []);
  });

  it('a Deny no event said is said once, with its reason', () => {
    assert.deepEqual(runFailureLines(denied, { verdictSaid: false }), ['✘ the steward denied the claim: UNOBSERVED_EXCEEDS_GUARANTEE']);
    assert.deepEqual(runFailureLines(expired, { verdictSaid: false }), ['✘ the claim was still queued at its deadline: DEVICES_HELD']);
  });

  it('a failed job with no attempt still says no attempt could be made', () => {
    assert.deepEqual(runFailureLines({ status: 'failed', attempts: [] }, { verdictSaid: false }), ['✘ the job failed: no attempt could be made before the deadline']);
  });
});
