import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { MAX_STANDBY, OFFER_KEEP_CAP_MS, OfferBook, offerKeptUntil, select } from '../../../src/market/index.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { NOW, P, advert, job, offer, shuffle } from './fixtures.js';

const J = job(P(100));
const A1 = advert(P(1));

test('cheaper wins, then faster, then the lower offer address', () => {
  const b = new OfferBook();
  const dear = offer(P(1), J, A1, { amount: '0.50' });
  const cheap = offer(P(1), J, A1, { amount: '0.042' });
  assert.equal(b.addSync(dear, NOW).status, 'best');
  const r = b.addSync(cheap, NOW);
  assert.deepEqual(r, { changed: true, status: 'best' });
  assert.equal(b.slot(J.address, P(1).did, NOW), cheap);
  // same price: faster wins
  const fast = offer(P(1), J, A1, { amount: '0.042', durationMs: 30_000 });
  assert.equal(b.addSync(fast, NOW).status, 'best');
  assert.equal(b.slot(J.address, P(1).did, NOW), fast);
  // same price and duration: lower address
  const twins = [offer(P(2), J, advert(P(2)), { amount: '0.1', issuedAt: NOW - 1 }), offer(P(2), J, advert(P(2)), { amount: '0.10', issuedAt: NOW - 2 })];
  const low = twins[0]!.address < twins[1]!.address ? twins[0]! : twins[1]!;
  for (const order of [twins, [...twins].reverse()]) {
    const bb = new OfferBook();
    for (const o of order) bb.addSync(o, NOW);
    assert.equal(bb.slot(J.address, P(2).did, NOW), low);
  }
});

test('a worse later offer cannot withdraw a better one', () => {
  const b = new OfferBook();
  const good = offer(P(1), J, A1, { amount: '0.1', expiresAt: NOW + 60_000 });
  const worse = offer(P(1), J, A1, { amount: '0.9', expiresAt: NOW + 30_000 });
  b.addSync(good, NOW);
  assert.deepEqual(b.addSync(worse, NOW + 1), { changed: false, status: 'dominated' });
  assert.equal(b.slot(J.address, P(1).did, NOW + 1), good);
  assert.equal(b.size, 1);
  assert.deepEqual(b.addSync(good, NOW + 2), { changed: false, status: 'duplicate' });
});

test('an expired offer loses its slot to a live one; a longer-lived worse offer stands by', () => {
  const b = new OfferBook();
  const short = offer(P(1), J, A1, { amount: '0.1', expiresAt: NOW + 10_000 });
  const long = offer(P(1), J, A1, { amount: '0.2', expiresAt: NOW + 50_000 });
  b.addSync(short, NOW);
  assert.equal(b.addSync(long, NOW).status, 'standby');
  assert.equal(b.slot(J.address, P(1).did, NOW), short);
  assert.equal(b.slot(J.address, P(1).did, NOW + 10_000), long);
  // an expired offer is not taken at all
  assert.deepEqual(b.addSync(offer(P(1), J, A1, { amount: '0.01', expiresAt: NOW + 5_000 }), NOW + 6_000), { changed: false, status: 'expired' });
  // after the short one expired, a new live offer takes the slot even if dearer than the expired one
  const b2 = new OfferBook();
  b2.addSync(short, NOW);
  const later = offer(P(1), J, A1, { amount: '0.3', issuedAt: NOW + 10_000, expiresAt: NOW + 40_000, startBy: NOW + 60_000 });
  assert.deepEqual(b2.addSync(later, NOW + 11_000), { changed: true, status: 'best' });
  assert.equal(b2.slot(J.address, P(1).did, NOW + 11_000), later);
});

test('best() is one offer per provider in DID order, per currency when asked', () => {
  const b = new OfferBook();
  const ps = [P(1), P(2), P(3)];
  for (const p of ps) b.addSync(offer(p, J, advert(p), { amount: '0.5' }), NOW);
  const eur = offer(P(1), J, A1, { amount: '0.01', currency: 'EUR' });
  b.addSync(eur, NOW);
  const best = b.best(J.address, NOW, 'USD');
  assert.deepEqual(best.map((o) => o.signer), ps.map((p) => p.did).sort());
  assert.ok(best.every((o) => o.record.price.currency === 'USD'));
  assert.deepEqual(b.forJob(J, NOW), best);
  assert.equal(b.slot(J.address, P(1).did, NOW, 'EUR'), eur);
});

