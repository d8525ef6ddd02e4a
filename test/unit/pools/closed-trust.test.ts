/**
 * `op: closed` is kept only when it checks out (docs/pools.md "What a member believes of another";
 * src/pools/outcome.ts): a hostile member (on the roster, its own key) cannot credit itself, overwrite the outcome
 * of a job another member coordinated, or settle a job it invented outside the roster's weights. Three members with
 * their own stores, wired to each other's `serve` (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { splitPrice } from '../../../src/pools/settlement.js';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { Rig, MEMBERS, keyOf, clock, ctx, finish, job, jobChosen, offer, pooledReceipt, signerFrom, tallyOf, r } from './member-rig.js';

const rig = new Rig();
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;

describe('a member believes a `closed` only when it checks out', () => {
  after(() => rig.close());

  test('a hostile member’s forged `closed` is refused with a stable code and changes nothing; the coordinator’s real outcome and settlement are what every member keeps', async () => {
    const w = await rig.world('forged-closed');
    const [A, , H] = MEMBERS as [string, string, string];
    const a = w.members.get(A)!;
    const h = w.members.get(H)!;
    const { job: j, input } = jobChosen((m) => m !== H);
    const o = offer(j, A);
    const out = await a.run(j, o, ctx(input));
    // H's own completed receipt (its own offer at 1000 USD) and a settlement paying it all
    const fakeOffer = seal(T.offer, { ...o.record, price: { amount: '1000', currency: 'USD' } }, keyOf(H));
    const forged = pooledReceipt(h, j, fakeOffer, H, { output: new TextEncoder().encode('x') });
    const all = (price: string, receipt: string) => seal(T.poolSettlement, { pool: h.pool, roster: r.address, job: j.address, receipt, price: { amount: price, currency: 'USD' }, parts: [{ member: H, weight: 3, amount: price }], signedAt: clock() }, keyOf(H));
    // A's real receipt, as gossip shows it before A's `closed`, with a settlement H signed
    const real = pooledReceipt(a, j, o, A, { output: out });
    const fair = seal(T.poolSettlement, { pool: h.pool, roster: r.address, job: j.address, receipt: real.address, price: real.record.price, parts: splitPrice(real.record.price, r.record.members), signedAt: clock() }, keyOf(H));
    const attempts: Array<[Record<string, unknown>, string]> = [
      // naming no coordinator closes the caller's own dispatch, of which H has none: nothing to close, nothing changes
      [{ op: 'closed', job: j.address, receipt: forged.bytes, settlement: all('1000', forged.address).bytes }, 'yes'],
      [{ op: 'closed', job: j.address, coordinator: A, receipt: forged.bytes, settlement: all('1000', forged.address).bytes }, 'POOL_CLOSE_NOT_ENTITLED'],
      [{ op: 'closed', job: j.address, coordinator: A, receipt: real.bytes, settlement: fair.bytes }, 'POOL_SETTLEMENT_INVALID'],
      [{ op: 'closed', job: j.address, coordinator: A, receipt: pooledReceipt(h, j, o, H, { failure: { code: 'EXEC_FAILED', message: 'blame' } }).bytes }, 'POOL_CLOSE_NOT_ENTITLED'],
      [{ op: 'closed', job: j.address, coordinator: A, receipt: new Uint8Array([1, 2, 3]) }, 'ENVELOPE_MALFORMED'],
    ];
    for (const to of MEMBERS.filter((m) => m !== H)) {
      for (const [frame, code] of attempts) {
        const ans = await w.members.get(to)!.serve(frame, H);
        assert.equal(ans.code ?? ans.ok, code, `${to.slice(-6)}: ${JSON.stringify(ans)}`);
      }
      assert.equal((await trailOf(w.members.get(to)!).get(j.address))?.state, 'dispatched', 'nothing stored changed');
    }
    // H fails A's job as "lost" while A runs it: A refuses; the others keep it until A's own outcome arrives
    const lost = pooledReceipt(h, j, o, H, { failure: { code: 'POOL_COORDINATOR_LOST', message: 'gone?' } });
    assert.equal((await a.serve({ op: 'closed', job: j.address, coordinator: A, receipt: lost.bytes }, H)).code, 'POOL_STILL_RUNNING');
    const rec = await finish(w, a, j, o, A, Promise.resolve(out));
    assert.equal(rec.record.price.amount, '0.009');
    for (const m of MEMBERS) {
      const t = await tallyOf(w.members.get(m)!);
      assert.ok(Math.abs(t.sum - 0.009) < 1e-12, `${m.slice(-6)} counts the real settlement (${JSON.stringify(t.earned)})`);
      assert.deepEqual(t.earned, Object.fromEntries(splitPrice(rec.record.price, r.record.members).map((p) => [p.member, p.amount])));
      assert.deepEqual([t.completed, t.failed], [1, 0]);
    }
    // after the coordinator closed it, a lost-dispatch receipt changes nothing either
    for (const to of MEMBERS.filter((m) => m !== H)) {
      assert.equal((await w.members.get(to)!.serve({ op: 'closed', job: j.address, coordinator: A, receipt: lost.bytes }, H)).ok, 'yes');
      assert.equal((await trailOf(w.members.get(to)!).get(j.address))?.state, 'completed');
    }
  });

  test('a job a member invents (its own buyer key) cannot be settled outside the roster’s weights', async () => {
    const w = await rig.world('invented');
    const H = MEMBERS[2]!;
    const h = w.members.get(H)!;
    const { job: fj } = job({ by: signerFrom(99), deadline: clock() + 60_000 });
    const fo = offer(fj, H, '5000');
    const fd = seal(T.poolDispatch, { pool: h.pool, roster: r.address, job: fj.address, offer: fo.address, member: H, coordinator: H, epoch: 0, issuedAt: clock() }, keyOf(H));
    const fr = pooledReceipt(h, fj, fo, H, { output: new TextEncoder().encode('x') });
    const greedy = seal(T.poolSettlement, { pool: h.pool, roster: r.address, job: fj.address, receipt: fr.address, price: fr.record.price, parts: [{ member: H, weight: 3, amount: '5000' }], signedAt: clock() }, keyOf(H));
    for (const to of MEMBERS.filter((m) => m !== H)) {
      const m = w.members.get(to)!;
      assert.equal((await m.serve({ op: 'trail', dispatch: fd.bytes, job: fj.bytes, offer: fo.bytes }, H)).ok, 'yes');
      assert.equal((await m.serve({ op: 'closed', job: fj.address, coordinator: H, receipt: fr.bytes, settlement: greedy.bytes }, H)).code, 'POOL_SETTLEMENT_INVALID');
      assert.equal((await m.serve({ op: 'closed', job: fj.address, coordinator: H, receipt: fr.bytes }, H)).code, 'POOL_SETTLEMENT_INVALID', 'a completed outcome comes with its settlement');
      const t = await tallyOf(m);
      assert.equal(t.sum, 0);
      assert.equal(t.completed, 0);
    }
  });
});
