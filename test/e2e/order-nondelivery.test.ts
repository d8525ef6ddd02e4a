/**
 * An open order's winner killed before it delivers is charged (docs/matching.md "No winner by the deadline";
 * `c0mpute.nondelivery/3`), across real daemons on 127.0.0.1: a buyer posts an open order, the one provider claims it
 * and is SIGKILLed once it has the work; the buyer signs a /3 (proved by the order, its first-claim selection and the
 * claim), and the claimant's reputation shows the non-delivery at the buyer (first hand) and at a node that trusts the
 * buyer (second hand, from the /3 on the `nondelivery3` topic). Before, the run ended `failed` and nobody's
 * reputation counted it: a key could claim orders and vanish at no cost.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, bootstrapAddr, buyerConfig, get, providerConfig, runJob, waitFor, waitForMarket, withLogs, type Figures } from './node-helpers.js';

const c = new Cluster('order-nondelivery');
after(async () => {
  await c.destroy();
});

test('an open order’s claimant killed mid-job: the buyer signs a /3 and the claimant’s reputation shows it, first and second hand', async () => {
  await withLogs(c, async () => {
    const pc = providerConfig({ price: '0.002' });
    (pc.provider as Record<string, unknown>).claimMode = 'any';
    const p = await c.start('p', pc);
    const b = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(p)] }));
    // counts the buyer's outcomes second hand (network.outcomes auto: it joins the outcome topics, nondelivery3 too)
    const w = await c.start('w', { ...buyerConfig({ bootstrap: [bootstrapAddr(b)] }), reputation: { trustedBuyers: [b.did] } });
    await waitForMarket(b, 1, [p]);
    await waitForMarket(w, 1, [b]);

    let killed = false;
    const { result, events } = await runJob(b, { workload: 'builtin.sleep', params: '20000', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 30_000, order: {}, input: Buffer.from(`vanish ${Date.now()}`).toString('base64') }, (e) => {
      // the claimant has the work: it dies without a word (no receipt, nothing signed)
      if (e.e === 'accepted' && !killed) {
        killed = true;
        p.child.kill('SIGKILL');
      }
    });
    assert.ok(killed, events.map((e) => e.e).join(' '));
    assert.equal(result.status, 'failed', JSON.stringify(result.attempts));
    const attempts = result.attempts as Array<{ provider: string; nondelivery?: string }>;
    assert.equal(attempts[0]!.provider, p.did);
    const nd = attempts[0]!.nondelivery;
    assert.ok(nd, `the run names its non-delivery: ${JSON.stringify(result.attempts)}`);
    const said = events.find((e) => e.e === 'nondelivery') as { provider: string; address: string; reason: string } | undefined;
    assert.deepEqual([said?.provider, said?.address], [p.did, nd]);
    assert.ok(['unreachable', 'timeout', 'no-receipt'].includes(said!.reason), said!.reason);

    const at = `/v1/reputation/${encodeURIComponent(p.did)}`;
    const mine = await get<Figures>(b, at);
    assert.deepEqual([mine.nonDeliveries, mine.firstHand], [1, 1], 'first hand at the buyer');
    assert.ok(mine.score < 0.5, `the claimant's score fell: ${mine.score}`);
    // the /3 on the buyer's job history too
    const jobs = await get<{ jobs: Array<{ outcome: { status: string; nondelivery?: string } }> }>(b, '/v1/jobs');
    assert.deepEqual([jobs.jobs[0]!.outcome.status, jobs.jobs[0]!.outcome.nondelivery], ['failed', nd]);
    const theirs = await waitFor('the node trusting the buyer to count the /3', async () => {
      const f = await get<Figures>(w, at);
      return f.nonDeliveries > 0 ? f : undefined;
    }, 15_000);
    assert.deepEqual([theirs.nonDeliveries, theirs.secondHand], [0.5, 0.5], 'second hand, at the trusted buyer’s weight');
  });
});

test('the claimant this buyer holds a /3 against claims its next open order first and is refused CLAIM_REPUTATION_TOO_LOW; an honest provider wins', async () => {
  await withLogs(c, async () => {
    const named = (n: string) => c.nodes.find((x) => x.name === n)!;
    const b = named('b');
    const p0 = named('p');
    // the claimant from the test above, back on its data dir (the /3 of the test above is held against it at the buyer)
    const p = await c.start('p', { ...p0.config, network: { ...(p0.config.network as object), bootstrap: [bootstrapAddr(b)] } });
    await waitForMarket(b, 1, [p]);
    let honest: Promise<Awaited<ReturnType<typeof c.start>>> | undefined;
    const { result, events } = await runJob(b, { workload: 'builtin.sleep', params: '10', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 30_000, order: {}, input: Buffer.from(`again ${Date.now()}`).toString('base64') }, (e) => {
      // only once the known non-deliverer was refused does an honest provider come up to claim
      if (e.e === 'claim' && e.provider === p.did && e.code === 'CLAIM_REPUTATION_TOO_LOW' && !honest) {
        const pc = providerConfig({ price: '0.002', bootstrap: [bootstrapAddr(b)] });
        (pc.provider as Record<string, unknown>).claimMode = 'any';
        honest = c.start('q', pc);
      }
    });
    const q = await honest;
    assert.ok(q, `the known non-deliverer was refused: ${JSON.stringify(events.filter((e) => e.e === 'claim' || e.e === 'order'))}`);
    const refused = events.find((e) => e.e === 'claim' && e.provider === p.did) as unknown as { code: string; refusal?: string };
    assert.equal(refused.code, 'CLAIM_REPUTATION_TOO_LOW');
    assert.ok(refused.refusal, 'the claimant is told: a signed refusal');
    assert.equal((events.find((e) => e.e === 'order') as { minReputation?: number }).minReputation, 0.5);
    assert.equal(result.status, 'completed', JSON.stringify(result.error));
    assert.equal((result.attempts as Array<{ provider: string }>)[0]!.provider, q.did);
    // not listed in the selection: an auditor cannot recompute this node's reputation view
    const sel = result.selection as { record: { arrivals: Array<{ provider: string }> } };
    assert.deepEqual(sel.record.arrivals.map((x) => x.provider), [q.did]);
  });
});
