/**
 * A pool of three separate `c0mpute start` processes through its failure modes
 * (issue #13 "Tests (real processes)"; docs/pools.md "Failure modes, tested"),
 * next to an independent provider the buyer fails over to:
 *  - a member whose work outlasts pool.memberTimeoutMs: POOL_MEMBER_TIMEOUT, no settlement, failover;
 *  - the member the hash picks killed after it was seen live: POOL_MEMBER_UNREACHABLE, failover;
 *  - the coordinator exits right after its dispatch is durable and sent, before the call
 *    (C0MPUTE_FAILPOINT=pool.after-dispatch): the next coordinator fails the job from the trail
 *    (POOL_COORDINATOR_LOST) and the restarted one closes its own entry — nothing left pending;
 *  - a roster change mid-epoch reaches the running members without a restart: the removed member
 *    stops quoting, the others elect and choose among the new roster;
 *  - `pool-provider leave` on a running member: it stops at once and withdraws its advert, the
 *    other member drops it from the active list without a new roster and serves alone.
 * The buyer fails over from a pool to another provider, never to the same pool's other member.
 * The test picks the epoch in which m1 coordinates (the election computed here with the spec's
 * rule) and computes the chosen member with the spec's formula. One cluster, generous polling.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { coordinatorRanking, selectMember } from '../../src/pools/choice.js';
import { createPool, joinPool, signRoster } from './pool-helpers.js';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, get, providerConfig, runJob, sleep, waitFor, waitForMarket, withLogs, type NodeProc, type RunOutcome } from './node-helpers.js';

const c = new Cluster('pools-fail');
const names = ['m1', 'm2', 'm3'];
// Short epochs: the tests wait for an epoch m1 wins (a third of them, by the hash), so the epoch length is most of the wait.
const EPOCH_MS = 2000;
/** Time an epoch must still have when a job is started in it: m1 quotes within it (its offer typically comes within a few hundred ms). */
const QUOTE_MS = 1500;
const m: Record<string, NodeProc> = {};
let p: NodeProc;
let buyer: NodeProc;
let pool = '';
let poolDir = '';

interface PoolView {
  pool: string;
  coordinator?: string;
  roster: { seq: number };
  newestSeq: number;
  quoting: boolean;
  removed: boolean;
  pending: number;
  failures: Record<string, number>;
  left?: boolean;
  members: Array<{ did: string; live: boolean; left?: boolean; offRoster?: boolean; jobs: { dispatched: number; completed: number; failed: number }; earned: Record<string, string> }>;
}

function memberConfig(i: number, boot: string[]): Record<string, unknown> {
  const base = providerConfig({ bootstrap: boot, price: '0.009', sleepBaseMs: 200, cpuCores: 4 + i });
  const dir = join(c.root, names[i]!);
  // livenessMs 2500: a member killed stays "live" for 5–7.5 s, long enough for the dispatch to pick it.
  return { ...base, pool: { roster: join(c.root, 'roster.cose'), membership: join(dir, 'membership.cose'), livenessMs: 2500, memberTimeoutMs: 2500 } };
}

const alive = (n: NodeProc) => n.child.exitCode === null && n.child.signalCode === null;
const view = (n: NodeProc) => get<PoolView>(n, '/v1/pool');
/** The members the roster in use lists (status also shows one it no longer lists, with its figures: offRoster). */
const onRoster = (v: PoolView) => v.members.filter((x) => !x.offRoster);
/** A job only m2 (5 cores) and m3 (6 cores) can run: m1 coordinates it, the hash picks one of them. */
const spec = (workload: string, params: string, extra: Record<string, unknown> = {}) => ({
  workload,
  params,
  maxPrice: { amount: '0.01', currency: 'USD' },
  deadlineMs: 60_000,
  requirements: { cpuCores: 5 },
  input: Buffer.from(`pooled work ${Math.random()}`).toString('base64'),
  ...extra,
});

/** Sign roster seq 2 of the members at `idx` into roster2.cose (a file the members' configs do not name). */
const signRoster2 = (idx: number[]): Promise<void> => signRoster(c, poolDir, idx.map((i) => ({ did: c.dataDir(names[i]!).did, index: i, weight: 1 })), { out: 'roster2.cose', seq: 2, epochMs: EPOCH_MS });

const join_ = (dir: string, roster = 'roster.cose', out = 'membership.cose'): Promise<string> => joinPool(c, dir, roster, out);

