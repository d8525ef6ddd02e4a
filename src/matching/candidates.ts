/**
 * Candidates for an order (spec/matching-and-leases.md "Candidates on a quote"
 * and "The market probe"; docs/matching.md "Candidates and the probe"): of the
 * live providers, those that could serve the order now, ranked.
 *
 * A candidate is live for the order's workload (presence), passes the
 * eligibility gates 1–6 against its advert (src/market/eligibility.ts; gate 7
 * judges an offer and there is none here), has a free slot after counting
 * what it holds, asks — its advert's price for the workload times the order's
 * units, exact decimals, same currency — at most the order's maxPrice, has a
 * box key when the input is sealed, and is the designated provider when the
 * order names one. Ranked by that cost (cheapest first), then the one picked
 * least recently (rotation.ts), then DID order.
 *
 * Pure: `now` and the rotation state are injected; no I/O, no float.
 */
import { createHash } from 'node:crypto';
import { C0Error } from '../errors.js';
import { T, type Advert, type Job, type PriceEntry, type Requirements } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import { scaleAmount, type Money } from '../records/money.js';
import { DEFAULT_SKEW_MS } from '../records/freshness.js';
import { plural } from '../util/text.js';
import { compareDids } from '../records/did.js';
import { cmpAmount } from '../market/amount.js';
import { REASON, evaluate, prepareJob, type PreparedJob } from '../market/eligibility.js';
import type { LiveProvider } from './types.js';
import { receiptProviderFor } from '../pools/chain.js';

export const MIB = 1024 * 1024;

/** Codes of the matching layer's own rules (the gates keep theirs: src/market/eligibility.ts REASON). */
export const CANDIDATE_REASON = {
  /** no live presence (none heard, or its window has passed) */
  NOT_LIVE: 'NOT_LIVE',
  /** live, but its presence does not list the order's workload */
  NOT_LIVE_FOR_WORKLOAD: 'NOT_LIVE_FOR_WORKLOAD',
  /** its free slots are all taken by the leases and jobs it holds */
  NO_FREE_SLOT: 'NO_FREE_SLOT',
  /** its advert publishes no price for the order's workload */
  NO_ASK: 'NO_ASK',
  /** its asks for the workload are all in another currency (never converted); the explanation's code too */
  ASK_CURRENCY_MISMATCH: REASON.ASK_CURRENCY_MISMATCH,
  /** its ask is per a unit the order cannot count (not job, second or mib) */
  ASK_UNIT_UNKNOWN: 'ASK_UNIT_UNKNOWN',
  /** the order would cost more than its maxPrice at this provider's ask; the explanation's code too */
  ASK_ABOVE_PRICE: REASON.ASK_ABOVE_PRICE,
  /** the input is sealed and its advert has no box key */
  NO_BOX_KEY: 'NO_BOX_KEY',
  /** the order names another provider */
  NOT_DESIGNATED: 'NOT_DESIGNATED',
} as const;
export type CandidateReasonCode = (typeof CANDIDATE_REASON)[keyof typeof CANDIDATE_REASON];

/** What the candidates engine reads of an order (a job spec, or a job record, plus an optional designated DID). */
export interface CandidateOrder {
  workload: string;
  requirements: Requirements;
  maxPrice: Money;
  /** input size in bytes (the `mib` unit counts it) */
  inputSize: number;
  inputSealed: boolean;
  /** the longest the order may run, ms (the `second` unit counts it: the worst case the buyer may pay) */
  timeoutMs: number;
  /** the designated provider's DID, when the order names one */
  designated?: string;
}

/** An order from a `c0mpute.job/1` record (opened or bare). */
export function orderFromJob(job: Job | Opened<Job>, designated?: string): CandidateOrder {
  const j = 'record' in job ? job.record : job;
  return {
    workload: j.workload,
    requirements: j.requirements,
    maxPrice: j.maxPrice,
    inputSize: j.input.size,
    inputSealed: j.inputSealed === 'yes',
    timeoutMs: j.timeoutMs,
    ...(designated !== undefined ? { designated } : {}),
  };
}

