/**
 * A pooled provider of three separate `c0mpute start` processes (issue #13):
 * made with the `pool-provider` CLI (init, roster, join), serving a buyer as one
 * provider. A job lands on the member its hash picks and settles to the price;
 * whitespace output gets a failed receipt and no settlement; the size gate keeps
 * the pool from quoting; the elected coordinator killed mid-job leaves a
 * dispatch trail the next one closes. Lean: one cluster, generous polling.
 * Across the same processes: the min-price and input-size gates keep the pool
 * from quoting (each refusal counted by gate on the coordinator), and a hostile
 * in-process node's pooled adverts — a forged roster (tampered, or signed by
 * another key) and a signer not on the real roster — are refused by the buyer
 * with their codes, leaving the pool one market entry that still serves jobs.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Decimal } from 'decimal.js';
import { selectMember } from '../../src/pools/choice.js';
import { Ed25519Signer, T, compareDids, decodeCanonical, encodeCanonical, hashHex, open, seal, sealRaw, type Opened, type PoolRoster } from '../../src/records/index.js';
import { peerIdFromDid } from '../../src/node/peer-id.js';
import { shardOf, topicFor } from '../../src/net/topics.js';
import { startNode } from './net-helpers.js';
import { createPool } from './pool-helpers.js';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, get, joinEnvelope, metricsText, providerConfig, recordVerdicts, runJob, sleep, splitEnvelope, waitFor, waitForMarket, withLogs, type NodeProc, type RunOutcome } from './node-helpers.js';

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
  // Priced under the pool's minimum: the only way a job can afford the member's price and still be under pool.minPrice.
  base.provider.workloads['test.cheap'] = { executor: { type: 'builtin', name: 'builtin.sha256' }, price: { amount: '0.001', currency: 'USD' }, duration: { baseMs: 200 } };
  const dir = join(c.root, names[i]!);
  // The gates: every other job here pays 0.009 USD with an 11-byte input, so they pass.
  const gates = { maxSizeParam: 100, minPrice: { amount: '0.005', currency: 'USD' }, maxInputBytes: 1024 };
  // livenessMs 1000: a member unheard for 3 s is not live. At 400 (1.2 s) a loaded CI machine could delay a ping past
  // it, and a member briefly not live moves the hash's choice (the first test assumes all three live at dispatch).
  // memberTimeoutMs 5000: the killed coordinator's dispatch is failed 5 s + 3 × livenessMs after it (recovery's
  // budget and grace), and every other job here is a few rounds of sha256, done well within it.
  return { ...base, pool: { roster: join(c.root, 'roster.cose'), membership: join(dir, 'membership.cose'), livenessMs: 1000, memberTimeoutMs: 5000, ...gates } };
}

const spec = (workload: string, params: string, input = 'pooled work', maxPrice = '0.01') => ({ workload, params, maxPrice: { amount: maxPrice, currency: 'USD' }, deadlineMs: 60_000, input: Buffer.from(input).toString('base64') });
const views = () => Promise.all(members.filter((m) => m.child.exitCode === null && m.child.signalCode === null).map((m) => get<PoolView>(m, '/v1/pool')));

before(async () => {
  await withLogs(c, async () => {
    const dirs = names.map((n) => c.dataDir(n));
    ({ pool } = await createPool(c, dirs, { epochMs: 4000, weight: (i) => i + 1 }));
    // A node the roster does not list cannot join (POOL_NOT_MEMBER, no file written).
    const outsider = c.dataDir('outsider');
    // (Checked while m1 starts: the refusal reads only the roster file.)
    const [refused, m1] = await Promise.all([c0mpute(outsider.dir, ['pool-provider', 'join', '--roster', join(c.root, 'roster.cose'), '--out', join(outsider.dir, 'membership.cose')]), c.start('m1', memberConfig(0, []))]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.err + refused.out, /POOL_NOT_MEMBER/);
    const m2 = await c.start('m2', memberConfig(1, [bootstrapAddr(m1)]));
    const m3 = await c.start('m3', memberConfig(2, [bootstrapAddr(m1), bootstrapAddr(m2)]));
    members = [m1, m2, m3];
    // enoughOffers 1: the pool is the one provider here, so its offer ends the window (a run that gets none waits all of it).
    buyer = await c.start('b', buyerConfig({ bootstrap: members.map(bootstrapAddr), collectWindowMs: 1500, enoughOffers: 1 }));
    await waitForMarket(buyer, 1, members);
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
  let last: unknown;
  const v = await waitFor('the trail to close on the members', async () => {
    const all = await views();
    last = all;
    return all.every((x) => x.members.find((m) => m.did === chosen)!.jobs.completed === 1) ? all : false;
  }).catch((e: Error) => {
    // say what the members saw: who ran it, and who each thinks is live and coordinating (the hash assumes all three live)
    throw new Error(`${e.message}; chosen ${chosen}, the members' views: ${JSON.stringify(last)}`);
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
  // The buyer tries a pool once (docs/pools.md "Failover and epoch changes"): not a second coordinator's offer
  // as well, whose dispatch the member would refuse (POOL_ALREADY_RUN: it runs a job once). One receipt, the guard's.
  const codes = run.events.filter((e) => e.e === 'receipt').map((e) => (e.receipt as { record: { provider: string; status: string; failure?: { code: string } } }).record);
  assert.equal(codes.length, 1, JSON.stringify(codes));
  assert.equal(codes[0]!.status, 'failed');
  assert.equal(codes[0]!.provider, pool);
  assert.equal(codes[0]!.failure?.code, 'POOL_OUTPUT_EMPTY');
  const attempts = run.result.attempts as unknown[];
  assert.equal(attempts.length, 1, JSON.stringify(attempts));
  const v = await views();
  const earned = v[0]!.members.reduce((s, m) => s.add(m.earned.USD ?? '0'), new Decimal(0));
  assert.ok(earned.eq('0.009'), 'only the first job settled');
});

test('the size gate: the pool does not quote a job over pool.maxSizeParam', async () => {
  const before = await refusals('POOL_GATE_SIZE_PARAM');
  const run = await runJob(buyer, spec('test.blank', '{"maxTokens":101}'));
  assert.equal(run.result.status, 'no-offers');
  await waitFor('the coordinator to count the refusal by its gate', async () => (await refusals('POOL_GATE_SIZE_PARAM')) > before, 30_000);
});

test('c0mpute market: the presence line says its providers are the pool’s members, the pool’s entry gives their free slots together', async () => {
  // presence is per machine (each member publishes its own): three members present are three providers live, while the
  // market lists the pool once; before, "3 providers live, 6 free slots" sat above the pool's "2 free slots" (QA qaPnet F8)
  const m = await waitFor('the buyer to hear every member’s presence', async () => {
    const v = await get<{ presence: { live: number; freeSlots: number; pooled?: { members: number; pools: number } }; adverts: Array<{ pool?: { present?: number; freeSlots?: number } }> }>(buyer, '/v1/market');
    return v.presence.live === 3 && v.adverts[0]?.pool?.present === 3 ? v : false;
  }, 45_000);
  assert.deepEqual(m.presence.pooled, { members: 3, pools: 1 });
  assert.equal(m.adverts[0]!.pool!.freeSlots, m.presence.freeSlots);
  const r = await c0mpute(buyer.dir, ['market']);
  assert.equal(r.code, 0, r.err);
  assert.match(r.out, /^presence {2}3 providers live \(3 of them members of 1 pool\), \d+ free slots?$/m);
  const slots = /, (\d+) free slots?$/m.exec(r.out)![1];
  assert.match(r.out, new RegExp(`pool of 3 members seen {2}advert live {2}present \\(3 members\\), ${slots} free slots? `));
});

/** c0mpute_pool_refusals_total{gate} summed over the live members (only the elected coordinator checks the gates at quoting). */
async function refusals(gate: string): Promise<number> {
  const texts = await Promise.all(members.filter((m) => m.child.exitCode === null && m.child.signalCode === null).map((m) => metricsText(m)));
  const re = /^c0mpute_pool_refusals_total\{([^}]*)\} (\S+)$/gm;
  return texts.reduce((n, t) => n + [...t.matchAll(re)].filter((m) => m[1]!.includes(`gate="${gate}"`)).reduce((k, m) => k + Number(m[2]), 0), 0);
}

