/**
 * Offers per job (docs/market.md "How many offers a job draws") across real
 * processes: three providers asking 0.001, 0.002 and 0.003 USD with
 * `provider.offerRank: 1`, and a buyer with `buyer.offersWanted: 1`.
 *
 * - A job draws one offer, the cheapest provider's; the other two count it
 *   `outranked` and send nothing.
 * - The cheapest is then SIGKILLed. Its presence still looks live in every
 *   view, so the other two still hold back on gossip: nobody offers. Halfway
 *   through the window the buyer, holding no offer, pushes the job to the
 *   cheapest provider it can still reach, which quotes (a pushed job is
 *   always quoted) and runs it. (It asks twice as many as it is short: the
 *   gone provider, which it may still count as connected, and the next.)
 * - Before that, a second buyer with `buyer.inviteAbove: 1` sends its job by
 *   invitation: directly to the two cheapest, both quote, and the third never
 *   hears of it. With those two stalled (SIGSTOP), its next job goes on gossip
 *   halfway through the window and to the third, which runs it.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, bootstrapAddr, buyerConfig, get, metricsText, providerConfig, runJob, waitFor, waitForMarket, withLogs, type NodeProc, type Wire } from './node-helpers.js';

const c = new Cluster('offers-rank');
let p1: NodeProc;
let p2: NodeProc;
let p3: NodeProc;
let buyer: NodeProc;
/** A second buyer, for which a market of three is large (`buyer.inviteAbove: 1`). */
let inviter: NodeProc;

const ranked = (price: string, bootstrap: string[] = []) => {
  const cfg = providerConfig({ price, bootstrap });
  // presence every second (the least the config takes), so the views fill soon after the mesh forms
  Object.assign(cfg.provider as Record<string, unknown>, { offerRank: 1, presenceEveryMs: 1000 });
  return cfg;
};
/** The buyers' collection window: every job waits it out (no enoughOffers), and halfway through it the push or gossip comes. */
const WINDOW_MS = 4000;
const spec = (input: string) => ({ workload: 'builtin.sha256', params: '10', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 60_000, input: Buffer.from(input).toString('base64') });

/** The providers `n` sees as candidates for the test's jobs (live, a free slot, within the price). */
async function candidatesSeenBy(n: NodeProc): Promise<string[]> {
  const r = await get<{ candidates: Array<{ provider: string }> }>(n, `/v1/probe?workload=builtin.sha256&maxPrice=${encodeURIComponent('0.01 USD')}`);
  return r.candidates.map((x) => x.provider);
}

/** c0mpute_provider_quotes_skipped_total{reason="outranked"} of a provider. */
async function outranked(n: NodeProc): Promise<number> {
  const m = /^c0mpute_provider_quotes_skipped_total\{[^}]*reason="outranked"[^}]*\} ([0-9.]+)$/m.exec(await metricsText(n));
  return m ? Number(m[1]) : 0;
}

before(async () => {
  await withLogs(c, async () => {
    p1 = await c.start('p1', ranked('0.001'));
    p2 = await c.start('p2', ranked('0.002', [bootstrapAddr(p1)]));
    p3 = await c.start('p3', ranked('0.003', [bootstrapAddr(p1), bootstrapAddr(p2)]));
    const cfg = buyerConfig({ bootstrap: [p1, p2, p3].map(bootstrapAddr), collectWindowMs: WINDOW_MS });
    (cfg.buyer as Record<string, unknown>).offersWanted = 1;
    buyer = await c.start('buyer', cfg);
    await waitForMarket(buyer, 3, [p1, p2, p3]);
    // Each provider ranks itself against the others' presence: wait until every view holds all three, free.
    for (const n of [p1, p2, p3, buyer]) {
      await waitFor(`${n.name} to see every provider live with a free slot`, async () => {
        const seen = new Set(await candidatesSeenBy(n));
        return [p1, p2, p3].every((p) => p === n || seen.has(p.did));
      });
    }
  });
});

after(async () => {
  await c.destroy();
});

test('a job draws one offer, the cheapest provider’s; the others hold back and count it', async () => {
  await withLogs(c, async () => {
    const { result, events } = await runJob(buyer, spec('one offer, not three'));
    assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
    const offers = events.filter((e) => e.e === 'offer').map((e) => (e.offer as Wire<unknown>).signer);
    assert.deepEqual(offers, [p1.did]);
    assert.equal((result.receipt as Wire<unknown>).signer, p1.did);
    assert.ok((await outranked(p2)) >= 1, 'p2 counted the job outranked');
    assert.ok((await outranked(p3)) >= 1, 'p3 counted the job outranked');
    assert.equal(await outranked(p1), 0);
  });
});

