import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AdvertIndex, checkEligibility, cmpAmount, advertFacts, evaluate, GATES, prepareJob, quickEligible, REASON, tierSatisfies } from '../../../src/market/index.js';
import { compareAmounts, T, TIERS, type Advert, type Job, type Offer, type Opened, type Tier } from '../../../src/records/index.js';
import { GiB, NOW, P, advert, job, offer } from './fixtures.js';
import { ADVERTS, JOBS, OFFERS } from './market-pool.js';

const codes = (fs: { code: string }[]) => fs.map((f) => f.code);

test('amounts compare exactly as decimals: "0.042" < "0.10", "0.9" > "0.10", "0.10" = "0.1"', () => {
  assert.equal(cmpAmount('0.042', '0.10'), -1);
  assert.equal(cmpAmount('0.9', '0.10'), 1);
  assert.equal(cmpAmount('0.10', '0.1'), 0);
  assert.equal(cmpAmount('10', '9.999'), 1);
  assert.equal(cmpAmount('0', '0.000000000000000000000000000001'), -1);
  // where a string comparison goes wrong
  const lexical = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  assert.equal(lexical('10', '9.5'), -1);
  assert.equal(cmpAmount('10', '9.5'), 1);
  assert.equal(lexical('0.10', '0.1'), 1);
  assert.equal(cmpAmount('0.10', '0.1'), 0);
});

test('cmpAmount agrees with decimal arithmetic on random amounts (property)', () => {
  const amount = fc.oneof(
    fc.tuple(fc.nat({ max: 1_000_000 }), fc.option(fc.stringMatching(/^[0-9]{1,30}$/), { nil: undefined })).map(([i, f]) => (f === undefined ? String(i) : `${i}.${f}`)),
    fc.constantFrom('0', '0.1', '0.10', '0.042', '0.9', '1', '1.000', '10'),
  );
  fc.assert(fc.property(amount, amount, (a, b) => cmpAmount(a, b) === compareAmounts(a, b)), { numRuns: 2000 });
});

test('an eligible provider has no failures; the offer may be absent (a provider deciding whether to quote)', () => {
  const j = job(P(100));
  const a = advert(P(1));
  assert.deepEqual(checkEligibility(j, a, offer(P(1), j, a), NOW), []);
  assert.deepEqual(checkEligibility(j, a, undefined, NOW), []);
});

test('gate 1: unknown advert, expired advert, advert of another provider', () => {
  const j = job(P(100));
  const a = advert(P(1));
  const o = offer(P(1), j, a);
  assert.deepEqual(codes(checkEligibility(j, undefined, o, NOW)), [REASON.ADVERT_UNKNOWN]);
  const old = advert(P(1), { issuedAt: NOW - 7_200_000, expiresAt: NOW - 1 });
  const f = checkEligibility(j, old, offer(P(1), j, old), NOW);
  assert.deepEqual(codes(f), [REASON.ADVERT_EXPIRED]);
  assert.equal(f[0]!.gate, 'advert');
  const other = advert(P(2));
  assert.deepEqual(codes(checkEligibility(j, other, o, NOW)), [REASON.ADVERT_NOT_PROVIDERS]);
});

test('gate 2: workload offered', () => {
  const j = job(P(100), { workload: 'infer.diffusion' });
  const f = checkEligibility(j, advert(P(1)), undefined, NOW);
  assert.deepEqual(codes(f), [REASON.WORKLOAD_NOT_OFFERED]);
  assert.equal(f[0]!.wanted, 'infer.diffusion');
  assert.deepEqual(f[0]!.offered, ['infer.llm']);
});

test('gate 3 comes before gate 4: the allowlist is checked before the tier, and both are reported', () => {
  const j = job(P(100), { requirements: { allowlist: [P(2).did], tier: 'verified' } });
  const f = checkEligibility(j, advert(P(1), { tier: 'community' }), undefined, NOW);
  assert.deepEqual(codes(f), [REASON.NOT_ON_ALLOWLIST, REASON.TIER_NOT_SATISFIED]);
  assert.deepEqual(f.map((x) => x.gate), ['allowlist', 'tier']);
  assert.equal(f[0]!.offered, P(1).did);
});

