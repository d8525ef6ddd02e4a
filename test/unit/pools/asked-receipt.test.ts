/**
 * A coordinator that signed its job's receipt and went down before its `closed`, past its dispatch's budget and the
 * grace, when that receipt never reached the recovering member's evidence store (gossip lost, the member off the job's
 * market shard, delivered to the buyer on its stream only): before signing POOL_COORDINATOR_LOST, recovery asks the
 * job's buyer and a few live members over `/c0mpute/records/1` (`op: jobs`, kind receipt; PoolMemberDeps.askReceipts)
 * and closes with the coordinator's own receipt when one comes back that checks out; a peer that does not answer
 * holds the recovery no longer than its bound, and then the job is failed as lost as before (docs/pools.md "A
 * coordinator that crashes"). Three members over their own stores (member-rig.ts); the records responders are fakes.
 *
 * After a whole-pool restart several members recover at once: a POOL_COORDINATOR_LOST receipt another member already
 * signed for the dispatch (its `closed` missed this one), handed back by the asked or in the evidence store, or a
 * `closed` arriving while the ask waits, means no second lost receipt is signed.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { CborValue } from '../../../src/records/cbor.js';
import type { PoolMemberDeps } from '../../../src/roles/pool-member/member.js';
import type { DispatchTrail } from '../../../src/pools/trail.js';
import { RECEIPT_ASK_FRAMES, RECEIPT_ASK_MS, RECOVERY_TURN_LIVENESS, RECOVERY_TURNS_MAX } from '../../../src/roles/pool-member/coordinator.js';
import { askReceiptsOver } from '../../../src/roles/pool-member/wiring.js';
import { PROTOCOLS } from '../../../src/net/protocols.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type Job, type Receipt } from '../../../src/records/kinds.js';
import { receiptFor } from '../../../src/roles/provider/provider.js';
import { Rig, MEMBERS, clock, ctx, jobChosen, offer, pooledReceipt, tallyOf, type World } from './member-rig.js';
import { POOL, didOf, outsider, proof, roster } from './helpers.js';

const rig = new Rig();
const [A, B, C] = MEMBERS as [string, string, string];
const trailOf = (m: unknown) => (m as { d: { trail: DispatchTrail } }).d.trail;
const LIVENESS_MS = 1000;

/** Who holds which receipts (peer → job → envelope bytes); a peer in `silent` never answers (nor heeds the abort). */
function records() {
  const held = new Map<string, Map<string, unknown[]>>();
  const silent = new Set<string>();
  const asked: Array<{ by: string; peer: string; job: string }> = [];
  const hold = (peer: string, job: string, ...frames: unknown[]) => {
    if (!held.has(peer)) held.set(peer, new Map());
    held.get(peer)!.set(job, [...(held.get(peer)!.get(job) ?? []), ...frames]);
  };
  const extra = (did: string, w: World): Partial<PoolMemberDeps> => ({
    heardReceipts: () => [],
    ownReceipt: async (job: string) => w.kept.get(did)!.get(job),
    askReceipts: async (peer: string, job: string) => {
      asked.push({ by: did, peer, job });
      if (silent.has(peer) || w.down.has(peer)) return new Promise<unknown[]>(() => {});
      return held.get(peer)?.get(job) ?? [];
    },
  });
  return { held, silent, asked, hold, extra };
}

/** A runs a job B is chosen for, signs `outcome`'s receipt and stores it (nobody gossiped it), and goes down before `closed`; the clock passes its budget and grace. */
async function downAfterReceipt(name: string, g: ReturnType<typeof records>, outcome: 'completed' | 'failed' = 'completed') {
  const w = await rig.world(name, { extra: g.extra, options: { livenessMs: LIVENESS_MS } });
  const a = w.members.get(A)!;
  const { job: j, input } = jobChosen((m) => m === B);
  const o = offer(j, A);
  const out = await a.run(j, o, ctx(input));
  const rec = pooledReceipt(a, j, o, A, outcome === 'completed' ? { output: out } : { failure: { code: 'EXEC_FAILED', message: 'the work failed' } });
  w.kept.get(A)!.set(j.address, rec);
  a.stop();
  w.down.add(A);
  clock.advance(10_000);
  return { w, j, o, out, rec };
}

