/**
 * A member that closes a silent coordinator's dispatch with a POOL_COORDINATOR_LOST receipt another member signed
 * (found by its lookups, not heard in that member's `closed`) relays it to the members (`op: closed`), who take it
 * when it checks out and its signer is a member of the roster in use other than the dispatch's coordinator: a
 * member that missed the signer's `closed` (restarting then) and is not elected would otherwise keep the entry open
 * until its catch-up asks around, counting the job dispatched and holding one of the coordinator's
 * pool.maxOpenDispatches places. An older member refuses the relay (POOL_CLOSE_NOT_ENTITLED): the relaying member
 * goes on. A member that missed both the signer's `closed` and every relay takes the lost receipt at catch-up from a
 * live member's `status` answer, unless the coordinator says it still runs the job. Four members over their own
 * stores (member-rig.ts).
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type Job } from '../../../src/records/kinds.js';
import { receiptFor } from '../../../src/roles/provider/provider.js';
import { signerFrom } from '../records/fixtures.js';
import { Rig, MEMBERS, clock, ctx, finish, jobChosen, offer, pooledReceipt, tallyOf, type World } from './member-rig.js';
import { POOL, didOf, outsider, proof, roster } from './helpers.js';
import { compareDids } from '../../../src/records/did.js';
import { coordinatorRanking, epochOf } from '../../../src/pools/choice.js';

const rig = new Rig();
const LIVENESS_MS = 1000;
/** coordinator.ts RECOVERY_TURNS_MAX × RECOVERY_TURN_LIVENESS × livenessMs: the longest a member waits its turn. */
const ALL_TURNS_MS = 3 * 3 * LIVENESS_MS;
const LOST = { code: 'POOL_COORDINATOR_LOST', message: 'the coordinator is gone' };
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;
const lostOf = (w: World, j: Opened<Job>) => w.published.filter((p) => p.rec.record.job === j.address && p.rec.record.failure?.code === 'POOL_COORDINATOR_LOST');

/** Four members: the three of helpers.ts and a fourth key. */
const FOUR = [...MEMBERS, didOf(outsider)].sort(compareDids);
const r4 = roster({ members: FOUR.map((did) => ({ did })) });
const [A, B, C, D] = FOUR as [string, string, string, string];

/**
 * A dispatches a job and goes down before signing anything; C and D are restarting while B fails it as lost (B's
 * `closed` misses them); then B goes down, C and D are back, and the buyer holds B's receipt (gossiped). C recovers:
 * it takes B's receipt from the buyer rather than signing a second.
 */
async function bLostCAfter(name: string, intercept?: (from: string, to: string, f: Record<string, unknown>) => Promise<{ code: string; message: string } | undefined>) {
  const held = new Map<string, unknown[]>();
  const w = await rig.world(name, {
    roster: r4,
    options: { livenessMs: LIVENESS_MS },
    ...(intercept ? { intercept } : {}),
    extra: () => ({ heardReceipts: () => [], askReceipts: async (peer: string, job: string) => held.get(`${peer}|${job}`) ?? [] }),
  });
  const a = w.members.get(A)!;
  const { job: j, input } = jobChosen((m) => m === B);
  await a.run(j, offer(j, A), ctx(input));
  a.stop();
  w.down.add(A);
  clock.advance(10_000);
  w.down.add(C).add(D);
  // B's turn may come after C's and D's (they are ahead of it in the take-over order, and it cannot see them)
  if (!(await w.members.get(B)!.recover())) {
    clock.advance(ALL_TURNS_MS);
    assert.equal(await w.members.get(B)!.recover(), 1);
  }
  const lost = lostOf(w, j);
  assert.deepEqual(lost.map((p) => p.by), [B], 'B signed the one lost receipt');
  held.set(`${j.signer}|${j.address}`, [lost[0]!.rec.bytes]);
  w.down.delete(C);
  w.down.delete(D);
  w.down.add(B);
  assert.equal((await trailOf(w.members.get(D)!).get(j.address))?.state, 'dispatched', 'B’s `closed` missed D');
  assert.equal(await w.members.get(C)!.recover(), 1, 'C closes A’s dispatch');
  assert.deepEqual(lostOf(w, j).map((p) => p.by), [B], 'C took B’s receipt: no second one');
  return { w, j, lost: lost[0]!.rec };
}

