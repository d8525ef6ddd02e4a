/**
 * A training gang on a stewarded overlay, admitted as ONE pool/1 claim
 * (docs/training.md "A gang on a stewarded overlay"; pool/1 §2.4, §4, §6.2):
 * a steward, a witness, three providers selling `train.member` and a buyer,
 * as real processes. `train buy --providers 3 --entitlement small` (a team
 * owed 2 devices) is refused as a whole before any member job is sent;
 * `--entitlement ml` is admitted as one claim, an extra (4th) member job citing
 * it is refused STEWARD_GANG_FULL, the gang trains to the single-process
 * weights (93.3 % held-out accuracy after 18 steps), and the steward's ledger holds exactly one Admitted entry (3
 * devices) and one Released entry charging the sum of the three members'
 * receipts.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readRunBundle, referenceFor } from '../../src/roles/trainer/run-file.js';
import { c0mpute, get, runJob, waitFor, withLogs } from './node-helpers.js';
import { showLedger, startOrg, stewardStatus, type Org } from './steward-helpers.js';

const TREE = `# pool/1 entitlement tree (energies in µJ)
entitlements:
  - { id: lab, guarantee_uj: 100000000000, guarantee_devices: 3, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000000, guarantee_devices: 3, over_quota_weight: 1, priority: 2 }
  - { id: small, parent: lab, guarantee_uj: 50000000000, guarantee_devices: 2, over_quota_weight: 1, priority: 1 }
`;

let org: Org | undefined;
after(() => org?.c.destroy());

test('`train buy --providers 3 --entitlement`: one pool/1 claim for the gang, refused as a whole past the entitlement, an extra member refused, released once with the members’ summed energy', async () => {
  org = await startOrg('gang-steward', {
    providers: 3,
    buyers: ['b'],
    tree: TREE,
    provider: (cfg) => {
      const prov = cfg.provider as { workloads: Record<string, unknown> };
      prov.workloads['train.member'] = { executor: { type: 'builtin', name: 'builtin.train-member' }, price: { amount: '0.005', currency: 'USD' }, duration: { baseMs: 20_000 } };
      return cfg;
    },
  });
  const o = org;
  await withLogs(o.c, async () => {
    const b = o.buyers.b!;
    const dir = b.dir;
    const yamlPath = join(dir, 'run.yaml');
    writeFileSync(yamlPath, ['name: gang', 'model: { layers: [4, 16, 3] }', 'seed: 3', 'stepsPerEpoch: 6', 'epochs: 3', 'timeoutMs: 20000'].join('\n'));
    const jobsHeld = async () => (await get<{ jobs: unknown[] }>(b, '/v1/jobs')).jobs.length;

    // A gang of 3 under a team owed 2 devices: denied as a whole (§4.2), nothing recorded, no member job sent.
    const big = await c0mpute(dir, ['train', 'buy', yamlPath, '--providers', '3', '--entitlement', 'small', '--energy', '3000000000', '--json']);
    assert.notEqual(big.code, 0, big.out + big.err);
    assert.match(big.err, /TRAIN_GANG_REFUSED/);
    assert.equal((JSON.parse(big.out) as { admission: { verdict: string } }).admission.verdict, 'Deny');
    assert.equal((await stewardStatus(o.steward)).ledger.length, 0);
    assert.equal(await jobsHeld(), 0);

    // The gang under `ml`: one claim, three member jobs citing it.
    const bundlePath = join(dir, 'gang.run.json');
    const buying = c0mpute(dir, ['train', 'buy', yamlPath, '--providers', '3', '--entitlement', 'ml', '--energy', '3000000000', '--deadline', '90000', '--out', bundlePath, '--json']);
    // While the claim is open: a fourth member job citing it is refused before it is announced.
    const gangsOf = async () => ((await stewardStatus(o.steward)) as unknown as { gangs: Array<{ claim: string; entitlement: string; size: number }> }).gangs;
    await waitFor('the gang admitted', async () => existsSync(bundlePath) && (await gangsOf()).length === 1, 60_000);
    const claim = readRunBundle(bundlePath).run.address;
    assert.deepEqual((await gangsOf()).map((g) => [g.claim, g.entitlement, g.size]), [[claim, 'ml', 3]]);
    const extra = { workload: 'train.member', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 30_000, entitlement: 'ml', gang: { claim, member: 3 }, params: JSON.stringify({ claim, member: 3 }), input: Buffer.from('{}').toString('base64') };
    await assert.rejects(runJob(b, extra), (e: Error & { code?: string }) => e.code === 'STEWARD_GANG_FULL');

    const r = await buying;
    assert.equal(r.code, 0, r.out + r.err);
    const report = JSON.parse(r.out) as { run: string; ok: boolean; weights: string; admission: { verdict: string; reserved: { uj: number } }; members: Array<{ did: string; status: string; energy: { uj: number; grade: string } }> };
    const bundle = readRunBundle(bundlePath);
    assert.equal(report.run, claim);
    assert.equal(report.ok, true);
    assert.equal(report.admission.verdict, 'Admit');
    assert.equal(report.admission.reserved.uj, 3_000_000_000);
    const ref = referenceFor(bundle.run.record);
    assert.equal(report.weights, ref.weights);
    assert.ok(ref.accuracy >= 0.9, `held-out accuracy ${ref.accuracy}`);
    const summed = report.members.reduce((s, m) => s + m.energy.uj, 0);
    assert.ok(report.members.every((m) => m.status === 'completed' && m.energy.uj > 0));

    // Released once (on the last member's receipt or the buyer's release, whichever came first).
    await waitFor('the gang released', async () => (await stewardStatus(o.steward)).teams.find((t) => t.id === 'ml')!.open_claims === 0, 60_000);
    await o.c.stop(o.steward);
    const rows = await showLedger(o.c, o.ledgerDir);
    assert.deepEqual(rows.map((x) => [x.entry.event, x.entry.claim]), [['Admitted', claim], ['Released', claim]]);
    const [adm, rel] = rows.map((x) => x.entry);
    assert.deepEqual([adm!.entitlement, adm!.devices, adm!.reserved!.uj], ['ml', 3, 3_000_000_000]);
    assert.deepEqual(rel!.actual, { uj: summed, grade: 'Estimator' });
  });
});