describe('recovery asks the buyer and the live members for the receipt its silent coordinator signed before failing the job as lost', () => {
  after(() => rig.close());

  test('the receipt is held only by the buyer (records/1): the recovering member closes with it, signs no POOL_COORDINATOR_LOST receipt, and relays it', async () => {
    const g = records();
    const { w, j, rec } = await downAfterReceipt('asked-buyer', g);
    g.hold(j.signer, j.address, rec.bytes);
    assert.equal(await w.members.get(B)!.recover(), 1, 'B closes A’s dispatch');
    assert.deepEqual(w.published.map((p) => [p.by, p.rec.record.status, p.rec.record.failure?.code]), [], 'the pool signed no second receipt');
    const askedByB = g.asked.filter((x) => x.by === B);
    assert.deepEqual(new Set(askedByB.map((x) => x.peer)), new Set([j.signer, C]), 'B asked the buyer and the live member C (not A, down; not itself)');
    assert.ok(askedByB.every((x) => x.job === j.address));
    for (const m of [B, C]) {
      const e = await trailOf(w.members.get(m)!).get(j.address);
      assert.equal(e?.state, 'completed', `${m.slice(-6)}'s entry`);
      assert.deepEqual(e?.receipt, rec.bytes, `${m.slice(-6)} keeps A’s own receipt`);
      const t = await tallyOf(w.members.get(m)!);
      assert.deepEqual([t.completed, t.failed], [1, 0], `${m.slice(-6)}: completed`);
    }
  });

  test('the buyer is silent and a live member holds the receipt: closed with it, within the bound', async () => {
    const g = records();
    const { w, j, rec } = await downAfterReceipt('asked-member', g, 'failed');
    g.silent.add(j.signer);
    g.hold(C, j.address, rec.bytes);
    const t0 = performance.now();
    assert.equal(await w.members.get(B)!.recover(), 1);
    assert.ok(performance.now() - t0 < RECEIPT_ASK_MS + 1500, 'a silent buyer does not hold the recovery past the bound');
    assert.deepEqual(w.published, []);
    const e = await trailOf(w.members.get(B)!).get(j.address);
    assert.deepEqual([e?.state, e?.receipt], ['failed', rec.bytes]);
    assert.deepEqual((await w.members.get(B)!.status() as { failures: Record<string, number> }).failures, { EXEC_FAILED: 1 });
  });

  test('nobody answers (a silent buyer that ignores the abort, a member holding nothing): failed POOL_COORDINATOR_LOST as before, within the bound', async () => {
    const g = records();
    const { w, j } = await downAfterReceipt('asked-silent', g);
    g.silent.add(j.signer);
    const t0 = performance.now();
    assert.equal(await w.members.get(B)!.recover(), 1);
    const took = performance.now() - t0;
    assert.ok(took < Math.min(RECEIPT_ASK_MS, LIVENESS_MS) + 1500, `bounded by the ask's deadline (took ${Math.round(took)} ms)`);
    assert.ok(g.asked.some((x) => x.by === B && x.peer === j.signer), 'the buyer was asked');
    assert.deepEqual(w.published.map((p) => [p.by, p.rec.record.status, p.rec.record.failure?.code]), [[B, 'failed', 'POOL_COORDINATOR_LOST']]);
  });

  test('what comes back is checked as a heard receipt is: junk, a forged signature, another member’s completion, or a receipt for another offer do not count (lost as before)', async () => {
    const g = records();
    const { w, j, o, out, rec } = await downAfterReceipt('asked-junk', g);
    const forged = new Uint8Array(rec.bytes);
    forged[forged.length - 1]! ^= 1;
    const other = pooledReceipt(w.members.get(C)!, j, o, C, { output: out });
    const otherOffer = pooledReceipt(w.members.get(A)!, j, offer(j, A, '0.008'), A, { output: out });
    g.hold(j.signer, j.address, 'not bytes', new Uint8Array([1, 2, 3]), forged, other.bytes, otherOffer.bytes);
    g.hold(C, j.address, { op: 'x' } as unknown as CborValue);
    assert.equal(await w.members.get(B)!.recover(), 1);
    assert.deepEqual(w.published.map((p) => [p.by, p.rec.record.status, p.rec.record.failure?.code]), [[B, 'failed', 'POOL_COORDINATOR_LOST']]);
  });

  test('the wiring asks records/1 `jobs` for the job’s receipts, bounded (deadline, frames) and under the signal', async () => {
    const calls: Array<{ peer: string; protocol: string; frames: CborValue[]; opts: unknown }> = [];
    const ask = askReceiptsOver({ request: async (peer, protocol, frames, opts) => (calls.push({ peer, protocol, frames, opts }), [new Uint8Array([1]), 'x']) }, 1500);
    const ac = new AbortController();
    const job = 'sha256:' + 'b'.repeat(64);
    assert.deepEqual(await ask('did:key:zPeer', job, ac.signal), [new Uint8Array([1]), 'x']);
    assert.equal(calls.length, 1);
    assert.equal(calls[0]!.peer, 'did:key:zPeer');
    assert.equal(calls[0]!.protocol, PROTOCOLS.records);
    assert.deepEqual(calls[0]!.frames, [{ op: 'jobs', kinds: ['receipt'], jobs: [job] }]);
    const opts = calls[0]!.opts as { signal: AbortSignal; limits: { deadlineMs: number; maxResponseFrames: number } };
    assert.equal(opts.signal, ac.signal);
    assert.equal(opts.limits.deadlineMs, 1500);
    assert.equal(opts.limits.maxResponseFrames, RECEIPT_ASK_FRAMES);
  });
});

