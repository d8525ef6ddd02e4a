/**
 * The market-side flood defences (issue #10) as units: the provider's quoting
 * budget, the advert cap's choice of victims, and the capped record store on a
 * real LevelDB (what is stored and what the market's index holds stay one set,
 * across a restart), and the summary of long listings.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type Advert, type Job, type Offer } from '../../../src/records/kinds.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { RecordStore } from '../../../src/store/records.js';
import { QuoteBudget } from '../../../src/roles/provider/quote-budget.js';
import { chooseEvictions } from '../../../src/market/advert-cap.js';
import { MarketService } from '../../../src/node/market-service.js';
import { silentLogger } from '../../../src/util/log.js';
import { moreProviders, pickShown, listLimit } from '../../../src/cli/summary.js';

const NOW = 1_800_000_000_000;

function advert(signer: Ed25519Signer, seq: number, issuedAt = NOW, lifetime = 600_000): Opened<Advert> {
  return seal(T.advert, { seq, issuedAt, expiresAt: issuedAt + lifetime, workloads: ['builtin.sha256'], tier: 'community', hardware: { cpuCores: 4, memoryMiB: 8192 } }, signer);
}

/** A job of this node's (signed by `me`), live well past the tests' clock. */
function ownJob(me: Ed25519Signer): Opened<Job> {
  return seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: NOW, deadline: NOW + 86_400_000, timeoutMs: 10_000, input: { hash: 'sha256:' + 'c'.repeat(64), size: 1 }, inputSealed: 'no' }, me);
}

