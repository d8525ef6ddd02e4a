/**
 * A buyer's estimate is a prediction (src/roles/steward-admission.ts claimEstimate; pool/1 §2.3, §2.6): a figure
 * for work not yet run is at best a model, never a reading, so a buyer-declared `HwShunt` estimate is reserved as
 * `ModelBased` (lowered, never raised), for a job and for a gang, and the answer says so in `reserved.grade`;
 * `ModelBased` and `Estimator` are taken as declared. A real Ledger and LevelDB in a temp dir.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { CborValue } from '../../../src/records/cbor.js';
import { AdmissionLine, claimEstimate } from '../../../src/roles/steward-admission.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { NOW, P, job } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 1000000000, guarantee_devices: 8, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 1, priority: 1 }
  - { id: web, parent: lab, guarantee_uj: 500000000, guarantee_devices: 4, over_quota_weight: 1, priority: 1 }
`;
const buyer = P(1);

describe('a buyer-declared estimate is a prediction: at most ModelBased', () => {
  it('claimEstimate lowers HwShunt to ModelBased and keeps the others', () => {
    const none = { book: { observations: [] } } as never;
    const cfg = { requiredEvidence: 3 };
    assert.deepEqual(claimEstimate({ estimate: { uj: 300, grade: 'HwShunt' } }, none, cfg, 'x'), { uj: 300, grade: 'ModelBased' });
    assert.deepEqual(claimEstimate({ estimate: { uj: 300, grade: 'ModelBased' } }, none, cfg, 'x'), { uj: 300, grade: 'ModelBased' });
    assert.deepEqual(claimEstimate({ estimate: { uj: 300, grade: 'Estimator' } }, none, cfg, 'x'), { uj: 300, grade: 'Estimator' });
  });

  it('a job and a gang declared HwShunt are reserved (and answered) ModelBased', async () => {
    const t = tempDir('c0-estimate-grade-');
    try {
      const r = await stewardRig(t.dir, TREE);
      const line = new AdmissionLine({ ports: r.ports, ledger: r.ledger, cfg: r.cfg, accounts: r.accounts, reclaim: r.reclaim, tree: r.tree, stopped: () => false, append: r.append, serial: r.serial, gangs: r.gangs });
      const frames: Array<Record<string, unknown>> = [];
      const ctx = { peer: peerIdFromDid(buyer.did), signal: new AbortController().signal, send: async (f: CborValue) => void frames.push(f as Record<string, unknown>) };
      // 300 J against a 100 J guarantee: borrows 200 J of surplus, on a figure graded as the model it is
      await line.admit({ op: 'admit', job: job(buyer, { nonce: new Uint8Array([1]) }).bytes, entitlement: 'ml', estimate: { uj: 300_000_000, grade: 'HwShunt' } }, ctx);
      assert.equal(frames[0]!.t, 'admitted');
      assert.deepEqual(frames[0]!.reserved, { uj: 300_000_000, grade: 'ModelBased' });
      const members = [P(11), P(12)];
      const run = buildRun(stringify({ name: 'g', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: members.map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) }), buyer.signer, NOW).bundle.run;
      await r.gangs.admitGang({ op: 'admit-gang', run: run.bytes, entitlement: 'web', estimate: { uj: 1_000_000, grade: 'HwShunt' }, devices_per_member: 1, deadline: NOW + 4_000_000 }, ctx);
      assert.deepEqual([frames[1]!.t, frames[1]!.reserved], ['admitted', { uj: 1_000_000, grade: 'ModelBased' }]);
      assert.deepEqual(
        (await r.ledger.records(0)).map((e) => e.reserved?.grade),
        ['ModelBased', 'ModelBased'],
      );
      line.stop();
      await r.close();
    } finally {
      t.cleanup();
    }
  });
});
