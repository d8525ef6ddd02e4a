/**
 * What a member's `pool-provider status` reads of its dispatch trail (src/roles/pool-member/status.ts TrailFigures):
 * the whole trail once, then only the jobs written since. Each status used to read every entry kept and check every
 * outcome again: on a member with a month of history that held its event loop for tens of seconds, and the other
 * members took it for down. The figures themselves: status-figures.test.ts.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type PoolMembership } from '../../../src/records/kinds.js';
import { closeDb, openDb, sub, type Db, type Sub } from '../../../src/store/db.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { C0Error } from '../../../src/errors.js';
import { DispatchTrail, RunLog } from '../../../src/pools/trail.js';
import { PoolMember, POOL_MEMBER_DEFAULTS } from '../../../src/roles/pool-member/member.js';
import { EVERY, FIXTURE_NOW, PoolFixture, drawShape, prng } from '../../../scripts/bench/pool-trail-fixture.js';

const DAY = 24 * 3600_000;
const fx = new PoolFixture();

/** Count the entries read from the trail's store from now on, and which (every read of entries goes through its iterator). */
function countReads(trail: DispatchTrail): { n: number; keys: Set<string> } {
  const c = { n: 0, keys: new Set<string>() };
  const s = (trail as unknown as { db: Sub }).db;
  const iterator = s.iterator.bind(s);
  (s as unknown as { iterator: unknown }).iterator = (o: Parameters<Sub['iterator']>[0]) => {
    const it = iterator(o);
    return {
      async *[Symbol.asyncIterator]() {
        for await (const kv of it) {
          if (!(kv[0] as string).startsWith('~')) {
            c.n++;
            c.keys.add(kv[0] as string);
          }
          yield kv;
        }
      },
    };
  };
  return c;
}

describe('what a member’s pool status reads', () => {
  let dir: string;
  let db: Db;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'c0-status-reads-'));
    db = await openDb(join(dir, 'db'));
  });
  after(async () => {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  });

  test('the first status reads every entry once; the next reads none and shows the same; after one job is written, that job’s entries alone are read', async () => {
    const clock = fakeClock(FIXTURE_NOW);
    const trail = await DispatchTrail.open(sub(db, 'trail'), clock);
    const me = fx.members[0]!;
    const m = new PoolMember({
      did: me,
      signer: fx.keyOf(me),
      roster: fx.r,
      membership: seal(T.poolMembership, { pool: fx.pool, roster: fx.r.address, seq: 1, status: 'member', signedAt: FIXTURE_NOW }, fx.keyOf(me)) as Opened<PoolMembership>,
      options: { ...POOL_MEMBER_DEFAULTS, livenessMs: 1000 },
      clock,
      monoClock: clock,
      log: silentLogger(),
      trail,
      runs: await RunLog.open(sub(db, 'runs')),
      executor: () => undefined,
      maxOutputBytes: 1 << 20,
      publishReceipt: async () => {},
      call: async () => {
        throw new C0Error('NET_DIAL_FAILED', 'alone');
      },
    });
    const rnd = prng(3);
    for (let i = 0; i < 40; i++) await fx.write(trail, drawShape(EVERY, rnd), rnd, FIXTURE_NOW + 10 * DAY);
    const entries = (await trail.all()).length;

    let reads = countReads(trail);
    const first = await m.status();
    assert.equal(reads.n, entries, 'the first status reads every entry once');
    reads = countReads(trail);
    assert.deepEqual(await m.status(), first);
    assert.equal(reads.n, 0, 'a second status reads no entry');

    // one job, two coordinators' entries, each recorded and closed: four writes, after each the job's entries read again at most
    reads = countReads(trail);
    const w = await fx.write(trail, 'second', rnd, FIXTURE_NOW + 10 * DAY);
    const third = (await m.status()) as { members: Array<{ jobs: { dispatched: number } }> };
    assert.equal((await trail.entries(w.job)).length, 2);
    // How often they are read again depends on when the catch-up runs between the writes (a loaded machine runs it
    // after more of them), so what is asserted is which entries are read: the job's, none of the 46 others.
    assert.ok(reads.n > 0, 'the new job’s entries are read');
    assert.deepEqual(
      [...reads.keys].filter((k) => !k.startsWith(`${w.job}|`)),
      [],
      `the writes and the status read that job’s entries alone (${reads.n} entries read; the trail holds ${entries + 2})`,
    );
    const dispatched = (st: unknown) => (st as typeof third).members.reduce((s, x) => s + x.jobs.dispatched, 0);
    assert.equal(dispatched(third), dispatched(first) + 1, 'the new job counts');
  });
});