describe('QuoteBudget', () => {
  test('per-buyer and total bounds; expiry frees the budget; a known buyer is held to its own bound only', () => {
    const b = new QuoteBudget<string>({ maxLiveOffers: 3, maxLiveOffersPerBuyer: 2 });
    const add = (job: string, buyer: string, expiresAt = NOW + 1000) => b.add({ job, buyer, expiresAt, record: job });
    assert.equal(b.check('A', NOW), undefined);
    add('j1', 'A');
    add('j2', 'A');
    assert.equal(b.check('A', NOW), 'buyer-budget');
    assert.equal(b.check('B', NOW), undefined);
    add('j3', 'B', NOW + 10);
    assert.equal(b.check('C', NOW), 'total-budget');
    // B's offer expires: the total has room again
    assert.equal(b.check('C', NOW + 10), undefined);
    assert.equal(b.live(NOW + 10), 2);
    // a known buyer is not counted against the total
    b.markKnownBuyer('K');
    add('j4', 'C', NOW + 1000);
    assert.equal(b.check('D', NOW + 10), 'total-budget');
    assert.equal(b.check('K', NOW + 10), undefined);
    add('k1', 'K');
    add('k2', 'K');
    assert.equal(b.check('K', NOW + 10), 'buyer-budget');
    assert.equal(b.offerFor('k1', NOW + 10)?.record, 'k1');
    assert.equal(b.offerFor('k1', NOW + 1000), undefined);
    // everything expired: all budgets free
    assert.equal(b.check('D', NOW + 2000), undefined);
    assert.equal(b.live(NOW + 2000), 0);
  });

  test('a selection by the job’s buyer (or an authorised decider) releases the offer; anyone else’s does not', () => {
    const b = new QuoteBudget<string>({ maxLiveOffers: 10, maxLiveOffersPerBuyer: 1 });
    b.add({ job: 'j', buyer: 'A', expiresAt: NOW + 100, record: 'j' });
    assert.equal(b.check('A', NOW), 'buyer-budget');
    assert.equal(b.release('j', 'X'), false);
    assert.equal(b.check('A', NOW), 'buyer-budget');
    assert.equal(b.release('j', 'S', (signer, buyer) => signer === 'S' && buyer === 'A'), true);
    assert.equal(b.check('A', NOW), undefined);
    b.add({ job: 'k', buyer: 'A', expiresAt: NOW + 100, record: 'k' });
    assert.equal(b.release('k', 'A'), true);
    assert.equal(b.live(NOW), 0);
  });

  test('deciding quickly cannot cycle the budget: at most maxRecentOffersPerBuyer offers per window', () => {
    let t = 0; // the monotonic clock of the rate window
    const b = new QuoteBudget<string>({ maxLiveOffers: 10, maxLiveOffersPerBuyer: 1, maxRecentOffersPerBuyer: 3, windowMs: 100, monoClock: () => t });
    for (let i = 0; i < 3; i++) {
      t = i;
      assert.equal(b.check('A', NOW + i), undefined);
      b.add({ job: `j${i}`, buyer: 'A', expiresAt: NOW + 1000, record: '' });
      assert.equal(b.release(`j${i}`, 'A'), true);
    }
    t = 3;
    assert.equal(b.check('A', NOW + 3), 'buyer-rate');
    assert.equal(b.check('B', NOW + 3), undefined);
    t = 100;
    assert.equal(b.check('A', NOW + 100), undefined);
  });

  test('the rate window is timed on the monotonic clock: a backward wall-clock step does not hold a buyer at buyer-rate', () => {
    let t = 0;
    const b = new QuoteBudget<string>({ maxLiveOffers: 10, maxLiveOffersPerBuyer: 1, maxRecentOffersPerBuyer: 3, windowMs: 100, monoClock: () => t });
    const FAST = NOW + 600_000; // the wall clock is 10 min fast
    for (let i = 0; i < 3; i++) {
      t = i;
      assert.equal(b.check('A', FAST + i), undefined);
      b.add({ job: `j${i}`, buyer: 'A', expiresAt: FAST + 1000, record: '' });
      assert.equal(b.release(`j${i}`, 'A'), true);
    }
    t = 3;
    assert.equal(b.check('A', NOW + 3), 'buyer-rate', 'NTP corrects the clock: the window still holds');
    t = 101;
    assert.equal(b.check('A', NOW + 101), undefined, 'a window later it has passed, as with no step');
  });

  test('buyers never seen again are forgotten a window after their last offer (a flood of made-up buyer keys leaves nothing behind)', () => {
    let t = 0;
    const b = new QuoteBudget<string>({ maxLiveOffers: 1000, maxLiveOffersPerBuyer: 1, maxRecentOffersPerBuyer: 3, windowMs: 100, monoClock: () => t });
    for (let i = 0; i < 50; i++) {
      t = i;
      assert.equal(b.check(`made-up-${i}`, NOW + i), undefined);
      b.add({ job: `j${i}`, buyer: `made-up-${i}`, expiresAt: NOW + 50, record: '' });
    }
    assert.equal(b.recentBuyers, 50);
    // a buyer seen again within the window keeps its times, and its rate still counts
    t = 149;
    b.add({ job: 'k', buyer: 'made-up-49', expiresAt: NOW + 500, record: '' });
    t = 160;
    assert.equal(b.check('someone', NOW + 160), undefined);
    assert.equal(b.recentBuyers, 1);
    assert.equal(b.live(NOW + 160), 1);
  });

  test('a buyer that becomes known while holding offers stops counting against the total', () => {
    const b = new QuoteBudget<string>({ maxLiveOffers: 2, maxLiveOffersPerBuyer: 5 });
    b.add({ job: 'a', buyer: 'A', expiresAt: NOW + 100, record: 'a' });
    b.add({ job: 'b', buyer: 'A', expiresAt: NOW + 100, record: 'b' });
    assert.equal(b.check('B', NOW), 'total-budget');
    b.markKnownBuyer('A');
    assert.equal(b.check('B', NOW), undefined);
    assert.equal(b.check('B', NOW + 200), undefined);
  });
});