test('gate 4: private and enterprise exactly; the others at or above', () => {
  assert.ok(tierSatisfies('enterprise', 'verified'));
  assert.ok(tierSatisfies('verified', 'standard'));
  assert.ok(!tierSatisfies('standard', 'verified'));
  assert.ok(!tierSatisfies('enterprise', 'private'));
  assert.ok(!tierSatisfies('private', 'enterprise'));
  assert.ok(tierSatisfies('private', 'private'));
  for (const t of TIERS) assert.ok(tierSatisfies(t, 'community'));
  const j = job(P(100), { requirements: { tier: 'enterprise' } });
  const f = checkEligibility(j, advert(P(1), { tier: 'private' }), undefined, NOW);
  assert.deepEqual(codes(f), [REASON.TIER_NOT_SATISFIED]);
  assert.equal(f[0]!.wanted, 'enterprise');
  assert.equal(f[0]!.offered, 'private');
});

test('gate 5: an undisclosed region never matches a region constraint', () => {
  const j = job(P(100), { requirements: { regions: ['eu-west'] } });
  const und = checkEligibility(j, advert(P(1), { region: undefined }), undefined, NOW);
  assert.deepEqual(codes(und), [REASON.REGION_UNDISCLOSED]);
  assert.equal(und[0]!.offered, null);
  assert.deepEqual(codes(checkEligibility(j, advert(P(1), { region: 'us-east' }), undefined, NOW)), [REASON.REGION_NOT_ACCEPTED]);
  // no constraint: an undisclosed region is fine
  assert.deepEqual(checkEligibility(job(P(100)), advert(P(1), { region: undefined }), undefined, NOW), []);
});

test('gate 6: two 12 GiB cards do not satisfy a 24 GiB requirement (VRAM never sums)', () => {
  const j = job(P(100), { requirements: { gpu: { count: 1, vramMiB: 24 * GiB } } });
  const a = advert(P(1), { hardware: { gpus: [{ model: 'RTX3060', vramMiB: 12 * GiB, count: 2 }] } });
  const f = checkEligibility(j, a, undefined, NOW);
  assert.deepEqual(codes(f), [REASON.GPU_VRAM_TOO_SMALL]);
  assert.deepEqual(f[0]!.offered, { largestCardMiB: 12 * GiB, cardsWithEnough: 0 });
});

test('gate 6: counts sum across cards that each meet VRAM and features', () => {
  const j = job(P(100), { requirements: { gpu: { count: 3, vramMiB: 24 * GiB, features: ['cuda12'] } } });
  const ok = advert(P(1), {
    hardware: {
      gpus: [
        { model: 'A', vramMiB: 24 * GiB, features: ['cuda12'], count: 1 },
        { model: 'B', vramMiB: 48 * GiB, features: ['cuda12', 'fp8'], count: 2 },
      ],
    },
  });
  assert.deepEqual(checkEligibility(j, ok, undefined, NOW), []);
  // a third card exists but lacks the feature: only 2 cards meet both
  const short = advert(P(2), {
    hardware: {
      gpus: [
        { model: 'A', vramMiB: 24 * GiB, count: 1 },
        { model: 'B', vramMiB: 48 * GiB, features: ['cuda12'], count: 2 },
      ],
    },
  });
  assert.deepEqual(codes(checkEligibility(j, short, undefined, NOW)), [REASON.GPU_FEATURES_MISSING]);
  // enough big cards and enough feature cards, but not the same cards
  const split = advert(P(3), {
    hardware: {
      gpus: [
        { model: 'A', vramMiB: 48 * GiB, count: 3 },
        { model: 'B', vramMiB: 8 * GiB, features: ['cuda12'], count: 3 },
      ],
    },
  });
  assert.deepEqual(codes(checkEligibility(j, split, undefined, NOW)), [REASON.GPU_NOT_ON_SAME_CARDS]);
  // too few cards at all
  const one = advert(P(4), { hardware: { gpus: [{ model: 'A', vramMiB: 48 * GiB, features: ['cuda12'], count: 1 }] } });
  const f = checkEligibility(j, one, undefined, NOW);
  assert.deepEqual(codes(f), [REASON.GPU_COUNT_TOO_LOW]);
  assert.equal(f[0]!.wanted, 3);
  assert.equal(f[0]!.offered, 1);
  // no GPU at all
  assert.deepEqual(codes(checkEligibility(j, advert(P(5), { hardware: { gpus: undefined } }), undefined, NOW)), [REASON.GPU_NONE]);
});

