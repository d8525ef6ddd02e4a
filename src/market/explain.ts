/**
 * Explaining an empty (or thin) market: across every known provider, which
 * requirements bind, said in one sentence, with what relaxing each binding
 * constraint would gain. Pure; `now` is injected; providers in DID order.
 */
import type { Advert, Job, Offer } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import { DEFAULT_SKEW_MS } from '../records/freshness.js';
import { AdvertIndex, REASON, evaluate, gib, prepareJob, type Failure, type PreparedJob, type ReasonCode } from './eligibility.js';
import { oneOfferPerProvider, preferOffer, type OfferBook } from './book.js';
import { nameOrder } from './rank-order.js';

export { preferOffer };

/** Requirement groups an explanation counts. The relaxable ones are the buyer's to change. */
export const CONSTRAINTS = ['advert', 'workload', 'allowlist', 'tier', 'region', 'gpu', 'cpu', 'memory', 'price', 'deadline', 'quote'] as const;
export type Constraint = (typeof CONSTRAINTS)[number];
export const RELAXABLE: readonly Constraint[] = ['allowlist', 'tier', 'region', 'gpu', 'cpu', 'memory', 'price', 'deadline'];

export function constraintOf(code: ReasonCode): Constraint {
  switch (code) {
    case REASON.ADVERT_UNKNOWN:
    case REASON.ADVERT_EXPIRED:
    case REASON.ADVERT_NOT_YET_VALID:
    case REASON.ADVERT_NOT_PROVIDERS:
      return 'advert';
    case REASON.WORKLOAD_NOT_OFFERED:
      return 'workload';
    case REASON.NOT_ON_ALLOWLIST:
      return 'allowlist';
    case REASON.TIER_NOT_SATISFIED:
      return 'tier';
    case REASON.REGION_UNDISCLOSED:
    case REASON.REGION_NOT_ACCEPTED:
      return 'region';
    case REASON.CPU_CORES_TOO_FEW:
      return 'cpu';
    case REASON.MEMORY_TOO_SMALL:
      return 'memory';
    case REASON.OFFER_CURRENCY_MISMATCH:
    case REASON.OFFER_OVER_MAX_PRICE:
      return 'price';
    case REASON.OFFER_MISSES_DEADLINE:
    case REASON.OFFER_OVER_TIMEOUT:
      return 'deadline';
    case REASON.OFFER_MISSING:
    case REASON.OFFER_EXPIRED:
    case REASON.OFFER_WRONG_JOB:
      return 'quote';
    default:
      return 'gpu';
  }
}

/** One provider's verdict. `failures` is empty when eligible. */
export interface ProviderVerdict {
  provider: string;
  /** the advert judged against (absent when none is known) */
  advert?: string;
  /** the offer judged (absent when the provider has not quoted) */
  offer?: string;
  eligible: boolean;
  failures: Failure[];
}

export interface Binding {
  constraint: Constraint;
  /** providers failing it */
  failing: number;
  /** providers meeting it */
  meeting: number;
}

export interface Relaxation {
  constraint: Constraint;
  /** providers that fail only this constraint (they would fit if it were relaxed) */
  gain: number;
  /** of those, how many have a live offer already */
  quoted: number;
  text: string;
}

export interface MarketExplanation {
  job: string;
  known: number;
  eligible: number;
  /** every known provider, DID order */
  providers: ProviderVerdict[];
  /** providers failing each reason code (codes sorted) */
  counts: Record<string, number>;
  /** constraints that bind, most binding first */
  binding: Binding[];
  relaxations: Relaxation[];
  /** providers whose advert has expired (reported, not silently dropped), DID order */
  expired: string[];
  summary: string;
}

export interface MarketInput {
  job: Opened<Job>;
  adverts: Iterable<Opened<Advert>> | AdvertIndex;
  /** the node's OfferBook, or offers of any job (reduced to one per provider, as selection does) */
  offers: Iterable<Opened<Offer>> | OfferBook;
  now: number;
  skewMs?: number;
}

/** A verdict, its keys always in this order (provider, advert, offer, eligible, failures). */
export function verdictOf(provider: string, advert: string | undefined, offer: string | undefined, failures: Failure[]): ProviderVerdict {
  const eligible = failures.length === 0;
  if (advert !== undefined) return offer !== undefined ? { provider, advert, offer, eligible, failures } : { provider, advert, eligible, failures };
  return offer !== undefined ? { provider, offer, eligible, failures } : { provider, eligible, failures };
}

