/**
 * Signed, auditable decisions (spec: "whoever decides can prove afterwards why").
 *
 * Who may decide for a job (spec: "There is no globally authoritative matcher"):
 *   - the buyer itself (the job's signer);
 *   - a gateway the buyer delegated to by a `c0mpute.delegation/1` signed by the
 *     buyer, naming that gateway, live at the decision time, whose scope covers
 *     the job's workload and whose price ceiling the winning price is within;
 *   - a steward the caller configured (an organisation's scheduler on a private overlay).
 * Anyone else is refused with a code.
 *
 * A selection names the job, the buyer, the policy, the winning offer, every
 * considered offer (one per provider, DID order; eligible or not) and the
 * decision time. `auditSelection` recomputes the decision from records alone.
 */
import { C0Error } from '../errors.js';
import type { Money } from '../records/money.js';
import { FIRST_CLAIM_POLICY, NONDELIVERY_PROOF_MAX, T, type Delegation, type Job, type Offer, type Selection } from '../records/kinds.js';
import { auditFirstClaimSelection } from '../matching/first-claim.js';
import { seal, type Opened } from '../records/envelope.js';
import { compareDids, didFromPublicKey } from '../records/did.js';
import type { Signer } from '../records/ed25519.js';
import { cmpAmount } from './amount.js';
import { priceForScoring } from './scoring.js';
import { RecordSet } from './recordset.js';
import { plural } from '../util/text.js';
import { select, type Ranked, type Selected, type SelectResult } from './select.js';
import type { ReputationView } from './policy.js';
import { deriveReputation, type TrustSources } from '../reputation/derive.js';
import { AdvertIndex, type Failure } from './eligibility.js';
import { preferOffer } from './book.js';
import { duration, isoTime } from './say.js';
import { DEFAULT_SKEW_MS } from '../records/freshness.js';

export const MAX_CONSIDERED = 4096;

/**
 * The largest selection signed whole (envelope bytes): what a non-delivery's proof can carry
 * (NONDELIVERY_PROOF_MAX.selection, 40 KiB; under the 64 KiB envelope bound), so a buyer can always prove a winner
 * did not deliver. About 370 considered offers; past it, sealFitted.
 */
export const SELECTION_MAX_BYTES = NONDELIVERY_PROOF_MAX.selection;

export type Authority = { as: 'buyer' } | { as: 'gateway'; delegation: string } | { as: 'steward' };

export interface AuthorityInput {
  decider: string;
  job: Opened<Job>;
  /** the delegation the decider claims to act under */
  delegation?: Opened<Delegation>;
  /** configured stewards (DIDs) */
  stewards?: readonly string[];
  /** the winning price, checked against a delegation's ceiling */
  winnerPrice?: Money;
  now: number;
}

