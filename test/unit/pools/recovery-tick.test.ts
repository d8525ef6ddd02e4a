/**
 * One member's slow `status` answers do not hold the elected coordinator's recovery tick (docs/pools.md "Dispatch
 * trail"): a coordinator's entries get a bounded share of each tick, and the next tick goes on after the last one
 * asked, so every entry still has its turn. Three members with their own stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { RECOVERY_PARALLEL } from '../../../src/roles/pool-member/coordinator.js';
import { Rig, MEMBERS, keyOf, clock, job, offer, r, signerFrom } from './member-rig.js';

const rig = new Rig();

describe('a recovery tick is bounded per coordinator', () => {
  after(() => rig.close());

  test('a member that answers every `status` just inside livenessMs is asked about a part of its entries per tick, the rest in the next ticks', async () => {
    const livenessMs = 100;
    const asked: string[] = [];
    let slow = false;
    const w = await rig.world('slow-tick', {
      options: { livenessMs },
      intercept: async (_from, _to, frame) => {
        if (slow && frame.op === 'status') {
          asked.push(frame.job as string);
          await new Promise((res) => setTimeout(res, livenessMs - 20));
        }
        return undefined;
      },
    });
    const A = w.members.get(MEMBERS[0]!)!.elected().coordinator!;
    const H = MEMBERS.find((m) => m !== A)!;
    const a = w.members.get(A)!;
    const total = 5 * RECOVERY_PARALLEL;
    for (let i = 0; i < total; i++) {
      const { job: fj } = job({ by: signerFrom(77), deadline: clock() + 365 * 24 * 3600_000 });
      const fo = offer(fj, H);
      const fd = seal(T.poolDispatch, { pool: a.pool, roster: r.address, job: fj.address, offer: fo.address, member: H, coordinator: H, epoch: 0, issuedAt: clock() }, keyOf(H));
      assert.equal((await a.serve({ op: 'trail', dispatch: fd.bytes, job: fj.bytes, offer: fo.bytes }, H)).ok, 'yes');
    }
    slow = true;
    await a.recover();
    const first = new Set(asked);
    assert.ok(first.size >= RECOVERY_PARALLEL, `at least one round is asked (${first.size})`);
    assert.ok(first.size < total, `not all ${total} of H's entries in one tick (${first.size})`);
    for (let t = 0; t < total && new Set(asked).size < total; t++) await a.recover();
    assert.equal(new Set(asked).size, total, 'the next ticks go on where the last stopped: every entry is asked about');
  });
});
