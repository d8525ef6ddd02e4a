/**
 * The reputation view kept up to date (src/reputation/live.ts; docs/market.md
 * "How the view follows new evidence"): after every record, in any order, the
 * view equals a derivation over everything held (first-hand, trusted,
 * untrusted and dealt-with outcomes, verdicts before their receipts, disputes,
 * non-deliveries, several receipts of one job), while only the providers a
 * record concerns are derived again; everything is derived again only after an
 * eviction, and with dealtWith after a record of this node's own jobs as a
 * provider. Then a MarketService on a real LevelDB, whose view follows
 * addEvidence.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LiveReputation } from '../../../src/reputation/live.js';
import { EvidenceStore } from '../../../src/reputation/store.js';
import { signNonDelivery } from '../../../src/reputation/nondelivery.js';
import type { DeriveOptions } from '../../../src/reputation/derive.js';
import { seal, T, type Opened, type Selection } from '../../../src/records/index.js';
import { closeDb, openDb } from '../../../src/store/db.js';
import { RecordStore } from '../../../src/store/records.js';
import { MarketService } from '../../../src/node/market-service.js';
import { silentLogger } from '../../../src/util/log.js';
import { seededRandom } from '../../../src/net/faults.js';
import { NOW, P, acceptance, advert, job, offer, receipt, shuffle, type Party } from '../market/fixtures.js';

const ME = P(700);
const TRUSTED = P(701);
const STRANGER = P(702);
const PROVIDERS = [P(710), P(711), P(712), ME];
let nonce = 0;

/** Records of `jobs` jobs (seeded): receipts, verdicts, second receipts of a job, non-deliveries; each job's records in one list. */
function market(jobs: number, seed: number): Opened[][] {
  const rnd = seededRandom(seed);
  const pick = <X>(xs: readonly X[]): X => xs[Math.floor(rnd() * xs.length)]!;
  const out: Opened[][] = [];
  for (let i = 0; i < jobs; i++) {
    const provider = pick(PROVIDERS);
    const buyer: Party = pick([ME, TRUSTED, STRANGER].filter((b) => b !== provider));
    const j = job(buyer, { nonce: new Uint8Array([nonce & 0xff, (nonce++ >> 8) & 0xff, seed]) });
    const o = offer(provider, j, advert(provider), { durationMs: 60_000 });
    const recs: Opened[] = [];
    if (rnd() < 0.15) {
      const s = seal(T.selection, { job: j.address, buyer: buyer.did, policy: 'trusted', winner: o.address, considered: [{ provider: provider.did, offer: o.address }], decidedAt: NOW }, buyer.signer) as Opened<Selection>;
      recs.push(signNonDelivery({ job: j, selection: s, offer: o, reason: 'unreachable', signedAt: NOW + 1000, signer: buyer.signer }));
    } else {
      const r = receipt(provider, buyer, o, { status: rnd() < 0.2 ? 'failed' : 'completed', completedAt: NOW + 10_000 + Math.floor(rnd() * 100_000) });
      recs.push(o, r);
      const v = rnd();
      if (r.record.status === 'completed' && v < 0.7) recs.push(acceptance(buyer, r, 'accepted'));
      else if (r.record.status === 'completed' && v < 0.8) recs.push(acceptance(buyer, r, 'disputed'));
      if (rnd() < 0.1) recs.push(receipt(provider, buyer, o, { status: 'failed', completedAt: NOW + 5_000 }));
    }
    out.push(recs);
  }
  return out;
}

const VIEWS: Array<[string, DeriveOptions]> = [
  ['first-hand only', { self: ME.did }],
  ['a trusted buyer', { self: ME.did, trust: { trustedBuyers: [TRUSTED.did] } }],
  ['a trusted buyer and dealt-with buyers', { self: ME.did, trust: { trustedBuyers: [TRUSTED.did], dealtWith: true, secondHandWeight: 0.4 } }],
];