/** Throws a C0Error unless `decider` may decide for `job` at `now`. */
export function checkDeciderAuthority(i: AuthorityInput): Authority {
  const buyer = i.job.signer;
  if (i.decider === buyer) return { as: 'buyer' };
  if (i.delegation) {
    const d = i.delegation;
    if (d.type !== T.delegation) throw new C0Error('DELEGATION_NOT_A_DELEGATION', `expected a ${T.delegation} record, got ${d.type}`, { field: 'delegation' });
    if (d.signer !== buyer) throw new C0Error('DELEGATION_NOT_FROM_BUYER', `delegation ${d.address} is signed by ${d.signer}, not by the job's buyer ${buyer}`, { field: 'delegation' });
    if (d.record.gateway !== i.decider) throw new C0Error('DELEGATION_WRONG_GATEWAY', `delegation ${d.address} names gateway ${d.record.gateway}, not ${i.decider}`, { field: 'delegation.gateway' });
    if (d.record.expiresAt <= i.now) throw new C0Error('DELEGATION_EXPIRED', `delegation ${d.address} expired at ${isoTime(d.record.expiresAt)}`, { field: 'delegation.expiresAt' });
    if (d.record.issuedAt > i.now) throw new C0Error('DELEGATION_NOT_YET_VALID', `delegation ${d.address} starts at ${isoTime(d.record.issuedAt)}`, { field: 'delegation.issuedAt' });
    const s = d.record.scope;
    if (s.workloads && !s.workloads.includes(i.job.record.workload)) {
      throw new C0Error('DELEGATION_WORKLOAD_OUT_OF_SCOPE', `delegation ${d.address} covers ${s.workloads.join(', ')}, not ${i.job.record.workload}`, { field: 'delegation.scope.workloads' });
    }
    if (s.maxPrice && i.winnerPrice) {
      if (s.maxPrice.currency !== i.winnerPrice.currency) {
        throw new C0Error('DELEGATION_PRICE_CURRENCY', `delegation ceiling is in ${s.maxPrice.currency}, the winning price in ${i.winnerPrice.currency} (never converted)`, { field: 'delegation.scope.maxPrice' });
      }
      if (cmpAmount(i.winnerPrice.amount, s.maxPrice.amount) > 0) {
        throw new C0Error('DELEGATION_PRICE_OUT_OF_SCOPE', `winning price ${i.winnerPrice.amount} ${i.winnerPrice.currency} is above the delegation's ceiling ${s.maxPrice.amount}`, { field: 'delegation.scope.maxPrice' });
      }
    }
    return { as: 'gateway', delegation: d.address };
  }
  if (i.stewards?.includes(i.decider)) return { as: 'steward' };
  throw new C0Error('DECIDER_NOT_AUTHORIZED', `${i.decider} is neither the buyer, a delegated gateway nor a configured steward for job ${i.job.address}`, { field: 'signer' });
}

/** Every offer the decision considered, one per provider, DID order. */
export function consideredOf(result: SelectResult): Array<{ provider: string; offer: string }> {
  const out: Array<{ provider: string; offer: string }> = [];
  for (const r of result.ranked) out.push({ provider: r.provider, offer: r.offer });
  for (const v of result.ineligible) if (v.offer) out.push({ provider: v.provider, offer: v.offer });
  return out.sort((a, b) => compareDids(a.provider, b.provider));
}

export interface SignSelectionInput {
  result: SelectResult;
  job: Opened<Job>;
  signer: Signer;
  delegation?: Opened<Delegation>;
  stewards?: readonly string[];
  /**
   * The winning offer, when it is not the result's first (a failover to the
   * runner-up). It must be a ranked offer of a provider not excluded.
   */
  winner?: string;
  /**
   * Providers no longer under consideration (tried already): left out of
   * `considered`, so recomputing the decision from the selection's own
   * offers gives this winner.
   */
  excluded?: ReadonlySet<string>;
  /** When the decision was made (default: the result's decidedAt). */
  decidedAt?: number;
  /**
   * The considered offers by address (the book's, or the records'): when given, a selection naming an offer issued
   * after the decision (beyond the clock-skew window) is refused, as its audit would fail (SELECTION_OFFER_AFTER_DECISION).
   */
  offerAt?: (address: string) => Opened<Offer> | undefined;
  /** The clock-skew window for the decision-time checks (default DEFAULT_SKEW_MS). */
  skewMs?: number;
}

/**
 * How far before the job's `announcedAt` a decision may be dated: not at all when the buyer decides (the job's time is
 * its own clock's), the clock-skew window when a gateway or a steward does (its clock may be behind the buyer's).
 */
function beforeJobSlack(decider: string, job: Opened<Job>, skewMs: number): number {
  return decider === job.signer ? 0 : skewMs;
}

