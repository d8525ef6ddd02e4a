/**
 * Preemption on a private overlay (pool/1 §5, docs/overlays.md): one provider
 * without GPUs (capacity: one device), a low-priority team running a long job
 * on it, then a high-priority team's claim, admissible within its own
 * guarantees, that needs the device. The steward reclaims it: the provider
 * stops the low team's work with a signed `failed` receipt EXEC_PREEMPTED,
 * which releases that claim before the high team's claim is admitted and runs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readLedgerDir } from '../../src/ledger/store.js';
import { open } from '../../src/records/envelope.js';
import { apiCall } from '../../src/node/api.js';
import type { LedgerEntry } from '../../src/ledger/entry.js';
import type { WireEvent } from '../../src/node/events.js';
import { sleepJob, sleepProvider, startStewardedOverlay, waitFor } from './steward-overlay-harness.js';

const TREE = `entitlements:
  - { id: org, guarantee_uj: 10000000000, guarantee_devices: 2, over_quota_weight: 0, priority: 0 }
  - { id: low, parent: org, guarantee_uj: 1000000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
  - { id: high, parent: org, guarantee_uj: 1000000000, guarantee_devices: 1, over_quota_weight: 0, priority: 5 }
`;

test('a higher-priority admission reclaims the device from lower-priority work', { timeout: 150_000 }, async () => {
  const o = await startStewardedOverlay('c0-preempt-', { tree: TREE, providers: { worker: sleepProvider({ type: 'estimator', estimatorWatts: 50 }) }, buyers: ['lowbuyer', 'highbuyer'] });
  try {
    const lowEvents: WireEvent[] = [];
    let lowDone: Record<string, unknown> | undefined;
    const low = o.net.runJob(o.api.lowbuyer!, sleepJob('low', 40_000), (e) => lowEvents.push(e)).then((r) => (lowDone = r));
    const end = Date.now() + 40_000;
    while (!lowEvents.some((e) => e.e === 'accepted')) {
      // Fail at once, with the outcome, if the low job ended without running.
      if (lowDone) assert.fail(`the low job ended before running: ${JSON.stringify(lowDone.status)} ${JSON.stringify(lowDone.attempts)}`);
      if (Date.now() > end) assert.fail('the low job did not start within 40 s');
      await new Promise((r) => setTimeout(r, 150));
    }
    const highEvents: WireEvent[] = [];
    const high = await o.net.runJob(o.api.highbuyer!, sleepJob('high', 300), (e) => highEvents.push(e));
    const lowResult = await low;

    assert.equal(high.status, 'completed', `high: ${JSON.stringify(high.attempts)}`);
    assert.equal((highEvents.find((e) => e.e === 'admission')!.admission as { verdict: string }).verdict, 'Admit');
    assert.equal(lowResult.status, 'preempted');
    const lowReceipt = lowEvents.find((e) => e.e === 'receipt')!.receipt as { record: { status: string; failure?: { code: string }; energy: { uj: number } } };
    assert.equal(lowReceipt.record.status, 'failed');
    assert.equal(lowReceipt.record.failure?.code, 'EXEC_PREEMPTED');

    await waitFor('both releases', 20_000, async () => {
      const s = (await apiCall(o.api.steward!.api, o.api.steward!.token, 'GET', '/v1/steward')) as { ledger: { length: number } };
      return s.ledger.length >= 4 ? s : undefined;
    });
    await o.net.stop();
    const events = (await readLedgerDir(o.ledgerDir)).entries.map((b) => open(b, 'pool/1').record as LedgerEntry);
    // The victim is released (with what its stopped work spent) before the newcomer is admitted.
    assert.deepEqual(events.map((e) => e.event), ['Admitted', 'Released', 'Admitted', 'Released']);
    assert.equal((events[1] as unknown as { actual: { uj: number } }).actual.uj, lowReceipt.record.energy.uj);
  } finally {
    await o.close();
  }
});
