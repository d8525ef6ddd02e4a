import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { TRUST_SCORE, WEIGHTS, compareRanked, ratioScore, reputationFromMap, select, type Selected } from '../../../src/market/index.js';
import { open, T, sealRaw, encodeCanonical, POLICIES } from '../../../src/records/index.js';
import { GiB, NOW, P, advert, job, offer, shuffle } from './fixtures.js';
import { codeOf } from '../../../src/errors.js';

const J = job(P(100));
const ok = (r: ReturnType<typeof select>): Selected => {
  assert.ok(r.ok, 'expected a winner');
  return r as Selected;
};

test('the spec weight table', () => {
  assert.deepEqual(WEIGHTS.cheapest, { price: 1, speed: 0, reputation: 0, trust: 0 });
  assert.deepEqual(WEIGHTS.balanced, { price: 0.4, speed: 0.2, reputation: 0.4, trust: 0 });
  assert.deepEqual(WEIGHTS.fastest, { price: 0, speed: 1, reputation: 0, trust: 0 });
  assert.deepEqual(WEIGHTS.trusted, { price: 0.2, speed: 0, reputation: 0.5, trust: 0.3 });
  assert.deepEqual(WEIGHTS.private, { price: 0.2, speed: 0, reputation: 0.3, trust: 0.5 });
  assert.deepEqual(TRUST_SCORE, { community: 0, standard: 0.4, verified: 0.8, private: 1, enterprise: 1 });
});

test('proportional scoring: an offer 20% dearer than the best scores 0.8333…, whatever the scale', () => {
  for (const [best, dear] of [
    ['0.05', '0.06'],
    ['1000', '1200'],
  ]) {
    const jj = job(P(100), { maxPrice: { amount: '5000', currency: 'USD' } });
    const a1 = advert(P(1));
    const a2 = advert(P(2));
    const r = ok(select({ job: jj, adverts: [a1, a2], offers: [offer(P(1), jj, a1, { amount: best! }), offer(P(2), jj, a2, { amount: dear! })], policy: 'cheapest', now: NOW }));
    const d = r.ranked.find((x) => x.provider === P(2).did)!;
    assert.ok(Math.abs(d.scores.price - 1 / 1.2) < 1e-12, `${d.scores.price}`);
    assert.equal(r.winner.provider, P(1).did);
    assert.equal(r.winner.scores.price, 1);
  }
  assert.equal(ratioScore(5, 6).toFixed(4), '0.8333');
  assert.equal(ratioScore(0, 0), 1);
});

test('not min–max: with two offers a one-cent gap does not dominate reputation under balanced', () => {
  const a1 = advert(P(1));
  const a2 = advert(P(2));
  const cheapFlaky = offer(P(1), J, a1, { amount: '0.99' });
  const reliable = offer(P(2), J, a2, { amount: '1' });
  const rep = reputationFromMap(new Map([[P(1).did, 0.1], [P(2).did, 0.9]]));
  const r = ok(select({ job: J, adverts: [a1, a2], offers: [cheapFlaky, reliable], reputation: rep, now: NOW }));
  assert.equal(r.winner.provider, P(2).did);
  assert.match(r.why, /reputation/);
  assert.match(r.why, /despite being 1% dearer/);
});

test('why: a winner dearer than a free offer says so, not "Infinity% dearer"', () => {
  const a1 = advert(P(1));
  const a2 = advert(P(2));
  const free = offer(P(1), J, a1, { amount: '0', durationMs: 500_000 });
  const paid = offer(P(2), J, a2, { amount: '0.1', durationMs: 10_000 });
  const rep = reputationFromMap(new Map([[P(1).did, 0.02], [P(2).did, 0.9]]));
  const r = ok(select({ job: J, adverts: [a1, a2], offers: [free, paid], reputation: rep, now: NOW }));
  assert.equal(r.winner.provider, P(2).did);
  assert.equal(r.winner.scores.price, 0);
  assert.doesNotMatch(r.why, /Infinity|NaN/);
  assert.match(r.why, /despite being dearer than a free offer \(0\.1 vs 0 USD\)/);
});