/** Sign a `c0mpute.selection/1` for a result, after checking the signer may decide. */
export function signSelection(i: SignSelectionInput): Opened<Selection> {
  const r = i.result;
  if (!r.ok) throw new C0Error('SELECTION_NO_WINNER', 'no offer was eligible: there is nothing to select', { field: 'result' });
  if (r.job !== i.job.address) throw new C0Error('SELECTION_JOB_MISMATCH', `the result is for job ${r.job}, not ${i.job.address}`, { field: 'job' });
  const excluded = i.excluded ?? new Set<string>();
  const winner = i.winner === undefined ? r.winner : r.ranked.find((x) => x.offer === i.winner);
  if (!winner || excluded.has(winner.provider)) throw new C0Error('SELECTION_WINNER_NOT_CONSIDERED', 'the winner is not a ranked offer of a provider still under consideration', { field: 'winner' });
  const decidedAt = i.decidedAt ?? r.decidedAt;
  const decider = didFromPublicKey(i.signer.publicKey);
  const skew = i.skewMs ?? DEFAULT_SKEW_MS;
  // a decision dated before the job existed, or before an offer it weighs was made, cannot be (its audit would fail)
  if (decidedAt < i.job.record.announcedAt - beforeJobSlack(decider, i.job, skew)) {
    throw new C0Error('SELECTION_DECIDED_BEFORE_JOB', `the decision time ${isoTime(decidedAt)} is before the job was announced (${isoTime(i.job.record.announcedAt)})`, { field: 'decidedAt' });
  }
  const auth = checkDeciderAuthority({ decider, job: i.job, ...(i.delegation ? { delegation: i.delegation } : {}), ...(i.stewards ? { stewards: i.stewards } : {}), winnerPrice: winner.price, now: decidedAt });
  const all = consideredOf(r).filter((c) => !excluded.has(c.provider));
  if (i.offerAt) {
    for (const c of all) {
      const o = i.offerAt(c.offer);
      if (o && o.record.issuedAt > decidedAt + skew) {
        throw new C0Error('SELECTION_OFFER_AFTER_DECISION', `offer ${c.offer} (${c.provider}) is issued at ${isoTime(o.record.issuedAt)}, after the decision time ${isoTime(decidedAt)} (beyond the clock-skew window)`, { field: 'decidedAt' });
      }
    }
  }
  const rec = (considered: Selection['considered']): Selection => ({ job: r.job, buyer: i.job.signer, policy: r.policy, winner: winner.offer, considered, decidedAt, ...(auth.as === 'gateway' ? { delegation: auth.delegation } : {}) });
  if (all.length <= MAX_CONSIDERED) {
    const whole = seal(T.selection, rec(all), i.signer);
    if (whole.bytes.length <= SELECTION_MAX_BYTES) return whole;
  }
  return sealFitted(r, winner, excluded, rec, i.signer);
}

/**
 * A selection naming every considered offer would be over SELECTION_MAX_BYTES (about 370 offers; a buyer's
 * book keeps every offer for its own jobs, priced within the job or not). It names instead as many as fit,
 * in this order of preference: the winner; the eligible offers that set the best price and the best
 * duration (every proportional score is relative to them, so every kept offer scores as it did, and
 * recomputing from the named offers gives the same winner); the other eligible offers, best ranked
 * first; the ineligible ones. Offers left out show in an audit as offers the selection did not consider
 * (a note, not a difference). docs/market.md §6.
 */
function sealFitted(r: Selected, winner: Ranked, excluded: ReadonlySet<string>, rec: (c: Selection['considered']) => Selection, signer: Signer): Opened<Selection> {
  const ranked = r.ranked.filter((x) => !excluded.has(x.provider));
  // the offers holding the best price and the best duration among those still considered
  let cheapest = winner;
  let fastest = winner;
  for (const x of ranked) {
    if (priceForScoring(x.price.amount) < priceForScoring(cheapest.price.amount)) cheapest = x;
    if (x.durationMs < fastest.durationMs) fastest = x;
  }
  const order: Array<{ provider: string; offer: string }> = [];
  const seen = new Set<string>();
  const put = (provider: string, offer: string) => {
    if (seen.has(offer)) return;
    seen.add(offer);
    order.push({ provider, offer });
  };
  for (const x of [winner, cheapest, fastest, ...ranked]) put(x.provider, x.offer);
  for (const v of r.ineligible) if (v.offer && !excluded.has(v.provider)) put(v.provider, v.offer);
  const sealN = (n: number) => seal(T.selection, rec(order.slice(0, n).sort((a, b) => compareDids(a.provider, b.provider))), signer);
  // the largest prefix that fits (the first three always do: an entry is about 110 bytes)
  let lo = 3;
  let hi = Math.min(order.length, MAX_CONSIDERED);
  let best = sealN(Math.min(lo, order.length));
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    const s = sealN(mid);
    if (s.bytes.length <= SELECTION_MAX_BYTES) {
      best = s;
      lo = mid;
    } else hi = mid - 1;
  }
  return best;
}

