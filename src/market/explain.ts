/**
 * Explaining an empty (or thin) market: across every known provider, which
 * requirements bind, said in one sentence, with what relaxing each binding
 * constraint would gain. Pure; `now` is injected; providers in DID order.
 */
import type { Advert, Job, Offer } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import { DEFAULT_SKEW_MS } from '../records/freshness.js';
import { AdvertIndex, REASON, evaluate, gib, prepareJob, type Failure, type PreparedJob } from './eligibility.js';
import { oneOfferPerProvider, preferOffer, type OfferBook } from './book.js';
import { nameOrder } from './rank-order.js';
import { CONSTRAINTS, RELAXABLE, constraintOf, type Constraint } from './constraints.js';
import { relaxationsOf, type Relaxation, type RelaxContext } from './relax.js';
import { duration } from './say.js';
import { askJudge } from './ask.js';

export { preferOffer };

export { CONSTRAINTS, RELAXABLE, constraintOf, type Constraint, type Relaxation, type RelaxContext };

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
  /** Whether a provider has a live presence now (the node's presence view): the hints say which providers they count are not live. */
  live?: (did: string) => boolean;
  /**
   * The offers for this job this node dropped for their dates, by signer (src/net/clock-drops.ts): said for a provider
   * with no offer held (a pool's member's, for the pool), and in the summary for those not known at all (a provider
   * whose clock is ahead has its adverts dropped too).
   */
  dropped?: ReadonlyMap<string, OfferDrop>;
}

/** An offer dropped for its dates as it came: issued past the clock-skew window, or already expired, by `byMs`. */
export interface OfferDrop {
  code: 'RECORD_FROM_FUTURE' | 'RECORD_EXPIRED';
  byMs: number;
}

/** OFFER_MISSING's message, with the offer that came and was dropped for its dates when there was one. */
function missingMessage(drop: OfferDrop | undefined, skewMs: number): string {
  if (!drop) return 'no offer for this job';
  const s = (ms: number) => `${Math.round(ms / 1000)} s`;
  return drop.code === 'RECORD_FROM_FUTURE'
    ? `no offer for this job: its offer came dated ${s(drop.byMs)} ahead of this node's clock, past the ${s(skewMs)} clock-skew window, and was dropped (RECORD_FROM_FUTURE): its clock or this node's is wrong (NTP)`
    : `no offer for this job: its offer came ${s(drop.byMs)} after it expired by this node's clock and was dropped (RECORD_EXPIRED): its clock or this node's is wrong (NTP), or it came late`;
}

/** A verdict, its keys always in this order (provider, advert, offer, eligible, failures). */
export function verdictOf(provider: string, advert: string | undefined, offer: string | undefined, failures: Failure[]): ProviderVerdict {
  const eligible = failures.length === 0;
  if (advert !== undefined) return offer !== undefined ? { provider, advert, offer, eligible, failures } : { provider, advert, eligible, failures };
  return offer !== undefined ? { provider, offer, eligible, failures } : { provider, eligible, failures };
}

/**
 * Evaluate every known provider (with or without an offer) for a job. DID order. With `asks` (an explanation), a
 * provider without an offer whose advert asks in another currency or above the job's maxPrice gets that reason
 * (ask.ts) instead of OFFER_MISSING: it will not quote. Without (the buyer's "has everyone quoted" check), every
 * provider without an offer is OFFER_MISSING, as before.
 */
