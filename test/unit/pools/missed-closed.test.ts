/**
 * `closed` frames a member misses do not fill pool.maxOpenDispatches for good (docs/pools.md "Dispatch trail"): a
 * member that is not elected asks the coordinator about its open entries past their dispatch's budget and grace, and
 * closes those it answers, so it keeps taking the honest coordinator's `op: trail`. Three members with their own
 * stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { Rig, MEMBERS, clock, ctx, finish, jobChosen, offer } from './member-rig.js';

const rig = new Rig();
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;

describe('missed `closed` frames', () => {
  after(() => rig.close());

  test('an honest coordinator’s entries whose `closed` a member missed are closed by that member’s tick, and its next dispatch is kept there', async () => {
    const max = 4;
    let B = '';
    let drop = true;
    const w = await rig.world('missed-closed', {
      options: { maxOpenDispatches: max },
      intercept: async (_from, to, frame) => {
        if (drop && frame.op === 'closed' && to === B) throw new C0Error('NET_TIMEOUT', 'lost');
        return undefined;
      },
    });
    const A = w.members.get(MEMBERS[0]!)!.elected().coordinator!;
    B = MEMBERS.find((m) => m !== A)!;
    const a = w.members.get(A)!;
    const b = w.members.get(B)!;
    const run = async () => {
      const jj = jobChosen((m) => m !== B);
      const o = offer(jj.job, A);
      await finish(w, a, jj.job, o, A, a.run(jj.job, o, ctx(jj.input)));
      return jj.job.address;
    };
    for (let i = 0; i < max; i++) await run();
    assert.equal((await trailOf(b).pending()).length, max, 'B missed every `closed`');
    drop = false;
    // Past the dispatches' budget (memberTimeoutMs 400) and grace (3 × livenessMs 1000), within the same epoch (10 s).
    clock.advance(4000);
    await b.start(); // pings, then a tick: A is elected, B is not
    b.stop();
    assert.notEqual(b.elected().coordinator, B);
    assert.equal((await trailOf(b).pending()).length, 0, 'B asked A and closed its copies');
    drop = true;
    const next = await run();
    assert.ok(await trailOf(b).get(next), 'A’s next dispatch is kept on B (not refused POOL_TRAIL_FULL)');
  });
});