test('gate 6: CPU cores and memory', () => {
  const j = job(P(100), { requirements: { cpuCores: 64, memoryMiB: 512 * GiB } });
  const f = checkEligibility(j, advert(P(1)), undefined, NOW);
  assert.deepEqual(codes(f), [REASON.CPU_CORES_TOO_FEW, REASON.MEMORY_TOO_SMALL]);
  assert.deepEqual([f[0]!.wanted, f[0]!.offered, f[1]!.wanted, f[1]!.offered], [64, 32, 512 * GiB, 256 * GiB]);
});

test('gate 7: price within maxPrice compared exactly ("0.042" passes a 0.10 cap, "0.9" does not)', () => {
  const j = job(P(100), { maxPrice: { amount: '0.10', currency: 'USD' } });
  const a = advert(P(1));
  assert.deepEqual(checkEligibility(j, a, offer(P(1), j, a, { amount: '0.042' }), NOW), []);
  assert.deepEqual(checkEligibility(j, a, offer(P(1), j, a, { amount: '0.1' }), NOW), []);
  const f = checkEligibility(j, a, offer(P(1), j, a, { amount: '0.9' }), NOW);
  assert.deepEqual(codes(f), [REASON.OFFER_OVER_MAX_PRICE]);
  assert.deepEqual(f[0]!.offered, { amount: '0.9', currency: 'USD' });
});

test('gate 7: a currency mismatch is its own reason, never a conversion', () => {
  const j = job(P(100), { maxPrice: { amount: '1', currency: 'USD' } });
  const a = advert(P(1));
  const f = checkEligibility(j, a, offer(P(1), j, a, { amount: '0.01', currency: 'EUR' }), NOW);
  assert.deepEqual(codes(f), [REASON.OFFER_CURRENCY_MISMATCH]);
  assert.equal(f[0]!.wanted, 'USD');
  assert.equal(f[0]!.offered, 'EUR');
});

test('gate 7: wrong job, expired offer, deadline and timeout', () => {
  const j = job(P(100), { deadline: NOW + 100_000, timeoutMs: 50_000 });
  const other = job(P(100), { nonce: new Uint8Array([1]) });
  const a = advert(P(1));
  assert.deepEqual(codes(checkEligibility(j, a, offer(P(1), other, a), NOW)), [REASON.OFFER_WRONG_JOB, REASON.OFFER_MISSES_DEADLINE, REASON.OFFER_OVER_TIMEOUT]);
  const late = offer(P(1), j, a, { startBy: NOW + 60_000, durationMs: 40_001, expiresAt: NOW + 30_000 });
  assert.deepEqual(codes(checkEligibility(j, a, late, NOW)), [REASON.OFFER_MISSES_DEADLINE]);
  const fits = offer(P(1), j, a, { startBy: NOW + 60_000, durationMs: 40_000, expiresAt: NOW + 30_000 });
  assert.deepEqual(checkEligibility(j, a, fits, NOW), []);
  assert.deepEqual(codes(checkEligibility(j, a, fits, NOW + 30_000)), [REASON.OFFER_EXPIRED]);
});

