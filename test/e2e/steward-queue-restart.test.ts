/**
 * A steward restart keeps its queue (pool/1 §4.5, §6.2; docs/pool.md "The
 * queue across a steward restart"), with real `c0mpute start` processes on a
 * private overlay: one provider (one device), a steward, a witness and a
 * buyer. A1 holds team-a's device for a while; A2 then A3 are queued
 * (DEVICES_HELD). The steward is restarted (SIGTERM, same data dir): its
 * queue comes back from disk in the same order, the buyer asks again by
 * itself for each claim, and each keeps its place: when A1 releases, A2 is
 * admitted while A3 still waits, then A3; every job completes.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { waitFor, withLogs } from './node-helpers.js';
import { claimSpec, runClaim, startOrg, stewardStatus, type Org } from './steward-helpers.js';

let org: Org;

before(async () => {
  org = await startOrg('steward-queue', { providers: 1, buyers: ['alpha'], baseMs: 1000 });
});

after(async () => {
  await org?.c.destroy();
});

/** builtin.sleep for `ms` under team-a: holds the provider's one device that long. */
function longClaim(label: string, ms: number): Record<string, unknown> {
  return { ...claimSpec(label, 'team-a', 100_000_000, 1, 'Estimator', 120_000), workload: 'builtin.sleep', params: String(ms) };
}

test('claims queued at a steward keep their place across its restart; the buyer asks again by itself and every job completes', async () => {
  await withLogs(org.c, async () => {
    const alpha = org.buyers.alpha!;
    // A1 holds the device long enough for the restart and the buyer's asking again (about 5 s in CI, under 10 s on a
    // machine at load 9) to happen while A2 and A3 are still queued; should it release sooner, the wait for both
    // claims queued again fails rather than passing.
    const a1 = runClaim(alpha, longClaim('A1', 24_000));
    await waitFor('A1 to hold team-a’s device', async () => (await stewardStatus(org.steward)).teams.find((t) => t.id === 'team-a')!.held_devices === 1, 60_000);
    const a2 = runClaim(alpha, claimSpec('A2', 'team-a', 50_000_000, 100_000, 'Estimator', 150_000));
    await waitFor('A2 queued', async () => (await stewardStatus(org.steward)).queued.length === 1, 45_000);
    const a3 = runClaim(alpha, claimSpec('A3', 'team-a', 50_000_000, 100_000, 'Estimator', 150_000));
    const before = await waitFor('A2 and A3 queued', async () => {
      const q = (await stewardStatus(org.steward)).queued;
      return q.length === 2 ? q : undefined;
    }, 45_000);
    assert.deepEqual(
      before.map((q) => q.reason),
      ['DEVICES_HELD', 'DEVICES_HELD'],
    );

    await org.restartSteward();
    const restored = (await stewardStatus(org.steward)).queued;
    assert.deepEqual(
      restored.map((q) => q.claim),
      before.map((q) => q.claim),
      'the queue came back from disk in arrival order',
    );
    // The buyer asks again for both (its streams ended with the old process), each keeping its place.
    await waitFor('the buyer to ask again for both claims', async () => {
      const q = (await stewardStatus(org.steward)).queued as Array<{ claim: string; buyer?: string }>;
      return q.length === 2 && q.every((x) => x.buyer === 'waiting') && q.map((x) => x.claim).join() === before.map((x) => x.claim).join();
    }, 60_000);

    // A1 releases; A2 (first in line) is admitted while A3 still waits.
    await waitFor('A2 admitted ahead of A3', async () => {
      const q = (await stewardStatus(org.steward)).queued;
      return q.length === 1 && q[0]!.claim === before[1]!.claim;
    }, 90_000, 100);

    const [r1, r2, r3] = await Promise.all([a1, a2, a3]);
    assert.equal(r1.result.status, 'completed');
    for (const r of [r2, r3]) {
      assert.equal(r.result.status, 'completed', JSON.stringify(r.result));
      assert.equal(r.admission?.verdict, 'Admit');
      assert.ok(r.queued.length >= 2, `queued before the restart and again after it (${r.queued.length})`);
    }
    assert.deepEqual([r2.job, r3.job], before.map((q) => q.claim));
    assert.deepEqual((await stewardStatus(org.steward)).queued, []);
  });
});
