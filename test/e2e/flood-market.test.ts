/**
 * Valid-looking floods against real daemons (issue #10), the market side:
 *
 *  (a) a valid-job flood: an attacker node with its own key (an in-test
 *      libp2p node on 127.0.0.1) publishes 2,000 valid jobs as fast as gossip
 *      takes them, and 200 offers of its own for them, while an honest buyer
 *      daemon runs a job against a provider daemon. The honest job completes;
 *      the provider quotes the attacker within its per-buyer budget only; the
 *      buyer stores no offer for a job it did not publish.
 *  (b) a Sybil advert flood: 2,500 fresh keys, one valid advert each, sent
 *      from 4 attacker peers into a buyer daemon capped at 200 stored adverts. An honest job completes
 *      during the flood; the store stays within the cap, also after a restart
 *      (and what is stored is what the market lists); `c0mpute market` prints
 *      a bounded summary.
 */
import '../../src/polyfill.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Ed25519Signer, seal, T, type Advert, type Offer, type Opened } from '../../src/records/index.js';
import { shardOf, topicFor } from '../../src/net/topics.js';
import { encodeCanonical } from '../../src/records/cbor.js';
import { openDb, closeDb } from '../../src/store/db.js';
import { RecordStore } from '../../src/store/records.js';
import { startNode } from './net-helpers.js';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, get, metricsText, providerConfig, runJob, sha256Job, sleep, waitFor, waitForMarket, withLogs, type NodeProc, type PeerView, type StatusView } from './node-helpers.js';

const clusters: Cluster[] = [];
after(async () => {
  for (const c of clusters) await c.destroy();
});