test('every failed requirement is returned, in gate order, each with wanted and offered', () => {
  const j = job(P(100), {
    workload: 'infer.diffusion',
    maxPrice: { amount: '0.10', currency: 'USD' },
    requirements: { allowlist: [P(9).did], tier: 'verified', regions: ['eu-west'], gpu: { count: 1, vramMiB: 24 * GiB }, cpuCores: 64 },
  });
  const old = advert(P(1), { tier: 'community', region: undefined, issuedAt: NOW - 7_200_000, expiresAt: NOW - 1, hardware: { gpus: [{ model: 'x', vramMiB: 12 * GiB, count: 2 }] } });
  const f = checkEligibility(j, old, offer(P(1), j, old, { amount: '0.9', expiresAt: NOW - 10, issuedAt: NOW - 1000 }), NOW);
  assert.deepEqual(codes(f), [
    REASON.ADVERT_EXPIRED,
    REASON.WORKLOAD_NOT_OFFERED,
    REASON.NOT_ON_ALLOWLIST,
    REASON.TIER_NOT_SATISFIED,
    REASON.REGION_UNDISCLOSED,
    REASON.GPU_VRAM_TOO_SMALL,
    REASON.CPU_CORES_TOO_FEW,
    REASON.OFFER_EXPIRED,
    REASON.OFFER_OVER_MAX_PRICE,
  ]);
  const order = f.map((x) => GATES.indexOf(x.gate));
  assert.deepEqual(order, [...order].sort((a, b) => a - b));
  for (const x of f) assert.ok('wanted' in x && 'offered' in x && x.message.length > 0);
});

test('bad input to checkEligibility is a coded error', () => {
  const j = job(P(100));
  const a = advert(P(1));
  assert.throws(() => checkEligibility(a as never, a, undefined, NOW), { code: 'MARKET_NOT_A_JOB' });
  assert.throws(() => checkEligibility(j, j as never, undefined, NOW), { code: 'MARKET_NOT_AN_ADVERT' });
  assert.throws(() => checkEligibility(j, a, a as never, NOW), { code: 'MARKET_NOT_AN_OFFER' });
});

test('advert index: higher seq replaces, an equal seq does not depend on arrival; a republished advert keeps live offers valid', () => {
  const a1 = advert(P(1), { seq: 1, issuedAt: NOW - 7_200_000, expiresAt: NOW - 1 });
  const a2 = advert(P(1), { seq: 2 });
  const x = new AdvertIndex([a1, a2]);
  const y = new AdvertIndex([a2, a1]);
  assert.equal(x.latest.get(P(1).did), a2);
  assert.equal(y.latest.get(P(1).did), a2);
  const j = job(P(100));
  const o = offer(P(1), j, a1);
  assert.equal(x.resolve(o, NOW), a2);
  assert.deepEqual(checkEligibility(j, x.resolve(o, NOW), o, NOW), []);
  // the cited advert not held: the offer waits
  assert.equal(new AdvertIndex([a2]).resolve(o, NOW), undefined);
  const e1 = advert(P(2), { seq: 5, hardware: { cpuCores: 1 } });
  const e2 = advert(P(2), { seq: 5, hardware: { cpuCores: 2 } });
  assert.equal(new AdvertIndex([e1, e2]).latest.get(P(2).did)!.address, new AdvertIndex([e2, e1]).latest.get(P(2).did)!.address);
});