/** Evaluate every known provider (with or without an offer) for a job. DID order. */
export function judgeAll(pj: PreparedJob, index: AdvertIndex, offers: Iterable<Opened<Offer>> | OfferBook, now: number, skewMs: number): ProviderVerdict[] {
  const cands = oneOfferPerProvider(offers, pj.address, pj.job.maxPrice.currency, now);
  // providers[i] quoted cands[i] for i < cands.length; the rest have an advert and no offer
  const providers: string[] = [];
  const quoted = new Set<string>();
  for (const o of cands) {
    providers.push(o.signer);
    quoted.add(o.signer);
  }
  for (const p of index.latest.keys()) if (!quoted.has(p)) providers.push(p);
  const out: ProviderVerdict[] = [];
  for (const i of nameOrder(providers)) {
    const p = providers[i]!;
    const offer = i < cands.length ? cands[i] : undefined;
    const advert = offer ? index.resolve(offer, now) : index.latest.get(p);
    const failures = evaluate(pj, advert, offer, now, skewMs) ?? [];
    if (!offer) failures.push({ gate: 'offer', code: REASON.OFFER_MISSING, field: 'offer', wanted: 'a live offer for this job', offered: null, message: 'has not quoted for this job' });
    out.push(verdictOf(p, advert?.address, offer?.address, failures));
  }
  return out;
}

export function explainMarket(input: MarketInput): MarketExplanation {
  const pj = prepareJob(input.job);
  const index = input.adverts instanceof AdvertIndex ? input.adverts : new AdvertIndex(input.adverts);
  const verdicts = judgeAll(pj, index, input.offers, input.now, input.skewMs ?? DEFAULT_SKEW_MS);
  return explainVerdicts(pj, verdicts);
}

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);

/** The clause a constraint contributes to the summary ('has 24 GiB of VRAM on one card'). */
export function phrase(c: Constraint, job: Job, many: boolean): string {
  const r = job.requirements;
  const v = (one: string, m: string) => (many ? m : one);
  switch (c) {
    case 'advert':
      return `${v('has', 'have')} a live advert`;
    case 'workload':
      return `${v('offers', 'offer')} ${job.workload}`;
    case 'allowlist':
      return `${v('is', 'are')} on the allowlist`;
    case 'tier':
      return r.tier === 'private' || r.tier === 'enterprise' ? `${v('claims', 'claim')} tier ${r.tier}` : `${v('claims', 'claim')} tier ${r.tier} or above`;
    case 'region':
      return `disclosed a region in ${r.regions?.join(', ') ?? '?'}`;
    case 'gpu': {
      const g = r.gpu!;
      const feats = g.features?.length ? ` with ${g.features.join(', ')}` : '';
      return g.count === 1 ? `${v('has', 'have')} ${gib(g.vramMiB)} of VRAM on one card${feats}` : `${v('has', 'have')} ${g.count} GPUs with ${gib(g.vramMiB)} each${feats}`;
    }
    case 'cpu':
      return `${v('has', 'have')} ${r.cpuCores} CPU cores`;
    case 'memory':
      return `${v('has', 'have')} ${gib(r.memoryMiB ?? 0)} of memory`;
    case 'price':
      return `quoted within ${job.maxPrice.amount} ${job.maxPrice.currency}`;
    case 'deadline':
      return `can finish before the deadline`;
    case 'quote':
      return `${v('has', 'have')} quoted for this job`;
  }
}

/** What relaxing each constraint means, as advice to the buyer. */
export const ACTION: Readonly<Record<Constraint, string>> = {
  advert: '',
  workload: '',
  quote: '',
  allowlist: 'drop the allowlist',
  tier: 'accept a lower trust tier',
  region: 'drop the region constraint',
  gpu: 'relax the GPU requirement',
  cpu: 'ask for fewer CPU cores',
  memory: 'ask for less memory',
  price: 'raise maxPrice',
  deadline: 'extend the deadline (or the timeout)',
};

/** Each constraint's bit in a provider's failure mask. */
const BIT = Object.fromEntries(CONSTRAINTS.map((c, i) => [c, 1 << i])) as Record<Constraint, number>;

/**
 * The explanation of a set of verdicts. Each provider's failed constraints are
 * one bit mask, so the counts, the relaxations and the cascade below are passes
 * over a typed array (a market of 100k providers is explained in a few passes,
 * with no set per provider).
 */