describe('a lost receipt taken from another member is relayed', () => {
  after(() => rig.close());

  test('C closes with B’s lost receipt (asked of the buyer) and relays it: D, which missed B’s `closed`, closes its entry with it', async () => {
    const { w, j, lost } = await bLostCAfter('relay-lost');
    for (const m of [C, D]) {
      const e = await trailOf(w.members.get(m)!).get(j.address);
      assert.deepEqual([e?.state, e?.receipt], ['failed', lost.bytes], `${m.slice(-6)}’s entry is closed with B’s receipt`);
      const t = await tallyOf(w.members.get(m)!);
      assert.deepEqual([t.completed, t.failed], [0, 1], `${m.slice(-6)} counts the job failed once`);
      assert.equal(((await w.members.get(m)!.status()) as { pending: number }).pending, 0, `${m.slice(-6)}: nothing pending`);
    }
  });

  test('D is of an older build and refuses the relay (POOL_CLOSE_NOT_ENTITLED): C still closes, and signs nothing', async () => {
    const refused: string[] = [];
    const { w, j, lost } = await bLostCAfter('relay-refused', async (from, to, f) => {
      if (f.op === 'closed' && from === C && to === D) {
        refused.push(to);
        return { code: 'POOL_CLOSE_NOT_ENTITLED', message: 'a dispatch closes only with its coordinator’s own outcome, or with the sender’s own POOL_COORDINATOR_LOST receipt' };
      }
      return undefined;
    });
    assert.deepEqual(refused, [D], 'C relayed to D');
    const e = await trailOf(w.members.get(C)!).get(j.address);
    assert.deepEqual([e?.state, e?.receipt], ['failed', lost.bytes]);
  });

  test('a relayed lost receipt is taken only when it checks out and its signer is a member of the roster in use who did not dispatch the job', async () => {
    const w = await rig.world('relay-checks', { roster: r4, options: { livenessMs: LIVENESS_MS }, extra: () => ({ heardReceipts: () => [], askReceipts: async () => [] }) });
    const a = w.members.get(A)!;
    const { job: j, input } = jobChosen((m) => m === B);
    const o = offer(j, A);
    await a.run(j, o, ctx(input));
    const d = w.members.get(D)!;
    const refused = async (receipt: Uint8Array, why: string) => {
      const x = await d.serve({ op: 'closed', job: j.address, coordinator: A, receipt }, C);
      assert.equal(x.code, 'POOL_CLOSE_NOT_ENTITLED', why);
      assert.equal((await trailOf(d).get(j.address))?.state, 'dispatched', `${why}: nothing stored changed`);
    };
    // signed by a key on another roster of the pool (its proof checks out), not on the one in use
    const fifth = signerFrom(45);
    const other = roster({ members: [...FOUR, didOf(fifth)].map((did) => ({ did })) });
    const base = receiptFor(j, o, { startedAt: clock(), completedAt: clock(), energy: { uj: 0, grade: 'Estimator' }, failure: LOST });
    await refused(seal(T.receipt, { ...base, provider: POOL, pool: proof(other, fifth) }, fifth).bytes, 'a signer off the roster in use');
    // B's lost receipt, forged
    const byB = pooledReceipt(w.members.get(B)!, j, o, B, { failure: LOST });
    const forged = new Uint8Array(byB.bytes);
    forged[forged.length - 1]! ^= 1;
    const x = await d.serve({ op: 'closed', job: j.address, coordinator: A, receipt: forged }, C);
    assert.ok(typeof x.code === 'string', 'a forged relay is refused');
    assert.equal((await trailOf(d).get(j.address))?.state, 'dispatched');
    // B's own, relayed by C: taken
    assert.equal((await d.serve({ op: 'closed', job: j.address, coordinator: A, receipt: byB.bytes }, C)).ok, 'yes');
    const e = await trailOf(d).get(j.address);
    assert.deepEqual([e?.state, e?.receipt], ['failed', byB.bytes]);
  });
  test('a member down both when B signed its lost receipt and when anyone could relay it closes its entry at catch-up, not elected: B answers `status` with it', async () => {
    const w = await rig.world('catch-up-lost', { roster: r4, options: { livenessMs: LIVENESS_MS }, extra: () => ({ heardReceipts: () => [], askReceipts: async () => [] }) });
    const a = w.members.get(A)!;
    const { job: j, input } = jobChosen((m) => m === B);
    await a.run(j, offer(j, A), ctx(input));
    a.stop();
    w.down.add(A);
    clock.advance(10_000);
    w.down.add(C).add(D);
    if (!(await w.members.get(B)!.recover())) {
      clock.advance(ALL_TURNS_MS);
      assert.equal(await w.members.get(B)!.recover(), 1);
    }
    assert.deepEqual(lostOf(w, j).map((p) => p.by), [B], 'B signed the one lost receipt; its `closed` missed C and D');
    // C is back (D, the only other member that could relay, stays down), in an epoch where B, not C, is elected
    w.down.delete(C);
    while (coordinatorRanking(POOL, epochOf(clock(), r4.record.epochMs), [B, C])[0] !== B) clock.advance(r4.record.epochMs);
    const c = w.members.get(C)!;
    assert.equal((await trailOf(c).get(j.address))?.state, 'dispatched');
    await c.start(); // pings, then its tick: not elected, so catch-up
    c.stop();
    assert.equal(c.elected().coordinator, B, 'C was not elected: its catch-up ran, not recovery');
    assert.equal((await trailOf(c).get(j.address))?.state, 'dispatched', 'not at A’s first silence');
    // A stays silent for a turn (3 × livenessMs): it is gone, and B's receipt closes the entry
    clock.advance(3 * LIVENESS_MS);
    await c.start();
    c.stop();
    assert.equal(c.elected().coordinator, B);
    const e = await trailOf(c).get(j.address);
    assert.deepEqual([e?.state, e?.receipt], ['failed', lostOf(w, j)[0]!.rec.bytes], 'C closed its entry with B’s lost receipt');
    assert.deepEqual(lostOf(w, j).map((p) => p.by), [B], 'and signed none of its own');
    assert.equal(((await c.status()) as { pending: number }).pending, 0);
  });

  test('catch-up takes no other member’s lost receipt while the coordinator answers that it still runs the job', async () => {
    // A is up and says it still runs the job (a coordinator that left finishes what it runs)
    const stillRuns = async (_from: string, to: string, f: Record<string, unknown>) => (to === A && f.op === 'status' ? ({ state: 'dispatched', running: 'yes', runs: 'no' } as const) : undefined);
    const w = await rig.world('catch-up-running', { roster: r4, options: { livenessMs: LIVENESS_MS }, intercept: stillRuns, extra: () => ({ heardReceipts: () => [], askReceipts: async () => [] }) });
    const { job: j, input } = jobChosen((m) => m === B);
    const o = offer(j, A);
    await w.members.get(A)!.run(j, o, ctx(input));
    // B holds a lost receipt of its own for A's dispatch (a partition: it could not see A), which C never heard
    const byB = pooledReceipt(w.members.get(B)!, j, o, B, { failure: LOST });
    await trailOf(w.members.get(B)!).close(j.address, A, 'failed', byB.bytes);
    clock.advance(10_000);
    const c = w.members.get(C)!;
    while (coordinatorRanking(POOL, epochOf(clock(), r4.record.epochMs), FOUR)[0] === C) clock.advance(r4.record.epochMs);
    await c.start();
    c.stop();
    assert.notEqual(c.elected().coordinator, C);
    assert.equal((await trailOf(c).get(j.address))?.state, 'dispatched', 'A is live and answers for its dispatch: C waits for A’s own outcome');
  });
  test('catch-up takes no other member’s lost receipt at the coordinator’s first silence: cut off from C for a tick, A completed the job, and C closes with A’s receipt once it answers', async () => {
    let cut = false;
    const w = await rig.world('catch-up-cut', {
      roster: r4,
      options: { livenessMs: LIVENESS_MS },
      intercept: async (from, to, frame) => {
        if (cut && ((from === C && to === A) || (from === A && to === C))) throw Object.assign(new Error('cut'), { code: 'NET_DIAL_FAILED' });
        // Catch-up alone: the members list no trail, as a build before anti-entropy (which would hand C A's own
        // outcome from D at once: trail-sync.test.ts).
        if (from === C && (frame.op === 'sync' || frame.op === 'fetch')) return { code: 'POOL_BAD_REQUEST', message: 'unknown op' };
        return undefined;
      },
      extra: () => ({ heardReceipts: () => [], askReceipts: async () => [] }),
    });
    const a = w.members.get(A)!;
    const { job: j, input } = jobChosen((m) => m === B);
    const o = offer(j, A);
    const out = await a.run(j, o, ctx(input));
    // C is down while A completes and sends its `closed`
    w.down.add(C);
    const rec = await finish(w, a, j, o, A, Promise.resolve(out));
    w.down.delete(C);
    assert.equal(rec.record.status, 'completed');
    // B holds a lost receipt of its own for A's dispatch (it could not see A then)
    const byB = pooledReceipt(w.members.get(B)!, j, o, B, { failure: LOST });
    await trailOf(w.members.get(B)!).close(j.address, A, 'failed', byB.bytes);
    clock.advance(10_000);
    cut = true;
    while (coordinatorRanking(POOL, epochOf(clock(), r4.record.epochMs), [B, C, D])[0] === C) clock.advance(r4.record.epochMs);
    const c = w.members.get(C)!;
    await c.start();
    c.stop();
    assert.notEqual(c.elected().coordinator, C);
    assert.equal((await trailOf(c).get(j.address))?.state, 'dispatched', 'A silent once: C waits');
    cut = false;
    clock.advance(LIVENESS_MS);
    await c.start();
    c.stop();
    const e = await trailOf(c).get(j.address);
    assert.deepEqual([e?.state, e?.receipt], ['completed', rec.bytes], 'C closed with A’s completed receipt');
  });
});
