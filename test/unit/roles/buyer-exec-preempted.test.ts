/**
 * A job the overlay's steward reclaimed before it ran at its provider (docs/overlays.md "Preemption"): the provider
 * refuses its exec with EXEC_PREEMPTED (or EXEC_IDLE_RECLAIMED), or ends the running work with a failed receipt coded
 * so. On an overlay with a steward the buyer asks the steward whether it reclaimed the claim (`/c0mpute/steward/1` op
 * `reclaimed`): confirmed, that is the provider doing what the steward asked, so the buyer signs no non-delivery
 * against it and does not fail over (the claim is over); the job ends `preempted`. Not confirmed, nobody asked the
 * provider to stop: the refusal is a refusal like any other (a non-delivery, then the next provider), the receipt a
 * failure like any other (the next provider). Before, the buyer took the provider's word, so a provider answering
 * every exec with EXEC_PREEMPTED ended buyers' jobs at no cost to its reputation. A steward before the op
 * (STEWARD_BAD_REQUEST) is not asked again: the provider is believed, as before. A steward that cannot be asked (no
 * answer) confirms nothing: the buyer fails over, signing no non-delivery either. Without a steward nobody reclaims
 * anything, so such a refusal is a refusal like any other.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { Job, Opened } from '../../../src/records/index.js';
import { hashHex } from '../../../src/records/address.js';
import { NOW, P, receipt } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(760);
const [A, B] = [P(761), P(762)];
const INPUT = new Uint8Array(4);

/** What the fake steward answers op `reclaimed`: a value, or an error code it refuses with. */
type StewardSays = 'priority' | 'idle' | 'no' | 'closed' | { error: string };

async function run(code: string, stewarded: boolean, says: StewardSays = 'priority', how: 'refused' | 'receipt' = 'refused') {
  const withdrawn: string[] = [];
  const asked: string[] = [];
  const f: ReturnType<typeof buyerOnFakes> = buyerOnFakes(ME, {
    providers: [A, B],
    exec: async function* (did: string) {
      if (how === 'refused') {
        yield { t: 'refused', code, message: 'reclaimed before it ran here' };
        return;
      }
      const p = did === A.did ? A : B;
      yield { t: 'accepted', startedAt: NOW };
      yield { t: 'receipt', receipt: receipt(p, ME, f.candidate(p)!.offer, { status: 'failed', failure: { code, message: 'stopped' }, inputHash: hashHex(INPUT), startedAt: NOW, completedAt: NOW + 1000 }).bytes };
    },
    deps: stewarded
      ? {
          admission: async (job: Opened<Job>) => ({ verdict: 'Admit', claim: job.address }),
          withdraw: async (job: Opened<Job>) => void withdrawn.push(job.address),
          reclaimed: async (job: Opened<Job>) => {
            asked.push(job.address);
            if (typeof says === 'object') throw new C0Error(says.error, 'the steward answered an error');
            return says;
          },
        }
      : {},
  });
  const result = await f.buyer.run(fakeSpec(stewarded ? { entitlement: 'lo', input: INPUT } : { input: INPUT }));
  return { result, execs: f.execs, nondeliveries: f.nondeliveries(), withdrawn, asked };
}