// ---------------------------------------------------------------------------
// Audit
// ---------------------------------------------------------------------------

export interface Difference {
  code: string;
  message: string;
  address?: string;
  claimed?: unknown;
  recomputed?: unknown;
}

export interface AuditResult {
  reproduces: boolean;
  selection: string;
  job: string;
  policy: Selection['policy'];
  decider: string;
  decidedAt: number;
  authority?: Authority;
  claimedWinner: string;
  recomputedWinner?: string;
  differences: Difference[];
  /** observations that do not make the audit fail */
  notes: string[];
  result?: SelectResult;
}

export interface AuditInput {
  selection: Opened<Selection>;
  records: RecordSet | Iterable<Opened>;
  stewards?: readonly string[];
  /** reputation to score with; default: derived from the records' receipts, acceptances, non-deliveries and offers as of decidedAt, from the buyer's point of view with `trust` */
  reputation?: ReputationView;
  /** the buyer's trust sources, when recomputing its reputation view (default: first-hand evidence only) */
  trust?: TrustSources;
  skewMs?: number;
}

export function auditSelection(i: AuditInput): AuditResult {
  const sel = i.selection;
  if (!sel || sel.type !== T.selection) throw new C0Error('AUDIT_NOT_A_SELECTION', `expected a ${T.selection} record, got ${String(sel?.type)}`, { field: 'selection' });
  const rs = i.records instanceof RecordSet ? i.records : new RecordSet(i.records);
  const s = sel.record;
  const diffs: Difference[] = [];
  const notes: string[] = [];
  const base = { selection: sel.address, job: s.job, policy: s.policy, decider: sel.signer, decidedAt: s.decidedAt, claimedWinner: s.winner };
  const done = (extra: Partial<AuditResult>): AuditResult => ({ ...base, ...extra, reproduces: diffs.length === 0, differences: diffs, notes });
  if (s.policy === FIRST_CLAIM_POLICY) {
    // An open order's first valid claim (docs/matching.md "How "first" is audited").
    const a = auditFirstClaimSelection(sel, (addr) => rs.get(addr), i.skewMs);
    diffs.push(...a.differences);
    notes.push(...a.notes);
    return done(a.recomputedWinner ? { recomputedWinner: a.recomputedWinner } : {});
  }

  const job = rs.getTyped<Job>(s.job, T.job);
  if (!job) {
    diffs.push({ code: 'AUDIT_MISSING_RECORD', message: `the job ${s.job} is not among the records`, address: s.job });
    return done({});
  }
  if (s.buyer !== job.signer) diffs.push({ code: 'AUDIT_BUYER_MISMATCH', message: `the selection names buyer ${s.buyer}, the job is signed by ${job.signer}`, claimed: s.buyer, recomputed: job.signer });
  // an impossible decision time: it would choose which evidence and which offers count
  const skew = i.skewMs ?? DEFAULT_SKEW_MS;
  if (s.decidedAt < job.record.announcedAt - beforeJobSlack(sel.signer, job, skew)) {
    diffs.push({ code: 'AUDIT_DECIDED_BEFORE_JOB', message: `the selection is dated ${isoTime(s.decidedAt)}, before its job was announced (${isoTime(job.record.announcedAt)})`, claimed: s.decidedAt, recomputed: job.record.announcedAt });
  }

  // the offers named
  const offers: Opened<Offer>[] = [];
  for (const c of s.considered) {
    const o = rs.getTyped<Offer>(c.offer, T.offer);
    if (!o) {
      diffs.push({ code: 'AUDIT_MISSING_RECORD', message: `considered offer ${c.offer} (${c.provider}) is not among the records`, address: c.offer });
      continue;
    }
    if (o.signer !== c.provider) diffs.push({ code: 'AUDIT_PROVIDER_MISMATCH', message: `offer ${c.offer} is signed by ${o.signer}, the selection says ${c.provider}`, address: c.offer, claimed: c.provider, recomputed: o.signer });
    if (o.record.job !== s.job) diffs.push({ code: 'AUDIT_OFFER_OTHER_JOB', message: `offer ${c.offer} answers job ${o.record.job}, not ${s.job}`, address: c.offer, claimed: s.job, recomputed: o.record.job });
    if (o.record.issuedAt > s.decidedAt + skew) {
      diffs.push({ code: 'AUDIT_OFFER_AFTER_DECISION', message: `offer ${c.offer} (${c.provider}) is issued at ${isoTime(o.record.issuedAt)}, after the decision time ${isoTime(s.decidedAt)} (beyond the clock-skew window)`, address: c.offer, claimed: s.decidedAt, recomputed: o.record.issuedAt });
    }
    offers.push(o);
  }
  const index = new AdvertIndex(rs.adverts);
  for (const o of offers) {
    if (!index.resolve(o, s.decidedAt)) diffs.push({ code: 'AUDIT_MISSING_RECORD', message: `the advert ${o.record.advert} that offer ${o.address} cites is not among the records`, address: o.record.advert });
  }

  // who decided
  let authority: Authority | undefined;
  let delegation: Opened<Delegation> | undefined;
  if (s.delegation) {
    delegation = rs.getTyped<Delegation>(s.delegation, T.delegation);
    if (!delegation) diffs.push({ code: 'AUDIT_MISSING_RECORD', message: `the delegation ${s.delegation} is not among the records`, address: s.delegation });
  }
  const winnerOffer = offers.find((o) => o.address === s.winner);
  if (!(s.delegation && !delegation)) {
    try {
      authority = checkDeciderAuthority({ decider: sel.signer, job, ...(delegation ? { delegation } : {}), ...(i.stewards ? { stewards: i.stewards } : {}), ...(winnerOffer ? { winnerPrice: winnerOffer.record.price } : {}), now: s.decidedAt });
    } catch (e) {
      if (!(e instanceof C0Error)) throw e;
      diffs.push({ code: e.code, message: e.message });
    }
  }

  // recompute
  const reputation = i.reputation ?? deriveReputation({ receipts: rs.receipts, acceptances: rs.acceptances, offers: rs.offers, nondeliveries: rs.nondeliveries }, { self: s.buyer, asOf: s.decidedAt, ...(i.trust ? { trust: i.trust } : {}) });
  let result: SelectResult;
  try {
    result = select({ job, adverts: index, offers, policy: s.policy, reputation, now: s.decidedAt, ...(i.skewMs !== undefined ? { skewMs: i.skewMs } : {}) });
  } catch (e) {
    if (!(e instanceof C0Error)) throw e;
    diffs.push({ code: e.code, message: e.message });
    return done(authority ? { authority } : {});
  }
  const winnerFailures: Failure[] | undefined = result.ineligible.find((v) => v.offer === s.winner)?.failures;
  if (winnerFailures) diffs.push({ code: 'AUDIT_WINNER_INELIGIBLE', message: `the winning offer fails: ${winnerFailures.map((f) => f.code).join(', ')}`, address: s.winner, recomputed: winnerFailures });
  if (!result.ok) {
    diffs.push({ code: 'AUDIT_NO_ELIGIBLE', message: 'recomputed from the records, no considered offer is eligible', claimed: s.winner, recomputed: null });
  } else if (result.winner.offer !== s.winner) {
    diffs.push({ code: 'AUDIT_DIFFERENT_WINNER', message: `recomputed winner is ${result.winner.offer} (${result.winner.provider}), the selection names ${s.winner}`, claimed: s.winner, recomputed: result.winner.offer });
  }
  // better information the decider may not have had
  const named = new Set(s.considered.map((c) => c.provider));
  notes.push(...betterLeftOut(rs, offers, job, s.decidedAt));
  const live = rs.offers.filter((o) => o.record.job === s.job && o.record.expiresAt > s.decidedAt && o.record.issuedAt <= s.decidedAt && !named.has(o.signer));
  // a failover decides again without the providers already tried (§6), so their offers are left out on purpose
  const tried = triedBefore(rs, sel, index);
  const left: typeof live = [];
  const unheard: typeof live = [];
  for (const o of live) (tried.has(o.signer) || tried.has(index.providerFor(o)) ? left : unheard).push(o);
  if (left.length) {
    // one provider per earlier selection (its winner; a pool member and its pool are one provider)
    const earlier = [...new Set(left.map((o) => tried.get(o.signer) ?? tried.get(index.providerFor(o))!))].sort();
    const n = earlier.length;
    notes.push(n === 1 ? `1 provider with a live offer for this job was left out as tried in an earlier attempt (the winner of the decider's earlier selection ${earlier[0]})` : `${n} providers with a live offer for this job were left out as tried in earlier attempts (the winners of the decider's earlier selections ${earlier.join(', ')})`);
  }
  if (unheard.length) notes.push(`the records hold ${plural(unheard.length, 'live offer')} for this job from providers the selection did not consider (the decider may not have had them)`);
  return done({ ...(authority ? { authority } : {}), ...(result.ok ? { recomputedWinner: result.winner.offer } : {}), result });
}

