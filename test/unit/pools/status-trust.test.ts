/**
 * Recovery takes a member's `op: status` answer only when it checks out (docs/pools.md "A coordinator that crashes",
 * "What a member believes of another"): junk bytes or a forged outcome are skipped, and the orphaned dispatch is
 * failed POOL_COORDINATOR_LOST as documented. Three members with their own stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { open, seal, type Opened } from '../../../src/records/envelope.js';
import { T, type Job } from '../../../src/records/kinds.js';
import type { PoolReply } from '../../../src/roles/pool-member/protocol.js';
import { selectMember } from '../../../src/pools/choice.js';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { Rig, MEMBERS, keyOf, clock, ctx, job, offer, pooledReceipt, tallyOf, r, type World } from './member-rig.js';

const rig = new Rig();
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;

describe('recovery believes an `op: status` answer only when it checks out', () => {
  after(() => rig.close());

  test('junk bytes or a forged completed outcome from a hostile member are skipped: the orphan is failed POOL_COORDINATOR_LOST, status() keeps working, nobody is credited', async () => {
    const [A, B, H] = MEMBERS as [string, string, string];
    const jobs = new Map<string, Opened<Job>>();
    let lie: (job: string) => PoolReply = () => ({ state: 'failed', receipt: new Uint8Array([1, 2, 3]), running: 'no' });
    const w: World = await rig.world('status-lie', {
      intercept: async (from, to, frame) => {
        if (from === A && frame.op === 'run') throw new C0Error('TEST_CRASH', 'A dies between the dispatch and the call');
        if (to === H && frame.op === 'status') return lie(frame.job as string);
        return undefined;
      },
    });
    const a = w.members.get(A)!;
    const b = w.members.get(B)!;
    const h = w.members.get(H)!;
    const orphan = async () => {
      let jj = job();
      while (selectMember(jj.job.address, MEMBERS) === A) jj = job();
      jobs.set(jj.job.address, jj.job);
      await a.run(jj.job, offer(jj.job, A), ctx(jj.input)).catch(() => undefined);
      w.down.add(A);
      clock.advance(10_000);
      return jj.job;
    };
    // 1. junk bytes as "the outcome"
    const j1 = await orphan();
    assert.equal(await b.recover(), 1);
    await b.status();
    const e1 = await trailOf(b).get(j1.address);
    assert.equal(e1?.state, 'failed');
    const r1 = open(e1!.receipt!, T.receipt);
    assert.deepEqual([r1.signer, r1.record.failure?.code], [B, 'POOL_COORDINATOR_LOST']);
    assert.equal(w.published.filter((p) => p.by === B).length, 1, 'the failed receipt is published');
    // 2. a forged completed receipt and a settlement paying H 777 USD for a job nobody ran
    lie = (jobAddr) => {
      const jo = jobs.get(jobAddr)!;
      const fo = seal(T.offer, { job: jobAddr, advert: 'sha256:' + 'a'.repeat(64), price: { amount: '777', currency: 'USD' }, durationMs: 1, issuedAt: clock(), startBy: clock() + 1, expiresAt: clock() + 1 }, keyOf(H));
      const rec = pooledReceipt(h, jo, fo, H, { output: new TextEncoder().encode('x') });
      const s = seal(T.poolSettlement, { pool: h.pool, roster: r.address, job: jobAddr, receipt: rec.address, price: rec.record.price, parts: [{ member: H, weight: 3, amount: '777' }], signedAt: clock() }, keyOf(H));
      return { state: 'completed', receipt: rec.bytes, settlement: s.bytes, running: 'no' };
    };
    w.down.delete(A);
    await a.start();
    a.stop();
    const j2 = await orphan();
    assert.equal(await b.recover(), 1);
    const e2 = await trailOf(b).get(j2.address);
    assert.equal(e2?.state, 'failed');
    assert.equal(e2?.settlement, undefined);
    assert.equal(open(e2!.receipt!, T.receipt).record.failure?.code, 'POOL_COORDINATOR_LOST');
    assert.equal(w.published.filter((p) => p.by === B).length, 2);
    const t = await tallyOf(b);
    assert.equal(t.sum, 0, 'nobody is credited');
    assert.deepEqual([t.completed, t.failed], [0, 2]);
  });
});