/** One reason a provider is not a candidate. */
export interface CandidateReason {
  code: string;
  field: string;
  wanted: unknown;
  offered: unknown;
  message: string;
}

/** A candidate, with what the order would cost at its ask. */
export interface Candidate {
  rank: number;
  provider: string;
  advert: string;
  /** the advert's price entry used */
  ask: { unit: string; price: Money };
  /** units of the order at that unit */
  units: number;
  /** what the order would cost at the ask (price × units, exact) */
  cost: Money;
  freeSlots: number;
  held: number;
  /** the rotation mark when it was last picked (0: never) */
  lastPicked: number;
}

export interface ProviderRejection {
  provider: string;
  /** The pool its live advert stands for (a pool member: docs/pools.md "One provider to buyers"). */
  pool?: string;
  advert?: string;
  reasons: CandidateReason[];
}

export interface CandidatesResult {
  candidates: Candidate[];
  /** providers that are not candidates, DID order, every reason */
  rejected: ProviderRejection[];
  /** reason code → providers failing it (sorted codes) */
  counts: Record<string, number>;
  /** one sentence; says why when the list is empty */
  summary: string;
}

/** Read-only view of the rotation (rotation.ts): the mark of a provider's last pick, 0 when never picked. */
export interface RotationView {
  lastPicked(did: string): number;
}

export const NO_ROTATION: RotationView = { lastPicked: () => 0 };

export interface CandidatesInput {
  order: CandidateOrder;
  live: readonly LiveProvider[];
  /** leases and jobs each provider holds now (absent: 0) */
  held?: ReadonlyMap<string, number>;
  rotation?: RotationView;
  /** adverts of providers known but not live: reported as NOT_LIVE (for the explanation) */
  known?: Iterable<Opened<Advert>>;
  now: number;
  skewMs?: number;
}

/** The units an order counts at a price unit (undefined: a unit the order cannot count). */
export function unitsOf(order: CandidateOrder, unit: string): number | undefined {
  if (unit === 'job') return 1;
  if (unit === 'mib') return Math.max(1, Math.ceil(order.inputSize / MIB));
  if (unit === 'second') return Math.max(1, Math.ceil(order.timeoutMs / 1000));
  return undefined;
}

/** An ask the order can count: its price entry, the units the order takes of it, and what that costs. */
export type PricedAsk = { ok: true; ask: { unit: string; price: Money }; units: number; cost: Money };
type Ask = PricedAsk | { ok: false; reason: CandidateReason };

/**
 * The provider's ask for the order: of its advert's prices for the workload in
 * the order's currency, the one that makes the order cheapest (ties: the
 * earlier entry; cheapestAsk). A price in another currency is never converted.
 */
export function askFor(advert: Advert, order: CandidateOrder, scale: (amount: string, units: number) => string = scaleAmount): Ask {
  const cur = order.maxPrice.currency;
  const prices = advert.prices ?? [];
  // the common case without allocating: one entry for the workload, in the order's currency
  let only: PriceEntry | undefined;
  let count = 0;
  for (let i = 0; i < prices.length; i++) {
    if (prices[i]!.workload === order.workload) {
      only = prices[i]!;
      count++;
    }
  }
  if (count === 1 && only!.price.currency === cur) {
    const units = unitsOf(order, only!.unit);
    if (units !== undefined) return { ok: true, ask: { unit: only!.unit, price: only!.price }, units, cost: { amount: scale(only!.price.amount, units), currency: cur } };
  }
  const entries = prices.filter((p) => p.workload === order.workload);
  if (entries.length === 0) return { ok: false, reason: { code: CANDIDATE_REASON.NO_ASK, field: 'workload', wanted: order.workload, offered: null, message: `publishes no price for ${order.workload}` } };
  const same = entries.filter((p) => p.price.currency === cur);
  if (same.length === 0) return { ok: false, reason: { code: CANDIDATE_REASON.ASK_CURRENCY_MISMATCH, field: 'maxPrice.currency', wanted: cur, offered: [...new Set(entries.map((p) => p.price.currency))].sort(), message: `prices ${order.workload} in ${entries[0]!.price.currency}; the order pays in ${cur} (never converted)` } };
  const best = cheapestAsk(
    same,
    order.workload,
    cur,
    (p) => {
      const units = unitsOf(order, p.unit);
      return units === undefined ? undefined : { units, amount: scale(p.price.amount, units) };
    },
    (a, b) => cmpAmount(a.amount, b.amount) < 0,
  );
  if (!best) return { ok: false, reason: { code: CANDIDATE_REASON.ASK_UNIT_UNKNOWN, field: 'prices.unit', wanted: ['job', 'second', 'mib'], offered: same.map((p) => p.unit), message: `prices ${order.workload} per ${same.map((p) => p.unit).join(', ')}, which the order cannot count` } };
  return { ok: true, ask: { unit: best.entry.unit, price: best.entry.price }, units: best.cost.units, cost: { amount: best.cost.amount, currency: cur } };
}

