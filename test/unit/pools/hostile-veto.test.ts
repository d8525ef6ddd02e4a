/**
 * What a hostile member's records cannot do to an honest one (second-round review): another coordinator's dispatch
 * of a job to a member, closed `failed` with that coordinator's own receipt, does not make the member refuse the
 * elected coordinator's dispatch of the job (sync.ts ranHere); and a `left` record that merely claims to be a
 * member's own, handed back in a ping answer, neither stops that member's anti-entropy nor hides a genuine one
 * (member.ts #pingAll). Three members over their own stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type PoolDispatch } from '../../../src/records/kinds.js';
import type { PoolReply } from '../../../src/roles/pool-member/member.js';
import { membership } from './helpers.js';
import { Rig, MEMBERS, clock, ctx, finish, jobChosen, keyOf, offer, pooledReceipt, r } from './member-rig.js';

const rig = new Rig();
const [A, B, C] = MEMBERS as [string, string, string];

function dispatchBy(by: string, member: string, j: { address: string }, o: { address: string }): Opened<PoolDispatch> {
  return seal(T.poolDispatch, { pool: r.signer, roster: r.address, job: j.address, offer: o.address, member, coordinator: by, epoch: 0, issuedAt: clock() }, keyOf(by)) as Opened<PoolDispatch>;
}

/** A membership naming A as its signer, `left`, with a signature that is not A's. */
const forgedLeft = (): Uint8Array => seal(T.poolMembership, { pool: r.signer, roster: r.address, seq: r.record.seq, status: 'left', signedAt: clock() }, { publicKey: keyOf(A).publicKey, sign: () => new Uint8Array(64) }).bytes;

describe('a hostile member’s records', () => {
  after(() => rig.close());

  test('another coordinator’s dispatch to a member, closed failed by it, does not veto the elected coordinator’s', async () => {
    const w = await rig.world('veto-push');
    const a = w.members.get(A)!;
    const b = w.members.get(B)!;
    const c = w.members.get(C)!;
    const jj = jobChosen((m) => m === A);
    const oc = offer(jj.job, C);
    const d = dispatchBy(C, A, jj.job, oc);
    assert.equal((await a.serve({ op: 'trail', dispatch: d.bytes, job: jj.job.bytes, offer: oc.bytes }, C)).ok, 'yes');
    const rc = pooledReceipt(c, jj.job, oc, C, { failure: { code: 'X', message: 'x' } });
    assert.equal((await a.serve({ op: 'closed', job: jj.job.address, coordinator: C, receipt: rc.bytes }, C)).ok, 'yes');
    const before = w.runs.get(A) ?? 0;
    const ob = offer(jj.job, B);
    const rec = await finish(w, b, jj.job, ob, B, b.run(jj.job, ob, ctx(jj.input)));
    assert.equal(rec.record.status, 'completed', 'A ran B’s dispatch');
    assert.equal((w.runs.get(A) ?? 0) - before, 1);
  });

  test('nor when a restored member pulls it (anti-entropy)', async () => {
    const w = await rig.world('veto-pull');
    const c = w.members.get(C)!;
    const jj = jobChosen((m) => m === A);
    const oc = offer(jj.job, C);
    const tr = c.historyStores()[0]!;
    await tr.record(jj.job.address, C, { dispatch: dispatchBy(C, A, jj.job, oc).bytes, job: jj.job.bytes, offer: oc.bytes }, jj.job.record.deadline);
    await tr.close(jj.job.address, C, 'failed', pooledReceipt(c, jj.job, oc, C, { failure: { code: 'X', message: 'x' } }).bytes);
    const a2 = await rig.addMember(w, 'veto-pull-A', A);
    await a2.start();
    a2.stop();
    assert.equal((await a2.historyStores()[0]!.all()).length, 1, 'A pulled C’s entry');
    const ob = offer(jj.job, B);
    const d = dispatchBy(B, A, jj.job, ob);
    const ans = await a2.serve({ op: 'run', dispatch: d.bytes, job: jj.job.bytes, offer: ob.bytes, input: jj.input }, B);
    assert.equal(ans.code, undefined, `A runs B’s dispatch (${ans.code})`);
    assert.equal(ans.ok, 'yes');
  });

  test('a forged `left` record in a ping answer does not stop the pull: a restored member still refuses a job it ran', async () => {
    const intercept = async (from: string, to: string, frame: { op?: unknown }): Promise<PoolReply | undefined> =>
      from === A && to === C && frame.op === 'ping' ? ({ code: 'POOL_MEMBER_LEFT', message: 'x', roster: r.bytes, membership: forgedLeft() } as PoolReply) : undefined;
    const w = await rig.world('forged-left-pull', { intercept });
    const b = w.members.get(B)!;
    const jj = jobChosen((m) => m === A);
    const ob = offer(jj.job, B);
    await finish(w, b, jj.job, ob, B, b.run(jj.job, ob, ctx(jj.input)));
    const a2 = await rig.addMember(w, 'forged-left-pull-A', A, { intercept });
    await a2.start();
    a2.stop();
    assert.equal(((await a2.status()) as { left: boolean }).left, false, 'the forged record is not adopted');
    assert.equal((await a2.historyStores()[0]!.all()).length, 1, 'A pulled B’s closed dispatch');
    const oc = offer(jj.job, C);
    const ans = await a2.serve({ op: 'run', dispatch: dispatchBy(C, A, jj.job, oc).bytes, job: jj.job.bytes, offer: oc.bytes, input: jj.input }, C);
    assert.equal(ans.code, 'POOL_ALREADY_RUN');
  });

  test('a forged `left` record answered first does not hide the genuine one another member hands back', async () => {
    const genuine = membership(r, keyOf(A), 'left').bytes;
    const intercept = async (from: string, to: string, frame: { op?: unknown }): Promise<PoolReply | undefined> => {
      if (from !== A || frame.op !== 'ping') return undefined;
      // C answers at once with a forged record; B a moment later with A's own.
      if (to === C) return { code: 'POOL_MEMBER_LEFT', message: 'x', roster: r.bytes, membership: forgedLeft() } as PoolReply;
      await new Promise((res) => setTimeout(res, 20));
      return { code: 'POOL_MEMBER_LEFT', message: 'x', roster: r.bytes, membership: genuine } as PoolReply;
    };
    const w = await rig.world('forged-left-first', { intercept });
    const a = w.members.get(A)!;
    await a.start();
    a.stop();
    assert.equal(((await a.status()) as { left: boolean }).left, true, 'the genuine record is adopted');
  });
});
