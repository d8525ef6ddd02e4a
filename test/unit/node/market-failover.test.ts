/**
 * Failover decides afresh (docs/market.md §6): once the winner is tried, the
 * buyer's market ranks the offers left without it, because removing a provider
 * can reorder the others (every proportional score is relative to the best
 * price and duration still in the running). The selection signed from that
 * decision recomputes to its winner; the next entry of the first ranking would
 * not have.
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
import { auditSelection, signSelection } from '../../../src/market/index.js';
import { seal, T, type Advert, type Opened } from '../../../src/records/index.js';
import { NOW, P, advert, job, offer, type Party } from '../market/fixtures.js';
import { POOL, memberKeys, pooledAdvert, proof, roster, didOf } from '../pools/helpers.js';

const ME = P(750);
const [A, B, C] = [P(751), P(752), P(753)];

/** A buyer's market on a fresh LevelDB in a temp directory, with one job of its own: `fn` runs on it, then all goes. */
async function withMarket(fn: (market: MarketService, j: ReturnType<typeof job>) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'c0-market-fo-'));
  const db = await openDb(dir);
  try {
    const records = await RecordStore.open(db);
    const market = await MarketService.open({ db, prefix: '', records, now: NOW, clock: () => NOW, log: silentLogger(), signer: ME.signer, did: ME.did, skewMs: 30_000 });
    const j = job(ME);
    market.noteOwnJob(j);
    await fn(market, j);
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
}

test('after the winner is tried, the failover winner is the winner of the offers left, and its selection audits', async () => {
  await withMarket(async (market, j) => {
    // balanced (price 0.4, speed 0.2, reputation 0.4; no evidence, so reputation ties):
    // with A, C (dearest but as fast as A) ranks above B; without A, B (now the cheapest) ranks above C
    const quotes = [
      [A, '0.1', 100_000],
      [B, '0.2', 250_000],
      [C, '0.4', 100_000],
    ] as const;
    const ads = quotes.map(([p]) => advert(p));
    const offers = quotes.map(([p, amount, durationMs], i) => offer(p, j, ads[i]!, { amount, durationMs }));
    for (const a of ads) await market.putAdvert(a);
    for (const o of offers) await market.addOffer(o, NOW);
    const first = await market.decide(j, 'balanced', NOW);
    assert.deepEqual(first.ranked.map((r) => r.provider), [A.did, C.did, B.did]);

    const again = await market.decide(j, 'balanced', NOW, new Set([A.did]));
    assert.deepEqual(again.ranked.map((r) => r.provider), [B.did, C.did], 'without A, B is the cheapest and ranks first');
    const sel = market.signSelection(j, again, again.ranked[0]!, NOW);
    assert.deepEqual(sel.record.considered.map((c) => c.provider).sort(), [B.did, C.did].sort(), 'A is no longer considered');
    const records3 = [j, ...ads, ...offers];
    const audit = auditSelection({ selection: sel, records: records3 });
    assert.equal(audit.reproduces, true, JSON.stringify(audit.differences));

    // the next entry of the first ranking (C) would not have audited: the recomputation over B and C gives B
    const stale = signSelection({ result: first.result, job: j, signer: ME.signer, winner: first.ranked[1]!.offer.address, excluded: new Set([A.did]), decidedAt: NOW });
    const bad = auditSelection({ selection: stale, records: records3 });
    assert.deepEqual(bad.differences.map((d) => d.code), ['AUDIT_DIFFERENT_WINNER']);
  });
});

/**
 * A pool is one provider (docs/pools.md "Failover and epoch changes"): once a member's offer was tried, the failover
 * decision leaves out every offer filed under the pool, not only that member's. The pool's slot shows another
 * member's offer (a second coordinator's, around an epoch change) when the tried one expired with that one a standby
 * behind it, or when that one came after the decision and ranks before it in the book; the devnet once failed over
 * from m2 to m3 of one pool (POOL_ALREADY_RUN).
 */
test('after a pool member’s offer is tried, failover leaves out the pool: not another member’s offer that its slot shows now', async () => {
  const R = roster();
  const [M0, M1] = memberKeys.map((k) => ({ signer: k, did: didOf(k) }) as Party);
  const pooled = (p: Party): Opened<Advert> => seal(T.advert, { ...pooledAdvert(proof(R, p.signer)), workloads: ['infer.llm'] }, p.signer) as Opened<Advert>;
  const S = P(754);
  for (const late of [false, true]) {
    await withMarket(async (market, j) => {
      const a0 = pooled(M0!);
      const a1 = pooled(M1!);
      const as = advert(S);
      for (const a of [a0, a1, as]) await market.putAdvert(a);
      // the first coordinator's offer (expiring first when the other is a standby), a plain provider's dearer one
      const o0 = offer(M0!, j, a0, { amount: '0.5', ...(late ? {} : { expiresAt: NOW + 10_000, startBy: NOW + 10_000 }) });
      const os = offer(S, j, as, { amount: '0.6' });
      // the second coordinator's: a standby behind o0 (dearer), or, late, one that ranks before it (cheaper)
      const o1 = offer(M1!, j, a1, { amount: late ? '0.45' : '0.55', issuedAt: NOW });
      await market.addOffer(o0, NOW);
      await market.addOffer(os, NOW);
      if (!late) await market.addOffer(o1, NOW);
      const first = await market.decide(j, 'cheapest', NOW);
      assert.deepEqual(first.ranked.map((r) => r.offer.address), [o0.address, os.address], 'one offer for the pool, its best');
      if (late) await market.addOffer(o1, NOW);
      const at = late ? NOW : NOW + 20_000;
      assert.equal(market.book.slot(j.address, POOL, at)?.address, o1.address, 'the pool’s slot now shows the other member’s offer');
      const again = await market.decide(j, 'cheapest', at, new Set([M0!.did]));
      assert.deepEqual(again.ranked.map((r) => r.provider), [S.did], `late=${late}: the pool was tried; only the other provider is left`);
      const sel = market.signSelection(j, again, again.ranked[0]!, at);
      assert.deepEqual(sel.record.considered.map((c) => c.provider), [S.did], 'no member of the pool is considered');
      const audit = auditSelection({ selection: sel, records: [j, a0, a1, as, o0, o1, os] });
      assert.equal(audit.reproduces, true, JSON.stringify(audit.differences));
    });
  }
});
