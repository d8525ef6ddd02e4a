/**
 * Idle reclamation on a private overlay (pool/1 §2.7) with a configured
 * policy. Two providers run a parked job each (builtin.sleep): one meters with
 * RAPL counters that do not move (a fake powercap tree: a reading, graded
 * HwShunt, of no energy), the other with the Estimator. The steward samples
 * both: the measured-idle claim is reclaimed (a signed failed receipt
 * EXEC_IDLE_RECLAIMED releases it); the Estimator one is never judged idle —
 * the grade is tested before any value — and finishes normally.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiCall } from '../../src/node/api.js';
import type { WireEvent } from '../../src/node/events.js';
import { sleepJob, sleepProvider, startStewardedOverlay, waitFor } from './steward-overlay-harness.js';

const TREE = `entitlements:
  - { id: org, guarantee_uj: 10000000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: lab, parent: org, guarantee_uj: 5000000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;

test('a configured idle policy reclaims measured-idle work and never work graded Estimator', { timeout: 150_000 }, async () => {
  // A powercap tree whose counter never moves: measured, and idle.
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const powercap = mkdtempSync(join(tmpdir(), 'c0-powercap-'));
  mkdirSync(join(powercap, 'intel-rapl:0'));
  writeFileSync(join(powercap, 'intel-rapl:0', 'energy_uj'), '123456789\n');
  writeFileSync(join(powercap, 'intel-rapl:0', 'max_energy_range_uj'), '262143328850\n');
  const o = await startStewardedOverlay('c0-idle-', {
    tree: TREE,
    steward: { idle: { windowMs: 2000, idleBelowMicrowatts: 1_000_000, sampleMs: 500 } },
    providers: { parked: sleepProvider({ type: 'rapl', powercapRoot: powercap }), guessed: sleepProvider({ type: 'estimator', estimatorWatts: 0.001 }) },
    buyers: ['buyer'],
  });
  try {
    const idleEvents: WireEvent[] = [];
    const guessEvents: WireEvent[] = [];
    const onParked = o.net.runJob(o.api.buyer!, sleepJob('lab', 45_000, { requirements: { allowlist: [o.dids.parked] } }), (e) => idleEvents.push(e));
    const onGuessed = o.net.runJob(o.api.buyer!, sleepJob('lab', 8_000, { requirements: { allowlist: [o.dids.guessed] } }), (e) => guessEvents.push(e));
    const [parked, guessed] = await Promise.all([onParked, onGuessed]);

    assert.equal(parked.status, 'preempted', `parked: ${JSON.stringify(parked.attempts)}`);
    const r = idleEvents.find((e) => e.e === 'receipt')!.receipt as { record: { failure?: { code: string }; energy: { grade: string } } };
    assert.equal(r.record.failure?.code, 'EXEC_IDLE_RECLAIMED');
    assert.equal(r.record.energy.grade, 'HwShunt');
    // 0.001 W is far below the threshold, but an Estimator figure never establishes idleness.
    assert.equal(guessed.status, 'completed', `guessed: ${JSON.stringify(guessed.attempts)}`);

    const s = await waitFor('both releases', 20_000, async () => {
      const x = (await apiCall(o.api.steward!.api, o.api.steward!.token, 'GET', '/v1/steward')) as { ledger: { length: number }; teams: Array<{ id: string; held_devices: number }> };
      return x.ledger.length >= 4 ? x : undefined;
    });
    assert.equal(s.teams.find((t) => t.id === 'lab')!.held_devices, 0);
  } finally {
    await o.close();
    rmSync(powercap, { recursive: true, force: true });
  }
});
