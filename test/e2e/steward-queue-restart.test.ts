/**
 * A steward restart keeps its queue (pool/1 §4.5, §6.2; docs/pool.md "The
 * queue across a steward restart"), with real `c0mpute start` processes on a
 * private overlay: one provider (one device), a steward, a witness and a
 * buyer. A1 holds team-a's device for a while; A2 then A3 are queued
 * (DEVICES_HELD). The steward is restarted (SIGTERM, same data dir): its
 * queue comes back from disk in the same order, the buyer asks again by
 * itself for each claim, and each keeps its place: when A1 releases, A2 is
 * admitted while A3 still waits, then A3; every job completes.
 *
 * A1 is an exec workload (test.hold) that runs until the test creates its
 * release file, once the restart and the asking again have been seen: the
 * hold lasts exactly as long as the scenario needs, not a sleep long enough
 * for a loaded machine (it was builtin.sleep 24 s).
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { waitFor, withLogs } from './node-helpers.js';
import { claimSpec, runClaim, startOrg, stewardStatus, type Org } from './steward-helpers.js';

let org: Org;
/** test.hold's job ends (echoing its input) once this file exists. */
const holdDir = mkdtempSync(join(tmpdir(), 'c0-hold-'));
const releaseFile = join(holdDir, 'release');
const hold = { executor: { type: 'exec', command: ['sh', '-c', 'while [ ! -e "$RELEASE" ]; do sleep 0.05; done; cat'], env: { RELEASE: releaseFile } }, price: { amount: '0.001', currency: 'USD' }, duration: { baseMs: 200 } };

before(async () => {
  org = await startOrg('steward-queue', {
    providers: 1,
    buyers: ['alpha'],
    baseMs: 1000,
    provider: (cfg) => {
      const p = cfg.provider as { workloads: Record<string, unknown> };
      return { ...cfg, provider: { ...p, workloads: { ...p.workloads, 'test.hold': hold } } };
    },
  });
});

after(async () => {
  writeFileSync(releaseFile, ''); // a failed run leaves no shell looping behind
  await org?.c.destroy();
  rmSync(holdDir, { recursive: true, force: true });
});

/** test.hold under team-a: holds the provider's one device until the release file exists. */
function holdClaim(label: string): Record<string, unknown> {
  return { ...claimSpec(label, 'team-a', 100_000_000, 1, 'Estimator', 120_000), workload: 'test.hold' };
}

test('claims queued at a steward keep their place across its restart; the buyer asks again by itself and every job completes', async () => {
  await withLogs(org.c, async () => {
    const alpha = org.buyers.alpha!;
    // A1 holds the device until it is released below, after the restart and the buyer's asking again.
    const a1 = runClaim(alpha, holdClaim('A1'));
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
    assert.equal((await stewardStatus(org.steward)).teams.find((t) => t.id === 'team-a')!.held_devices, 1, 'A1 still holds the device');
    writeFileSync(releaseFile, '');
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
