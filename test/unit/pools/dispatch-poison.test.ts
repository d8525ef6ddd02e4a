/**
 * A dispatch another member records (`op: trail`) and closes cannot make the elected coordinator refuse a job it
 * won (docs/pools.md "At most once"): only the coordinator's own closed dispatch of the job counts, and a dispatch
 * must cite its signer's own offer. Three members with their own stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { Rig, MEMBERS, keyOf, clock, ctx, job, offer, pooledReceipt, codeOfAsync, r } from './member-rig.js';

const rig = new Rig();

describe('a forged dispatch does not veto the real coordinator', () => {
  after(() => rig.close());

  test('a hostile member’s own dispatch and failed close of a job: the elected coordinator still runs the job it won; a dispatch citing another member’s offer is refused', async () => {
    const w = await rig.world('poison');
    const A = w.members.get(MEMBERS[0]!)!.elected().coordinator!;
    const H = MEMBERS.find((m) => m !== A)!;
    const a = w.members.get(A)!;
    const h = w.members.get(H)!;
    const { job: j, input } = job();
    const ho = offer(j, H);
    const hd = seal(T.poolDispatch, { pool: h.pool, roster: r.address, job: j.address, offer: ho.address, member: H, coordinator: H, epoch: 0, issuedAt: clock() }, keyOf(H));
    const hr = pooledReceipt(h, j, ho, H, { failure: { code: 'EXEC_FAILED', message: 'x' } });
    for (const to of MEMBERS.filter((m) => m !== H)) {
      assert.equal((await w.members.get(to)!.serve({ op: 'trail', dispatch: hd.bytes, job: j.bytes, offer: ho.bytes }, H)).ok, 'yes');
      assert.equal((await w.members.get(to)!.serve({ op: 'closed', job: j.address, coordinator: H, receipt: hr.bytes }, H)).ok, 'yes');
    }
    assert.equal(a.mayQuote(j), true);
    const o = offer(j, A);
    assert.equal(await codeOfAsync(a.run(j, o, ctx(input))), 'none', 'the job it won runs');
    assert.equal([...w.runs.values()].reduce((x, y) => x + y, 0), 1);
    // a dispatch must cite its signer's own offer
    const { job: j2 } = job();
    const stolen = offer(j2, A);
    const d2 = seal(T.poolDispatch, { pool: h.pool, roster: r.address, job: j2.address, offer: stolen.address, member: H, coordinator: H, epoch: 0, issuedAt: clock() }, keyOf(H));
    assert.equal((await a.serve({ op: 'trail', dispatch: d2.bytes, job: j2.bytes, offer: stolen.bytes }, H)).code, 'POOL_DISPATCH_MISMATCH');
  });
});