/** Jobs this node accepted from gossip (c0mpute_net_records_total{source="gossip",kind="job",verdict="accept"}, every reason). */
async function jobsHeardOnGossip(n: NodeProc): Promise<number> {
  let sum = 0;
  for (const m of (await metricsText(n)).matchAll(/^c0mpute_net_records_total\{([^}]*)\} ([0-9.]+)$/gm)) {
    if (/source="gossip"/.test(m[1]!) && /kind="job"/.test(m[1]!) && /verdict="accept"/.test(m[1]!)) sum += Number(m[2]);
  }
  return sum;
}

test('with more candidates than buyer.inviteAbove, a job goes only to the invited: the two cheapest quote, the third never hears it', async () => {
  await withLogs(c, async () => {
    // a second buyer for whom a market of three is large: inviteAbove 1, offersWanted 1 (so it invites two)
    const cfg = buyerConfig({ bootstrap: [p1, p2, p3].map(bootstrapAddr), collectWindowMs: WINDOW_MS });
    Object.assign(cfg.buyer as Record<string, unknown>, { offersWanted: 1, inviteAbove: 1 });
    inviter = await c.start('inviter', cfg);
    await waitFor('the inviter to see all three providers live with a free slot', async () => (await candidatesSeenBy(inviter)).length === 3);
    const heard3 = await jobsHeardOnGossip(p3);
    const skipped3 = await outranked(p3);
    const { result, events } = await runJob(inviter, spec('by invitation'));
    assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
    const offers = events.filter((e) => e.e === 'offer').map((e) => (e.offer as Wire<unknown>).signer);
    assert.deepEqual(new Set(offers), new Set([p1.did, p2.did]), `offers from ${offers.join(', ')}`);
    assert.equal((result.receipt as Wire<unknown>).signer, p1.did);
    const m = await metricsText(inviter);
    assert.match(m, /^c0mpute_buyer_job_routes_total\{[^}]*route="invited"[^}]*\} 1$/m);
    assert.doesNotMatch(m, /route="gossip(-after-invite)?"/, 'the job never went on gossip');
    // p3 was not invited: nothing reached it on gossip, and it had nothing to hold back on
    assert.equal(await jobsHeardOnGossip(p3), heard3);
    assert.equal(await outranked(p3), skipped3);
  });
});

test('the invited stall (SIGSTOP): halfway through the window the job goes on gossip and to the provider not invited, which runs it', async () => {
  await withLogs(c, async () => {
    // p1 ran the last job: until its presence says it is free again the inviter would invite p2 and p3
    await waitFor('the inviter to see all three providers free again', async () => (await candidatesSeenBy(inviter)).length === 3);
    const heard3 = await jobsHeardOnGossip(p3);
    p1.child.kill('SIGSTOP');
    p2.child.kill('SIGSTOP');
    try {
      const { result, events } = await runJob(inviter, spec('the invited are stalled'));
      assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
      const offers = events.filter((e) => e.e === 'offer').map((e) => (e.offer as Wire<unknown>).signer);
      assert.deepEqual(offers, [p3.did]);
      assert.equal((result.receipt as Wire<unknown>).signer, p3.did);
      assert.match(await metricsText(inviter), /^c0mpute_buyer_job_routes_total\{[^}]*route="gossip-after-invite"[^}]*\} 1$/m);
      await waitFor('p3 to hear the job on gossip', async () => (await jobsHeardOnGossip(p3)) > heard3);
    } finally {
      p1.child.kill('SIGCONT');
      p2.child.kill('SIGCONT');
      await c.stop(inviter);
    }
  });
});

test('the cheapest is gone but still looks live: nobody offers on gossip, and the buyer’s push halfway through the window gets the job run', async () => {
  await withLogs(c, async () => {
    // After its job, p1 is free again in the other views (its presence says so): they rank it ahead of themselves.
    for (const n of [p2, p3]) await waitFor(`${n.name} to see p1 free again`, async () => (await candidatesSeenBy(n)).includes(p1.did));
    await c.stop(p1, 'SIGKILL');
    const before2 = await outranked(p2);
    const before3 = await outranked(p3);
    const { result, events } = await runJob(buyer, spec('the cheapest is gone'));
    assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
    const offers = events.filter((e) => e.e === 'offer').map((e) => (e.offer as Wire<unknown>).signer);
    // The buyer, short one offer, pushed to two: p2 and p3 (or the gone p1, if it still counted it connected, and p2).
    assert.ok(offers.includes(p2.did) && offers.every((d) => d === p2.did || d === p3.did), `offers from ${offers.join(', ')}`);
    assert.equal((result.receipt as Wire<unknown>).signer, p2.did, 'the cheaper of them won');
    // Both held back on the gossiped job (p1 still ranked ahead of them); p2 then quoted the pushed one.
    assert.match(await metricsText(buyer), /^c0mpute_buyer_job_pushes_total\{[^}]*outcome="offer"[^}]*\} [1-9]/m, 'the buyer counted the push that brought the offer');
    assert.ok((await outranked(p2)) > before2, 'p2 held back on the gossiped job');
    assert.ok((await outranked(p3)) > before3, 'p3 held back on the gossiped job');
  });
});
