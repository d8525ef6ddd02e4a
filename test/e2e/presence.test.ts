/**
 * Presence across real processes (docs/matching.md "Presence"): a provider
 * daemon publishes c0mpute.presence/1; the buyer daemon's `/v1/market` and
 * `c0mpute market` show it live with its free slots, one fewer while a job
 * runs there; once the provider is gone the buyer drops it from live within
 * the presence window (its advert is still live: the drop is presence's).
 * The same live view feeds `c0mpute market probe` and `c0mpute batch plan`.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, get, providerConfig, runJob, waitFor, waitForMarket, withLogs } from './node-helpers.js';

interface MarketView {
  live: number;
  presence: { live: number; freeSlots: number; providers: Array<{ did: string; freeSlots: number; workloads: string[]; liveUntil: number }> };
}

const c = new Cluster('presence');

/** A job file for the probe: sha256 within the provider's price. */
function jobFile(dir: string): string {
  const f = join(dir, 'probe-job.yaml');
  writeFileSync(f, 'workload: builtin.sha256\nparams: "1"\nmaxPrice: { amount: "0.01", currency: USD }\n');
  return f;
}
after(async () => {
  await c.destroy();
});

test('a buyer sees the provider live with its free slots, and drops it within the window once it stops', async () => {
  await withLogs(c, async () => {
    const pc = providerConfig({ slots: 2 });
    Object.assign(pc.provider as Record<string, unknown>, { presenceWindowMs: 3000, presenceEveryMs: 1000 });
    const p = await c.start('p', pc);
    // One provider: the buyer takes its offer as soon as it arrives (no 4 s collection window before the job runs).
    const b = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(p)], enoughOffers: 1 }));
    await waitForMarket(b, 1, [p]);

    const seen = await waitFor('the buyer to see the provider present with 2 free slots', async () => {
      const m = await get<MarketView>(b, '/v1/market');
      const x = m.presence.providers.find((q) => q.did === p.did);
      return x?.freeSlots === 2 ? x : undefined;
    }, 45_000);
    assert.deepEqual(seen.workloads, ['builtin.sha256', 'builtin.sleep']);
    const cli = await c0mpute(b.dir, ['market']);
    assert.equal(cli.code, 0, cli.err);
    assert.match(cli.out, /presence\s+1 provider live, 2 free slots/);
    assert.match(cli.out, /advert live {2}present, 2 free slots/);

    // The live view feeds the probe: the provider is the first (only) candidate, nothing signed.
    const probe = await c0mpute(b.dir, ['market', 'probe', '--json', jobFile(c.root)]);
    assert.equal(probe.code, 0, probe.err);
    assert.equal((JSON.parse(probe.out) as { candidates: Array<{ provider: string }> }).candidates[0]?.provider, p.did);

    // The live view feeds the batch planner: the provider takes the line at its ask (capacity: an unknown
    // provider's reputation 0.5 × 2 free slots × 1 run in the window = 1 line; docs/matching.md "Batch plans").
    const batch = join(c.root, 'batch.yaml');
    writeFileSync(batch, 'window: 1m\nworkloads: [{ workload: builtin.sha256, lines: 1, maxPrice: "0.1 USD" }]\n');
    const plan = await c0mpute(b.dir, ['batch', 'plan', batch, '--json']);
    assert.equal(plan.code, 0, plan.err);
    assert.match(plan.out, new RegExp(p.did));

    // A job running there takes a slot: the next presence says so, well before the cadence would.
    const run = runJob(b, { workload: 'builtin.sleep', params: '4000', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 120_000, timeoutMs: 60_000, input: Buffer.from('hold a slot').toString('base64') });
    await waitFor('the buyer to see one free slot while the job runs', async () => {
      const m = await get<MarketView>(b, '/v1/market');
      return m.presence.providers.find((q) => q.did === p.did)?.freeSlots === 1;
    }, 45_000);
    assert.equal((await run).result.status, 'completed');
    await waitFor('both slots free again', async () => (await get<MarketView>(b, '/v1/market')).presence.providers.find((q) => q.did === p.did)?.freeSlots === 2, 45_000);

    await c.stop(p, 'SIGKILL');
    const stoppedAt = Date.now();
    await waitFor('the buyer to drop the stopped provider from live', async () => (await get<MarketView>(b, '/v1/market')).presence.live === 0, 45_000);
    // Dropped by its presence window (3 s, the least the config takes; the buyer caps nothing here), not by its advert (live for 10 min).
    assert.ok(Date.now() - stoppedAt < 3000 + 20_000, 'within the window plus generous slack');
    const m = await get<MarketView>(b, '/v1/market');
    assert.equal(m.live, 1, 'its advert is still live');
    // the row says the advert is live (its lifetime) but the provider is not there now (a stopped provider read "live")
    const after = (await c0mpute(b.dir, ['market'])).out;
    assert.doesNotMatch(after, /present, /);
    assert.match(after, /advert live {2}not present now/);
  });
});
