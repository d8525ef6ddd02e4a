/**
 * Refusals that follow from the puller's own view of the roster do not stop its catch-up (third-round review; docs/pools.md
 * "Catching up on the trail"). C, an honest member, holds 40 of X's dispatches under R1, one of them closed by a
 * POOL_COORDINATOR_LOST receipt of L's (a member of R1). A pulls C's trail:
 * - on R2, which removed L: L's receipt is judged by the rosters A holds from the dispatch's onward (R1 lists L), as C
 *   judged it live: every entry is kept, the lost one closed `failed`; and a member on R2 takes the same receipt live
 *   when another relays it (`op: closed`, serve.ts), so the two agree;
 * - on R1, the receipt signed by N of R3, a roster A does not hold: that entry is skipped (counted, not held against C),
 *   and every other entry, past it too, is kept; the next period asks C again and keeps no more nor fewer.
 * Before, either refusal stopped the pull from C (and so from every honest member) for the period, every period.
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type Job, type Offer, type PoolRoster } from '../../../src/records/kinds.js';
import { receiptFor } from '../../../src/roles/provider/provider.js';
import { TrailSync, SYNC_PERIOD_MS } from '../../../src/roles/pool-member/sync.js';
import type { PoolMemberDeps } from '../../../src/roles/pool-member/member.js';
import { DispatchTrail } from '../../../src/pools/trail.js';
import { openDb, sub, closeDb } from '../../../src/store/db.js';
import { signerFrom } from '../records/fixtures.js';
import { Rig, MEMBERS, clock, job, offer, type World } from './member-rig.js';
import { POOL, didOf, keyOf, outsider, proof, roster } from './helpers.js';

const rig = new Rig();
const dir = mkdtempSync(join(tmpdir(), 'c0-sync-view-'));
const [X, C, A] = MEMBERS as [string, string, string];
const L = didOf(outsider);
const nKey = signerFrom(46);
const N_ = didOf(nKey);
const R1 = roster({ seq: 1, members: [X, C, A, L].map((did) => ({ did })) });
const R2 = roster({ seq: 2, members: [X, C, A].map((did) => ({ did })) });
const R3 = roster({ seq: 3, members: [X, C, A, L, N_].map((did) => ({ did })) });
const COUNT = 40;
const LOST = { code: 'POOL_COORDINATOR_LOST', message: 'the coordinator is gone' };

function world(): World {
  return { members: new Map(), down: new Set(), runs: new Map(), published: [], kept: new Map() };
}

/** C holding COUNT dispatches of X's it took under R1, restarted on `onRoster` (its store kept); the jobs in key order. */
async function honest(name: string, onRoster: Opened<PoolRoster>): Promise<{ c: Awaited<ReturnType<Rig['addMember']>>; jobs: Array<{ j: Opened<Job>; o: Opened<Offer> }> }> {
  const c = await rig.addMember(world(), name, C, { roster: R1 });
  const jobs: Array<{ j: Opened<Job>; o: Opened<Offer> }> = [];
  for (let i = 0; i < COUNT; i++) {
    const { job: j } = job();
    const o = offer(j, X);
    const d = seal(T.poolDispatch, { pool: POOL, roster: R1.address, job: j.address, offer: o.address, member: A, coordinator: X, epoch: 0, issuedAt: clock() }, keyOf(X));
    const r = await c.serve({ op: 'trail', dispatch: d.bytes, job: j.bytes, offer: o.bytes }, X);
    assert.equal(r.ok, 'yes', JSON.stringify(r));
    jobs.push({ j, o });
  }
  jobs.sort((x, y) => (x.j.address < y.j.address ? -1 : 1));
  return { c: onRoster === R1 ? c : await rig.addMember(world(), name, C, { roster: onRoster }), jobs };
}

function lostReceipt(x: { j: Opened<Job>; o: Opened<Offer> }, under: Opened<PoolRoster>, by: ReturnType<typeof signerFrom>): Uint8Array {
  const base = receiptFor(x.j, x.o, { startedAt: clock(), completedAt: clock(), energy: { uj: 0, grade: 'Estimator' }, failure: LOST });
  return seal(T.receipt, { ...base, provider: POOL, pool: proof(under, by) }, by).bytes;
}

