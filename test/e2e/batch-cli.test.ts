/**
 * `c0mpute batch plan` as a process (docs/matching.md "Batch plans"): a bad
 * batch file exits 3 with its code before any daemon is asked; against a real
 * daemon that sees no live provider the batch is refused (exit 1) with the
 * shortfall, and a bad API body is coded.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiCall } from '../../src/node/api.js';
import { Cluster, buyerConfig, c0mpute, withLogs } from './node-helpers.js';

const c = new Cluster('batch');
after(async () => {
  await c.destroy();
});

test('batch plan: a bad file is exit 3 BATCH_FIELD_INVALID; a real daemon with no live provider refuses the batch with the shortfall (exit 1)', async () => {
  const { dir } = c.dataDir('cli');
  const bad = join(c.root, 'bad.yaml');
  writeFileSync(bad, 'window: 1m\nworkloads: [{ workload: builtin.sha256, lines: -1, maxPrice: "0.1 USD" }]\n');
  const r1 = await c0mpute(dir, ['batch', 'plan', bad]);
  assert.equal(r1.code, 3, r1.err);
  assert.match(r1.err, /^error BATCH_FIELD_INVALID: .*workloads\.0\.lines/m);

  const n = await c.start('buyer', buyerConfig());
  await withLogs(c, async () => {
    const good = join(c.root, 'good.yaml');
    writeFileSync(good, 'window: 1m\nworkloads: [{ workload: builtin.sha256, lines: 3, maxPrice: "0.1 USD" }]\n');
    const r2 = await c0mpute(n.dir, ['batch', 'plan', good]);
    assert.equal(r2.code, 1, r2.err + r2.out);
    // a buyer alone: no provider serves the workload at all, which is not a matter of capacity
    assert.match(r2.err, /^error BATCH_NO_PROVIDER: no live provider can take builtin\.sha256 \(no live provider serves it\)/m);
    await assert.rejects(apiCall(n.api.api, n.api.token, 'POST', '/v1/batch/plan', { batch: { windowMs: 0, workloads: [] } }), { code: 'BATCH_FIELD_INVALID' });
  });
});
