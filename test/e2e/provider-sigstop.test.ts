/**
 * A provider stopped (SIGSTOP) while it runs a job, and resumed (SIGCONT) past the job's deadline, across real daemons
 * on 127.0.0.1 (docs/node.md "Provider", "Running" and "Energy"; QA qaRep F4). On resuming, the sleep's timer and
 * the run's deadline timer are both due, the sleep's first: before, the sleep's end cleared the deadline's timer and
 * the provider signed `completed`, dated after the deadline, with the full price and 65 W for the whole stop. Now the
 * run's end is checked against the deadline (failed EXEC_TIMEOUT) and the estimator leaves out the time the process
 * was frozen. The buyer's `accepted` on it is said `acknowledged` by `c0mpute jobs`.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, get, providerConfig, runJob, sleep, waitFor, waitForMarket, withLogs } from './node-helpers.js';

const c = new Cluster('provider-sigstop');

after(async () => {
  await c.destroy();
});

test('a provider stopped past the deadline and resumed signs failed EXEC_TIMEOUT, with energy for the time it ran, not for the stop', async () => {
  await withLogs(c, async () => {
    const p = await c.start('p', providerConfig({ price: '0.002' }));
    const b = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(p)], collectWindowMs: 1000 }));
    await waitForMarket(b, 1, [p]);
    const pid = p.child.pid!;
    let job: string | undefined;
    let deadline = 0;
    let stopped: Promise<void> | undefined;
    const run = runJob(b, { workload: 'builtin.sleep', params: '1000', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 4000, input: Buffer.from('stop me').toString('base64') }, (e) => {
      if (e.e === 'job') {
        const j = e.job as { address: string; record: { deadline: number } };
        job = j.address;
        deadline = j.record.deadline;
      }
      if (e.e === 'accepted' && !stopped) {
        process.kill(pid, 'SIGSTOP');
        // resumed 1 s past the deadline: the sleep (due 1 s after it started) and the deadline are both overdue
        stopped = sleep(Math.max(0, deadline + 1000 - Date.now())).finally(() => process.kill(pid, 'SIGCONT'));
      }
    }).catch((e: Error) => e);
    try {
      await waitFor('the provider to accept the work', () => stopped !== undefined, 30_000, 20);
      await stopped;
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const outcome = await run;
    assert.ok(!(outcome instanceof Error), String(outcome));
    type Walk = { receipts: Array<{ record: { status: string; failure?: { code: string; message: string }; completedAt: number; startedAt: number; energy: { uj: number; grade: string } } }> };
    const r = (await waitFor('the provider’s receipt', async () => (await get<Walk>(p, `/v1/console/job/${encodeURIComponent(job!)}`)).receipts[0], 20_000)).record;
    assert.ok(r.completedAt > deadline, `the run ended after the deadline (${r.completedAt - deadline} ms)`);
    assert.equal(r.status, 'failed', JSON.stringify(r));
    assert.equal(r.failure?.code, 'EXEC_TIMEOUT');
    assert.match(r.failure!.message, /after the job's deadline/);
    // 65 W over the ~4 s stop would be ~260 J; the time the process ran is a fraction of a second and at most the
    // stall watch's 1 s tick: well under 3 s of it (195 J)
    assert.equal(r.energy.grade, 'Estimator');
    assert.ok(r.energy.uj < 65 * 3_000 * 1000, `energy ${r.energy.uj} µJ over ${r.completedAt - r.startedAt} ms`);
    // the buyer's `accepted` on that failed receipt is said `acknowledged` (docs/node.md "Buyer"), the record unchanged
    const acc = outcome.events.find((e) => e.e === 'acceptance') as { receiptStatus?: string; acceptance: { record: { verdict: string } } } | undefined;
    assert.deepEqual([acc?.receiptStatus, acc?.acceptance.record.verdict], ['failed', 'accepted']);
    const jobs = await c0mpute(b.dir, ['jobs', '--limit', '1']);
    assert.match(jobs.out, /failed \(EXEC_TIMEOUT\), acknowledged$/m, jobs.out);
  });
});