for (const [name, opts] of VIEWS) {
  test(`the view after every record, in any order, equals a derivation over all held (${name}); only the concerned providers are derived again`, async () => {
    for (const seed of [1, 2, 3]) {
      const records = shuffle(market(40, seed).flat(), seed);
      const store = new EvidenceStore();
      const view = new LiveReputation(store, opts);
      assert.deepEqual(view.get().all(), []);
      let fullBefore = view.full;
      for (const r of records) {
        if ((await store.add(r)) === 0) continue;
        view.added([r]);
        assert.deepEqual(view.get().all(), store.derive(opts).all(), `seed ${seed}: after ${r.type} ${r.address}`);
        const ownProviding = (r.type === T.receipt && (r.record as { provider: string }).provider === ME.did) || (r.type === T.acceptance && store.receipts.get((r.record as { receipt: string }).receipt)?.record.provider === ME.did);
        if (!(opts.trust?.dealtWith && ownProviding)) assert.equal(view.full, fullBefore, `seed ${seed}: ${r.type} re-derived only its provider`);
        fullBefore = view.full;
      }
      assert.ok(view.partial > 0);
      // reading again without new evidence derives nothing
      const [f, p] = [view.full, view.partial];
      view.get();
      assert.deepEqual([view.full, view.partial], [f, p]);
    }
  });
}

test('the providers to derive again are derived together, in one pass; with dealtWith this node\'s own jobs as a provider are taken once, not per provider', async () => {
  const deal = (provider: Party, buyer: Party): Opened[] => {
    const j = job(buyer, { nonce: new Uint8Array([nonce & 0xff, (nonce++ >> 8) & 0xff, 200]) });
    const o = offer(provider, j, advert(provider));
    const r = receipt(provider, buyer, o);
    return [o, r, acceptance(buyer, r, 'accepted')];
  };
  for (const dealtWith of [false, true]) {
    const opts: DeriveOptions = { self: ME.did, trust: { trustedBuyers: [TRUSTED.did], dealtWith } };
    const store = new EvidenceStore();
    // this node's own jobs as a provider are most of what is held
    for (let i = 0; i < 20; i++) await store.add(...deal(ME, TRUSTED));
    await store.add(...deal(P(710), TRUSTED), ...deal(P(711), STRANGER));
    const view = new LiveReputation(store, opts);
    view.get();
    const batch = [...deal(P(710), STRANGER), ...deal(P(711), TRUSTED)];
    await store.add(...batch);
    view.added(batch);
    const [full, partial] = [view.full, view.partial];
    assert.deepEqual(view.get().all(), store.derive(opts).all());
    assert.deepEqual([view.full - full, view.partial - partial], [0, 1], 'one derivation of the two providers');
    // what it walks: their 2 receipts each, and this node's own 20 once with dealtWith (not once per provider)
    const ev = store.evidenceFor([P(710).did, P(711).did], dealtWith ? [ME.did] : []);
    assert.equal([...ev.receipts].length, dealtWith ? 24 : 4);
  }
});

test('an eviction: the whole view is derived again at its next read, and equals a derivation over what is left', async () => {
  const opts: DeriveOptions = { self: ME.did, trust: { trustedBuyers: [TRUSTED.did] } };
  const ref: { view?: LiveReputation } = {};
  let evicted = 0;
  const store = new EvidenceStore(undefined, { max: 40, self: ME.did, trusted: [TRUSTED.did], onEvict: (n) => ((evicted += n), ref.view?.reset()) });
  const view = (ref.view = new LiveReputation(store, opts));
  view.get();
  let rounds = 0;
  for (const recs of market(40, 9)) {
    const [was, full] = [evicted, view.full];
    await store.add(...recs);
    view.added(recs);
    assert.deepEqual(view.get().all(), store.derive(opts).all());
    if (evicted > was) {
      assert.equal(view.full, full + 1, 'an eviction: all derived again');
      rounds++;
    } else assert.equal(view.full, full, 'no eviction: only the concerned providers');
  }
  assert.ok(rounds > 0);
  assert.ok(evicted > 0, 'the bound was passed');
});

