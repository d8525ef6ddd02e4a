/**
 * A provider's runs (src/store/provider-runs.ts) on a real LevelDB: a job
 * noted as run is found; entries go with the history once their time is past,
 * a batch at a time, and no other; entries from before the time index are
 * dated at the first open that finds them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeDb, openDb, sub } from '../../../src/store/db.js';
import { ProviderRuns } from '../../../src/store/provider-runs.js';
import { hashHex } from '../../../src/records/address.js';

const NOW = 1_800_000_000_000;
/** What a prune reports, without its cursor. */
const counts = (r: { removed: number; more: boolean }) => ({ removed: r.removed, more: r.more });
const job = (n: number) => hashHex(Uint8Array.of(n, 1));
const receipt = (n: number) => hashHex(Uint8Array.of(n, 2));

test('a job noted as run is found until its time is past; pruning takes a batch at a time and nothing newer; entries from before the index are dated at open', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-runs-'));
  const db = await openDb(join(dir, 'db'));
  try {
    // two entries written as the earlier build wrote them (no time index)
    const s = sub(db, 'provider-runs');
    for (const n of [8, 9]) await s.put(job(n), new TextEncoder().encode(receipt(n)));
    const runs = await ProviderRuns.open(db, s, NOW);
    assert.equal(await runs.has(job(8)), true);
    for (let n = 0; n < 5; n++) await runs.record(job(n), receipt(n), NOW - (10 - n) * 1000);
    await runs.record(job(5), receipt(5), NOW + 60_000);
    for (let n = 0; n <= 5; n++) assert.equal(await runs.has(job(n)), true);
    assert.equal(await runs.has(job(7)), false);

    // before NOW - 6 s: jobs 0–3 (dated 10, 9, 8, 7 s ago), two a batch
    assert.deepEqual(counts(await runs.pruneHistory(NOW - 6000, 2)), { removed: 2, more: true });
    assert.deepEqual(counts(await runs.pruneHistory(NOW - 6000, 2)), { removed: 2, more: false });
    assert.deepEqual(counts(await runs.pruneHistory(NOW - 6000, 2)), { removed: 0, more: false });
    for (let n = 0; n <= 3; n++) assert.equal(await runs.has(job(n)), false, `job ${n} dropped`);
    for (const n of [4, 5, 8, 9]) assert.equal(await runs.has(job(n)), true, `job ${n} kept`);

    // the earlier build's entries were dated NOW at open: they go once NOW is past, not before; a second open changes nothing
    const again = await ProviderRuns.open(db, s, NOW + 10 * 60_000);
    assert.deepEqual(counts(await again.pruneHistory(NOW)), { removed: 1, more: false }, 'job 4 only');
    assert.equal(await again.has(job(8)), true);
    assert.deepEqual(counts(await again.pruneHistory(NOW + 1)), { removed: 2, more: false }, 'the two from before the index');
    assert.equal(await again.has(job(5)), true, 'a job before its deadline is kept');
    assert.equal(await again.has(job(8)), false);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a bar is kept with its code and time, is not a run, and goes with the history once its time is past', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-runs-'));
  let db = await openDb(join(dir, 'db'));
  try {
    let runs = await ProviderRuns.open(db, sub(db, 'provider-runs'), NOW);
    await runs.bar(job(1), 'EXEC_PREEMPTED', NOW + 60_000);
    await runs.bar(job(2), 'EXEC_IDLE_RECLAIMED', NOW + 1000);
    await runs.record(job(3), receipt(3), NOW + 60_000);
    assert.equal(await runs.has(job(1)), false, 'a barred job did not run here');
    assert.equal(await runs.barOf(job(3)), undefined);
    // across a reopen of the database (a restart)
    await closeDb(db);
    db = await openDb(join(dir, 'db'));
    runs = await ProviderRuns.open(db, sub(db, 'provider-runs'), NOW);
    assert.deepEqual(await runs.barOf(job(1)), { code: 'EXEC_PREEMPTED', until: NOW + 60_000 });
    assert.deepEqual(await runs.barOf(job(2)), { code: 'EXEC_IDLE_RECLAIMED', until: NOW + 1000 });
    assert.deepEqual(counts(await runs.pruneHistory(NOW + 2000)), { removed: 1, more: false });
    assert.equal(await runs.barOf(job(2)), undefined, 'dropped with the history');
    assert.deepEqual(await runs.barOf(job(1)), { code: 'EXEC_PREEMPTED', until: NOW + 60_000 });
    assert.equal(await runs.has(job(3)), true);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a run note holds the envelopes until its receipt is recorded or it is dropped; it goes with the history past its time; an unreadable one is dropped', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-runs-'));
  const db = await openDb(join(dir, 'db'));
  try {
    const s = sub(db, 'provider-runs');
    const runs = await ProviderRuns.open(db, s, NOW);
    const note = (n: number) => ({ job: job(n), jobEnvelope: Uint8Array.of(n, 1, 1), offerEnvelope: Uint8Array.of(n, 2, 2), startedAt: NOW + n });
    for (const n of [1, 2, 3]) await runs.note(note(n), NOW + n * 1000);
    assert.deepEqual((await runs.notes()).sort((a, b) => a.startedAt - b.startedAt), [note(1), note(2), note(3)]);
    assert.equal(await runs.has(job(1)), false, 'a note is not a run');

    await runs.record(job(1), receipt(1), NOW + 1000);
    await runs.dropNote(job(2));
    assert.deepEqual(await runs.notes(), [note(3)], 'superseded by the receipt, and dropped');
    assert.equal(await runs.has(job(1)), true);

    // past its time it goes with the history (the superseded note's index entry with it)
    assert.deepEqual(counts(await runs.pruneHistory(NOW + 3001)), { removed: 4, more: false });
    assert.deepEqual(await runs.notes(), []);

    await s.put('~n!' + job(4), new TextEncoder().encode('not json'));
    assert.deepEqual(await runs.notes(), []);
    assert.equal(await s.get('~n!' + job(4)), undefined, 'dropped');
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a receipt waiting for its buyer is kept across a reopen, oldest first, until it is delivered or goes with the history', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-runs-'));
  let db = await openDb(join(dir, 'db'));
  try {
    let runs = await ProviderRuns.open(db, sub(db, 'provider-runs'), NOW);
    await runs.awaitDelivery({ address: receipt(1), bytes: Uint8Array.of(1, 2, 3), until: NOW + 20_000 });
    await runs.awaitDelivery({ address: receipt(2), bytes: Uint8Array.of(4), until: NOW + 10_000 });
    await runs.awaitDelivery({ address: receipt(3), bytes: Uint8Array.of(5), until: NOW + 30_000 });
    await sub(db, 'provider-runs').put(`~d!${receipt(4)}`, new TextEncoder().encode('not json'));
    await closeDb(db);
    db = await openDb(join(dir, 'db'));
    runs = await ProviderRuns.open(db, sub(db, 'provider-runs'), NOW);
    const held = await runs.waitingReceipts();
    assert.deepEqual(held.map((w) => [w.address, [...w.bytes], w.until]), [
      [receipt(2), [4], NOW + 10_000],
      [receipt(1), [1, 2, 3], NOW + 20_000],
      [receipt(3), [5], NOW + 30_000],
    ], 'oldest first; the unreadable entry is dropped');
    await runs.delivered(receipt(1));
    await runs.pruneHistory(NOW + 15_000);
    assert.deepEqual((await runs.waitingReceipts()).map((w) => w.address), [receipt(3)], 'delivered and lapsed ones are gone');
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