describe('advert cap: chooseEvictions', () => {
  const mk = (n: number) => Array.from({ length: n }, () => Ed25519Signer.generate());
  test('expired first, then unconnected oldest first, then connected; providers dealt with never', () => {
    const [e, u1, u2, c1, d1] = mk(5).map((s, i) => ({ s, a: advert(s, 1, NOW + [0, 100, 50, 10, 0][i]!, i === 0 ? 10 : 600_000) }));
    const cands = [e!, u1!, u2!, c1!, d1!].map((x) => ({ did: x.a.signer, current: x.a, adverts: [x.a] }));
    const ctx = { now: NOW + 1000, dealtWith: new Set([d1!.a.signer]), connected: new Set([c1!.a.signer]), cited: new Set<string>() };
    const order = chooseEvictions(cands, 10, ctx);
    assert.deepEqual(order.map((x) => x.did), [e!.a.signer, u2!.a.signer, u1!.a.signer, c1!.a.signer]);
    assert.deepEqual(order.map((x) => x.reason), ['expired', 'unconnected', 'unconnected', 'connected']);
    assert.deepEqual(chooseEvictions(cands, 2, ctx).map((x) => x.did), [e!.a.signer, u2!.a.signer]);
    assert.deepEqual(chooseEvictions(cands, 0, ctx), []);
  });

  test('providers dealt with before (known) go after every provider not dealt with, so a flood of fresh keys evicts fresh keys first', () => {
    // a provider this node dealt with before, not connected, its advert 5/6 through its lifetime; strangers; fresh keys
    const [k, s1, c1, kc, ...fresh] = mk(8);
    const known = advert(k!, 1, NOW - 500_000, 600_000);
    const knownConnected = advert(kc!, 1, NOW - 100_000, 600_000);
    const stranger = advert(s1!, 1, NOW - 400_000, 600_000);
    const connectedStranger = advert(c1!, 1, NOW - 450_000, 600_000);
    const sybils = fresh.map((f) => advert(f, 1, NOW, 3_600_000));
    const cands = [known, knownConnected, stranger, connectedStranger, ...sybils].map((a) => ({ did: a.signer, current: a, adverts: [a] }));
    const ctx = { now: NOW, dealtWith: new Set<string>(), connected: new Set([connectedStranger.signer, knownConnected.signer]), cited: new Set<string>(), known: new Set([known.signer, knownConnected.signer]) };
    const order = chooseEvictions(cands, 100, ctx).map((e) => e.did);
    // strangers first (the one furthest through its lifetime first), then connected strangers, then the known ones
    assert.deepEqual(order.slice(0, 5).sort(), [stranger, ...sybils].map((a) => a.signer).sort());
    assert.equal(order[0], stranger.signer);
    assert.deepEqual(order.slice(5), [connectedStranger.signer, known.signer, knownConnected.signer]);
    // the flood's excess takes the fresh keys and strangers, never the known provider
    const four = chooseEvictions(cands, sybils.length, ctx).map((e) => e.did);
    assert.ok(!four.includes(known.signer) && !four.includes(knownConnected.signer));
    // without `known` the known provider would go first of all (furthest through its lifetime, not connected)
    assert.equal(chooseEvictions(cands, 1, { ...ctx, known: new Set<string>() })[0]?.did, known.signer);
  });

  test('by how far through its lifetime an advert is, not its age: a departed provider of a small market goes before a live one of a large market', () => {
    const [small, large] = mk(2);
    // small market: 10-min advert issued 6 min ago (missed its republish at 5 min); large market: 1-h advert issued 20 min ago
    const gone = advert(small!, 1, NOW - 360_000, 600_000);
    const live = advert(large!, 1, NOW - 1_200_000, 3_600_000);
    const cands = [live, gone].map((a) => ({ did: a.signer, current: a, adverts: [a] }));
    const ctx = { now: NOW, dealtWith: new Set<string>(), connected: new Set<string>(), cited: new Set<string>() };
    assert.deepEqual(chooseEvictions(cands, 1, ctx).map((x) => x.did), [gone.signer]);
  });

  test('every record counts: superseded adverts nothing cites go first (a protected provider\'s too), then whole providers, then cited superseded ones; a protected provider keeps its current advert only', () => {
    const [dealt, other] = mk(2);
    const d = [1, 2, 3, 4].map((seq) => advert(dealt!, seq, NOW + seq * 10));
    const o = [1, 2].map((seq) => advert(other!, seq, NOW + 100 + seq));
    const cands = [
      { did: d[0]!.signer, current: d[3]!, adverts: d },
      { did: o[0]!.signer, current: o[1]!, adverts: o },
    ];
    // d[1] is cited by an offer this node holds
    const ctx = { now: NOW + 1000, dealtWith: new Set([d[0]!.signer]), connected: new Set<string>(), cited: new Set([d[1]!.address]) };
    const addrs = (ev: ReturnType<typeof chooseEvictions>) => ev.flatMap((e) => e.adverts.map((a) => a.address));
    // superseded and uncited, the earliest first, whoever the provider
    const two = chooseEvictions(cands, 2, ctx);
    assert.deepEqual(addrs(two), [d[0]!.address, d[2]!.address]);
    assert.ok(two.every((e) => e.reason === 'superseded' && !e.whole));
    // then the unprotected provider whole (its superseded advert already went in the first pass)
    const four = chooseEvictions(cands, 4, ctx);
    assert.deepEqual(addrs(four).sort(), [d[0]!, d[2]!, o[0]!, o[1]!].map((a) => a.address).sort());
    assert.deepEqual(four.find((e) => e.did === o[0]!.signer)?.whole, true);
    // then what an offer cites of the protected provider's superseded adverts; never its current one
    const all = chooseEvictions(cands, 100, ctx);
    assert.deepEqual(addrs(all).sort(), [d[0]!, d[1]!, d[2]!, o[0]!, o[1]!].map((a) => a.address).sort());
    assert.ok(!addrs(all).includes(d[3]!.address));
  });
});

