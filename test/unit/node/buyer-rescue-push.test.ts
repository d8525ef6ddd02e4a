/**
 * The daemon's side of a run with no provider left to fail over to (Buyer `rescue`, src/node/buyer-wiring.ts
 * #rescue; review s38 r2 "late rescue"): the job goes by job-push/1 to live providers that fit it and were neither
 * tried in the run nor quoted (a provider that learned the job after its selection skips it as decided and answers
 * only a push), and what they offer is in the book for the next decision. The BuyerWiring over a fake overlay with a
 * real MarketService.
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
import { silentLogger } from '../../../src/util/log.js';

const WL = 'builtin.sha256';

test('no provider left to fail over to: the job is pushed to the live providers not tried, and their offers are booked', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-rescue-'));
  const db = await openDb(join(dir, 'db'));
  try {
    const now = Date.now();
    const me = Ed25519Signer.generate();
    const ME = didFromPublicKey(me.publicKey);
    const records = await RecordStore.open(db);
    const market = await MarketService.open({ db, prefix: '', records, now, clock: () => Date.now(), log: silentLogger(), signer: me, did: ME, skewMs: 30_000 });
    const advertOf = (k: Ed25519Signer) =>
      seal(T.advert, { seq: 1, issuedAt: now - 1000, expiresAt: now + 600_000, workloads: [WL], tier: 'community', hardware: { cpuCores: 4, memoryMiB: 8192 }, prices: [{ workload: WL, unit: 'job', price: { amount: '0.002', currency: 'USD' } }] }, k) as Opened<Advert>;
    const job = seal(T.job, { workload: WL, requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: now, deadline: now + 240_000, timeoutMs: 60_000, input: { hash: 'sha256:' + '11'.repeat(32), size: 10 }, inputSealed: 'no' }, me) as Opened<Job>;
    await records.put(job);
    market.noteOwnJob(job);
    const offerOf = (k: Ed25519Signer, a: Opened<Advert>) =>
      seal(T.offer, { job: job.address, advert: a.address, price: { amount: '0.002', currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 30_000, expiresAt: now + 30_000 }, k) as Opened<Offer>;
    // p1 quoted and was tried (it died mid-run); p3 and p4 are live and never quoted (they skipped the job as decided)
    const [k1, k3, k4] = [0, 1, 2].map(() => Ed25519Signer.generate()) as [Ed25519Signer, Ed25519Signer, Ed25519Signer];
    const adverts = new Map<string, Opened<Advert>>();
    const live: LiveProvider[] = [];
    for (const k of [k1, k3, k4]) {
      const a = advertOf(k);
      await market.putAdvert(a);
      adverts.set(didFromPublicKey(k.publicKey), a);
      live.push({ did: didFromPublicKey(k.publicKey), presence: seal(T.presence, { workloads: [WL], freeSlots: 2, issuedAt: now, windowMs: 60_000 }, k) as Opened<Presence>, advert: a, workloads: [WL], freeSlots: 2, liveUntil: now + 60_000 });
    }
    const [P1, P3, P4] = [k1, k3, k4].map((k) => didFromPublicKey(k.publicKey)) as [string, string, string];
    await market.addOffer(offerOf(k1, adverts.get(P1)!), now);
    const pushed: string[] = [];
    const overlay = {
      d: { config: { buyer: { collectWindowMs: 2000, enoughOffers: 0, policy: 'balanced', offersWanted: 3, inviteAbove: 200 }, network: {}, overlays: [] }, identity: { signer: me }, network: { clockSkewMs: 30_000 } },
      did: ME,
      name: 'public',
      clock: () => Date.now(),
      log: silentLogger(),
      registry: new Registry(),
      market,
      records,
      liveProviders: () => live,
      heldByProvider: () => new Map(),
      net: {
        peers: () => [P1, P3, P4].map((did) => ({ did })),
        request: async (did: string, protocol: string) => {
          if (protocol !== JOB_PUSH_PROTOCOL) throw new Error('unexpected ' + protocol);
          pushed.push(did);
          // p3 quotes when pushed; p4 has no free capacity
          if (did !== P3) return [{ none: 'no offer' }];
          return [{ offer: offerOf(k3, adverts.get(P3)!).bytes, advert: adverts.get(P3)!.bytes }];
        },
      },
    } as unknown as OverlayNode;
    const wiring = new BuyerWiring(overlay);
    const deps = (wiring.createBuyer() as unknown as { d: BuyerDeps }).d;
    assert.equal(typeof deps.rescue, 'function', 'the daemon gives its buyer a way to ask for more offers');
    const got = await deps.rescue!(job, new Set([P1]));
    assert.deepEqual(pushed.sort(), [P3, P4].sort(), 'pushed to the live providers not tried, not to p1');
    assert.equal(got.offers, 1);
    assert.deepEqual([...got.asked].sort(), [P3, P4].sort(), 'it says whom it asked: the run’s next ask goes to others');
    assert.ok(market.quoted(job.address, P3, Date.now()), 'p3’s offer is in the book for the next decision');
    await wiring.stop();
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
