/**
 * Eligibility: the seven hard gates of spec/scheduling.md, in the spec's order.
 *
 *   1 advert   verifies (the caller passes opened records), is the offer signer's, is unexpired
 *              (a pooled one: its roster too)
 *   2 workload the advert offers the job's workload namespace
 *   3 allowlist the provider is on the job's allowlist (before the tier)
 *   4 tier     `private`/`enterprise` exactly; the others at or above
 *   5 region   a region constraint needs a disclosed region in the list
 *   6 hardware GPUs (VRAM per card, never summed; counts summed over cards that
 *              each meet VRAM and features), CPU cores, memory
 *   7 offer    right job, unexpired, same currency, price ≤ maxPrice (exact decimal),
 *              startBy + duration ≤ deadline, duration ≤ the job's timeout
 *
 * Every failed requirement is returned (never just the first), each with the
 * wanted and the offered value. Pure: `now` is injected, no float anywhere.
 * Which advert an offer is judged against (AdvertIndex, with each advert's
 * facts for `quickEligible`) is advert-index.ts.
 */
import { T, type Advert, type Job, type Offer, type Tier } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import { DEFAULT_SKEW_MS } from '../records/freshness.js';
import { C0Error } from '../errors.js';
import { cmpAmount } from './amount.js';
import { rosterExpiresAt } from '../pools/chain.js';
import { duration, isoTime } from './say.js';

import type { AdvertFacts } from './advert-index.js';

// The advert index and its facts live beside the gates (advert-index.ts); importers of eligibility.ts keep finding them here.
export { AdvertIndex, advertFacts, type AdvertFacts } from './advert-index.js';

export const GATES = ['advert', 'workload', 'allowlist', 'tier', 'region', 'hardware', 'offer'] as const;
export type Gate = (typeof GATES)[number];

export const REASON = {
  ADVERT_UNKNOWN: 'ADVERT_UNKNOWN',
  ADVERT_EXPIRED: 'ADVERT_EXPIRED',
  ADVERT_NOT_YET_VALID: 'ADVERT_NOT_YET_VALID',
  ADVERT_NOT_PROVIDERS: 'ADVERT_NOT_PROVIDERS',
  ADVERT_ROSTER_EXPIRED: 'ADVERT_ROSTER_EXPIRED',
  WORKLOAD_NOT_OFFERED: 'WORKLOAD_NOT_OFFERED',
  NOT_ON_ALLOWLIST: 'NOT_ON_ALLOWLIST',
  TIER_NOT_SATISFIED: 'TIER_NOT_SATISFIED',
  REGION_UNDISCLOSED: 'REGION_UNDISCLOSED',
  REGION_NOT_ACCEPTED: 'REGION_NOT_ACCEPTED',
  GPU_NONE: 'GPU_NONE',
  GPU_COUNT_TOO_LOW: 'GPU_COUNT_TOO_LOW',
  GPU_VRAM_TOO_SMALL: 'GPU_VRAM_TOO_SMALL',
  GPU_FEATURES_MISSING: 'GPU_FEATURES_MISSING',
  GPU_NOT_ON_SAME_CARDS: 'GPU_NOT_ON_SAME_CARDS',
  CPU_CORES_TOO_FEW: 'CPU_CORES_TOO_FEW',
  MEMORY_TOO_SMALL: 'MEMORY_TOO_SMALL',
  OFFER_MISSING: 'OFFER_MISSING',
  OFFER_WRONG_JOB: 'OFFER_WRONG_JOB',
  OFFER_EXPIRED: 'OFFER_EXPIRED',
  OFFER_CURRENCY_MISMATCH: 'OFFER_CURRENCY_MISMATCH',
  OFFER_OVER_MAX_PRICE: 'OFFER_OVER_MAX_PRICE',
  OFFER_MISSES_DEADLINE: 'OFFER_MISSES_DEADLINE',
  OFFER_OVER_TIMEOUT: 'OFFER_OVER_TIMEOUT',
  // Judged on the advert's ask, for the explanation of a provider with no offer (src/market/ask.ts), with the probe's
  // codes (src/matching/candidates.ts): a provider does not quote in another currency or above the job's maxPrice.
  ASK_CURRENCY_MISMATCH: 'ASK_CURRENCY_MISMATCH',
  ASK_ABOVE_PRICE: 'ASK_ABOVE_PRICE',
} as const;
export type ReasonCode = (typeof REASON)[keyof typeof REASON];