test('the min-price gate across processes: a job paying under pool.minPrice gets no pool offer (POOL_GATE_MIN_PRICE)', async () => {
  const before = await refusals('POOL_GATE_MIN_PRICE');
  // 0.004 USD affords the member's own price for test.cheap (0.001) but is under the pool's 0.005.
  const run = await runJob(buyer, spec('test.cheap', '1', 'pooled work', '0.004'));
  assert.equal(run.result.status, 'no-offers', JSON.stringify(run.result.attempts));
  await waitFor('the coordinator to count the refusal by its gate', async () => (await refusals('POOL_GATE_MIN_PRICE')) > before, 30_000);
  // A buyer offering more than the minimum does not make the member's own price (0.001) acceptable: the gate applies to
  // the price the pool would quote, so no offer is made (rather than an offer the coordinator then refuses at run).
  const mid = await refusals('POOL_GATE_MIN_PRICE');
  const rich = await runJob(buyer, spec('test.cheap', '1'));
  assert.equal(rich.result.status, 'no-offers', JSON.stringify(rich.result.attempts));
  await waitFor('the coordinator to count that refusal too', async () => (await refusals('POOL_GATE_MIN_PRICE')) > mid, 30_000);
});

test('the input-size gate across processes: a job whose input is over pool.maxInputBytes gets no pool offer (POOL_GATE_INPUT_TOO_LARGE)', async () => {
  const before = await refusals('POOL_GATE_INPUT_TOO_LARGE');
  const run = await runJob(buyer, spec('builtin.sha256', '1', 'x'.repeat(1025)));
  assert.equal(run.result.status, 'no-offers', JSON.stringify(run.result.attempts));
  await waitFor('the coordinator to count the refusal by its gate', async () => (await refusals('POOL_GATE_INPUT_TOO_LARGE')) > before, 30_000);
});

