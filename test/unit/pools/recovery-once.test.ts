/**
 * One job's settlement counts once, however many coordinators dispatched it (docs/pools.md "Settlement"): two
 * coordinators dispatch the same job, the second dies, the first runs and settles it, and recovery fails the dead
 * coordinator's dispatch of its own offer as lost (never with the other coordinator's completion, which any member
 * could forge): the job still counts once, completed (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { selectMember } from '../../../src/pools/choice.js';
import { Rig, MEMBERS, clock, ctx, finish, job, offer, tallyOf } from './member-rig.js';

const rig = new Rig();

describe('recovery is idempotent per job', () => {
  after(() => rig.close());

  test('a second coordinator’s dispatch failed as lost for its own offer: earnings and completed jobs count the job once', async () => {
    const [A, B, C] = MEMBERS as [string, string, string];
    const w = await rig.world('double', {
      intercept: async (from, _to, frame) => {
        if (from === B && frame.op === 'run') throw new C0Error('TEST_CRASH', 'B dies after its dispatch is durable and sent');
        return undefined;
      },
    });
    let jj = job();
    while (selectMember(jj.job.address, MEMBERS) === B) jj = job();
    const { job: j, input } = jj;
    const [oa, ob] = [offer(j, A), offer(j, B)];
    await w.members.get(B)!.run(j, ob, ctx(input)).catch(() => undefined);
    const rec = await finish(w, w.members.get(A)!, j, oa, A, w.members.get(A)!.run(j, oa, ctx(input)));
    assert.equal(rec.record.status, 'completed');
    w.down.add(B);
    clock.advance(10_000);
    for (const m of [A, C]) await w.members.get(m)!.recover();
    for (const m of [A, C]) {
      const t = await tallyOf(w.members.get(m)!);
      assert.ok(Math.abs(t.sum - 0.009) < 1e-12, `${m.slice(-6)}: ${t.sum}`);
      assert.deepEqual([t.completed, t.failed, t.dispatched], [1, 0, 1]);
      assert.deepEqual(((await w.members.get(m)!.status()) as { failures: unknown }).failures, {});
    }
    // The dead coordinator's offer was not delivered: its dispatch is failed for that offer, not closed with A's receipt.
    assert.deepEqual(
      w.published.map((p) => [p.rec.record.offer, p.rec.record.failure?.code]),
      [[ob.address, 'POOL_COORDINATOR_LOST']],
    );
  });
});
