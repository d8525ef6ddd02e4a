/**
 * The orphan reaper (issue #10; docs/node.md "Orphaned work after a crash"),
 * over real `c0mpute start` processes: a provider running an `exec` job
 * (`sh -c 'sleep 300'`) is killed with `kill -9`; its process group lives on
 * (re-parented). On restart the provider ends that group and records the
 * failure: a signed failed receipt (EXEC_PROVIDER_CRASHED), counted in
 * c0mpute_jobs_total{role="provider",outcome="failed"}, and the record is gone
 * from the data directory.
 */
import '../../src/polyfill.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { groupMembers, type GroupRecord } from '../../src/roles/provider/orphans.js';
import { Cluster, bootstrapAddr, buyerConfig, metricsText, providerConfig, runJob, waitFor, waitForMarket, withLogs } from './node-helpers.js';

const c = new Cluster('exec-orphans');
after(() => c.destroy());

function records(dir: string): GroupRecord[] {
  const d = join(dir, 'exec-groups', 'public');
  try {
    return readdirSync(d)
      .filter((n) => n.endsWith('.json'))
      .map((n) => JSON.parse(readFileSync(join(d, n), 'utf8')) as GroupRecord);
  } catch {
    return [];
  }
}

test('a provider killed with kill -9 ends its orphaned exec group on restart and records the failure', async () => {
  await withLogs(c, async () => {
    const cfg = providerConfig();
    const prov = cfg.provider as { workloads: Record<string, unknown> };
    prov.workloads['test.sleep'] = { executor: { type: 'exec', command: ['sh', '-c', 'sleep 300; echo done'] }, price: { amount: '0.001', currency: 'USD' }, duration: { baseMs: 1000 } };
    let p = await c.start('p', cfg);
    const b = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(p)], collectWindowMs: 2000, enoughOffers: 1 }));
    await waitForMarket(b, 1, [p]);
    const run = runJob(b, { workload: 'test.sleep', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 600_000, input: Buffer.from('zz').toString('base64') }).catch((e: Error) => e);

    const rec = await waitFor('the provider to record the running group', () => records(p.dir)[0], 60_000);
    c.onDestroy(async () => {
      // Whatever happens to the test, no sleeper outlives it.
      if (groupMembers(rec.pgid).length) process.kill(-rec.pgid, 'SIGKILL');
    });
    await waitFor('the group to be running', () => groupMembers(rec.pgid).length > 0);
    await c.stop(p, 'SIGKILL');
    // Re-parented, the work runs on.
    assert.ok(groupMembers(rec.pgid).length > 0, 'the orphaned group outlives the provider');

    p = await c.start('p', cfg);
    await waitFor('the orphaned group to be ended', () => groupMembers(rec.pgid).length === 0, 30_000);
    assert.deepEqual(records(p.dir), [], 'the record is removed');
    await waitFor('the failure to be recorded', async () => /c0mpute_jobs_total\{[^}]*role="provider"[^}]*outcome="failed"[^}]*\} 1/.test(await metricsText(p)), 30_000);
    assert.match(readFileSync(p.log, 'utf8'), /ended the work a crashed run left behind/);
    await run;
  });
});