test('a MarketService: its view follows addEvidence at once, an outcome of any buyer it counts', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-rep-view-'));
  const db = await openDb(join(dir, 'db'));
  try {
    const prov = P(720);
    const records = await RecordStore.open(db);
    const market = await MarketService.open({ db, prefix: '', records, now: NOW, clock: () => NOW, log: silentLogger(), signer: ME.signer, did: ME.did, skewMs: 30_000, trust: { trustedBuyers: [TRUSTED.did], secondHandWeight: 0.5 } });
    const ad = advert(prov);
    const outcome = async (buyer: Party, status: 'completed' | 'failed') => {
      const r = receipt(prov, buyer, offer(prov, job(buyer, { nonce: new Uint8Array([nonce++ & 0xff, 77]) }), ad), { status });
      await market.addEvidence(r);
      // a buyer countersigns a failed receipt too (src/roles/buyer.ts): this node's own failure is first-hand with it
      await market.addEvidence(acceptance(buyer, r, 'accepted'));
    };
    assert.equal(market.reputation().get(prov.did).jobs, 0);
    await outcome(TRUSTED, 'completed');
    assert.deepEqual([market.reputation().get(prov.did).successes, market.reputation().get(prov.did).secondHand], [0.5, 0.5], 'a trusted buyer\u2019s success, at once');
    await outcome(ME, 'failed');
    const f = market.reputation().get(prov.did);
    assert.deepEqual([f.failures, f.firstHand, f.jobs], [1, 1, 1.5], 'this node\u2019s own failure, at once');
    await outcome(STRANGER, 'completed');
    assert.equal(market.reputation().get(prov.did).untrusted, 1, 'held, not counted');
    assert.deepEqual(market.reputation().all(), market.evidence.derive({ self: ME.did, trust: { trustedBuyers: [TRUSTED.did], secondHandWeight: 0.5 } }).all());
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a MarketService: its view follows evictions past its bound, and a store reopened with evidence in it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-rep-view-'));
  const path = join(dir, 'db');
  const trust = { trustedBuyers: [TRUSTED.did], secondHandWeight: 0.5 };
  const openMarket = async (db: Awaited<ReturnType<typeof openDb>>) =>
    MarketService.open({ db, prefix: '', records: await RecordStore.open(db), now: NOW, clock: () => NOW, log: silentLogger(), signer: ME.signer, did: ME.did, skewMs: 30_000, trust, maxEvidence: 30 });
  const others = PROVIDERS.filter((p) => p !== ME);
  const outcome = (i: number): Opened[] => {
    const provider = others[i % others.length]!;
    const buyer = i % 3 === 0 ? STRANGER : TRUSTED;
    const r = receipt(provider, buyer, offer(provider, job(buyer, { nonce: new Uint8Array([i & 0xff, 99]) }), advert(provider)), { status: i % 4 === 0 ? 'failed' : 'completed', completedAt: NOW + 10_000 + i });
    return i % 4 === 0 ? [r] : [r, acceptance(buyer, r, 'accepted')];
  };
  let db = await openDb(path);
  try {
    let market = await openMarket(db);
    let held = 0;
    for (let i = 0; i < 30; i++) {
      for (const r of outcome(i)) await market.addEvidence(r as never);
      assert.deepEqual(market.reputation().all(), market.evidence.derive({ self: ME.did, trust }).all(), `after outcome ${i}`);
      held = Math.max(held, market.evidence.size);
    }
    assert.ok(market.evidence.size <= 30 && held > 0, 'evictions kept the bound');
    await closeDb(db);
    // reopened: the store's indexes are rebuilt from disk, and the view follows the next records
    db = await openDb(path);
    market = await openMarket(db);
    assert.deepEqual(market.reputation().all(), market.evidence.derive({ self: ME.did, trust }).all());
    for (let i = 30; i < 36; i++) {
      for (const r of outcome(i)) await market.addEvidence(r as never);
      assert.deepEqual(market.reputation().all(), market.evidence.derive({ self: ME.did, trust }).all(), `reopened, after outcome ${i}`);
    }
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});


for (const [name, opts] of VIEWS) {
  test(`the view as of a time equals a derivation over all held as of it, the audit's rule (${name})`, async () => {
    for (const seed of [4, 5]) {
      const store = new EvidenceStore();
      const view = new LiveReputation(store, opts);
      const records = market(40, seed).flat();
      await store.add(...records);
      view.added(records);
      view.get();
      for (const at of [NOW - 1, NOW + 5_000, NOW + 20_000, NOW + 40_000, NOW + 70_000, NOW + 200_000]) {
        assert.deepEqual(view.asOf(at).all(), store.derive({ ...opts, asOf: at }).all(), `seed ${seed}, as of NOW + ${at - NOW}`);
      }
      // nothing dated later: the live view itself
      assert.equal(view.asOf(NOW + 10_000_000), view.get());
    }
  });
}

/** The providers with evidence dated after `at`, by a pass over everything held (what the store's index must answer). */
function lateByScan(store: EvidenceStore, at: number): string[] {
  const out = new Set<string>();
  for (const r of store.receipts.values()) if (r.record.completedAt > at) out.add(r.record.provider);
  for (const n of store.nondeliveries.values()) if (n.record.signedAt > at) out.add(n.record.provider);
  for (const a of store.acceptances.values()) {
    const r = store.receipts.get(a.record.receipt);
    if (a.record.signedAt > at && r) out.add(r.record.provider);
  }
  return [...out].sort();
}

test('the index of evidence dated after the store\u2019s clock: exact as the clock passes it, for any `at`, and rebuilt on open', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-rep-late-'));
  const path = join(dir, 'db');
  let clock = NOW;
  const opts: DeriveOptions = { self: ME.did, trust: { trustedBuyers: [TRUSTED.did], dealtWith: true, secondHandWeight: 0.4 } };
  const bound = { max: 100_000, self: ME.did, clock: () => clock };
  const check = (store: EvidenceStore, view: LiveReputation, label: string) => {
    for (const at of [clock - 60_000, clock - 1, clock, clock + 15_000, clock + 60_000]) {
      assert.deepEqual([...store.providersWithEvidenceAfter(at)].sort(), lateByScan(store, at), `${label}, at clock + ${at - clock}`);
      assert.deepEqual(view.asOf(at).all(), store.derive({ ...opts, asOf: at }).all(), `${label}, as of clock + ${at - clock}`);
    }
  };
  let db = await openDb(path);
  try {
    let store = await EvidenceStore.open(db, 'reputation-evidence', bound);
    let view = new LiveReputation(store, opts);
    // records dated NOW - 5 s and NOW + 1 s … NOW + 110 s arrive at NOW
    const records = market(40, 6).flat();
    const old = receipt(P(710), TRUSTED, offer(P(710), job(TRUSTED), advert(P(710))), { startedAt: NOW - 60_000, completedAt: NOW - 5_000 });
    await store.add(...records, old);
    view.get();
    const dated = (t: number) => [...store.receipts.values(), ...store.acceptances.values(), ...store.nondeliveries.values()].filter((r) => (r.type === T.receipt ? (r.record as { completedAt: number }).completedAt : (r.record as { signedAt: number }).signedAt) > t).length;
    assert.equal(store.lateHeld, dated(NOW), 'the records dated after the clock at arrival, and only those');
    assert.ok(store.lateHeld > 0 && store.lateHeld < store.size);
    check(store, view, 'at NOW');
    // time passes: records the clock passed leave the index, answers stay exact
    for (const t of [NOW + 20_000, NOW + 70_000, NOW + 200_000]) {
      clock = t;
      check(store, view, `clock NOW + ${t - NOW}`);
      assert.equal(store.lateHeld, dated(t), `clock NOW + ${t - NOW}: the index holds only what is still ahead`);
    }
    assert.equal(store.lateHeld, 0);
    assert.equal(view.asOf(clock), view.get(), 'nothing ahead: the live view');
    await closeDb(db);
    // reopened earlier (a clock stepped back, or a restart of a node whose evidence is ahead): rebuilt from disk
    clock = NOW + 50_000;
    db = await openDb(path);
    store = await EvidenceStore.open(db, 'reputation-evidence', bound);
    view = new LiveReputation(store, opts);
    view.get();
    assert.equal(store.lateHeld, dated(clock), 'reopened: the index is rebuilt');
    check(store, view, 'reopened at NOW + 50 s');
    clock = NOW + 90_000;
    check(store, view, 'reopened, then NOW + 90 s');
  } finally {
    await closeDb(db);
    rmSync(dir, { recursive: true, force: true });
  }
});

