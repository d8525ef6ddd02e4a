/**
 * A member's own dispatch of a job another coordinator won (docs/pools.md "What a member believes of another",
 * "Settlement"): its settlement is split only by the roster its dispatch was recorded under (one the receiving member
 * holds, never an older roster the pool once signed), a job completed under two coordinators' dispatches is disputed
 * (no settlement of it counts, whatever the order the entries are kept in), and recovery never closes a crashed
 * coordinator's dispatch with another member's completion. Three members with their own stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { open, seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { splitPrice } from '../../../src/pools/settlement.js';
import { receiptFor } from '../../../src/roles/provider/provider.js';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import type { PoolMember } from '../../../src/roles/pool-member/member.js';
import { Rig, MEMBERS, keyOf, clock, ctx, finish, jobChosen, offer, tallyOf, r } from './member-rig.js';
import { roster as rosterOf, proof } from './helpers.js';

const rig = new Rig();
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;

/** H's own dispatch of `j` for its own offer at 1000 USD, its completed receipt and its settlement (by `split`'s weights, under `split`'s address). */
function hostile(h: PoolMember, H: string, j: Parameters<typeof offer>[0], o: { dispatchRoster: string; split: typeof r; proofRoster?: typeof r }) {
  const fo = offer(j, H, '1000');
  const fd = seal(T.poolDispatch, { pool: h.pool, roster: o.dispatchRoster, job: j.address, offer: fo.address, member: H, coordinator: H, epoch: 0, issuedAt: clock() }, keyOf(H));
  const base = receiptFor(j, fo, { startedAt: clock(), completedAt: clock(), energy: { uj: 0, grade: 'Estimator' }, output: new TextEncoder().encode('x') });
  const fr = seal(T.receipt, o.proofRoster ? { ...base, provider: h.pool, pool: proof(o.proofRoster, keyOf(H)) } : h.receipt(base), keyOf(H));
  const fs = seal(T.poolSettlement, { pool: h.pool, roster: o.split.address, job: j.address, receipt: fr.address, price: fr.record.price, parts: splitPrice(fr.record.price, o.split.record.members), signedAt: clock() }, keyOf(H));
  return { trail: { op: 'trail', dispatch: fd.bytes, job: j.bytes, offer: fo.bytes }, closed: { op: 'closed', job: j.address, coordinator: H, receipt: fr.bytes, settlement: fs.bytes } };
}

describe('a member’s own dispatch of a job another coordinator won', () => {
  after(() => rig.close());

  test('cannot replace the real settlement: an older roster’s split is refused, and a job two coordinators completed is disputed (no settlement counts)', async () => {
    const w = await rig.world('cojob');
    const [H, , A] = MEMBERS as [string, string, string]; // H's DID sorts first: its entry is first in key order
    const a = w.members.get(A)!;
    const h = w.members.get(H)!;
    const { job: j, input } = jobChosen((m) => m !== H);
    const o = offer(j, A);
    await finish(w, a, j, o, A, a.run(j, o, ctx(input)));
    // An older roster the pool signed (seq 0), where H weighed 100.
    const old = rosterOf({ seq: 0, members: [{ did: H, weight: 100 }, { did: MEMBERS[1]!, weight: 1 }, { did: A, weight: 1 }] });
    const others = MEMBERS.filter((m) => m !== H).map((m) => w.members.get(m)!);
    for (const m of others) {
      // a dispatch naming the older roster is not kept
      const viaOld = hostile(h, H, j, { dispatchRoster: old.address, split: old, proofRoster: old });
      assert.equal((await m.serve(viaOld.trail, H)).code, 'POOL_ROSTER_STALE');
      // one naming the roster in use, settled by the older roster its receipt's proof carries: refused
      const mixed = hostile(h, H, j, { dispatchRoster: r.address, split: old, proofRoster: old });
      assert.equal((await m.serve(mixed.trail, H)).ok, 'yes');
      assert.equal((await m.serve(mixed.closed, H)).code, 'POOL_SETTLEMENT_INVALID');
    }
    for (const m of others) {
      const t = await tallyOf(m);
      assert.ok(Math.abs(t.sum - 0.009) < 1e-12, `the real settlement still counts: ${t.sum}`);
    }
    // H's own entry closed with a split by the roster in use (a fresh job, so its dispatch is not the one kept above)
    const jj2 = jobChosen((m) => m !== H);
    const o2 = offer(jj2.job, A);
    await finish(w, a, jj2.job, o2, A, a.run(jj2.job, o2, ctx(jj2.input)));
    const fair = hostile(h, H, jj2.job, { dispatchRoster: r.address, split: r });
    for (const m of others) {
      assert.equal((await m.serve(fair.trail, H)).ok, 'yes');
      assert.equal((await m.serve(fair.closed, H)).ok, 'yes');
      const t = await tallyOf(m);
      // the first job's 0.009 counts; the second, completed under A's dispatch and H's, counts no settlement at all
      assert.ok(Math.abs(t.sum - 0.009) < 1e-12, `neither H's 1000 USD nor either split of the disputed job counts: ${t.sum}`);
      assert.equal(((await m.status()) as { disputed: number }).disputed, 1);
    }
  });

  test('recovery never closes a crashed coordinator’s dispatch with another member’s completion: it is failed POOL_COORDINATOR_LOST and published', async () => {
    const w = await rig.world('cojob-crash');
    const [H, B, A] = MEMBERS as [string, string, string];
    const a = w.members.get(A)!;
    const h = w.members.get(H)!;
    const b = w.members.get(B)!;
    const { job: j, input } = jobChosen((m) => m !== H);
    const o = offer(j, A);
    await a.run(j, o, ctx(input)); // A dies before its receipt and `closed`
    a.stop();
    w.down.add(A);
    const f = hostile(h, H, j, { dispatchRoster: r.address, split: r });
    assert.equal((await b.serve(f.trail, H)).ok, 'yes');
    assert.equal((await b.serve(f.closed, H)).ok, 'yes');
    clock.advance(10_000);
    assert.equal(await b.recover(), 1);
    const mine = (await trailOf(b).entries(j.address)).find((e) => e.key.endsWith(`|${A}`))!.entry;
    const rec = open(mine.receipt!, T.receipt);
    assert.deepEqual([mine.state, rec.signer, rec.record.offer, rec.record.failure?.code], ['failed', B, o.address, 'POOL_COORDINATOR_LOST']);
    assert.deepEqual(w.published.map((p) => [p.by, p.rec.record.offer, p.rec.record.failure?.code]), [[B, o.address, 'POOL_COORDINATOR_LOST']]);
  });
});