export function judgeAll(pj: PreparedJob, index: AdvertIndex, offers: Iterable<Opened<Offer>> | OfferBook, now: number, skewMs: number, judged?: Map<string, Opened<Offer>>, asks = false, dropped?: (did: string) => OfferDrop | undefined): ProviderVerdict[] {
  const askOf = asks ? askJudge(pj.job) : undefined;
  const cands = oneOfferPerProvider(offers, pj.address, pj.job.maxPrice.currency, now, (o) => index.providerFor(o));
  if (judged) for (const o of cands) judged.set(o.address, o);
  // providers[i] quoted cands[i] for i < cands.length; the rest have an advert and no offer.
  // A pool is one provider (docs/pools.md): its members' pooled adverts are one of the index's
  // entries, counted once — as the member that quoted, or else the member first in DID order.
  const providers = cands.map((o) => o.signer);
  const quoted = new Set(cands.map((o) => index.entryOf(o.signer)));
  // The job's own signer (a node that both buys and provides) never quotes on its own job (the provider skips it):
  // left out, not "no offer for this job" (QA qaOps F9). An offer it did sign (the same key in another process) counts.
  const buyer = pj.opened.signer;
  for (const entry of index.entries.keys()) {
    if (quoted.has(entry)) continue;
    const p = index.firstMember(entry)!;
    if (p !== buyer) providers.push(p);
  }
  const out: ProviderVerdict[] = [];
  for (const i of nameOrder(providers)) {
    const p = providers[i]!;
    const offer = i < cands.length ? cands[i] : undefined;
    const advert = offer ? index.resolve(offer, now) : index.liveAt(p, now);
    const failures = evaluate(pj, advert, offer, now, skewMs) ?? [];
    if (!offer) failures.push((askOf && advert && askOf(advert.record)) || { gate: 'offer', code: REASON.OFFER_MISSING, field: 'offer', wanted: 'a live offer for this job', offered: null, message: missingMessage(dropped?.(p), skewMs) });
    out.push(verdictOf(p, advert?.address, offer?.address, failures));
  }
  return out;
}

export function explainMarket(input: MarketInput): MarketExplanation {
  const pj = prepareJob(input.job);
  const index = input.adverts instanceof AdvertIndex ? input.adverts : new AdvertIndex(input.adverts);
  const skewMs = input.skewMs ?? DEFAULT_SKEW_MS;
  const offers = new Map<string, Opened<Offer>>();
  // a drop stands for the provider its signer is (a pool's member: the pool, as the verdicts name it)
  const byEntry = new Map<string, OfferDrop>();
  for (const [signer, d] of input.dropped ?? []) byEntry.set(index.entryOf(signer), d);
  const dropped = byEntry.size ? (did: string) => byEntry.get(index.entryOf(did)) : undefined;
  const verdicts = judgeAll(pj, index, input.offers, input.now, skewMs, offers, true, dropped);
  const e = explainVerdicts(pj, verdicts, { index, offers, now: input.now, skewMs, ...(input.live ? { live: input.live } : {}), ...(dropped ? { dropped } : {}) });
  // drops from providers this node holds no advert or offer of (their adverts came dated ahead too): said all the same
  const unknown = [...byEntry.keys()].filter((p) => !verdicts.some((v) => index.entryOf(v.provider) === p));
  if (unknown.length) {
    const codes = [...new Set(unknown.map((p) => byEntry.get(p)!.code))].sort().join(', ');
    e.summary += ` ${unknown.length} ${plural(unknown.length, 'provider not known here', 'providers not known here')} sent an offer dropped for its dates (${codes}): a clock is wrong, ${plural(unknown.length, 'its', 'theirs')} or this node's.`;
  }
  // the buyer's own advert, left out by judgeAll, is said rather than silently missing from the count
  const self = pj.opened.signer;
  const own = index.liveAt(self, input.now);
  if (own !== undefined && own.record.workloads.includes(pj.job.workload) && !verdicts.some((v) => v.provider === self)) {
    e.summary = e.known === 0 ? `No provider but this node is known for ${pj.job.workload}: a node does not buy from itself.` : `${e.summary} (This node's own advert is not counted: a node does not buy from itself.)`;
  }
  return e;
}

const plural = (n: number, one: string, many: string) => (n === 1 ? one : many);

/**
 * The clause a constraint contributes to the summary ('has 24 GiB of VRAM on
 * one card'): `form` is 'one' (a provider has), 'many' (providers have) or
 * 'not' (a provider does not have).
 */
