/**
 * A training run bought through the market as a gang (docs/training.md "A
 * training run bought as a gang"): `c0mpute train buy run.yaml --providers 3`
 * picks three providers from the market, signs a run naming them, buys one
 * `train.member` job from each (allowlist = that provider), and every provider
 * joins the run on its own node, trains, and returns the final weights'
 * address with a signed receipt. All three report the same weights, equal to
 * the single-process run; a gang larger than the market is TRAIN_GANG_SHORT.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { readRunBundle, referenceFor } from '../../src/roles/trainer/run-file.js';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, get, providerConfig, waitForMarket, withLogs } from './node-helpers.js';

const c = new Cluster('gang');
after(() => c.destroy());

test('`train buy --providers 3`: a gang of three providers trains a bought run, receipts from every member, identical weights equal to the single-process run', async () => {
  await withLogs(c, async () => {
    const withMember = (cfg: Record<string, unknown>) => {
      const prov = cfg.provider as { workloads: Record<string, unknown> };
      prov.workloads['train.member'] = { executor: { type: 'builtin', name: 'builtin.train-member' }, price: { amount: '0.005', currency: 'USD' }, duration: { baseMs: 20_000 } };
      return cfg;
    };
    const p1 = await c.start('p1', withMember(providerConfig({})));
    const boot = [bootstrapAddr(p1)];
    // p2 and p3 start side by side from p1; the buyer, bootstrapped to all three, waits for the market below.
    const [p2, p3] = await Promise.all([c.start('p2', withMember(providerConfig({ bootstrap: boot }))), c.start('p3', withMember(providerConfig({ bootstrap: boot })))]);
    // Each member job allowlists its one provider (`train buy`), so one offer is all it can get: the buyer takes it
    // at once (enoughOffers 1) instead of waiting out its whole collect window for offers that cannot come.
    const b = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(p1), bootstrapAddr(p2), bootstrapAddr(p3)], enoughOffers: 1 }));
    const providers = [p1, p2, p3];
    await waitForMarket(b, 3, providers);
    // `c0mpute train buy` against the buyer's daemon: it picks the three providers from the market, signs the run, buys a member job from each.
    const dir = c.dataDir('b').dir;
    const yamlPath = join(dir, 'run.yaml');
    writeFileSync(yamlPath, ['name: gang', 'model: { layers: [4, 16, 3] }', 'seed: 3', 'stepsPerEpoch: 5', 'epochs: 2', 'timeoutMs: 20000'].join('\n'));
    const bundlePath = join(dir, 'gang.run.json');
    const r = await c0mpute(dir, ['train', 'buy', yamlPath, '--providers', '3', '--deadline', '80000', '--out', bundlePath, '--json']);
    assert.equal(r.code, 0, r.out + r.err);
    const report = JSON.parse(r.out) as { run: string; ok: boolean; weights: string; members: Array<{ did: string; status: string; receipt: string; weights: string }> };
    const bundle = readRunBundle(bundlePath);
    assert.equal(report.run, bundle.run.address);
    assert.deepEqual(bundle.run.record.members, providers.map((p) => p.did).sort());
    assert.equal(report.ok, true);
    assert.equal(report.weights, referenceFor(bundle.run.record).weights);
    assert.deepEqual(report.members.map((m) => m.did), bundle.run.record.members);
    // Every member's receipt is held by the buyer's node, for a job of this buyer, completed and accepted.
    const held = (await get<{ jobs: Array<{ receipts: Array<{ address: string; provider: string; status: string; acceptance?: string }> }> }>(b, '/v1/jobs')).jobs.flatMap((j) => j.receipts);
    for (const m of report.members) {
      assert.equal(m.status, 'completed');
      assert.equal(m.weights, report.weights);
      const rec = held.find((x) => x.address === m.receipt);
      assert.deepEqual(rec && [rec.provider, rec.status, rec.acceptance], [m.did, 'completed', 'accepted']);
    }
    // Buying again with a gang larger than the market: refused before anything is signed or bought.
    const short = await c0mpute(dir, ['train', 'buy', yamlPath, '--providers', '4', '--json']);
    assert.equal(short.code === 0, false);
    assert.match(short.err + short.out, /TRAIN_GANG_SHORT/);
  });
});
