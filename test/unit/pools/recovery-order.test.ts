/**
 * Two members that each believe themselves elected (a whole-pool restart before the connections are up, or views of
 * each other's liveness that differ) recover the same silent coordinator's dispatch at the same moment: only the one
 * first in the take-over order (the election's ranking) signs a POOL_COORDINATOR_LOST receipt at once; the other
 * waits its turn (RECOVERY_TURN_LIVENESS × livenessMs for each member ahead it cannot see), and takes the first one's
 * receipt once it reaches it, so the pool signs one lost receipt and every trail names it. The dispatch's own
 * coordinator, recovering its dispatch after a restart, comes last: it waits a turn for each member it cannot see. A
 * member ahead that stays unreachable only delays the close (docs/pools.md "A coordinator that crashes"). Three members
 * over their own stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { coordinatorRanking, epochOf } from '../../../src/pools/choice.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job } from '../../../src/records/kinds.js';
import { Rig, MEMBERS, clock, ctx, jobChosen, offer, r, tallyOf, type World } from './member-rig.js';
import { POOL } from './helpers.js';

const rig = new Rig();
const A = MEMBERS[0]!;
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;
const LIVENESS_MS = 1000;
/** One member's turn: coordinator.ts RECOVERY_TURN_LIVENESS (3) × livenessMs. */
const TURN_MS = 3 * LIVENESS_MS;

const lostOf = (w: World, j: Opened<Job>) => w.published.filter((p) => p.rec.record.job === j.address && p.rec.record.failure?.code === 'POOL_COORDINATOR_LOST');

/** A world where the two members other than A cannot reach each other while `cut.on` (both restarting, or partitioned). */
async function world(name: string) {
  const cut = { on: false };
  const others = MEMBERS.filter((m) => m !== A);
  const w = await rig.world(name, {
    options: { livenessMs: LIVENESS_MS },
    intercept: async (from, to) => {
      if (cut.on && others.includes(from) && others.includes(to)) throw Object.assign(new Error('not connected'), { code: 'NET_DIAL_FAILED' });
      return undefined;
    },
    // nobody outside the pool holds a receipt for the job: the lookups find only what the members hold
    extra: () => ({ heardReceipts: () => [], askReceipts: async () => [] }),
  });
  // A dispatches a job to another member, which runs it; A goes down before signing anything, past budget and grace.
  const a = w.members.get(A)!;
  const { job: j, input } = jobChosen((m) => m !== A);
  await a.run(j, offer(j, A), ctx(input));
  a.stop();
  w.down.add(A);
  clock.advance(10_000);
  // The take-over order of the two recovering members, for the epoch they recover in.
  const [first, second] = coordinatorRanking(POOL, epochOf(clock(), r.record.epochMs), others) as [string, string];
  return { w, j, cut, first, second };
}