test('on an overlay with a steward that confirms the reclaim, an exec refused EXEC_PREEMPTED: no non-delivery, no failover, the job ends preempted', async () => {
  for (const code of ['EXEC_PREEMPTED', 'EXEC_IDLE_RECLAIMED']) {
    const r = await run(code, true, code === 'EXEC_PREEMPTED' ? 'priority' : 'idle');
    assert.equal(r.result.status, 'preempted', code);
    assert.equal(r.asked.length, 1, 'the buyer asked its steward');
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

test('a provider refusing EXEC_PREEMPTED that the steward did not ask to stop: a non-delivery, then the next provider', async () => {
  for (const code of ['EXEC_PREEMPTED', 'EXEC_IDLE_RECLAIMED']) {
    const r = await run(code, true, 'no');
    assert.equal(r.result.status, 'failed', code);
    assert.deepEqual(r.execs, [A.did, B.did], 'failed over');
    assert.equal(r.nondeliveries.length, 2, 'each refusal earns its provider a non-delivery');
    assert.ok(r.result.attempts[0]!.nondelivery);
    assert.match(r.result.attempts[0]!.outcome, /refused: EXEC_/);
    assert.match(r.result.attempts[0]!.outcome, /not reclaimed/);
    assert.equal(r.withdrawn.length, 1, 'the claim is withdrawn as any failed job’s');
  }
});

test('a failed receipt coded EXEC_PREEMPTED that the steward did not ask for is a failure like any other: the next provider', async () => {
  const r = await run('EXEC_PREEMPTED', true, 'no', 'receipt');
  assert.equal(r.result.status, 'failed');
  assert.deepEqual(r.execs, [A.did, B.did], 'failed over');
  assert.equal(r.nondeliveries.length, 0, 'a receipt is a delivery');
  assert.equal(r.withdrawn.length, 1);
});

test('a failed receipt coded EXEC_PREEMPTED that the steward confirms: the job ends preempted, no failover', async () => {
  const r = await run('EXEC_PREEMPTED', true, 'priority', 'receipt');
  assert.equal(r.result.status, 'preempted');
  assert.deepEqual(r.execs, [A.did]);
  assert.deepEqual(r.withdrawn, []);
});

test('a claim the steward released for another reason (`closed`: say its provider gossiped a receipt of its own, then refused as preempted): a refusal like any other', async () => {
  const r = await run('EXEC_PREEMPTED', true, 'closed');
  assert.notEqual(r.result.status, 'preempted');
  assert.deepEqual(r.execs, [A.did, B.did], 'failed over');
  assert.equal(r.nondeliveries.length, 2, 'each refusal earns its provider a non-delivery');
  assert.match(r.result.attempts[0]!.outcome, /released the claim for another reason/);
});

test('a steward before the `reclaimed` op (STEWARD_BAD_REQUEST): the provider is believed, as before', async () => {
  const r = await run('EXEC_PREEMPTED', true, { error: 'STEWARD_BAD_REQUEST' });
  assert.equal(r.result.status, 'preempted');
  assert.deepEqual(r.execs, [A.did]);
  assert.deepEqual(r.nondeliveries, []);
});

test('a steward that cannot be asked confirms nothing: the buyer fails over, signing no non-delivery', async () => {
  const r = await run('EXEC_PREEMPTED', true, { error: 'NET_DIAL_TIMEOUT' });
  assert.equal(r.result.status, 'failed');
  assert.deepEqual(r.execs, [A.did, B.did]);
  assert.deepEqual(r.nondeliveries, []);
  assert.equal(r.result.attempts[0]!.nondelivery, undefined);
});

test('without a steward a failed receipt coded EXEC_PREEMPTED is a failure like any other: the next provider', async () => {
  const r = await run('EXEC_PREEMPTED', false, 'priority', 'receipt');
  assert.equal(r.result.status, 'failed');
  assert.deepEqual(r.execs, [A.did, B.did]);
});

test('the buyer names the provider whose refusal it checks: a failover that refuses EXEC_PREEMPTED after the steward stopped the first provider is not believed', async () => {
  // The steward asked A to stop the claim (A's attempt had failed already, so it barred the job); the buyer, not
  // knowing, failed over to B, which refuses EXEC_PREEMPTED although nobody asked it to stop. The steward answers for
  // the provider named: A was asked, B was not (a steward that ignored `provider` would say `priority` for both).
  const withdrawn: string[] = [];
  const asked: Array<string | undefined> = [];
  const f = buyerOnFakes(ME, {
    providers: [A, B, P(763)],
    exec: async function* (did: string) {
      yield { t: 'refused', code: did === A.did ? 'EXEC_BUSY' : did === B.did ? 'EXEC_PREEMPTED' : 'EXEC_BUSY', message: 'no' };
    },
    deps: {
      admission: async (job: Opened<Job>) => ({ verdict: 'Admit', claim: job.address }),
      withdraw: async (job: Opened<Job>) => void withdrawn.push(job.address),
      reclaimed: async (_job: Opened<Job>, provider?: string) => {
        asked.push(provider);
        return provider === undefined || provider === A.did ? 'priority' : 'no';
      },
    },
  });
  const result = await f.buyer.run(fakeSpec({ entitlement: 'lo', input: INPUT }));
  assert.deepEqual(asked, [B.did], 'asked once, naming B');
  assert.notEqual(result.status, 'preempted', 'B’s word is not taken');
  assert.deepEqual(f.execs, [A.did, B.did, P(763).did], 'failed over past B');
  const atB = result.attempts.find((a) => a.outcome.includes('EXEC_PREEMPTED'))!;
  assert.ok(atB.nondelivery, 'B earns a non-delivery for its refusal');
  assert.match(atB.outcome, /did not ask this provider/);
  assert.equal(f.nondeliveries().length, 3);
});
