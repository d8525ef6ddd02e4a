/**
 * A pool is one provider to the buyer's failover (docs/pools.md "Failover and epoch changes"), whatever its member
 * does between attempts. The failover decision left out, for each member tried, the entry the member's *latest*
 * advert stands for: a member that left its pool after its attempt failed (its latest advert a plain one) no longer
 * stood for the pool, and the pool's slot, showing another member's offer that came late, was tried next, though the
 * pool had just failed. The buyer now also leaves out the entry each offer tried stood for when it was ranked. And a
 * member whose pooled advert the node let go (the advert cap) is not tried again as itself. The market here is the
 * node's own (MarketService on LevelDB); the buyer's exchanges all fail.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MarketService } from '../../../src/node/market-service.js';
import { RecordStore } from '../../../src/store/records.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { silentLogger } from '../../../src/util/log.js';
import { C0Error } from '../../../src/errors.js';
import { seal, T, type Advert, type Job, type Opened } from '../../../src/records/index.js';
import { NOW, P, advert, offer, type Party } from '../market/fixtures.js';
import { POOL, memberKeys, pooledAdvert, proof, roster, didOf } from '../pools/helpers.js';
import { buyerOnFakes, failingStream, fakeSpec } from './buyer-fakes.js';

const ME = P(760);
const S = P(761);
const [M0, M1] = memberKeys.map((k): Party => ({ signer: k, did: didOf(k) })) as [Party, Party];
const pooled = (p: Party): Opened<Advert> => seal(T.advert, { ...pooledAdvert(proof(roster(), p.signer)), workloads: ['infer.llm'] }, p.signer) as Opened<Advert>;

/**
 * One job run by a buyer on the node's own market: M0 (pooled) quotes 0.5, S 0.6, both before the decision; M0's
 * attempt fails and `between` runs inside it (before the next decision); every attempt fails. The providers tried.
 */
async function run(between: (market: MarketService, job: Opened<Job>) => Promise<void>): Promise<{ tried: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'c0-buyer-pool-left-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const market = await MarketService.open({ db, prefix: '', records, now: NOW, clock: () => NOW, log: silentLogger(), signer: ME.signer, did: ME.did, skewMs: 30_000 });
    const a0 = pooled(M0);
    const as = advert(S);
    for (const a of [a0, as]) await market.putAdvert(a);
    let job: Opened<Job> | undefined;
    let first = true;
    const f = buyerOnFakes(ME, {
      providers: [],
      policy: 'cheapest',
      exec: (did) => {
        if (first) {
          first = false;
          // a stream that fails once `between` has run
          return { [Symbol.asyncIterator]: () => ({ next: () => between(market, job!).then(() => Promise.reject(new C0Error('NET_STREAM_FAILED', `${did} gone`))) }) };
        }
        return failingStream('NET_STREAM_FAILED', `${did} gone`);
      },
      deps: {
        waitForOffers: async () => ({ offers: 2, ended: 'window' as const }),
        publish: async (kind: string, rec: Opened) => {
          if (kind !== 'job') return;
          job = rec as Opened<Job>;
          market.noteOwnJob(job);
          await market.addOffer(offer(M0, job, a0, { amount: '0.5', issuedAt: NOW }), NOW);
          await market.addOffer(offer(S, job, as, { amount: '0.6', issuedAt: NOW }), NOW);
        },
        market: {
          decide: (j: Opened<Job>, p: never, at: number, ex?: ReadonlySet<string>) => market.decide(j, p, at, ex),
          offerCount: (j: string, at: number) => market.book.liveCount(j, at),
          signSelection: (j: Opened<Job>, d: never, w: never, at: number) => market.signSelection(j, d, w, at),
        },
      },
    });
    const result = await f.buyer.run(fakeSpec({ policy: 'cheapest', deadlineMs: 300_000 }));
    assert.equal(result.status, 'failed');
    return { tried: result.attempts.map((a) => a.provider) };
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a member that left its pool after its attempt failed: the pool is still left out, not tried again through another member’s late offer', async () => {
  const { tried } = await run(async (market, job) => {
    // M0 leaves the pool (its latest advert a plain one); M1's offer comes late and cheaper, so the pool's slot shows it
    await market.putAdvert(advert(M0, { seq: 2, issuedAt: NOW + 1000 }));
    assert.equal(market.adverts.entryOf(M0.did), M0.did, 'M0 stands for itself now');
    const a1 = pooled(M1);
    await market.putAdvert(a1);
    await market.addOffer(offer(M1, job, a1, { amount: '0.45', issuedAt: NOW }), NOW);
    assert.equal(market.book.slot(job.address, POOL, NOW)?.signer, M1.did, 'the pool’s slot shows M1’s offer');
  });
  assert.deepEqual(tried, [M0.did, S.did], 'M0 (the pool), then the other provider: not the pool again through M1');
});

test('a member whose pooled advert the node let go after its attempt failed is not tried again as itself', async () => {
  const { tried } = await run(async (market) => {
    const a0 = [...market.adverts.latest.values()].find((a) => a.signer === M0.did)!;
    // the advert cap's eviction: the index forgets it and the book refiles the offers citing it
    market.adverts.remove([a0]);
    market.book.refile([a0.address]);
  });
  assert.deepEqual(tried, [M0.did, S.did]);
});


