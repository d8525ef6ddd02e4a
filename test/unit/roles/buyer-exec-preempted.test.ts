/**
 * A job the overlay's steward reclaimed before it ran at its provider (docs/overlays.md "Preemption"): the provider
 * refuses its exec with EXEC_PREEMPTED (or EXEC_IDLE_RECLAIMED). On an overlay with a steward that is the provider
 * doing what the steward asked: the buyer signs no non-delivery against it and does not fail over (the claim is
 * over); the job ends `preempted`. Without a steward nobody reclaims anything, so such a refusal is a refusal like
 * any other (a non-delivery, then the next provider).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Job, Opened } from '../../../src/records/index.js';
import { P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(760);
const [A, B] = [P(761), P(762)];

async function run(code: string, stewarded: boolean) {
  const withdrawn: string[] = [];
  const f = buyerOnFakes(ME, {
    providers: [A, B],
    exec: async function* () {
      yield { t: 'refused', code, message: 'reclaimed before it ran here' };
    },
    deps: stewarded
      ? {
          admission: async (job: Opened<Job>) => ({ verdict: 'Admit', claim: job.address }),
          withdraw: async (job: Opened<Job>) => void withdrawn.push(job.address),
        }
      : {},
  });
  const result = await f.buyer.run(fakeSpec(stewarded ? { entitlement: 'lo' } : {}));
  return { result, execs: f.execs, nondeliveries: f.nondeliveries(), withdrawn };
}

test('on an overlay with a steward, an exec refused EXEC_PREEMPTED: no non-delivery, no failover, the job ends preempted', async () => {
  for (const code of ['EXEC_PREEMPTED', 'EXEC_IDLE_RECLAIMED']) {
    const r = await run(code, true);
    assert.equal(r.result.status, 'preempted', code);
    assert.deepEqual(r.execs, [A.did], 'the next provider is not tried');
    assert.deepEqual(r.nondeliveries, []);
    assert.equal(r.result.attempts.length, 1);
    assert.equal(r.result.attempts[0]!.nondelivery, undefined);
    assert.equal(r.result.attempts[0]!.outcome, `refused: ${code}`);
    // the steward released the claim already: nothing to withdraw
    assert.deepEqual(r.withdrawn, []);
  }
});

test('without a steward an EXEC_PREEMPTED refusal is a refusal like any other: a non-delivery, then the next provider', async () => {
  const r = await run('EXEC_PREEMPTED', false);
  assert.equal(r.result.status, 'failed');
  assert.deepEqual(r.execs, [A.did, B.did]);
  assert.equal(r.nondeliveries.length, 2);
});

test('on an overlay with a steward, another refusal still signs a non-delivery and fails over', async () => {
  const r = await run('EXEC_BUSY', true);
  assert.equal(r.result.status, 'failed');
  assert.deepEqual(r.execs, [A.did, B.did]);
  assert.equal(r.nondeliveries.length, 2);
  assert.equal(r.withdrawn.length, 1);
});