/** Sum of a metric's samples whose labels include every pair in `match`. */
function metric(text: string, name: string, match: Record<string, string> = {}): number {
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? ([0-9.e+-]+)$`, 'gm'))) {
    const labels = Object.fromEntries([...(m[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(match).every(([k, v]) => labels[k] === v)) sum += Number(m[2]);
  }
  return sum;
}

/**
 * Whether daemon `n` holds both gossip streams with `peerId`: the peer's inbound one (what the peer publishes reaches
 * `n`) and its own outbound one (what `n` publishes reaches the peer). Until the peer's stream is open its publishes
 * skip `n` silently, hearing `n`'s subscriptions is not enough (node-helpers waitForMarket).
 */
async function gossipLinked(n: NodeProc, peerId: string): Promise<boolean> {
  const { peers } = await get<{ peers: PeerView[] }>(n, '/v1/peers');
  const q = peers.find((x) => x.peerId === peerId);
  return !!q?.streams?.in && q.streams.out;
}

function honestSpec(text: string): Record<string, unknown> {
  return { workload: 'builtin.sha256', params: '100', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 90_000, input: Buffer.from(text).toString('base64') };
}

/** Wait until a count stops growing (or reaches `want`): floods are absorbed at the machine's pace. */
async function settle(what: string, read: () => Promise<number>, want: number, timeoutMs = 180_000): Promise<number> {
  let last = -1;
  let still = 0;
  return waitFor(what, async () => {
    const n = await read();
    if (n >= want) return n;
    still = n === last ? still + 1 : 0;
    last = n;
    return n > 0 && still >= 6 ? n : undefined;
  }, timeoutMs, 1_000);
}

const JOBS = 2_000;
const PER_BUYER = 4;

test('(a) a valid-job flood from one key: the honest job completes, the provider quotes the attacker within budget, the buyer stores only its own offers', async () => {
  const c = new Cluster('flood-jobs');
  clusters.push(c);
  await withLogs(c, async () => {
    const pcfg = providerConfig({ price: '0.002', slots: 2 });
    (pcfg.provider as Record<string, unknown>).quoteBudget = { maxLiveOffers: 64, maxLiveOffersPerBuyer: PER_BUYER };
    const p = await c.start('p', pcfg);
    const b = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(p)], collectWindowMs: 6000, enoughOffers: 1 }));
    await waitForMarket(b, 1, [p]);

    const x = await startNode({ syncOnConnect: [] });
    c.onDestroy(() => x.stop());
    await x.dial(bootstrapAddr(p));
    await x.dial(bootstrapAddr(b));
    await waitFor('the attacker on the job and offer topics of both daemons', () => (['job', 'offer'] as const).every((k) => x.topicPeers(k).length >= 2));
    await waitFor('both daemons to hold the attacker’s gossip streams, both ways', async () => (await gossipLinked(p, x.peerId.toString())) && (await gossipLinked(b, x.peerId.toString())));
    const offersToAttacker: Array<Opened<Offer>> = [];
    const attackerJobs = new Set<string>();
    x.subscribe('offer', (r) => {
      if (r.signer === p.did && attackerJobs.has((r as Opened<Offer>).record.job)) offersToAttacker.push(r as Opened<Offer>);
    });

    // The attacker's own "provider" key offers on its own jobs (valid, with its advert attached): relayed, never stored by the buyer.
    const fake = Ed25519Signer.generate();
    const now = Date.now();
    const fakeAdvert = seal(T.advert, { seq: now, issuedAt: now, expiresAt: now + 600_000, workloads: ['builtin.sha256'], tier: 'standard', hardware: { cpuCores: 8, memoryMiB: 16_384 } }, fake) as Opened<Advert>;
    const jobs = Array.from({ length: JOBS }, (_, i) => sha256Job(x.signer, String(i)));
    for (const j of jobs) attackerJobs.add(j.address);
    const jobTopic = topicFor('job', 'public', shardOf('builtin.sha256'));
    const offerTopic = topicFor('offer');
    const flood = (async () => {
      for (let i = 0; i < JOBS; i++) {
        void x.libp2p.services.pubsub.publish(jobTopic, jobs[i]!.bytes).catch(() => undefined);
        if (i % 10 === 0 && i / 10 < 200) {
          const t = Date.now(); // one reading: two could straddle a millisecond and put expiresAt after startBy (OFFER_EXPIRES_AFTER_START)
          const o = seal(T.offer, { job: jobs[i]!.address, advert: fakeAdvert.address, price: { amount: '0.001', currency: 'USD' }, durationMs: 500, issuedAt: t, startBy: t + 60_000, expiresAt: t + 60_000 }, fake);
          void x.libp2p.services.pubsub.publish(offerTopic, encodeCanonical([o.bytes, fakeAdvert.bytes])).catch(() => undefined);
        }
        if (i % 100 === 99) await sleep(0);
      }
    })();
    // The honest job, published while the flood is under way.
    await sleep(200);
    const run = runJob(b, honestSpec('honest work during a job flood'));
    await flood;
    const { result } = await run;
    assert.equal(result.status, 'completed', `the honest job: ${JSON.stringify(result.attempts)}`);

    // Let the provider absorb the whole flood, then count.
    const pm = () => metricsText(p);
    await settle('the provider to work through the flood', async () => metric(await pm(), 'c0mpute_net_records_total', { kind: 'job', source: 'gossip' }), JOBS);
    await sleep(2_000);
    const ptext = await pm();
    assert.ok(offersToAttacker.length <= PER_BUYER, `the provider signed ${offersToAttacker.length} offers for the attacker (budget ${PER_BUYER})`);
    assert.ok(metric(ptext, 'c0mpute_provider_quotes_skipped_total', { reason: 'buyer-budget' }) > 0, 'jobs over budget are counted');
    assert.ok(metric(ptext, 'c0mpute_provider_live_offers') <= PER_BUYER + 1, 'the provider’s live offers stay within its budget');

    // The buyer holds offers for its own job only: none of the attacker's 200 offers, none of the provider's offers to the attacker.
    const bs = await get<StatusView>(b, '/v1/status');
    assert.ok(bs.offersHeld <= 1, `the buyer stores ${bs.offersHeld} offers; its one job had one provider`);
    const held = await get<{ offers: unknown[] }>(b, `/v1/offers/${encodeURIComponent(jobs[0]!.address)}`);
    assert.equal(held.offers.length, 0);
    assert.ok(metric(await metricsText(b), 'c0mpute_market_offers_relayed_not_stored_total') > 0, 'relayed offers are counted, not stored');
  });
});

const SYBILS = 2_500;
const CAP = 200;
/** Attacker peers the Sybil adverts are sent from (a Sybil flood needs no single noisy peer). */
const ATTACKERS = 4;

test('(b) a Sybil advert flood (2,500 fresh keys): the honest job completes, stored adverts stay within the cap after a restart, `market` stays summarised', async () => {
  const c = new Cluster('flood-adverts');
  clusters.push(c);
  await withLogs(c, async () => {
    const p = await c.start('p', providerConfig({ price: '0.002' }));
    const bcfg: Record<string, unknown> = { ...buyerConfig({ bootstrap: [bootstrapAddr(p)], collectWindowMs: 6000, enoughOffers: 1 }), market: { maxAdverts: CAP } };
    let b = await c.start('b', bcfg);
    await waitForMarket(b, 1, [p]);

    const xs = await Promise.all(Array.from({ length: ATTACKERS }, () => startNode({ syncOnConnect: [] })));
    c.onDestroy(async () => void (await Promise.allSettled(xs.map((x) => x.stop()))));
    for (const x of xs) await x.dial(bootstrapAddr(b));
    await waitFor('the attackers on the buyer’s advert topic', () => xs.every((x) => x.topicPeers('advert').length >= 1));
    await waitFor('the buyer to hold every attacker’s gossip streams, both ways', async () => {
      for (const x of xs) if (!(await gossipLinked(b, x.peerId.toString()))) return false;
      return true;
    });
    const now = Date.now();
    const adverts = Array.from({ length: SYBILS }, (_, i) =>
      seal(T.advert, { seq: now + i, issuedAt: now, expiresAt: now + 3_600_000, workloads: ['builtin.sha256'], tier: 'standard', region: 'xx-sybil', hardware: { cpuCores: 64, memoryMiB: 262_144 } }, Ed25519Signer.generate()),
    );
    const topic = topicFor('advert', 'public', shardOf('builtin.sha256'));
    const flood = (async () => {
      for (let i = 0; i < SYBILS; i++) {
        void xs[i % ATTACKERS]!.libp2p.services.pubsub.publish(topic, adverts[i]!.bytes).catch(() => undefined);
        // Paced only so that the network layer delivers them all (unpaced, gossipsub's stream buffers drop part of the burst).
        if (i % 10 === 9) await sleep(25);
      }
    })();
    await sleep(500);
    const { result } = await runJob(b, honestSpec('honest work during a Sybil advert flood'));
    await flood;
    assert.equal(result.status, 'completed', `the honest job: ${JSON.stringify(result.attempts)}`);

    await settle('the buyer to work through the advert flood', async () => metric(await metricsText(b), 'c0mpute_net_records_total', { kind: 'advert', source: 'gossip' }), SYBILS);
    await sleep(2_000);
    const text = await metricsText(b);
    if (process.env.FLOOD_DEBUG) console.error(text.split('\n').filter((l) => /c0mpute_(market|net_records_total\{[^}]*advert|net_queue)/.test(l)).join('\n'));
    assert.ok(metric(text, 'c0mpute_market_adverts_stored') <= CAP, `stored ${metric(text, 'c0mpute_market_adverts_stored')} adverts, cap ${CAP}`);
    assert.ok(metric(text, 'c0mpute_market_adverts_evicted_total') > 0, 'evictions are counted');

    // `c0mpute market`: a bounded summary, and the honest provider (dealt with) among what is held.
    const m = await c0mpute(b.dir, ['market']);
    assert.equal(m.code, 0, m.err);
    const lines = m.out.trim().split('\n');
    assert.ok(lines.length <= 60, `c0mpute market printed ${lines.length} lines`);
    assert.match(m.out, /… and [0-9,]+ more providers/);

    // Restart: the store still holds at most the cap, and the market lists exactly what is stored.
    await c.stop(b);
    const db = await openDb(join(b.dir, 'db'));
    let stored: string[];
    try {
      const rs = await RecordStore.open(db);
      assert.ok(rs.advertCount <= CAP, `after the restart the store holds ${rs.advertCount} adverts`);
      stored = [...new Set(rs.allAdverts().map((a) => a.signer))].sort();
      assert.ok(stored.includes(p.did), 'the honest provider’s advert is kept');
    } finally {
      await closeDb(db);
    }
    // (alone: no bootstrap and no remembered peers to redial, so no sync changes the set between the look at the disk and the look at the market)
    b = await c.start('b', { ...bcfg, network: { ...(bcfg.network as Record<string, unknown>), bootstrap: [], reconnect: { rememberPeers: 0, minPeers: 0 } } });
    const listed = await get<{ total: number; adverts: Array<{ signer: string }> }>(b, '/v1/market');
    assert.deepEqual(listed.adverts.map((a) => a.signer).sort(), stored);
    const again = await get<StatusView>(b, '/v1/status');
    assert.ok(again.providersKnown <= CAP);
  });
});
