/**
 * The buyer decides with reputation as of the decision time, by the rule its audit uses (docs/market.md §5,
 * LiveReputation.asOf / deriveReputation's asOf): a receipt dated after the decision (its provider's clock ahead of
 * the buyer's) counts for the decisions after its completedAt, not before. Before, the daemon decided with every piece
 * of evidence held, and an honest selection failed its audit (AUDIT_DIFFERENT_WINNER) whenever a provider's clock ran
 * a few seconds fast.
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
import { NOW, P, acceptance, advert, job, offer, receipt } from '../market/fixtures.js';

const ME = P(960);
let [A, B] = [P(961), P(962)];
if (A.did < B.did) [A, B] = [B, A]; // A has the higher DID: a tie goes to B

test('a receipt dated after the decision does not count in it yet; the selection audits either way', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-market-asof-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const market = await MarketService.open({ db, prefix: '', records, now: NOW, clock: () => NOW, log: silentLogger(), signer: ME.signer, did: ME.did, skewMs: 30_000 });
    const adA = advert(A);
    const adB = advert(B);
    await market.putAdvert(adA);
    await market.putAdvert(adB);
    // an earlier job done by A, whose clock is 5 s ahead: its receipt completed "at NOW + 5 s"; accepted at NOW - 1 s
    const j0 = job(ME, { announcedAt: NOW - 120_000, deadline: NOW + 600_000 });
    const o0 = offer(A, j0, adA, { issuedAt: NOW - 100_000, expiresAt: NOW - 50_000, startBy: NOW - 50_000 });
    const r0 = receipt(A, ME, o0, { startedAt: NOW - 35_000, completedAt: NOW + 5_000 });
    const acc0 = acceptance(ME, r0, 'accepted', { signedAt: NOW - 1_000 });
    await market.addEvidence(r0, o0);
    await market.addEvidence(acc0);
    const held = [j0, adA, adB, o0, r0, acc0];

    for (const [at, winner] of [
      [NOW, B], // A's success is not yet on record: a tie, B by DID
      [NOW + 6_000, A], // now it is
    ] as const) {
      const j = job(ME, { announcedAt: at - 1_000 });
      market.noteOwnJob(j);
      const oA = offer(A, j, adA, { issuedAt: at - 500 });
      const oB = offer(B, j, adB, { issuedAt: at - 500 });
      await market.addOffer(oA, at);
      await market.addOffer(oB, at);
      const d = await market.decide(j, 'balanced', at);
      assert.equal(d.ranked[0]!.provider, winner.did, `at NOW + ${at - NOW}`);
      const sel = market.signSelection(j, d, d.ranked[0]!, at);
      const a = auditSelection({ selection: sel, records: [...held, j, oA, oB] });
      assert.equal(a.reproduces, true, `at NOW + ${at - NOW}: ${JSON.stringify(a.differences)}`);
    }
    // the live view (the API's) holds it all the while
    assert.equal(market.reputation().get(A.did).successes, 1);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
