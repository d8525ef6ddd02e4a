import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { explainMarket, type MarketExplanation } from '../../../src/market/index.js';
import { applyChange, describeChange, type JobChange } from '../../../src/market/relax.js';
import type { Job, Opened } from '../../../src/records/index.js';
import { GiB, NOW, P, advert, job, offer } from './fixtures.js';
import { ADVERTS, JOBS, OFFERS } from './market-pool.js';

const twelve = { gpus: [{ model: 'RTX', vramMiB: 12 * GiB, count: 2 }] };
const big = { gpus: [{ model: 'A100', vramMiB: 80 * GiB, count: 2 }] };

test('nobody has 24 GiB on one card: the sentence says so, and counts which requirements bind', () => {
  const j = job(P(100), { requirements: { gpu: { count: 1, vramMiB: 24 * GiB } } });
  const ads = [1, 2, 3].map((n) => advert(P(n), { hardware: twelve }));
  const e = explainMarket({ job: j, adverts: ads, offers: ads.map((a, i) => offer(P(i + 1), j, a)), now: NOW });
  assert.equal(e.known, 3);
  assert.equal(e.eligible, 0);
  assert.equal(e.counts.GPU_VRAM_TOO_SMALL, 3);
  assert.deepEqual(e.binding, [{ constraint: 'gpu', failing: 3, meeting: 0 }]);
  assert.match(e.summary, /^No provider is eligible among 3 known: no provider has 24 GiB of VRAM on one card\./);
  assert.deepEqual(e.relaxations.map((r) => [r.constraint, r.gain, r.quoted]), [['gpu', 3, 3]]);
});

test('six providers have the GPUs but none disclosed a region: the cascade and the relaxation say so', () => {
  const j = job(P(100), { requirements: { gpu: { count: 2, vramMiB: 24 * GiB }, regions: ['eu-west'] } });
  const ads = [
    ...[1, 2, 3, 4, 5, 6].map((n) => advert(P(n), { hardware: big, region: undefined })),
    advert(P(7), { hardware: twelve, region: 'eu-west' }),
  ];
  const e = explainMarket({ job: j, adverts: ads, offers: ads.slice(0, 4).map((a, i) => offer(P(i + 1), j, a)), now: NOW });
  assert.equal(e.known, 7);
  assert.equal(e.counts.REGION_UNDISCLOSED, 6);
  assert.equal(e.counts.OFFER_MISSING, 3);
  assert.match(e.summary, /6 of 7 have 2 GPUs with 24 GiB each; but none of them disclosed a region in eu-west/);
  const region = e.relaxations.find((r) => r.constraint === 'region')!;
  assert.equal(region.gain, 6);
  assert.equal(region.quoted, 4);
  assert.equal(region.text, 'drop the region constraint → 6 more providers (2 of them have not quoted yet)');
  assert.match(e.summary, /To widen the market: drop the region constraint → 6 more providers/);
  // providers in DID order, every failure listed
  assert.deepEqual(e.providers.map((p) => p.provider), [...e.providers.map((p) => p.provider)].sort());
});

test('expired adverts are reported as expired, not silently dropped', () => {
  const j = job(P(100));
  const old = advert(P(1), { issuedAt: NOW - 7_200_000, expiresAt: NOW - 1000 });
  const e = explainMarket({ job: j, adverts: [old], offers: [], now: NOW });
  assert.deepEqual(e.expired, [P(1).did]);
  assert.equal(e.counts.ADVERT_EXPIRED, 1);
  assert.match(e.summary, /1 advert has expired/);
});

test('an unknown market and a thin one', () => {
  const j = job(P(100), { requirements: { tier: 'verified' } });
  assert.match(explainMarket({ job: j, adverts: [], offers: [], now: NOW }).summary, /No provider is known yet/);
  const a1 = advert(P(1), { tier: 'verified' });
  const a2 = advert(P(2), { tier: 'community' });
  const e = explainMarket({ job: j, adverts: [a1, a2], offers: [offer(P(1), j, a1), offer(P(2), j, a2)], now: NOW });
  assert.equal(e.eligible, 1);
  assert.match(e.summary, /^1 of 2 known providers are eligible: 1 of 2 claims tier verified or above\./);
  assert.deepEqual(e.relaxations.map((r) => r.text), ['accept tier community → 1 more provider']);
});