/** One failed requirement. `wanted` and `offered` are plain JSON values; `null` = not disclosed / absent. */
export interface Failure {
  gate: Gate;
  code: ReasonCode;
  /** the job (or offer) field the requirement comes from */
  field: string;
  wanted: unknown;
  offered: unknown;
  message: string;
}

export interface EligibilityOptions {
  /** clock-skew window for an advert issued in the future (default 30 s) */
  skewMs?: number;
}

const TIER_INDEX: Record<Tier, number> = { community: 0, standard: 1, verified: 2, private: 3, enterprise: 4 };

/** DESIGN §3.3: `private` and `enterprise` exactly; the others by any tier at or above. */
export function tierSatisfies(offered: Tier, wanted: Tier): boolean {
  if (wanted === 'private' || wanted === 'enterprise') return offered === wanted;
  return TIER_INDEX[offered] >= TIER_INDEX[wanted];
}

export function gib(mib: number): string {
  const g = mib / 1024;
  return Number.isInteger(g) ? `${g} GiB` : `${mib} MiB`;
}

/**
 * A job's requirements prepared once (sets instead of arrays) so the gates cost
 * a few lookups per provider. Build with `prepareJob`; reuse across providers.
 */
export interface PreparedJob {
  opened: Opened<Job>;
  address: string;
  job: Job;
  allowlist: Set<string> | undefined;
  regions: Set<string> | undefined;
  gpuFeatures: string[];
}

/** Prepared jobs by opened record: a job's record never changes, so its lookup sets are built once. */
const prepared = new WeakMap<Opened<Job>, PreparedJob>();

export function prepareJob(job: Opened<Job>): PreparedJob {
  if (!job || job.type !== T.job) throw new C0Error('MARKET_NOT_A_JOB', `expected a ${T.job} record, got ${String(job?.type)}`, { field: 'job' });
  let pj = prepared.get(job);
  if (pj === undefined || pj.job !== job.record) {
    const r = job.record.requirements;
    pj = {
      opened: job,
      address: job.address,
      job: job.record,
      allowlist: r.allowlist ? new Set(r.allowlist) : undefined,
      regions: r.regions ? new Set(r.regions) : undefined,
      gpuFeatures: r.gpu?.features ?? [],
    };
    prepared.set(job, pj);
  }
  return pj;
}

function f(gate: Gate, code: ReasonCode, field: string, wanted: unknown, offered: unknown, message: string): Failure {
  return { gate, code, field, wanted, offered, message };
}

/**
 * Gates 1–7 for one provider. `advert` is the advert the offer is judged
 * against (see `resolveAdvert`); `offer` may be absent (a provider deciding
 * whether to quote, or the explanation of a provider that has not quoted), in
 * which case gate 7 is skipped. Returns every failure, in gate order; [] means eligible.
 */
export function checkEligibility(job: Opened<Job> | PreparedJob, advert: Opened<Advert> | undefined, offer: Opened<Offer> | undefined, now: number, opts: EligibilityOptions = {}): Failure[] {
  const pj = 'opened' in job ? job : prepareJob(job);
  if (advert !== undefined && advert.type !== T.advert) throw new C0Error('MARKET_NOT_AN_ADVERT', `expected a ${T.advert} record, got ${advert.type}`, { field: 'advert' });
  if (offer !== undefined && offer.type !== T.offer) throw new C0Error('MARKET_NOT_AN_OFFER', `expected a ${T.offer} record, got ${offer.type}`, { field: 'offer' });
  return evaluate(pj, advert, offer, now, opts.skewMs ?? DEFAULT_SKEW_MS) ?? [];
}

/**
 * The gates proper. Returns undefined when eligible (no allocation on the hot
 * path), else the failures.
 */
