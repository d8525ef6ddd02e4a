/**
 * A pool member's durable state (src/pools/trail.ts) on a real LevelDB: the
 * dispatch trail's open index (what the coordinator's recovery tick reads) and
 * both stores' pruning with the job history, and the one-off indexing of a
 * trail and run log an earlier build wrote.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { C0Error } from '../../../src/errors.js';
import { hashHex } from '../../../src/records/address.js';
import { encodeCanonical } from '../../../src/records/cbor.js';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { seal } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { closeDb, openDb, sub, type Db, type Sub } from '../../../src/store/db.js';
import { fakeClock } from '../../../src/util/clock.js';
import { DispatchTrail, RunLog, type TrailEntry } from '../../../src/pools/trail.js';

const NOW = 1_800_000_000_000;
const DAY = 24 * 3600_000;
const X = 'did:key:z6MkX';
const Y = 'did:key:z6MkY';
const job = (n: number) => hashHex(Uint8Array.of(n, 7));
const env = (n: number) => ({ dispatch: Uint8Array.of(1, n), job: Uint8Array.of(2, n), offer: Uint8Array.of(3, n) });
const receipt = Uint8Array.of(9);
/** What a prune reports, without its cursor. */
const counts = (r: { removed: number; more: boolean }) => ({ removed: r.removed, more: r.more });

async function rawKeys(s: Sub): Promise<string[]> {
  const out: string[] = [];
  for await (const k of s.keys()) out.push(k);
  return out;
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'none';
  } catch (e) {
    return e instanceof C0Error ? e.code : String(e);
  }
}

let dir: string;
let db: Db;
let n = 0;
/** A fresh sublevel per test. */
const fresh = (name: string) => sub(db, `${name}-${n++}`);

