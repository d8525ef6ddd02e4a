/**
 * A member that left the pool and whose disk is then restored from a backup taken before the leave starts as a
 * member again (its kept `left` record is gone). The others hold its own signed `left` record: they hand it back in
 * their ping answers and it adopts it (docs/pools.md "A member leaves a running pool"), and until then they refuse
 * what it dispatches (`trail`, `run`) and the lost closes it signs (POOL_MEMBER_LEFT); a dispatch of its they kept
 * before it left still runs and closes. Three members over their own stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { open, seal, type Opened } from '../../../src/records/envelope.js';
import { T, type PoolDispatch, type PoolMembership, type PoolRoster } from '../../../src/records/kinds.js';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { membership } from './helpers.js';
import { Rig, MEMBERS, clock, jobChosen, keyOf, offer, pooledReceipt, r } from './member-rig.js';

const rig = new Rig();
const [A, B, X] = MEMBERS as [string, string, string];
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;

function dispatchBy(by: string, member: string, j: { address: string }, o: { address: string }): Opened<PoolDispatch> {
  return seal(T.poolDispatch, { pool: r.signer, roster: r.address, job: j.address, offer: o.address, member, coordinator: by, epoch: 0, issuedAt: clock() }, keyOf(by)) as Opened<PoolDispatch>;
}

describe('a member that left, restored from a backup taken before the leave', () => {
  after(() => rig.close());

  test('it is handed back its own `left` record when it pings, adopts it: left, not quoting, out of the election everywhere', async () => {
    const w = await rig.world('left-restored');
    const x = w.members.get(X)!;
    await x.adopt(r.bytes, membership(r, keyOf(X), 'left').bytes);
    x.stop();
    // The backup: the store as it was before the leave (a fresh one here: no `left` record kept, the member membership).
    const restored = await rig.addMember(w, 'left-restored-backup', X);
    await restored.start();
    restored.stop();
    const st = (await restored.status()) as { left: boolean; quoting: boolean; coordinator: string | undefined };
    assert.equal(st.left, true, 'it adopted the record handed back');
    assert.equal(st.quoting, false);
    const { job: j } = jobChosen(() => true);
    assert.equal(restored.mayQuote(j), false, 'it quotes nothing');
    for (let e = 0; e < 8; e++) {
      const at = clock() + e * r.record.epochMs;
      for (const m of [A, B]) assert.notEqual(w.members.get(m)!.elected(at).coordinator, X, `${m.slice(-6)} never elects it`);
      assert.notEqual(restored.elected(at).coordinator, X, 'nor does it elect itself');
    }
    for (const m of [A, B]) assert.equal(w.members.get(m)!.live().includes(X), false);
  });

  test('a `left` record handed back that is not its own, or not a `left` one, changes nothing', async () => {
    const w = await rig.world('left-forged', {
      intercept: async (_from, to, frame) => (frame.op === 'ping' && to === A ? { code: 'POOL_MEMBER_LEFT', message: 'x', roster: r.bytes, membership: membership(r, keyOf(X)).bytes } : undefined),
    });
    const x = w.members.get(X)!;
    await x.start();
    x.stop();
    const st = (await x.status()) as { left: boolean; quoting: boolean };
    assert.deepEqual([st.left, st.quoting], [false, true], 'a `member` record is no leave');
  });

  test('the others refuse its `trail`, a `run` of a dispatch they did not keep, and its lost closes; a dispatch they kept before it left still runs and closes', async () => {
    const w = await rig.world('left-refused');
    const a = w.members.get(A)!;
    const x = w.members.get(X)!;
    // Kept before it left: its dispatch of a job A is chosen for.
    const j1 = jobChosen((m) => m === A);
    const o1 = offer(j1.job, X);
    const d1 = dispatchBy(X, A, j1.job, o1);
    assert.equal((await a.serve({ op: 'trail', dispatch: d1.bytes, job: j1.job.bytes, offer: o1.bytes }, X)).ok, 'yes');
    // B's dispatch, open on A, and a lost receipt X signs for it.
    const j3 = jobChosen((m) => m === A);
    const o3 = offer(j3.job, B);
    const d3 = dispatchBy(B, A, j3.job, o3);
    assert.equal((await a.serve({ op: 'trail', dispatch: d3.bytes, job: j3.job.bytes, offer: o3.bytes }, B)).ok, 'yes');
    const lost = pooledReceipt(x, j3.job, o3, X, { failure: { code: 'POOL_COORDINATOR_LOST', message: 'gone' } });
    await x.adopt(r.bytes, membership(r, keyOf(X), 'left').bytes);
    x.stop();

    // A ping: its own record back.
    const ping = await a.serve({ op: 'ping', seq: 1 }, X);
    assert.equal(ping.code, 'POOL_MEMBER_LEFT');
    assert.equal(open(ping.membership!, T.poolMembership).signer, X);
    // A new dispatch: neither kept nor run.
    const j2 = jobChosen((m) => m === A);
    const o2 = offer(j2.job, X);
    const d2 = dispatchBy(X, A, j2.job, o2);
    assert.equal((await a.serve({ op: 'trail', dispatch: d2.bytes, job: j2.job.bytes, offer: o2.bytes }, X)).code, 'POOL_MEMBER_LEFT');
    assert.equal(await trailOf(a).get(j2.job.address), undefined);
    const runs = w.runs.get(A) ?? 0;
    assert.equal((await a.serve({ op: 'run', dispatch: d2.bytes, job: j2.job.bytes, offer: o2.bytes, input: j2.input }, X)).code, 'POOL_MEMBER_LEFT');
    assert.equal(w.runs.get(A) ?? 0, runs, 'not run');
    // Its lost close of B's dispatch: refused, the entry still open.
    assert.equal((await a.serve({ op: 'closed', job: j3.job.address, coordinator: B, receipt: lost.bytes }, X)).code, 'POOL_MEMBER_LEFT');
    assert.equal((await trailOf(a).get(j3.job.address))?.state, 'dispatched');
    // The work it had in flight: run, and closed with its own outcome.
    const ran = await a.serve({ op: 'run', dispatch: d1.bytes, job: j1.job.bytes, offer: o1.bytes, input: j1.input }, X);
    assert.equal(ran.ok, 'yes');
    const failed = pooledReceipt(x, j1.job, o1, X, { failure: { code: 'EXEC_FAILED', message: 'x' } });
    assert.equal((await a.serve({ op: 'closed', job: j1.job.address, coordinator: X, receipt: failed.bytes }, X)).ok, 'yes');
    assert.equal((await trailOf(a).get(j1.job.address))?.state, 'failed');
  });

  test('the others keep its `left` record across their own restart, and still hand it back', async () => {
    const kept = new Map<string, Map<string, { roster: Opened<PoolRoster>; membership: Opened<PoolMembership> }>>();
    const keep = (did: string) => ({
      keepMemberLeft: async (ro: Opened<PoolRoster>, me: Opened<PoolMembership>) => void (kept.get(did) ?? kept.set(did, new Map()).get(did)!).set(me.signer, { roster: ro, membership: me }),
    });
    const w = await rig.world('left-kept', { extra: (did) => keep(did) });
    const x = w.members.get(X)!;
    await x.adopt(r.bytes, membership(r, keyOf(X), 'left').bytes);
    x.stop();
    assert.equal(kept.get(A)?.get(X)?.membership.record.status, 'left', 'A kept it');
    // X restored from before its leave; B is down; A restarts: it holds X out from what it kept, and alone hands X's
    // record back.
    w.down.add(B);
    const restored = await rig.addMember(w, 'left-kept-backup', X);
    const a2 = await rig.addMember(w, 'left-kept', A, { extra: (did) => ({ ...keep(did), membersLeft: [...(kept.get(did)?.values() ?? [])] }) });
    const st = (await a2.status()) as { members: Array<{ did: string; left: boolean }> };
    assert.equal(st.members.find((m) => m.did === X)?.left, true);
    await restored.start();
    restored.stop();
    assert.equal(((await restored.status()) as { left: boolean }).left, true);
  });
});
