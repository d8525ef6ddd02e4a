/**
 * A hostile node on a real network: two provider processes, an honest buyer
 * (an in-process Daemon with a real data dir and control API, so its gossip
 * score of the hostile peer can be read), and a hostile in-process libp2p node
 * connected to the buyer and to one provider. It injects tampered adverts,
 * re-pointed offers, forged receipts and malformed bytes. None reaches any
 * store, honest traffic still flows, and its gossip score falls below zero.
 */
import '../../src/polyfill.js';
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { T, decodeCanonical, encodeCanonical, seal, sealRaw, type Ed25519Signer, type Advert, type Job, type Offer, type Opened, type Receipt } from '../../src/records/index.js';
import { hashHex } from '../../src/records/address.js';
import { isSharded, shardOf, topicFor, type TopicKind } from '../../src/net/topics.js';
import type { Network } from '../../src/net/node.js';
import type { PeerId } from '@libp2p/interface';
import { Daemon } from '../../src/node/daemon.js';
import { parseConfig } from '../../src/node/config.js';
import { loadIdentity } from '../../src/node/identity.js';
import { createLogger } from '../../src/util/log.js';
import { peerIdFromDid } from '../../src/node/peer-id.js';
import { startNode } from './net-helpers.js';
import { Cluster, bootstrapAddr, get, joinEnvelope, metricsText, recordVerdicts, providerConfig, sha256Job, splitEnvelope, waitFor, waitForMarket, withLogs, type AdvertView, type Figures, type NodeProc, type StatusView, type Wire } from './node-helpers.js';

const c = new Cluster('hostile');
let p1: NodeProc;
let p2: NodeProc;
let h: Daemon;
let hApi: { name: string; api: { api: string; token: string } };
let x: Network & { signer: Ed25519Signer };
/** Addresses of everything the hostile node injected that is a record-shaped thing. */
const hostile = { adverts: [] as string[], offers: [] as string[], receipts: [] as string[] };
let jobA: Opened<Job>;
let jobB: Opened<Job>;
let genuineP1Advert: Opened<Advert>;

/** Change fields of a signed record's payload and put the original signature back. */
function tamper(env: Uint8Array, change: (core: Record<string, unknown>) => void): Uint8Array {
  const parts = splitEnvelope(env);
  const core = decodeCanonical(parts.payload) as Record<string, unknown>;
  change(core);
  return joinEnvelope({ ...parts, payload: encodeCanonical(core) });
}

// the sharded kinds on the market of the cluster's workload (docs/network.md §14)
const raw = (kind: TopicKind, bytes: Uint8Array) => x.libp2p.services.pubsub.publish(topicFor(kind, 'public', isSharded(kind) ? shardOf('builtin.sha256') : undefined), bytes);

