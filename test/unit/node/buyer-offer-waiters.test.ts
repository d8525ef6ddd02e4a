/**
 * The buyer's wait for offers (src/node/buyer-wiring.ts #waitForOffers), with a fake overlay: once every wait on a
 * job has ended (its window over, or enough offers), nothing is kept for that job, so a buyer that runs a job every
 * few seconds holds no entry per job bought.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { Ed25519Signer, didFromPublicKey, seal, T, type Job, type Offer, type Opened } from '../../../src/records/index.js';
import { hashHex } from '../../../src/records/address.js';
import { BuyerWiring } from '../../../src/node/buyer-wiring.js';
import type { BuyerDeps } from '../../../src/roles/buyer.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { silentLogger } from '../../../src/util/log.js';

const now = Date.now();
const buyerKey = Ed25519Signer.generate();
const providerKeys = [0, 1, 2].map(() => Ed25519Signer.generate());

function job(): Opened<Job> {
  const input = randomBytes(8);
  return seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: now, deadline: now + 60_000, timeoutMs: 30_000, input: { hash: hashHex(input), size: 8 }, inputSealed: 'no' }, buyerKey) as Opened<Job>;
}
const offerOf = (j: Opened<Job>, i: number) => seal(T.offer, { job: j.address, advert: 'sha256:' + 'ab'.repeat(32), price: { amount: '0.002', currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 30_000, expiresAt: now + 30_000 }, providerKeys[i]!) as Opened<Offer>;

function setup() {
  const offers = new Map<string, Set<string>>();
  const overlay = {
    d: { config: { buyer: { collectWindowMs: 1000, enoughOffers: 0, policy: 'cheapest', offersWanted: 0, inviteAbove: 200 }, network: {}, overlays: [] }, identity: { signer: buyerKey }, network: {} },
    did: didFromPublicKey(buyerKey.publicKey),
    name: 'public',
    clock: () => now,
    log: silentLogger(),
    registry: new Registry(),
    market: {
      // no job of its own: the push halfway through a window does nothing
      ownJob: () => undefined,
      offerCount: (j: string) => offers.get(j)?.size ?? 0,
      addOffer: async (o: Opened<Offer>) => {
        if (!offers.has(o.record.job)) offers.set(o.record.job, new Set());
        offers.get(o.record.job)!.add(o.address);
      },
    },
    records: { advertOf: () => undefined },
    net: { peers: () => [] },
  } as unknown as OverlayNode;
  const wiring = new BuyerWiring(overlay);
  const deps = (wiring.createBuyer() as unknown as { d: BuyerDeps }).d;
  return { wiring, wait: deps.waitForOffers };
}

test('a job whose offer window ended leaves nothing behind; another job still waiting keeps its entry', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const s = setup();
  const [j1, j2] = [job(), job()];
  const w1 = s.wait(j1.address, 1000, 0, () => {});
  const w2 = s.wait(j2.address, 3000, 0, () => {});
  assert.equal(s.wiring.waitingJobs, 2);
  t.mock.timers.tick(1000);
  assert.deepEqual(await w1, { offers: 0, ended: 'window' });
  assert.equal(s.wiring.waitingJobs, 1, 'the first job’s window is over');
  t.mock.timers.tick(2000);
  assert.deepEqual(await w2, { offers: 0, ended: 'window' });
  assert.equal(s.wiring.waitingJobs, 0);
});

test('a wait ended by enough offers leaves nothing behind, and only once every wait on the job has ended', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const s = setup();
  const j = job();
  const seen: number[] = [];
  const quick = s.wait(j.address, 5000, 2, (_o, n) => seen.push(n));
  const slow = s.wait(j.address, 5000, 0, () => {});
  await s.wiring.onOffer(offerOf(j, 0), []);
  await s.wiring.onOffer(offerOf(j, 1), []);
  assert.deepEqual(await quick, { offers: 2, ended: 'enough' });
  assert.deepEqual(seen, [1, 2]);
  assert.equal(s.wiring.waitingJobs, 1, 'the other wait on the job goes on');
  await s.wiring.onOffer(offerOf(j, 2), []);
  t.mock.timers.tick(5000);
  assert.deepEqual(await slow, { offers: 3, ended: 'window' });
  assert.equal(s.wiring.waitingJobs, 0);
  // a wait that starts with enough offers already ends at once, and leaves nothing either
  assert.deepEqual(await s.wait(j.address, 5000, 2, () => {}), { offers: 3, ended: 'enough' });
  assert.equal(s.wiring.waitingJobs, 0);
});
