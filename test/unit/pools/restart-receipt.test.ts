/**
 * A coordinator killed after its provider role stored the job's receipt (and sent it to the buyer) but before it
 * closed its dispatch: on restart, recovery finds the stored receipt and closes with it, settling a completed job,
 * and never signs a contradicting POOL_COORDINATOR_LOST receipt (docs/pools.md "A coordinator that crashes"). The
 * restart is a fresh PoolMember over the same store (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { PoolMemberDeps } from '../../../src/roles/pool-member/member.js';
import { splitPrice } from '../../../src/pools/settlement.js';
import { Rig, MEMBERS, clock, ctx, job, offer, pooledReceipt, tallyOf, r, type World } from './member-rig.js';

const rig = new Rig();
const withStore = (did: string, w: World) => ({ ownReceipt: async (j: string) => w.kept.get(did)!.get(j) }) as Partial<PoolMemberDeps>;

describe('a restarted coordinator closes with the receipt it stored', () => {
  after(() => rig.close());

  test('killed between storing the completed receipt and `closed`: the restart closes and settles with it, on every member, and publishes no failed receipt', async () => {
    const w = await rig.world('kill-before-closed', { extra: withStore });
    const A = MEMBERS[0]!;
    const a = w.members.get(A)!;
    const { job: j, input } = job();
    const o = offer(j, A);
    const out = await a.run(j, o, ctx(input));
    // the provider role signs and stores the receipt (then sends it to the buyer and gossips it) … and is killed
    const delivered = pooledReceipt(a, j, o, A, { output: out });
    w.kept.get(A)!.set(j.address, delivered);
    a.stop();
    clock.advance(1000);
    const a2 = await rig.addMember(w, 'kill-before-closed', A, { extra: withStore });
    await a2.start();
    a2.stop();
    await a2.recover();
    assert.deepEqual(w.published.map((p) => [p.by, p.rec.record.status, p.rec.record.failure?.code]), [], 'no contradicting receipt');
    for (const m of MEMBERS) {
      const t = await tallyOf(w.members.get(m)!);
      assert.deepEqual(t.earned, Object.fromEntries(splitPrice(delivered.record.price, r.record.members).map((p) => [p.member, p.amount])), `${m.slice(-6)} counts the settlement`);
      assert.deepEqual([t.completed, t.failed], [1, 0]);
    }
    assert.equal(await a2.recover(), 0, 'nothing pending');
  });
});
