/**
 * Selection: one offer per provider (the book's rule), the seven gates, then
 * scoring by policy over the eligible offers, ranked by total (ties by DID).
 *
 * Scoring (floats appear only here, never in a gate):
 *   price      = bestPrice / price          (proportional; 1 for the cheapest)
 *   speed      = bestDuration / durationMs  (quoted duration, proportional)
 *   reputation = the provider's derived score (0.5 when unknown)
 *   trust      = community 0, standard 0.4, verified 0.8, private/enterprise 1.0
 *   total      = Σ weight(policy, dimension) × score(dimension)
 * "best" is over the eligible candidates. Ranked once: total descending, then
 * DID (rank-order.ts: the comparator's order, in linear time).
 *
 * Cost (scripts/bench/market.ts): one pass over the candidates runs the gates
 * and collects the raw figures into typed columns; scoring runs over the
 * columns; ranking and the DID order of the ineligible are radix sorts; then
 * one row per candidate. Given the node's OfferBook, the candidates are its
 * slots as they stand (already one per provider); given a list, it is reduced
 * to one offer per provider first.
 */
import { C0Error } from '../errors.js';
import type { Money } from '../records/money.js';
import type { Advert, Job, Offer, PolicyName, Tier } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import { DEFAULT_SKEW_MS } from '../records/freshness.js';
import { AdvertIndex, evaluate, prepareJob, quickEligible, type Failure } from './eligibility.js';
import { explainVerdicts, judgeAll, verdictOf, type MarketExplanation, type ProviderVerdict } from './explain.js';
import { providerOf } from '../pools/chain.js';
import { NO_REPUTATION, TRUST_SCORE, WEIGHTS, checkPolicy, parsePolicy, ratioScore, type Dimension, type ReputationView, type Weights } from './policy.js';
import { priceForScoring } from './scoring.js';
import { nameOrder, rankOrder } from './rank-order.js';
import { oneOfferPerProvider, type OfferBook } from './book.js';
import { compareDids } from '../records/did.js';
import { shortDid } from './short-did.js';

export { shortDid };

export interface Scores {
  price: number;
  speed: number;
  reputation: number;
  trust: number;
}

export interface Ranked {
  rank: number;
  provider: string;
  offer: string;
  advert: string;
  price: Money;
  durationMs: number;
  tier: Tier;
  scores: Scores;
  total: number;
}

export interface SelectInput {
  job: Opened<Job>;
  adverts: Iterable<Opened<Advert>> | AdvertIndex;
  /**
   * The offers: a node's OfferBook (already one slot per provider: its
   * candidates for the job are taken as they stand), or offers of any job
   * (others are ignored), several per provider reduced by the book's rule.
   */
  offers: Iterable<Opened<Offer>> | OfferBook;
  policy?: PolicyName | string;
  reputation?: ReputationView;
  now: number;
  skewMs?: number;
}

interface Base {
  job: string;
  policy: PolicyName;
  decidedAt: number;
  /** providers whose offer failed a gate, DID order, every failure */
  ineligible: ProviderVerdict[];
}
export interface Selected extends Base {
  ok: true;
  winner: Ranked;
  /** every eligible offer, best first (ties by DID) */
  ranked: Ranked[];
  why: string;
}
export interface NoneEligible extends Base {
  ok: false;
  ranked: [];
  explanation: MarketExplanation;
}
export type SelectResult = Selected | NoneEligible;

function checkInputs(input: SelectInput): void {
  if (!input || typeof input.now !== 'number' || !Number.isFinite(input.now)) throw new C0Error('MARKET_BAD_INPUT', 'select needs a numeric `now`', { field: 'now' });
}

/** Compare ranked entries: total descending, then provider DID ascending. */
export function compareRanked(a: { total: number; provider: string }, b: { total: number; provider: string }): number {
  return b.total - a.total || compareDids(a.provider, b.provider);
}