/**
 * The provider's ask judged against the order's maxPrice, the probe's rule: askFor, then its cost for the order
 * above maxPrice is ASK_ABOVE_PRICE (exact decimals). Shared with the market explanation (src/market/ask.ts), which
 * says why a provider that has not quoted will not: a provider does not quote above the job's maxPrice.
 */
export function askWithin(advert: Advert, order: CandidateOrder, scale: (amount: string, units: number) => string = scaleAmount): Ask {
  const ask = askFor(advert, order, scale);
  if (!ask.ok || cmpAmount(ask.cost.amount, order.maxPrice.amount) <= 0) return ask;
  return { ok: false, reason: aboveMaxPrice(ask, order) };
}

/** ASK_ABOVE_PRICE for an ask whose cost for the order is above its maxPrice (askWithin's words). */
export function aboveMaxPrice(ask: PricedAsk, order: CandidateOrder): CandidateReason {
  return reason(CANDIDATE_REASON.ASK_ABOVE_PRICE, 'maxPrice', order.maxPrice, ask.cost, `asks ${ask.ask.price.amount} ${ask.cost.currency} per ${ask.ask.unit}: ${ask.cost.amount} for the order, above ${order.maxPrice.amount}`);
}

/**
 * The rule for a provider's ask, whatever is being priced: of the advert's
 * price entries for `workload` in `currency` (never converted), the one whose
 * cost is least, ties going to the earlier entry. `costOf` says what an entry
 * costs, undefined for a unit the caller cannot count (skipped). askFor applies
 * it to one order; the batch planner (batch-plan.ts) to a batch's summed units.
 */
export function cheapestAsk<C>(prices: readonly PriceEntry[], workload: string, currency: string, costOf: (p: PriceEntry) => C | undefined, less: (a: C, b: C) => boolean): { entry: PriceEntry; cost: C } | undefined {
  let best: { entry: PriceEntry; cost: C } | undefined;
  for (const p of prices) {
    if (p.workload !== workload || p.price.currency !== currency) continue;
    const cost = costOf(p);
    if (cost === undefined) continue;
    if (!best || less(cost, best.cost)) best = { entry: p, cost };
  }
  return best;
}

/** A `c0mpute.job/1`-shaped opened record for the gates (never signed, never sent). */
function gateJob(order: CandidateOrder): PreparedJob {
  const record: Job = {
    workload: order.workload,
    requirements: order.requirements,
    maxPrice: order.maxPrice,
    announcedAt: 0,
    deadline: Number.MAX_SAFE_INTEGER,
    timeoutMs: order.timeoutMs,
    input: { hash: 'sha256:' + '0'.repeat(64), size: order.inputSize },
    inputSealed: order.inputSealed ? 'yes' : 'no',
  };
  return prepareJob({ type: T.job, signer: '', address: 'probe', record, bytes: new Uint8Array(0) });
}