/** The POOL_COORDINATOR_LOST receipts the pool published for `j` (each recovering member that failed it publishes its own). */
const lostOf = (w: World, j: Opened<Job>) => w.published.filter((p) => p.rec.record.job === j.address && p.rec.record.failure?.code === 'POOL_COORDINATOR_LOST');
const LOST = { code: 'POOL_COORDINATOR_LOST', message: 'the coordinator is gone' };

/** A dispatch whose coordinator A ran it (B chosen) and went down before signing anything, past the budget and grace. */
async function downBeforeReceipt(w: World) {
  const a = w.members.get(A)!;
  const { job: j, input } = jobChosen((m) => m === B);
  const o = offer(j, A);
  await a.run(j, o, ctx(input));
  a.stop();
  w.down.add(A);
  clock.advance(10_000);
  return { j, o };
}

/**
 * `m` fails the dispatch while the other members are unreachable to it: at once when it is first in the take-over
 * order, else once its turn has come (coordinator.ts #turn: the members ahead it cannot see get theirs first).
 */
async function recoverInTurn(w: World, m: string): Promise<number> {
  const n = await w.members.get(m)!.recover();
  if (n) return n;
  clock.advance(RECOVERY_TURNS_MAX * RECOVERY_TURN_LIVENESS * LIVENESS_MS);
  return w.members.get(m)!.recover();
}

const rig2 = new Rig();

