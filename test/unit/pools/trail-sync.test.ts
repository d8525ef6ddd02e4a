/**
 * Anti-entropy between a pool's members (docs/pools.md "Catching up on the trail"; src/roles/pool-member/sync.ts): a
 * member that was down while the pool ran jobs, or restored from an older backup, pulls the trail entries it missed
 * from the others at its start, keeps only those that check out, and then refuses to run again a job it ran (its run
 * log rewound) or to dispatch again won work it closed. Three members over their own stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type PoolDispatch } from '../../../src/records/kinds.js';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { SYNC_FETCH_KEYS, SYNC_PAGE_KEYS, SYNC_PERIOD_MS, SYNC_RELIST_LIVENESS, TrailSync } from '../../../src/roles/pool-member/sync.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import type { PoolMemberDeps, PoolReply } from '../../../src/roles/pool-member/member.js';
import { Rig, MEMBERS, clock, ctx, codeOfAsync, finish, job, jobChosen, keyOf, offer, r, tallyOf, type RigOptions, type World } from './member-rig.js';

const rig = new Rig();
const [A, B, C] = MEMBERS as [string, string, string];
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;

function dispatchBy(by: string, member: string, j: { address: string }, o: { address: string }): Opened<PoolDispatch> {
  return seal(T.poolDispatch, { pool: r.signer, roster: r.address, job: j.address, offer: o.address, member, coordinator: by, epoch: 0, issuedAt: clock() }, keyOf(by)) as Opened<PoolDispatch>;
}

/** `n` jobs coordinated by `by`, none chosen for `not`; every other one fails at the member (its input does not match). */
async function runJobs(w: World, by: string, n: number, not: string): Promise<void> {
  const m = w.members.get(by)!;
  for (let i = 0; i < n; i++) {
    const jj = jobChosen((x) => x !== not);
    const o = offer(jj.job, by);
    await finish(w, m, jj.job, o, by, m.run(jj.job, o, ctx(i % 3 === 2 ? new Uint8Array(jj.input.length) : jj.input)));
  }
}

