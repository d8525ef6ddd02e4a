/**
 * When the devnet sends its first job (src/devnet/devnet.ts `buyerSeesMarket`): only once the buyer sees the
 * providers live in this run. A devnet restarted on the same `--dir` starts a buyer whose store still holds the
 * previous run's unexpired adverts (`status.providersKnown` counts them) with no peer connected: a job sent then
 * ended `no-offers` (DEVNET_JOB_FAILED on the second `npm start -- --dir D`).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buyerSeesMarket, jobsReachProviders, type BuyerView, type JobMeshView } from '../../../src/devnet/devnet.js';

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

// Then the job topic (jobsReachProviders): a provider hears the first job by gossip only once it has a mesh peer on the
// job topic or is a subscriber the buyer publishes to itself. The devnet slept a second for this; on a busy machine a
// provider could still be outside the mesh when the job went out, and quoted on the next job only.
const gossip = (peers: number, mesh: number) => ({ gossip: { job: { peers, mesh }, advert: { peers: 3, mesh: 3 } } });
const meshView = (buyerJobPeers: number, direct: string[], providers: Array<[string, number]>): JobMeshView => ({
  buyer: { status: gossip(buyerJobPeers, 0), peers: [...direct.map((did) => ({ did, topics: ['advert', 'job'] })), { did: 'corvid', topics: ['advert'] }] },
  providers: providers.map(([did, mesh]) => ({ did, status: gossip(2, mesh) })),
});

test('the job topic: every provider meshed on it, or published to by the buyer itself, and the buyer knows a subscriber', () => {
  assert.equal(jobsReachProviders(meshView(1, ['atlas'], [['atlas', 1], ['bantam', 1], ['corvid', 2]])), true);
  // corvid has no mesh peer on the job topic, and the buyer knows it only on the advert topic: not yet
  assert.equal(jobsReachProviders(meshView(1, ['atlas'], [['atlas', 1], ['bantam', 1], ['corvid', 0]])), false);
  // no mesh peer, but the buyer publishes to it directly: it hears the job
  assert.equal(jobsReachProviders(meshView(2, ['atlas', 'bantam'], [['atlas', 0], ['bantam', 0]])), true);
  // every provider meshed, but the buyer knows no subscriber of the job topic to publish to
  assert.equal(jobsReachProviders(meshView(0, [], [['atlas', 1], ['bantam', 1]])), false);
  // a node whose status has no job topic at all (it did not join it) is not meshed on it
  assert.equal(jobsReachProviders({ buyer: { status: gossip(1, 0), peers: [] }, providers: [{ did: 'atlas', status: {} }] }), false);
});
