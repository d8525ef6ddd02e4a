/**
 * What one coordinator keeps in another member's dispatch trail is bounded, closed entries included (docs/pools.md
 * "Dispatch trail"; review s42 R9 F2: a member sending `op: trail` then `op: closed` of made-up dispatches of its own
 * made another member write and keep every one, 81 MB for 8,000 rounds). Past `keep` a new entry drops that
 * coordinator's earliest-dated closed entries, never an open one, or is refused POOL_TRAIL_FULL; the status figures
 * group failure codes past FAILURE_CODES_SHOWN into `other` (R9 F3).
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { hashHex } from '../../../src/records/address.js';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { closeDb, openDb, sub, type Db } from '../../../src/store/db.js';
import { fakeClock } from '../../../src/util/clock.js';
import { DispatchTrail } from '../../../src/pools/trail.js';
import { parseConfig } from '../../../src/node/config.js';
import { trailKeep } from '../../../src/roles/pool-member/member.js';
import { poolMemberOptions } from '../../../src/roles/pool-member/wiring.js';
import { FAILURE_CODES_SHOWN, groupFailures } from '../../../src/roles/pool-member/status.js';
import { Rig, MEMBERS, keyOf, clock as rigClock, job as rigJob, offer as rigOffer, pooledReceipt, r } from './member-rig.js';
import { codeOfAsync } from './member-rig.js';

const NOW = 1_800_000_000_000;
const DAY = 24 * 3600_000;
const X = 'did:key:z6MkX';
const Y = 'did:key:z6MkY';
const job = (n: number) => hashHex(Uint8Array.of(n, 8));
const env = (n: number, size = 1) => ({ dispatch: new Uint8Array(size).fill(n), job: Uint8Array.of(2, n), offer: Uint8Array.of(3, n) });
const receipt = Uint8Array.of(9);
const keep = (entries: number, evict = true, bytes = 1 << 30) => ({ entries, bytes, evict });

const codeOf = codeOfAsync;

let dir: string;
let db: Db;
let n = 0;
const fresh = (name: string) => sub(db, `${name}-${n++}`);

describe('what one coordinator keeps in another member’s trail is bounded, closed entries included', () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'c0-trail-kept-'));
    db = await openDb(join(dir, 'db'));
  });
  after(async () => {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  });

  test('past its bound a new entry drops the coordinator’s earliest-dated closed entries, never an open one nor another coordinator’s; all open: POOL_TRAIL_FULL, nothing written', async () => {
    const trail = await DispatchTrail.open(fresh('evict'), fakeClock(NOW));
    for (let i = 0; i < 3; i++) {
      await trail.record(job(i), X, env(i), NOW + (i + 1) * DAY, 64, undefined, keep(3));
      await trail.close(job(i), X, 'failed', receipt);
    }
    await trail.record(job(50), Y, env(50), NOW + DAY, 64, undefined, keep(3));
    // job 0 is the earliest dated: it goes for job 3
    assert.equal((await trail.record(job(3), X, env(3), NOW + 10 * DAY, 64, undefined, keep(3))).fresh, true);
    assert.equal(await trail.get(job(0)), undefined, 'the earliest-dated closed entry is dropped');
    assert.ok(await trail.get(job(1)));
    // jobs 1 and 2 closed (5 bytes of envelopes and a 1-byte receipt each), job 3 open (5)
    assert.deepEqual(await trail.keptOf(X), { n: 3, bytes: 17 });
    assert.ok(await trail.get(job(50)), 'another coordinator’s entry is kept');
    // the rest are open: a fourth open one finds nothing closed to drop
    await trail.record(job(4), X, env(4), NOW + DAY, 64, undefined, keep(3));
    assert.equal(await trail.get(job(1)), undefined);
    await trail.record(job(5), X, env(5), NOW + DAY, 64, undefined, keep(3));
    assert.equal(await trail.get(job(2)), undefined);
    assert.equal(await codeOf(trail.record(job(6), X, env(6), NOW + DAY, 64, undefined, keep(3))), 'POOL_TRAIL_FULL');
    assert.equal(await trail.get(job(6)), undefined, 'nothing written');
    assert.equal((await trail.all()).filter((e) => e.entry.state === 'dispatched').length, 4, 'every open entry kept (3 of X, 1 of Y)');
    // without evicting (a catch-up), a coordinator at its bound is refused even with closed entries
    await trail.close(job(3), X, 'failed', receipt);
    assert.equal(await codeOf(trail.record(job(7), X, env(7), NOW + DAY, 64, undefined, keep(3, false))), 'POOL_TRAIL_FULL');
    assert.ok(await trail.get(job(3)));
  });

  test('the bytes of a coordinator’s envelopes are bounded too; a prune frees its places; a trail an earlier build wrote is counted after its next open', async () => {
    const s = fresh('bytes');
    const trail = await DispatchTrail.open(s, fakeClock(NOW));
    // envelopes of 100 + 2 + 2 bytes and, once closed, a 1-byte receipt: 3 fit in 400 bytes
    for (let i = 0; i < 3; i++) {
      await trail.record(job(i), X, env(i, 100), NOW + (i + 1) * DAY, 64, undefined, keep(100, true, 400));
      await trail.close(job(i), X, 'failed', receipt);
    }
    await trail.record(job(3), X, env(3, 100), NOW + 9 * DAY, 64, undefined, keep(100, true, 400));
    assert.equal(await trail.get(job(0)), undefined);
    assert.deepEqual(await trail.keptOf(X), { n: 3, bytes: 105 + 105 + 104 });
    // one far bigger than the bound is refused
    assert.equal(await codeOf(trail.record(job(9), X, env(9, 1000), NOW + DAY, 64, undefined, keep(100, true, 400))), 'POOL_TRAIL_FULL');
    const pruned = await trail.pruneHistory(NOW + 2 * DAY + 1);
    assert.equal(pruned.removed, 1, 'job 1 dated day 2');
    assert.deepEqual(await trail.keptOf(X), { n: 2, bytes: 105 + 104 });
    let left = 0;
    for await (const k of s.keys({ gt: '~c!', lt: '~c!\uffff' })) left += k.endsWith(`${job(1)}|${X}`) ? 100 : 1;
    assert.equal(left, 2, 'the pruned entry’s index key goes with it');
    // an earlier build kept no index of entries by coordinator: the next open writes it
    for await (const k of s.keys({ gt: '~c!', lt: '~c!\uffff' })) await s.del(k);
    await s.del('~indexed-kept');
    const again = await DispatchTrail.open(s, fakeClock(NOW));
    assert.deepEqual(await again.keptOf(X), { n: 2, bytes: 105 + 104 });
  });

  test('a closed entry counts its receipt and settlement: the bound holds whole entries, and a close past it drops the coordinator’s earliest closed ones (review s43 R2 F2)', async () => {
    const s = fresh('closed-bytes');
    const trail = await DispatchTrail.open(s, fakeClock(NOW));
    const big = new Uint8Array(1000).fill(5);
    const bound = keep(100, true, 4000);
    // before: 50 entries of 104 bytes each closed with a 1,000-byte receipt, 55,200 bytes kept under a bound of 4,000
    for (let i = 0; i < 50; i++) {
      await trail.record(job(i), X, env(i, 100), NOW + (i + 1) * DAY, 64, undefined, bound);
      await trail.close(job(i), X, 'failed', big, undefined, undefined, bound);
      const k = await trail.keptOf(X);
      assert.ok(k.bytes <= bound.bytes, `round ${i}: ${k.bytes} bytes kept, at most ${bound.bytes}`);
    }
    const held = (await trail.all()).filter((e) => e.entry.state !== 'dispatched');
    const bytes = held.reduce((n, e) => n + e.entry.dispatch.length + e.entry.job.length + e.entry.offer.length + (e.entry.receipt?.length ?? 0), 0);
    assert.deepEqual(await trail.keptOf(X), { n: held.length, bytes }, 'what is counted is what is kept, receipts included');
    assert.equal(held.length, 3, '3 entries of 1,104 bytes fit in 4,000');
    assert.deepEqual(held.map((e) => e.job), [job(47), job(48), job(49)].sort(), 'the latest-dated ones');
    // a settlement counts too; and what a restart reads from the index is the same
    await trail.record(job(60), X, env(60, 100), NOW + 90 * DAY, 64, undefined, bound);
    await trail.close(job(60), X, 'completed', Uint8Array.of(1), new Uint8Array(500), undefined, bound);
    assert.equal((await trail.keptOf(X)).bytes, 1104 * 3 + 104 + 1 + 500);
    assert.deepEqual(await (await DispatchTrail.open(s, fakeClock(NOW))).keptOf(X), await trail.keptOf(X));
    // without `keep` (this member's own close) the receipt is counted all the same; the next new entry makes room
    await trail.record(job(61), X, env(61, 100), NOW + 91 * DAY, 64, undefined, bound);
    assert.equal(await trail.get(job(47)), undefined, 'job 61 took the place of the earliest closed');
    await trail.close(job(61), X, 'failed', big);
    assert.equal((await trail.keptOf(X)).bytes, 1104 * 2 + 605 + 1104);
    await trail.record(job(62), X, env(62, 100), NOW + 92 * DAY, 64, undefined, bound);
    assert.ok((await trail.keptOf(X)).bytes <= bound.bytes);
  });

  test('a trail indexed before closed entries counted their receipts is indexed again at its next open', async () => {
    const s = fresh('reindex');
    const trail = await DispatchTrail.open(s, fakeClock(NOW));
    await trail.record(job(1), X, env(1, 100), NOW + DAY, 64, undefined, keep(100));
    await trail.close(job(1), X, 'failed', new Uint8Array(1000));
    await trail.record(job(2), X, env(2, 100), NOW + DAY, 64, undefined, keep(100));
    // as the build before wrote it: the closed entry's index value its envelopes only, the marker '1'
    for await (const [k] of s.iterator({ gt: '~c!', lt: '~c!\uffff' })) if (k.endsWith(`${job(1)}|${X}`)) await s.put(k, new TextEncoder().encode('104'));
    await s.put('~indexed-kept', new TextEncoder().encode('1'));
    assert.deepEqual(await (await DispatchTrail.open(s, fakeClock(NOW))).keptOf(X), { n: 2, bytes: 1104 + 104 });
  });

  test('a member sending its own made-up dispatches and failing them keeps at most its bound of them on another member (op: trail, op: closed)', async () => {
    const rig = new Rig();
    try {
      const w = await rig.world('kept', { options: { maxOpenDispatches: 8, maxKeptDispatches: 5 } });
      const [A, , H] = MEMBERS as [string, string, string];
      const a = w.members.get(A)!;
      const h = w.members.get(H)!;
      const trail = (a as unknown as { d: { trail: DispatchTrail } }).d.trail;
      for (let i = 0; i < 20; i++) {
        const { job: fj } = rigJob({ deadline: rigClock() + 20 * DAY - i * 1000 });
        const fo = rigOffer(fj, H);
        const fd = seal(T.poolDispatch, { pool: a.pool, roster: r.address, job: fj.address, offer: fo.address, member: A, coordinator: H, epoch: 0, issuedAt: rigClock() }, keyOf(H));
        assert.equal((await a.serve({ op: 'trail', dispatch: fd.bytes, job: fj.bytes, offer: fo.bytes }, H)).ok, 'yes', `round ${i}`);
        const rc = pooledReceipt(h, fj, fo, H, { failure: { code: `X${i}`, message: 'x' } });
        assert.equal((await a.serve({ op: 'closed', job: fj.address, coordinator: H, receipt: rc.bytes }, H)).ok, 'yes', `round ${i}`);
      }
      assert.equal((await trail.keptOf(H)).n, 5);
      assert.equal((await trail.all()).length, 5, 'the member keeps 5 of the 20');
    } finally {
      await rig.close();
    }
  });

  test("the config's pool.maxKeptDispatches reaches the trail: a coordinator keeps that many of its entries on another member", async () => {
    // before: no config key (the pool section is strict: CONFIG_INVALID), the trail always kept 4,096
    const c = parseConfig({ pool: { roster: '/r.cose', membership: '/m.cose', maxOpenDispatches: 8, maxKeptDispatches: 3, maxKeptBytes: 1_000_000 } }).pool!;
    const o = poolMemberOptions(c);
    assert.deepEqual(trailKeep(o, true), { entries: 3, bytes: 1_000_000, evict: true });
    const rig = new Rig();
    try {
      const w = await rig.world('kept-config', { options: { maxOpenDispatches: o.maxOpenDispatches, maxKeptDispatches: o.maxKeptDispatches!, maxKeptBytes: o.maxKeptBytes! } });
      const [A, , H] = MEMBERS as [string, string, string];
      const a = w.members.get(A)!;
      const h = w.members.get(H)!;
      const trail = (a as unknown as { d: { trail: DispatchTrail } }).d.trail;
      for (let i = 0; i < 6; i++) {
        const { job: fj } = rigJob({ deadline: rigClock() + 20 * DAY - i * 1000 });
        const fo = rigOffer(fj, H);
        const fd = seal(T.poolDispatch, { pool: a.pool, roster: r.address, job: fj.address, offer: fo.address, member: A, coordinator: H, epoch: 0, issuedAt: rigClock() }, keyOf(H));
        assert.equal((await a.serve({ op: 'trail', dispatch: fd.bytes, job: fj.bytes, offer: fo.bytes }, H)).ok, 'yes', `round ${i}`);
        const rc = pooledReceipt(h, fj, fo, H, { failure: { code: 'EXEC_FAILED', message: 'x' } });
        assert.equal((await a.serve({ op: 'closed', job: fj.address, coordinator: H, receipt: rc.bytes }, H)).ok, 'yes', `round ${i}`);
      }
      assert.equal((await trail.keptOf(H)).n, 3, 'the member keeps 3 of the 6');
    } finally {
      await rig.close();
    }
  });

  test('the status figures name the most frequent failure codes, the rest as `other`', () => {
    const by = new Map<string, number>();
    for (let i = 0; i < 3000; i++) by.set(`X${String(i).padStart(4, '0')}`, 1);
    by.set('EXEC_FAILED', 5);
    const g = groupFailures(by);
    assert.equal(Object.keys(g).length, FAILURE_CODES_SHOWN + 1);
    assert.equal(g.EXEC_FAILED, 5);
    assert.equal(g.other, 3000 - (FAILURE_CODES_SHOWN - 1));
    assert.equal(Object.values(g).reduce((a, b) => a + b, 0), 3005, 'nothing lost from the sum');
    assert.deepEqual(Object.keys(g), [...Object.keys(g)].sort());
    assert.deepEqual(groupFailures(new Map([['B', 1], ['A', 2]])), { A: 2, B: 1 });
  });
});