test('a hostile node’s pooled adverts — a forged roster, a signer not on the roster — are refused; the pool stays one entry and serves', async () => {
  await withLogs(c, async () => {
    const x = await startNode({ syncOnConnect: [] });
    c.onDestroy(() => x.stop());
    await x.dial(buyer.addrs[0]!);
    const buyerPeer = peerIdFromDid(buyer.did).toString();
    await waitFor('the hostile node to share the advert topics with the buyer', () => x.topicPeers('advert').includes(buyerPeer), 30_000);
    const real = open(readFileSync(join(c.root, 'roster.cose')), T.poolRoster) as Opened<PoolRoster>;
    assert.equal(real.signer, pool);
    const now = Date.now();
    const base = { seq: 1, issuedAt: now, expiresAt: now + 600_000, workloads: ['builtin.sha256'], tier: 'standard' as const, hardware: { cpuCores: 64, memoryMiB: 65_536 }, prices: [{ workload: 'builtin.sha256', unit: 'job' as const, price: { amount: '0.0001', currency: 'USD' } }] };
    // A pooled advert signed by x with this roster: x's own membership of it, the advert sealed raw (seal() would refuse it).
    const pooled = (rosterBytes: Uint8Array, rosterPool: string, seq: number) => {
      const membership = seal(T.poolMembership, { pool: rosterPool, roster: hashHex(rosterBytes), seq, status: 'member', signedAt: now }, x.signer);
      const core = decodeCanonical(splitEnvelope(seal(T.advert, base, x.signer).bytes).payload) as Record<string, unknown>;
      core.pool = { roster: rosterBytes, membership: membership.bytes };
      return sealRaw(T.advert, encodeCanonical(core as never), x.signer);
    };
    // (a) forged rosters: the real one with x added to its members after signing (the pool's signature kept) ...
    const parts = splitEnvelope(real.bytes);
    const rcore = decodeCanonical(parts.payload) as { members: Array<Record<string, unknown>> };
    rcore.members = [...rcore.members, { ...rcore.members[0]!, did: x.did }].sort((a, b) => compareDids(a.did as string, b.did as string)); // in DID order: only the signature is wrong
    const tampered = joinEnvelope({ ...parts, payload: encodeCanonical(rcore as never) });
    // ... and the real members plus x, signed by another key (x's membership names the real pool)
    const other = seal(T.poolRoster, { ...real.record, members: [...real.record.members, { ...real.record.members[0]!, did: x.did }].sort((a, b) => compareDids(a.did, b.did)) }, Ed25519Signer.generate());
    const otherKey = pooled(other.bytes, pool, other.record.seq);
    // (b) the pool's real roster, x's own countersignature of it: x is not on it.
    const notMember = pooled(real.bytes, pool, real.record.seq);
    const want = ['advert/reject/POOL_ROSTER_INVALID', 'advert/reject/POOL_MEMBERSHIP_WRONG_ROSTER', 'advert/reject/POOL_NOT_MEMBER'];
    const seen = recordVerdicts(await metricsText(buyer));
    assert.ok(want.every((w) => !seen.has(w)), 'no such verdict before');
    for (const bytes of [pooled(tampered, pool, real.record.seq), otherKey, notMember]) {
      await x.libp2p.services.pubsub.publish(topicFor('advert', 'public', shardOf('builtin.sha256')), bytes);
    }
    await waitFor('the buyer to refuse each with its code', async () => {
      const v = recordVerdicts(await metricsText(buyer));
      return want.every((w) => v.has(w));
    }, 30_000);
    // The market still holds the pool once, with its three real members, and nothing of x.
    const m = await get<{ total: number; adverts: Array<{ provider: string; signer: string; pool?: { did: string; members: number } }> }>(buyer, '/v1/market');
    assert.equal(m.total, 1);
    assert.equal(m.adverts[0]!.provider, pool);
    assert.equal(m.adverts[0]!.pool?.members, 3);
    assert.ok(m.adverts.every((a) => a.signer !== x.did));
    // A job still goes through the pool.
    const run = await runJob(buyer, spec('builtin.sha256', '2'));
    assert.equal(run.result.status, 'completed', JSON.stringify(run.result.attempts));
    const receipt = run.result.receipt as { signer: string; record: { provider: string } };
    assert.equal(receipt.record.provider, pool);
    assert.ok(members.some((mm) => mm.did === receipt.signer));
  });
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

test('restarted with a short history.keepDays, a member drops the closed dispatch trail of jobs past it: its status counts the rest', async () => {
  const total = (v: PoolView) => v.members.reduce((n, m) => n + m.jobs.dispatched + m.jobs.completed + m.jobs.failed, 0);
  // After the kill above: the live members agree on a live coordinator, and the job the killed one dispatched (a 6 s
  // sleep, ended at the member's pool.memberTimeoutMs) has left its member's slot. Until then that member, with its one slot taken, quotes nothing if it is the
  // coordinator (no-offers) and refuses the dispatch if it is not (POOL_MEMBER_BUSY).
  const live = () => members.filter((x) => x.child.exitCode === null && x.child.signalCode === null);
  await waitFor('the live members to agree on a live coordinator, every slot free', async () => {
    const v = await views();
    const running = await Promise.all(live().map(async (x) => (await get<{ provider?: { running: number } }>(x, '/v1/status')).provider?.running ?? 0));
    return new Set(v.map((x) => x.coordinator)).size === 1 && v[0]!.members.some((mm) => mm.did === v[0]!.coordinator && mm.live) && running.every((n) => n === 0);
  }, 45_000);
  const short = await runJob(buyer, { ...spec('builtin.sha256', '3', 'short-lived'), deadlineMs: 8_000 });
  assert.equal(short.result.status, 'completed', JSON.stringify(short.result.attempts));
  const m = live()[0]!;
  const before = await waitFor('the member to hold the short job in its trail', async () => {
    const v = await get<PoolView>(m, '/v1/pool');
    return total(v) > 0 ? v : false;
  }, 30_000);
  // Past the short job's deadline and its second of keepDays, counted from the deadline the job carries (a fixed 9 s
  // from here also waited out the run and the trail above, already part of the 8 s).
  const deadline = (short.result.job as { record: { deadline: number } }).record.deadline;
  await sleep(Math.max(0, deadline + 1_500 - Date.now()));
  const again = await c.restart(m, { ...m.config, history: { keepDays: 1 / 86_400 } });
  members = members.map((x) => (x === m ? again : x));
  // either message: the pass that drops all of the history held (every job here is past a second) says so at warn,
  // once a peer's record has confirmed the clock (docs/node.md "Job history")
  await waitFor('the member to drop the trail past history.keepDays', () => readFileSync(again.log, 'utf8').includes('"msg":"dropped job history past history.keepDays'), 30_000);
  const after = await get<PoolView & { keepDays?: number }>(again, '/v1/pool');
  assert.equal(after.keepDays, 1 / 86_400, 'the status says over what window it counts');
  assert.ok(total(after) < total(before), `the closed entries past keepDays are gone (${total(before)} → ${total(after)})`);
});