export function select(input: SelectInput): SelectResult {
  checkInputs(input);
  const policy = parsePolicy(input.policy);
  const pj = prepareJob(input.job);
  checkPolicy(policy, pj.job);
  const now = input.now;
  const skew = input.skewMs ?? DEFAULT_SKEW_MS;
  const rep = input.reputation ?? NO_REPUTATION;
  const index = input.adverts instanceof AdvertIndex ? input.adverts : new AdvertIndex(input.adverts);
  const cur = pj.job.maxPrice.currency;

  const cands = oneOfferPerProvider(input.offers, pj.address, cur, now, (o) => index.providerFor(o));
  // The gates, and the raw figures scoring needs, in one pass while each offer and its advert are in cache.
  const cap = cands.length;
  const price = new Float64Array(cap);
  const speed = new Float64Array(cap);
  const reputation = new Float64Array(cap);
  const trust = new Float64Array(cap);
  // Packed arrays (filled by push), not holey ones: V8 reads them faster.
  const eOffers: Opened<Offer>[] = [];
  const eAdverts: Opened<Advert>[] = [];
  const dids: string[] = [];
  const failed: ProviderVerdict[] = [];
  const failedDids: string[] = [];
  let bestPrice = Infinity;
  let bestDur = Infinity;
  let n = 0;
  for (let c = 0; c < cap; c++) {
    const offer = cands[c]!;
    // The quick test reads the advert's flattened facts; only when it says no (or the offer's advert
    // is not simply its live cited one) do the full gates run, to say why or to decide.
    const fa = index.facts(offer.record.advert);
    let advert: Opened<Advert> | undefined;
    let failures: Failure[] | undefined;
    if (fa !== undefined && quickEligible(pj, fa, offer, now, skew)) advert = fa.advert;
    else {
      advert = index.resolve(offer, now);
      failures = evaluate(pj, advert, offer, now, skew);
    }
    if (failures === undefined) {
      const p = priceForScoring(offer.record.price.amount);
      const d = offer.record.durationMs;
      price[n] = p;
      speed[n] = d;
      trust[n] = TRUST_SCORE[advert!.record.tier];
      if (p < bestPrice) bestPrice = p;
      if (d < bestDur) bestDur = d;
      eOffers.push(offer);
      eAdverts.push(advert!);
      dids.push(offer.signer);
      n++;
    } else {
      failed.push(verdictOf(offer.signer, advert?.address, offer.address, failures));
      failedDids.push(offer.signer);
    }
  }
  // Reputation in a loop of its own: a lookup per provider is bound by memory latency, and a tight
  // loop lets the processor overlap the lookups (measured at 100k offers: a fifth off the gate pass).
  // A pool member's offer is scored by the pool's reputation (docs/pools.md): the provider its advert stands for.
  for (let i = 0; i < n; i++) reputation[i] = clamp01(rep.scoreOf(eAdverts[i]!.record.pool ? providerOf(eAdverts[i]!) : dids[i]!));
  // DID order (a string sort of every ineligible provider would cost more than the whole ranking)
  const ineligible: ProviderVerdict[] = [];
  for (const i of nameOrder(failedDids)) ineligible.push(failed[i]!);
  const base = { job: pj.address, policy, decidedAt: now, ineligible };

  if (n === 0) {
    // explain across every known provider, including those that have not quoted
    const judged = new Map<string, Opened<Offer>>();
    const verdicts = judgeAll(pj, index, cands, now, skew, judged, true);
    return { ...base, ok: false, ranked: [], explanation: explainVerdicts(pj, verdicts, { index, offers: judged, now, skewMs: skew }) };
  }

  // score over the columns (raw price and duration become their proportional scores in place)
  const w = WEIGHTS[policy];
  const tot = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const sp = ratioScore(bestPrice, price[i]!);
    const ss = ratioScore(bestDur, speed[i]!);
    price[i] = sp;
    speed[i] = ss;
    tot[i] = w.price * sp + w.speed * ss + w.reputation * reputation[i]! + w.trust * trust[i]!;
  }
  // total descending, ties by DID: the order compareRanked gives, in linear time (rank-order.ts)
  const order = rankOrder(tot, dids, n);
  const ranked: Ranked[] = [];
  for (let r = 0; r < n; r++) {
    const i = order[r]!;
    const o = eOffers[i]!;
    const a = eAdverts[i]!;
    ranked.push({ rank: r + 1, provider: dids[i]!, offer: o.address, advert: a.address, price: o.record.price, durationMs: o.record.durationMs, tier: a.record.tier, scores: { price: price[i]!, speed: speed[i]!, reputation: reputation[i]!, trust: trust[i]! }, total: tot[i]! });
  }
  const winner = ranked[0]!;
  return { ...base, ok: true, winner, ranked, why: why(policy, w, ranked) };
}

function clamp01(x: number): number {
  return x > 1 ? 1 : x < 0 || Number.isNaN(x) ? 0 : x;
}

function fmt(x: number): string {
  return x.toFixed(3);
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** One line saying why the winner won. */
export function why(policy: PolicyName, w: Weights, ranked: Ranked[]): string {
  const a = ranked[0]!;
  const head = `${shortDid(a.provider)} wins under ${policy} at ${a.price.amount} ${a.price.currency}, ${seconds(a.durationMs)}`;
  const b = ranked[1];
  if (!b) return `${head}: the only eligible offer.`;
  if (a.total === b.total) return `${head}: tied with ${shortDid(b.provider)} at ${fmt(a.total)}; the lower DID breaks the tie.`;
  const dims: Dimension[] = ['price', 'speed', 'reputation', 'trust'];
  let up: Dimension | undefined;
  let down: Dimension | undefined;
  let upV = 0;
  let downV = 0;
  for (const d of dims) {
    const diff = w[d] * (a.scores[d] - b.scores[d]);
    if (diff > upV) {
      upV = diff;
      up = d;
    }
    if (diff < downV) {
      downV = diff;
      down = d;
    }
  }
  const lead = (d: Dimension): string => {
    switch (d) {
      case 'price':
        return `cheaper (${a.price.amount} vs ${b.price.amount} ${b.price.currency})`;
      case 'speed':
        return `faster (${seconds(a.durationMs)} vs ${seconds(b.durationMs)})`;
      case 'reputation':
        return `a better reputation (${fmt(a.scores.reputation)} vs ${fmt(b.scores.reputation)})`;
      case 'trust':
        return `a higher trust tier (${a.tier} vs ${b.tier})`;
    }
  };
  const lag = (d: Dimension): string => {
    switch (d) {
      case 'price': {
        // a price score of 0: the best price is 0 (every priced offer scores 0 against a free one), no ratio to give
        if (a.scores.price === 0) return `despite being dearer than a free offer (${a.price.amount} vs ${b.price.amount} ${b.price.currency})`;
        const pct = Math.round((b.scores.price / a.scores.price - 1) * 100);
        return `despite being ${pct}% dearer`;
      }
      case 'speed':
        return `despite being slower (${seconds(a.durationMs)} vs ${seconds(b.durationMs)})`;
      case 'reputation':
        return `despite a lower reputation (${fmt(a.scores.reputation)} vs ${fmt(b.scores.reputation)})`;
      case 'trust':
        return `despite a lower tier (${a.tier} vs ${b.tier})`;
    }
  };
  return `${head}: total ${fmt(a.total)} vs ${fmt(b.total)} for ${shortDid(b.provider)}: ${up ? lead(up) : 'ahead overall'}${down ? ', ' + lag(down) : ''}.`;
}
