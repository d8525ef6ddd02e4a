/**
 * A pooled provider of three separate `c0mpute start` processes (issue #13):
 * made with the `pool-provider` CLI (init, roster, join), serving a buyer as one
 * provider. A job lands on the member its hash picks and settles to the price;
 * whitespace output gets a failed receipt and no settlement; the size gate keeps
 * the pool from quoting; the elected coordinator killed mid-job leaves a
 * dispatch trail the next one closes. Lean: one cluster, generous polling.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Decimal } from 'decimal.js';
import { selectMember } from '../../src/pools/choice.js';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, get, providerConfig, runJob, sleep, waitFor, waitForMarket, withLogs, type NodeProc, type RunOutcome } from './node-helpers.js';

const c = new Cluster('pools');
const names = ['m1', 'm2', 'm3'];
let members: NodeProc[] = [];
let buyer: NodeProc;
let pool = '';

interface PoolView {
  pool: string;
  coordinator?: string;
  members: Array<{ did: string; live: boolean; jobs: { dispatched: number; completed: number; failed: number }; earned: Record<string, string> }>;
}

function memberConfig(i: number, boot: string[]): Record<string, unknown> {
  const base = providerConfig({ bootstrap: boot, price: '0.009', sleepBaseMs: 200, cpuCores: 4 + i }) as { provider: { workloads: Record<string, unknown> } } & Record<string, unknown>;
  base.provider.workloads['test.blank'] = { executor: { type: 'exec', command: ['sh', '-c', 'cat >/dev/null; printf "  \\n"'] }, price: { amount: '0.009', currency: 'USD' }, duration: { baseMs: 500 } };
  const dir = join(c.root, names[i]!);
  return { ...base, pool: { roster: join(c.root, 'roster.cose'), membership: join(dir, 'membership.cose'), livenessMs: 400, memberTimeoutMs: 8000, maxSizeParam: 100 } };
}

const spec = (workload: string, params: string, input = 'pooled work') => ({ workload, params, maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 60_000, input: Buffer.from(input).toString('base64') });
const views = () => Promise.all(members.filter((m) => m.child.exitCode === null && m.child.signalCode === null).map((m) => get<PoolView>(m, '/v1/pool')));

before(async () => {
  await withLogs(c, async () => {
    const dirs = names.map((n) => c.dataDir(n));
    const poolDir = join(c.root, 'poolkey');
    const init = await c0mpute(poolDir, ['pool-provider', 'init', '--pool-dir', poolDir]);
    assert.equal(init.code, 0, init.err);
    pool = /pool (did:key:\S+)/.exec(init.out)![1]!;
    const yaml = `members:\n${dirs.map((d, i) => `  - did: ${d.did}\n    weight: ${i + 1}\n    hardware: { cpuCores: ${4 + i}, memoryMiB: 16384 }\n`).join('')}`;
    writeFileSync(join(c.root, 'members.yaml'), yaml);
    const roster = await c0mpute(poolDir, ['pool-provider', 'roster', '--pool-dir', poolDir, '--members', join(c.root, 'members.yaml'), '--out', join(c.root, 'roster.cose'), '--epoch-ms', '4000']);
    assert.equal(roster.code, 0, roster.err);
    for (const d of dirs) {
      const j = await c0mpute(d.dir, ['pool-provider', 'join', '--roster', join(c.root, 'roster.cose'), '--out', join(d.dir, 'membership.cose')]);
      assert.equal(j.code, 0, j.err);
    }
    // A node the roster does not list cannot join (POOL_NOT_MEMBER, no file written).
    const outsider = c.dataDir('outsider');
    const refused = await c0mpute(outsider.dir, ['pool-provider', 'join', '--roster', join(c.root, 'roster.cose'), '--out', join(outsider.dir, 'membership.cose')]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.err + refused.out, /POOL_NOT_MEMBER/);
    const m1 = await c.start('m1', memberConfig(0, []));
    const m2 = await c.start('m2', memberConfig(1, [bootstrapAddr(m1)]));
    const m3 = await c.start('m3', memberConfig(2, [bootstrapAddr(m1), bootstrapAddr(m2)]));
    members = [m1, m2, m3];
    buyer = await c.start('b', buyerConfig({ bootstrap: members.map(bootstrapAddr), collectWindowMs: 1500 }));
    await waitForMarket(buyer, 1, members.map((m) => m.did));
    // The pool is one provider to the buyer: one market entry under the pool's DID, all three members' adverts seen.
    const m = await waitFor('the buyer to hold every member’s pooled advert', async () => {
      const v = await get<{ total: number; adverts: Array<{ provider: string; pool?: { did: string; members: number } }> }>(buyer, '/v1/market');
      return v.adverts[0]?.pool?.members === 3 ? v : false;
    }, 45_000);
    assert.equal(m.total, 1);
    assert.equal(m.adverts[0]!.provider, pool);
    assert.equal((await get<{ providersKnown: number }>(buyer, '/v1/status')).providersKnown, 1);
    // Every member sees every other live, so they agree on the coordinator.
    await waitFor('members to see each other live and agree', async () => {
      const v = await views();
      return v.every((x) => x.members.every((m) => m.live)) && new Set(v.map((x) => x.coordinator)).size === 1;
    }, 45_000);
  });
});

after(async () => {
  await c.destroy();
});

test('a job through the pool: the hash picks the member, the receipt is the pool’s, the settlement sums to the price', async () => {
  const run: RunOutcome = await runJob(buyer, spec('builtin.sha256', '3'));
  assert.equal(run.result.status, 'completed', JSON.stringify(run.result.attempts));
  const receipt = run.result.receipt as { signer: string; record: { provider: string; status: string; price: { amount: string } } };
  assert.equal(receipt.record.provider, pool);
  assert.ok(members.some((m) => m.did === receipt.signer));
  const jobAddr = (run.result.job as { address: string }).address;
  const chosen = selectMember(jobAddr, members.map((m) => m.did));
  const v = await waitFor('the trail to close on the members', async () => {
    const all = await views();
    return all.every((x) => x.members.find((m) => m.did === chosen)!.jobs.completed === 1) ? all : false;
  });
  const earned = v[0]!.members.reduce((s, m) => s.add(m.earned.USD ?? '0'), new Decimal(0));
  assert.ok(earned.eq(receipt.record.price.amount), `${earned.toFixed()} ≠ ${receipt.record.price.amount}`);
  // The operator's view through the CLI.
  const st = await c0mpute(members[0]!.dir, ['pool-provider', 'status', '--json']);
  assert.equal(st.code, 0, st.err);
  const s = JSON.parse(st.out) as PoolView & { nextCoordinator?: string };
  assert.equal(s.pool, pool);
  assert.ok(s.coordinator && s.nextCoordinator);
});

test('whitespace output: a failed receipt (POOL_OUTPUT_EMPTY), no settlement', async () => {
  const run = await runJob(buyer, spec('test.blank', '{}'));
  assert.equal(run.result.status, 'failed');
  // The buyer tries a pool once (docs/pools.md "Failover and epoch changes"); were a second coordinator's
  // offer ever tried, the member would refuse it (it runs a job once). The first receipt is the guard's.
  const codes = run.events.filter((e) => e.e === 'receipt').map((e) => (e.receipt as { record: { provider: string; status: string; failure?: { code: string } } }).record);
  assert.ok(codes.length >= 1 && codes.every((r) => r.status === 'failed' && r.provider === pool), JSON.stringify(codes));
  assert.equal(codes[0]!.failure?.code, 'POOL_OUTPUT_EMPTY');
  assert.ok(codes.slice(1).every((r) => r.failure?.code === 'POOL_ALREADY_RUN'));
  const v = await views();
  const earned = v[0]!.members.reduce((s, m) => s.add(m.earned.USD ?? '0'), new Decimal(0));
  assert.ok(earned.eq('0.009'), 'only the first job settled');
});

test('the size gate: the pool does not quote a job over pool.maxSizeParam', async () => {
  const run = await runJob(buyer, spec('test.blank', '{"maxTokens":101}'));
  assert.equal(run.result.status, 'no-offers');
});

test('the elected coordinator killed mid-job: the next one closes the job from the dispatch trail', async () => {
  const failedSeen = async () => Math.max(...(await views()).map((x) => x.members.reduce((n, m) => n + m.jobs.failed, 0)));
  const before = await failedSeen();
  let killed: NodeProc | undefined;
  const run = await runJob(buyer, spec('builtin.sleep', '6000'), (e) => {
    if (e.e === 'accepted' && !killed) {
      killed = members.find((m) => m.did === e.provider);
      // Past the dispatch (recorded and sent to the members right after `accepted`), before the work ends.
      void sleep(1500).then(() => killed && c.stop(killed, 'SIGKILL'));
    }
  });
  assert.notEqual(run.result.status, 'completed');
  assert.ok(killed, 'a coordinator took the job');
  members = members.filter((m) => m !== killed);
  await waitFor('a live member to close the orphaned dispatch as failed', async () => (await failedSeen()) > before, 60_000);
});
