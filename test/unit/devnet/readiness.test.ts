/**
 * When the devnet sends its first job (src/devnet/devnet.ts `buyerSeesMarket`): only once the buyer sees the
 * providers live in this run. A devnet restarted on the same `--dir` starts a buyer whose store still holds the
 * previous run's unexpired adverts (`status.providersKnown` counts them) with no peer connected: a job sent then
 * ended `no-offers` (DEVNET_JOB_FAILED on the second `npm start -- --dir D`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buyerSeesMarket, type BuyerView } from '../../../src/devnet/devnet.js';

const START = 1_700_000_000_000;
const advert = (provider: string, issuedAt: number, live = true) => ({ provider, live, record: { issuedAt } });
const view = (peers: number, adverts: BuyerView['market']['adverts']): BuyerView => ({ status: { peers, providersKnown: adverts.filter((a) => a.live).length }, market: { adverts } });

test('adverts kept from an earlier run on the same --dir, no peer: not ready', () => {
  const stored = ['atlas', 'bantam', 'corvid'].map((p, i) => advert(p, START - 60_000 + i));
  assert.equal(buyerSeesMarket(view(0, stored), 3, START), false);
  // connected, but every advert it holds is still the previous run's: the providers are not heard yet
  assert.equal(buyerSeesMarket(view(2, stored), 3, START), false);
});

test('a fresh advert from each provider, heard in this run, and a peer: ready', () => {
  const fresh = ['atlas', 'bantam', 'corvid'].map((p, i) => advert(p, START + 500 + i));
  assert.equal(buyerSeesMarket(view(1, fresh), 3, START), true);
});

test('some providers re-advertised, others only remembered: not ready until every one is heard', () => {
  const mixed = [advert('atlas', START + 10), advert('bantam', START - 5000), advert('corvid', START + 20)];
  assert.equal(buyerSeesMarket(view(2, mixed), 3, START), false);
  assert.equal(buyerSeesMarket(view(2, mixed), 2, START), true);
});

test('fresh adverts but no peer connected now: not ready', () => {
  const fresh = ['atlas', 'bantam', 'corvid'].map((p) => advert(p, START + 100));
  assert.equal(buyerSeesMarket(view(0, fresh), 3, START), false);
});

test('an expired advert does not count, fresh or not', () => {
  const ads = [advert('atlas', START + 1), advert('bantam', START + 2), advert('corvid', START + 3, false)];
  assert.equal(buyerSeesMarket(view(1, ads), 3, START), false);
});
