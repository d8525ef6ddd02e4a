/**
 * A receipt the exec stream could not deliver reaches its buyer (docs/node.md "A receipt the buyer did not get on
 * the stream"; docs/network.md §14 "Who hears a job's outcome"), across real daemons on 127.0.0.1 with their
 * default config (a buyer that joins no outcome topic): the buyer is killed while the provider runs its job, so
 * the provider's receipt (EXEC_BUYER_GONE) has nowhere to go on the stream; the provider sends it directly, cannot
 * reach the dead buyer, keeps it (on disk too), and is itself killed and restarted before the buyer returns; it sends
 * the receipt again when the restarted buyer connects. The buyer then holds it, and `c0mpute jobs` shows it.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, bootstrapAddr, freePort, buyerConfig, c0mpute, get, metricSum, metricsText, providerConfig, runJob, waitFor, waitForMarket, withLogs, type NodeProc } from './node-helpers.js';

const c = new Cluster('late-receipt');

after(async () => {
  await c.destroy();
});

test('a buyer killed mid-job gets the provider’s receipt directly once it is back, though the provider restarted meanwhile', async () => {
  await withLogs(c, async () => {
    const pc = providerConfig({ price: '0.002', listen: `/ip4/127.0.0.1/tcp/${await freePort()}` });
    let p: NodeProc = await c.start('p', pc);
    const bc = buyerConfig({ bootstrap: [bootstrapAddr(p)], collectWindowMs: 1500 });
    let b = await c.start('b', bc);
    await waitForMarket(b, 1, [p]);

    let job: string | undefined;
    let accepted = false;
    const run = runJob(b, { workload: 'builtin.sleep', params: '30000', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 120_000, input: Buffer.from('late').toString('base64') }, (e) => {
      if (e.e === 'job') job = (e.job as { address: string }).address;
      if (e.e === 'accepted') accepted = true;
    }).catch((e: Error) => e);
    await waitFor('the provider to accept the work', () => accepted, 30_000);
    await c.stop(b, 'SIGKILL');
    assert.ok((await run) instanceof Error, 'the run’s stream broke with its daemon');
    assert.ok(job, 'the job was announced');

    // The provider's run ended (EXEC_BUYER_GONE) and its receipt could not reach the dead buyer: kept for its return.
    await waitFor('the provider to find the buyer unreachable', async () => metricSum(await metricsText(p), 'c0mpute_outcomes_direct_total', { kind: 'receipt', outcome: 'unreachable' }) >= 1, 45_000);

    // The provider is killed and started again before the buyer returns: the waiting receipt was kept on disk.
    await c.stop(p, 'SIGKILL');
    // (the provider listens on its fixed port again: the buyer's bootstrap entry finds it, whichever is up first)
    [p, b] = await Promise.all([c.start('p', pc), c.start('b', bc)]);
    type Jobs = { jobs: Array<{ address: string; receipts: Array<{ provider: string; status: string; failure?: string }> }> };
    const held = await waitFor('the restarted buyer to hold the receipt', async () => (await get<Jobs>(b, '/v1/jobs?limit=5')).jobs.find((j) => j.address === job && j.receipts.length > 0), 45_000);
    assert.deepEqual(held.receipts.map((r) => [r.provider, r.status, r.failure]), [[p.did, 'failed', 'EXEC_BUYER_GONE']]);
    assert.equal(metricSum(await metricsText(p), 'c0mpute_outcomes_direct_total', { kind: 'receipt', outcome: 'accepted' }), 1, 'delivered once, by the restarted provider');
    const cli = await c0mpute(b.dir, ['jobs', '--limit', '1']);
    assert.match(cli.out, /failed \(EXEC_BUYER_GONE\)/, cli.out);
  });
});