test('offers whose advert is not known are held but never win until it is', () => {
  const b = new OfferBook();
  const a2 = advert(P(2));
  const orphan = offer(P(1), J, A1, { amount: '0.01' });
  const known = offer(P(2), J, a2, { amount: '0.9' });
  b.addSync(orphan, NOW);
  b.addSync(known, NOW);
  assert.equal(b.best(J.address, NOW).length, 2);
  const r1 = select({ job: J, adverts: [a2], offers: b.forJob(J, NOW), now: NOW });
  assert.ok(r1.ok && r1.winner.provider === P(2).did);
  assert.deepEqual(r1.ineligible.map((v) => v.failures[0]!.code), ['ADVERT_UNKNOWN']);
  const r2 = select({ job: J, adverts: [a2, A1], offers: b.forJob(J, NOW), now: NOW });
  assert.ok(r2.ok && r2.winner.provider === P(1).did);
});

test('bad input to the book is a coded error and changes nothing', () => {
  const b = new OfferBook();
  assert.throws(() => b.addSync(A1 as never, NOW), { code: 'BOOK_NOT_AN_OFFER' });
  assert.throws(() => b.addSync(undefined as never, NOW), { code: 'BOOK_NOT_AN_OFFER' });
  assert.equal(b.size, 0);
});

// A pool of offers from three providers on two jobs, varied price, duration and lifetime.
const J2 = job(P(100), { nonce: new Uint8Array([2]) });
const POOL = (() => {
  const out = [];
  let i = 0;
  for (const p of [P(1), P(2), P(3)]) {
    const a = advert(p);
    for (const j of [J, J2]) {
      for (const amount of ['0.1', '0.10', '0.2', '0.05']) {
        for (const [d, life] of [
          [30_000, 20_000],
          [60_000, 50_000],
        ] as const) {
          out.push(offer(p, j, a, { amount, durationMs: d, issuedAt: NOW - 1000 - i++, expiresAt: NOW + life }));
        }
      }
    }
  }
  return out;
})();

test('property: the book does not depend on arrival order, at any later time', () => {
  fc.assert(
    fc.property(fc.shuffledSubarray(POOL, { minLength: 1 }), fc.integer(), (subset, seed) => {
      const a = new OfferBook();
      const b = new OfferBook();
      for (const o of subset) a.addSync(o, NOW);
      for (const o of shuffle(subset, seed)) b.addSync(o, NOW);
      for (const t of [NOW, NOW + 25_000, NOW + 55_000]) assert.deepEqual(a.snapshot(t), b.snapshot(t));
      // and the visible slot is the best live offer of everything received
      for (const t of [NOW, NOW + 25_000]) {
        for (const s of a.snapshot(t)) {
          const live = subset.filter((o) => o.signer === s.provider && o.record.job === s.job && o.record.expiresAt > t);
          const best = live.sort((x, y) => Number(x.record.price.amount) - Number(y.record.price.amount) || x.record.durationMs - y.record.durationMs || (x.address < y.address ? -1 : 1))[0]!;
          assert.equal(s.offer, best.address);
        }
      }
    }),
    { numRuns: 200 },
  );
});

test('property: two nodes hearing the same offers in different orders and at different times select the same winner', () => {
  fc.assert(
    fc.property(fc.shuffledSubarray(POOL, { minLength: 1 }), fc.integer(), fc.constantFrom('cheapest', 'fastest', 'balanced'), (subset, seed, policy) => {
      const a = new OfferBook();
      const b = new OfferBook();
      subset.forEach((o, k) => a.addSync(o, NOW - 100 + k));
      shuffle(subset, seed).forEach((o, k) => b.addSync(o, NOW - 100 + k));
      const adverts = [P(1), P(2), P(3)].map((p) => advert(p));
      const ra = select({ job: J, adverts, offers: a.forJob(J, NOW), policy, now: NOW });
      const rb = select({ job: J, adverts, offers: b.forJob(J, NOW), policy, now: NOW });
      assert.equal(ra.ok, rb.ok);
      if (ra.ok && rb.ok) assert.equal(ra.winner.offer, rb.winner.offer);
    }),
    { numRuns: 100 },
  );
});