export function evaluate(pj: PreparedJob, advert: Opened<Advert> | undefined, offer: Opened<Offer> | undefined, now: number, skewMs: number): Failure[] | undefined {
  let out: Failure[] | undefined;
  const job = pj.job;
  const req = job.requirements;

  // 1. advert
  let hwOk = true; // gates 2-6 only make sense against the provider's own advert
  if (!advert) {
    hwOk = false;
    (out ??= []).push(f('advert', REASON.ADVERT_UNKNOWN, 'offer.advert', offer?.record.advert ?? 'an advert', null, `the advert ${offer ? offer.record.advert : ''} is not known; the offer cannot win until it is`.replace('  ', ' ')));
  } else {
    const a = advert.record;
    if (offer && advert.signer !== offer.signer) {
      hwOk = false;
      (out ??= []).push(f('advert', REASON.ADVERT_NOT_PROVIDERS, 'offer.advert', offer.signer, advert.signer, `the advert the offer cites is signed by ${advert.signer}, not by the offer's signer`));
    }
    if (a.expiresAt <= now) (out ??= []).push(f('advert', REASON.ADVERT_EXPIRED, 'advert.expiresAt', `after ${now}`, a.expiresAt, `the advert expired at ${isoTime(a.expiresAt)} (${duration(now - a.expiresAt)} before ${isoTime(now)})`));
    else if (a.issuedAt > now + skewMs) (out ??= []).push(f('advert', REASON.ADVERT_NOT_YET_VALID, 'advert.issuedAt', `at most ${now + skewMs}`, a.issuedAt, `the advert is issued at ${isoTime(a.issuedAt)}, ${duration(a.issuedAt - now)} after ${isoTime(now)} (beyond the clock-skew window)`));
    // a pooled advert stands for its pool only while the roster it carries is live (docs/pools.md "Roster expiry"):
    // past it, neither the pool's receipts nor non-deliveries against it count, so it is not selected
    if (a.pool) {
      const exp = rosterExpiresAt(advert);
      if (exp <= now) (out ??= []).push(f('advert', REASON.ADVERT_ROSTER_EXPIRED, 'advert.pool.roster', `expiring after ${now}`, Number.isFinite(exp) ? exp : null, Number.isFinite(exp) ? `the pool's roster the advert carries expired at ${isoTime(exp)} (${duration(now - exp)} before ${isoTime(now)})` : "the pool's roster the advert carries does not verify"));
    }
  }

  if (advert && hwOk) {
    const a = advert.record;
    const provider = advert.signer;
    // 2. workload
    if (!a.workloads.includes(job.workload)) (out ??= []).push(f('workload', REASON.WORKLOAD_NOT_OFFERED, 'workload', job.workload, a.workloads, `does not offer ${job.workload}`));
    // 3. allowlist (before the tier)
    if (pj.allowlist && !pj.allowlist.has(provider)) (out ??= []).push(f('allowlist', REASON.NOT_ON_ALLOWLIST, 'requirements.allowlist', req.allowlist, provider, 'is not on the job’s allowlist'));
    // 4. tier
    if (req.tier !== undefined && !tierSatisfies(a.tier, req.tier)) {
      const exact = req.tier === 'private' || req.tier === 'enterprise';
      (out ??= []).push(f('tier', REASON.TIER_NOT_SATISFIED, 'requirements.tier', exact ? req.tier : `${req.tier} or above`, a.tier, `claims tier ${a.tier}; the job needs ${exact ? 'exactly ' + req.tier : req.tier + ' or above'}`));
    }
    // 5. region
    if (pj.regions) {
      if (a.region === undefined) (out ??= []).push(f('region', REASON.REGION_UNDISCLOSED, 'requirements.regions', req.regions, null, 'did not disclose a region (an undisclosed region never matches)'));
      else if (!pj.regions.has(a.region)) (out ??= []).push(f('region', REASON.REGION_NOT_ACCEPTED, 'requirements.regions', req.regions, a.region, `region ${a.region} is not among ${req.regions!.join(', ')}`));
    }
    // 6. hardware
    const hw = a.hardware;
    if (req.gpu) {
      const g = req.gpu;
      const gpus = hw.gpus ?? [];
      if (gpus.length === 0) {
        (out ??= []).push(f('hardware', REASON.GPU_NONE, 'requirements.gpu', { count: g.count, vramMiB: g.vramMiB, features: pj.gpuFeatures }, null, 'has no GPU'));
      } else {
        let total = 0;
        let vramCards = 0;
        let featCards = 0;
        let both = 0;
        let largest = 0;
        const wantF = pj.gpuFeatures;
        for (let gi = 0; gi < gpus.length; gi++) {
          const c = gpus[gi]!;
          total += c.count;
          if (c.vramMiB > largest) largest = c.vramMiB;
          const vOk = c.vramMiB >= g.vramMiB;
          let fOk = true;
          for (let k = 0; k < wantF.length; k++) {
            if (!c.features || !c.features.includes(wantF[k]!)) {
              fOk = false;
              break;
            }
          }
          if (vOk) vramCards += c.count;
          if (fOk) featCards += c.count;
          if (vOk && fOk) both += c.count;
        }
        if (both < g.count) {
          const n0 = out?.length ?? 0;
          const reach = Math.min(g.count, total);
          if (total < g.count) (out ??= []).push(f('hardware', REASON.GPU_COUNT_TOO_LOW, 'requirements.gpu.count', g.count, total, `has ${total} GPU${total === 1 ? '' : 's'}; the job needs ${g.count}`));
          if (vramCards < reach) {
            (out ??= []).push(f('hardware', REASON.GPU_VRAM_TOO_SMALL, 'requirements.gpu.vramMiB', { vramMiBPerCard: g.vramMiB, cards: g.count }, { largestCardMiB: largest, cardsWithEnough: vramCards }, `${vramCards === 0 ? 'no card' : `only ${vramCards} card${vramCards === 1 ? '' : 's'}`} with ${gib(g.vramMiB)} (largest card ${gib(largest)}; VRAM does not sum across cards)`));
          }
          if (pj.gpuFeatures.length > 0 && featCards < reach) {
            const feats = new Set<string>();
            for (const c of gpus) if (c.vramMiB >= g.vramMiB && c.features) for (const x of c.features) feats.add(x);
            (out ??= []).push(f('hardware', REASON.GPU_FEATURES_MISSING, 'requirements.gpu.features', pj.gpuFeatures, { features: [...feats].sort(), cardsWithAll: featCards }, `${featCards === 0 ? 'no card' : `only ${featCards} card${featCards === 1 ? '' : 's'}`} with ${pj.gpuFeatures.join(', ')}`));
          }
          if ((out?.length ?? 0) === n0) {
            (out ??= []).push(f('hardware', REASON.GPU_NOT_ON_SAME_CARDS, 'requirements.gpu', { count: g.count, vramMiB: g.vramMiB, features: pj.gpuFeatures }, { cardsMeetingBoth: both }, `only ${both} card${both === 1 ? '' : 's'} have both ${gib(g.vramMiB)} and ${pj.gpuFeatures.join(', ')}`));
          }
        }
      }
    }
    if (req.cpuCores !== undefined && hw.cpuCores < req.cpuCores) (out ??= []).push(f('hardware', REASON.CPU_CORES_TOO_FEW, 'requirements.cpuCores', req.cpuCores, hw.cpuCores, `has ${hw.cpuCores} CPU core${hw.cpuCores === 1 ? '' : 's'}; the job needs ${req.cpuCores}`));
    if (req.memoryMiB !== undefined && hw.memoryMiB < req.memoryMiB) (out ??= []).push(f('hardware', REASON.MEMORY_TOO_SMALL, 'requirements.memoryMiB', req.memoryMiB, hw.memoryMiB, `has ${gib(hw.memoryMiB)} memory; the job needs ${gib(req.memoryMiB)}`));
  }

  // 7. offer validity
  if (offer) {
    const o = offer.record;
    if (o.job !== pj.address) (out ??= []).push(f('offer', REASON.OFFER_WRONG_JOB, 'offer.job', pj.address, o.job, 'the offer answers another job'));
    if (o.expiresAt <= now) (out ??= []).push(f('offer', REASON.OFFER_EXPIRED, 'offer.expiresAt', `after ${now}`, o.expiresAt, `the offer expired at ${isoTime(o.expiresAt)}`));
    if (o.price.currency !== job.maxPrice.currency) {
      (out ??= []).push(f('offer', REASON.OFFER_CURRENCY_MISMATCH, 'maxPrice.currency', job.maxPrice.currency, o.price.currency, `priced in ${o.price.currency}; the job pays in ${job.maxPrice.currency} (never converted)`));
    } else if (cmpAmount(o.price.amount, job.maxPrice.amount) > 0) {
      (out ??= []).push(f('offer', REASON.OFFER_OVER_MAX_PRICE, 'maxPrice', job.maxPrice, o.price, `asks ${o.price.amount} ${o.price.currency}, above the maximum ${job.maxPrice.amount}`));
    }
    const finish = o.startBy + o.durationMs;
    if (finish > job.deadline) (out ??= []).push(f('offer', REASON.OFFER_MISSES_DEADLINE, 'deadline', job.deadline, finish, `starting by ${isoTime(o.startBy)} and taking ${duration(o.durationMs)} it may finish ${duration(finish - job.deadline)} after the deadline (${isoTime(job.deadline)})`));
    if (o.durationMs > job.timeoutMs) (out ??= []).push(f('offer', REASON.OFFER_OVER_TIMEOUT, 'timeoutMs', job.timeoutMs, o.durationMs, `quotes ${duration(o.durationMs)}, longer than the job's timeout of ${duration(job.timeoutMs)}`));
  }
  return out;
}

