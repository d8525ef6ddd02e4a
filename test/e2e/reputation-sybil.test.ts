/**
 * Reputation that fake identities cannot buy (issue #10; docs/market.md
 * "Reputation and its threat model"), on real processes: an honest provider
 * with a real history (jobs a trusted buyer ran and accepted), a buyer on the
 * `trusted` policy that trusts that buyer, and an attacker — an in-process
 * libp2p node with a fresh provider key that advertises a little cheaper,
 * quotes every job, never delivers, and gossips 60 self-made receipts with 60
 * acceptances from a second key it controls (the attack that once scored 0.984
 * against 0.667 and won the selection).
 *
 *  - the trusted buyer picks the honest provider; the attacker stays at 0.5;
 *  - when the attacker is selected anyway (cheapest policy), it does not
 *    deliver: the buyer signs a `c0mpute.nondelivery/1`, fails over to the
 *    honest provider, and the attacker's score falls; the record is gossiped
 *    and another node holds it.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { T, seal, Ed25519Signer, didFromPublicKey, type Advert, type Job, type Offer, type Opened } from '../../src/records/index.js';
import { hashHex } from '../../src/records/address.js';
import type { Network } from '../../src/net/node.js';
import { peerIdFromDid } from '../../src/node/peer-id.js';
import { startNode } from './net-helpers.js';
import { Cluster, bootstrapAddr, buyerConfig, get, providerConfig, runJob, sleep, waitFor, waitForMarket, withLogs, type Figures, type NodeProc, type StatusView } from './node-helpers.js';

const c = new Cluster('sybil');
let p: NodeProc; // honest provider
let b2: NodeProc; // a buyer b trusts
let b: NodeProc; // the buyer on the trusted policy
let x: Network & { signer: Ed25519Signer }; // the attacker: a fresh provider key
let advertOfX: Opened<Advert>;

const spec = (input: string, over: Record<string, unknown> = {}) => ({
  workload: 'builtin.sha256',
  params: '10',
  maxPrice: { amount: '0.01', currency: 'USD' },
  deadlineMs: 60_000,
  input: Buffer.from(input).toString('base64'),
  ...over,
});

function xAdvert(seq: number): Opened<Advert> {
  const now = Date.now();
  return seal(
    T.advert,
    {
      seq,
      issuedAt: now,
      expiresAt: now + 3600_000,
      workloads: ['builtin.sha256', 'builtin.sleep'],
      tier: 'standard',
      hardware: { cpuCores: 8, memoryMiB: 16_384 },
      prices: [{ workload: 'builtin.sha256', unit: 'job', price: { amount: '0.0025', currency: 'USD' } }],
    },
    x.signer,
  ) as Opened<Advert>;
}

/** A signed offer by the attacker on `job`, a little cheaper than the honest provider. */
function xOffer(job: Opened<Job> | { address: string }, now = Date.now()): Opened<Offer> {
  return seal(T.offer, { job: job.address, advert: advertOfX.address, price: { amount: '0.0025', currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 50_000, expiresAt: now + 50_000 }, x.signer) as Opened<Offer>;
}

before(async () => {
  await withLogs(c, async () => {
    // the honest provider trusts nobody but hears every outcome of the market (network.outcomes all): it holds the
    // clique's records without counting them; the buyer trusts b2, so it joins the outcome topics by itself (docs/network.md §14)
    p = await c.start('p', providerConfig({ price: '0.003', outcomes: 'all' }));
    b2 = await c.start('b2', buyerConfig({ bootstrap: [bootstrapAddr(p)], collectWindowMs: 4000, enoughOffers: 2 }));
    b = await c.start('b', { ...buyerConfig({ bootstrap: [bootstrapAddr(p)], policy: 'trusted', collectWindowMs: 5000, enoughOffers: 2 }), reputation: { trustedBuyers: [b2.did] } });
    // The attacker joins, connected to the honest provider and to the buyer.
    x = await startNode({ syncOnConnect: [] });
    c.onDestroy(() => x.stop());
    await x.dial(bootstrapAddr(p));
    await x.dial(bootstrapAddr(b));
    const peers = [peerIdFromDid(p.did).toString(), peerIdFromDid(b.did).toString()];
    await waitFor('the attacker to join the mesh', () => (['advert', 'offer', 'receipt', 'acceptance', 'job'] as const).every((k) => peers.every((id) => x.topicPeers(k).includes(id))));
    // It quotes every job it hears (with its advert attached) and never serves /c0mpute/exec/1.
    x.subscribe('job', (rec) => {
      void x.publish('offer', xOffer(rec as Opened<Job>).bytes, [advertOfX.bytes]).catch(() => {});
    });
    let seq = 1;
    await waitFor('the buyer to hold the attacker’s advert', async () => {
      advertOfX = xAdvert(seq++);
      await x.publish('advert', advertOfX.bytes).catch(() => {});
      await sleep(300);
      return (await get<StatusView>(b, '/v1/status')).providersKnown >= 2;
    });
    await waitForMarket(b, 2, [p]);
    await waitForMarket(b2, 1, [p]);
  });
});

after(async () => {
  await c.destroy();
});

test('a clique of self-made receipts buys nothing: the trusted buyer picks the provider with a real history', async () => {
  await withLogs(c, async () => {
    // Real history: two jobs the trusted buyer ran on the honest provider (its allowlist keeps the attacker out).
    for (const i of [1, 2]) {
      const { result } = await runJob(b2, spec(`history ${i}`, { requirements: { allowlist: [p.did] } }));
      assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
    }
    await waitFor('the buyer to count the trusted buyer’s history', async () => (await get<Figures>(b, `/v1/reputation/${encodeURIComponent(p.did)}`)).successes >= 1); // 2 × the second-hand weight 0.5

    const held = async (n: NodeProc) => (await get<StatusView>(n, '/v1/status')).evidence;
    const [atB, atP] = [await held(b), await held(p)];
    // The attack: 60 completed receipts for the attacker's provider key, each accepted by a second key it controls.
    const k2 = Ed25519Signer.generate();
    const k2did = didFromPublicKey(k2.publicKey);
    const now = Date.now();
    const acceptances: Uint8Array[] = [];
    for (let i = 0; i < 60; i++) {
      const input = randomBytes(16);
      const j = seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: now - 600_000, deadline: now - 500_000, timeoutMs: 60_000, input: { hash: hashHex(input), size: 16 }, inputSealed: 'no', nonce: new Uint8Array(randomBytes(8)) }, k2) as Opened<Job>;
      const o = xOffer(j, now - 599_000);
      const r = seal(T.receipt, { job: j.address, offer: o.address, buyer: k2did, provider: x.did, workload: 'builtin.sha256', status: 'completed', startedAt: now - 598_000, completedAt: now - 597_000, inputHash: hashHex(input), outputHash: hashHex(randomBytes(8)), price: o.record.price, energy: { uj: 1000, grade: 'Estimator' } }, x.signer);
      await x.publish('receipt', r.bytes);
      acceptances.push(seal(T.acceptance, { receipt: r.address, verdict: 'accepted', signedAt: now - 596_000 }, k2).bytes);
    }
    await sleep(500);
    // an acceptance does not name its market: its publisher gives the job's workload (docs/network.md §14)
    for (const a of acceptances) await x.publish('acceptance', a, [], { workload: 'builtin.sha256' });
    await waitFor('the buyer and the honest provider to hold the clique’s receipts and acceptances', async () => (await held(b)) >= atB + 120 && (await held(p)) >= atP + 120);
    const heard = await get<Figures>(b, `/v1/reputation/${encodeURIComponent(x.did)}`);
    // Held, not counted: the attacker stays at the prior; the honest provider keeps its history.
    assert.equal(heard.score, 0.5);
    assert.equal(heard.successes, 0);
    assert.equal(heard.untrusted, 60);
    const honest = await get<Figures>(b, `/v1/reputation/${encodeURIComponent(p.did)}`);
    assert.ok(honest.score > heard.score, `${honest.score} > ${heard.score}`);

    // The trusted buyer runs a job: both quote (the attacker a little cheaper), the honest provider wins.
    const { result, events } = await runJob(b, spec('the trusted run'));
    const decision = events.find((e) => e.e === 'decision') as { decision: { ranked: Array<{ provider: string; scores: { reputation: number } }> } } | undefined;
    assert.ok(decision, 'a decision');
    const ranked = decision.decision.ranked;
    assert.deepEqual(ranked.map((r) => r.provider), [p.did, x.did], 'both eligible, the honest provider first');
    assert.equal(ranked[1]!.scores.reputation, 0.5);
    assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
    assert.deepEqual((result.attempts as Array<{ provider: string }>).map((a) => a.provider), [p.did]);
  });
});