export function explainVerdicts(pj: PreparedJob, verdicts: ProviderVerdict[]): MarketExplanation {
  const job = pj.job;
  const known = verdicts.length;
  let eligible = 0;
  const masks = new Uint16Array(known);
  const counts = new Map<string, number>();
  for (let i = 0; i < known; i++) {
    const v = verdicts[i]!;
    if (v.eligible) eligible++;
    const fs = v.failures;
    let m = 0;
    for (let k = 0; k < fs.length; k++) {
      const code = fs[k]!.code;
      m |= BIT[constraintOf(code)];
      // a code counts once per provider
      let again = false;
      for (let j = 0; j < k; j++) if (fs[j]!.code === code) again = true;
      if (!again) counts.set(code, (counts.get(code) ?? 0) + 1);
    }
    masks[i] = m;
  }
  const sortedCounts: Record<string, number> = {};
  for (const k of [...counts.keys()].sort()) sortedCounts[k] = counts.get(k)!;
  /** providers (of `pool`'s first `len`, or of all) failing the constraints in `bit` */
  const failingOf = (bit: number, pool?: Uint32Array, len = 0): number => {
    let c = 0;
    if (pool) for (let k = 0; k < len; k++) c += masks[pool[k]!]! & bit ? 1 : 0;
    else for (let i = 0; i < known; i++) c += masks[i]! & bit ? 1 : 0;
    return c;
  };

  const binding: Binding[] = [];
  for (const c of CONSTRAINTS) {
    const failing = failingOf(BIT[c]);
    if (failing > 0) binding.push({ constraint: c, failing, meeting: known - failing });
  }
  binding.sort((a, b) => b.failing - a.failing || CONSTRAINTS.indexOf(a.constraint) - CONSTRAINTS.indexOf(b.constraint));

  const relaxations: Relaxation[] = [];
  for (const c of RELAXABLE) {
    // providers failing c and nothing else (not having quoted aside): they would fit if c were relaxed
    const bit = BIT[c];
    const rest = ~(bit | BIT.quote);
    let gain = 0;
    let quoted = 0;
    for (let i = 0; i < known; i++) {
      const m = masks[i]!;
      if (m & bit && (m & rest) === 0) {
        gain++;
        if (!(m & BIT.quote)) quoted++;
      }
    }
    if (gain > 0) {
      const wait = gain - quoted;
      relaxations.push({ constraint: c, gain, quoted, text: `${ACTION[c]}: ${gain} more ${plural(gain, 'provider', 'providers')}${wait ? ` (${wait} of them ${plural(wait, 'has', 'have')} not quoted yet)` : ''}` });
    }
  }
  relaxations.sort((a, b) => b.gain - a.gain || RELAXABLE.indexOf(a.constraint) - RELAXABLE.indexOf(b.constraint));

  const expired = verdicts.filter((v) => v.failures.some((f) => f.code === REASON.ADVERT_EXPIRED)).map((v) => v.provider);

  let summary: string;
  if (known === 0) {
    summary = `No provider is known yet: no advert or offer has been seen for ${job.workload}.`;
  } else {
    // The cascade: a requirement nobody meets is said first ("no provider has 24 GiB of VRAM on one
    // card"); otherwise the requirement most providers meet (that some fail), then the next among
    // those that meet it, …, until nobody is left: "6 of 7 have 2 GPUs with 24 GiB each; but none
    // of them disclosed a region". Not having quoted comes last (it is not a requirement).
    let pool = new Uint32Array(known);
    for (let i = 0; i < known; i++) pool[i] = i;
    let len = known;
    const clauses: string[] = [];
    const left = new Set<Constraint>(binding.map((b) => b.constraint));
    while (len > 0 && left.size > 0) {
      let pick: Constraint | undefined;
      let pickMeet = -1;
      for (const c of CONSTRAINTS) {
        if (!left.has(c)) continue;
        const fails = failingOf(BIT[c], pool, len);
        if (fails === 0) {
          left.delete(c);
          continue;
        }
        const meet = len - fails;
        // a requirement nobody left meets is the binding one: say it first; otherwise the one most meet
        const rank = (m: number) => (m === 0 ? Infinity : m);
        const better = pick === undefined || (pick === 'quote' && c !== 'quote') || (c !== 'quote' && rank(meet) > rank(pickMeet));
        if (better) {
          pick = c;
          pickMeet = meet;
        }
      }
      if (pick === undefined) break;
      left.delete(pick);
      const meeting = pickMeet;
      if (clauses.length === 0) {
        clauses.push(meeting === 0 ? `no provider ${phrase(pick, job, false)}` : `${meeting} of ${known} ${phrase(pick, job, meeting !== 1)}`);
      } else {
        clauses.push(meeting === 0 ? `but ${len === 1 ? 'it does not meet this' : 'none of them'}${len === 1 ? `: ${phrase(pick, job, false)}` : ` ${phrase(pick, job, false)}`}` : `of those, ${meeting} ${phrase(pick, job, meeting !== 1)}`);
      }
      // those meeting the picked requirement go on to the next clause
      const bit = BIT[pick];
      const next = new Uint32Array(meeting);
      let w = 0;
      for (let k = 0; k < len; k++) if (!(masks[pool[k]!]! & bit)) next[w++] = pool[k]!;
      pool = next;
      len = w;
    }
    const head = eligible === 0 ? `No provider is eligible among ${known} known` : `${eligible} of ${known} known ${plural(known, 'provider is', 'providers are')} eligible`;
    summary = clauses.length ? `${head}: ${clauses.join('; ')}.` : `${head}.`;
    if (expired.length) summary += ` ${expired.length} ${plural(expired.length, 'advert has', 'adverts have')} expired.`;
    if (eligible === 0 && relaxations.length) summary += ` To widen the market: ${relaxations[0]!.text}.`;
  }
  return { job: pj.address, known, eligible, providers: verdicts, counts: sortedCounts, binding, relaxations, expired, summary };
}