test('each policy picks by its own dimensions; trust scores by tier', () => {
  const a1 = advert(P(1), { tier: 'community' });
  const a2 = advert(P(2), { tier: 'verified' });
  const a3 = advert(P(3), { tier: 'enterprise' });
  const cheap = offer(P(1), J, a1, { amount: '0.1', durationMs: 90_000 });
  const fast = offer(P(2), J, a2, { amount: '0.5', durationMs: 10_000 });
  const trusted = offer(P(3), J, a3, { amount: '0.4', durationMs: 60_000 });
  const input = { job: J, adverts: [a1, a2, a3], offers: [cheap, fast, trusted], now: NOW };
  assert.equal(ok(select({ ...input, policy: 'cheapest' })).winner.provider, P(1).did);
  assert.equal(ok(select({ ...input, policy: 'fastest' })).winner.provider, P(2).did);
  const t = ok(select({ ...input, policy: 'trusted' }));
  assert.equal(t.winner.provider, P(3).did);
  assert.deepEqual(Object.fromEntries(t.ranked.map((x) => [x.tier, x.scores.trust])), { community: 0, verified: 0.8, enterprise: 1 });
  // totals are the weighted sums
  for (const x of t.ranked) assert.ok(Math.abs(x.total - (0.2 * x.scores.price + 0.5 * x.scores.reputation + 0.3 * x.scores.trust)) < 1e-12);
  // unknown reputation is exactly 0.5
  assert.ok(t.ranked.every((x) => x.scores.reputation === 0.5));
});

test('private refuses a job without an allowlist; with one it selects', () => {
  const a1 = advert(P(1), { tier: 'private' });
  const o = offer(P(1), J, a1);
  assert.throws(() => select({ job: J, adverts: [a1], offers: [o], policy: 'private', now: NOW }), { code: 'POLICY_PRIVATE_NEEDS_ALLOWLIST' });
  const jp = job(P(100), { requirements: { allowlist: [P(1).did], tier: 'private' } });
  const r = ok(select({ job: jp, adverts: [a1], offers: [offer(P(1), jp, a1)], policy: 'private', now: NOW }));
  assert.equal(r.winner.provider, P(1).did);
  assert.match(r.why, /the only eligible offer/);
  // the winner named in the short form the CLI and the console show everywhere, 8 + 4 key characters (QA s49: `did:key:z6Mkru…C8xemA`)
  assert.ok(r.why.startsWith(`${P(1).did.slice(12, 20)}…${P(1).did.slice(-4)} wins under private`), r.why);
  assert.throws(() => select({ job: J, adverts: [], offers: [], policy: 'nope', now: NOW }), { code: 'POLICY_UNKNOWN' });
});

test('ties break by DID, and the candidates are ranked deterministically', () => {
  const ps = [P(1), P(2), P(3), P(4)];
  const ads = ps.map((p) => advert(p));
  const offers = ps.map((p, i) => offer(p, J, ads[i]!, { amount: '0.5' }));
  const r = ok(select({ job: J, adverts: ads, offers, now: NOW }));
  assert.deepEqual(r.ranked.map((x) => x.provider), ps.map((p) => p.did).sort());
  assert.match(r.why, /tied with .* the lower DID breaks the tie/);
});

test('property: selection does not depend on the order offers and adverts arrive in', () => {
  const ps = [P(1), P(2), P(3), P(4), P(5)];
  const ads = ps.map((p, i) => advert(p, { tier: (['community', 'standard', 'verified', 'private', 'enterprise'] as const)[i]! }));
  const all = ps.flatMap((p, i) => ['0.3', '0.30', '0.45', '0.5'].map((amount, k) => offer(p, J, ads[i]!, { amount, durationMs: 20_000 + 10_000 * ((i + k) % 3), issuedAt: NOW - 1000 - k })));
  const rep = reputationFromMap(new Map(ps.map((p, i) => [p.did, [0.2, 0.5, 0.7, 0.9, 0.5][i]!])));
  fc.assert(
    fc.property(fc.shuffledSubarray(all, { minLength: 1 }), fc.integer(), fc.constantFrom(...POLICIES.filter((p) => p !== 'private')), (subset, seed, policy) => {
      const a = select({ job: J, adverts: ads, offers: subset, policy, reputation: rep, now: NOW });
      const b = select({ job: J, adverts: shuffle(ads, seed + 1), offers: shuffle(subset, seed), policy, reputation: rep, now: NOW });
      assert.deepEqual(JSON.parse(JSON.stringify(a)), JSON.parse(JSON.stringify(b)));
    }),
    { numRuns: 150 },
  );
});

