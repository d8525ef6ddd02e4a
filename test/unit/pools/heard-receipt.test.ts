/**
 * A coordinator that signed its job's receipt (stored, delivered to the buyer, gossiped on the job's market) and then
 * went down before its `closed`, for longer than its dispatch's budget and the grace after it: the member whose
 * recovery finds its dispatch open must not fail the job POOL_COORDINATOR_LOST when it heard that receipt (its
 * node's evidence store, `heardReceipts`): the pool would have signed two receipts for one job, completed and
 * failed. It closes the dispatch with the coordinator's own receipt instead (docs/pools.md "A coordinator that
 * crashes"). Three members over their own stores (member-rig.ts); "gossip" is one evidence map every node reads.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Opened } from '../../../src/records/envelope.js';
import type { Receipt } from '../../../src/records/kinds.js';
import type { PoolMemberDeps } from '../../../src/roles/pool-member/member.js';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { splitPrice } from '../../../src/pools/settlement.js';
import { coordinatorRanking } from '../../../src/pools/choice.js';
import { Rig, MEMBERS, clock, ctx, jobChosen, offer, pooledReceipt, tallyOf, r, type World } from './member-rig.js';

const rig = new Rig();
const [A, B, C] = MEMBERS as [string, string, string];
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;

/** Every node's evidence store, as gossip fills it: by job. */
function gossip() {
  const heard = new Map<string, Array<Opened<Receipt>>>();
  const extra = (did: string, w: World): Partial<PoolMemberDeps> => ({
    heardReceipts: (job: string) => heard.get(job) ?? [],
    ownReceipt: async (job: string) => w.kept.get(did)!.get(job),
  });
  const publish = (rec: Opened<Receipt>) => heard.set(rec.record.job, [...(heard.get(rec.record.job) ?? []), rec]);
  return { heard, extra, publish };
}

/** A runs a job B is chosen for, signs `outcome`'s receipt, stores and gossips it, and goes down before `closed`; the clock passes its budget and grace. */
async function downAfterReceipt(name: string, outcome: 'completed' | 'failed', g: ReturnType<typeof gossip>) {
  const w = await rig.world(name, { extra: g.extra });
  const a = w.members.get(A)!;
  const { job: j, input } = jobChosen((m) => m === B);
  const o = offer(j, A);
  const out = await a.run(j, o, ctx(input));
  const rec = pooledReceipt(a, j, o, A, outcome === 'completed' ? { output: out } : { failure: { code: 'EXEC_FAILED', message: 'the work failed' } });
  w.kept.get(A)!.set(j.address, rec);
  g.publish(rec);
  a.stop();
  w.down.add(A);
  // the rig's dispatch budget is memberTimeoutMs (400 ms); the grace 3 × livenessMs (3 s)
  clock.advance(10_000);
  return { w, j, o, rec };
}

describe('recovery closes with a receipt its silent coordinator already signed, not as lost', () => {
  after(() => rig.close());

  test('completed receipt gossiped, coordinator down past budget and grace: no POOL_COORDINATOR_LOST receipt; every member closes with the coordinator’s receipt; its settlement counts once it is back', async () => {
    const g = gossip();
    const { w, j, rec } = await downAfterReceipt('heard-completed', 'completed', g);
    assert.equal(await w.members.get(B)!.recover(), 1, 'B closes A’s dispatch');
    assert.deepEqual(w.published.map((p) => [p.by, p.rec.record.status, p.rec.record.failure?.code]), [], 'the pool signed no second receipt');
    assert.equal(await w.members.get(C)!.recover(), 0, 'C has it closed by B’s relay');
    for (const m of [B, C]) {
      const e = await trailOf(w.members.get(m)!).get(j.address);
      assert.equal(e?.state, 'completed', `${m.slice(-6)}'s entry`);
      assert.deepEqual(e?.receipt, rec.bytes, `${m.slice(-6)} keeps A’s own receipt`);
      const t = await tallyOf(w.members.get(m)!);
      assert.deepEqual([t.completed, t.failed, t.sum], [1, 0, 0], `${m.slice(-6)}: completed, its split not yet counted`);
    }
    // A restarts: it closes its own dispatch with the receipt it stored, settles it, and every member counts the split
    w.down.delete(A);
    const a2 = await rig.addMember(w, 'heard-completed', A, { extra: g.extra });
    await a2.start();
    a2.stop();
    await a2.recover();
    assert.deepEqual(w.published, [], 'still no failed receipt');
    for (const m of MEMBERS) {
      const t = await tallyOf(w.members.get(m)!);
      assert.deepEqual([t.completed, t.failed], [1, 0], `${m.slice(-6)}'s tally`);
      assert.deepEqual(t.earned, Object.fromEntries(splitPrice(rec.record.price, r.record.members).map((p) => [p.member, p.amount])), `${m.slice(-6)} counts the settlement`);
    }
  });

  test('a failed receipt gossiped: closed failed with it (its code), no lost receipt', async () => {
    const g = gossip();
    const { w, j, rec } = await downAfterReceipt('heard-failed', 'failed', g);
    assert.equal(await w.members.get(C)!.recover(), 1);
    assert.deepEqual(w.published, []);
    for (const m of [B, C]) {
      const e = await trailOf(w.members.get(m)!).get(j.address);
      assert.deepEqual([e?.state, e?.receipt], ['failed', rec.bytes]);
      assert.deepEqual((await w.members.get(m)!.status() as { failures: Record<string, number> }).failures, { EXEC_FAILED: 1 });
    }
  });

  test('a not-elected member catching up past the grace closes with the heard receipt too (nobody asked it)', async () => {
    const g = gossip();
    const { w, j, rec } = await downAfterReceipt('heard-catchup', 'completed', g);
    // the one of B and C that is not elected (A is down): its tick, once it has heard the other, is a catch-up
    const [elected, other] = coordinatorRanking(w.members.get(B)!.pool, w.members.get(B)!.elected().epoch, [B, C]) as [string, string];
    const n = w.members.get(other)!;
    await n.start();
    n.stop();
    assert.equal(n.elected().coordinator, elected);
    assert.deepEqual((await trailOf(n).get(j.address))?.receipt, rec.bytes, 'closed with A’s receipt');
    assert.equal((await trailOf(w.members.get(elected)!).get(j.address))?.state, 'dispatched', 'a catch-up relays nothing: the elected member’s recovery does');
    assert.deepEqual(w.published, []);
  });

  test('only the dispatching coordinator’s receipt for its offer counts: another member’s completion, or a receipt for another offer, still fails the job as lost', async () => {
    const g = gossip();
    const w = await rig.world('heard-other', { extra: g.extra });
    const a = w.members.get(A)!;
    const c = w.members.get(C)!;
    const { job: j, input } = jobChosen((m) => m === B);
    const o = offer(j, A);
    const out = await a.run(j, o, ctx(input));
    // C signs a completion of A's job for A's offer; A signs one for another offer of its own
    g.publish(pooledReceipt(c, j, o, C, { output: out }));
    g.publish(pooledReceipt(a, j, offer(j, A, '0.008'), A, { output: out }));
    a.stop();
    w.down.add(A);
    clock.advance(10_000);
    assert.equal(await w.members.get(B)!.recover(), 1);
    assert.deepEqual(w.published.map((p) => [p.by, p.rec.record.status, p.rec.record.failure?.code]), [[B, 'failed', 'POOL_COORDINATOR_LOST']]);
  });
});
