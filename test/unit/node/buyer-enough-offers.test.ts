/**
 * `buyer.enoughOffers` counts offers that can win (docs/node.md "Buyer"): an offer over the job's maxPrice, in another
 * currency, or citing an advert nobody holds does not end the offer window. Before, every offer held counted, so with
 * enoughOffers 1 one junk offer closed the window at once and the job ended no-eligible-provider, although an honest
 * offer came a moment later.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { MarketService } from '../../../src/node/market-service.js';
import { RecordStore } from '../../../src/store/records.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { silentLogger } from '../../../src/util/log.js';
import { BuyerWiring } from '../../../src/node/buyer-wiring.js';
import type { BuyerDeps } from '../../../src/roles/buyer.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { NOW, P, advert, job, offer } from '../market/fixtures.js';

const ME = P(980);
const [EVIL, GOOD] = [P(981), P(982)];

test('junk offers do not end the window; the first offer that can win does', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-enough-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const clock = () => NOW;
    const market = await MarketService.open({ db, prefix: '', records, now: NOW, clock, log: silentLogger(), signer: ME.signer, did: ME.did, skewMs: 30_000 });
    const overlay = {
      name: 'public',
      registry: new Registry(),
      did: ME.did,
      clock,
      log: silentLogger(),
      market,
      records,
      d: { config: { buyer: { policy: 'balanced', collectWindowMs: 60_000, enoughOffers: 1, offersWanted: 0, inviteAbove: 200 }, network: {}, overlays: [] }, identity: { signer: ME.signer }, network: {} },
      net: { publish: async () => {}, peers: () => [], sendOutcome: async () => ({ outcomes: {} }) },
    } as unknown as OverlayNode;
    const wiring = new BuyerWiring(overlay);
    const deps = (wiring.createBuyer() as unknown as { d: BuyerDeps }).d;
    const j = job(ME, { maxPrice: { amount: '0.1', currency: 'USD' } });
    market.noteOwnJob(j);
    const [adE, adG] = [advert(EVIL), advert(GOOD)];
    let ended = false;
    const seen: number[] = [];
    const wait = deps.waitForOffers(j.address, 60_000, 1, (_o, n) => seen.push(n)).then((n) => ((ended = true), n));
    // over maxPrice, in another currency, citing an advert nobody holds
    await wiring.onOffer(offer(EVIL, j, adE, { amount: '999' }), [adE]);
    await wiring.onOffer(offer(P(983), j, advert(P(983)), { amount: '0.05' }), []);
    await Promise.resolve();
    assert.equal(ended, false, 'two offers held, neither can win: the window goes on');
    await wiring.onOffer(offer(EVIL, j, adE, { amount: '0.05', currency: 'EUR' }), [adE]);
    await Promise.resolve();
    assert.equal(ended, false);
    await wiring.onOffer(offer(GOOD, j, adG, { amount: '0.05' }), [adG]);
    assert.equal(await wait, 3, 'the count reported is every provider with an offer held');
    assert.equal(seen.length, 4);
    assert.equal(wiring.waitingJobs, 0);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
