/**
 * A managed overlay: the steward signs the selection on the buyer's behalf
 * (scheduling.md: "a private organization scheduler on a private overlay"),
 * naming the buyer; the provider runs a selection the steward signed, and the
 * job completes with every record linking.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { WireEvent } from '../../src/node/events.js';
import { sleepJob, sleepProvider, startStewardedOverlay } from './steward-overlay-harness.js';

const TREE = `entitlements:
  - { id: org, guarantee_uj: 10000000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: team, parent: org, guarantee_uj: 5000000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;

test('on a managed overlay the steward signs the selection and the provider runs it', { timeout: 120_000 }, async () => {
  const o = await startStewardedOverlay('c0-managed-', { tree: TREE, managed: true, providers: { worker: sleepProvider({ type: 'estimator', estimatorWatts: 5 }) }, buyers: ['buyer'] });
  try {
    const events: WireEvent[] = [];
    const r = await o.net.runJob(o.api.buyer!, sleepJob('team', 200), (e) => events.push(e));
    assert.equal(r.status, 'completed', JSON.stringify(r.attempts));
    const sel = events.find((e) => e.e === 'selection')!.selection as { signer: string; record: { buyer: string; job: string; winner: string } };
    assert.equal(sel.signer, o.dids.steward, 'the steward signed the selection');
    assert.equal(sel.record.buyer, o.dids.buyer, 'on the buyer’s behalf');
    const job = events.find((e) => e.e === 'job')!.job as { address: string };
    const receipt = events.find((e) => e.e === 'receipt')!.receipt as { signer: string; record: { job: string; offer: string; buyer: string } };
    assert.equal(sel.record.job, job.address);
    assert.equal(receipt.record.offer, sel.record.winner);
    assert.equal(receipt.signer, o.dids.worker);
    assert.equal(receipt.record.buyer, o.dids.buyer);
  } finally {
    await o.close();
  }
});
