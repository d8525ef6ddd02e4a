/**
 * A small market for the market tests: four jobs with different requirements,
 * eight providers each with adverts that fail different gates, and offers per
 * job that fail different offer checks (or cite an advert nobody holds).
 */
import { GiB, NOW, P, advert, job, offer, type AdvertOver } from './fixtures.js';

export const BUYER = P(900);
export const JOBS = [
  job(BUYER),
  job(BUYER, { requirements: { gpu: { count: 1, vramMiB: 24 * GiB, features: ['cuda12'] }, regions: ['eu-west'], tier: 'verified' } }),
  job(BUYER, { requirements: { cpuCores: 64, memoryMiB: 512 * GiB, tier: 'standard', allowlist: [P(1), P(2), P(3), P(4)].map((p) => p.did).sort() } }),
  job(BUYER, { requirements: { gpu: { count: 4, vramMiB: 40 * GiB, features: ['fp8'] }, regions: ['eu-west', 'us-east'] }, maxPrice: { amount: '0.6', currency: 'USD' } }),
];
export const PROVIDERS = [1, 2, 3, 4, 5, 6, 7, 8].map((n) => P(n));
const ask = (amount: string, unit = 'job', currency = 'USD') => ({ workload: 'infer.llm', unit, price: { amount, currency } });
// Some adverts price the workload (the explanation judges a provider without an offer on its ask): above one job's
// maxPrice or every job's, in another currency, per second (the job's timeout counted), cheapest of two entries.
export const ADVERT_VARIANTS: AdvertOver[] = [
  {},
  { tier: 'community', prices: [ask('0.8')] },
  { tier: 'enterprise', seq: 2, prices: [ask('0.1', 'job', 'EUR')] },
  { region: undefined, prices: [ask('0.002', 'second')] },
  { region: 'us-east', seq: 3, prices: [ask('0.3')] },
  { hardware: { gpus: undefined } },
  { hardware: { gpus: [{ model: 'T4', vramMiB: 16 * GiB, features: ['cuda12'], count: 4 }], cpuCores: 8, memoryMiB: 64 * GiB }, seq: 4 },
  { issuedAt: NOW - 7_200_000, expiresAt: NOW - 60_000, seq: 5, prices: [ask('3')] },
  { workloads: ['infer.diffusion'], seq: 6 },
  // two card types: only the full gates judge it (GPU counts sum over the cards meeting VRAM and features)
  { hardware: { gpus: [{ model: 'L4', vramMiB: 24 * GiB, features: ['cuda12'], count: 1 }, { model: 'A100', vramMiB: 80 * GiB, features: ['cuda12', 'fp8'], count: 4 }] }, seq: 7, prices: [ask('5'), ask('0.5', 'mib')] },
];
export const ADVERTS = PROVIDERS.flatMap((p) => ADVERT_VARIANTS.map((v) => advert(p, v)));
export const OFFER_VARIANTS = [
  { amount: '0.2' },
  { amount: '0.45', durationMs: 30_000 },
  { amount: '5' },
  { amount: '0.1', currency: 'EUR' },
  { amount: '0.3', expiresAt: NOW - 1 },
  { amount: '0.3', startBy: NOW + 3_590_000 },
  { amount: '0.3', durationMs: 700_000 },
];
/** offers per job, each citing one of its provider's adverts (or an advert nobody holds) */
export const OFFERS = JOBS.map((j, ji) =>
  PROVIDERS.flatMap((p, pi) =>
    OFFER_VARIANTS.map((v, vi) => {
      const k = (pi + vi + ji) % (ADVERT_VARIANTS.length + 1);
      const cited = k === ADVERT_VARIANTS.length ? 'sha256:' + 'ab'.repeat(32) : ADVERTS[pi * ADVERT_VARIANTS.length + k]!;
      return offer(p, j, cited, v);
    }),
  ),
);

