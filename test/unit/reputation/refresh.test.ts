/**
 * When the reputation view is derived again (src/reputation/refresh.ts;
 * docs/market.md "When the view is derived again"): the cache on its own with
 * a fake clock, then a MarketService on a real LevelDB whose node counts a
 * trusted buyer's outcomes: its own dealings count in the next decision,
 * another buyer's once the view is a refresh old.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ReputationCache, SECOND_HAND_REFRESH_MS } from '../../../src/reputation/refresh.js';
import { ReputationTable } from '../../../src/reputation/derive.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { RecordStore } from '../../../src/store/records.js';
import { MarketService } from '../../../src/node/market-service.js';
import { silentLogger } from '../../../src/util/log.js';
import { NOW, P, acceptance, advert, job, offer, receipt } from '../market/fixtures.js';

test('the cache: first-hand evidence re-derives at the next read, second-hand once the view is refreshMs old', () => {
  let t = 0;
  let calls = 0;
  const cache = new ReputationCache(() => (calls++, new ReputationTable([])), { clock: () => t, minRefreshMs: 1_000 });
  const a = cache.get();
  assert.equal(calls, 1);
  assert.equal(cache.get(), a, 'nothing changed: the same table');
  cache.changed(false);
  assert.equal(cache.behind, true);
  t = 999;
  assert.equal(cache.get(), a, 'second-hand evidence waits for the refresh');
  assert.equal(calls, 1);
  t = 1_000;
  const b = cache.get();
  assert.notEqual(b, a, 'a refresh old: derived again');
  assert.deepEqual([calls, cache.behind], [2, false]);
  t = 1_001;
  cache.changed(true);
  assert.notEqual(cache.get(), b, 'first-hand evidence: derived again at once');
  assert.equal(calls, 3);
  // with nothing waiting, an old view is kept: the clock alone re-derives nothing
  t = 1_000_000;
  cache.get();
  assert.equal(calls, 3);
  assert.equal(cache.derivations, 3);
});

test('the cache: the refresh interval grows with what a derivation costs (at most DERIVE_SHARE of the loop)', () => {
  const cache = new ReputationCache(
    () => {
      const end = performance.now() + 20;
      while (performance.now() < end);
      return new ReputationTable([]);
    },
    { minRefreshMs: 0, share: 0.05 },
  );
  let told = 0;
  assert.equal(cache.refreshMs, 0);
  cache.get();
  assert.ok(cache.refreshMs >= 20 / 0.05, `a 20 ms derivation waits at least 400 ms before the next (${cache.refreshMs.toFixed(0)} ms)`);
  const seen = new ReputationCache(() => new ReputationTable([]), { onDerive: (ms) => (told += ms >= 0 ? 1 : 0) });
  seen.get();
  assert.equal(told, 1, 'each derivation is reported (the metrics)');
  assert.equal(seen.refreshMs, SECOND_HAND_REFRESH_MS, 'never below the floor');
});

test('a node counting a trusted buyer: its own outcome counts in its next decision, the trusted buyer\u2019s after the refresh', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-rep-refresh-'));
  const db = await openDb(join(dir, 'db'));
  try {
    const me = P(700);
    const other = P(701);
    const prov = P(702);
    let t = 0;
    const records = await RecordStore.open(db);
    const market = await MarketService.open({
      db,
      prefix: '',
      records,
      now: NOW,
      clock: () => NOW,
      log: silentLogger(),
      signer: me.signer,
      did: me.did,
      skewMs: 30_000,
      trust: { trustedBuyers: [other.did], secondHandWeight: 0.5 },
      reputationRefresh: { clock: () => t, minRefreshMs: 2_000 },
    });
    const ad = advert(prov);
    let n = 0;
    const outcome = async (buyer: typeof me) => {
      const j = job(buyer, { nonce: new Uint8Array([n++]) });
      const o = offer(prov, j, ad);
      const r = receipt(prov, buyer, o);
      await market.addEvidence(r);
      await market.addEvidence(acceptance(buyer, r, 'accepted'));
    };
    const jobs = () => market.reputation().get(prov.did).jobs;
    assert.equal(jobs(), 0);
    // the trusted buyer's success: held, but the view is not a refresh old yet
    await outcome(other);
    assert.equal(market.evidence.size, 2);
    t = 1_999;
    assert.equal(jobs(), 0, 'second-hand evidence waits for the refresh');
    t = 2_000;
    assert.equal(jobs(), 0.5, 'counted once the view is a refresh old (second-hand: weight 0.5)');
    // this node's own outcome counts at once, whatever the view's age
    t = 2_001;
    await outcome(me);
    const f = market.reputation().get(prov.did);
    assert.deepEqual([f.jobs, f.firstHand], [1.5, 1], 'first-hand: in the next decision');
    // a provider's side: another buyer's acceptance of a receipt this node signed (and holds) is of its own dealings
    const mine = receipt(me, other, offer(me, job(other, { nonce: new Uint8Array([99]) }), advert(me)));
    const theirs = acceptance(other, mine, 'accepted');
    assert.equal(market.evidence.ofOwnDealings(theirs, me.did), false, 'the receipt is not held yet: nothing ties the acceptance to this node');
    await market.addEvidence(mine);
    assert.equal(market.evidence.ofOwnDealings(theirs, me.did), true);
    assert.equal(market.evidence.ofOwnDealings(acceptance(other, receipt(prov, other, offer(prov, job(other, { nonce: new Uint8Array([98]) }), ad)), 'accepted'), me.did), false, 'another provider\'s receipt: second-hand');
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});