describe('after a whole-pool restart, a POOL_COORDINATOR_LOST receipt another member already signed for the dispatch is taken, not signed a second time', () => {
  after(() => rig2.close());

  test('C signed it and its `closed` missed B; B cannot reach C yet and is handed C’s receipt by the buyer (and C) over records/1: B closes with it and signs none', async () => {
    const held = new Map<string, unknown[]>();
    const asked: string[] = [];
    let cutBC = false;
    const w = await rig2.world('lost-asked', {
      options: { livenessMs: LIVENESS_MS },
      intercept: async (from, to) => {
        if (cutBC && from === B && to === C) throw Object.assign(new Error('not connected yet'), { code: 'NET_DIAL_FAILED' });
        return undefined;
      },
      extra: (did) => ({
        heardReceipts: () => [],
        askReceipts: async (peer: string) => {
          if (did === B) asked.push(peer);
          return held.get(peer) ?? [];
        },
      }),
    });
    const { j } = await downBeforeReceipt(w);
    // C recovers first; its `closed` misses B (still starting)
    w.down.add(B);
    assert.equal(await recoverInTurn(w, C), 1);
    w.down.delete(B);
    const first = lostOf(w, j);
    assert.deepEqual(first.map((p) => p.by), [C], 'C signed one LOST receipt');
    // the buyer heard it (gossip) and C holds it (evidence store): both serve it on records/1 `jobs`
    held.set(j.signer, [first[0]!.rec.bytes]);
    held.set(C, [first[0]!.rec.bytes]);
    cutBC = true;
    assert.equal(await w.members.get(B)!.recover(), 1, 'B closes A’s dispatch');
    assert.ok(asked.includes(j.signer), 'B asked the buyer');
    assert.deepEqual(lostOf(w, j).map((p) => p.by), [C], 'B took C’s LOST receipt: no second one');
    const e = await trailOf(w.members.get(B)!).get(j.address);
    assert.deepEqual([e?.state, e?.receipt], ['failed', first[0]!.rec.bytes], 'B’s entry is closed with C’s receipt');
    const t = await tallyOf(w.members.get(B)!);
    assert.deepEqual([t.completed, t.failed], [0, 1], 'B counts the job failed once');
  });

  test('C’s `closed` (its LOST receipt) reaches B while B waits on its ask: B re-reads its entry and signs none', async () => {
    let cStatus = true;
    const w = await rig2.world('lost-during-ask', {
      options: { livenessMs: LIVENESS_MS },
      intercept: async (from, to, f) => {
        if (cStatus && from === B && to === C && f.op === 'status') throw Object.assign(new Error('timeout'), { code: 'NET_TIMEOUT' });
        return undefined;
      },
      extra: (did, w) => ({
        heardReceipts: () => [],
        askReceipts: async (peer: string) => {
          if (did === B && peer !== C) {
            // the buyer is slow (within the bound); meanwhile C, elected too after the restart, fails the dispatch as lost
            await w.members.get(C)!.recover();
            await new Promise((r) => setTimeout(r, 200));
          }
          return [];
        },
      }),
    });
    const { j } = await downBeforeReceipt(w);
    assert.equal(await w.members.get(B)!.recover(), 1);
    cStatus = false;
    const all = lostOf(w, j);
    assert.deepEqual(all.map((p) => p.by), [C], 'C’s close came before B signed: no second LOST receipt');
    for (const m of [B, C]) {
      const e = await trailOf(w.members.get(m)!).get(j.address);
      assert.deepEqual([e?.state, e?.receipt], ['failed', all[0]!.rec.bytes], `${m.slice(-6)} keeps C’s receipt`);
    }
  });

  test('C’s LOST receipt is in B’s own evidence store (gossip): B closes with it, asks nobody, signs none', async () => {
    const heard: Array<Opened<Receipt>> = [];
    let asks = 0;
    const w = await rig2.world('lost-heard', {
      options: { livenessMs: LIVENESS_MS },
      extra: (did) => ({
        heardReceipts: () => (did === B ? heard : []),
        askReceipts: async () => (asks++, []),
      }),
    });
    const { j } = await downBeforeReceipt(w);
    w.down.add(B);
    assert.equal(await recoverInTurn(w, C), 1);
    w.down.delete(B);
    const first = lostOf(w, j)[0]!.rec;
    heard.push(first);
    w.down.add(C); // C restarting: neither its `status` answer nor its trail reaches B
    asks = 0;
    assert.equal(await w.members.get(B)!.recover(), 1);
    assert.equal(asks, 0, 'a LOST receipt at hand: nobody is asked');
    assert.deepEqual(lostOf(w, j).map((p) => p.by), [C]);
    assert.deepEqual((await trailOf(w.members.get(B)!).get(j.address))?.receipt, first.bytes);
  });

  test('a LOST receipt not for this dispatch or not a current member’s (another offer, the coordinator’s other job, an outsider under another roster) is not taken: B signs its own', async () => {
    const held: unknown[] = [];
    const w = await rig2.world('lost-not-taken', {
      options: { livenessMs: LIVENESS_MS },
      extra: () => ({ heardReceipts: () => [], askReceipts: async () => held }),
    });
    const { j, o } = await downBeforeReceipt(w);
    const c = w.members.get(C)!;
    const otherOffer = pooledReceipt(c, j, offer(j, A, '0.008'), C, { failure: LOST });
    const { job: j2 } = jobChosen((m) => m === B);
    const otherJob = pooledReceipt(c, j2, offer(j2, A), C, { failure: LOST });
    // an outsider on a roster of the pool that is not the one in use (signed by the pool key: its proof checks out)
    const old = roster({ members: [...MEMBERS, didOf(outsider)].map((did) => ({ did })) });
    const lost = receiptFor(j, o, { startedAt: clock(), completedAt: clock(), energy: { uj: 0, grade: 'Estimator' }, failure: LOST });
    const byOutsider = seal(T.receipt, { ...lost, provider: POOL, pool: proof(old, outsider) }, outsider);
    held.push(otherOffer.bytes, otherJob.bytes, byOutsider.bytes);
    w.down.add(C);
    assert.equal(await w.members.get(B)!.recover(), 1);
    assert.deepEqual(lostOf(w, j).map((p) => p.by), [B], 'none of those counts: B fails the dispatch itself');
  });
});