test('a selected provider that does not deliver earns a signed non-delivery, and loses', async () => {
  await withLogs(c, async () => {
    const atP = await get<Figures>(p, `/v1/reputation/${encodeURIComponent(x.did)}`);
    // The cheapest policy picks the attacker: it never answers on /c0mpute/exec/1, the buyer fails over.
    const { result, events } = await runJob(b, spec('the attacker is picked', { policy: 'cheapest', requirements: { allowlist: [p.did, x.did].sort() } }));
    const attempts = result.attempts as Array<{ provider: string; outcome: string; nondelivery?: string }>;
    assert.equal(attempts[0]!.provider, x.did, JSON.stringify(attempts));
    assert.ok(attempts[0]!.nondelivery, 'the attempt names its non-delivery record');
    assert.equal(result.status, 'completed', JSON.stringify(attempts));
    assert.equal(attempts[1]!.provider, p.did);
    const nd = events.find((e) => e.e === 'nondelivery') as { provider: string; reason: string; address: string } | undefined;
    assert.ok(nd);
    assert.equal(nd.provider, x.did);
    assert.equal(nd.address, attempts[0]!.nondelivery);
    assert.ok(['unreachable', 'refused', 'no-receipt'].includes(nd.reason), nd.reason);

    // Counted first-hand: below the prior now, below the honest provider.
    const f = await get<Figures>(b, `/v1/reputation/${encodeURIComponent(x.did)}`);
    assert.equal(f.nonDeliveries, 1);
    assert.equal(f.score, 0.25);
    // Signed, gossiped, checked and held by another node (which trusts nobody, so it only holds it; it joined the outcome topics).
    await waitFor('the provider to hold the non-delivery', async () => (await get<Figures>(p, `/v1/reputation/${encodeURIComponent(x.did)}`)).untrusted === atP.untrusted + 1);
    // The attacker's next chance under the trusted policy: last.
    const again = await runJob(b, spec('after the non-delivery'));
    assert.equal(again.result.status, 'completed');
    assert.deepEqual((again.result.attempts as Array<{ provider: string }>).map((a) => a.provider), [p.did]);
  });
});
