/**
 * A relay between a buyer and a provider: a buyer process whose only path to
 * one provider is an in-process relay. Offers go to the buyer directly
 * (/c0mpute/offer/1, issue #16), so the relay never holds one to withhold; the
 * provider that cannot reach the buyer (the allowlists) loses its offer, counted
 * as unreachable, and the relay's forged offer (a tampered copy, on the old
 * gossip topic) is refused. The buyer sees fewer offers, never a false one,
 * and still selects among what it saw. Allowlists (the connection gater) keep
 * the topology honest: the withheld provider can reach nobody but the relay,
 * and the buyer reaches only the relay and the provider the relay passes on.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { T, decodeCanonical, encodeCanonical, seal, type Ed25519Signer, type Job, type Offer, type Opened } from '../../src/records/index.js';
import { hashHex } from '../../src/records/address.js';
import { topicFor } from '../../src/net/topics.js';
import { withhold } from '../../src/net/faults.js';
import type { Network } from '../../src/net/node.js';
import { startNode } from './net-helpers.js';
import { Cluster, buyerConfig, get, joinEnvelope, metricsText, recordVerdicts, providerConfig, runJob, splitEnvelope, waitFor, waitForMarket, withLogs, type NodeProc, type RunOutcome, type Wire } from './node-helpers.js';

const c = new Cluster('withhold');
let relay: Network & { signer: Ed25519Signer };
let seen: NodeProc; // the provider the relay passes on
let hidden: NodeProc; // the provider the relay withholds
let buyer: NodeProc;
const withheld: Array<Opened<Offer>> = [];
const passed: Array<Opened<Offer>> = [];
const forged: string[] = [];
let run: RunOutcome;

before(async () => {
  await withLogs(c, async () => {
    relay = await startNode();
    c.onDestroy(() => relay.stop());
    const relayAddr = relay.addrs().find((a) => a.startsWith('/ip4/127.0.0.1/'))!;
    const b = c.dataDir('buyer');
    // The withheld provider is cheaper and faster: had the buyer heard it, it would have won.
    [seen, hidden] = await Promise.all([
      c.start('seen', providerConfig({ price: '0.004', baseMs: 2000, bootstrap: [relayAddr], allowlist: [relay.did, b.did] })),
      c.start('hidden', providerConfig({ price: '0.001', baseMs: 500, bootstrap: [relayAddr], allowlist: [relay.did] })),
    ]);
    withhold(relay, 'offer', (rec) => {
      if (rec.signer !== hidden.did) return false;
      withheld.push(rec as Opened<Offer>);
      return true;
    });
    relay.subscribe('offer', (rec) => void passed.push(rec as Opened<Offer>));
    // The relay's forgery: an offer for the buyer's job under its own key, its price changed after signing.
    const jobs: Array<Opened<Job>> = [];
    relay.subscribe('job', (rec) => void jobs.push(rec as Opened<Job>));
    buyer = await c.start('buyer', buyerConfig({ bootstrap: [relayAddr], allowlist: [relay.did, seen.did], collectWindowMs: 3000 }));
    await waitForMarket(buyer, 2, [relay.did]);
    // The relay also tries to pass off what it withholds, tampered (a lower price after signing).
    const forgedFor = new Set<string>();
    const forge = setInterval(() => {
      for (const j of jobs) {
        if (forgedFor.has(j.address)) continue;
        forgedFor.add(j.address);
        const now = Date.now();
        const o = seal(T.offer, { job: j.address, advert: 'sha256:' + '00'.repeat(32), price: { amount: '0.002', currency: 'USD' }, durationMs: 500, issuedAt: now, startBy: now + 20_000, expiresAt: now + 20_000 }, relay.signer);
        const parts = splitEnvelope(o.bytes);
        const core = decodeCanonical(parts.payload) as Record<string, unknown>;
        core.price = { amount: '0.0005', currency: 'USD' };
        const bytes = joinEnvelope({ ...parts, payload: encodeCanonical(core) });
        forged.push(hashHex(bytes));
        void relay.libp2p.services.pubsub.publish(topicFor('offer'), bytes).catch(() => undefined);
      }
    }, 50);
    try {
      run = await runJob(buyer, { workload: 'builtin.sha256', params: '10', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 60_000, input: Buffer.from('through a withholding relay').toString('base64') });
    } finally {
      clearInterval(forge);
    }
  });
});

after(async () => {
  await c.destroy();
});

test('a withholding relay: the buyer sees fewer offers, never a false one, and selects among what it saw', async () => {
  await withLogs(c, async () => {
    const { result, events } = run;
    const job = result.job as Wire;
    // The hidden provider did quote, and its offer could not reach the buyer (never through the relay: it saw no offer).
    await waitFor('the hidden provider’s offer to be counted unreachable', async () => /c0mpute_offers_direct_total\{[^}]*outcome="unreachable"[^}]*\} [1-9]/.test(await metricsText(hidden)), 30_000);
    assert.deepEqual(withheld, [], 'no offer crossed the relay');
    assert.deepEqual(passed, [], 'no offer crossed the relay');
    assert.ok(forged.length >= 1, 'the relay sent a tampered offer');
    const heardAddrs = events.filter((e) => e.e === 'offer').map((e) => (e.offer as Wire<Offer>).address);
    const genuine = new Set(heardAddrs.filter((a) => !forged.includes(a)));

    // What the buyer heard: only the passed-on provider's genuine offer.
    const heard = events.filter((e) => e.e === 'offer').map((e) => e.offer as Wire<Offer>);
    assert.ok(heard.length >= 1);
    for (const o of heard) {
      assert.equal(o.type, T.offer);
      assert.equal(o.signer, seen.did);
      assert.ok(genuine.has(o.address), 'a genuine offer');
      assert.equal(o.record.job, job.address);
    }
    const held = await get<{ offers: Array<Wire<Offer>>; explanation: { providers: Array<{ provider: string; eligible: boolean; failures: Array<{ code: string }> }> } }>(buyer, `/v1/offers/${encodeURIComponent(job.address)}`);
    assert.deepEqual(held.offers.map((o) => o.signer), [seen.did]);
    assert.equal(heardAddrs.length, genuine.size, 'never a forged offer');
    for (const o of held.offers) assert.ok(genuine.has(o.address) && !forged.includes(o.address));
    // It knows the hidden provider (its advert came through) but holds no offer from it.
    const hv = held.explanation.providers.find((p) => p.provider === hidden.did);
    assert.ok(hv, 'the hidden provider’s advert is known');
    assert.deepEqual(hv.failures.map((f) => f.code), ['OFFER_MISSING']);

    // It still selects among what it saw, and the job completes there.
    assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
    const decision = events.find((e) => e.e === 'decision')!.decision as { ranked: Array<{ provider: string }> };
    assert.deepEqual(decision.ranked.map((r) => r.provider), [seen.did]);
    const sel = result.selection as Wire<{ winner: string; considered: Array<{ provider: string; offer: string }> }>;
    assert.deepEqual(sel.record.considered.map((x) => x.provider), [seen.did]);
    assert.ok(genuine.has(sel.record.winner));
    assert.equal((result.receipt as Wire<{ provider: string; offer: string }>).record.offer, sel.record.winner);

    // The forged offer was refused for its signature, and the hidden provider never reached the buyer directly.
    await waitFor('the forged offer to be counted as rejected', async () => {
      return recordVerdicts(await metricsText(buyer)).has('offer/reject/ENVELOPE_BAD_SIGNATURE');
    });
    const peers = await get<{ peers: Array<{ did?: string }> }>(buyer, '/v1/peers');
    for (const p of peers.peers) assert.ok(p.did === relay.did || p.did === seen.did, `unexpected peer ${p.did}`);
  });
});
