/**
 * A training run bought through the market as a gang (docs/training.md "A
 * training run bought as a gang"): the buyer signs a run naming three
 * providers, buys one `train.member` job from each (allowlist = that
 * provider), and every provider joins the run on its own node, trains, and
 * returns the final weights' address with a signed receipt. All three report
 * the same weights, equal to the single-process run.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { hashHex } from '../../src/records/address.js';
import { loadIdentity } from '../../src/node/identity.js';
import { buildRun, referenceFor } from '../../src/roles/trainer/run-file.js';
import { Cluster, bootstrapAddr, buyerConfig, providerConfig, runJob, waitForMarket, withLogs } from './node-helpers.js';

const c = new Cluster('gang');
after(() => c.destroy());

test('a gang of three providers trains a bought run: receipts from every member, identical weights equal to the single-process run', async () => {
  await withLogs(c, async () => {
    const withMember = (cfg: Record<string, unknown>) => {
      const prov = cfg.provider as { workloads: Record<string, unknown> };
      prov.workloads['train.member'] = { executor: { type: 'builtin', name: 'builtin.train-member' }, price: { amount: '0.005', currency: 'USD' }, duration: { baseMs: 20_000 } };
      return cfg;
    };
    const p1 = await c.start('p1', withMember(providerConfig({})));
    const boot = [bootstrapAddr(p1)];
    const p2 = await c.start('p2', withMember(providerConfig({ bootstrap: boot })));
    const p3 = await c.start('p3', withMember(providerConfig({ bootstrap: [...boot, bootstrapAddr(p2)] })));
    const b = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(p1), bootstrapAddr(p2), bootstrapAddr(p3)] }));
    const providers = [p1, p2, p3];
    await waitForMarket(b, 3, providers.map((p) => p.did));
    const buyerKey = loadIdentity(c.dataDir('b').dir).signer;
    const yaml = ['name: gang', 'model: { layers: [4, 16, 3] }', 'seed: 3', 'members:', ...providers.map((p) => `  - { did: ${p.did}, addr: /ip4/127.0.0.1/tcp/1 }`), 'stepsPerEpoch: 5', 'epochs: 2', 'timeoutMs: 20000'].join('\n');
    const { bundle, json } = buildRun(yaml, buyerKey, Date.now());
    const input = Buffer.from(JSON.stringify({ run: (JSON.parse(json) as { run: string }).run }));
    const runs = await Promise.all(
      providers.map((p) => runJob(b, { workload: 'train.member', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 120_000, timeoutMs: 110_000, requirements: { allowlist: [p.did] }, input: input.toString('base64') })),
    );
    const want = referenceFor(bundle.run.record).weights;
    runs.forEach(({ result }, i) => {
      assert.equal(result.status, 'completed', JSON.stringify(result).slice(0, 2000));
      const output = Buffer.from(result.output as string, 'base64');
      const o = JSON.parse(output.toString()) as { run: string; member: string; status: string; weights: string; epochs: unknown[] };
      assert.equal(o.run, bundle.run.address);
      assert.equal(o.member, providers[i]!.did);
      assert.equal(o.status, 'done');
      assert.equal(o.weights, want);
      assert.equal(o.epochs.length, 2);
      const receipt = result.receipt as { signer: string; record: { status: string; outputHash: string } };
      assert.equal(receipt.signer, providers[i]!.did);
      assert.equal(receipt.record.outputHash, hashHex(output));
    });
  });
});