describe('capped RecordStore and MarketService (real LevelDB)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'c0-cap-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a flood of fresh providers stays within the cap; a provider dealt with is kept; stored set = index set after a restart', async () => {
    const path = join(dir, 'db');
    const me = Ed25519Signer.generate();
    const honest = Ed25519Signer.generate();
    const honestDid = didFromPublicKey(honest.publicKey);
    const open = async (db: Awaited<ReturnType<typeof openDb>>, max: number) => {
      const records = await RecordStore.open(db);
      const market = await MarketService.open({ db, prefix: '', records, now: NOW, clock: () => NOW + 1, log: silentLogger(), signer: me, did: didFromPublicKey(me.publicKey), skewMs: 30_000, maxAdverts: max });
      return { records, market };
    };
    let db = await openDb(path);
    try {
      const { records, market } = await open(db, 50);
      const h = advert(honest, 1, NOW - 1000);
      assert.equal(await market.putAdvert(h), true);
      // the honest provider quoted for one of our jobs: it is dealt with
      const job = ownJob(me);
      await records.put(job);
      market.noteOwnJob(job);
      const offer = seal(T.offer, { job: job.address, advert: h.address, price: { amount: '0.001', currency: 'USD' }, durationMs: 1000, issuedAt: NOW, startBy: NOW + 30_000, expiresAt: NOW + 30_000 }, honest);
      await market.addOffer(offer, NOW);
      for (let i = 0; i < 200; i++) await market.putAdvert(advert(Ed25519Signer.generate(), 1, NOW + i));
      assert.ok(records.advertCount <= 50, `stored ${records.advertCount} > 50`);
      assert.equal(market.adverts.byAddress.size, records.advertCount);
      assert.ok(market.adverts.latest.has(h.signer), 'the provider dealt with is kept');
    } finally {
      await closeDb(db);
    }
    // restart with a lower cap: applied at open, to the store and the index alike
    db = await openDb(path);
    try {
      const { records, market } = await open(db, 20);
      assert.ok(records.advertCount <= 20);
      assert.equal(market.adverts.byAddress.size, records.advertCount);
      assert.deepEqual([...market.adverts.byAddress.keys()].sort(), (await records.list(T.advert)).map((a) => a.address).sort());
      for (const [did, a] of market.adverts.latest) assert.equal(records.advertOf(did)?.address, a.address);
      assert.ok(market.adverts.latest.has(honestDid), 'the provider dealt with is still held after the restart');
    } finally {
      await closeDb(db);
    }
  });
});

describe('the advert cap keeps a provider that quoted on a job of this node\'s that has ended (review E3)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'c0-cap-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('a flood of fresh keys evicts fresh keys, not it, though its advert is further through its lifetime and it is not connected', async () => {
    const db = await openDb(join(dir, 'db'));
    try {
      let now = NOW;
      const me = Ed25519Signer.generate();
      const honest = Ed25519Signer.generate();
      const records = await RecordStore.open(db);
      const market = await MarketService.open({ db, prefix: '', records, now, clock: () => now, log: silentLogger(), signer: me, did: didFromPublicKey(me.publicKey), skewMs: 30_000, maxAdverts: 50 });
      const h = advert(honest, 1, NOW - 300_000, 600_000);
      assert.equal(await market.putAdvert(h), true);
      const job = seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: NOW, deadline: NOW + 60_000, timeoutMs: 10_000, input: { hash: 'sha256:' + 'd'.repeat(64), size: 1 }, inputSealed: 'no' }, me);
      await records.put(job);
      market.noteOwnJob(job);
      const offer = seal(T.offer, { job: job.address, advert: h.address, price: { amount: '0.001', currency: 'USD' }, durationMs: 1000, issuedAt: NOW, startBy: NOW + 30_000, expiresAt: NOW + 30_000 }, honest);
      await market.addOffer(offer, NOW);
      // the job ends (a later job of this node's takes its place among the live ones)
      now = NOW + 120_000;
      market.noteOwnJob(ownJob(me));
      assert.equal(market.ownJob(job.address), undefined);
      for (let i = 0; i < 200; i++) await market.putAdvert(advert(Ed25519Signer.generate(), 1, now, 3_600_000));
      assert.ok(records.advertCount <= 50, `stored ${records.advertCount} > 50`);
      assert.ok(market.adverts.latest.has(h.signer), 'the provider that quoted on the ended job is kept');
    } finally {
      await closeDb(db);
    }
  });
});