before(async () => {
  await withLogs(c, async () => {
    // every honest node joins the outcome topics (network.outcomes all), so forged receipts are refused by validation,
    // not merely unheard, and the honest job's evidence reaches every node (docs/network.md §14)
    p1 = await c.start('p1', providerConfig({ price: '0.002', cpuCores: 8, region: 'eu-west', outcomes: 'all' }));
    p2 = await c.start('p2', providerConfig({ price: '0.003', cpuCores: 8, region: 'us-east', bootstrap: [bootstrapAddr(p1)], outcomes: 'all' }));
    // The honest neighbour: a buyer Daemon in this process, on a real data dir, serving its control API.
    const { dir } = c.dataDir('h');
    const config = parseConfig({
      roles: ['buyer'],
      network: { listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, bootstrap: [bootstrapAddr(p1), bootstrapAddr(p2)], outcomes: 'all' },
      api: { listen: '127.0.0.1:0' },
      buyer: { collectWindowMs: 8000, enoughOffers: 2 },
    });
    const log = createLogger({ level: 'info', format: 'json', fd: openSync(join(dir, 'node.log'), 'a') });
    h = await Daemon.start({ dataDir: dir, config, identity: loadIdentity(dir), log });
    c.onDestroy(() => h.stop());
    hApi = { name: 'h', api: { api: h.apiAddress!, token: readFileSync(join(dir, 'api.token'), 'utf8').trim() } };
    await Promise.all([waitForMarket(hApi, 2, [p1, p2]), waitForMarket(p2, 2, [p1])]);

    // The hostile node joins: connected to the honest buyer and to provider 1.
    x = await startNode({ syncOnConnect: [] });
    c.onDestroy(() => x.stop());
    await x.dial(h.net.addrs()[0]!);
    await x.dial(bootstrapAddr(p1));
    const honest = [h.net.peerId.toString(), peerIdFromDid(p1.did).toString()];
    await waitFor('the hostile node to see its honest neighbours on every topic', () =>
      (['advert', 'offer', 'receipt', 'job'] as TopicKind[]).every((k) => honest.every((p) => x.topicPeers(k).includes(p)) && h.net.topicPeers(k).includes(x.peerId.toString())),
    );
    // Provider 2 is not connected to the hostile node: its offers reach it by a DHT lookup (offer/1 dials the job's
    // signer), which finds it only once a neighbour has it in its routing table (kad-dht adds a new contact after a
    // ping). The honest buyer's table is the one this process can read; provider 2 asks it (docs/network.md "Offers").
    const dhtTable = (n: Network) => (n.libp2p.services.dht as unknown as { routingTable: { find(p: PeerId): Promise<PeerId | undefined> } }).routingTable;
    await waitFor('the honest buyer’s DHT routing table to hold the hostile node, so provider 2 can find it', async () => (await dhtTable(h.net).find(x.peerId)) !== undefined);
  });
});

after(async () => {
  await c.destroy();
});

