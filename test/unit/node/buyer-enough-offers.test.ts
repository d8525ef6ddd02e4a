/**
 * `buyer.enoughOffers` counts offers that can win (docs/node.md "Buyer"): an offer over the job's maxPrice, in another
 * currency, or citing an advert nobody holds does not end the offer window. Before, every offer held counted, so with
 * enoughOffers 1 one junk offer closed the window at once and the job ended no-eligible-provider, although an honest
 * offer came a moment later.
 *
 * `buyer.endWhenAllQuoted` ends the window once every provider in view that could win has quoted: the `npm start`
 * devnet's second job (two of its four providers fail the job's gates) waited its whole 2.5 s window after the two
 * that could win had both quoted.
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

async function rig(buyer: Record<string, unknown>, body: (r: { market: MarketService; wiring: BuyerWiring; deps: BuyerDeps }) => Promise<void>): Promise<void> {
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
      d: { config: { buyer: { policy: 'balanced', collectWindowMs: 60_000, enoughOffers: 0, endWhenAllQuoted: false, offersWanted: 0, inviteAbove: 200, ...buyer }, network: {}, overlays: [] }, identity: { signer: ME.signer }, network: {} },
      net: { publish: async () => {}, peers: () => [], sendOutcome: async () => ({ outcomes: {} }) },
    } as unknown as OverlayNode;
    const wiring = new BuyerWiring(overlay);
    await body({ market, wiring, deps: (wiring.createBuyer() as unknown as { d: BuyerDeps }).d });
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
}

test('junk offers do not end the window; the first offer that can win does', async () => {
  await rig({ enoughOffers: 1 }, async ({ market, wiring, deps }) => {
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
    assert.deepEqual(await wait, { offers: 3, ended: 'enough' }, 'the count reported is every provider with an offer held');
    assert.equal(seen.length, 4);
    assert.equal(wiring.waitingJobs, 0);
  });
});

test('the window ends once every provider in view that could win has quoted, and not before', async () => {
  const [A, B, SMALL, GONE] = [P(984), P(985), P(986), P(987)];
  await rig({ endWhenAllQuoted: true }, async ({ market, wiring, deps }) => {
    const j = job(ME, { maxPrice: { amount: '0.1', currency: 'USD' }, requirements: { memoryMiB: 128 * 1024 } });
    market.noteOwnJob(j);
    const [adA, adB] = [advert(A), advert(B)];
    // SMALL's advert fails the job's memory gate, GONE's has expired, and this node's own advert is its own: none is waited for
    for (const a of [adA, adB, advert(SMALL, { hardware: { memoryMiB: 8 * 1024 } }), advert(GONE, { expiresAt: NOW - 1 }), advert(ME)]) await market.putAdvert(a);
    let ended = false;
    const wait = deps.waitForOffers(j.address, 60_000, 0, () => {}).then((n) => ((ended = true), n));
    await Promise.resolve();
    assert.equal(ended, false, 'no offer yet');
    // A quotes over the price: it answered, but no offer held can win yet
    await wiring.onOffer(offer(A, j, adA, { amount: '999' }), []);
    await Promise.resolve();
    assert.equal(ended, false, 'B has not quoted, and nothing held can win');
    await wiring.onOffer(offer(B, j, adB, { amount: '0.05' }), []);
    assert.deepEqual(await wait, { offers: 2, ended: 'all-quoted' });
    assert.equal(wiring.waitingJobs, 0);
  });
});

test('one provider that could win and has not quoted keeps the window open; with the rule off, all quoting does not end it', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const [A, B] = [P(988), P(989)];
  for (const endWhenAllQuoted of [true, false]) {
    await rig({ endWhenAllQuoted }, async ({ market, wiring, deps }) => {
      const j = job(ME, { maxPrice: { amount: '0.1', currency: 'USD' } });
      market.noteOwnJob(j);
      const [adA, adB] = [advert(A), advert(B)];
      for (const a of [adA, adB]) await market.putAdvert(a);
      let ended = false;
      const wait = deps.waitForOffers(j.address, 5_000, 0, () => {}).then((n) => ((ended = true), n));
      await wiring.onOffer(offer(A, j, adA, { amount: '0.05' }), []);
      await Promise.resolve();
      assert.equal(ended, false, 'B could win and has not quoted');
      if (endWhenAllQuoted) {
        await wiring.onOffer(offer(B, j, adB, { amount: '0.06' }), []);
        assert.deepEqual(await wait, { offers: 2, ended: 'all-quoted' });
      } else {
        await wiring.onOffer(offer(B, j, adB, { amount: '0.06' }), []);
        await Promise.resolve();
        assert.equal(ended, false, 'the rule is off: the window runs its length');
        t.mock.timers.tick(5_000);
        assert.deepEqual(await wait, { offers: 2, ended: 'window' });
      }
    });
  }
});

test('a provider whose advert says it will not quote is not waited for; a per-second ask above the price still is', async () => {
  const [A, DEAR, EUR, SEC] = [P(990), P(991), P(992), P(993)];
  const ask = (unit: string, amount: string, currency = 'USD') => ({ prices: [{ workload: 'infer.llm', unit, price: { amount, currency } }] });
  await rig({ endWhenAllQuoted: true }, async ({ market, wiring, deps }) => {
    const j = job(ME, { maxPrice: { amount: '0.1', currency: 'USD' } });
    market.noteOwnJob(j);
    const adA = advert(A, ask('job', '0.05'));
    const adSec = advert(SEC, ask('second', '0.5'));
    // DEAR asks 0.5 USD a job and EUR prices in euros: neither quotes a 0.1 USD job (src/roles/provider quotePrice)
    for (const a of [adA, advert(DEAR, ask('job', '0.5')), advert(EUR, ask('job', '0.01', 'EUR')), adSec]) await market.putAdvert(a);
    let ended = false;
    const wait = deps.waitForOffers(j.address, 60_000, 0, () => {}).then((n) => ((ended = true), n));
    await wiring.onOffer(offer(A, j, adA, { amount: '0.05' }), []);
    await Promise.resolve();
    // SEC's 0.5 a second is above the price at the job's whole timeout, but it quotes its own estimate, which may fit
    assert.equal(ended, false, 'a per-second ask is waited for');
    await wiring.onOffer(offer(SEC, j, adSec, { amount: '0.08' }), []);
    assert.deepEqual(await wait, { offers: 2, ended: 'all-quoted' }, 'DEAR and EUR were not waited for');
  });
});
