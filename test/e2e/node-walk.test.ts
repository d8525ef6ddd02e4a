/**
 * The walk of a job across separate `c0mpute start` processes on 127.0.0.1:
 * two providers and two buyers. Every record links (selection → job, offer →
 * job, receipt → offer/job/provider/buyer, acceptance → receipt), the output is
 * the SHA-256 chain computed here, and two buyers that heard the same offers
 * (in whatever order) rank the providers the same way.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { T, type Advert, type Job, type Offer, type Opened } from '../../src/records/index.js';
import { hashHex } from '../../src/records/address.js';
import { select } from '../../src/market/select.js';
import type { Network } from '../../src/net/node.js';
import { startNode } from './net-helpers.js';
import {
  Cluster,
  bootstrapAddr,
  buyerConfig,
  get,
  providerConfig,
  runJob,
  sha256Rounds,
  waitFor,
  waitForMarket,
  withLogs,
  type Figures,
  type NodeProc,
  type RunOutcome,
  type Wire,
} from './node-helpers.js';

const c = new Cluster('walk');
let p1: NodeProc;
let p2: NodeProc;
let b1: NodeProc;
let b2: NodeProc;
let w: Network | undefined;
const runs: RunOutcome[] = [];
const inputs = [Buffer.from('the walk of job one'), Buffer.from('the walk of job two')];
const ROUNDS = 5000;

interface RankedWire {
  provider: string;
  total: number;
  offer: Wire<Offer>;
}
interface DecisionWire {
  ranked: RankedWire[];
  result: { ok: boolean; ranked: Array<{ provider: string; offer: string; advert: string; total: number; scores: { reputation: number } }> };
}

function decisionOf(r: RunOutcome): DecisionWire {
  const ev = r.events.find((e) => e.e === 'decision');
  assert.ok(ev, 'a decision event');
  return ev.decision as DecisionWire;
}

function spec(input: Buffer): Record<string, unknown> {
  return {
    workload: 'builtin.sha256',
    params: String(ROUNDS),
    maxPrice: { amount: '0.01', currency: 'USD' },
    deadlineMs: 60_000,
    requirements: { memoryMiB: 8192, cpuCores: 4 },
    input: input.toString('base64'),
  };
}

before(async () => {
  await withLogs(c, async () => {
    // Two providers that differ in price, speed and tier, so the ranking has something to say.
    p1 = await c.start('p1', providerConfig({ price: '0.002', baseMs: 1500, tier: 'standard', region: 'eu-west', slots: 2 }));
    p2 = await c.start('p2', providerConfig({ price: '0.004', baseMs: 600, tier: 'verified', region: 'us-east', slots: 2, bootstrap: [bootstrapAddr(p1)] }));
    const boot = [bootstrapAddr(p1), bootstrapAddr(p2)];
    [b1, b2] = await Promise.all([
      // b1 hears every outcome of the market (network.outcomes all); b2 is a default node, which counts only
      // first-hand evidence and so takes no one else's (docs/network.md §14 "Who hears a job's outcome")
      c.start('b1', buyerConfig({ bootstrap: boot, collectWindowMs: 8000, enoughOffers: 2, outcomes: 'all' })),
      c.start('b2', buyerConfig({ bootstrap: boot, collectWindowMs: 8000, enoughOffers: 2 })),
    ]);
    // both ways: the winner gossips b2's receipt the moment its run ends, and b1 (outcomes: all) must be a subscriber
    // it knows by then (else only a re-sync, past this test's wait, brings it). And b2's acceptance, without which
    // its receipt proves nothing to b1, reaches b1 only directly: the providers do not join the acceptance topics, so
    // they do not relay it; b1 and b2 must have found each other (peer discovery) before b2 publishes it
    await Promise.all([waitForMarket(b1, 2, [p1, p2, b2]), waitForMarket(b2, 2, [p1, p2, b1])]);
    // Both buyers run a job with identical requirements at the same moment: neither holds any
    // reputation evidence yet, so both decide over the same inputs.
    runs.push(...(await Promise.all([runJob(b1, spec(inputs[0]!)), runJob(b2, spec(inputs[1]!))])));
  });
});

after(async () => {
  await w?.stop();
  await c.destroy();
});

test('the whole walk: every record links, and the output is the SHA-256 chain of the input', async () => {
  await withLogs(c, async () => {
    const { result, events } = runs[0]!;
    assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
    const job = result.job as Wire<Job>;
    const sel = result.selection as Wire<{ job: string; buyer: string; winner: string; considered: Array<{ provider: string; offer: string }> }>;
    const receipt = result.receipt as Wire<{ job: string; offer: string; provider: string; buyer: string; status: string; outputHash: string; inputHash: string; price: { amount: string; currency: string } }>;
    const acc = result.acceptance as Wire<{ receipt: string; verdict: string }>;
    const decision = decisionOf(runs[0]!);
    const winner = decision.ranked[0]!;

    // the job
    assert.equal(job.type, T.job);
    assert.equal(job.signer, b1.did);
    assert.equal(job.record.input.hash, hashHex(inputs[0]!));
    // offers: every ranked offer answers this job, from both providers
    assert.deepEqual(decision.ranked.map((r) => r.provider).sort(), [p1.did, p2.did].sort());
    for (const r of decision.ranked) {
      assert.equal(r.offer.type, T.offer);
      assert.equal(r.offer.signer, r.provider);
      assert.equal(r.offer.record.job, job.address);
      const engine = decision.result.ranked.find((x) => x.provider === r.provider)!;
      assert.equal(engine.offer, r.offer.address);
      assert.equal(r.offer.record.advert, engine.advert, 'the offer cites the advert it was judged against');
    }
    // selection → job, winner = the best-ranked offer, every considered offer named (DID order)
    assert.equal(sel.type, T.selection);
    assert.equal(sel.signer, b1.did);
    assert.equal(sel.record.buyer, b1.did);
    assert.equal(sel.record.job, job.address);
    assert.equal(sel.record.winner, winner.offer.address);
    assert.deepEqual(sel.record.considered, decision.ranked.map((r) => ({ provider: r.provider, offer: r.offer.address })).sort((a, b) => (a.provider < b.provider ? -1 : 1)));
    // receipt → offer, job, provider, buyer
    assert.equal(receipt.type, T.receipt);
    assert.equal(receipt.signer, winner.provider);
    assert.equal(receipt.record.provider, winner.provider);
    assert.equal(receipt.record.offer, winner.offer.address);
    assert.equal(receipt.record.job, job.address);
    assert.equal(receipt.record.buyer, b1.did);
    assert.equal(receipt.record.status, 'completed');
    assert.equal(receipt.record.inputHash, job.record.input.hash);
    assert.deepEqual(receipt.record.price, winner.offer.record.price);
    // acceptance → receipt
    assert.equal(acc.type, T.acceptance);
    assert.equal(acc.signer, b1.did);
    assert.equal(acc.record.receipt, receipt.address);
    assert.equal(acc.record.verdict, 'accepted');
    // the output: computed here, and the receipt's output hash covers exactly it
    const output = Buffer.from(result.output as string, 'base64');
    assert.equal(output.toString('utf8'), sha256Rounds(inputs[0]!, ROUNDS));
    assert.equal(receipt.record.outputHash, hashHex(output));
    // the walk's events, in order
    const kinds = events.map((e) => e.e).filter((e) => e !== 'offer' && e !== 'progress');
    assert.deepEqual(kinds, ['job', 'collected', 'decision', 'selection', 'accepted', 'receipt', 'verified', 'acceptance']);
    assert.equal(events.filter((e) => e.e === 'offer').length, 2);

    // the buyer's stores hold the job with its receipt and verdict, and the offers for it
    const jobs = await get<{ jobs: Array<{ address: string; receipts: Array<{ address: string; provider: string; status: string; acceptance?: string }> }> }>(b1, '/v1/jobs');
    const held = jobs.jobs.find((j) => j.address === job.address);
    assert.ok(held, 'the job is in the buyer’s store');
    assert.deepEqual(held.receipts, [{ address: receipt.address, provider: winner.provider, status: 'completed', acceptance: 'accepted' }]);
    const offers = await get<{ known: boolean; offers: Array<Wire<Offer>> }>(b1, `/v1/offers/${encodeURIComponent(job.address)}`);
    assert.equal(offers.known, true);
    assert.deepEqual(offers.offers.map((o) => o.address).sort(), decision.ranked.map((r) => r.offer.address).sort());

    // Receipts and acceptances go on the market's outcome topics, which b1 joined (network.outcomes all): it
    // holds both jobs' evidence for the winner (both buyers' jobs went to it and were accepted), counts its own
    // job first-hand and holds b2's without counting it (it does not trust that buyer: docs/market.md
    // "Reputation and its threat model"). b2, a default node, holds only its own. The winner counts both, its
    // own record of its own work, with each buyer's acceptance sent to it directly.
    const run2 = runs[1]!.result;
    assert.equal(run2.status, 'completed', JSON.stringify(run2.attempts));
    assert.equal((run2.receipt as Wire<{ provider: string }>).record.provider, winner.provider);
    for (const [n, untrusted] of [[b1, 1], [b2, 0]] as const) {
      await waitFor(`${n.name} to hold ${untrusted ? 'both receipts' : 'its own receipt'} for the winner`, async () => {
        const f = await get<Figures>(n, `/v1/reputation/${encodeURIComponent(winner.provider)}`);
        return f.successes === 1 && f.firstHand === 1 && f.untrusted === untrusted && f.failures === 0 && f.disputes === 0;
      });
    }
    await waitFor('the winner to hold both receipts', async () => {
      const f = await get<Figures>(c.byDid(winner.provider)!, `/v1/reputation/${encodeURIComponent(winner.provider)}`);
      return f.successes === 2 && f.failures === 0 && f.disputes === 0;
    });
  });
});

test('two buyers rank the same offers the same way, whatever order they heard them in', async () => {
  await withLogs(c, async () => {
    const [d1, d2] = [decisionOf(runs[0]!), decisionOf(runs[1]!)];
    // Two real buyer processes, identical requirements: the same providers in the same order, the same totals.
    assert.equal(d1.ranked.length, 2);
    assert.deepEqual(d2.ranked.map((r) => r.provider), d1.ranked.map((r) => r.provider));
    // Same inputs, same totals. (Both decided before any receipt existed, so their reputation inputs agree;
    // should one buyer already have heard the other's receipt, only that provider's reputation may differ.)
    for (const [i, r1] of d1.result.ranked.entries()) {
      const r2 = d2.result.ranked[i]!;
      if (r1.scores.reputation === r2.scores.reputation) assert.equal(r2.total, r1.total, r1.provider);
    }
    const order1 = runs[0]!.events.filter((e) => e.e === 'offer').map((e) => (e.offer as Wire).signer);
    const order2 = runs[1]!.events.filter((e) => e.e === 'offer').map((e) => (e.offer as Wire).signer);
    assert.deepEqual([...order1].sort(), [...order2].sort(), 'both heard offers from the same providers');

    // The market engine over the real envelopes (fetched from buyer 1 over /c0mpute/records/1),
    // added in every order: the same winner, the one buyer 1 signed.
    const sel = runs[0]!.result.selection as Wire<{ job: string; winner: string; decidedAt: number }>;
    w = await startNode({ syncOnConnect: [] });
    await w.dial(bootstrapAddr(b1));
    const [job] = (await w.fetchRecords(b1.did, [sel.record.job], T.job)) as Array<Opened<Job>>;
    assert.ok(job);
    const offers = (await w.fetchRecords(b1.did, d1.result.ranked.map((r) => r.offer), T.offer)) as Array<Opened<Offer>>;
    const adverts = (await w.fetchRecords(b1.did, d1.result.ranked.map((r) => r.advert), T.advert)) as Array<Opened<Advert>>;
    assert.equal(offers.length, 2);
    assert.equal(adverts.length, 2);
    const rep = new Map(d1.result.ranked.map((r) => [r.provider, r.scores.reputation]));
    const orders = [offers, [...offers].reverse(), [...offers, ...offers], [...offers].reverse().concat(offers)];
    for (const [i, o] of orders.entries()) {
      const r = select({ job, adverts: i % 2 ? [...adverts].reverse() : adverts, offers: o, policy: 'balanced', reputation: { scoreOf: (d) => rep.get(d) ?? 0.5 }, now: sel.record.decidedAt });
      assert.equal(r.ok, true);
      if (!r.ok) return;
      assert.equal(r.winner.offer, sel.record.winner, `order ${i}`);
      assert.deepEqual(r.ranked.map((x) => x.provider), d1.ranked.map((x) => x.provider), `order ${i}`);
      assert.deepEqual(r.ranked.map((x) => x.total), d1.ranked.map((x) => x.total), `order ${i}`);
    }
  });
});
