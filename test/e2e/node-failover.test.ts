/**
 * Failures across real processes: the winner SIGKILLed mid-job (the buyer moves
 * to the runner-up and the job completes before its deadline), and a provider
 * that fails honestly (the work outlives the job's timeout: a signed `failed`
 * receipt, recorded by the buyer and counted in its reputation view).
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { T } from '../../src/records/index.js';
import { Cluster, bootstrapAddr, buyerConfig, get, providerConfig, runJob, waitFor, waitForMarket, withLogs, type Figures, type NodeProc, type Wire } from './node-helpers.js';

const c = new Cluster('failover');
let f1: NodeProc;
let f2: NodeProc;
let buyer: NodeProc;
let survivor: NodeProc;

interface ReceiptRec {
  job: string;
  offer: string;
  provider: string;
  buyer: string;
  status: string;
  startedAt: number;
  completedAt: number;
  failure?: { code: string };
}

before(async () => {
  await withLogs(c, async () => {
    f1 = await c.start('f1', providerConfig({ price: '0.002', region: 'eu-west' }));
    f2 = await c.start('f2', providerConfig({ price: '0.003', region: 'eu-west', bootstrap: [bootstrapAddr(f1)] }));
    buyer = await c.start('buyer', buyerConfig({ bootstrap: [bootstrapAddr(f1), bootstrapAddr(f2)], collectWindowMs: 3000, enoughOffers: 2 }));
    await waitForMarket(buyer, 2, [f1, f2]);
  });
});

after(async () => {
  await c.destroy();
});

test('the winner is killed mid-job: the buyer moves to the runner-up and completes before the deadline', async () => {
  await withLogs(c, async () => {
    const input = Buffer.from('slow work, interrupted');
    let killed: NodeProc | undefined;
    let killing: Promise<void> | undefined;
    const { result, events } = await runJob(buyer, { workload: 'builtin.sleep', params: '3000', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 40_000, input: input.toString('base64') }, (e) => {
      // The winner has accepted the work and is running it: kill its process outright.
      if (e.e === 'accepted' && !killed) {
        killed = c.byDid(e.provider as string)!;
        killing = c.stop(killed, 'SIGKILL');
      }
    });
    await killing;
    assert.ok(killed, 'a provider accepted the work');
    assert.equal(killed.child.signalCode, 'SIGKILL');
    survivor = killed === f1 ? f2 : f1;

    const failover = events.find((e) => e.e === 'failover');
    assert.ok(failover, 'the buyer failed over');
    assert.equal(failover.from, killed.did);
    const selections = events.filter((e) => e.e === 'selection').map((e) => e.selection as Wire<{ winner: string; considered: Array<{ provider: string }> }>);
    assert.equal(selections.length, 2);
    // The second selection no longer considers the provider that vanished.
    assert.deepEqual(selections[1]!.record.considered.map((x) => x.provider), [survivor.did]);

    assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
    const attempts = result.attempts as Array<{ provider: string; outcome: string }>;
    assert.deepEqual(attempts.map((a) => a.provider), [killed.did, survivor.did]);
    assert.notEqual(attempts[0]!.outcome, 'completed');
    assert.equal(attempts[1]!.outcome, 'completed');
    const job = result.job as Wire<{ deadline: number }>;
    const receipt = result.receipt as Wire<ReceiptRec>;
    assert.equal(receipt.signer, survivor.did);
    assert.equal(receipt.record.provider, survivor.did);
    assert.equal(receipt.record.job, job.address);
    assert.equal(receipt.record.offer, selections[1]!.record.winner);
    assert.equal(receipt.record.status, 'completed');
    assert.ok(receipt.record.completedAt <= job.record.deadline, 'completed before the deadline');
    assert.equal((result.acceptance as Wire<{ receipt: string; verdict: string }>).record.receipt, receipt.address);
    assert.equal(Buffer.from(result.output as string, 'base64').toString(), input.toString(), 'builtin.sleep echoes its input');
    // The buyer's log has one line saying how the job ended, with the failed attempt's outcome.
    const ended = await waitFor('the buyer to log the job’s end', () =>
      readFileSync(buyer.log, 'utf8').split('\n').filter((l) => l.includes('"job ended"')).map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.job === job.address),
    );
    assert.equal(ended.status, 'completed');
    assert.equal(ended.provider, survivor.did);
    assert.equal(ended.attempts, 2);
    assert.deepEqual(ended.outcomes, attempts.map((a) => a.outcome));
    // The job history lists both attempts, the killed provider's with the non-delivery signed against it, and the
    // run's outcome (docs/node.md "Job history"); before, a job with a receipt held listed no attempt at all.
    const nd = events.find((e) => e.e === 'nondelivery');
    assert.ok(nd, 'a non-delivery was signed against the killed provider');
    type History = { jobs: Array<{ address: string; outcome: { status: string; provider?: string }; attempts: Array<{ provider: string; nondelivery?: string }> }> };
    const h = (await get<History>(buyer, '/v1/jobs')).jobs.find((j) => j.address === job.address)!;
    assert.deepEqual([h.outcome.status, h.outcome.provider], ['completed', survivor.did]);
    assert.deepEqual(h.attempts.map((a) => [a.provider, a.nondelivery]), [[killed.did, nd.address], [survivor.did, undefined]]);
  });
});

test('a provider that fails honestly signs a failed receipt; the buyer records it and counts the failure', async () => {
  await withLogs(c, async () => {
    assert.ok(survivor, 'runs after the failover test');
    // Five seconds of work under a one-second timeout: the provider stops it and signs a failure.
    const { result } = await runJob(buyer, { workload: 'builtin.sleep', params: '5000', timeoutMs: 1000, maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 30_000, input: Buffer.from('too slow').toString('base64') });
    assert.equal(result.status, 'failed');
    const job = result.job as Wire;
    const receipt = result.receipt as Wire<ReceiptRec>;
    assert.ok(receipt, 'a signed receipt for the failure');
    assert.equal(receipt.type, T.receipt);
    assert.equal(receipt.signer, survivor.did);
    assert.equal(receipt.record.status, 'failed');
    assert.equal(receipt.record.failure?.code, 'EXEC_TIMEOUT');
    assert.equal(receipt.record.job, job.address);
    assert.equal(receipt.record.buyer, buyer.did);
    assert.equal(receipt.record.offer, (result.selection as Wire<{ winner: string }>).record.winner);
    assert.equal((result.acceptance as Wire<{ receipt: string }>).record.receipt, receipt.address);

    // Recorded in the buyer's store, counted in its reputation view and in the provider's own.
    const jobs = await get<{ jobs: Array<{ address: string; receipts: Array<{ address: string; provider: string; status: string; failure?: string }> }> }>(buyer, '/v1/jobs');
    const held = jobs.jobs.find((j) => j.address === job.address);
    assert.ok(held);
    assert.deepEqual(held.receipts.map((r) => ({ address: r.address, provider: r.provider, status: r.status, failure: r.failure })), [{ address: receipt.address, provider: survivor.did, status: 'failed', failure: 'EXEC_TIMEOUT' }]);
    const mine = await get<Figures>(buyer, `/v1/reputation/${encodeURIComponent(survivor.did)}`);
    assert.equal(mine.failures, 1);
    assert.equal(mine.successes, 1, 'the failover job it completed');
    const own = await get<Figures>(survivor, `/v1/reputation/${encodeURIComponent(survivor.did)}`);
    assert.equal(own.failures, 1);
  });
});