test('price binding: maxPrice is compared exactly and relaxing it is offered', () => {
  const j = job(P(100), { maxPrice: { amount: '0.10', currency: 'USD' } });
  const a1 = advert(P(1));
  const a2 = advert(P(2));
  const e = explainMarket({ job: j, adverts: [a1, a2], offers: [offer(P(1), j, a1, { amount: '0.9' }), offer(P(2), j, a2, { amount: '0.05', currency: 'EUR' })], now: NOW });
  assert.equal(e.counts.OFFER_OVER_MAX_PRICE, 1);
  assert.equal(e.counts.OFFER_CURRENCY_MISMATCH, 1);
  // the EUR offer is judged on its currency, the USD one on its price
  assert.match(e.summary, /1 of 2 quotes in USD; but it asks more than 0.10 USD/);
  assert.deepEqual(e.relaxations[0]!.constraint, 'price');
  assert.equal(e.relaxations[0]!.text, 'raise maxPrice to 0.9 USD → 1 more provider');
});

// ---------------------------------------------------------------------------
// Hints name the value, and each is what relaxing and re-running gives (issue #11)
// ---------------------------------------------------------------------------

test('a currency mismatch is not relaxable by price: the maxPrice hint counts only offers in the job currency', () => {
  const j = job(P(100), { maxPrice: { amount: '0.10', currency: 'USD' } });
  const ads = [1, 2, 3].map((n) => advert(P(n)));
  const offers = [offer(P(1), j, ads[0]!, { amount: '0.15' }), offer(P(2), j, ads[1]!, { amount: '0.30' }), offer(P(3), j, ads[2]!, { amount: '0.05', currency: 'EUR' })];
  const e = explainMarket({ job: j, adverts: ads, offers, now: NOW });
  assert.deepEqual(e.relaxations.map((r) => r.text), ['raise maxPrice to 0.30 USD → 2 more providers', 'raise maxPrice to 0.15 USD → 1 more provider']);
  assert.ok(e.binding.some((b) => b.constraint === 'currency' && b.failing === 1));
  // after raising to the highest, the EUR provider is still not eligible and no hint names price
  const raised = explainMarket({ job: relaxed(j, e.relaxations[0]!.change), adverts: ads, offers, now: NOW });
  assert.equal(raised.eligible, 2);
  assert.deepEqual(raised.relaxations, []);
});

test('hints name the value: tier, memory; a provider failing two relaxable constraints gets a combined hint', () => {
  const j = job(P(100), { requirements: { tier: 'verified', memoryMiB: 64 * GiB } });
  const a1 = advert(P(1), { tier: 'standard' });
  const a2 = advert(P(2), { tier: 'verified', hardware: { memoryMiB: 16 * GiB } });
  const a3 = advert(P(3), { tier: 'standard', hardware: { memoryMiB: 32 * GiB } });
  const offers = [offer(P(1), j, a1), offer(P(2), j, a2), offer(P(3), j, a3)];
  const e = explainMarket({ job: j, adverts: [a1, a2, a3], offers, now: NOW });
  const texts = e.relaxations.map((r) => r.text);
  assert.ok(texts.includes('accept tier standard → 1 more provider'), texts.join(' | '));
  assert.ok(texts.includes('ask for ≤ 16 GiB memory → 1 more provider'), texts.join(' | '));
  // the combined hint admits the provider failing both, and those failing either alone within the values
  assert.ok(texts.includes('accept tier standard and ask for ≤ 32 GiB memory → 2 more providers'), texts.join(' | '));
});