export function phrase(c: Constraint, job: Job, form: 'one' | 'many' | 'not'): string {
  const r = job.requirements;
  const v = (one: string, many: string, not: string) => (form === 'one' ? one : form === 'many' ? many : not);
  switch (c) {
    case 'advert':
      return v('has a live advert', 'have a live advert', 'has no live advert');
    case 'workload':
      return `${v('offers', 'offer', 'does not offer')} ${job.workload}`;
    case 'allowlist':
      return `${v('is', 'are', 'is not')} on the allowlist`;
    case 'tier':
      return r.tier === 'private' || r.tier === 'enterprise' ? `${v('claims', 'claim', 'does not claim')} tier ${r.tier}` : `${v('claims', 'claim', 'does not claim')} tier ${r.tier} or above`;
    case 'region':
      return `${v('disclosed', 'disclosed', 'did not disclose')} a region in ${r.regions?.join(', ') ?? '?'}`;
    case 'gpu': {
      const g = r.gpu!;
      const feats = g.features?.length ? ` with ${g.features.join(', ')}` : '';
      const have = v('has', 'have', 'does not have');
      return g.count === 1 ? `${have} ${gib(g.vramMiB)} of VRAM on one card${feats}` : `${have} ${g.count} GPUs with ${gib(g.vramMiB)} each${feats}`;
    }
    case 'cpu':
      // a requirement is a floor: "202 of 252 have at least 4 CPU cores", never "have 4" (QA qaWit F6)
      return `${v('has at least', 'have at least', 'has fewer than')} ${r.cpuCores} ${plural(r.cpuCores ?? 0, 'CPU core', 'CPU cores')}`;
    case 'memory':
      return `${v('has at least', 'have at least', 'has less than')} ${gib(r.memoryMiB ?? 0)} of memory`;
    case 'currency':
      return `${v('quotes', 'quote', 'does not quote')} in ${job.maxPrice.currency}`;
    case 'price':
      return `${v('asks at most', 'ask at most', 'asks more than')} ${job.maxPrice.amount} ${job.maxPrice.currency}`;
    case 'deadline':
      // the constraint holds two bounds (OFFER_OVER_TIMEOUT, OFFER_MISSES_DEADLINE): the sentence names both, so an offer
      // quoting 20 min for a job with a 10 min timeout is not said to miss a deadline hours away
      return `${v('can', 'can', 'cannot')} finish within the job's ${duration(job.timeoutMs)} timeout and before its deadline`;
    case 'quote':
      return v('has a live offer for this job', 'have a live offer for this job', 'has no live offer for this job');
  }
}

/** Constraints judged on an offer: a provider without a live offer neither meets nor fails them. */
const ON_OFFER: readonly Constraint[] = ['currency', 'price', 'deadline'];

/** Each constraint's bit in a provider's failure mask. */
const BIT = Object.fromEntries(CONSTRAINTS.map((c, i) => [c, 1 << i])) as Record<Constraint, number>;
/**
 * A bit beside the constraints': the provider has no offer. Not a constraint (binding and counts never read it); the
 * cascade does: a provider whose ask rules it out (ASK_*, no OFFER_MISSING) has no live offer all the same.
 */
const NO_OFFER = 1 << CONSTRAINTS.length;

/** The bits the cascade counts as failing a constraint: "has a live offer" fails every provider without one. */
const cascadeBit = (c: Constraint): number => (c === 'quote' ? BIT.quote | NO_OFFER : BIT[c]);

/**
 * The explanation of a set of verdicts. Each provider's failed constraints are
 * one bit mask, so the counts, the relaxations and the cascade below are passes
 * over a typed array (a market of 100k providers is explained in a few passes,
 * with no set per provider).
 */
/**
 * The explanation of a set of verdicts; with `ctx` (the adverts and offers
 * they were judged on), relaxation hints too (relax.ts).
 */