/**
 * A quick, sound test that `offer` passes all seven gates against the advert
 * of `fa` (the advert the offer cites): true only when `evaluate` would return
 * no failure. It may say false for an eligible offer (one that qualifies only
 * by summing GPUs over several card types, or one judged against a republished
 * advert, is left to `evaluate`), so a caller asks `evaluate` when it says
 * false: `quickEligible(…) || evaluate(…) === undefined`. Property tests hold
 * it to that, and to exact agreement wherever it answers alone
 * (test/unit/market/eligibility.test.ts).
 */
export function quickEligible(pj: PreparedJob, fa: AdvertFacts, offer: Opened<Offer>, now: number, skewMs: number): boolean {
  const job = pj.job;
  const req = job.requirements;
  // 1. the offer's own advert, live
  if (fa.signer !== offer.signer || fa.expiresAt <= now || fa.issuedAt > now + skewMs || fa.rosterExpiresAt <= now) return false;
  // 2–5
  if (!fa.workloads.includes(job.workload)) return false;
  if (pj.allowlist && !pj.allowlist.has(fa.signer)) return false;
  if (req.tier !== undefined && !tierSatisfies(fa.tier, req.tier)) return false;
  if (pj.regions && (fa.region === undefined || !pj.regions.has(fa.region))) return false;
  // 6. the first card type alone meeting VRAM, features and count (enough: counts only add up over
  // the other cards); an advert that needs its other cards to qualify goes to the full gates
  const g = req.gpu;
  if (g) {
    if (fa.gpuVramMiB < g.vramMiB || fa.gpuCount < g.count) return false;
    const want = pj.gpuFeatures;
    for (let k = 0; k < want.length; k++) if (!fa.gpuFeatures || !fa.gpuFeatures.includes(want[k]!)) return false;
  }
  if (req.cpuCores !== undefined && fa.cpuCores < req.cpuCores) return false;
  if (req.memoryMiB !== undefined && fa.memoryMiB < req.memoryMiB) return false;
  // 7. the offer
  const o = offer.record;
  if (o.job !== pj.address || o.expiresAt <= now || o.price.currency !== job.maxPrice.currency) return false;
  if (cmpAmount(o.price.amount, job.maxPrice.amount) > 0) return false;
  return o.startBy + o.durationMs <= job.deadline && o.durationMs <= job.timeoutMs;
}