/** Wait until the start of an epoch (this one if ≥ QUOTE_MS remain) in which `who` is elected among `live`, computed with the spec's rule. */
async function epochOf(who: string, live: string[]): Promise<void> {
  for (;;) {
    const now = Date.now();
    const e = Math.floor(now / EPOCH_MS);
    for (let k = 0; k < 50; k++) {
      if (coordinatorRanking(pool, e + k, live)[0] !== who) continue;
      if (k === 0 && (e + 1) * EPOCH_MS - now < QUOTE_MS) continue;
      if (k > 0) await sleep((e + k) * EPOCH_MS - now + 100);
      return;
    }
  }
}

const attempts = (r: RunOutcome) => r.result.attempts as Array<{ provider: string; outcome: string }>;
const receipts = (r: RunOutcome) => r.events.filter((e) => e.e === 'receipt').map((e) => e.receipt as { signer: string; record: { provider: string; status: string; failure?: { code: string; message: string }; energy: { uj: number; grade: string } } });

/** The buyer tried the pool once (failed, with `code`), then completed on the independent provider. */
function failedOverFromPool(run: RunOutcome, code: string): void {
  assert.equal(run.result.status, 'completed', JSON.stringify(run.result.attempts));
  // attempts name the offer's signer: m1, the coordinator that quoted for the pool.
  assert.deepEqual(attempts(run).map((a) => a.provider), [m.m1!.did, p.did], 'the pool once, then the other provider: never the pool’s other member');
  const poolReceipts = receipts(run).filter((r) => r.record.provider === pool);
  assert.equal(poolReceipts.length, 1);
  assert.equal(poolReceipts[0]!.record.status, 'failed');
  assert.equal(poolReceipts[0]!.record.failure?.code, code);
}

const earned = async (n: NodeProc) => (await view(n)).members.reduce((s, x) => s + Number(x.earned.USD ?? '0'), 0);

before(async () => {
  await withLogs(c, async () => {
    const dirs = names.map((n) => c.dataDir(n));
    ({ pool, poolDir } = await createPool(c, dirs, { epochMs: EPOCH_MS }));
    m.m1 = await c.start('m1', memberConfig(0, []));
    // (The independent provider needs only m1 to bootstrap from: it starts beside m2.)
    [m.m2, p] = await Promise.all([c.start('m2', memberConfig(1, [bootstrapAddr(m.m1)])), c.start('p', providerConfig({ bootstrap: [bootstrapAddr(m.m1)], price: '0.0095', sleepBaseMs: 200 }))]);
    m.m3 = await c.start('m3', memberConfig(2, [bootstrapAddr(m.m1), bootstrapAddr(m.m2)]));
    buyer = await c.start('b', buyerConfig({ bootstrap: [...Object.values(m), p].map(bootstrapAddr), collectWindowMs: 1500, policy: 'cheapest' }));
    await waitForMarket(buyer, 2, [...Object.values(m), p]);
    await waitFor('every member to see the others live', async () => (await Promise.all(Object.values(m).map(view))).every((v) => v.members.every((x) => x.live)), 45_000);
  });
});

after(async () => {
  await c.destroy();
});

test('a member whose work outlasts pool.memberTimeoutMs: POOL_MEMBER_TIMEOUT, no settlement, the buyer fails over', async () => {
  await withLogs(c, async () => {
    const before = await earned(m.m1!);
    await epochOf(m.m1!.did, Object.values(m).map((n) => n.did));
    // 4 s of work: past memberTimeoutMs (2.5 s) whatever the load, as no sleep ends early; the provider failed over to runs it too.
    const run = await runJob(buyer, spec('builtin.sleep', '4000'));
    failedOverFromPool(run, 'POOL_MEMBER_TIMEOUT');
    assert.equal(receipts(run).find((r) => r.record.provider === pool)!.signer, m.m1!.did, 'm1 coordinated');
    // the work did not run at m1 and the member reports no figure: no energy billed for m1's wait (QA qaPnet F6)
    assert.deepEqual(receipts(run).find((r) => r.record.provider === pool)!.record.energy, { uj: 0, grade: 'Estimator' });
    await waitFor('the trail to close', async () => (await view(m.m1!)).pending === 0);
    assert.equal((await view(m.m1!)).failures.POOL_MEMBER_TIMEOUT, 1);
    assert.equal(await earned(m.m1!), before, 'no settlement for a failed job');
  });
});

