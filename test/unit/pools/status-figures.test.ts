/**
 * The operator's figures (`pool-provider status`; src/roles/pool-member/status.ts TrailFigures) are kept up to date
 * as the trail is written, closed and pruned, instead of the whole trail being read and every outcome checked again
 * at each status (a member with a month of history held its event loop for tens of seconds, and the other members
 * took it for down). They must stay exactly what the full computation gives (status-reference.ts, the code status ran
 * before): compared on a random trail of signed history in every shape, through writes, closes, prunes and changes
 * of the rosters the member holds; the build yields to the event loop every chunk of jobs. What a status reads:
 * status-reads.test.ts.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type PoolMembership, type PoolRoster } from '../../../src/records/kinds.js';
import { closeDb, openDb, sub, type Db, type Sub } from '../../../src/store/db.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { C0Error } from '../../../src/errors.js';
import { DispatchTrail, RunLog, type TrailChange } from '../../../src/pools/trail.js';
import { TrailFigures, type FiguresContext, type PoolFigures } from '../../../src/roles/pool-member/status.js';
import { PoolMember, POOL_MEMBER_DEFAULTS } from '../../../src/roles/pool-member/member.js';
import { EVERY, FIXTURE_NOW, PoolFixture, drawShape, prng } from '../../../scripts/bench/pool-trail-fixture.js';
import { referenceFigures } from './status-reference.js';

const DAY = 24 * 3600_000;
const fx = new PoolFixture();

let dir: string;
let db: Db;
let n = 0;
const fresh = (name: string): Sub => sub(db, `${name}-${n++}`);

/** The figures as the reference shows them: per member of the pool. */
const shown = (f: PoolFigures) => ({ per: Object.fromEntries(fx.members.map((m) => [m, f.member(m)])), failures: f.failures, disputed: f.disputed, pending: f.pending });

