/**
 * A pooled open order through real daemons (docs/pools.md "Dispatch recorded before the call", docs/matching.md "A
 * pooled claim"; QA qaOrd F1): a pool of two, m1 claims (m2 takes no input this large, so it claims none) and the job
 * needs m2's 5 cores, so m1 dispatches it to m2 with its claim where an auction's dispatch carries the offer.
 *  - m1 SIGKILLed once the buyer's work was accepted: it starts again on its data dir (before: RECORD_WRONG_TYPE,
 *    exit 3, at every start) and the dispatch is closed POOL_COORDINATOR_LOST on both members (m2 kept its copy);
 *  - the next pooled order, dispatched to the other member, completes and settles;
 *  - an order designated to the pool's DID (QA qaOrd F5: never claimed, "is not known") is claimed by a member for the
 *    pool and completes, with no "no live provider can claim" warning before it.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createPool } from './pool-helpers.js';
import { Cluster, bootstrapAddr, buyerConfig, get, providerConfig, runJob, waitFor, waitForMarket, withLogs, type NodeProc } from './node-helpers.js';

const c = new Cluster('pools-order');
const m: Record<string, NodeProc> = {};
let buyer: NodeProc;
let pool = '';

interface PoolView {
  pending: number;
  failures: Record<string, number>;
  members: Array<{ did: string; live: boolean; jobs: { completed: number; failed: number } }>;
}
const view = (n: NodeProc) => get<PoolView>(n, '/v1/pool');

function memberConfig(i: number, boot: string[]): Record<string, unknown> {
  const base = providerConfig({ bootstrap: boot, price: '0.009', cpuCores: 4 + i });
  const provider = base.provider as Record<string, unknown>;
  // m1 claims every order it may; m2 takes no input over 64 bytes, so it claims none of these orders (it runs them dispatched).
  if (i === 0) provider.claimMode = 'any';
  else provider.maxInputBytes = 64;
  return { ...base, pool: { roster: join(c.root, 'roster.cose'), membership: join(c.root, `m${i + 1}`, 'membership.cose'), livenessMs: 1000, memberTimeoutMs: 10_000 } };
}

/** An open bid only m2 can run (5 cores), with an input m2 would not claim (over its 64 bytes). */
const order = (sleepMs: number) => ({
  workload: 'builtin.sleep',
  params: String(sleepMs),
  maxPrice: { amount: '0.01', currency: 'USD' },
  deadlineMs: 40_000,
  requirements: { cpuCores: 5 },
  order: {},
  input: Buffer.from(`pooled order ${Math.random()} `.padEnd(200, '.')).toString('base64'),
});

before(async () => {
  await withLogs(c, async () => {
    const dirs = ['m1', 'm2'].map((n) => c.dataDir(n));
    ({ pool } = await createPool(c, dirs, { epochMs: 10_000 }));
    m.m1 = await c.start('m1', memberConfig(0, []));
    m.m2 = await c.start('m2', memberConfig(1, [bootstrapAddr(m.m1)]));
    buyer = await c.start('b', buyerConfig({ bootstrap: [m.m1, m.m2].map(bootstrapAddr) }));
    await waitForMarket(buyer, 1, [m.m1!, m.m2!]);
    await waitFor('both members to see each other live', async () => (await Promise.all([view(m.m1!), view(m.m2!)])).every((v) => v.members.every((x) => x.live)), 30_000);
  });
});

after(async () => {
  await c.destroy();
});

test('the coordinator of a pooled order SIGKILLed after the work was accepted starts again; the dispatch closes as lost; the next order runs on the other member', async () => {
  await withLogs(c, async () => {
    const m1 = m.m1!;
    let accepted: string | undefined;
    let killed: Promise<void> | undefined;
    const run = await runJob(buyer, order(4000), (e) => {
      if (e.e !== 'accepted' || accepted) return;
      accepted = e.provider as string;
      // Once the dispatch is durable and m2 keeps its copy (before: refused there, RECORD_WRONG_TYPE), m1 is killed.
      killed = waitFor('m2 to keep the dispatch', async () => (await view(m.m2!)).pending === 1, 10_000).then(() => void m1.child.kill('SIGKILL'));
    });
    assert.equal(accepted, m1.did, 'm1 claimed the order');
    await killed;
    assert.equal(run.result.status, 'failed');
    // Before: every start exited 3, RECORD_WRONG_TYPE (the dispatch's claim opened as an offer).
    m.m1 = await c.start('m1', m1.config);
    for (const n of [m.m1, m.m2!]) {
      await waitFor(`${n.name} to close the dispatch as lost`, async () => {
        const v = await view(n);
        return v.pending === 0 && v.failures.POOL_COORDINATOR_LOST === 1;
      }, 45_000);
    }
    await waitFor('both members live again', async () => (await Promise.all([view(m.m1!), view(m.m2!)])).every((v) => v.members.every((x) => x.live)), 30_000);
    await waitForMarket(buyer, 1, [m.m1, m.m2!]);
    // The next pooled order: claimed by m1 again, dispatched to m2 (before: refused there at `op: run`, RECORD_WRONG_TYPE).
    // The buyer holds the /3 it signed against the pool for the first order (0.25 in its view), under the open bid's
    // default reputation floor of 0.5 (docs/matching.md "Whom an order takes"): this order takes any claimant.
    const next = await runJob(buyer, { ...order(300), order: { minReputation: 0 } });
    assert.equal(next.result.status, 'completed', JSON.stringify(next.result.attempts));
    const receipt = next.events.find((e) => e.e === 'receipt')!.receipt as { signer: string; record: { provider: string; status: string } };
    assert.deepEqual([receipt.signer, receipt.record.provider, receipt.record.status], [m.m1.did, pool, 'completed']);
    for (const n of [m.m1, m.m2!]) {
      await waitFor(`${n.name} to count m2's completed job`, async () => (await view(n)).members.find((x) => x.did === m.m2!.did)!.jobs.completed === 1, 20_000);
    }
  });
});

test('an order designated to the pool is claimed by a member for the pool and completes', async () => {
  await withLogs(c, async () => {
    const run = await runJob(buyer, { ...order(300), order: { designated: pool } });
    assert.equal(run.events.find((e) => e.e === 'order-check'), undefined, 'the pre-post check finds the pool’s members');
    assert.equal(run.result.status, 'completed', JSON.stringify(run.result.attempts));
    const receipt = run.events.find((e) => e.e === 'receipt')!.receipt as { signer: string; record: { provider: string } };
    assert.deepEqual([receipt.signer, receipt.record.provider], [m.m1!.did, pool]);
  });
});