/** A pulling from C alone, on `inUse`, holding `rosters`. */
async function puller(name: string, c: { serve: (f: Record<string, unknown>, from: string) => Promise<unknown> }, inUse: Opened<PoolRoster>, rosters: Array<Opened<PoolRoster>>) {
  const db = await openDb(join(dir, name));
  const trail = await DispatchTrail.open(sub(db, 'pool-trail'), clock);
  const warns: string[] = [];
  const log = pino({ level: 'debug' }, { write: (l: string) => void (JSON.parse(l).level >= 40 && warns.push(l)) });
  const held = new Map(rosters.map((x) => [x.address, x]));
  const deps = { did: A, options: { livenessMs: 1000, maxOpenDispatches: 1000 }, monoClock: clock, clock, log, trail, call: async (_to: string, f: Record<string, unknown>) => c.serve(f, A) } as unknown as PoolMemberDeps;
  const sync = new TrailSync(deps, { pool: POOL, roster: () => inUse, rosterOf: (a) => held.get(a), live: () => [C] });
  const period = async () => {
    sync.heard(C, 'out');
    sync.seen([C]);
    return sync.step(Infinity, 60_000);
  };
  return { sync, trail, warns, period, close: () => closeDb(db) };
}

describe('a refusal that follows from the puller’s roster view does not stop its catch-up', () => {
  after(async () => {
    await rig.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a lost receipt by a member the roster in use removed: kept as the member that took it kept it, live and catching up', async () => {
    const { c, jobs } = await honest('left-signer', R1);
    const lost = jobs[Math.floor(COUNT / 4)]!;
    const receipt = lostReceipt(lost, R1, outsider);
    assert.equal((await c.serve({ op: 'closed', job: lost.j.address, coordinator: X, receipt }, L)).ok, 'yes', 'C (on R1) takes L’s receipt');
    const a = await puller('left-signer', c, R2, [R1, R2]);
    const res = await a.period();
    assert.deepEqual(res, { kept: COUNT, closed: 0, refused: 0 });
    assert.equal((await a.trail.page(undefined, 10_000)).length, COUNT, 'every entry kept');
    assert.equal((await a.trail.get(lost.j.address))?.state, 'failed', 'the lost one closed as C holds it');
    assert.deepEqual(a.warns, []);
    await a.close();
    // Live: a member on R2 takes the same receipt relayed by a member of R2 (as catching up does).
    const { c: d, jobs: others } = await honest('left-signer-live', R2);
    const relayed = others[0]!;
    const r = await d.serve({ op: 'closed', job: relayed.j.address, coordinator: X, receipt: lostReceipt(relayed, R1, outsider) }, A);
    assert.equal(r.ok, 'yes', JSON.stringify(r));
  });

  test('a lost receipt by a member of a roster the puller does not hold: that entry skipped, the rest kept past it, and no stop', async () => {
    const { c, jobs } = await honest('unheld-signer', R3);
    const lost = jobs[Math.floor(COUNT / 4)]!;
    assert.equal((await c.serve({ op: 'closed', job: lost.j.address, coordinator: X, receipt: lostReceipt(lost, R3, nKey) }, N_)).ok, 'yes', 'C (on R3) takes N’s receipt');
    const a = await puller('unheld-signer', c, R1, [R1]);
    const res = await a.period();
    assert.deepEqual(res, { kept: COUNT - 1, closed: 0, refused: 1 });
    assert.equal((await a.trail.page(undefined, 10_000)).length, COUNT - 1, 'every other entry kept, those past it too');
    assert.equal(await a.trail.get(lost.j.address), undefined, 'the one it cannot judge is not kept');
    assert.ok(a.warns.every((l) => !JSON.parse(l).msg.includes('not pulled from')), 'C is not held at fault');
    assert.deepEqual(a.sync.due, [], 'C listed to its end');
    clock.advance(SYNC_PERIOD_MS);
    assert.deepEqual(await a.period(), { kept: 0, closed: 0, refused: 1 }, 'the next period: the same entry skipped, nothing else to keep');
    await a.close();
  });
});