function checkOrder(o: CandidateOrder): void {
  const bad = (field: string, why: string) => new C0Error('MATCH_BAD_ORDER', `order: ${field} ${why}`, { field });
  if (!o || typeof o.workload !== 'string' || o.workload === '') throw bad('workload', 'must be a workload namespace');
  if (!o.maxPrice || typeof o.maxPrice.amount !== 'string' || typeof o.maxPrice.currency !== 'string') throw bad('maxPrice', 'must be {amount, currency}');
  if (!Number.isSafeInteger(o.inputSize) || o.inputSize < 0) throw bad('inputSize', 'must be a whole number of bytes');
  if (!Number.isSafeInteger(o.timeoutMs) || o.timeoutMs <= 0) throw bad('timeoutMs', 'must be a positive whole number of ms');
}

/** scaleAmount with exact costs kept by (price, units): providers share prices, and a decimal product costs more than a lookup. */
export function cachedScale(): (amount: string, units: number) => string {
  // by units, then amount: an order counts at most three units (job, mib, second), and no key is built per call
  const byUnits = new Map<number, Map<string, string>>();
  return (amount, units) => {
    let costs = byUnits.get(units);
    if (costs === undefined) byUnits.set(units, (costs = new Map()));
    let c = costs.get(amount);
    if (c === undefined) costs.set(amount, (c = scaleAmount(amount, units)));
    return c;
  };
}

function reason(code: string, field: string, wanted: unknown, offered: unknown, message: string): CandidateReason {
  return { code, field, wanted, offered, message };
}

/**
 * Sort candidates by (cost, last pick, DID) and number them from 1. A market of thousands ties on cost and on last
 * pick for most pairs, and a string comparison per pair was most of the probe's time (bench matching); so the sort
 * compares numbers: the cost's rank, the last pick, and the DIDs' first six characters after the prefix they all share,
 * packed into one number (exact for 8-bit characters, else left out), and compares the DIDs themselves only when
 * those tie.
 */
function rankInPlace(ok: Candidate[], costRank: ReadonlyMap<string, number>): void {
  const n = ok.length;
  if (n === 0) return;
  const rk = new Float64Array(n);
  const lp = new Float64Array(n);
  const dk = new Float64Array(n);
  const first = ok[0]!.provider;
  let lcp = first.length;
  for (let i = 1; i < n; i++) {
    const d = ok[i]!.provider;
    const m = Math.min(lcp, d.length);
    let j = 0;
    while (j < m && d.charCodeAt(j) === first.charCodeAt(j)) j++;
    lcp = j;
  }
  let packed = true;
  for (let i = 0; i < n; i++) {
    const c = ok[i]!;
    rk[i] = costRank.get(c.cost.amount)!;
    lp[i] = c.lastPicked;
    if (!packed) continue;
    const d = c.provider;
    // base 257, 0 for "no character": a shorter DID sorts before a longer one it prefixes, as strings do
    let k = 0;
    for (let j = lcp; j < lcp + 6; j++) {
      const code = j < d.length ? d.charCodeAt(j) : -1;
      if (code > 255) packed = false;
      k = k * 257 + code + 1;
    }
    dk[i] = k;
  }
  if (!packed) dk.fill(0);
  const idx = new Uint32Array(n);
  for (let i = 0; i < n; i++) idx[i] = i;
  idx.sort((a, b) => rk[a]! - rk[b]! || lp[a]! - lp[b]! || dk[a]! - dk[b]! || compareDids(ok[a]!.provider, ok[b]!.provider));
  const sorted = Array.from(idx, (i) => ok[i]!);
  for (let i = 0; i < n; i++) {
    const c = sorted[i]!;
    c.rank = i + 1;
    ok[i] = c;
  }
}

/**
 * Whether `p` may claim an order designated to `designated`: it is that provider, or a member of that pool (its live
 * advert is its pooled advert of it: docs/pools.md "One provider to buyers"; the buyer takes such a claim, claims.ts).
 */
export function isDesignated(p: Pick<LiveProvider, 'did' | 'advert'>, designated: string): boolean {
  return p.did === designated || (p.advert.record.pool !== undefined && receiptProviderFor(p.did, p.advert) === designated);
}