/**
 * The providers tried before this selection, each with the earlier selection that named it: the winners of the job's
 * selections signed by the same decider and dated before this one (a failover's earlier attempts, which `market
 * export` includes). The signature makes each the decider's own word that it chose that provider then; a selection of
 * another decider, or a later one, says nothing about what this decision left out. A pool member tried stands for its
 * pool (its advert's entry), as the failover leaves out the pool's slot (§6, docs/pools.md).
 */
function triedBefore(rs: RecordSet, sel: Opened<Selection>, index: AdvertIndex): Map<string, string> {
  const tried = new Map<string, string>();
  const earlier = rs.selections.filter((e) => e.address !== sel.address && e.signer === sel.signer && e.record.job === sel.record.job && e.record.decidedAt < sel.record.decidedAt);
  // oldest first: a provider is named by the first attempt that tried it
  earlier.sort((a, b) => a.record.decidedAt - b.record.decidedAt || (a.address < b.address ? -1 : 1));
  for (const e of earlier) {
    const won = e.record.considered.find((c) => c.offer === e.record.winner);
    if (!won) continue;
    for (const p of [won.provider, index.entryOf(won.provider)]) if (!tried.has(p)) tried.set(p, e.address);
  }
  return tried;
}

/**
 * Offers the records hold of a considered provider, live at the decision time
 * and for the same job, that the book would have preferred to the one the
 * selection names (same currency first, then cheaper, faster, lower address):
 * reported as notes (the decider may not have had them), never a difference.
 */