test('summary: the only offer expired is said as such, not "no provider has quoted"', () => {
  const j = job(P(100));
  const a = advert(P(1));
  const e = explainMarket({ job: j, adverts: [a], offers: [offer(P(1), j, a, { expiresAt: NOW - 1 })], now: NOW });
  assert.doesNotMatch(e.summary, /quoted/);
  assert.match(e.summary, /no provider has a live offer for this job\. 1 offer has expired\./);
});

test('summary: "but it …" reads forwards, and a provider with no offer is not counted as within the cap', () => {
  const j = job(P(100), { maxPrice: { amount: '0.10', currency: 'USD' } });
  const live = advert(P(1));
  const gone = advert(P(2), { issuedAt: NOW - 7_200_000, expiresAt: NOW - 1000 });
  const e1 = explainMarket({ job: j, adverts: [live, gone], offers: [], now: NOW });
  assert.match(e1.summary, /1 of 2 has a live advert; but it has no live offer for this job\./);
  // two live providers, one quoting over the cap, one silent: the silent one is not "within" the cap
  const a2 = advert(P(2));
  const e2 = explainMarket({ job: j, adverts: [live, a2], offers: [offer(P(1), j, live, { amount: '0.5' })], now: NOW });
  assert.doesNotMatch(e2.summary, /1 of 2 asks? at most/);
  assert.match(e2.summary, /1 of 2 has a live offer for this job; but it asks more than 0.10 USD/);
});

function relaxed(j: Opened<Job>, change: JobChange): Opened<Job> {
  return { ...j, record: applyChange(j.record, change) };
}

/** Providers that fail nothing but not having quoted. */
function fitting(e: MarketExplanation): Set<string> {
  return new Set(e.providers.filter((v) => v.failures.every((f) => f.code === 'OFFER_MISSING')).map((v) => v.provider));
}

for (const [name, maxOffers] of [['', undefined], [' (few offers: most providers judged on their asks)', 6]] as const) test(`property: every hint is exact — applying its change and re-running admits exactly \`gain\` more providers${name}`, () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: JOBS.length - 1 }),
      fc.shuffledSubarray(ADVERTS),
      fc.shuffledSubarray(OFFERS.flat(), maxOffers === undefined ? {} : { maxLength: maxOffers }),
      fc.constantFrom(NOW, NOW + 30_000),
      (ji, adverts, offers, now) => {
        const j = JOBS[ji]!;
        const e = explainMarket({ job: j, adverts, offers, now });
        const before = fitting(e);
        for (const r of e.relaxations) {
          assert.ok(r.gain > 0);
          assert.ok(r.constraints.every((c) => c !== 'currency' && c !== 'quote' && c !== 'advert' && c !== 'workload'));
          const after = explainMarket({ job: relaxed(j, r.change), adverts, offers, now });
          const now2 = fitting(after);
          for (const p of before) assert.ok(now2.has(p), 'relaxing never loses a provider');
          assert.equal(now2.size - before.size, r.gain, `${r.text}: gain`);
          const quotedGain = after.providers.filter((v) => !before.has(v.provider) && now2.has(v.provider) && v.offer !== undefined).length;
          assert.equal(quotedGain, r.quoted, `${r.text}: quoted`);
          assert.equal(after.eligible - e.eligible, r.quoted, `${r.text}: eligible`);
        }
      },
    ),
    { numRuns: 150 },
  );
});

test('a provider without an offer is judged on the advert live at `now`, not one it republished later', () => {
  const j = job(P(100));
  const a2 = advert(P(1), { seq: 2, issuedAt: NOW - 500, expiresAt: NOW + 1_800_000 });
  const a3 = advert(P(1), { seq: 3, issuedAt: NOW + 3_600_000, expiresAt: NOW + 7_200_000 });
  const e = explainMarket({ job: j, adverts: [a2, a3], offers: [], now: NOW });
  assert.deepEqual(e.providers.map((v) => [v.advert, v.failures.map((f) => f.code)]), [[a2.address, ['OFFER_MISSING']]]);
  // an hour and a half later, the republished advert is the live one
  const later = explainMarket({ job: j, adverts: [a2, a3], offers: [], now: NOW + 5_400_000 });
  assert.equal(later.providers[0]!.advert, a3.address);
});