describe('the advert cap against a provider that republishes without end (every record counts, "dealt with" only first hand)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'c0-cap-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));
  const CAP = 100;

  async function flood(name: string, protect: (market: MarketService, records: RecordStore, attacker: Ed25519Signer, me: Ed25519Signer, first: Opened<Advert>) => Promise<void>) {
    const db = await openDb(join(dir, name));
    try {
      let now = NOW;
      const me = Ed25519Signer.generate();
      const records = await RecordStore.open(db);
      const market = await MarketService.open({ db, prefix: '', records, now, clock: () => now, log: silentLogger(), signer: me, did: didFromPublicKey(me.publicKey), skewMs: 30_000, maxAdverts: CAP });
      const attacker = Ed25519Signer.generate();
      const A = didFromPublicKey(attacker.publicKey);
      const first = advert(attacker, 1, now, 3_600_000);
      assert.equal(await market.putAdvert(first), true);
      await protect(market, records, attacker, me, first);
      for (let i = 0; i < CAP - 1; i++) await market.putAdvert(advert(Ed25519Signer.generate(), 1, now, 3_600_000));
      for (let seq = 2; seq <= 400; seq++) {
        now += 5_000;
        await market.putAdvert(advert(attacker, seq, now, 3_600_000));
      }
      const mine = records.allAdverts().filter((a) => a.signer === A);
      const honestLeft = new Set(records.allAdverts().map((a) => a.signer)).size - 1;
      const newcomer = await market.putAdvert(advert(Ed25519Signer.generate(), 1, now, 3_600_000));
      assert.equal(market.adverts.byAddress.size, records.advertCount, 'what is stored is what the market indexes');
      return { count: records.advertCount, mine, honestLeft, newcomer, A, latest: market.adverts.latest.get(A), records };
    } finally {
      await closeDb(db);
    }
  }

  test('a receipt the provider signed itself for a made-up job earns nothing: its republishing stays within the cap, honest providers stay, a newcomer is stored', async () => {
    const r = await flood('fake-receipt', async (market, _records, attacker) => {
      const receipt = seal(T.receipt, { job: 'sha256:' + '1'.repeat(64), offer: 'sha256:' + '3'.repeat(64), buyer: didFromPublicKey(Ed25519Signer.generate().publicKey), provider: didFromPublicKey(attacker.publicKey), workload: 'builtin.sha256', status: 'completed', startedAt: NOW, completedAt: NOW + 1000, inputHash: 'sha256:' + 'a'.repeat(64), outputHash: 'sha256:' + 'b'.repeat(64), outputSize: 1, price: { amount: '0.001', currency: 'USD' }, energy: { uj: 1, grade: 'Estimator' } }, attacker);
      await market.addEvidence(receipt);
      assert.ok(market.evidence.receipts.has(receipt.address), 'the receipt is held as evidence');
    });
    assert.ok(r.count <= CAP, `stored ${r.count} > ${CAP}`);
    assert.equal(r.mine.length, 1, 'each republished advert took the place of the one before');
    assert.ok(r.honestLeft >= CAP - 2, `honest providers left: ${r.honestLeft}`);
    assert.equal(r.newcomer, true);
  });

  test('a provider that quoted on one of this node\'s jobs keeps its current advert and the one its offer cites, no more', async () => {
    const r = await flood('offer', async (market, records, attacker, me, first) => {
      const job = ownJob(me);
      await records.put(job);
      market.noteOwnJob(job);
      await market.addOffer(seal(T.offer, { job: job.address, advert: first.address, price: { amount: '0.001', currency: 'USD' }, durationMs: 1000, issuedAt: NOW, startBy: NOW + 86_400_000, expiresAt: NOW + 86_400_000 }, attacker), NOW);
    });
    assert.ok(r.count <= CAP, `stored ${r.count} > ${CAP}`);
    assert.deepEqual(r.mine.map((a) => a.record.seq).sort((a, b) => a - b), [1, 400], 'the cited advert and the current one');
    assert.equal(r.latest?.record.seq, 400);
    assert.ok(r.honestLeft >= CAP - 3, `honest providers left: ${r.honestLeft}`);
    assert.equal(r.newcomer, true);
  });
});

