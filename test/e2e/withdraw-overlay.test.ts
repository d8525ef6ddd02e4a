/**
 * A buyer that gives up on an admitted job withdraws its claim: the steward
 * releases it at once (with what its receipts show: here nothing ran), so the
 * team's reservation and device are not held until the job's deadline.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiCall } from '../../src/node/api.js';
import type { WireEvent } from '../../src/node/events.js';
import { sleepJob, sleepProvider, startStewardedOverlay } from './steward-overlay-harness.js';

const TREE = `entitlements:
  - { id: org, guarantee_uj: 10000000000, guarantee_devices: 2, over_quota_weight: 0, priority: 0 }
  - { id: team, parent: org, guarantee_uj: 1000000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
`;

test('an admitted job nobody can run is withdrawn and released before its deadline', { timeout: 120_000 }, async () => {
  // Nobody offers here, so the buyer waits out its whole offer window before it gives up: a short one (no offer is awaited).
  const o = await startStewardedOverlay('c0-withdraw-', { tree: TREE, providers: { worker: sleepProvider({ type: 'estimator', estimatorWatts: 5 }) }, buyers: ['buyer'], buyer: { collectWindowMs: 4_000 } });
  try {
    const events: WireEvent[] = [];
    // Nobody on the overlay has 64 cores: admitted (inside the guarantee), then no provider is eligible.
    const r = await o.net.runJob(o.api.buyer!, sleepJob('team', 100, { deadlineMs: 600_000, requirements: { cpuCores: 64 } }), (e) => events.push(e));
    assert.equal((events.find((e) => e.e === 'admission')!.admission as { verdict: string }).verdict, 'Admit');
    assert.ok(r.status === 'no-offers' || r.status === 'no-eligible-provider', String(r.status));
    // Released now, not in ten minutes: the team holds nothing, and the ledger has the release.
    const s = (await apiCall(o.api.steward!.api, o.api.steward!.token, 'GET', '/v1/steward')) as { ledger: { length: number }; teams: Array<{ id: string; held_devices: number; reserved_uj: number; spent_uj: number }> };
    assert.equal(s.ledger.length, 2);
    const team = s.teams.find((t) => t.id === 'team')!;
    assert.equal(team.held_devices, 0);
    assert.equal(team.reserved_uj, 0);
    assert.equal(team.spent_uj, 0, 'nothing ran, nothing is charged');
  } finally {
    await o.close();
  }
});