export function explainVerdicts(pj: PreparedJob, verdicts: ProviderVerdict[], ctx?: RelaxContext): MarketExplanation {
  const job = pj.job;
  const known = verdicts.length;
  let eligible = 0;
  const masks = new Uint16Array(known);
  const counts = new Map<string, number>();
  for (let i = 0; i < known; i++) {
    const v = verdicts[i]!;
    if (v.eligible) eligible++;
    const fs = v.failures;
    let m = v.offer === undefined ? NO_OFFER : 0;
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

  const relaxations: Relaxation[] = ctx ? relaxationsOf(pj, verdicts, ctx) : [];

  const expired = verdicts.filter((v) => v.failures.some((f) => f.code === REASON.ADVERT_EXPIRED)).map((v) => v.provider);

  let summary: string;
  if (known === 0) {
    summary = `No provider is known yet: no advert or offer has been seen for ${job.workload}.`;
  } else {
    // The cascade: a requirement nobody meets is said first ("no provider has 24 GiB of VRAM on one
    // card"); otherwise the requirement most providers meet (that some fail), then the next among
    // those that meet it, …, until nobody is left: "6 of 7 have 2 GPUs with 24 GiB each; but none
    // of them disclosed a region". Not having quoted comes last (it is not a requirement), but
    // before any requirement judged on the offer (currency, price, deadline): a provider without
    // a live offer neither meets nor fails those, so it must leave the pool first. One whose advert's
    // ask rules it out (ASK_*) is judged on currency and price by that ask, so those need not wait
    // for it; it has no live offer all the same (NO_OFFER), and the deadline, judged on an offer only,
    // waits until it has left (at its currency or price clause, or at "has a live offer").
    let pool = new Uint32Array(known);
    for (let i = 0; i < known; i++) pool[i] = i;
    let len = known;
    const clauses: string[] = [];
    const left = new Set<Constraint>(binding.map((b) => b.constraint));
    while (len > 0 && left.size > 0) {
      let pick: Constraint | undefined;
      let pickMeet = -1;
      const unquoted = failingOf(BIT.quote, pool, len) > 0;
      const offerless = unquoted || failingOf(NO_OFFER, pool, len) > 0;
      for (const c of CONSTRAINTS) {
        if (!left.has(c) || (ON_OFFER.includes(c) && (c === 'deadline' ? offerless : unquoted))) continue;
        const fails = failingOf(cascadeBit(c), pool, len);
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
      const some = (n: number) => phrase(pick!, job, n === 1 ? 'one' : 'many');
      if (clauses.length === 0) {
        clauses.push(meeting === 0 ? `no provider ${phrase(pick, job, 'one')}` : `${meeting} of ${known} ${some(meeting)}`);
      } else if (meeting === 0) {
        clauses.push(len === 1 ? `but it ${phrase(pick, job, 'not')}` : `but none of them ${phrase(pick, job, 'one')}`);
      } else {
        clauses.push(`of those, ${meeting} ${some(meeting)}`);
      }
      // those meeting the picked requirement go on to the next clause
      const bit = cascadeBit(pick);
      const next = new Uint32Array(meeting);
      let w = 0;
      for (let k = 0; k < len; k++) if (!(masks[pool[k]!]! & bit)) next[w++] = pool[k]!;
      pool = next;
      len = w;
    }
    const head = eligible === 0 ? `No provider is eligible among ${known} known` : `${eligible} of ${known} known ${plural(known, 'provider is', 'providers are')} eligible`;
    summary = clauses.length ? `${head}: ${clauses.join('; ')}.` : `${head}.`;
    if (expired.length) summary += ` ${expired.length} ${plural(expired.length, 'advert has', 'adverts have')} expired.`;
    const lapsed = verdicts.filter((v) => v.failures.some((f) => f.code === REASON.OFFER_EXPIRED)).length;
    if (lapsed) summary += ` ${lapsed} ${plural(lapsed, 'offer has', 'offers have')} expired.`;
    // offers that came and were dropped for their dates: a wrong clock looks like a provider that never quoted
    const dropped = ctx?.dropped ? verdicts.filter((v) => v.offer === undefined && v.failures.some((f) => f.code === REASON.OFFER_MISSING) && ctx.dropped!(v.provider)) : [];
    if (dropped.length) {
      const codes = [...new Set(dropped.map((v) => ctx!.dropped!(v.provider)!.code))].sort().join(', ');
      summary += ` ${dropped.length} ${plural(dropped.length, "provider's offer was", "providers' offers were")} dropped for ${plural(dropped.length, 'its', 'their')} dates (${codes}): a clock is wrong, ${plural(dropped.length, 'its', 'theirs')} or this node's.`;
    }
    if (eligible === 0 && relaxations.length) summary += ` To widen the market: ${relaxations[0]!.text}.`;
  }
  return { job: pj.address, known, eligible, providers: verdicts, counts: sortedCounts, binding, relaxations, expired, summary };
}