describe('the advert cap: a receipt this node countersigned protects its provider, one merely naming this node does not', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'c0-cap-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('under a flood of fresh providers', async () => {
    const db = await openDb(join(dir, 'db'));
    try {
      const me = Ed25519Signer.generate();
      const ME = didFromPublicKey(me.publicKey);
      const records = await RecordStore.open(db);
      const market = await MarketService.open({ db, prefix: '', records, now: NOW, clock: () => NOW + 1000, log: silentLogger(), signer: me, did: ME, skewMs: 30_000, maxAdverts: 20 });
      const [worked, forger] = [Ed25519Signer.generate(), Ed25519Signer.generate()];
      const job = ownJob(me);
      await records.put(job);
      for (const p of [worked, forger]) {
        // issued long ago: without protection, the first to go
        const a = advert(p, 1, NOW - 500_000);
        await market.putAdvert(a);
        const offer = seal(T.offer, { job: job.address, advert: a.address, price: { amount: '0.001', currency: 'USD' }, durationMs: 1000, issuedAt: NOW - 1000, startBy: NOW + 30_000, expiresAt: NOW + 30_000 }, p);
        const receipt = seal(T.receipt, { job: job.address, offer: offer.address, buyer: ME, provider: didFromPublicKey(p.publicKey), workload: 'builtin.sha256', status: 'completed', startedAt: NOW, completedAt: NOW + 100, inputHash: 'sha256:' + 'c'.repeat(64), outputHash: 'sha256:' + 'b'.repeat(64), outputSize: 1, price: { amount: '0.001', currency: 'USD' }, energy: { uj: 1, grade: 'Estimator' } }, p);
        await market.addEvidence(receipt, offer);
        // this node ran the job with `worked` and countersigned its receipt; `forger` only signed one naming this node
        if (p === worked) await market.addEvidence(seal(T.acceptance, { receipt: receipt.address, verdict: 'accepted', signedAt: NOW + 200 }, me));
      }
      for (let i = 0; i < 60; i++) await market.putAdvert(advert(Ed25519Signer.generate(), 1, NOW + i));
      assert.ok(records.advertCount <= 20);
      assert.ok(market.adverts.latest.has(didFromPublicKey(worked.publicKey)), 'the provider whose receipt this node accepted is kept');
      assert.ok(!market.adverts.latest.has(didFromPublicKey(forger.publicKey)), 'a receipt naming this node as the buyer earns nothing by itself');
    } finally {
      await closeDb(db);
    }
  });
});