test('an empty market comes with an explanation instead of a winner', () => {
  const j = job(P(100), { requirements: { gpu: { count: 1, vramMiB: 24 * GiB } } });
  const small = (p: typeof P extends (n: number) => infer R ? R : never) => advert(p, { hardware: { gpus: [{ model: 'x', vramMiB: 12 * GiB, count: 2 }] } });
  const ads = [small(P(1)), small(P(2))];
  const r = select({ job: j, adverts: ads, offers: [offer(P(1), j, ads[0]!)], now: NOW });
  assert.equal(r.ok, false);
  if (r.ok) return;
  assert.equal(r.explanation.known, 2);
  assert.match(r.explanation.summary, /no provider has 24 GiB of VRAM on one card/);
});

test('hostile inputs: a tampered advert claiming more VRAM and a tampered price are refused with codes; a re-pointed offer cannot win', () => {
  const a = advert(P(1), { hardware: { gpus: [{ model: 'x', vramMiB: 12 * GiB, count: 1 }] } });
  // re-encode the advert's payload with more VRAM, keep the signature
  const tamper = (bytes: Uint8Array, from: Uint8Array, to: Uint8Array): Uint8Array => {
    const hex = Buffer.from(bytes).toString('hex');
    const f = Buffer.from(from).toString('hex');
    assert.ok(hex.includes(f));
    return new Uint8Array(Buffer.from(hex.replace(f, Buffer.from(to).toString('hex')), 'hex'));
  };
  const vram = tamper(a.bytes, encodeCanonical({ vramMiB: 12 * GiB }).subarray(1), encodeCanonical({ vramMiB: 48 * GiB }).subarray(1));
  assert.equal(codeOf(() => open(vram, T.advert)), 'ENVELOPE_BAD_SIGNATURE');
  const o = offer(P(1), J, a, { amount: '0.9' });
  const cheaper = tamper(o.bytes, new TextEncoder().encode('0.9'), new TextEncoder().encode('0.1'));
  assert.equal(codeOf(() => open(cheaper, T.offer)), 'ENVELOPE_BAD_SIGNATURE');
  // an offer for another job re-pointed at J: the signature breaks
  const other = job(P(100), { nonce: new Uint8Array([9]) });
  const o2 = offer(P(1), other, a);
  const repointed = tamper(o2.bytes, Buffer.from(other.address.slice(7), 'hex'), Buffer.from(J.address.slice(7), 'hex'));
  assert.equal(codeOf(() => open(repointed, T.offer)), 'ENVELOPE_BAD_SIGNATURE');
  // a validly signed offer for another job presented for J never counts for J
  const r = select({ job: J, adverts: [a], offers: [o2], now: NOW });
  assert.equal(r.ok, false);
  // an advert signed by someone else cannot be borrowed by an offer
  const big = advert(P(2));
  const borrow = offer(P(1), J, big);
  const r2 = select({ job: J, adverts: [big], offers: [borrow], now: NOW });
  assert.equal(r2.ok, false);
  assert.deepEqual(r2.ineligible[0]!.failures.map((f) => f.code), ['ADVERT_NOT_PROVIDERS']);
  // a raw envelope with a forged payload under someone else's key
  const forged = sealRaw(T.advert, new Uint8Array([0xa0]), P(3).signer);
  assert.ok(codeOf(() => open(forged, T.advert)));
  assert.throws(() => select({ job: J, adverts: [], offers: [a as never], now: NOW }), { code: 'MARKET_NOT_AN_OFFER' });
  assert.throws(() => select({ job: a as never, adverts: [], offers: [], now: NOW }), { code: 'MARKET_NOT_A_JOB' });
});

test('a large market (past the linear-time ranking threshold) ranks exactly as compareRanked sorts: total descending, ties by DID', () => {
  const ps = Array.from({ length: 300 }, (_, i) => P(1000 + i));
  const ads = ps.map((p, i) => advert(p, { tier: (['standard', 'verified', 'enterprise'] as const)[i % 3]! }));
  // few distinct prices and durations: many exact ties
  const offers = ps.map((p, i) => offer(p, J, ads[i]!, { amount: ['0.3', '0.4', '0.5'][i % 3]!, durationMs: 20_000 + 10_000 * (i % 4) }));
  const rep = reputationFromMap(new Map(ps.map((p, i) => [p.did, (i % 5) / 4])));
  for (const policy of POLICIES.filter((x) => x !== 'private')) {
    const r = ok(select({ job: J, adverts: ads, offers, policy, reputation: rep, now: NOW }));
    assert.equal(r.ranked.length, 300);
    assert.deepEqual(r.ranked.map((x) => x.provider), [...r.ranked].sort(compareRanked).map((x) => x.provider), policy);
    assert.deepEqual(r.ranked.map((x) => x.rank), r.ranked.map((_, i) => i + 1));
  }
});