test("a node that buys and provides is left out of its own job's explanation, and said to be, not OFFER_MISSING (QA qaOps F9)", () => {
  const j = job(P(1));
  const own = advert(P(1));
  const alone = explainMarket({ job: j, adverts: [own], offers: [], now: NOW });
  assert.equal(alone.known, 0);
  assert.deepEqual(alone.providers, []);
  assert.equal(alone.counts.OFFER_MISSING ?? 0, 0);
  assert.match(alone.summary, /^No provider but this node is known for .*: a node does not buy from itself\.$/);
  const other = advert(P(2));
  const two = explainMarket({ job: j, adverts: [own, other], offers: [offer(P(2), j, other)], now: NOW });
  assert.equal(two.known, 1);
  assert.deepEqual(two.providers.map((p) => p.provider), [P(2).did]);
  assert.match(two.summary, /This node's own advert is not counted: a node does not buy from itself\.\)$/);
});

test('the CPU wording: a requirement is a floor ("at least 4 CPU cores"), one core is singular, in the summary, a failure and a hint (QA qaWit F6)', () => {
  const j = job(P(100), { requirements: { cpuCores: 4 } });
  const one = advert(P(1), { hardware: { cpuCores: 1 } });
  const ads = [one, advert(P(2), { hardware: { cpuCores: 8 } })];
  const e = explainMarket({ job: j, adverts: ads, offers: [], now: NOW });
  assert.match(e.summary, /1 of 2 has at least 4 CPU cores/);
  const v = e.providers.find((p) => p.provider === one.signer)!;
  assert.ok(v.failures.some((f) => f.message === 'has 1 CPU core; the job needs 4'), JSON.stringify(v.failures));
  assert.match(describeChange(j.record, { cpuCores: 1 }), /^ask for ≤ 1 CPU core$/);
  assert.match(describeChange(j.record, { cpuCores: 2 }), /^ask for ≤ 2 CPU cores$/);
});

test('a hint says which providers it counts have no live presence, and puts the hints that admit live ones first (QA qaWit F5)', () => {
  const j = job(P(100), { requirements: { cpuCores: 16 } });
  const small = (n: number) => advert(P(n), { hardware: { cpuCores: n <= 3 ? 8 : 4 } });
  const ads = [1, 2, 3, 4].map(small);
  // P(1) and P(2) are live (8 cores), P(3) is not (8 cores); P(4) not live (4 cores)
  const live = new Set([P(1).did, P(2).did]);
  const e = explainMarket({ job: j, adverts: ads, offers: [], now: NOW, live: (d) => live.has(d) });
  const texts = e.relaxations.map((r) => r.text);
  assert.ok(texts.includes('ask for ≤ 8 CPU cores → 3 more providers (3 of them have not quoted yet, 1 of those with no live presence [NOT_LIVE])'), texts.join('\n'));
  assert.ok(texts.includes('ask for ≤ 4 CPU cores → 4 more providers (4 of them have not quoted yet, 2 of those with no live presence [NOT_LIVE])'), texts.join('\n'));
  // 2 live either way: the larger gain first, as without presence
  const none = explainMarket({ job: j, adverts: ads.slice(2), offers: [], now: NOW, live: () => false });
  assert.match(none.relaxations[0]!.text, /→ 2 more providers \(2 of them have not quoted yet, and none of them has a live presence \[NOT_LIVE\]\)$/);
  assert.equal(none.relaxations[0]!.notLive, 2);
  // without presence known, nothing is said of it
  const unknown = explainMarket({ job: j, adverts: ads, offers: [], now: NOW });
  assert.ok(unknown.relaxations.every((r) => r.notLive === undefined && !r.text.includes('NOT_LIVE')));
});