describe('the operator’s pool figures, kept up to date', () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'c0-figures-'));
    db = await openDb(join(dir, 'db'));
  });
  after(async () => {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  });

  test('the trail tells its watchers each durable write: a fresh record (with the roster it kept the first time), a close that changed the entry, the jobs a prune dropped', async () => {
    const trail = await DispatchTrail.open(fresh('watch'), fakeClock(FIXTURE_NOW));
    const seen: TrailChange[] = [];
    const stop = trail.watch((c) => seen.push(c));
    const rnd = prng(1);
    const a = await fx.write(trail, 'open', rnd, FIXTURE_NOW);
    const b = await fx.write(trail, 'open', rnd, FIXTURE_NOW + 10 * DAY);
    assert.deepEqual(seen, [{ jobs: [a.job], roster: fx.r.address }, { jobs: [b.job] }]);
    seen.length = 0;
    await fx.close(trail, a.job, a.open[0]!, rnd);
    assert.equal(await trail.close(a.job, a.open[0]!, 'failed', Uint8Array.of(1)), 0, 'already closed: no change');
    await trail.pruneHistory(FIXTURE_NOW + DAY);
    assert.deepEqual(seen, [{ jobs: [a.job] }, { jobs: [a.job] }]);
    stop();
    await fx.close(trail, b.job, b.open[0]!, rnd);
    assert.equal(seen.length, 2, 'a watcher stopped hears nothing');
    const groups: Array<[string, number]> = [];
    for await (const g of trail.byJob()) groups.push([g.job, g.entries.length]);
    assert.deepEqual(groups, [[b.job, 1]]);
  });

  test('on a random trail in every shape, through writes, closes, prunes and changes of the rosters held, the kept figures are exactly the full computation’s (and so are ones built afresh)', async () => {
    const rnd = prng(20260417);
    const trail = await DispatchTrail.open(fresh('random'), fakeClock(FIXTURE_NOW));
    // The rosters the member holds outside its trail (its roster state): what the legacy entries' settlements need.
    const held = new Set<string>([fx.r.address]);
    const byAddress = new Map<string, Opened<PoolRoster>>([fx.r, fx.r2].map((x) => [x.address, x]));
    const ctx: FiguresContext = {
      pool: fx.pool,
      roster: (a) => (held.has(a) ? byAddress.get(a) : undefined) ?? trail.rosterOf(a),
      view: () => [...held].sort().join(' '),
    };
    const kept = new TrailFigures(trail, ctx, undefined, 5);
    const open: Array<{ job: string; by: string }> = [];
    let steps = 0;
    const seen = { disputed: false, pending: false, failures: new Set<string>(), currencies: new Set<string>() };
    const check = async (what: string) => {
      steps++;
      const want = await referenceFigures(trail, fx.members, ctx);
      seen.disputed ||= want.disputed > 0;
      seen.pending ||= want.pending > 0;
      for (const k of Object.keys(want.failures)) seen.failures.add(k);
      for (const p of Object.values(want.per)) for (const c of Object.keys(p.earned)) seen.currencies.add(c);
      assert.deepEqual(shown(await kept.read()), want, `kept figures after ${what}`);
      if (steps % 4 === 0) assert.deepEqual(shown(await new TrailFigures(trail, ctx, undefined, 3).read()), want, `figures built afresh after ${what}`);
      return want;
    };
    const write = async (k: number) => {
      for (let i = 0; i < k; i++) {
        const w = await fx.write(trail, drawShape(EVERY, rnd), rnd, FIXTURE_NOW + Math.floor(rnd() * 40) * DAY);
        for (const by of w.open) open.push({ job: w.job, by });
      }
    };
    await write(25);
    await check('the first writes (the build)');
    for (let round = 0; round < 10; round++) {
      // writes and closes while a read is under way: it must not miss one that lands meanwhile
      const reading = kept.read();
      await write(6 + Math.floor(rnd() * 6));
      await reading;
      await check(`round ${round}'s writes`);
      for (let i = 0; i < 3 && open.length; i++) {
        const [o] = open.splice(Math.floor(rnd() * open.length), 1);
        await fx.close(trail, o!.job, o!.by, rnd);
      }
      await check(`round ${round}'s closes`);
      if (round % 3 === 1) {
        const pruned = await trail.pruneHistory(FIXTURE_NOW + (round + 3) * DAY, 1 + Math.floor(rnd() * 10));
        assert.ok(pruned.removed > 0, 'the prune dropped some history');
        await check(`round ${round}'s prune`);
      }
      if (round === 3) {
        held.add(fx.r2.address);
        const want = await check('the member came to hold r2 (the legacy settlements count)');
        assert.ok(Object.values(want.per).some((p) => Object.keys(p.earned).length), 'something was earned');
      }
      if (round === 5) {
        held.delete(fx.r2.address);
        await check('the member no longer holds r2');
      }
      if (round === 7) {
        await fx.write(trail, 'under-r2', rnd, FIXTURE_NOW + 50 * DAY);
        await check('a dispatch kept r2 in the trail (the legacy settlements count again)');
      }
    }
    assert.deepEqual([seen.disputed, seen.pending, seen.failures.size, seen.currencies.size], [true, true, 4, 2], 'the trail held disputed jobs, open entries, every failure code, two currencies');
  });

  test('building the figures yields to the event loop every chunk of jobs: a setImmediate callback runs between chunks', async () => {
    const trail = await DispatchTrail.open(fresh('yield'), fakeClock(FIXTURE_NOW));
    const rnd = prng(7);
    for (let i = 0; i < 60; i++) await fx.write(trail, 'open', rnd, FIXTURE_NOW);
    const f = new TrailFigures(trail, { pool: fx.pool, roster: (a) => trail.rosterOf(a), view: () => '' }, undefined, 8);
    const between: number[] = [];
    let last = 0;
    let done = false;
    const tick = () => {
      between.push(f.computed - last);
      last = f.computed;
      if (!done) setImmediate(tick);
    };
    setImmediate(tick);
    const read = await f.read();
    done = true;
    between.push(f.computed - last);
    assert.equal(read.pending, 60);
    assert.equal(f.computed, 60);
    assert.ok(Math.max(...between) <= 8, `at most one chunk of jobs between two turns of the loop (${between.join(' ')})`);
  });

  test('a read while the figures catch up with a write in the background waits for the job under way', async () => {
    const trail = await DispatchTrail.open(fresh('under-way'), fakeClock(FIXTURE_NOW));
    const ctx: FiguresContext = { pool: fx.pool, roster: (a) => trail.rosterOf(a), view: () => '' };
    const f = new TrailFigures(trail, ctx);
    const rnd = prng(5);
    for (let i = 0; i < 4; i++) {
      const w = await fx.write(trail, 'open', rnd, FIXTURE_NOW);
      await f.read();
      await fx.close(trail, w.job, w.open[0]!, rnd);
      // the write's catch-up starts on the next turn of the loop and is reading the job's entries when the read comes
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual(shown(await f.read()), await referenceFigures(trail, fx.members, ctx), `close ${i}`);
    }
  });

  test('a member’s status shows the full computation’s figures, through writes, a prune and a new roster', async () => {
    const clock = fakeClock(FIXTURE_NOW);
    const trail = await DispatchTrail.open(fresh('member'), clock);
    const me = fx.members[0]!;
    const membership = (r: Opened<PoolRoster>) => seal(T.poolMembership, { pool: fx.pool, roster: r.address, seq: r.record.seq, status: 'member', signedAt: FIXTURE_NOW }, fx.keyOf(me)) as Opened<PoolMembership>;
    const m = new PoolMember({
      did: me,
      signer: fx.keyOf(me),
      roster: fx.r,
      membership: membership(fx.r),
      options: { ...POOL_MEMBER_DEFAULTS, livenessMs: 1000 },
      clock,
      monoClock: clock,
      log: silentLogger(),
      trail,
      runs: await RunLog.open(fresh('member-runs')),
      executor: () => undefined,
      maxOutputBytes: 1 << 20,
      publishReceipt: async () => {},
      call: async () => {
        throw new C0Error('NET_DIAL_FAILED', 'alone');
      },
    });
    const rnd = prng(99);
    for (let i = 0; i < 30; i++) await fx.write(trail, drawShape(EVERY, rnd), rnd, FIXTURE_NOW + Math.floor(rnd() * 10) * DAY);
    for (let i = 0; i < 3; i++) await fx.write(trail, 'legacy', rnd, FIXTURE_NOW + 30 * DAY);
    // What status showed: the member holds its roster (r) and those its trail keeps.
    let holds = fx.r;
    const ctx = { pool: fx.pool, roster: (a: string) => (a === holds.address ? holds : undefined) ?? trail.rosterOf(a) };
    type Status = { pending: number; failures: Record<string, number>; disputed: number; members: Array<{ did: string; jobs: { dispatched: number; completed: number; failed: number }; earned: Record<string, string> }> };
    const same = async (what: string) => {
      const st = (await m.status()) as Status;
      const want = await referenceFigures(trail, fx.members, ctx);
      assert.deepEqual(
        { per: Object.fromEntries(st.members.map((x) => [x.did, { ...x.jobs, earned: x.earned }])), failures: st.failures, disputed: st.disputed, pending: st.pending },
        want,
        what,
      );
    };
    const entries = (await trail.all()).length;
    await same('the first status');
    await same('a second status');
    await fx.write(trail, 'second', rnd, FIXTURE_NOW + 20 * DAY);
    await same('a status after one job was written');
    await trail.pruneHistory(FIXTURE_NOW + 5 * DAY);
    assert.ok((await trail.all()).length < entries, 'the prune dropped entries');
    await same('a status after a prune');
    // A new roster (r2): the legacy entries' settlements, split by it, now check out.
    const before = (await m.status()) as Status;
    await m.adopt(fx.r2.bytes, membership(fx.r2).bytes);
    m.stop();
    holds = fx.r2;
    await same('a status after the member adopted r2');
    const now = (await m.status()) as Status;
    assert.notDeepEqual(now.members.map((x) => x.earned), before.members.map((x) => x.earned), `the legacy settlements count now: ${JSON.stringify([before.members, now.members])}`);
  });
});
