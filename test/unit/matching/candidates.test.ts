/**
 * The candidates engine (src/matching/candidates.ts) and the rotation
 * (src/matching/rotation.ts): each candidate rule, the ranking by cost with
 * rotation among equal prices, determinism over arrival orders (property
 * test), and rotation persisted across a reopen on a real LevelDB.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { seal, T, type Opened, type Presence, type PriceEntry } from '../../../src/records/index.js';
import { candidates, orderFromJob, rankAhead, tieKey, CANDIDATE_REASON as C, type CandidateOrder } from '../../../src/matching/candidates.js';
import { Rotation, levelRotationStore, memoryRotationStore } from '../../../src/matching/rotation.js';
import { ProbeService, parseProbeOrder } from '../../../src/matching/probe.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { closeDb, openDb, sub } from '../../../src/store/db.js';
import { C0Error } from '../../../src/errors.js';
import { NOW, P, advert, job, type AdvertOver, type Party } from '../market/fixtures.js';

const W = 'infer.llm';
const BOX = new Uint8Array(32).fill(7);

interface LiveOver {
  prices?: PriceEntry[];
  freeSlots?: number;
  workloads?: string[];
  liveUntil?: number;
  advert?: AdvertOver;
}

function price(amount: string, unit = 'job', currency = 'USD', workload = W): PriceEntry {
  return { workload, unit, price: { amount, currency } };
}

function live(p: Party, o: LiveOver = {}): LiveProvider {
  const a = advert(p, { prices: o.prices ?? [price('0.5')], boxKey: BOX, ...o.advert });
  const pres: Presence = { workloads: o.workloads ?? [W], freeSlots: o.freeSlots ?? 2, issuedAt: NOW - 1_000, windowMs: 15_000 };
  return { did: p.did, presence: seal(T.presence, pres, p.signer) as Opened<Presence>, advert: a, workloads: pres.workloads, freeSlots: pres.freeSlots, liveUntil: o.liveUntil ?? NOW + 14_000 };
}

function order(o: Partial<CandidateOrder> = {}): CandidateOrder {
  return { workload: W, requirements: {}, maxPrice: { amount: '1', currency: 'USD' }, inputSize: 1024, inputSealed: false, timeoutMs: 60_000, ...o };
}

const codes = (r: ReturnType<typeof candidates>, did: string) => r.rejected.find((x) => x.provider === did)?.reasons.map((x) => x.code) ?? [];

describe('candidates: each rule', () => {
  test('a live, eligible provider with a free slot asking below the price is a candidate, with its cost', () => {
    const r = candidates({ order: order(), live: [live(P(1))], now: NOW });
    assert.equal(r.candidates.length, 1);
    assert.equal(r.candidates[0]!.provider, P(1).did);
    assert.deepEqual(r.candidates[0]!.cost, { amount: '0.5', currency: 'USD' });
    assert.deepEqual(r.rejected, []);
  });

  test('not live: a lapsed presence, or a known advert with none', () => {
    const r = candidates({ order: order(), live: [live(P(1), { liveUntil: NOW })], known: [advert(P(2))], now: NOW });
    assert.equal(r.candidates.length, 0);
    assert.deepEqual(codes(r, P(1).did), [C.NOT_LIVE]);
    assert.deepEqual(codes(r, P(2).did), [C.NOT_LIVE]);
    assert.match(r.summary, /No candidate among 2/);
  });

  test('live for another workload only', () => {
    const r = candidates({ order: order(), live: [live(P(1), { workloads: ['infer.other'] })], now: NOW });
    assert.deepEqual(codes(r, P(1).did), [C.NOT_LIVE_FOR_WORKLOAD]);
  });

  test('the eligibility gates run against the advert (their codes are kept)', () => {
    const r = candidates({ order: order({ requirements: { tier: 'verified', regions: ['us-east'] } }), live: [live(P(1))], now: NOW });
    assert.deepEqual(codes(r, P(1).did), ['TIER_NOT_SATISFIED', 'REGION_NOT_ACCEPTED']);
  });

  test('free slots count what the provider holds', () => {
    const held = new Map([[P(1).did, 2], [P(2).did, 1]]);
    const r = candidates({ order: order(), live: [live(P(1), { freeSlots: 2 }), live(P(2), { freeSlots: 2 }), live(P(3), { freeSlots: 0 })], held, now: NOW });
    assert.deepEqual(r.candidates.map((c) => c.provider), [P(2).did]);
    assert.deepEqual(codes(r, P(1).did), [C.NO_FREE_SLOT]);
    assert.deepEqual(codes(r, P(3).did), [C.NO_FREE_SLOT]);
  });

  test('ask above the price (exact decimals, units counted as the provider prices)', () => {
    // per mib: 3 MiB + 1 byte of input counts 4 MiB; 0.25 × 4 = 1.00 ≤ 1 (at the limit); 0.2500001 × 4 > 1
    const o = order({ inputSize: 3 * 1024 * 1024 + 1 });
    const r = candidates({ order: o, live: [live(P(1), { prices: [price('0.25', 'mib')] }), live(P(2), { prices: [price('0.2500001', 'mib')] })], now: NOW });
    assert.deepEqual(r.candidates.map((c) => [c.provider, c.units, c.cost.amount]), [[P(1).did, 4, '1']]);
    assert.deepEqual(codes(r, P(2).did), [C.ASK_ABOVE_PRICE]);
    // per second: the order's timeout (60 s) is what it may run
    const s = candidates({ order: order(), live: [live(P(3), { prices: [price('0.016', 'second')] }), live(P(4), { prices: [price('0.017', 'second')] })], now: NOW });
    assert.deepEqual(s.candidates.map((c) => [c.provider, c.cost.amount]), [[P(3).did, '0.96']]);
    assert.deepEqual(codes(s, P(4).did), [C.ASK_ABOVE_PRICE]);
  });

  test('another currency is not a candidate; no price, or an uncountable unit, neither', () => {
    const r = candidates({ order: order(), live: [live(P(1), { prices: [price('0.1', 'job', 'EUR')] }), live(P(2), { prices: [] }), live(P(3), { prices: [price('0.1', 'mtoken')] })], now: NOW });
    assert.equal(r.candidates.length, 0);
    assert.deepEqual(codes(r, P(1).did), [C.ASK_CURRENCY_MISMATCH]);
    assert.deepEqual(codes(r, P(2).did), [C.NO_ASK]);
    assert.deepEqual(codes(r, P(3).did), [C.ASK_UNIT_UNKNOWN]);
  });

  test('a sealed input needs a box key', () => {
    const noKey = live(P(1), { advert: { boxKey: undefined } });
    assert.equal(noKey.advert.record.boxKey, undefined);
    const r = candidates({ order: order({ inputSealed: true }), live: [noKey, live(P(2))], now: NOW });
    assert.deepEqual(r.candidates.map((c) => c.provider), [P(2).did]);
    assert.deepEqual(codes(r, P(1).did), [C.NO_BOX_KEY]);
    // unsealed: both
    assert.equal(candidates({ order: order(), live: [noKey, live(P(2))], now: NOW }).candidates.length, 2);
  });

  test('a designated order: only the designated provider, even when dearer', () => {
    const r = candidates({ order: order({ designated: P(2).did }), live: [live(P(1), { prices: [price('0.1')] }), live(P(2), { prices: [price('0.9')] })], now: NOW });
    assert.deepEqual(r.candidates.map((c) => c.provider), [P(2).did]);
    assert.deepEqual(codes(r, P(1).did), [C.NOT_DESIGNATED]);
    const gone = candidates({ order: order({ designated: P(9).did }), live: [live(P(1))], now: NOW });
    assert.equal(gone.candidates.length, 0);
    assert.match(gone.summary, /designated provider .* is not known/);
  });

  test('an order from a job record; a bad order is a typed error', () => {
    const j = job(P(50), { inputSealed: 'yes', input: { hash: 'sha256:' + '11'.repeat(32), size: 5 } });
    const o = orderFromJob(j, P(1).did);
    assert.equal(o.inputSealed, true);
    assert.equal(o.designated, P(1).did);
    assert.equal(candidates({ order: o, live: [live(P(1))], now: NOW }).candidates.length, 1);
    assert.throws(() => candidates({ order: order({ inputSize: -1 }), live: [], now: NOW }), (e: unknown) => e instanceof C0Error && e.code === 'MATCH_BAD_ORDER');
    assert.throws(() => parseProbeOrder({ workload: W, maxPrice: 'lots' }), (e: unknown) => e instanceof C0Error && e.code === 'PROBE_SPEC_INVALID');
    assert.throws(() => parseProbeOrder({ workload: W, maxPrice: '0.5 USD', designated: 'did:nope' }), (e: unknown) => e instanceof C0Error && e.code === 'PROBE_SPEC_INVALID' && e.field === 'designated');
    assert.deepEqual(parseProbeOrder({ workload: W, maxPrice: '0.5 USD', inputSize: '10', sealInput: 'true', designated: P(1).did }), { workload: W, requirements: {}, maxPrice: { amount: '0.5', currency: 'USD' }, inputSize: 10, inputSealed: true, timeoutMs: 60_000, designated: P(1).did });
  });

  test('no live provider at all', () => {
    const r = candidates({ order: order(), live: [], now: NOW });
    assert.deepEqual(r.candidates, []);
    assert.match(r.summary, /No provider is live/);
  });
});

describe('candidates: ranking and rotation', () => {
  test('cheapest first; among equals the one picked least recently, then DID order', () => {
    const ps = [P(1), P(2), P(3)];
    const l = ps.map((p) => live(p, { prices: [price('0.5')] }));
    const rot = new Map([[P(1).did, 5], [P(2).did, 3]]);
    const r = candidates({ order: order(), live: [...l, live(P(4), { prices: [price('0.4')] })], rotation: { lastPicked: (d) => rot.get(d) ?? 0 }, now: NOW });
    assert.deepEqual(r.candidates.map((c) => c.provider), [P(4).did, P(3).did, P(2).did, P(1).did]);
    assert.deepEqual(r.candidates.map((c) => c.rank), [1, 2, 3, 4]);
  });

  test('3 unpinned probes over 3 equally priced providers pick 3 different first candidates; a cheaper one is always first; a pinned probe does not advance', async () => {
    const equal = [P(1), P(2), P(3)].map((p) => live(p, { prices: [price('0.5')] }));
    let set = equal;
    const svc = await ProbeService.open({ clock: () => NOW, liveProviders: () => set });
    const firsts: string[] = [];
    for (let i = 0; i < 3; i++) firsts.push((await svc.probe(order())).candidates[0]!.provider);
    assert.equal(new Set(firsts).size, 3);
    // a pinned probe leaves the rotation where it is
    const before = svc.rotation.counter;
    const pinned = await svc.probe(order({ designated: P(2).did }));
    assert.equal(pinned.picked, undefined);
    assert.equal(svc.rotation.counter, before);
    // the fourth comes back to the first one picked
    assert.equal((await svc.probe(order())).candidates[0]!.provider, firsts[0]);
    set = [...equal, live(P(4), { prices: [price('0.49')] })];
    for (let i = 0; i < 3; i++) assert.equal((await svc.probe(order())).candidates[0]!.provider, P(4).did);
  });

  test('deterministic: the same inputs in any arrival order give the same answer (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ n: fc.integer({ min: 1, max: 12 }), amt: fc.constantFrom('0.3', '0.30', '0.5', '1', '1.1'), free: fc.integer({ min: 0, max: 2 }), held: fc.integer({ min: 0, max: 2 }), mark: fc.integer({ min: 0, max: 4 }), sealedOk: fc.boolean() }), { maxLength: 12 }),
        fc.boolean(),
        fc.integer(),
        (rows, sealed, seed) => {
          const uniq = [...new Map(rows.map((r) => [r.n, r])).values()];
          const lp = uniq.map((r) => live(P(r.n), { prices: [price(r.amt)], freeSlots: r.free, ...(r.sealedOk ? {} : { advert: { boxKey: undefined } }) }));
          const held = new Map(uniq.map((r) => [P(r.n).did, r.held]));
          const marks = new Map(uniq.map((r) => [P(r.n).did, r.mark]));
          const rotation = { lastPicked: (d: string) => marks.get(d) ?? 0 };
          const o = order({ inputSealed: sealed });
          const a = candidates({ order: o, live: lp, held, rotation, now: NOW });
          // a shuffled arrival order (Fisher–Yates from the seed)
          const sh = [...lp];
          let s = seed >>> 0;
          for (let i = sh.length - 1; i > 0; i--) {
            s = (s * 1103515245 + 12345) >>> 0;
            const j = s % (i + 1);
            [sh[i], sh[j]] = [sh[j]!, sh[i]!];
          }
          const b = candidates({ order: o, live: sh, held: new Map([...held].reverse()), rotation, now: NOW });
          assert.deepEqual(b, a);
          // the ranking is by cost, then mark, then DID
          for (let i = 1; i < a.candidates.length; i++) {
            const x = a.candidates[i - 1]!;
            const y = a.candidates[i]!;
            const c = Number(x.cost.amount) - Number(y.cost.amount);
            assert.ok(c < 0 || (c === 0 && (x.lastPicked < y.lastPicked || (x.lastPicked === y.lastPicked && x.provider < y.provider))));
          }
          assert.equal(a.candidates.length + a.rejected.length, uniq.length);
        },
      ),
      { numRuns: 150 },
    );
  });

  test('the order is the strings’ own for any DIDs: shared prefixes, one a prefix of another, characters past 8 bits (property)', () => {
    // the sort packs the characters after the DIDs' common prefix into a number (rankInPlace); check it against the plain comparison
    // 8-bit characters only (the packed path) or some wider ones too (the plain comparison)
    const narrow = fc.constantFrom('a', 'b', 'z', '0', '9', 'é', 'ÿ');
    const wide = fc.constantFrom('a', 'b', 'ÿ', 'Ā', '€', '😀');
    const dids = (chars: fc.Arbitrary<string>) => fc.uniqueArray(fc.array(chars, { maxLength: 9 }).map((cs) => 'did:key:z6Mk' + cs.join('')), { minLength: 1, maxLength: 40 });
    fc.assert(
      fc.property(
        fc.oneof(dids(narrow), dids(narrow), dids(wide)),
        fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 40, maxLength: 40 }),
        fc.array(fc.constantFrom('0.5', '0.50', '0.4'), { minLength: 40, maxLength: 40 }),
        (dids, marks, amounts) => {
          const lp = dids.map((did, i) => ({ ...live(P(1), { prices: [price(amounts[i]!)] }), did }));
          const mark = new Map(dids.map((d, i) => [d, marks[i]!]));
          const r = candidates({ order: order(), live: lp, rotation: { lastPicked: (d) => mark.get(d) ?? 0 }, now: NOW });
          const want = [...dids].sort((x, y) => {
            const ax = Number(amounts[dids.indexOf(x)]);
            const ay = Number(amounts[dids.indexOf(y)]);
            return ax - ay || mark.get(x)! - mark.get(y)! || (x < y ? -1 : x > y ? 1 : 0);
          });
          assert.deepEqual(r.candidates.map((c) => c.provider), want);
          assert.deepEqual(r.candidates.map((c) => c.rank), want.map((_, i) => i + 1));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('rotation: persistent and deterministic', () => {
  test('the same picks give the same marks; counter, not clock', async () => {
    const a = await Rotation.open(memoryRotationStore());
    const b = await Rotation.open(memoryRotationStore());
    for (const d of ['x', 'y', 'x']) {
      await a.pick(d);
      await b.pick(d);
    }
    assert.deepEqual([a.lastPicked('x'), a.lastPicked('y'), a.lastPicked('z')], [3, 2, 0]);
    assert.deepEqual([b.lastPicked('x'), b.lastPicked('y')], [3, 2]);
  });

  test('survives a reopen on a real LevelDB: the next probe goes on rotating', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'c0-rotation-'));
    try {
      const equal = [P(1), P(2), P(3)].map((p) => live(p, { prices: [price('0.5')] }));
      let db = await openDb(dir);
      let svc = await ProbeService.open({ clock: () => NOW, liveProviders: () => equal }, levelRotationStore(sub(db, 'matching-rotation')));
      const first = (await svc.probe(order())).picked!;
      const second = (await svc.probe(order())).picked!;
      await closeDb(db);
      db = await openDb(dir);
      svc = await ProbeService.open({ clock: () => NOW, liveProviders: () => equal }, levelRotationStore(sub(db, 'matching-rotation')));
      assert.equal(svc.rotation.counter, 2);
      const third = (await svc.probe(order())).picked!;
      assert.equal(new Set([first, second, third]).size, 3);
      await closeDb(db);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('rankAhead: how many providers ask less for a job (offers per job)', () => {
  const buyer = P(90);
  const j = job(buyer);
  const ahead = (ls: LiveProvider[], self: number, cost: string, limit = 8, jj = j) => rankAhead({ job: jj, live: ls, self: P(self).did, cost, limit, now: NOW });

  test('counts the live, eligible providers with a free slot that ask less; never itself', () => {
    const ls = [live(P(1), { prices: [price('0.1')] }), live(P(2), { prices: [price('0.2')] }), live(P(3), { prices: [price('0.3')] }), live(P(4), { prices: [price('0.4')] })];
    assert.equal(ahead(ls, 3, '0.3'), 2);
    assert.equal(ahead(ls, 1, '0.1'), 0);
    assert.equal(ahead(ls, 4, '0.4'), 3);
    // the same order as candidates() gives, for each provider
    const ranked = candidates({ order: orderFromJob(j), live: ls, now: NOW }).candidates.map((c) => c.provider);
    for (const [i, did] of ranked.entries()) assert.equal(rankAhead({ job: j, live: ls, self: did, cost: `0.${i + 1}`, limit: 8, now: NOW }), i);
  });

  test('a cheaper provider whose free slots its leases and jobs hold does not count, as in candidates()', () => {
    const ls = [live(P(1), { prices: [price('0.1')], freeSlots: 1 }), live(P(2), { prices: [price('0.2')], freeSlots: 2 })];
    const held = new Map([[P(1).did, 1], [P(2).did, 1]]);
    assert.equal(rankAhead({ job: j, live: ls, held, self: P(9).did, cost: '0.5', limit: 8, now: NOW }), 1);
    assert.equal(ahead(ls, 9, '0.5'), 2);
  });

  test('a cheaper provider not heard lately (presence older than half its window) is still live but holds nobody back', () => {
    const stale = live(P(1), { prices: [price('0.1')] });
    const old = { ...stale, presence: seal(T.presence, { ...stale.presence.record, issuedAt: NOW - 8_000 }, P(1).signer) as Opened<Presence> };
    assert.equal(candidates({ order: orderFromJob(j), live: [old], now: NOW }).candidates.length, 1, 'a candidate for a buyer');
    assert.equal(ahead([old], 9, '0.5'), 0, 'issued 8 s ago, window 15 s: not ahead');
    assert.equal(ahead([stale], 9, '0.5'), 1);
  });

  test('stops counting at the limit', () => {
    const ls = [1, 2, 3, 4, 5].map((n) => live(P(n), { prices: [price('0.1')] }));
    assert.equal(ahead(ls, 9, '0.5', 2), 2);
    assert.equal(ahead(ls, 9, '0.5', 0), 0);
  });

  test('cheaper but not a candidate does not count: lapsed, busy, another workload, above the price, ineligible, no box key for a sealed input', () => {
    const ls = [
      live(P(1), { prices: [price('0.1')], liveUntil: NOW }),
      live(P(2), { prices: [price('0.1')], freeSlots: 0 }),
      live(P(3), { prices: [price('0.1')], workloads: ['infer.other'] }),
      live(P(4), { prices: [price('0.1')], advert: { tier: 'community' } }),
      live(P(5), { prices: [price('0.1', 'job', 'EUR')] }),
    ];
    const picky = job(buyer, { requirements: { tier: 'standard' } });
    assert.equal(ahead(ls, 9, '0.5', 8, picky), 0);
    const sealed = job(buyer, { inputSealed: 'yes' });
    // the fixtures' advert has no box key unless given one
    const noBox = [{ ...live(P(6)), advert: advert(P(6), { prices: [price('0.1')] }) }];
    assert.equal(ahead(noBox, 9, '0.5', 8, sealed), 0);
    assert.equal(ahead(noBox, 9, '0.5', 8, j), 1);
    // a job's own maxPrice caps both: a provider cheaper than self but above the job's price is no candidate
    const dear = [live(P(7), { prices: [price('2')] })];
    assert.equal(ahead(dear, 9, '3', 8, j), 0);
  });

  test('equal asks are ordered by tieKey(job, DID): each job ranks them differently, the same on every node', () => {
    const ps = [1, 2, 3, 4, 5, 6].map((n) => P(n));
    const ls = ps.map((p) => live(p, { prices: [price('0.2')] }));
    const firsts = new Set<string>();
    for (let k = 0; k < 12; k++) {
      const jk = job(buyer, { announcedAt: NOW - 1_000 - k });
      const order = [...ps].sort((a, b) => (tieKey(jk.address, a.did) < tieKey(jk.address, b.did) ? -1 : 1));
      order.forEach((p, i) => assert.equal(rankAhead({ job: jk, live: ls, self: p.did, cost: '0.2', limit: 8, now: NOW }), i));
      firsts.add(order[0]!.did);
    }
    assert.ok(firsts.size > 1, 'the first among equal asks changes with the job');
  });
});
