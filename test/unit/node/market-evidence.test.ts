/**
 * A receipt brings the offer it cites into the evidence (the quote-accuracy
 * pair) however long the work ran: the offer the provider passes with its own
 * receipt, the book's while it holds it, and after the book dropped it (an
 * hour past its start-by time), the copy a buyer's record store keeps with the
 * selection that considered it. On a real LevelDB.
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
import { NOW, P, advert, job, offer, receipt } from '../market/fixtures.js';

const ME = P(730);
const PROV = P(731);

test('a receipt brings its offer: given with it, from the book, or from the record store once the book dropped it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-market-ev-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const market = await MarketService.open({ db, prefix: '', records, now: NOW, clock: () => NOW, log: silentLogger(), signer: ME.signer, did: ME.did, skewMs: 30_000 });
    const ad = advert(PROV);
    await market.putAdvert(ad);
    const mk = (n: number) => {
      const j = job(ME, { nonce: new Uint8Array([n, 73]) });
      const o = offer(PROV, j, ad, { startBy: NOW + 10_000, expiresAt: NOW + 10_000, durationMs: 60_000 });
      return { j, o, r: receipt(PROV, ME, o, { startedAt: NOW + 5_000, completedAt: NOW + 5 * 3_600_000 }) };
    };
    // given with the receipt (a provider's own quote), held nowhere else
    const a = mk(1);
    await market.addEvidence(a.r, a.o);
    assert.ok(market.evidence.offers.has(a.o.address));
    // from the book
    const b = mk(2);
    market.noteOwnJob(b.j);
    await market.addOffer(b.o, NOW);
    await market.addEvidence(b.r);
    assert.ok(market.evidence.offers.has(b.o.address));
    // the book dropped it five hours on; the buyer's record store kept it with its selection
    const c = mk(3);
    market.noteOwnJob(c.j);
    await market.addOffer(c.o, NOW);
    await records.putMany([c.o]);
    assert.equal(await market.book.prune(NOW + 5 * 3_600_000), 2, 'b\'s and c\'s');
    assert.equal(market.book.get(c.o.address), undefined);
    await market.addEvidence(c.r);
    assert.ok(market.evidence.offers.has(c.o.address), 'the pair is made from the stored copy');
    // an offer that does not match the receipt is not taken for it
    const d = mk(4);
    await market.addEvidence(d.r, a.o);
    assert.ok(!market.evidence.offers.has(d.o.address));
    assert.equal(market.reputation().get(PROV.did).quotePairs, 0, 'no acceptance yet: nothing counted, but the pairs are held');
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