test('the member the hash picks is killed after it was seen live: POOL_MEMBER_UNREACHABLE, the buyer fails over', async () => {
  await withLogs(c, async () => {
    await epochOf(m.m1!.did, Object.values(m).map((n) => n.did));
    let killed: NodeProc | undefined;
    try {
      const run = await runJob(buyer, spec('builtin.sha256', '2'), (e) => {
        if (e.e !== 'job' || killed) return;
        // The spec's formula over the members that can run the job (m2, m3), computed here.
        const job = (e.job as { address: string }).address;
        killed = c.byDid(selectMember(job, [m.m2!.did, m.m3!.did]))!;
        killed.child.kill('SIGKILL');
      });
      assert.ok(killed);
      failedOverFromPool(run, 'POOL_MEMBER_UNREACHABLE');
      await waitFor('the trail to close', async () => (await view(m.m1!)).pending === 0);
      assert.equal((await view(m.m1!)).failures.POOL_MEMBER_UNREACHABLE, 1);
    } finally {
      // Back for the next cases (each of them first waits for every member to be seen live: the next one restarts m1 and
      // waits for that, so the restarted member is not waited for here as well).
      if (killed) m[killed.name] = await c.start(killed.name, killed.config);
    }
  });
});

test('the coordinator exits right after the durable dispatch, before the call: the job is failed from the trail, nothing left pending', async () => {
  await withLogs(c, async () => {
    const m1 = m.m1!;
    await c.stop(m1);
    m.m1 = await c.start('m1', m1.config, { C0MPUTE_FAILPOINT: 'pool.after-dispatch' });
    await waitFor('m1 to be seen live again', async () => (await Promise.all(Object.values(m).map(view))).every((v) => v.members.every((x) => x.live)), 45_000);
    await epochOf(m.m1.did, Object.values(m).map((n) => n.did));
    const nds = async (did: string) => (await get<{ nonDeliveries: number }>(buyer, `/v1/reputation/${encodeURIComponent(did)}`)).nonDeliveries;
    const [poolBefore, m1Before] = [await nds(pool), await nds(m.m1.did)];
    const run = await runJob(buyer, spec('builtin.sha256', '2'));
    await waitFor('m1 to exit at the failpoint', () => !alive(m.m1!), 30_000);
    assert.equal(m.m1.child.signalCode, 'SIGKILL', 'killed at the failpoint, as a crash');
    // The buyer's stream to m1 broke: it failed over to the other provider.
    assert.equal(run.result.status, 'completed', JSON.stringify(run.result.attempts));
    assert.deepEqual(attempts(run).map((a) => a.provider), [m.m1.did, p.did]);
    // Its non-delivery on m1's offer (a c0mpute.nondelivery/2: the offer cites the pooled advert) counts against the
    // pool, the provider selection scores m1's offers by, not against m1 (docs/pools.md "Reputation").
    assert.ok((run.result.attempts as Array<{ nondelivery?: string }>)[0]!.nondelivery, 'a non-delivery was signed');
    assert.equal(await nds(pool), poolBefore + 1);
    assert.equal(await nds(m.m1.did), m1Before);
    // The dispatch was sent to m2 and m3 before the call; the next coordinator closes it as failed.
    for (const n of [m.m2!, m.m3!]) {
      await waitFor(`${n.name} to close the orphaned dispatch`, async () => {
        const v = await view(n);
        return v.pending === 0 && v.failures.POOL_COORDINATOR_LOST === 1;
      }, 60_000);
    }
    // The restarted coordinator closes its own entry too (it takes the outcome the others hold).
    m.m1 = await c.start('m1', m1.config);
    await waitFor('the restarted m1 to close its own dispatch', async () => {
      const v = await view(m.m1!);
      return v.pending === 0 && v.failures.POOL_COORDINATOR_LOST === 1;
    }, 90_000);
  });
});