/** The ranked candidates for an order, and why every other provider is not one. */
export function candidates(input: CandidatesInput): CandidatesResult {
  if (typeof input.now !== 'number' || !Number.isFinite(input.now)) throw new C0Error('MATCH_BAD_INPUT', 'candidates needs a numeric `now`', { field: 'now' });
  const order = input.order;
  checkOrder(order);
  const now = input.now;
  const skew = input.skewMs ?? DEFAULT_SKEW_MS;
  const held = input.held ?? new Map<string, number>();
  const rotation = input.rotation ?? NO_ROTATION;
  const pj = gateJob(order);
  const scale = cachedScale();

  const ok: Candidate[] = [];
  const rejected: ProviderRejection[] = [];
  // one entry per provider: the one live longest (then the higher advert seq), whatever the input order
  const byDid = new Map<string, LiveProvider>();
  for (const p of input.live) {
    const cur = byDid.get(p.did);
    if (!cur || p.liveUntil > cur.liveUntil || (p.liveUntil === cur.liveUntil && (p.advert.record.seq > cur.advert.record.seq || (p.advert.record.seq === cur.advert.record.seq && p.advert.address < cur.advert.address)))) byDid.set(p.did, p);
  }
  // the exact costs of the candidates, each once (ranked below)
  const costs = new Set<string>();
  // A market view holds thousands of providers and most are candidates: the loop allocates nothing for a candidate
  // beyond its entry (no reasons list, no closure), and looks each DID up only where it must (docs/market.md §13).
  for (const p of byDid.values()) {
    let reasons: CandidateReason[] | undefined;
    if (order.designated !== undefined && !isDesignated(p, order.designated)) (reasons ??= []).push(reason(CANDIDATE_REASON.NOT_DESIGNATED, 'designated', order.designated, p.did, 'is not the designated provider'));
    if (p.liveUntil <= now) (reasons ??= []).push(reason(CANDIDATE_REASON.NOT_LIVE, 'presence', `live after ${now}`, p.liveUntil, `its presence lapsed at ${p.liveUntil}`));
    else if (!p.workloads.includes(order.workload)) (reasons ??= []).push(reason(CANDIDATE_REASON.NOT_LIVE_FOR_WORKLOAD, 'workload', order.workload, p.workloads, `is live, but not for ${order.workload}`));
    const failed = evaluate(pj, p.advert, undefined, now, skew);
    if (failed) for (const f of failed) (reasons ??= []).push(reason(f.code, f.field, f.wanted, f.offered, f.message));
    const h = held.size === 0 ? 0 : (held.get(p.did) ?? 0);
    if (p.freeSlots - h <= 0) (reasons ??= []).push(reason(CANDIDATE_REASON.NO_FREE_SLOT, 'freeSlots', 'at least 1 free', { freeSlots: p.freeSlots, held: h }, `announced ${plural(p.freeSlots, 'free slot')} and holds ${h}`));
    const ask = askWithin(p.advert.record, order, scale);
    if (!ask.ok) (reasons ??= []).push(ask.reason);
    if (order.inputSealed && p.advert.record.boxKey === undefined) (reasons ??= []).push(reason(CANDIDATE_REASON.NO_BOX_KEY, 'inputSealed', 'a box key', null, 'has no box key to seal the input to'));
    if (reasons === undefined && ask.ok) {
      costs.add(ask.cost.amount);
      ok.push({ rank: 0, provider: p.did, advert: p.advert.address, ask: ask.ask, units: ask.units, cost: ask.cost, freeSlots: p.freeSlots, held: h, lastPicked: rotation.lastPicked(p.did) });
    } else rejected.push({ provider: p.did, ...(p.advert.record.pool ? { pool: receiptProviderFor(p.did, p.advert) } : {}), advert: p.advert.address, reasons: reasons ?? [] });
  }
  if (input.known) {
    const latest = new Map<string, Opened<Advert>>();
    for (const a of input.known) {
      if (byDid.has(a.signer)) continue;
      const c = latest.get(a.signer);
      if (!c || a.record.seq > c.record.seq) latest.set(a.signer, a);
    }
    for (const [did, a] of latest) rejected.push({ provider: did, ...(a.record.pool ? { pool: receiptProviderFor(did, a) } : {}), advert: a.address, reasons: [{ code: CANDIDATE_REASON.NOT_LIVE, field: 'presence', wanted: 'a live presence', offered: null, message: 'has an advert but no live presence' }] });
  }
  // the distinct costs ranked once (exact), then a sort on numbers: cost rank, last pick, DID (rankInPlace)
  const costRank = new Map([...costs].sort(cmpAmount).map((a, i) => [a, i]));
  rankInPlace(ok, costRank);
  rejected.sort((a, b) => compareDids(a.provider, b.provider));
  const counts = countReasons(rejected);
  return { candidates: ok, rejected, counts, summary: summarise(order, ok, rejected, counts) };
}

