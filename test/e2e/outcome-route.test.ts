/**
 * Who hears a job's outcome (docs/network.md §14 "Who hears a job's outcome";
 * issue #16), across real daemons with their default config: a spot job's
 * selection reaches the providers it names directly (outcome/1), not the
 * market; the buyer's acceptance reaches the provider whose receipt it
 * countersigns directly, so the provider's own view counts it; a node that
 * counts no second-hand evidence (`network.outcomes: auto`, no trusted buyer)
 * hears no one else's outcome, and a node that trusts the buyer does.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, bootstrapAddr, buyerConfig, get, metricSum, metricsText, providerConfig, runJob, waitFor, waitForMarket, withLogs, type Figures, type NodeProc, type Wire } from './node-helpers.js';

const c = new Cluster('outcome-route');
let p1: NodeProc;
let p2: NodeProc;
let buyer: NodeProc;
let watcher: NodeProc;

before(async () => {
  await withLogs(c, async () => {
    p1 = await c.start('p1', providerConfig({ price: '0.002' }));
    p2 = await c.start('p2', providerConfig({ price: '0.003', bootstrap: [bootstrapAddr(p1)] }));
    buyer = await c.start('buyer', buyerConfig({ bootstrap: [bootstrapAddr(p1), bootstrapAddr(p2)], collectWindowMs: 3000, enoughOffers: 2, policy: 'cheapest' }));
    // a buyer node that trusts the buyer above: it counts that buyer's outcomes second hand, so it hears them
    // not bootstrapped to the buyer: it dials the buyers it trusts (src/node/keep-connected.ts)
    const wc = buyerConfig({ bootstrap: [bootstrapAddr(p1), bootstrapAddr(p2)] });
    watcher = await c.start('watcher', { ...wc, reputation: { trustedBuyers: [buyer.did] } });
    await waitForMarket(buyer, 2, [p1, p2]);
    await waitForMarket(watcher, 2, [p1, p2, buyer]);
  });
});

after(async () => {
  await c.destroy();
});

test('a spot job’s selection goes to the providers it names and its acceptance to the winner; only a node that trusts the buyer hears the rest', async () => {
  await withLogs(c, async () => {
    const { result } = await runJob(buyer, { workload: 'builtin.sha256', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 30_000, input: Buffer.from('whose outcome').toString('base64') });
    assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
    const sel = result.selection as Wire<{ considered: Array<{ provider: string }> }>;
    assert.deepEqual(sel.record.considered.map((x) => x.provider).sort(), [p1.did, p2.did].sort(), 'both offers considered');
    const receipt = result.receipt as Wire<{ provider: string }>;
    assert.equal(receipt.signer, p1.did, 'the cheaper provider won');

    // The buyer sent the selection to both providers and the acceptance to the winner, directly.
    await waitFor('the acceptance delivered to the winner', async () => metricSum(await metricsText(buyer), 'c0mpute_outcomes_direct_total', { kind: 'acceptance', outcome: 'accepted' }) === 1, 15_000);
    const bm = await metricsText(buyer);
    // (on failure, with each provider's verdict on the selections it took and why: a duplicate, a rate limit, …)
    const said = async () => [bm, ...(await Promise.all([p1, p2].map((p) => metricsText(p))))].map((m, i) => `${['buyer', 'p1', 'p2'][i]}:\n${m.split('\n').filter((l) => l.includes('outcomes_direct') || (l.includes('records_total') && l.includes('selection'))).join('\n')}`).join('\n');
    if (metricSum(bm, 'c0mpute_outcomes_direct_total', { kind: 'selection', outcome: 'accepted' }) !== 2) assert.fail(`both providers accept the selection sent to them directly\n${await said()}`);
    // Each provider took the selection directly and from no topic; the loser took no receipt or acceptance at all.
    for (const p of [p1, p2]) {
      const m = await metricsText(p);
      assert.equal(metricSum(m, 'c0mpute_net_records_total', { source: 'direct', kind: 'selection', verdict: 'accept' }), 1, `${p.name}: the selection, directly`);
      assert.equal(metricSum(m, 'c0mpute_net_records_total', { source: 'gossip', kind: 'selection' }), 0, `${p.name}: no selection on gossip`);
    }
    const m2 = await metricsText(p2);
    for (const kind of ['receipt', 'acceptance']) assert.equal(metricSum(m2, 'c0mpute_net_records_total', { kind }), 0, `p2 hears no ${kind} of a job it lost`);

    // The winner's own view counts the buyer's verdict (first hand); the watcher counts it second hand.
    await waitFor('the winner to count the buyer’s acceptance', async () => (await get<Figures>(p1, `/v1/reputation/${encodeURIComponent(p1.did)}`)).accepted === 1, 15_000);
    // (weighed at reputation.secondHandWeight, 0.5 by default)
    await waitFor('the watcher to count the trusted buyer’s outcome', async () => (await get<Figures>(watcher, `/v1/reputation/${encodeURIComponent(p1.did)}`)).secondHand === 0.5, 15_000);
    // The loser counts no one else's outcome about p1: it heard none (an untrusted one would show in `untrusted`).
    const seen = await get<Figures>(p2, `/v1/reputation/${encodeURIComponent(p1.did)}`);
    assert.deepEqual([seen.jobs, seen.untrusted], [0, 0]);
  });
});
