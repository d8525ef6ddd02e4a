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
import { CONSTRAINTS, constraintOf, phrase, type Binding, type Constraint, type MarketExplanation, type ProviderVerdict, type RelaxContext } from '../../../src/market/explain.js';
import { relaxationsOf } from '../../../src/market/relax.js';
import type { Opened } from '../../../src/records/envelope.js';
import { DEFAULT_SKEW_MS } from '../../../src/records/freshness.js';
import { AdvertIndex, REASON, evaluate, prepareJob, type PreparedJob } from '../../../src/market/eligibility.js';
import { preferOffer } from '../../../src/market/book.js';
import { askJudge } from '../../../src/market/ask.js';

export interface MarketInput {
  job: Opened<Job>;
  adverts: Iterable<Opened<Advert>> | AdvertIndex;
  offers: Iterable<Opened<Offer>>;
  now: number;
  skewMs?: number;
}

/** Evaluate every known provider (with or without an offer) for a job. DID order. */
export function judgeAll(pj: PreparedJob, index: AdvertIndex, offers: Iterable<Opened<Offer>>, now: number, skewMs: number, judged?: Map<string, Opened<Offer>>): ProviderVerdict[] {
  const best = new Map<string, Opened<Offer>>();
  const cur = pj.job.maxPrice.currency;
  for (const o of offers) {
    if (o.record.job !== pj.address) continue;
    const b = best.get(o.signer);
    if (!b || preferOffer(o, b, cur, now)) best.set(o.signer, o);
  }
  if (judged) for (const o of best.values()) judged.set(o.address, o);
  const providers = new Set<string>([...best.keys(), ...index.latest.keys()]);
  const out: ProviderVerdict[] = [];
  for (const p of [...providers].sort()) {
    const offer = best.get(p);
    const advert = offer ? index.resolve(offer, now) : index.liveAt(p, now);
    const failures = evaluate(pj, advert, offer, now, skewMs) ?? [];
    // no offer: the advert's ask may say why (the ask rule is one shared implementation, src/market/ask.ts)
    const ask = !offer && advert ? askJudge(pj.job)(advert.record) : undefined;
    if (ask) failures.push(ask);
    else if (!offer) failures.push({ gate: 'offer', code: REASON.OFFER_MISSING, field: 'offer', wanted: 'a live offer for this job', offered: null, message: 'no offer for this job' });
    out.push({ provider: p, ...(advert ? { advert: advert.address } : {}), ...(offer ? { offer: offer.address } : {}), eligible: failures.length === 0, failures });
  }
  return out;
}

export function explainMarket(input: MarketInput): MarketExplanation {
  const pj = prepareJob(input.job);
  const index = input.adverts instanceof AdvertIndex ? input.adverts : new AdvertIndex(input.adverts);
  const skewMs = input.skewMs ?? DEFAULT_SKEW_MS;
  const offers = new Map<string, Opened<Offer>>();
  const verdicts = judgeAll(pj, index, input.offers, input.now, skewMs, offers);
  return explainVerdicts(pj, verdicts, { index, offers, now: input.now, skewMs });
}

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);

export function explainVerdicts(pj: PreparedJob, verdicts: ProviderVerdict[], ctx: RelaxContext): MarketExplanation {
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

  // the hints are one shared implementation (src/market/relax.ts), checked by relaxing and re-running
  const relaxations = relaxationsOf(pj, verdicts, ctx);

  const expired = verdicts.filter((v) => v.failures.some((f) => f.code === REASON.ADVERT_EXPIRED)).map((v) => v.provider);

  let summary: string;
  if (known === 0) {
    summary = `No provider is known yet: no advert or offer has been seen for ${job.workload}.`;
  } else {
    // The cascade: a requirement nobody meets is said first ("no provider has 24 GiB of VRAM on one
    // card"); otherwise the requirement most providers meet (that some fail), then the next among
    // those that meet it, …, until nobody is left: "6 of 7 have 2 GPUs with 24 GiB each; but none
    // of them disclosed a region". Not having quoted comes last (it is not a requirement).
    // "has a live offer" is failed by every provider without one, its ask ruling it out or not
    const fails_ = (i: number, c: Constraint) => groups[i]!.has(c) || (c === 'quote' && verdicts[i]!.offer === undefined);
    let pool = groups.map((_, i) => i);
    const clauses: string[] = [];
    const left = new Set<Constraint>(binding.map((b) => b.constraint));
    while (pool.length > 0 && left.size > 0) {
      let pick: Constraint | undefined;
      let pickMeet = -1;
      const unquoted = pool.some((i) => groups[i]!.has('quote'));
      const offerless = pool.some((i) => groups[i]!.has('quote') || verdicts[i]!.offer === undefined);
      for (const c of CONSTRAINTS) {
        if (!left.has(c)) continue;
        // judged on the offer: not while some in the pool have no live offer (currency and price: judged on the
        // ask of one whose ask rules it out, so only those that may still quote hold them back)
        if ((unquoted && (c === 'currency' || c === 'price')) || (offerless && c === 'deadline')) continue;
        const fails = pool.filter((i) => fails_(i, c)).length;
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
        clauses.push(meeting === 0 ? `no provider ${phrase(pick, job, 'one')}` : `${meeting} of ${known} ${phrase(pick, job, meeting === 1 ? 'one' : 'many')}`);
      } else if (meeting === 0) {
        clauses.push(pool.length === 1 ? `but it ${phrase(pick, job, 'not')}` : `but none of them ${phrase(pick, job, 'one')}`);
      } else {
        clauses.push(`of those, ${meeting} ${phrase(pick, job, meeting === 1 ? 'one' : 'many')}`);
      }
      pool = pool.filter((i) => !fails_(i, pick!));
    }
    const head = eligible === 0 ? `No provider is eligible among ${known} known` : `${eligible} of ${known} known ${plural(known, 'provider is', 'providers are')} eligible`;
    summary = clauses.length ? `${head}: ${clauses.join('; ')}.` : `${head}.`;
    if (expired.length) summary += ` ${expired.length} ${plural(expired.length, 'advert has', 'adverts have')} expired.`;
    const lapsed = verdicts.filter((v) => v.failures.some((f) => f.code === REASON.OFFER_EXPIRED)).length;
    if (lapsed) summary += ` ${lapsed} ${plural(lapsed, 'offer has', 'offers have')} expired.`;
    if (eligible === 0 && relaxations.length) summary += ` To widen the market: ${relaxations[0]!.text}.`;
  }
  return { job: pj.address, known, eligible, providers: verdicts, counts: sortedCounts, binding, relaxations, expired, summary };
}
