/**
 * A member whose store fails between a ping and a dispatch (review r4 F2; docs/pools.md "Member choice"): its run
 * answers STORE_WRITE_FAILED, and the coordinator takes that as its ping saying `storeFailing: 'yes'`: the next job whose
 * hash picks it goes to another live member by the same formula, at once and not after the next round of pings; its
 * next ping answer without the field makes it a member that takes writes again. Before, only pings fed it, so every
 * dispatch until the next round went to the member and failed. Three members in one process (member-rig.ts); the
 * failing member's `run` answer is intercepted (its pings answer as a store that takes writes).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { selectMember } from '../../../src/pools/choice.js';
import { Rig, MEMBERS, ctx, job, offer, codeOfAsync } from './member-rig.js';

const rig = new Rig();

describe('a member whose run answers STORE_WRITE_FAILED', () => {
  after(() => rig.close());

  test('is dispatched nothing more until its next ping answer says its store takes writes', async () => {
    const failing = new Set<string>();
    const w = await rig.world('store-failed-dispatch', {
      intercept: async (_from, to, frame) => (failing.has(to) && frame.op === 'run' ? { code: 'STORE_WRITE_FAILED', message: 'No space left on device' } : undefined),
    });
    const A = w.members.get(MEMBERS[0]!)!.elected().coordinator!;
    const a = w.members.get(A)!;
    const X = MEMBERS.find((m) => m !== A)!;
    const pickingX = () => {
      let jj = job();
      while (selectMember(jj.job.address, MEMBERS) !== X) jj = job();
      return jj;
    };
    await a.start();
    a.stop();
    // Its store fails after the coordinator's round of pings: the first dispatch to it still fails.
    failing.add(X);
    const first = pickingX();
    assert.equal(await codeOfAsync(a.run(first.job, offer(first.job, A), ctx(first.input))), 'STORE_WRITE_FAILED');
    const st = (await a.status()) as { members: Array<{ did: string; live: boolean; storeFailing?: boolean }> };
    assert.equal(st.members.find((m) => m.did === X)!.storeFailing, true, 'its status says why it gets no work');
    // The next job whose hash picks it, with no ping in between, goes to another member.
    const next = pickingX();
    assert.equal(await codeOfAsync(a.run(next.job, offer(next.job, A), ctx(next.input))), 'none');
    assert.equal(w.runs.get(X) ?? 0, 0);
    assert.equal(w.runs.get(selectMember(next.job.address, MEMBERS.filter((m) => m !== X))), 1, 'the same formula over the members left');
    // Its next ping answer comes without the field: dispatched to again.
    failing.delete(X);
    await a.start();
    a.stop();
    const back = pickingX();
    assert.equal(await codeOfAsync(a.run(back.job, offer(back.job, A), ctx(back.input))), 'none');
    assert.equal(w.runs.get(X), 1);
  });
});