describe('offers a buyer counts against buyer.offersWanted (docs/market.md §12)', () => {
  test('only offers priced at or below their own advert\u2019s ask for the job: not dearer, not citing another\u2019s advert, not without an ask', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'c0-ask-'));
    const db = await openDb(join(dir, 'db'));
    try {
      const me = Ed25519Signer.generate();
      const records = await RecordStore.open(db);
      const market = await MarketService.open({ db, prefix: '', records, now: NOW, clock: () => NOW + 1, log: silentLogger(), signer: me, did: didFromPublicKey(me.publicKey), skewMs: 30_000 });
      const job = seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: NOW, deadline: NOW + 120_000, timeoutMs: 60_000, input: { hash: 'sha256:' + '11'.repeat(32), size: 10 }, inputSealed: 'no' }, me) as Opened<Job>;
      market.noteOwnJob(job);
      const priced = (signer: Ed25519Signer, unit: string, amount: string) =>
        seal(T.advert, { seq: 1, issuedAt: NOW - 1000, expiresAt: NOW + 600_000, workloads: ['builtin.sha256'], tier: 'community', hardware: { cpuCores: 4, memoryMiB: 8192 }, prices: [{ workload: 'builtin.sha256', unit, price: { amount, currency: 'USD' } }] }, signer) as Opened<Advert>;
      const offer = async (signer: Ed25519Signer, a: Opened<Advert>, amount: string) => {
        await market.putAdvert(a);
        await market.addOffer(seal(T.offer, { job: job.address, advert: a.address, price: { amount, currency: 'USD' }, durationMs: 1000, issuedAt: NOW, startBy: NOW + 30_000, expiresAt: NOW + 30_000 }, signer) as Opened<Offer>, NOW);
      };
      const [a, b, c, d, e] = [0, 1, 2, 3, 4].map(() => Ed25519Signer.generate()) as [Ed25519Signer, Ed25519Signer, Ed25519Signer, Ed25519Signer, Ed25519Signer];
      await offer(a, priced(a, 'job', '0.002'), '0.002'); // at its ask: counts
      assert.equal(market.offersAtAsk(job, NOW + 1), 1);
      await offer(b, priced(b, 'job', '0.001'), '0.005'); // advertised cheap, quoted dear: does not
      await offer(c, advert(c, 1, NOW - 1000), '0.001'); // no ask to hold it to: does not
      await offer(d, priced(d, 'second', '0.0001'), '0.002'); // per second, ranked at the timeout (0.006): below it, counts
      const aAdvert = priced(a, 'job', '0.002');
      await market.addOffer(seal(T.offer, { job: job.address, advert: aAdvert.address, price: { amount: '0.001', currency: 'USD' }, durationMs: 1000, issuedAt: NOW, startBy: NOW + 30_000, expiresAt: NOW + 30_000 }, e) as Opened<Offer>, NOW); // cites another's advert: does not
      assert.equal(market.offerCount(job.address, NOW + 1), 5);
      assert.equal(market.offersAtAsk(job, NOW + 1), 2);
    } finally {
      await closeDb(db);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('summaries', () => {
  test('pickShown keeps the order within the limit; past it the eligible first, the rest counted by failed requirement', () => {
    const v = (eligible: boolean, ...codes: string[]) => ({ eligible, failures: codes.map((code) => ({ code })) });
    const few = [v(false, 'REGION_NOT_ACCEPTED'), v(true)];
    assert.deepEqual(pickShown(few, 5).shown, few);
    const many = [...Array.from({ length: 1200 }, () => v(false, 'REGION_NOT_ACCEPTED', 'OFFER_MISSING')), ...Array.from({ length: 700 }, () => v(false, 'CPU_CORES_TOO_FEW')), v(true)];
    const { shown, hidden } = pickShown(many, 3);
    assert.equal(shown.length, 3);
    assert.equal(shown[0]!.eligible, true);
    assert.equal(hidden.length, many.length - 3);
    assert.match(moreProviders(hidden), /^… and 1,898 more providers: 1,198 fail region, 1,198 have no offer, 700 fail cpu/);
    // providers of another workload (a flood of fresh keys) come after those that serve the job, however many
    const flooded = [...Array.from({ length: 100 }, () => v(false, 'WORKLOAD_NOT_OFFERED', 'OFFER_MISSING')), v(false, 'OFFER_OVER_MAX_PRICE'), v(true), v(false, 'ADVERT_EXPIRED'), v(false, 'OFFER_MISSING')];
    const f = pickShown(flooded, 4);
    assert.deepEqual(
      f.shown.map((x) => x.failures.map((y) => y.code)),
      [[], ['OFFER_OVER_MAX_PRICE'], ['OFFER_MISSING'], ['WORKLOAD_NOT_OFFERED', 'OFFER_MISSING']],
    );
    assert.match(moreProviders(f.hidden), /^… and 100 more providers: 99 fail workload, 99 have no offer, 1 has no live advert/);
    assert.equal(listLimit({ all: true }), Infinity);
    assert.equal(listLimit({ limit: '5' }), 5);
    assert.throws(() => listLimit({ limit: 'x' }), (e: { code?: string }) => e.code === 'CLI_BAD_LIMIT');
  });
});
