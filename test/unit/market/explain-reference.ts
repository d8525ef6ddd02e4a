/**
 * THE REFERENCE (test oracle): the explanation as first written, with Sets per
 * provider and a string sort, kept verbatim so the faster src/market/explain.ts
 * can be property-tested to give exactly the same explanation.
 *
 * Explaining an empty (or thin) market: across every known provider, which
 * requirements bind, said in one sentence, with what relaxing each binding
 * constraint would gain. Pure; `now` is injected; providers in DID order.
 */
import type { Advert, Job, Offer } from '../../../src/records/kinds.js';
import { ACTION, CONSTRAINTS, RELAXABLE, constraintOf, phrase, type Binding, type Constraint, type MarketExplanation, type ProviderVerdict, type Relaxation } from '../../../src/market/explain.js';
import type { Opened } from '../../../src/records/envelope.js';
import { DEFAULT_SKEW_MS } from '../../../src/records/freshness.js';
import { AdvertIndex, REASON, evaluate, prepareJob, type PreparedJob } from '../../../src/market/eligibility.js';
import { preferOffer } from '../../../src/market/book.js';

export interface MarketInput {
  job: Opened<Job>;
  adverts: Iterable<Opened<Advert>> | AdvertIndex;
  offers: Iterable<Opened<Offer>>;
  now: number;
  skewMs?: number;
}

/** Evaluate every known provider (with or without an offer) for a job. DID order. */
export function judgeAll(pj: PreparedJob, index: AdvertIndex, offers: Iterable<Opened<Offer>>, now: number, skewMs: number): ProviderVerdict[] {
  const best = new Map<string, Opened<Offer>>();
  const cur = pj.job.maxPrice.currency;
  for (const o of offers) {
    if (o.record.job !== pj.address) continue;
    const b = best.get(o.signer);
    if (!b || preferOffer(o, b, cur, now)) best.set(o.signer, o);
  }
  const providers = new Set<string>([...best.keys(), ...index.latest.keys()]);
  const out: ProviderVerdict[] = [];
  for (const p of [...providers].sort()) {
    const offer = best.get(p);
    const advert = offer ? index.resolve(offer, now) : index.latest.get(p);
    const failures = evaluate(pj, advert, offer, now, skewMs) ?? [];
    if (!offer) failures.push({ gate: 'offer', code: REASON.OFFER_MISSING, field: 'offer', wanted: 'a live offer for this job', offered: null, message: 'has not quoted for this job' });
    out.push({ provider: p, ...(advert ? { advert: advert.address } : {}), ...(offer ? { offer: offer.address } : {}), eligible: failures.length === 0, failures });
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

export function explainVerdicts(pj: PreparedJob, verdicts: ProviderVerdict[]): MarketExplanation {
  const job = pj.job;
  const known = verdicts.length;
  const eligible = verdicts.filter((v) => v.eligible).length;
  const counts: Record<string, number> = {};
  const groups = verdicts.map((v) => {
    const s = new Set<Constraint>();
    const codes = new Set<string>();
    for (const f of v.failures) {
      s.add(constraintOf(f.code));
      codes.add(f.code);
    }
    for (const c of codes) counts[c] = (counts[c] ?? 0) + 1;
    return s;
  });
  const sortedCounts: Record<string, number> = {};
  for (const k of Object.keys(counts).sort()) sortedCounts[k] = counts[k]!;

  const binding: Binding[] = [];
  for (const c of CONSTRAINTS) {
    const failing = groups.filter((g) => g.has(c)).length;
    if (failing > 0) binding.push({ constraint: c, failing, meeting: known - failing });
  }
  binding.sort((a, b) => b.failing - a.failing || CONSTRAINTS.indexOf(a.constraint) - CONSTRAINTS.indexOf(b.constraint));

  const relaxations: Relaxation[] = [];
  for (const c of RELAXABLE) {
    let gain = 0;
    let quoted = 0;
    for (const g of groups) {
      const others = [...g].filter((x) => x !== c && x !== 'quote');
      if (g.has(c) && others.length === 0) {
        gain++;
        if (!g.has('quote')) quoted++;
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
    let pool = groups.map((_, i) => i);
    const clauses: string[] = [];
    const left = new Set<Constraint>(binding.map((b) => b.constraint));
    while (pool.length > 0 && left.size > 0) {
      let pick: Constraint | undefined;
      let pickMeet = -1;
      for (const c of CONSTRAINTS) {
        if (!left.has(c)) continue;
        const fails = pool.filter((i) => groups[i]!.has(c)).length;
        if (fails === 0) {
          left.delete(c);
          continue;
        }
        const meet = pool.length - fails;
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
        clauses.push(meeting === 0 ? `but ${pool.length === 1 ? 'it does not meet this' : 'none of them'}${pool.length === 1 ? `: ${phrase(pick, job, false)}` : ` ${phrase(pick, job, false)}`}` : `of those, ${meeting} ${phrase(pick, job, meeting !== 1)}`);
      }
      pool = pool.filter((i) => !groups[i]!.has(pick!));
    }
    const head = eligible === 0 ? `No provider is eligible among ${known} known` : `${eligible} of ${known} known ${plural(known, 'provider is', 'providers are')} eligible`;
    summary = clauses.length ? `${head}: ${clauses.join('; ')}.` : `${head}.`;
    if (expired.length) summary += ` ${expired.length} ${plural(expired.length, 'advert has', 'adverts have')} expired.`;
    if (eligible === 0 && relaxations.length) summary += ` To widen the market: ${relaxations[0]!.text}.`;
  }
  return { job: pj.address, known, eligible, providers: verdicts, counts: sortedCounts, binding, relaxations, expired, summary };
}
