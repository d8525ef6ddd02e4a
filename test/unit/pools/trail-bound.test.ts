/**
 * What another member records in this member's dispatch trail is bounded (docs/pools.md "Dispatch trail"): open
 * dispatches per coordinator (`pool.maxOpenDispatches`, then POOL_TRAIL_FULL), and how far ahead a heard job's
 * deadline dates its entry; a recovery tick asks a slow coordinator about its jobs at once, not one after another.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { Rig, MEMBERS, keyOf, clock, job, offer, pooledReceipt, signerFrom, r } from './member-rig.js';

const rig = new Rig();
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;

describe('the dispatch trail another member fills is bounded', () => {
  after(() => rig.close());

  test('open dispatches per coordinator are capped (POOL_TRAIL_FULL, nothing stored); a closed one frees its place; other coordinators are not affected; a far deadline is pruned by the horizon; a tick asks a slow coordinator in parallel', async () => {
    let slow = 0;
    const w = await rig.world('flood', {
      options: { maxOpenDispatches: 8 },
      intercept: async (_from, _to, frame) => {
        if (frame.op === 'status' && slow) await new Promise((res) => setTimeout(res, slow));
        return undefined;
      },
    });
    const [A, G, H] = MEMBERS as [string, string, string];
    const a = w.members.get(A)!;
    const h = w.members.get(H)!;
    const fake = signerFrom(77);
    const dispatchOf = (by: string) => {
      const { job: fj } = job({ by: fake, deadline: clock() + 10 * 365 * 24 * 3600_000 });
      const fo = offer(fj, by);
      const fd = seal(T.poolDispatch, { pool: a.pool, roster: r.address, job: fj.address, offer: fo.address, member: by, coordinator: by, epoch: 0, issuedAt: clock() }, keyOf(by));
      return { fj, fo, frame: { op: 'trail', dispatch: fd.bytes, job: fj.bytes, offer: fo.bytes } };
    };
    const sent = [];
    for (let i = 0; i < 8; i++) {
      const d = dispatchOf(H);
      sent.push(d);
      assert.equal((await a.serve(d.frame, H)).ok, 'yes');
    }
    const over = dispatchOf(H);
    assert.equal((await a.serve(over.frame, H)).code, 'POOL_TRAIL_FULL');
    assert.equal(await trailOf(a).get(over.fj.address), undefined, 'nothing stored');
    assert.equal((await a.serve(dispatchOf(G).frame, G)).ok, 'yes', 'another coordinator has its own places');
    // H closes one of its own: the place is free again
    const first = sent[0]!;
    assert.equal((await a.serve({ op: 'closed', job: first.fj.address, coordinator: H, receipt: pooledReceipt(h, first.fj, first.fo, H, { failure: { code: 'EXEC_FAILED', message: 'x' } }).bytes }, H)).ok, 'yes');
    assert.equal((await a.serve(over.frame, H)).ok, 'yes');
    // a tick asks the live coordinator about its open jobs at once: 8 answers of 300 ms take well under 8 × 300 ms
    slow = 300;
    const t0 = Date.now();
    await a.recover();
    assert.ok(Date.now() - t0 < 1500, `one recovery tick took ${Date.now() - t0} ms`);
    slow = 0;
    // the 10-year deadlines date the entries at most the horizon ahead: pruned with the history after it
    const pruned = await trailOf(a).pruneHistory(clock() + 31 * 24 * 3600_000);
    assert.equal(pruned.removed, 10);
  });
});