function countReasons(rejected: ProviderRejection[]): Record<string, number> {
  const m = new Map<string, number>();
  for (const p of rejected) for (const code of new Set(p.reasons.map((x) => x.code))) m.set(code, (m.get(code) ?? 0) + 1);
  const out: Record<string, number> = {};
  for (const k of [...m.keys()].sort()) out[k] = m.get(k)!;
  return out;
}

const SAY: Record<string, string> = {
  NOT_LIVE: 'not live',
  NOT_LIVE_FOR_WORKLOAD: 'live for other workloads',
  NO_FREE_SLOT: 'no free slot',
  NO_ASK: 'no price for the workload',
  ASK_CURRENCY_MISMATCH: 'priced in another currency',
  ASK_UNIT_UNKNOWN: 'priced per a unit the order cannot count',
  ASK_ABOVE_PRICE: 'ask above the order’s price',
  NO_BOX_KEY: 'no box key for the sealed input',
  NOT_DESIGNATED: 'not the designated provider',
};

/**
 * The counts are per reason, and a provider is counted under each of its reasons: when they add up to more than the
 * providers rejected, the sentence says so, not reading as a partition (QA qaOrd F5: "13 providers: 8 …, 5 …, 1 …").
 */
function overlap(rejected: ProviderRejection[], counts: Record<string, number>): string {
  const sum = Object.values(counts).reduce((a, b) => a + b, 0);
  return sum > rejected.length ? ` (a provider may count under several reasons: ${plural(rejected.length, 'provider')} in all)` : '';
}

function summarise(order: CandidateOrder, ok: Candidate[], rejected: ProviderRejection[], counts: Record<string, number>): string {
  const known = ok.length + rejected.length;
  const why = Object.entries(counts)
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
    .map(([code, n]) => `${n} ${SAY[code] ?? code}`)
    .join(', ');
  if (ok.length > 0) {
    const c = ok[0]!;
    return `${ok.length} of ${plural(known, 'provider')} could take the ${order.workload} order now; the first asks ${c.cost.amount} ${c.cost.currency}${why ? ` (not candidates: ${why}${overlap(rejected, counts)})` : ''}.`;
  }
  if (known === 0) return `No provider is live: no presence has been heard for ${order.workload}.`;
  const designated = order.designated !== undefined && !rejected.some((p) => p.provider === order.designated || p.pool === order.designated) ? ` The designated provider ${order.designated} is not known.` : '';
  return `No candidate among ${plural(known, 'provider')} for ${order.workload} at ${order.maxPrice.amount} ${order.maxPrice.currency}: ${why}${overlap(rejected, counts)}.${designated}`;
}

// ---------------------------------------------------------------------------
// Offers per job: could this provider win on price? (docs/market.md "How many
// offers a job draws"; docs/scale.md §4 "Offers that scale with the market")
// ---------------------------------------------------------------------------

/**
 * Offers a job draws on gossip, and offers its buyer wants before it pushes
 * (config `provider.offerRank`, `buyer.offersWanted`). The model's what-if
 * (scripts/sim/model.ts `--offers-cap`): with 8, a buyer's offer connections
 * cost 0.6–0.9 % of a core from 10k providers up, against 12 % unbounded.
 */
