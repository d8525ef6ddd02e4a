/**
 * Whom anti-entropy pulls from after a silence (second-round review; docs/pools.md "Catching up on the trail"): a
 * member heard again after more than 3 × livenessMs, on either way (answering this member's pings, or calling it), is
 * pulled from. Not judged on liveness, which both ways feed: after a pause of this member the others' queued pings
 * reach it before its own round (they were live "before" it, and nothing was pulled), and over a one-way cut the
 * member that cannot reach this one stays live to it all along. Three members over their own stores (member-rig.ts);
 * `start()` again stands for a round of the loop (a round of pings, then a step).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { SYNC_RELIST_LIVENESS } from '../../../src/roles/pool-member/sync.js';
import type { PoolMember } from '../../../src/roles/pool-member/member.js';
import { Rig, MEMBERS, clock, ctx, finish, jobChosen, offer, r, type World } from './member-rig.js';

const rig = new Rig();
const [A, B, C] = MEMBERS as [string, string, string];
const LIVENESS = 1000;
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;

/** A round of the member's loop: a round of pings, and a step of the pull. */
async function round(m: PoolMember): Promise<void> {
  await m.start();
  m.stop();
}

/** `n` jobs B coordinates, none chosen for A; B and C ping first (their liveness, after the clock moved). */
async function bRuns(w: World, n: number): Promise<void> {
  const b = w.members.get(B)!;
  await round(b);
  await round(w.members.get(C)!);
  for (let i = 0; i < n; i++) {
    const jj = jobChosen((m) => m !== A);
    const o = offer(jj.job, B);
    assert.equal((await finish(w, b, jj.job, o, B, b.run(jj.job, o, ctx(jj.input)))).record.status, 'completed');
  }
}

describe('anti-entropy pulls from the members heard again after a silence, either way', () => {
  after(() => rig.close());

  test('a paused member whose first frames back are the others’ pings still pulls what it missed', async () => {
    const w = await rig.world('heard-pause');
    const a = w.members.get(A)!;
    // A is paused past 3 × and SYNC_RELIST_LIVENESS × livenessMs, while B runs jobs.
    w.down.add(A);
    clock.advance((SYNC_RELIST_LIVENESS + 2) * LIVENESS);
    await bRuns(w, 4);
    assert.equal((await trailOf(a).all()).length, 0);
    w.down.delete(A);
    // On SIGCONT the others' pings queued meanwhile are served before A's own next round.
    for (const m of [B, C]) assert.equal((await a.serve({ op: 'ping', seq: r.record.seq }, m)).ok, 'yes');
    await round(a);
    assert.equal((await trailOf(a).all()).length, 4, 'A pulled the 4 entries it missed');
  });

  test('a one-way cut: a member that could not call this one (its dispatches failed here) is pulled from when it can again', async () => {
    let cut = false;
    const w = await rig.world('heard-oneway', {
      intercept: async (from, to) => {
        if (cut && to === A && from !== A) throw new C0Error('NET_DIAL_FAILED', 'cut one way');
        return undefined;
      },
    });
    const a = w.members.get(A)!;
    cut = true;
    clock.advance((SYNC_RELIST_LIVENESS + 2) * LIVENESS);
    // A calls B and C all along: both stay live to A, and A to them (its pings reach them).
    await round(a);
    await bRuns(w, 4);
    for (let i = 0; i < SYNC_RELIST_LIVENESS; i++) {
      clock.advance(LIVENESS);
      await round(a);
    }
    assert.deepEqual(a.live().sort(), [...MEMBERS].sort(), 'B never stopped being live to A');
    assert.equal((await trailOf(a).all()).length, 0, 'B’s dispatches never reached A');
    cut = false;
    // B's next ping reaches A: heard that way after a silence.
    assert.equal((await a.serve({ op: 'ping', seq: r.record.seq }, B)).ok, 'yes');
    await round(a);
    assert.equal((await trailOf(a).all()).length, 4, 'A pulled the 4 entries B’s dispatches would have brought');
  });
});