describe('recovering the same dispatch at the same moment: one lost receipt, in the take-over order', () => {
  after(() => rig.close());

  test('two members that cannot see each other recover at once: the first in the order signs; the second waits its turn, then takes that receipt and signs none', async () => {
    const { w, j, cut, first, second } = await world('order-restart');
    cut.on = true;
    const done = await Promise.all([w.members.get(first)!.recover(), w.members.get(second)!.recover()]);
    assert.deepEqual(done, [1, 0], 'the first closed A’s dispatch; the second waits');
    assert.deepEqual(lostOf(w, j).map((p) => p.by), [first], 'one POOL_COORDINATOR_LOST receipt, by the first in the take-over order');
    assert.equal((await trailOf(w.members.get(second)!).get(j.address))?.state, 'dispatched', 'the first’s `closed` missed the second');
    // Still cut off within its turn: the second signs nothing yet.
    clock.advance(TURN_MS / 2);
    assert.equal(await w.members.get(second)!.recover(), 0);
    assert.deepEqual(lostOf(w, j).map((p) => p.by), [first]);
    // The connections come up: the second finds the first’s receipt (its `status` answer) and closes with it.
    cut.on = false;
    clock.advance(TURN_MS);
    assert.equal(await w.members.get(second)!.recover(), 1);
    const all = lostOf(w, j);
    assert.deepEqual(all.map((p) => p.by), [first], 'no second lost receipt');
    for (const m of [first, second]) {
      const e = await trailOf(w.members.get(m)!).get(j.address);
      assert.deepEqual([e?.state, e?.receipt], ['failed', all[0]!.rec.bytes], `${m.slice(-6)}’s trail names the one lost receipt`);
      const t = await tallyOf(w.members.get(m)!);
      assert.deepEqual([t.completed, t.failed], [0, 1], `${m.slice(-6)} counts the job failed once`);
    }
  });

  test('the first in the order stays unreachable (down, or cut off for good): the second fails the dispatch itself once its turn has come, not before', async () => {
    const { w, j, cut, first, second } = await world('order-first-gone');
    cut.on = true;
    w.down.add(first);
    assert.equal(await w.members.get(second)!.recover(), 0, 'its turn has not come');
    clock.advance(TURN_MS - 1);
    assert.equal(await w.members.get(second)!.recover(), 0);
    assert.deepEqual(lostOf(w, j), []);
    clock.advance(1);
    assert.equal(await w.members.get(second)!.recover(), 1, 'the job is not left open');
    assert.deepEqual(lostOf(w, j).map((p) => p.by), [second]);
  });

  test('members that see each other: the one recovering signs at once, whatever its place in the order (no wait for a live member)', async () => {
    const { w, j, second } = await world('order-live');
    assert.equal(await w.members.get(second)!.recover(), 1);
    assert.deepEqual(lostOf(w, j).map((p) => p.by), [second]);
  });
  test('the dispatch’s own coordinator restarts with the others and cannot see them yet: it waits its turn for each, and takes the first one’s receipt; one lost receipt', async () => {
    const cut = { on: false };
    const opts = {
      options: { livenessMs: LIVENESS_MS },
      // A is cut off from the other two while `cut.on` (all restarting, A's connections not up yet)
      intercept: async (from: string, to: string) => {
        if (cut.on && (from === A) !== (to === A)) throw Object.assign(new Error('not connected'), { code: 'NET_DIAL_FAILED' });
        return undefined;
      },
      extra: () => ({ heardReceipts: () => [], askReceipts: async () => [] }),
    };
    const w = await rig.world('order-own', opts);
    const { job: j, input } = jobChosen((m) => m !== A);
    await w.members.get(A)!.run(j, offer(j, A), ctx(input));
    w.members.get(A)!.stop();
    clock.advance(10_000);
    // the whole pool restarts: A over its own store, its dispatch open and no receipt stored
    cut.on = true;
    const a = await rig.addMember(w, 'order-own', A, opts);
    const [first] = coordinatorRanking(POOL, epochOf(clock(), r.record.epochMs), MEMBERS.filter((m) => m !== A)) as [string];
    const done = await Promise.all([a.recover(), w.members.get(first)!.recover()]);
    assert.deepEqual(done, [0, 1], 'the first in the order closed A’s dispatch; A, its coordinator, waits for the members it cannot see');
    assert.deepEqual(lostOf(w, j).map((p) => p.by), [first]);
    cut.on = false;
    clock.advance(2 * TURN_MS);
    assert.equal(await a.recover(), 1);
    const all = lostOf(w, j);
    assert.deepEqual(all.map((p) => p.by), [first], 'A took the first’s receipt and signed none');
    const e = await trailOf(a).get(j.address);
    assert.deepEqual([e?.state, e?.receipt], ['failed', all[0]!.rec.bytes]);
  });

  test('the dispatch’s own coordinator restarts alone (the others down for good): it fails its dispatch once every turn has passed, not before', async () => {
    const opts = { options: { livenessMs: LIVENESS_MS }, extra: () => ({ heardReceipts: () => [], askReceipts: async () => [] }) };
    const w = await rig.world('order-own-alone', opts);
    const { job: j, input } = jobChosen((m) => m !== A);
    await w.members.get(A)!.run(j, offer(j, A), ctx(input));
    w.members.get(A)!.stop();
    clock.advance(10_000);
    for (const m of MEMBERS) if (m !== A) w.down.add(m);
    const a = await rig.addMember(w, 'order-own-alone', A, opts);
    assert.equal(await a.recover(), 0, 'it waits for the two members it cannot see');
    clock.advance(2 * TURN_MS - 1);
    assert.equal(await a.recover(), 0);
    clock.advance(1);
    assert.equal(await a.recover(), 1, 'the job is not left open');
    assert.deepEqual(lostOf(w, j).map((p) => p.by), [A]);
  });
  test('the restarted coordinator sees the others a tick later and is no longer elected: it still closes its own dispatch (the elected member leaves a live coordinator’s dispatch to it)', async () => {
    const opts = { options: { livenessMs: LIVENESS_MS }, extra: () => ({ heardReceipts: () => [], askReceipts: async () => [] }) };
    const w = await rig.world('order-own-not-elected', opts);
    // an epoch, and the next, in which A is not first among the three
    const notA = (e: number) => coordinatorRanking(POOL, e, MEMBERS)[0] !== A;
    while (!(notA(epochOf(clock(), r.record.epochMs)) && notA(epochOf(clock(), r.record.epochMs) + 1))) clock.advance(r.record.epochMs);
    for (const m of w.members.values()) {
      await m.start();
      m.stop();
    }
    const { job: j, input } = jobChosen((m) => m !== A);
    await w.members.get(A)!.run(j, offer(j, A), ctx(input));
    w.members.get(A)!.stop();
    clock.advance(500);
    const a = await rig.addMember(w, 'order-own-not-elected', A, opts);
    w.down.add(A); // its first pings reach nobody
    await a.start();
    a.stop();
    assert.equal((await trailOf(a).get(j.address))?.state, 'dispatched', 'it waits for the members it cannot see');
    w.down.delete(A);
    clock.advance(LIVENESS_MS);
    for (const m of [a, ...MEMBERS.filter((x) => x !== A).map((x) => w.members.get(x)!)]) {
      await m.start();
      m.stop();
    }
    assert.notEqual(a.elected().coordinator, A, 'A sees the others and is not elected');
    const lost = lostOf(w, j);
    assert.deepEqual(lost.map((p) => p.by), [A], 'A failed its own dispatch at once, not at its next election');
    for (const m of MEMBERS) assert.equal((await trailOf(w.members.get(m)!).get(j.address))?.state, 'failed');
  });
});