describe('pool dispatch trail and run log (real LevelDB)', () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'c0-trail-'));
    db = await openDb(join(dir, 'db'));
  });
  after(async () => {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  });

  test('pending() is exactly the open entries, read from the open index; closing drops the index key; entries() and all() never return index keys', async () => {
    const clock = fakeClock(NOW);
    const s = fresh('trail');
    const trail = await DispatchTrail.open(s, clock);
    await trail.record(job(1), X, env(1), NOW + 60_000);
    await trail.record(job(1), Y, env(1), NOW + 60_000);
    await trail.record(job(2), X, env(2), NOW + 60_000);
    assert.equal((await trail.record(job(2), X, env(9), NOW + 60_000)).fresh, false, 'a second record of the same dispatch keeps the first');
    const openKeys = async () => (await rawKeys(s)).filter((k) => k.startsWith('~o!')).map((k) => k.slice(3));
    assert.deepEqual((await openKeys()).sort(), [DispatchTrail.key(job(1), X), DispatchTrail.key(job(1), Y), DispatchTrail.key(job(2), X)].sort());

    assert.equal(await trail.close(job(2), X, 'completed', receipt), 1);
    assert.equal(await trail.close(job(1), X, 'failed', receipt), 1);
    assert.deepEqual(await openKeys(), [DispatchTrail.key(job(1), Y)], 'the closed entries left the open index');
    const pending = await trail.pending();
    assert.deepEqual(
      pending.map((p) => [p.job, p.entry.state, p.entry.dispatch]),
      [[job(1), 'dispatched', env(1).dispatch]],
    );

    // the index keys are in the sublevel, and nothing that lists entries returns one
    assert.ok((await rawKeys(s)).some((k) => k.startsWith('~t!')));
    const all = await trail.all();
    assert.equal(all.length, 3);
    assert.ok(all.every((x) => x.job.startsWith('sha256:') && x.entry.dispatch instanceof Uint8Array), 'only entries');
    assert.deepEqual((await trail.entries(job(1))).map((e) => e.key), [DispatchTrail.key(job(1), X), DispatchTrail.key(job(1), Y)]);

    // each entry is closed on its own: closing the last empties the index; a closed entry keeps its outcome unless it gives way
    assert.equal(await trail.close(job(1), Y, 'failed', receipt), 1);
    assert.deepEqual(await trail.pending(), []);
    assert.deepEqual(await openKeys(), []);
    assert.equal(await trail.close(job(1), Y, 'completed', receipt), 0, 'kept');
    assert.equal(await trail.close(job(1), Y, 'completed', receipt, undefined, (e) => e.state === 'failed'), 1, 'gave way');
    assert.equal((await trail.entries(job(1))).find((e) => e.key === DispatchTrail.key(job(1), Y))?.entry.state, 'completed');
    assert.deepEqual(await openKeys(), []);
  });

  test('pruneHistory drops the entries dated before `before` with their age keys, a batch at a time, an open one too (with its open key and a warning); keeps one not yet due', async () => {
    const clock = fakeClock(NOW);
    const s = fresh('trail');
    const warned: unknown[] = [];
    const log = { warn: (o: unknown) => warned.push(o) } as never;
    const trail = await DispatchTrail.open(s, clock, log);
    // jobs 0–4 due 10, 9, 8, 7, 6 s ago; job 2 never closed here; job 5 due in a minute
    for (let i = 0; i < 5; i++) await trail.record(job(i), X, env(i), NOW - (10 - i) * 1000);
    await trail.record(job(5), X, env(5), NOW + 60_000);
    for (const i of [0, 1, 3, 4, 5]) await trail.close(job(i), X, 'completed', receipt);

    const first = await trail.pruneHistory(NOW - 5500, 2);
    assert.deepEqual(counts(first), { removed: 2, more: true });
    assert.equal(warned.length, 0);
    const second = await trail.pruneHistory(NOW - 5500, 2, first.after);
    assert.deepEqual(counts(second), { removed: 2, more: true }, 'jobs 2 and 3');
    assert.equal(warned.length, 1, 'the open one dropped is told');
    assert.deepEqual((warned[0] as { entries: string[] }).entries, [DispatchTrail.key(job(2), X)]);
    assert.deepEqual(counts(await trail.pruneHistory(NOW - 5500, 2, second.after)), { removed: 1, more: false }, 'job 4');
    for (const i of [0, 1, 2, 3, 4]) assert.equal(await trail.get(job(i)), undefined, `job ${i} dropped`);
    assert.deepEqual(await trail.pending(), [], 'nothing open is left behind');
    assert.equal((await trail.get(job(5)))?.state, 'completed', 'the one not yet due is kept');
    const left = (await rawKeys(s)).filter((k) => k !== '~indexed' && k !== '~indexed-kept');
    assert.deepEqual(left.filter((k) => k.startsWith('~t!')).length, 1, 'only job 5’s age key is left');
    assert.deepEqual(left.filter((k) => k.startsWith('~c!')).length, 1, 'and its key by coordinator');
    assert.deepEqual(left.filter((k) => !k.startsWith('~t!') && !k.startsWith('~c!')), [DispatchTrail.key(job(5), X)], 'no open key and no entry but job 5’s');
  });

  test('a deadline far ahead dates an entry by that deadline: nothing is dropped before its job can no longer run (trail and run log)', async () => {
    const clock = fakeClock(NOW);
    const trail = await DispatchTrail.open(fresh('trail'), clock);
    const runs = await RunLog.open(fresh('runs'));
    await trail.record(job(1), X, env(1), NOW + 365 * DAY);
    await trail.close(job(1), X, 'completed', receipt);
    await runs.claim(job(1), X, NOW, NOW + 365 * DAY);
    assert.equal((await trail.pruneHistory(NOW + 365 * DAY)).removed, 0);
    assert.equal((await runs.pruneHistory(NOW + 365 * DAY)).removed, 0);
    await assert.rejects(runs.claim(job(1), X, NOW, NOW + 365 * DAY), (e: { code?: string }) => e.code === 'POOL_ALREADY_RUN');
    assert.equal((await trail.pruneHistory(NOW + 365 * DAY + 1)).removed, 1);
    assert.equal((await runs.pruneHistory(NOW + 365 * DAY + 1)).removed, 1);
  });

  test('the run log: a claim is refused a second time (at once or later), the in-memory set keeps no claimed job, notes go with the history', async () => {
    const s = fresh('runs');
    const runs = await RunLog.open(s);
    const raced = await Promise.allSettled([runs.claim(job(1), X, NOW, NOW - 5000), runs.claim(job(1), Y, NOW, NOW - 5000)]);
    assert.deepEqual(raced.map((r) => (r.status === 'fulfilled' ? 'ok' : (r.reason as C0Error).code)).sort(), ['POOL_ALREADY_RUN', 'ok']);
    assert.equal(runs.claiming, 0, 'the set holds no claimed job');
    assert.equal(await codeOf(runs.claim(job(1), Y, NOW, NOW - 5000)), 'POOL_ALREADY_RUN', 'the durable note refuses it');
    await runs.claim(job(2), X, NOW, NOW - 4000);
    await runs.claim(job(3), X, NOW, NOW + 60_000);
    assert.equal(runs.claiming, 0);

    const first = await runs.pruneHistory(NOW - 3000, 1);
    assert.deepEqual(counts(first), { removed: 1, more: true });
    assert.deepEqual(counts(await runs.pruneHistory(NOW - 3000, 1, first.after)), { removed: 1, more: false });
    assert.deepEqual(counts(await runs.pruneHistory(NOW - 3000)), { removed: 0, more: false });
    assert.deepEqual((await rawKeys(s)).filter((k) => !k.startsWith('~')), [job(3)], 'jobs 1 and 2 dropped, job 3 not yet due');
    assert.equal(await codeOf(runs.claim(job(3), Y, NOW, NOW + 60_000)), 'POOL_ALREADY_RUN');
  });

  test('upgrade: a trail and run log written without indexes are indexed once by open (trail entries dated by the later of then and their job\'s deadline, run notes kept); pending() finds the old dispatched entries', async () => {
    const s = fresh('trail');
    const r = fresh('runs');
    const old = (i: number, state: TrailEntry['state']): TrailEntry => ({ ...env(i), state, ...(state === 'dispatched' ? {} : { receipt }) });
    // as the earlier build wrote them
    await s.put(DispatchTrail.key(job(1), X), encodeCanonical(old(1, 'dispatched') as never));
    await s.put(DispatchTrail.key(job(2), X), encodeCanonical(old(2, 'completed') as never));
    await s.put(DispatchTrail.key(job(3), Y), encodeCanonical(old(3, 'dispatched') as never));
    // one whose job (a real envelope) is due in ten days: dated by that deadline, not by the upgrade
    const input = new TextEncoder().encode('far');
    const far = seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: NOW, deadline: NOW + 10 * DAY, timeoutMs: 10_000, input: { hash: hashHex(input), size: input.length }, inputSealed: 'no' }, Ed25519Signer.generate());
    await s.put(DispatchTrail.key(far.address, X), encodeCanonical({ ...old(4, 'completed'), job: far.bytes } as never));
    await r.put(job(1), encodeCanonical({ by: X, at: NOW - DAY }));

    const clock = fakeClock(NOW);
    const trail = await DispatchTrail.open(s, clock);
    const runs = await RunLog.open(r);
    assert.deepEqual((await trail.pending()).map((p) => p.job).sort(), [job(1), job(3)].sort());
    assert.equal((await trail.all()).length, 4);
    assert.equal(await codeOf(runs.claim(job(1), Y, NOW, NOW + 1000)), 'POOL_ALREADY_RUN');

    // a second open indexes nothing again
    const keys = await rawKeys(s);
    await DispatchTrail.open(s, fakeClock(NOW + DAY));
    await RunLog.open(r);
    assert.deepEqual(await rawKeys(s), keys);

    // dated at the first open (or the job's deadline, when later): nothing goes before NOW; then the rest
    assert.equal((await trail.pruneHistory(NOW)).removed, 0);
    await trail.close(job(1), X, 'failed', receipt);
    assert.equal((await trail.pruneHistory(NOW + 1)).removed, 3, 'the closed ones and the one never closed here');
    assert.deepEqual(await trail.pending(), []);
    assert.equal((await trail.pruneHistory(NOW + 10 * DAY)).removed, 0, 'the far job is kept until its deadline');
    assert.equal((await trail.pruneHistory(NOW + 10 * DAY + 1)).removed, 1);
    assert.deepEqual(await rawKeys(s), ['~indexed', '~indexed-kept']);
    // a run note from before the index names no deadline: kept for good, so the job never runs twice
    assert.equal((await runs.pruneHistory(NOW + 1000 * DAY)).removed, 0);
    assert.equal(await codeOf(runs.claim(job(1), Y, NOW, NOW + 1000)), 'POOL_ALREADY_RUN');
  });

  test('upgrade: indexing a large old trail goes in several batches', async () => {
    const s = fresh('trail');
    const ops = [];
    for (let i = 0; i < 1500; i++) ops.push({ type: 'put' as const, key: DispatchTrail.key(hashHex(Uint8Array.of(i >> 8, i & 255, 1)), X), value: encodeCanonical({ ...env(1), state: i % 3 === 0 ? 'dispatched' : 'completed' } as never) });
    await s.batch(ops);
    // count the synced batches the indexing writes (2,000 ops at most each: 1,500 age keys and 500 open keys, then the
    // marker; then the 1,500 keys by coordinator and their marker)
    let batches = 0;
    const batch = s.batch.bind(s);
    (s as { batch: unknown }).batch = (...a: Parameters<typeof batch>) => {
      batches++;
      return batch(...a);
    };
    const trail = await DispatchTrail.open(s, fakeClock(NOW));
    assert.equal(batches, 3);
    assert.equal((await trail.pending()).length, 500);
    assert.equal((await trail.pruneHistory(NOW + 1, 5000)).removed, 1500);
  });
});
