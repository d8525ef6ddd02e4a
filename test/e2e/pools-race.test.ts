/**
 * Two coordinators that both believe they are elected, as separate `c0mpute
 * start` processes (issue #13 "Tests (real processes)"; docs/pools.md "Failure
 * modes, tested"). A real partition: m1 and m2 refuse each other's connections
 * (network.allowlist), m3 talks to both. m1 sees {m1, m3} live and m2 sees
 * {m2, m3}; the test waits for an epoch in which each ranks first in its own view
 * (the election computed here with the spec's rule). The test is the buyer (an
 * in-process libp2p node with its own key): it pushes one job to both, gets an
 * offer from each, and runs it with each. The job needs 6 cores, which only m3
 * has, so both coordinators choose m3 (the spec's formula over the active list);
 * m3 runs it once: the first coordinator's receipt is completed with the right
 * output, the second's dispatch is refused POOL_ALREADY_RUN.
 * Then the slots: m3 (one slot) runs a slow job m1 dispatched; a second job m2
 * dispatches meanwhile is refused POOL_MEMBER_BUSY (work dispatched to a member
 * runs inside its provider slots), and the slot is given back after.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { multiaddr } from '@multiformats/multiaddr';
import { coordinatorRanking } from '../../src/pools/choice.js';
import { pushJob } from '../../src/node/job-push.js';
import { select, signSelection } from '../../src/market/index.js';
import { EXEC_PROTOCOL, execExchange, parseExecFrame } from '../../src/roles/exec-protocol.js';
import { hashHex } from '../../src/records/address.js';
import { open, seal, T, type Advert, type Job, type Offer, type Opened, type Receipt } from '../../src/records/index.js';
import { Ed25519Signer } from '../../src/records/ed25519.js';
import { didFromPublicKey } from '../../src/records/did.js';
import type { Network } from '../../src/net/node.js';
import { startNode } from './net-helpers.js';
import { createPool } from './pool-helpers.js';
import { Cluster, bootstrapAddr, get, providerConfig, sha256Rounds, sleep, waitFor, withLogs, type NodeProc } from './node-helpers.js';

const c = new Cluster('pools-race');
const names = ['m1', 'm2', 'm3'];
// Short epochs: the tests wait for an epoch with a given election (a quarter of them for both at once), so the epoch length is most of the wait.
const EPOCH_MS = 2000;
/** Time an epoch must still have when jobs are pushed in it: the members quote within it (pushed offers come back within a few hundred ms). */
const QUOTE_MS = 1500;
const buyerKey = Ed25519Signer.generate();
const BUYER = didFromPublicKey(buyerKey.publicKey);
const m: Record<string, NodeProc> = {};
let w: (Network & { signer: Ed25519Signer }) | undefined;
let pool = '';

interface PoolView {
  members: Array<{ did: string; live: boolean }>;
  failures: Record<string, number>;
}

before(async () => {
  await withLogs(c, async () => {
    const dirs = names.map((n) => c.dataDir(n));
    ({ pool } = await createPool(c, dirs, { epochMs: EPOCH_MS }));
    const cfg = (i: number, boot: string[], allowlist?: string[]) => ({
      ...providerConfig({ bootstrap: boot, price: '0.009', cpuCores: 4 + i, ...(allowlist ? { allowlist } : {}) }),
      pool: { roster: join(c.root, 'roster.cose'), membership: join(dirs[i]!.dir, 'membership.cose'), livenessMs: 500, memberTimeoutMs: 20_000 },
    });
    m.m3 = await c.start('m3', cfg(2, []));
    // The partition: m1 and m2 each admit only m3 and the buyer.
    // (m1 and m2 both bootstrap from m3 only: they start together.)
    [m.m1, m.m2] = await Promise.all([c.start('m1', cfg(0, [bootstrapAddr(m.m3)], [dirs[2]!.did, BUYER])), c.start('m2', cfg(1, [bootstrapAddr(m.m3)], [dirs[2]!.did, BUYER]))]);
    w = await startNode({ syncOnConnect: [] }, buyerKey);
    await Promise.all([m.m1, m.m2].map((n) => w!.libp2p.dial(multiaddr(bootstrapAddr(n)))));
    const live = async (n: NodeProc) => new Set((await get<PoolView>(n, '/v1/pool')).members.filter((x) => x.live).map((x) => x.did));
    await waitFor('m1 and m2 to see themselves and m3 live, not each other', async () => {
      const [l1, l2, l3] = await Promise.all([live(m.m1!), live(m.m2!), live(m.m3!)]);
      return l1.size === 2 && l1.has(m.m3!.did) && l2.size === 2 && l2.has(m.m3!.did) && l3.size === 3;
    }, 45_000);
    // The gossip for the pooled adverts is not needed: the job is pushed and the offers come back with their adverts.
    await sleep(500);
  });
});

after(async () => {
  await w?.stop();
  await c.destroy();
});

