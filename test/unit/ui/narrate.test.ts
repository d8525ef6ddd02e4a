/**
 * A run's narration on the console (ui/narrate.ts), worded as `c0mpute run` prints it (src/cli/render.ts). QA
 * (session 49): the steward's denial read "steward's admission: Deny", its reason dropped.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { narrate, runningPhrase } from '../../../ui/narrate.js';

describe('narration', () => {
  it("a steward's denial carries its reason, and the others", () => {
    assert.equal(narrate({ e: 'admission', admission: { verdict: 'Deny', reason: 'UNOBSERVED_EXCEEDS_GUARANTEE', reasons: ['UNOBSERVED_EXCEEDS_GUARANTEE'] } }), '✘ the steward denied: UNOBSERVED_EXCEEDS_GUARANTEE');
    assert.equal(narrate({ e: 'admission', admission: { verdict: 'Deny', reason: 'A', reasons: ['A', 'B'] } }), '✘ the steward denied: A (A, B)');
    assert.equal(narrate({ e: 'admission', admission: { verdict: 'Expire', reason: 'DEVICES_HELD' } }), '✘ the steward let the queued claim expire: DEVICES_HELD');
    assert.equal(narrate({ e: 'admission', admission: { verdict: 'Admit', reserved: { uj: 5_000_000, grade: 'Estimator' } } }), 'admitted by the steward: 5.0 J reserved (Estimator)');
  });
  it('a decision over no eligible provider decided nothing (QA qaCon F3)', () => {
    assert.equal(narrate({ e: 'decision', policy: 'balanced', decision: { result: { ok: false, ranked: [], ineligible: [] } } }), 'no provider is eligible: nothing to decide');
    assert.equal(narrate({ e: 'decision', policy: 'balanced', decision: { result: { ok: true, ranked: [], ineligible: [] } } }), 'decided by policy balanced');
  });
  it('a run in progress in words, never an event name nor a verdict word (QA qaCon F5)', () => {
    const P = 'did:key:z6Mkuk62pUeGaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaRJ6t';
    assert.equal(runningPhrase([]), 'starting');
    assert.equal(runningPhrase([{ e: 'job' }, { e: 'offer' }]), 'collecting offers');
    const selected = [{ e: 'selection', winner: { provider: P } }];
    assert.equal(runningPhrase(selected), 'selected uk62pUeG…RJ6t; sending it the job');
    // the provider took the work: not "✓ accepted"
    assert.equal(runningPhrase([...selected, { e: 'accepted', provider: P }]), 'running on uk62pUeG…RJ6t');
    assert.equal(runningPhrase([...selected, { e: 'receipt' }]), 'checking uk62pUeG…RJ6t’s receipt and output');
    assert.equal(runningPhrase([{ e: 'nondelivery', provider: P }]), 'uk62pUeG…RJ6t did not deliver; moving on');
  });
  it('a queued claim carries its reasons', () => {
    assert.equal(narrate({ e: 'queued', reason: 'DEVICES_HELD', reasons: ['DEVICES_HELD', 'OVER_GUARANTEE'] }), 'the steward queued the claim: DEVICES_HELD (also OVER_GUARANTEE); waiting for capacity');
  });
  it('one offer is one offer', () => {
    assert.equal(narrate({ e: 'collected', offers: 1, waitedMs: 1289 }), 'collected 1 offer in 1.3 s');
    assert.equal(narrate({ e: 'collected', offers: 4, waitedMs: 1289, ended: 'enough' }), 'collected 4 offers in 1.3 s: enough offers (buyer.enoughOffers)');
    assert.equal(narrate({ e: 'collected', offers: 2, waitedMs: 331, ended: 'allowlist' }), 'collected 2 offers in 331 ms: every provider on the job’s allowlist has offered');
  });
});