test('tampered adverts, re-pointed offers, forged receipts and malformed bytes reach no store; the hostile score falls below zero', async () => {
  await withLogs(c, async () => {
    // What the hostile node starts from: genuine records of provider 1.
    const p1Status = await get<StatusView>(p1, '/v1/status');
    const fetched = (await x.fetchRecords(p1.did, [p1Status.provider!.advert!], T.advert)) as Array<Opened<Advert>>;
    assert.equal(fetched.length, 1);
    genuineP1Advert = fetched[0]!;
    // It announces two (valid) jobs of its own and collects the providers' genuine offers on the first.
    const offersHeard: Array<Opened<Offer>> = [];
    x.subscribe('offer', (r) => void offersHeard.push(r as Opened<Offer>));
    jobA = sha256Job(x.signer, '1', { deadlineMs: 60_000, inputBytes: 32 });
    jobB = sha256Job(x.signer, '2', { deadlineMs: 60_000, inputBytes: 32 });
    await x.publish('job', jobA.bytes);
    await x.publish('job', jobB.bytes);
    // both jobs: the check below holds every offer a node keeps for either job against what was heard here
    await waitFor('genuine offers from both providers on each of the hostile node’s jobs', () =>
      [jobA, jobB].every((j) => new Set(offersHeard.filter((o) => o.record.job === j.address).map((o) => o.signer)).size === 2),
    ).catch(async (e: Error) => {
      // what each provider did with its offers: `unreachable` means its dial to the job's signer (the hostile node) found no route
      const direct = await Promise.all(
        [p1, p2].map(async (p) => {
          const text = await fetch(`http://${p.api.api}/metrics`).then((r) => r.text(), (err: Error) => err.message);
          return `${p.name}: ${text.split('\n').filter((l) => l.startsWith('c0mpute_offers_direct_total')).join(', ') || 'no offers_direct_total'}`;
        }),
      );
      const heard = offersHeard.map((o) => `${o.signer === p1.did ? 'p1' : o.signer === p2.did ? 'p2' : o.signer} on ${o.record.job === jobA.address ? 'A' : 'B'}`);
      // and what the hostile node's network made of the offers it got (verdict and reason: an `ignored` above is one of these)
      const mine = (await x.metrics.registry.metrics()).split('\n').filter((l) => l.startsWith('c0mpute_net_records_total') && l.includes('kind="offer"'));
      throw new Error(`${e.message}; heard: ${heard.join(', ') || 'none'}; ${direct.join('; ')}; x: ${mine.join(', ') || 'no offer verdicts'}`);
    });
    const p1Offer = offersHeard.find((o) => o.record.job === jobA.address && o.signer === p1.did)!;

    const bad: Array<[TopicKind, Uint8Array]> = [];
    // 1. tampered adverts: a bit-flipped signature, and a payload claiming far more hardware (and a higher seq)
    const flipped = Uint8Array.from(genuineP1Advert.bytes);
    flipped[flipped.length - 7]! ^= 0x10;
    const bigger = tamper(genuineP1Advert.bytes, (core) => {
      const hw = core.hardware as Record<string, unknown>;
      hw.cpuCores = 128;
      hw.memoryMiB = 1_048_576;
      core.seq = (core.seq as number) + 1000;
    });
    bad.push(['advert', flipped], ['advert', bigger]);
    hostile.adverts.push(hashHex(flipped), hashHex(bigger));
    // 2. a re-pointed offer: provider 1's genuine offer, its job changed after signing (alone, and framed with the genuine advert)
    const repointed = tamper(p1Offer.bytes, (core) => {
      core.job = jobB.address;
    });
    const cheaper = tamper(p1Offer.bytes, (core) => {
      core.price = { amount: '0.0001', currency: 'USD' };
    });
    bad.push(['offer', repointed], ['offer', encodeCanonical([cheaper, genuineP1Advert.bytes])]);
    hostile.offers.push(hashHex(repointed), hashHex(cheaper));
    // 3. a forged receipt: names provider 1 and links to its genuine offer, but the hostile key signed it
    const now = Date.now();
    const asSelf = seal(
      T.receipt,
      {
        job: jobA.address,
        offer: p1Offer.address,
        buyer: h.did,
        provider: x.did,
        workload: 'builtin.sha256',
        status: 'failed',
        startedAt: now - 2000,
        completedAt: now - 1000,
        inputHash: jobA.record.input.hash,
        price: p1Offer.record.price,
        energy: { uj: 1, grade: 'Estimator' },
        failure: { code: 'EXEC_CRASHED', message: 'made up' },
      },
      x.signer,
    ) as Opened<Receipt>;
    const core = decodeCanonical(splitEnvelope(asSelf.bytes).payload) as Record<string, unknown>;
    core.provider = p1.did;
    const forged = sealRaw(T.receipt, encodeCanonical(core), x.signer);
    // ...and provider 1's name on a receipt whose signature was then broken
    const forged2 = Uint8Array.from(forged);
    forged2[forged2.length - 1]! ^= 0x01;
    bad.push(['receipt', forged], ['receipt', forged2]);
    hostile.receipts.push(hashHex(forged), hashHex(forged2));
    // 4. malformed bytes on every topic it can reach
    bad.push(
      ['advert', new TextEncoder().encode('not a record at all')],
      ['offer', Uint8Array.from([0xd2, 0x84, 0x41, 0x00])],
      ['receipt', genuineP1Advert.bytes.slice(0, 60)],
      ['advert', Uint8Array.from(randomBytes(300))],
      ['offer', encodeCanonical(['x', 'y'])],
    );
    for (const [kind, bytes] of bad) await raw(kind, bytes);

    // Every verdict is counted by the honest buyer and by the provider process it reached.
    const want = ['advert/reject/ENVELOPE_BAD_SIGNATURE', 'offer/reject/ENVELOPE_BAD_SIGNATURE', 'receipt/reject/RECEIPT_SIGNER_NOT_PROVIDER', 'advert/reject/MESSAGE_MALFORMED', 'offer/reject/ENVELOPE_MALFORMED'];
    for (const n of [hApi, p1]) {
      await waitFor(`every hostile verdict counted at ${n.name}`, async () => {
        const v = recordVerdicts(await metricsText(n));
        return want.every((w) => v.has(w));
      });
    }
    await waitFor('the hostile peer’s gossip score at its honest neighbour to fall below zero', () => h.net.gossipScore(x.peerId) < 0);
    assert.ok(h.net.gossipScore(x.peerId) < 0);
    for (const p of [p1, p2]) assert.ok(h.net.gossipScore(p.did) >= 0, 'honest providers keep a non-negative score');

    // None of it reached any store. In-process: the buyer's record store, book and evidence, by address.
    for (const a of [...hostile.adverts, ...hostile.offers, ...hostile.receipts]) {
      assert.equal(await h.records.has(a), false, a);
      assert.equal(await h.market.getBytes(a), undefined, a);
    }
    // Through the API of every node (the honest buyer, the provider it was injected into, the far provider). Provider
    // 1 may have signed a newer advert since the one fetched above (its first went out before it had a peer, and it
    // signs a fresh one until one reaches a peer: Provider.publishAdvert); every node ends with the one it holds now.
    const current = (await get<StatusView>(p1, '/v1/status')).provider!.advert!;
    for (const n of [hApi, p1, p2]) {
      await waitFor(`${n.name} to hold provider 1's current advert`, async () => (await get<{ adverts: AdvertView[] }>(n, '/v1/market')).adverts.some((a) => a.address === current));
      const m = await get<{ adverts: AdvertView[] }>(n, '/v1/market');
      const ofP1 = m.adverts.filter((a) => a.signer === p1.did);
      assert.equal(ofP1.length, 1, `${n.name}: one advert for provider 1`);
      assert.equal(ofP1[0]!.address, current, `${n.name}: provider 1's advert is the genuine one it signed last`);
      assert.equal(ofP1[0]!.record.hardware.cpuCores, 8);
      for (const a of m.adverts) assert.ok(!hostile.adverts.includes(a.address));
      for (const j of [jobA, jobB]) {
        const o = await get<{ offers: Array<Wire<Offer>> }>(n, `/v1/offers/${encodeURIComponent(j.address)}`);
        for (const off of o.offers) {
          assert.ok(!hostile.offers.includes(off.address), `${n.name}: no tampered offer`);
          assert.equal(off.record.job, j.address, `${n.name}: every held offer answers the job it names`);
          assert.ok(offersHeard.some((g) => g.address === off.address), `${n.name}: every held offer is one a provider signed`);
        }
      }
      const rep = await get<{ providers: Figures[] }>(n, '/v1/reputation');
      assert.deepEqual(rep.providers, [], `${n.name}: the forged receipt counts for nobody`);
      const status = await get<StatusView>(n, '/v1/status');
      assert.equal(status.evidence, 0, `${n.name}: no evidence held`);
    }
  });
});