test('with dealtWith, this node\u2019s own job as a provider accepted with a date far ahead: the view as of now derives only the providers its buyer\u2019s outcomes are about', async () => {
  const opts: DeriveOptions = { self: ME.did, trust: { trustedBuyers: [TRUSTED.did], dealtWith: true, secondHandWeight: 0.4 } };
  const store = new EvidenceStore(undefined, { max: 100_000, self: ME.did, dealtWith: true, clock: () => NOW + 200_000 });
  const records = market(40, 7).flat();
  await store.add(...records);
  const view = new LiveReputation(store, opts);
  view.get();
  const X = P(730);
  const o = offer(ME, job(X), advert(ME));
  const r = receipt(ME, X, o, { completedAt: NOW });
  const late = acceptance(X, r, 'accepted', { signedAt: NOW + 365 * 86_400_000 });
  await store.add(o, r, late);
  view.added([o, r, late]);
  view.get();
  assert.deepEqual([...store.buyersOfWithEvidenceAfter(ME.did, NOW + 200_000)], [X.did]);
  assert.deepEqual([...store.providersBoughtBy([X.did])], [ME.did], 'X bought only from this node');
  assert.deepEqual(view.asOf(NOW + 200_000).all(), store.derive({ ...opts, asOf: NOW + 200_000 }).all());
});
