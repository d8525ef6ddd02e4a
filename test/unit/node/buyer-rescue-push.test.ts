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

/**
 * p1 quoted and was tried (it died mid-run); `silent` more providers are live, connected and never quoted (they
 * skipped the job as decided): the first of them quotes when pushed, the others have no capacity.
 */
async function rig(dir: string, silent: number, offersWanted: number) {
  const db = await openDb(join(dir, 'db'));
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
  const keys = Array.from({ length: silent + 1 }, () => Ed25519Signer.generate());
  const adverts = new Map<string, Opened<Advert>>();
  const live: LiveProvider[] = [];
  for (const k of keys) {
    const a = advertOf(k);
    await market.putAdvert(a);
    adverts.set(didFromPublicKey(k.publicKey), a);
    live.push({ did: didFromPublicKey(k.publicKey), presence: seal(T.presence, { workloads: [WL], freeSlots: 2, issuedAt: now, windowMs: 60_000 }, k) as Opened<Presence>, advert: a, workloads: [WL], freeSlots: 2, liveUntil: now + 60_000 });
  }
  const [P1, ...others] = keys.map((k) => didFromPublicKey(k.publicKey)) as [string, ...string[]];
  await market.addOffer(offerOf(keys[0]!, adverts.get(P1)!), now);
  const pushed: string[] = [];
  const overlay = {
    d: { config: { buyer: { collectWindowMs: 2000, enoughOffers: 0, policy: 'balanced', offersWanted, inviteAbove: 200 }, network: {}, overlays: [] }, identity: { signer: me }, network: { clockSkewMs: 30_000 } },
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
      peers: () => [P1, ...others].map((did) => ({ did })),
      request: async (did: string, protocol: string) => {
        if (protocol !== JOB_PUSH_PROTOCOL) throw new Error('unexpected ' + protocol);
        pushed.push(did);
        if (did !== others[0]) return [{ none: 'no offer' }];
        return [{ offer: offerOf(keys[1]!, adverts.get(others[0]!)!).bytes, advert: adverts.get(others[0]!)!.bytes }];
      },
    },
  } as unknown as OverlayNode;
  const wiring = new BuyerWiring(overlay);
  const deps = (wiring.createBuyer() as unknown as { d: BuyerDeps }).d;
  return { db, job, market, wiring, deps, pushed, P1, others };
}

test('no provider left to fail over to: the job is pushed to the live providers not tried, and their offers are booked', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-rescue-'));
  const r = await rig(dir, 2, 3);
  try {
    const [P3, P4] = r.others as [string, string];
    assert.equal(typeof r.deps.rescue, 'function', 'the daemon gives its buyer a way to ask for more offers');
    const got = await r.deps.rescue!(r.job, new Set([r.P1]));
    assert.deepEqual(r.pushed.sort(), [P3, P4].sort(), 'pushed to the live providers not tried, not to p1');
    assert.equal(got.offers, 1);
    assert.deepEqual([...got.asked].sort(), [P3, P4].sort(), 'it says whom it asked: the run’s next ask goes to others');
    assert.ok(r.market.quoted(r.job.address, P3, Date.now()), 'p3’s offer is in the book for the next decision');
    await r.wiring.stop();
  } finally {
    await closeDb(r.db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an ask after one that brought nothing is as wide as a push goes, not offersWanted × 2 (second-round review: 4 silent keys filled both asks at offersWanted 1)', { timeout: 30_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-rescue-'));
  const r = await rig(dir, 6, 1);
  try {
    const plain = await r.deps.rescue!(r.job, new Set([r.P1]));
    assert.equal(plain.asked.length, 2, 'offersWanted 1: an ask goes to 2');
    const wide = await r.deps.rescue!(r.job, new Set([r.P1, ...plain.asked]), { widen: true });
    assert.deepEqual([...wide.asked].sort(), r.others.filter((d) => !plain.asked.includes(d)).sort(), 'every connected provider not asked yet (up to MAX_PUSH_TARGETS)');
    await r.wiring.stop();
  } finally {
    await closeDb(r.db);
    rmSync(dir, { recursive: true, force: true });
  }
});