test('quickEligible is sound: whenever it says yes, the seven gates find nothing (every job × offer × advert held, two times)', () => {
  const index = new AdvertIndex(ADVERTS);
  let yes = 0;
  let eligible = 0;
  for (const [ji, j] of JOBS.entries()) {
    const pj = prepareJob(j);
    for (const o of OFFERS[ji]!) {
      for (const now of [NOW, NOW + 30_000]) {
        const full = evaluate(pj, index.resolve(o, now), o, now, 30_000);
        if (full === undefined) eligible++;
        const fa = index.facts(o.record.advert);
        if (fa && quickEligible(pj, fa, o, now, 30_000)) {
          yes++;
          assert.equal(full, undefined, `quick said eligible, the gates said ${JSON.stringify(full?.map((f) => f.code))}`);
          assert.equal(index.resolve(o, now), fa.advert, 'and the advert judged is the one the offer cites');
        }
      }
    }
  }
  // not vacuous: the quick test answers for most of the eligible offers (the rest go to the full gates)
  assert.ok(yes > 0 && yes >= eligible / 2, `quick yes ${yes} of ${eligible} eligible`);
});

test('property: quickEligible agrees with the seven gates exactly wherever it answers alone (a live advert of the offer signer, one card type when GPUs are asked), and never says yes elsewhere', () => {
  // Records fabricated as opened (the gates never look at signatures), with values around every threshold.
  const JOB = 'sha256:' + 'a1'.repeat(32);
  let eligibleRuns = 0;
  const ADV = 'sha256:' + 'b2'.repeat(32);
  // each value passes its gate most of the time, so a good share of cases pass them all and each gate is seen deciding alone
  const mostly = <V,>(good: V, ...bad: V[]) => fc.oneof({ arbitrary: fc.constant(good), weight: 16 }, { arbitrary: fc.constantFrom(...bad), weight: 1 });
  const card = fc.record({ model: fc.constant('X'), vramMiB: mostly(40 * GiB, 16 * GiB, 24 * GiB), features: mostly<string[] | undefined>(['cuda12', 'fp8'], ['cuda12'], ['fp8'], undefined), count: mostly(4, 1, 2) });
  const requirements = fc.record(
    {
      gpu: fc.record({ count: fc.constantFrom(1, 2, 4), vramMiB: fc.constantFrom(16, 24, 40).map((g) => g * GiB), features: fc.constantFrom([], ['cuda12'], ['cuda12', 'fp8']) }),
      cpuCores: fc.constantFrom(8, 32, 64),
      memoryMiB: fc.constantFrom(64, 256).map((g) => g * GiB),
      regions: fc.constantFrom(['eu-west'], ['eu-west', 'us-east']),
      tier: fc.constantFrom<Tier>('community', 'standard', 'verified'),
      allowlist: mostly(['did:key:z6MkA', 'did:key:z6MkB'], ['did:key:z6MkA'], ['did:key:z6MkB']),
    },
    { requiredKeys: [] },
  );
  const arb = fc.record({
    req: requirements,
    maxPrice: fc.constantFrom('0.5'),
    signer: fc.constantFrom('did:key:z6MkA', 'did:key:z6MkB'),
    otherSigner: mostly(false, true),
    expiresIn: mostly(60_000, 0, -1),
    issuedIn: mostly(-60_000, 20_000, 40_000),
    workloads: mostly(['infer.diffusion', 'infer.llm'], ['infer.diffusion']),
    tier: mostly<Tier>('verified', 'community', 'standard', 'private', 'enterprise'),
    region: mostly<string | undefined>('eu-west', 'us-east', undefined),
    gpus: mostly<'one' | 'two' | 'none'>('one', 'two', 'none').chain((k) => (k === 'one' ? fc.array(card, { minLength: 1, maxLength: 1 }) : k === 'two' ? fc.array(card, { minLength: 2, maxLength: 2 }) : fc.constant(undefined))),
    cpuCores: mostly(64, 8, 32),
    memoryMiB: mostly(256 * GiB, 64 * GiB),
    offerJob: mostly(JOB, 'sha256:' + 'c3'.repeat(32)),
    price: mostly('0.3', '0.30', '0.5', '0.50', '0.51', '0.6'),
    currency: mostly('USD', 'EUR'),
    durationMs: mostly(1_000, 600_000, 700_000),
    startIn: mostly(0, 3_000_000),
    offerExpiresIn: mostly(60_000, 0),
  });
  fc.assert(
    fc.property(arb, (x) => {
      const req = { ...x.req, ...(x.req.allowlist ? { allowlist: [...x.req.allowlist].sort() } : {}) };
      const j = { type: T.job, signer: 'did:key:z6MkBuyer', address: JOB, bytes: new Uint8Array(), record: { workload: 'infer.llm', requirements: req, maxPrice: { amount: x.maxPrice, currency: 'USD' }, announcedAt: NOW - 1000, deadline: NOW + 3_600_000, timeoutMs: 600_000, input: { hash: JOB, size: 1 }, inputSealed: 'no' } } as unknown as Opened<Job>;
      const a = { type: T.advert, signer: x.otherSigner ? 'did:key:z6MkC' : x.signer, address: ADV, bytes: new Uint8Array(), record: { seq: 1, issuedAt: NOW + x.issuedIn, expiresAt: NOW + x.expiresIn, workloads: x.workloads, tier: x.tier, ...(x.region ? { region: x.region } : {}), hardware: { ...(x.gpus ? { gpus: x.gpus } : {}), cpuCores: x.cpuCores, memoryMiB: x.memoryMiB } } } as unknown as Opened<Advert>;
      const o = { type: T.offer, signer: x.signer, address: 'sha256:' + 'd4'.repeat(32), bytes: new Uint8Array(), record: { job: x.offerJob, advert: ADV, price: { amount: x.price, currency: x.currency }, durationMs: x.durationMs, issuedAt: NOW - 500, startBy: NOW + x.startIn, expiresAt: NOW + x.offerExpiresIn } } as unknown as Opened<Offer>;
      const pj = prepareJob(j);
      const quick = quickEligible(pj, advertFacts(a), o, NOW, 30_000);
      const full = evaluate(pj, a, o, NOW, 30_000) === undefined;
      if (quick) assert.ok(full, 'quick said yes where a gate fails');
      if (full) eligibleRuns++;
      const alone = a.signer === o.signer && a.record.expiresAt > NOW && !(req.gpu && (a.record.hardware.gpus?.length ?? 0) !== 1);
      if (alone) assert.equal(quick, full);
    }),
    { numRuns: 3000 },
  );
  // not vacuous: a good share of the random cases pass every gate, so each gate is seen deciding alone
  assert.ok(eligibleRuns > 150, `only ${eligibleRuns} of 3000 random cases were eligible`);
});