describe('catching up on the trail (anti-entropy)', () => {
  after(() => rig.close());

  test('a member down while the pool ran jobs pulls what it missed at its start: its figures are the others’', async () => {
    const w = await rig.world('sync-down');
    w.down.add(C);
    await runJobs(w, A, 6, C);
    await runJobs(w, B, 3, C);
    const want = await tallyOf(w.members.get(A)!);
    assert.equal(want.completed + want.failed, 9);
    assert.equal((await tallyOf(w.members.get(C)!)).dispatched, 0, 'C missed every dispatch');
    w.down.delete(C);
    const c = await rig.addMember(w, 'sync-down', C);
    await c.start();
    c.stop();
    assert.deepEqual(await tallyOf(c), want, 'C counts what A and B count');
    assert.deepEqual(await tallyOf(w.members.get(B)!), want);
  });

  test('restored from an older backup: it does not run again a job it ran, nor dispatch again won work it closed', async () => {
    const w = await rig.world('sync-restore');
    const a = w.members.get(A)!;
    const b = w.members.get(B)!;
    // A dispatches a job to C, which runs it; B coordinates one A runs.
    const jc = jobChosen((m) => m === C);
    const oc = offer(jc.job, A);
    await finish(w, a, jc.job, oc, A, a.run(jc.job, oc, ctx(jc.input)));
    const jb = jobChosen((m) => m === A);
    const ob = offer(jb.job, B);
    await finish(w, b, jb.job, ob, B, b.run(jb.job, ob, ctx(jb.input)));
    const want = await tallyOf(a);
    // C and B restored from a backup taken before (empty stores: no trail, no run log).
    const c2 = await rig.addMember(w, 'sync-restore-backup', C);
    await c2.start();
    c2.stop();
    // A second dispatch of C's job (B's, as two coordinators around an epoch change would): refused, not run.
    const runs = w.runs.get(C);
    const ob2 = offer(jc.job, B);
    const again = await c2.serve({ op: 'run', dispatch: dispatchBy(B, C, jc.job, ob2).bytes, job: jc.job.bytes, offer: ob2.bytes, input: jc.input }, B);
    assert.equal(again.code, 'POOL_ALREADY_RUN');
    assert.equal(w.runs.get(C), runs, 'not run again');
    // B won the job before and closed its dispatch: it refuses to dispatch it again.
    const b2 = await rig.addMember(w, 'sync-restore-backup', B);
    await b2.start();
    b2.stop();
    const runsA = w.runs.get(A);
    assert.equal(await codeOfAsync(b2.run(jb.job, ob, ctx(jb.input))), 'POOL_ALREADY_DISPATCHED');
    assert.equal(w.runs.get(A), runsA);
    for (const m of [c2, b2]) assert.deepEqual(await tallyOf(m), want);
  });

  test('what a member hands back is kept only when it checks out; a silent member is asked again at the next step', async () => {
    let hostile = true;
    let silentA = true;
    const opts: RigOptions = {
      intercept: async (from, to, frame) => {
        if (from !== C) return undefined;
        if (frame.op === 'sync' && to === A && silentA) throw new C0Error('NET_TIMEOUT', 'silent');
        if (frame.op !== 'fetch' || to !== B || !hostile) return undefined;
        // B tampers with what it hands back: its own settlement of A's jobs, paying itself the whole price; and junk.
        const real = await w.members.get(B)!.serve(frame, from);
        const forged = (real.entries ?? []).map((e) => {
          if (!e.settlement) return { ...e, state: 'completed', receipt: new Uint8Array([1, 2, 3]) };
          const s = seal(T.poolSettlement, { pool: r.signer, roster: r.address, job: e.key.slice(0, e.key.indexOf('|')), receipt: 'sha256:' + '0'.repeat(64), price: { amount: '0.009', currency: 'USD' }, parts: [{ member: B, weight: 2, amount: '0.009' }], signedAt: clock() }, keyOf(B));
          return { ...e, settlement: s.bytes };
        });
        return { entries: [...forged, { key: 'junk|junk', dispatch: new Uint8Array(4) }] } as unknown as PoolReply;
      },
    };
    const w = await rig.world('sync-hostile', opts);
    w.down.add(C);
    await runJobs(w, A, 4, C);
    const want = await tallyOf(w.members.get(A)!);
    w.down.delete(C);
    const c = await rig.addMember(w, 'sync-hostile', C, opts);
    await c.start();
    c.stop();
    assert.equal((await trailOf(c).all()).length, 0, 'nothing B forged was kept');
    silentA = false;
    hostile = false;
    const res = await c.syncStep();
    assert.equal(res.kept, 4, 'A, silent at the start, is asked again');
    assert.deepEqual(await tallyOf(c), want);
  });

  test('a member of a build before anti-entropy (no `sync` op) is not pulled from, and nothing fails', async () => {
    const opts: RigOptions = { intercept: async (from, _to, frame) => (from === C && frame.op === 'sync' ? { code: 'POOL_BAD_REQUEST', message: 'unknown op' } : undefined) };
    const w = await rig.world('sync-old', opts);
    w.down.add(C);
    await runJobs(w, A, 2, C);
    w.down.delete(C);
    const c = await rig.addMember(w, 'sync-old', C, opts);
    await c.start();
    c.stop();
    assert.equal((await tallyOf(c)).dispatched, 0);
    assert.deepEqual(await c.syncStep(), { kept: 0, closed: 0, refused: 0 }, 'nobody is left to pull from');
  });

  test('a member whose liveness flaps is listed again only after SYNC_RELIST_LIVENESS × livenessMs; every live member each SYNC_PERIOD_MS', async () => {
    const mono = fakeClock(0);
    const asked: string[] = [];
    const d = {
      did: A,
      options: { livenessMs: 1000 },
      monoClock: mono,
      clock: mono,
      log: silentLogger(),
      call: async (to: string) => {
        asked.push(to);
        return { keys: [] };
      },
    } as unknown as PoolMemberDeps;
    const s = new TrailSync(d, { pool: r.signer, roster: () => r, rosterOf: () => r, live: () => [A, B, C] });
    s.heard(B, 'out');
    s.heard(C, 'in');
    s.seen([A, B, C]);
    assert.deepEqual(s.due, [B, C], 'at the start: every member heard');
    await s.step();
    assert.deepEqual([s.due, asked], [[], [B, C]]);
    mono.advance(5_000);
    s.heard(B, 'out');
    s.seen([A, B]);
    s.heard(C, 'out');
    s.seen([A, B, C]);
    assert.deepEqual(s.due, [], 'C back within the gap: not listed again');
    mono.advance(SYNC_RELIST_LIVENESS * 1000);
    s.heard(C, 'in');
    s.seen([A, B, C]);
    assert.deepEqual(s.due, [C], 'C back past the gap');
    await s.step();
    mono.advance(SYNC_PERIOD_MS);
    s.seen([A, B, C]);
    assert.deepEqual(s.due, [B, C], 'the periodic pass');
  });

  test('pages and fetches are bounded: a trail longer than a page comes over in pages', async () => {
    const asked = { sync: 0, fetch: 0 };
    const opts: RigOptions = {
      // livenessMs bounds the catch-up at the start (10 ×, real time): long, so a slow disk does not cut it short
      options: { maxOpenDispatches: 10_000, livenessMs: 10_000 },
      intercept: async (from, _to, frame) => {
        if (from === C && (frame.op === 'sync' || frame.op === 'fetch')) asked[frame.op]++;
        return undefined;
      },
    };
    const w = await rig.world('sync-pages', opts);
    const n = SYNC_PAGE_KEYS + 40;
    for (let i = 0; i < n; i++) {
      const j = job().job;
      const o = offer(j, A);
      await trailOf(w.members.get(A)!).record(j.address, A, { dispatch: dispatchBy(A, B, j, o).bytes, job: j.bytes, offer: o.bytes }, j.record.deadline, undefined, r);
    }
    const c = await rig.addMember(w, 'sync-pages-fresh', C, opts);
    asked.sync = asked.fetch = 0;
    await c.start();
    c.stop();
    assert.equal((await trailOf(c).pending()).length, n, 'every open entry came over');
    assert.ok(asked.sync >= 3, `A listed in two pages, B in one (${asked.sync})`);
    assert.ok(asked.fetch >= Math.ceil(n / SYNC_FETCH_KEYS), `fetched ${SYNC_FETCH_KEYS} at a time (${asked.fetch})`);
    // A fetch of more keys than the bound is refused.
    const big = await w.members.get(A)!.serve({ op: 'fetch', keys: Array.from({ length: SYNC_FETCH_KEYS + 1 }, (_, i) => `sha256:${i}|${A}`) }, C);
    assert.equal(big.code, 'POOL_BAD_REQUEST');
  });
});