export const OFFER_RANK = 8;
/**
 * Candidates for a job above which a buyer sends it directly to some of them instead of to its whole market on
 * gossip (config `buyer.inviteAbove`, docs/market.md "Jobs by invitation in a large market"). Up to 200 a market's
 * gossiped jobs cost each provider under about 1 % of a core, and gossip lets every provider quote whatever the
 * buyer's view holds (docs/scale.md §3 "Eleventh round").
 */
export const INVITE_ABOVE = 200;

/**
 * The order of two providers asking the same for a job: by SHA-256 of the
 * job's address and the DID, so each job ranks equal asks differently (a
 * provider earlier in DID order does not win every tie) and anyone holding
 * the job can recompute it.
 */
export function tieKey(job: string, did: string): string {
  return createHash('sha256').update(job).update('\0').update(did).digest('hex');
}

/** Candidates in the order providers rank themselves for a job (rankAhead): cheapest first, equal asks by tieKey. */
export function byAskForJob(cands: readonly Candidate[], job: string): Candidate[] {
  const tie = new Map(cands.map((c) => [c.provider, tieKey(job, c.provider)]));
  return [...cands].sort((a, b) => cmpAmount(a.cost.amount, b.cost.amount) || (tie.get(a.provider)! < tie.get(b.provider)! ? -1 : 1));
}

export interface RankAheadInput {
  job: Opened<Job>;
  /** the providers this node knows to be live (its presence view) */
  live: readonly LiveProvider[];
  /** leases and jobs each provider holds now (absent: 0), as in candidates() */
  held?: ReadonlyMap<string, number>;
  /** the asking provider: never counted */
  self: string;
  /** what the job costs at the asking provider's own ask (askFor on its advert) */
  cost: string;
  /** stop counting here */
  limit: number;
  now: number;
  skewMs?: number;
}

/**
 * How many live providers would rank before `self` for the job, counted up to
 * `limit`: live for the workload with a free slot, its presence issued within
 * the last half of its window (heard lately), asking less (or the same
 * and earlier by `tieKey`), within the job's maxPrice, passing the
 * eligibility gates 1–6, with a box key when the input is sealed. The same
 * tests as `candidates`, in the order of their cost: the price comparison
 * first, the gates only for the providers cheaper than `self`, and none after
 * the `limit`-th.
 */
export function rankAhead(input: RankAheadInput): number {
  const { job, self, cost, limit, now } = input;
  if (limit <= 0) return 0;
  const order = orderFromJob(job);
  const skew = input.skewMs ?? DEFAULT_SKEW_MS;
  let pj: PreparedJob | undefined;
  let myTie: string | undefined;
  const counted = new Set<string>();
  const scale = cachedScale();
  let ahead = 0;
  for (const p of input.live) {
    if (p.did === self || counted.has(p.did)) continue;
    if (p.liveUntil <= now || p.freeSlots - (input.held?.get(p.did) ?? 0) <= 0 || !p.workloads.includes(order.workload)) continue;
    // it must have been heard lately: a provider republishes presence three times a window, so one past half its
    // window has missed a turn and may be gone; it is still live (a buyer may pick it) but holds nobody back
    if (p.presence.record.issuedAt + p.presence.record.windowMs / 2 <= now) continue;
    const ask = askFor(p.advert.record, order, scale);
    if (!ask.ok) continue;
    const c = cmpAmount(ask.cost.amount, cost);
    if (c > 0) continue;
    if (c === 0 && tieKey(job.address, p.did) > (myTie ??= tieKey(job.address, self))) continue;
    if (cmpAmount(ask.cost.amount, order.maxPrice.amount) > 0) continue;
    if (order.inputSealed && p.advert.record.boxKey === undefined) continue;
    if (evaluate((pj ??= prepareJob(job)), p.advert, undefined, now, skew)?.length) continue;
    counted.add(p.did);
    if (++ahead >= limit) return ahead;
  }
  return ahead;
}