function job(input: Uint8Array, workload = 'builtin.sha256', params = '3'): Opened<Job> {
  const now = Date.now();
  return seal(
    T.job,
    { workload, requirements: { cpuCores: 6 }, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: now, deadline: now + 120_000, timeoutMs: 60_000, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no', params, nonce: new Uint8Array(randomBytes(8)) },
    buyerKey,
  ) as Opened<Job>;
}

/** Select `offer` (with its advert) and run the job on its signer over exec/1; the receipt it sends and the output. */
async function runOn(j: Opened<Job>, got: { offer: Opened<Offer>; advert: Opened<Advert> }, input: Uint8Array): Promise<{ receipt: Opened<Receipt>; output?: string }> {
  const result = select({ job: j, adverts: [got.advert], offers: [got.offer], policy: 'cheapest', now: Date.now() });
  assert.ok(result.ok, JSON.stringify(result));
  const selection = signSelection({ result, job: j, signer: buyerKey });
  const ch = await w!.openStream(got.offer.signer, EXEC_PROTOCOL, { limits: { deadlineMs: 60_000 } });
  let output: string | undefined;
  for await (const raw of execExchange(ch, { t: 'exec', selection: selection.bytes, job: j.bytes, offer: got.offer.bytes, input })) {
    const f = parseExecFrame(raw);
    if (f.t === 'output') output = Buffer.from(f.data).toString();
    if (f.t === 'refused') assert.fail(`refused: ${f.code}`);
    if (f.t === 'receipt') return { receipt: open(f.receipt, T.receipt), ...(output === undefined ? {} : { output }) };
  }
  assert.fail('no receipt');
}

/** Wait for an epoch in which m1 leads {m1, m3} and m2 leads {m2, m3} (with time left to quote). */
async function bothElected(): Promise<void> {
  for (;;) {
    const now = Date.now();
    const e = Math.floor(now / EPOCH_MS);
    const both = coordinatorRanking(pool, e, [m.m1!.did, m.m3!.did])[0] === m.m1!.did && coordinatorRanking(pool, e, [m.m2!.did, m.m3!.did])[0] === m.m2!.did;
    if (both && (e + 1) * EPOCH_MS - now > QUOTE_MS) return;
    await sleep((e + 1) * EPOCH_MS - now + 100);
  }
}

test('two coordinators that both believe they are elected choose the same member, which runs the job once', async () => {
  await withLogs(c, async () => {
    await bothElected();
    const input = new Uint8Array(randomBytes(64));
    const j = job(input);
    const [a, b] = await Promise.all([m.m1!, m.m2!].map((n) => pushJob(w!, n.did, j, 10_000, Date.now, 30_000)));
    assert.ok(a && 'offer' in a && b && 'offer' in b, 'both coordinators quoted for the pool');
    assert.equal(a.advert.record.pool !== undefined && b.advert.record.pool !== undefined, true);
    // Both choose by the spec's formula over the members that can run the job: only m3.
    const first = await runOn(j, a, input);
    assert.equal(first.receipt.signer, m.m1!.did);
    assert.equal(first.receipt.record.provider, pool);
    assert.equal(first.receipt.record.status, 'completed');
    assert.equal(first.output, sha256Rounds(input, 3));
    const second = await runOn(j, b, input);
    assert.equal(second.receipt.signer, m.m2!.did);
    assert.equal(second.receipt.record.provider, pool);
    assert.equal(second.receipt.record.status, 'failed');
    assert.equal(second.receipt.record.failure?.code, 'POOL_ALREADY_RUN', 'm3 runs a job once, whoever asks');
  });
});

test('a member at capacity refuses a dispatch (POOL_MEMBER_BUSY): dispatched work runs inside its provider slots', async () => {
  await withLogs(c, async () => {
    await bothElected();
    const slowIn = new Uint8Array(randomBytes(16));
    const quickIn = new Uint8Array(randomBytes(16));
    const slow = job(slowIn, 'builtin.sleep', '6000');
    const quick = job(quickIn);
    const [a, b] = await Promise.all([pushJob(w!, m.m1!.did, slow, 10_000, Date.now, 30_000), pushJob(w!, m.m2!.did, quick, 10_000, Date.now, 30_000)]);
    assert.ok(a && 'offer' in a && b && 'offer' in b, 'both coordinators quoted');
    const running = runOn(slow, a, slowIn);
    await waitFor('m3 to run the slow job in its slot', async () => (await get<{ provider?: { running: number } }>(m.m3!, '/v1/status')).provider?.running === 1, 20_000, 50);
    const refused = await runOn(quick, b, quickIn);
    assert.equal(refused.receipt.signer, m.m2!.did);
    assert.equal(refused.receipt.record.status, 'failed');
    assert.equal(refused.receipt.record.failure?.code, 'POOL_MEMBER_BUSY');
    const done = await running;
    assert.equal(done.receipt.record.status, 'completed');
    await waitFor('m3 to give its slot back', async () => (await get<{ provider?: { running: number } }>(m.m3!, '/v1/status')).provider?.running === 0);
  });
});

test('a pushed member that is not its pool’s coordinator names the coordinator instead of quoting (job-push/1 redirect)', async () => {
  await withLogs(c, async () => {
    // m3 sees all three live: its coordinator is the first of the spec's ranking over them. Wait for an epoch led by another.
    const all = [m.m1!.did, m.m2!.did, m.m3!.did];
    for (;;) {
      const now = Date.now();
      const e = Math.floor(now / EPOCH_MS);
      const first = coordinatorRanking(pool, e, all)[0];
      if (first === m.m3!.did || (e + 1) * EPOCH_MS - now < QUOTE_MS) {
        await sleep((e + 1) * EPOCH_MS - now + 100);
        continue;
      }
      const r = await pushJob(w!, m.m3!.did, job(new Uint8Array(randomBytes(16))), 10_000, Date.now, 30_000);
      if (Math.floor(Date.now() / EPOCH_MS) !== e) continue; // the epoch turned while it answered: ask again
      assert.deepEqual(r, { redirect: first });
      return;
    }
  });
});
