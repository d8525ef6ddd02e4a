/**
 * A pool is one provider in the book whatever the order its records came in (docs/pools.md "One entry in the
 * market", "Offer book"): an offer filed before the pooled advert it cites was held (it came over a path that carries
 * no advert, or its advert was refused at first and taken later) is filed under its signer; once the advert is held
 * it stands for the pool, and the book moves it to the pool's slot. Before, it stayed under the member's DID, and
 * selection ranked two offers of one pool (the documented rule: one offer per pool).
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
import { auditSelection } from '../../../src/market/index.js';
import { seal, T, type Advert, type Opened } from '../../../src/records/index.js';
import { NOW, P, advert, job, offer, type Party } from '../market/fixtures.js';
import { POOL, memberKeys, pooledAdvert, proof, roster, didOf } from '../pools/helpers.js';

const ME = P(760);
const S = P(761);

test('a member’s offer filed before its pooled advert was held moves to the pool’s slot once the advert is: one offer per pool', async () => {
  const R = roster();
  const [MA, MB] = memberKeys.map((k) => ({ signer: k, did: didOf(k) }) as Party);
  const pooled = (p: Party): Opened<Advert> => seal(T.advert, { ...pooledAdvert(proof(R, p.signer)), workloads: ['infer.llm'] }, p.signer) as Opened<Advert>;
  const dir = mkdtempSync(join(tmpdir(), 'c0-market-pool-late-'));
  const db = await openDb(dir);
  const open = async (records: RecordStore) => MarketService.open({ db, prefix: '', records, now: NOW, clock: () => NOW, log: silentLogger(), signer: ME.signer, did: ME.did, skewMs: 30_000 });
  try {
    const records = await RecordStore.open(db);
    let market = await open(records);
    const j = job(ME);
    market.noteOwnJob(j);
    const aA = pooled(MA!);
    const aB = pooled(MB!);
    const as = advert(S);
    await market.putAdvert(as);
    // member A's offer comes with no advert (a steward's select request, say): aA is not held yet
    const oA = offer(MA!, j, aA, { amount: '0.4' });
    await market.addOffer(oA, NOW);
    assert.equal(market.book.slot(j.address, MA!.did, NOW)?.address, oA.address, 'filed under its signer while its advert is not held');
    // the pooled adverts are stored later, then member B (the next coordinator) quotes for the same job
    await market.putAdvert(aA);
    await market.putAdvert(aB);
    const oB = offer(MB!, j, aB, { amount: '0.5' });
    const os = offer(S, j, as, { amount: '0.6' });
    await market.addOffer(oB, NOW);
    await market.addOffer(os, NOW);
    assert.deepEqual(market.book.snapshot(NOW), [
      { job: j.address, provider: POOL, offer: oA.address },
      { job: j.address, provider: S.did, offer: os.address },
    ].sort((x, y) => (x.provider < y.provider ? -1 : 1)), 'one slot for the pool, showing its better offer');
    assert.equal(market.book.liveCount(j.address, NOW), 2);
    assert.equal(market.offersFor(j.address, NOW, j).length, 2);
    const d = await market.decide(j, 'cheapest', NOW);
    assert.deepEqual(d.ranked.map((r) => r.offer.address), [oA.address, os.address], 'one offer for the pool, its best');
    const sel = market.signSelection(j, d, d.ranked[0]!, NOW);
    assert.deepEqual(sel.record.considered.map((c) => c.offer).sort(), [oA.address, os.address].sort(), 'the selection names one offer for the pool');
    const audit = auditSelection({ selection: sel, records: [j, aA, aB, as, oA, oB, os] });
    assert.equal(audit.reproduces, true, JSON.stringify(audit.differences));
    // reopened, the book files each offer where its advert says from the start: the same picture
    const before = market.book.snapshot(NOW);
    market = await open(await RecordStore.open(db));
    assert.deepEqual(market.book.snapshot(NOW), before);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