function betterLeftOut(rs: RecordSet, considered: readonly Opened<Offer>[], job: Opened<Job>, decidedAt: number): string[] {
  const named = new Map<string, Opened<Offer>>();
  for (const o of considered) if (o.record.job === job.address) named.set(o.signer, o);
  const best = new Map<string, Opened<Offer>>();
  const cur = job.record.maxPrice.currency;
  for (const o of rs.offers) {
    const mine = named.get(o.signer);
    if (!mine || o.address === mine.address || o.record.job !== job.address) continue;
    if (o.record.issuedAt > decidedAt || o.record.expiresAt <= decidedAt) continue;
    if (!preferOffer(o, mine, cur, decidedAt)) continue;
    const b = best.get(o.signer);
    if (!b || preferOffer(o, b, cur, decidedAt)) best.set(o.signer, o);
  }
  const out: string[] = [];
  for (const p of [...best.keys()].sort(compareDids)) {
    const o = best.get(p)!;
    const m = named.get(p)!;
    out.push(`AUDIT_BETTER_OFFER_LEFT_OUT: ${p} had a better live offer ${o.address} (${o.record.price.amount} ${o.record.price.currency}, ${duration(o.record.durationMs)}) than the considered ${m.address} (${m.record.price.amount} ${m.record.price.currency}, ${duration(m.record.durationMs)})`);
  }
  return out;
}