test('messages say times as ISO instants or durations, never raw epoch milliseconds (issue #11)', () => {
  const j = job(P(100), { timeoutMs: 300_000 });
  const a = advert(P(1), { issuedAt: NOW - 7_200_000, expiresAt: NOW - 90_000 });
  const future = advert(P(2), { issuedAt: NOW + 600_000, expiresAt: NOW + 3_600_000 });
  const o = offer(P(1), j, a, { expiresAt: NOW - 1, startBy: NOW + 3_590_000, durationMs: 400_000 });
  const fs = [...checkEligibility(j, a, o, NOW), ...checkEligibility(j, future, undefined, NOW)];
  const codes = fs.map((f) => f.code);
  for (const c of ['ADVERT_EXPIRED', 'ADVERT_NOT_YET_VALID', 'OFFER_EXPIRED', 'OFFER_MISSES_DEADLINE', 'OFFER_OVER_TIMEOUT']) assert.ok(codes.includes(c as never), c);
  for (const f of fs) assert.doesNotMatch(f.message, /\d{10,}/, f.message);
  const deadline = fs.find((f) => f.code === 'OFFER_MISSES_DEADLINE')!.message;
  assert.ok(deadline.includes(new Date(NOW + 3_590_000).toISOString()), deadline);
  assert.match(deadline, /taking 6 min 40 s/);
  assert.match(fs.find((f) => f.code === 'OFFER_OVER_TIMEOUT')!.message, /quotes 6 min 40 s, longer than the job's timeout of 5 min/);
});