test('honest traffic still flows after the attack: a job completes and its evidence reaches every node', async () => {
  await withLogs(c, async () => {
    const input = Buffer.from('honest work after the storm');
    const r = await h.runJob({ workload: 'builtin.sha256', params: '100', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 60_000, input: new Uint8Array(input) });
    assert.equal(r.status, 'completed', JSON.stringify(r.attempts));
    assert.equal(r.receipt!.record.offer, r.selection!.record.winner);
    assert.equal(r.acceptance!.record.receipt, r.receipt!.address);
    const winner = r.receipt!.record.provider;
    assert.ok([p1.did, p2.did].includes(winner));
    // The buyer counts it first-hand and the winner as its own record; the other provider holds it
    // without counting it (it trusts no buyer: docs/market.md "Reputation and its threat model").
    for (const n of [hApi, p1, p2]) {
      const counts = n === hApi || (n as NodeProc).did === winner;
      await waitFor(`${n.name} to ${counts ? 'credit' : 'hold the evidence for'} the winner`, async () => {
        const rep = await get<{ providers: Figures[] }>(n, '/v1/reputation');
        return rep.providers.length === 1 && rep.providers[0]!.did === winner && rep.providers[0]!.successes === (counts ? 1 : 0) && rep.providers[0]!.untrusted === (counts ? 0 : 1);
      });
    }
    assert.ok(h.net.gossipScore(x.peerId) < 0, 'the hostile peer stays penalised');
  });
});