test('a roster change mid-epoch reaches the running members: m3 removed stops quoting, m1 and m2 serve on the new roster', async () => {
  await withLogs(c, async () => {
    await waitFor('all three live', async () => (await Promise.all(Object.values(m).map(view))).every((v) => v.members.every((x) => x.live)), 45_000);
    // Mid-epoch, without a restart: sign seq 2 without m3; m1 and m2 join it on their running nodes.
    await sleep(EPOCH_MS / 2 - (Date.now() % EPOCH_MS) + (Date.now() % EPOCH_MS > EPOCH_MS / 2 ? EPOCH_MS : 0));
    await signRoster2([0, 1]);
    const [j1, j2] = await Promise.all([m.m1!, m.m2!].map((n) => join_(n.dir, 'roster2.cose', 'membership2.cose')));
    assert.match(j1!, /now uses roster seq 2/);
    assert.match(j2!, /now uses roster seq 2/);
    await waitFor('m1 and m2 on seq 2, agreeing on the coordinator; m3 removed', async () => {
      const [v1, v2, v3] = await Promise.all([view(m.m1!), view(m.m2!), view(m.m3!)]);
      const ok =
        v1.roster.seq === 2 && v2.roster.seq === 2 && onRoster(v1).length === 2 && onRoster(v1).every((x) => x.live) && onRoster(v2).every((x) => x.live) && v1.coordinator === v2.coordinator && v3.removed && !v3.quoting && v3.newestSeq === 2;
      return ok;
    }, 45_000);
    // The pool serves on the new roster: no requirement, so the hash picks among m1 and m2.
    const run = await runJob(buyer, spec('builtin.sha256', '2', { requirements: {} }));
    assert.equal(run.result.status, 'completed', JSON.stringify(run.result.attempts));
    const r = receipts(run).at(-1)!;
    assert.equal(r.record.provider, pool);
    assert.ok([m.m1!.did, m.m2!.did].includes(r.signer), 'the removed member does not coordinate');
    const job = (run.result.job as { address: string }).address;
    const chosen = selectMember(job, [m.m1!.did, m.m2!.did]);
    await waitFor('the chosen member’s completed job in the trail', async () => (await view(m.m1!)).members.find((x) => x.did === chosen)!.jobs.completed >= 1);
    // m3, removed: listed only when m1's trail holds figures for it (the earlier cases may or may not have picked it),
    // and then marked off the roster, never as a member of seq 2 (coordinator.test covers the listing itself)
    const m3row = (await view(m.m1!)).members.find((x) => x.did === m.m3!.did);
    if (m3row) assert.equal(m3row.offRoster, true);
    // A restart keeps the adopted roster (kept in LevelDB): the config still names seq 1's files.
    // (Bootstrapping from the current addresses: m1 came back on a new port in an earlier case.)
    m.m2 = await c.restart(m.m2!, { ...m.m2!.config, network: { ...(m.m2!.config.network as Record<string, unknown>), bootstrap: [bootstrapAddr(m.m1!), bootstrapAddr(p)] } });
    assert.equal((await view(m.m2)).roster.seq, 2);
  });
});

test('a member leaves the running pool: m2 stops at once and withdraws its advert, m1 drops it without a new roster and serves alone', async () => {
  await withLogs(c, async () => {
    await waitFor('m1 and m2 live on seq 2', async () => (await Promise.all([view(m.m1!), view(m.m2!)])).every((v) => v.roster.seq === 2 && onRoster(v).every((x) => x.live)), 45_000);
    const l = await c0mpute(m.m2!.dir, ['pool-provider', 'leave', '--roster', join(c.root, 'roster2.cose'), '--out', join(m.m2!.dir, 'left2.cose')]);
    assert.equal(l.code, 0, l.err);
    assert.match(l.out, /left the pool at once/);
    const v2 = await view(m.m2!);
    assert.equal(v2.left, true);
    assert.equal(v2.quoting, false);
    // Still roster seq 2 (m2 is on it): m1 drops m2 because m2 said it left, not because a roster did.
    await waitFor('m1 to drop m2 from its active list', async () => {
      const v1 = await view(m.m1!);
      const x = v1.members.find((y) => y.did === m.m2!.did)!;
      return v1.roster.seq === 2 && x.left === true && !x.live && v1.coordinator === m.m1!.did;
    }, 30_000);
    await waitFor('the buyer to hold m2’s advert outside the pool (its pooled one withdrawn)', async () => {
      const v = await get<{ adverts: Array<{ provider: string; pool?: unknown }> }>(buyer, '/v1/market');
      const own = v.adverts.find((a) => a.provider === m.m2!.did);
      return own !== undefined && own.pool === undefined;
    }, 45_000);
    const done = (await view(m.m1!)).members.find((x) => x.did === m.m1!.did)!.jobs.completed;
    const run = await runJob(buyer, spec('builtin.sha256', '2', { requirements: {} }));
    assert.equal(run.result.status, 'completed', JSON.stringify(run.result.attempts));
    const r = receipts(run).at(-1)!;
    assert.equal(r.record.provider, pool);
    assert.equal(r.signer, m.m1!.did);
    await waitFor('m1 ran it (the only active member)', async () => (await view(m.m1!)).members.find((x) => x.did === m.m1!.did)!.jobs.completed === done + 1);
  });
});
