/**
 * A buyer killed with SIGKILL while its admitted job runs, then started again (review rvC C1): its run died with the
 * process and nothing resumes it, and before, its claim held the team's one device at the steward until the job's
 * deadline (10 minutes here). Now the restarted buyer withdraws the claim of the job its earlier process left, and
 * the steward releases it at once: the team holds nothing long before the deadline.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { apiCall } from '../../src/node/api.js';
import type { WireEvent } from '../../src/node/events.js';
import { sleepJob, sleepProvider, startStewardedOverlay, waitFor } from './steward-overlay-harness.js';

const TREE = `entitlements:
  - { id: org, guarantee_uj: 10000000000, guarantee_devices: 1, over_quota_weight: 0, priority: 0 }
  - { id: team, parent: org, guarantee_uj: 1000000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
`;

type Team = { id: string; held_devices: number; reserved_uj: number; open_claims: number };

test("a buyer killed mid-job and restarted withdraws its job's claim: the team's device is not held to the deadline", { timeout: 120_000 }, async () => {
  const o = await startStewardedOverlay('c0-buyer-crash-', { tree: TREE, providers: { worker: sleepProvider({ type: 'estimator', estimatorWatts: 5 }) }, buyers: ['buyer'] });
  try {
    const steward = o.api.steward!;
    const team = async () => ((await apiCall(steward.api, steward.token, 'GET', '/v1/steward')) as { teams: Team[] }).teams.find((t) => t.id === 'team')!;
    const buyer = o.net.nodes.find((n) => n.name === 'buyer')!;
    const events: WireEvent[] = [];
    // a 60 s sleep under a 10-minute deadline: the buyer dies once the provider has the input
    const run = o.net.runJob(o.api.buyer!, sleepJob('team', 60_000, { deadlineMs: 600_000 }), (e) => {
      events.push(e);
      if (e.e === 'accepted') buyer.child.kill('SIGKILL');
    });
    await run.catch(() => {});
    assert.equal((events.find((e) => e.e === 'admission')!.admission as { verdict: string }).verdict, 'Admit');
    assert.ok(events.some((e) => e.e === 'accepted'), events.map((e) => e.e).join(' '));
    await new Promise<void>((r) => (buyer.child.exitCode !== null || buyer.child.signalCode !== null ? r() : buyer.child.once('exit', () => r())));
    assert.equal((await team()).held_devices, 1, 'the claim is open while the buyer is down');

    // the same node again: its data dir, key, port and config
    const config = parse(readFileSync(join(buyer.dir, 'config.yaml'), 'utf8')) as Record<string, unknown>;
    const again = o.net.spawn('buyer', 'buyer', config, buyer.port);
    await o.net.apiOf(again);
    // released by the withdraw, long before the deadline's release (10 minutes)
    const t = await waitFor('the steward to release the crashed job’s claim', 60_000, async () => {
      const x = await team();
      return x.open_claims === 0 ? x : undefined;
    });
    assert.equal(t.held_devices, 0);
    assert.equal(t.reserved_uj, 0);
    // by the restarted buyer's withdraw (it logs once the steward answered, which may be after the status read above)
    await waitFor('the buyer to log the withdraw', 20_000, () => /withdrew the claim of a job an earlier run of this node left/.test(readFileSync(again.log, 'utf8')) || undefined);
  } finally {
    await o.close();
  }
});