test('persisted: a restarted node has the same book; expired offers are dropped on open', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-book-'));
  try {
    let db = await openDb(dir);
    const b = await OfferBook.open(db, NOW);
    for (const o of shuffle(POOL, 7)) await b.add(o, NOW);
    const before = b.snapshot(NOW);
    const beforeLater = b.snapshot(NOW + 25_000);
    const size = b.size;
    await closeDb(db);
    db = await openDb(dir);
    const c = await OfferBook.open(db, NOW);
    assert.deepEqual(c.snapshot(NOW), before);
    assert.deepEqual(c.snapshot(NOW + 25_000), beforeLater);
    assert.equal(c.size, size);
    await closeDb(db);
    db = await openDb(dir);
    const d = await OfferBook.open(db, NOW + 25_000);
    assert.deepEqual(d.snapshot(NOW + 25_000), beforeLater);
    assert.ok(d.size < size);
    await d.dropJob(J.address);
    assert.deepEqual(d.best(J.address, NOW + 25_000), []);
    await closeDb(db);
    db = await openDb(dir);
    const e = await OfferBook.open(db, NOW + 25_000);
    assert.deepEqual(e.best(J.address, NOW + 25_000), []);
    assert.ok(e.best(J2.address, NOW + 25_000).length > 0);
    await closeDb(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('prune drops offers an hour (or twice their duration) past their start-by time, in memory and on disk; a standing offer stays', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-book-prune-'));
  try {
    let db = await openDb(dir);
    const b = await OfferBook.open(db, NOW);
    const jobs = [1, 2, 3].map((i) => job(P(100), { nonce: new Uint8Array([40 + i]) }));
    const short = offer(P(1), jobs[0]!, A1, { startBy: NOW + 10_000, expiresAt: NOW + 10_000, durationMs: 60_000 });
    const long = offer(P(2), jobs[1]!, advert(P(2)), { startBy: NOW + 10_000, expiresAt: NOW + 10_000, durationMs: 3 * 3_600_000 });
    const fresh = offer(P(3), jobs[2]!, advert(P(3)), { startBy: NOW + 8 * 3_600_000, expiresAt: NOW + 8 * 3_600_000 });
    for (const o of [short, long, fresh]) await b.add(o, NOW);
    assert.equal(await b.prune(NOW + 10_000 + 3_600_000), 0, 'an hour past start-by: still kept');
    assert.equal(await b.prune(NOW + 10_000 + 3_600_001), 1);
    assert.equal(b.get(short.address), undefined);
    assert.deepEqual(b.jobs().sort(), [jobs[1]!.address, jobs[2]!.address].sort());
    // a three-hour job's offer stays twice its duration
    assert.equal(await b.prune(NOW + 10_000 + 6 * 3_600_000), 0);
    assert.equal(await b.prune(NOW + 10_000 + 6 * 3_600_000 + 1), 1);
    assert.ok(b.get(fresh.address));
    await closeDb(db);
    db = await openDb(dir);
    const c = await OfferBook.open(db, NOW);
    assert.deepEqual(c.all().map((o) => o.address), [fresh.address], 'gone from disk too');
    await closeDb(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('prune drops an offer at most OFFER_KEEP_CAP_MS past its expiry, whatever its start-by time or quoted duration', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-book-cap-'));
  try {
    let db = await openDb(dir);
    const b = await OfferBook.open(db, NOW);
    const jobs = [1, 2, 3].map((i) => job(P(100), { nonce: new Uint8Array([50 + i]) }));
    const exp = NOW + 60_000;
    // the audit's two shapes: a start-by time in the year 9999, and a duration of 2^52 ms
    const farStart = offer(P(1), jobs[0]!, A1, { startBy: 253_402_300_799_000, expiresAt: exp, durationMs: 1 });
    const hugeDuration = offer(P(2), jobs[1]!, advert(P(2)), { startBy: exp, expiresAt: exp, durationMs: 2 ** 52 });
    // a two-day quote keeps its four days, inside the cap, as before
    const twoDays = offer(P(3), jobs[2]!, advert(P(3)), { startBy: exp, expiresAt: exp, durationMs: 2 * 86_400_000 });
    for (const o of [farStart, hugeDuration, twoDays]) assert.equal((await b.add(o, NOW)).status, 'best');
    assert.equal(offerKeptUntil(farStart.record), exp + OFFER_KEEP_CAP_MS);
    assert.equal(offerKeptUntil(twoDays.record), exp + 4 * 86_400_000);
    assert.equal(await b.prune(exp + 4 * 86_400_000), 0);
    assert.equal(await b.prune(exp + 4 * 86_400_000 + 1), 1, 'twice its duration past its start, as before');
    assert.equal(b.get(twoDays.address), undefined);
    await closeDb(db);
    db = await openDb(dir);
    const c = await OfferBook.open(db, NOW);
    assert.deepEqual(c.all().map((o) => o.address).sort(), [farStart.address, hugeDuration.address].sort(), 'held on disk until the cap');
    assert.equal(await c.prune(exp + OFFER_KEEP_CAP_MS), 0, 'kept until the cap');
    assert.equal(await c.prune(exp + OFFER_KEEP_CAP_MS + 1), 2);
    assert.equal(c.size, 0);
    await closeDb(db);
    db = await openDb(dir);
    assert.equal((await OfferBook.open(db, NOW)).size, 0, 'gone from disk too');
    await closeDb(db);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('get(address) finds every offer the book holds, and nothing it dropped', () => {
  const b = new OfferBook();
  const best = offer(P(1), J, A1, { amount: '0.042' });
  const standby = offer(P(1), J, A1, { amount: '0.50', expiresAt: NOW + 10 * 60_000, startBy: NOW + 10 * 60_000 });
  const other = offer(P(3), J, advert(P(3)), { amount: '0.2' });
  assert.deepEqual([best, standby, other].map((o) => b.addSync(o, NOW).status), ['best', 'standby', 'best']);
  for (const o of [best, standby, other]) assert.equal(b.get(o.address), o);
  assert.equal(b.get(best.address)?.address, best.address);
  // A worse offer that does not outlive the best is dominated: not held, not found.
  const dominated = offer(P(1), J, A1, { amount: '0.9' });
  assert.equal(b.addSync(dominated, NOW).status, 'dominated');
  assert.equal(b.get(dominated.address), undefined);
  void b.dropJob(J.address);
  assert.equal(b.get(best.address), undefined);
  assert.equal(b.get(other.address), undefined);
});

test('property: selection over the book equals selection over the offers it was given, at any later time', () => {
  const adverts = [P(1), P(2), P(3)].map((p) => advert(p));
  fc.assert(
    fc.property(fc.shuffledSubarray(POOL, { minLength: 1 }), fc.constantFrom('cheapest', 'fastest', 'balanced', 'trusted'), (subset, policy) => {
      const book = new OfferBook();
      subset.forEach((o, k) => book.addSync(o, NOW - 100 + k));
      for (const t of [NOW, NOW + 25_000, NOW + 55_000, NOW + 90_000]) {
        const fromBook = select({ job: J, adverts, offers: book, policy, now: t });
        const fromList = select({ job: J, adverts, offers: subset, policy, now: t });
        assert.deepEqual(JSON.parse(JSON.stringify(fromBook)), JSON.parse(JSON.stringify(fromList)));
      }
    }),
    { numRuns: 150 },
  );
});

test('property: liveCount is the number of providers best() shows, at any later time', () => {
  fc.assert(
    fc.property(fc.shuffledSubarray(POOL, { minLength: 1 }), (subset) => {
      const book = new OfferBook();
      subset.forEach((o, k) => book.addSync(o, NOW - 100 + k));
      for (const j of [J, J2]) for (const t of [NOW, NOW + 25_000, NOW + 55_000, NOW + 90_000]) assert.equal(book.liveCount(j.address, t), book.best(j.address, t).length);
    }),
    { numRuns: 100 },
  );
});

test('candidates(): one offer per provider, the job currency first, an expired one when that is all a provider has', () => {
  const b = new OfferBook();
  const usd = offer(P(1), J, A1, { amount: '0.5' });
  const eur = offer(P(1), J, A1, { amount: '0.1', currency: 'EUR' });
  const onlyEur = offer(P(2), J, advert(P(2)), { amount: '0.1', currency: 'EUR' });
  const short = offer(P(3), J, advert(P(3)), { amount: '0.2', expiresAt: NOW + 1_000 });
  for (const o of [usd, eur, onlyEur, short]) b.addSync(o, NOW);
  const byProvider = (xs: ReturnType<OfferBook['candidates']>) => new Map(xs.map((o) => [o.signer, o.address]));
  assert.deepEqual(byProvider(b.candidates(J.address, 'USD', NOW)), new Map([[P(1).did, usd.address], [P(2).did, onlyEur.address], [P(3).did, short.address]]));
  // later, P(3)'s offer has expired: it still stands for P(3), so selection reports it as expired instead of dropping the provider
  assert.equal(byProvider(b.candidates(J.address, 'USD', NOW + 2_000)).get(P(3).did), short.address);
  const r = select({ job: J, adverts: [A1, advert(P(2)), advert(P(3))], offers: b, now: NOW + 2_000 });
  assert.deepEqual(r.ineligible.map((v) => [v.provider, v.failures.map((f) => f.code)]).sort(), [[P(2).did, ['OFFER_CURRENCY_MISMATCH']], [P(3).did, ['OFFER_EXPIRED']]].sort());
  assert.deepEqual(b.candidates('sha256:' + '00'.repeat(32), 'USD', NOW), []);
});

// Beyond the bound (issue #11): more than MAX_STANDBY mutually non-dominated offers from one provider.
// Cheaper ones live shorter, so none dominates another; each becomes the best live one in turn.
const LADDER = (() => {
  const a = advert(P(1));
  const b = advert(P(2));
  const out = [];
  for (let k = 1; k <= 13; k++) out.push(offer(P(1), J, a, { amount: `0.${String(k).padStart(2, '0')}`, issuedAt: NOW - 1000 - k, expiresAt: NOW + 10_000 * k, startBy: NOW + 300_000 }));
  for (let k = 1; k <= 3; k++) out.push(offer(P(2), J, b, { amount: `0.${k}5`, issuedAt: NOW - 2000 - k, expiresAt: NOW + 40_000 * k }));
  return out;
})();

test('property: past MAX_STANDBY offers from one provider, the book refuses the extra ones (never drops an accepted one) and selection over the book equals selection over the offers it accepted', () => {
  const adverts = [P(1), P(2)].map((p) => advert(p));
  fc.assert(
    fc.property(fc.shuffledSubarray(LADDER, { minLength: 1 }), fc.constantFrom('cheapest', 'fastest', 'balanced'), (subset, policy) => {
      const book = new OfferBook();
      const accepted: typeof subset = [];
      let refused = 0;
      subset.forEach((o, k) => {
        const r = book.addSync(o, NOW - 100 + k);
        if (r.status === 'refused') refused++;
        else if (r.status === 'best' || r.status === 'standby') accepted.push(o);
      });
      // P(1)'s offers are mutually non-dominated: all beyond the bound are refused, the rest kept
      const mine = subset.filter((o) => o.signer === P(1).did).length;
      assert.equal(refused, Math.max(0, mine - MAX_STANDBY));
      for (let t = NOW; t <= NOW + 140_000; t += 10_000) {
        const fromBook = select({ job: J, adverts, offers: book, policy, now: t });
        const fromList = select({ job: J, adverts, offers: accepted, policy, now: t });
        assert.deepEqual(JSON.parse(JSON.stringify(fromBook)), JSON.parse(JSON.stringify(fromList)), `at +${t - NOW} ms`);
      }
    }),
    { numRuns: 150 },
  );
});

test('the bound is a refusal: a ninth non-dominated offer is refused and the eight accepted stay; a dominating one is still taken', () => {
  const book = new OfferBook();
  const mine = LADDER.filter((o) => o.signer === P(1).did);
  for (const o of mine.slice(0, MAX_STANDBY)) assert.notEqual(book.addSync(o, NOW).status, 'refused');
  assert.deepEqual(book.addSync(mine[MAX_STANDBY]!, NOW), { changed: false, status: 'refused' });
  assert.equal(book.size, MAX_STANDBY);
  // cheaper than all and living longest: dominates every one, so it is taken and they leave
  const dom = offer(P(1), J, advert(P(1)), { amount: '0.001', expiresAt: NOW + 200_000, startBy: NOW + 300_000 });
  assert.equal(book.addSync(dom, NOW).status, 'best');
  assert.equal(book.size, 1);
});
