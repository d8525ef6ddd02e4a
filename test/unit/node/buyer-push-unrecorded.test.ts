/**
 * Offers from fresh keys against `buyer.offersWanted` (Sybil review, phase d; docs/market.md §12): eight keys with
 * cheap adverts, presence and offers at their own ask filled the count, so the buyer never pushed its job and never
 * heard the provider it had a record with, which held back for the cheap keys (offerRank). Now offers from providers
 * with no record in the buyer's reputation view count for at most half of offersWanted while a provider with a record
 * that has not quoted is a candidate: the buyer pushes, and half of the push goes by record. In a young network,
 * where no candidate has a record, they count in full, and nothing is pushed for nothing.
 *
 * The daemon's BuyerWiring over a fake overlay with a real MarketService (offers, adverts, evidence).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { Ed25519Signer, didFromPublicKey, seal, T, type Advert, type Job, type Offer, type Opened, type Presence } from '../../../src/records/index.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { RecordStore } from '../../../src/store/records.js';
import { MarketService } from '../../../src/node/market-service.js';
import { BuyerWiring } from '../../../src/node/buyer-wiring.js';
import { JOB_PUSH_PROTOCOL } from '../../../src/node/job-push.js';
import type { BuyerDeps } from '../../../src/roles/buyer.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { UNKNOWN_SCORE } from '../../../src/reputation/derive.js';
import { silentLogger } from '../../../src/util/log.js';

const WL = 'builtin.sha256';
const WANTED = 8;

async function setup(o: { recorded: boolean }) {
  const dir = mkdtempSync(join(tmpdir(), 'c0-unrec-'));
  const db = await openDb(join(dir, 'db'));
  const now = Date.now();
  const me = Ed25519Signer.generate();
  const ME = didFromPublicKey(me.publicKey);
  const records = await RecordStore.open(db);
  const market = await MarketService.open({ db, prefix: '', records, now, clock: () => Date.now(), log: silentLogger(), signer: me, did: ME, skewMs: 30_000 });
  const advertOf = (k: Ed25519Signer, amount: string) =>
    seal(T.advert, { seq: 1, issuedAt: now - 1000, expiresAt: now + 600_000, workloads: [WL], tier: 'community', hardware: { cpuCores: 4, memoryMiB: 8192 }, prices: [{ workload: WL, unit: 'job', price: { amount, currency: 'USD' } }] }, k) as Opened<Advert>;
  const jobOf = () =>
    seal(T.job, { workload: WL, requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: now, deadline: now + 120_000, timeoutMs: 60_000, input: { hash: 'sha256:' + '11'.repeat(32), size: 10 }, inputSealed: 'no', nonce: crypto.getRandomValues(new Uint8Array(8)) }, me) as Opened<Job>;
  const offerOf = (k: Ed25519Signer, job: Opened<Job>, a: Opened<Advert>, amount: string) =>
    seal(T.offer, { job: job.address, advert: a.address, price: { amount, currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 30_000, expiresAt: now + 30_000 }, k) as Opened<Offer>;
  const live = (k: Ed25519Signer, a: Opened<Advert>): LiveProvider => ({
    did: didFromPublicKey(k.publicKey),
    presence: seal(T.presence, { workloads: [WL], freeSlots: 2, issuedAt: now, windowMs: 60_000 }, k) as Opened<Presence>,
    advert: a,
    workloads: [WL],
    freeSlots: 2,
    liveUntil: now + 60_000,
  });

  // the provider this buyer has dealt with: a dearer ask than the keys'
  const honest = Ed25519Signer.generate();
  const HONEST = didFromPublicKey(honest.publicKey);
  const honestAdvert = advertOf(honest, '0.002');
  await market.putAdvert(honestAdvert);
  if (o.recorded) {
    // an earlier job it did for this buyer: its receipt, countersigned
    const earlier = jobOf();
    await records.put(earlier);
    market.noteOwnJob(earlier);
    const eo = offerOf(honest, earlier, honestAdvert, '0.002');
    const receipt = seal(T.receipt, { job: earlier.address, offer: eo.address, buyer: ME, provider: HONEST, workload: WL, status: 'completed', startedAt: now - 500, completedAt: now - 400, inputHash: earlier.record.input.hash, outputHash: 'sha256:' + 'b'.repeat(64), outputSize: 1, price: eo.record.price, energy: { uj: 1, grade: 'Estimator' } }, honest);
    await market.addEvidence(receipt, eo);
    await market.addEvidence(seal(T.acceptance, { receipt: receipt.address, verdict: 'accepted', signedAt: now - 300 }, me));
  }

  // this job: eight fresh keys, cheap, live, each with an offer at its own ask
  const job = jobOf();
  await records.put(job);
  market.noteOwnJob(job);
  const keys = Array.from({ length: WANTED }, () => Ed25519Signer.generate());
  const liveProviders: LiveProvider[] = [live(honest, honestAdvert)];
  for (const k of keys) {
    const a = advertOf(k, '0.0000001');
    await market.putAdvert(a);
    await market.addOffer(offerOf(k, job, a, '0.0000001'), now);
    liveProviders.push(live(k, a));
  }

  const pushed: string[] = [];
  let looked = 0;
  const overlay = {
    d: { config: { buyer: { collectWindowMs: 40, enoughOffers: 0, policy: 'balanced', offersWanted: WANTED, inviteAbove: 200 }, network: {}, overlays: [] }, identity: { signer: me }, network: { clockSkewMs: 30_000 } },
    did: ME,
    name: 'public',
    clock: () => Date.now(),
    log: silentLogger(),
    registry: new Registry(),
    market,
    records,
    liveProviders: () => (looked++, liveProviders),
    heldByProvider: () => new Map(),
    net: {
      peers: () => [],
      request: async (did: string, protocol: string) => {
        if (protocol === JOB_PUSH_PROTOCOL) pushed.push(did);
        return [{ none: 'no offer' }];
      },
    },
  } as unknown as OverlayNode;
  const wiring = new BuyerWiring(overlay);
  const deps = (wiring.createBuyer() as unknown as { d: BuyerDeps }).d;
  return {
    market,
    job,
    HONEST,
    keys: keys.map((k) => didFromPublicKey(k.publicKey)),
    pushed,
    /** The honest provider quotes this job at its ask. */
    quoteHonest: () => market.addOffer(offerOf(honest, job, honestAdvert, '0.002'), now),
    /** How often the wiring looked at the live candidates (the push's count does, when the keys' offers are bounded). */
    looked: () => looked,
    /** The offer window, with its push halfway through. */
    window: () => deps.waitForOffers(job.address, 40, 0, () => {}),
    close: async () => {
      wiring.stop();
      await closeDb(db);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Until `cond` holds, or give up after `ms` (no timing is asserted). */
async function until(cond: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 10));
  return cond();
}

