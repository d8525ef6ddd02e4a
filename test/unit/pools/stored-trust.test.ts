/**
 * What `pool-provider status` counts from entries already in the trail (docs/pools.md "What a member believes of
 * another"): each is checked on read by the same rule `closed` is (src/pools/outcome.ts), the split included, so an
 * entry a build before these checks kept without them (a forged settlement) counts as dispatched only. Three members
 * with their own stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { receiptFor } from '../../../src/roles/provider/provider.js';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { Rig, MEMBERS, keyOf, clock, job, offer, tallyOf, r, signerFrom } from './member-rig.js';

const rig = new Rig();
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;

describe('entries a build before the checks kept are checked when the figures are read', () => {
  after(() => rig.close());

  test('a stored settlement whose parts are not the roster’s split (one member paid 5000 USD alone) does not count, and its job counts as dispatched only', async () => {
    const w = await rig.world('stored-greedy');
    const [A, , H] = MEMBERS as [string, string, string];
    const a = w.members.get(A)!;
    const h = w.members.get(H)!;
    const { job: fj } = job({ by: signerFrom(99) });
    const fo = offer(fj, H, '5000');
    const fd = seal(T.poolDispatch, { pool: h.pool, roster: r.address, job: fj.address, offer: fo.address, member: H, coordinator: H, epoch: 0, issuedAt: clock() }, keyOf(H));
    const fr = seal(T.receipt, h.receipt(receiptFor(fj, fo, { startedAt: clock(), completedAt: clock(), energy: { uj: 0, grade: 'Estimator' }, output: new TextEncoder().encode('x') })), keyOf(H));
    const greedy = seal(T.poolSettlement, { pool: h.pool, roster: r.address, job: fj.address, receipt: fr.address, price: fr.record.price, parts: [{ member: H, weight: 3, amount: '5000' }], signedAt: clock() }, keyOf(H));
    // What the older build's `trail` and `closed` handlers stored, unchecked.
    await trailOf(a).record(fj.address, H, { dispatch: fd.bytes, job: fj.bytes, offer: fo.bytes }, fj.record.deadline);
    await trailOf(a).close(fj.address, H, 'completed', fr.bytes, greedy.bytes);
    const t = await tallyOf(a);
    assert.equal(t.sum, 0, 'the forged split counts for nobody');
    assert.deepEqual([t.dispatched, t.completed, t.failed], [1, 0, 0]);
  });

  test('a stored completion another member closed a coordinator’s entry with (its own receipt and settlement) does not count', async () => {
    const w = await rig.world('stored-other');
    const [A, B, H] = MEMBERS as [string, string, string];
    const a = w.members.get(A)!;
    const h = w.members.get(H)!;
    const { job: j } = job();
    const o = offer(j, B);
    const d = seal(T.poolDispatch, { pool: a.pool, roster: r.address, job: j.address, offer: o.address, member: A, coordinator: B, epoch: 0, issuedAt: clock() }, keyOf(B));
    const fo = offer(j, H, '1000');
    const fr = seal(T.receipt, h.receipt(receiptFor(j, fo, { startedAt: clock(), completedAt: clock(), energy: { uj: 0, grade: 'Estimator' }, output: new TextEncoder().encode('x') })), keyOf(H));
    const { splitPrice } = await import('../../../src/pools/settlement.js');
    const fs = seal(T.poolSettlement, { pool: a.pool, roster: r.address, job: j.address, receipt: fr.address, price: fr.record.price, parts: splitPrice(fr.record.price, r.record.members), signedAt: clock() }, keyOf(H));
    await trailOf(a).record(j.address, B, { dispatch: d.bytes, job: j.bytes, offer: o.bytes }, j.record.deadline);
    await trailOf(a).close(j.address, B, 'completed', fr.bytes, fs.bytes);
    const t = await tallyOf(a);
    assert.equal(t.sum, 0);
    assert.deepEqual([t.dispatched, t.completed], [1, 0]);
  });
});