test('eight fresh keys at their ask do not fill offersWanted while a provider with a record has not quoted: the buyer pushes, to that provider first', { timeout: 30_000 }, async () => {
  const s = await setup({ recorded: true });
  try {
    assert.ok(s.market.reputation().scoreOf(s.HONEST) > UNKNOWN_SCORE, 'the buyer has a record with the honest provider');
    assert.equal(s.market.offersAtAsk(s.job, Date.now()), WANTED, 'all eight are at their ask');
    await s.window();
    assert.ok(await until(() => s.pushed.includes(s.HONEST)), 'the job was pushed to the provider with a record');
    // half the offers wanted were missing (the keys count for four): twice that many targets, the record's first
    assert.equal(s.pushed[0], s.HONEST);
    assert.ok(s.pushed.length <= WANTED);
  } finally {
    await s.close();
  }
});

test('in a young network, where no candidate has a record, offers at their ask count in full: no push', { timeout: 30_000 }, async () => {
  const s = await setup({ recorded: false });
  try {
    await s.window();
    // halfway through the window the count looked for a candidate with a record, found none, and pushed nothing
    assert.ok(await until(() => s.looked() > 0), 'the push ran');
    for (let i = 0; i < 5; i++) await new Promise((r) => setTimeout(r, 10));
    assert.deepEqual(s.pushed, []);
  } finally {
    await s.close();
  }
});

test('offers at their ask, split by the record of the provider each stands for', { timeout: 30_000 }, async () => {
  for (const recorded of [false, true]) {
    const s = await setup({ recorded });
    try {
      await s.quoteHonest();
      assert.deepEqual(s.market.offersAtAskByRecord(s.job, Date.now()), recorded ? { recorded: 1, unrecorded: WANTED } : { recorded: 0, unrecorded: WANTED + 1 });
      assert.equal(s.market.offersAtAsk(s.job, Date.now()), WANTED + 1);
    } finally {
      await s.close();
    }
  }
});
