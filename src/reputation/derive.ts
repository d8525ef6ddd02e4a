/**
 * Reputation, derived (spec scheduling.md "Reputation"; docs/market.md
 * "Reputation and its threat model"): never stored as a score, always
 * recomputed from the signed evidence a node holds — receipts, the buyers'
 * acceptances, non-delivery records and the offers receipts cite — from the
 * point of view of one node (`self`) with its trust sources. A pure function
 * of (evidence, self, trust, asOf): the same evidence in any order gives the
 * same figures (sets keyed by address; sums in key order); no clock reads.
 *
 * Outcomes: one per (buyer B, provider P, job J), the worst of
 *   success      a completed receipt signed by P whose buyer B countersigned
 *                it `accepted` (B's latest verdict; a tie goes to the dispute).
 *                A completed receipt B never countersigned proves nothing: a
 *                receipt's `buyer` is only P's claim
 *   failure      a failed receipt signed by P (P's own admission); one naming
 *                self as buyer is first-hand only with self's verdict on it,
 *                else an outcome of its own (key `…|claimed`) weighing 0. One
 *                whose failure code says its buyer went away (BUYER_CAUSED:
 *                EXEC_BUYER_GONE) is no admission: without its buyer's verdict
 *                it is such an outcome of its own, weighing 0, for every buyer
 *   (a pooled receipt counts only under a roster not expired when the work
 *   was offered: its cited offer's issuedAt when held, else its startedAt;
 *   nor replaced by then by a held newer roster without its signer)
 *   nondelivery  a `c0mpute.nondelivery/1` or `/2` signed by B that links (its
 *                proof: B's job, a selection for B naming P's offer, P's
 *                offer); for a /2, P is the pool of the pooled advert its proof
 *                carries (nonDeliveryProvider: from the record alone, so every
 *                node charges the same provider), as for a pooled receipt; a /2
 *                counts only if that advert's roster had not expired when the
 *                offer was issued (nonDeliveryRosterLive), the receipts' rule;
 *                or a `c0mpute.nondelivery/3` (an open order's: proof B's
 *                order, B's first-claim selection naming P's claim, P's claim,
 *                and a pooled advert when the claim cites one, P then its
 *                pool), which gives way to a receipt of P for J that B
 *                countersigned (a stall P admitted: its failure counts)
 *   dispute      a completed receipt B countersigned `disputed` with a reason
 *
 * Weight of B's outcomes about P (only evidence from buyers this node has a
 * reason to trust counts; everything else weighs 0 and is only counted in
 * `untrusted`):
 *   P = self     1 for receipts (the node's own record of its own work), but
 *                a claim-only one (above) weighs 0 here too
 *   B = self     1 (first-hand: jobs this node bought, proven by its signature:
 *                its non-delivery, or its verdict on the receipt; a receipt's
 *                `buyer` alone is only its signer's claim)
 *   B trusted    w (second-hand, `trust.secondHandWeight`, default 0.5): B is
 *                in `trust.trustedBuyers` (the operator's list, and the
 *                overlay's allowlist when configured)
 *   B dealt-with w × min(1, k_B / n_BP) when `trust.dealtWith`: k_B = jobs
 *                this node ran as a provider for B that B accepted; n_BP = B's
 *                outcomes about P. So B can move P by at most w × k_B outcomes
 *   else         0: a clique of fresh keys vouching for each other gains nothing
 *
 * Per provider P, with s, f, d, n the weighted sums of its outcomes:
 *   S          = (1 + s) / (2 + s + f + 2d + 2n)
 *              Laplace: one imaginary success and one imaginary failure, so an
 *              unknown provider is exactly 0.5; a dispute or a non-delivery
 *              weighs two failures
 *   accuracy   over counted successes whose receipt R cites an offer O held,
 *              O signed by R's provider (a pooled R: by R's signer, the member
 *              that quoted and signed for the pool), same job, O issued no later than the
 *              work started: a = 1 when the actual duration ≤ the quoted one,
 *              else quoted / actual. A = (1 + Σ w·a) / (1 + Σ w): one imaginary
 *              accurate pair, so no pairs ⇒ A = 1
 *   score      = S × A   (an unknown provider: 0.5 × 1 = 0.5 exactly)
 *
 * Sybil bound (tested in test/unit/reputation/sybil.test.ts): evidence whose
 * buyers are neither self, nor trusted, nor dealt-with moves no score at all;
 * with dealt-with buyers on, all the attacker's buyer keys together add at
 * most w × K to s, K = the jobs this node ran for them and they accepted.
 */
import { T, type Acceptance, type AnyNonDelivery, type Offer, type Receipt } from '../records/kinds.js';
import { chainOf, type VerifiedChain } from '../pools/chain.js';
import type { Opened } from '../records/envelope.js';
import type { ReputationView } from '../market/policy.js';
import { compareDids } from '../records/did.js';
import { isClaimNonDelivery, isNonDeliveryType, nonDeliveryLinks, nonDeliveryProvider, nonDeliveryRosterLive } from './nondelivery.js';

export const DISPUTE_WEIGHT = 2;

/**
 * Failure codes by which a provider says its buyer ended the work (the buyer closed the exec stream: it was stopped,
 * killed or lost its connection). Such a failed receipt is not the provider's admission: without its buyer's verdict
 * it weighs 0 at every node, as at the buyer itself, which signed none (it was gone). Before (review s43 R5 F2), a node
 * trusting a buyer counted each as the provider's failure at the second-hand weight while the buyer counted nothing,
 * so every restart of a trusted buyer with work in flight cost its providers a failure network-wide. A buyer still
 * there countersigns it, and then it counts as any failed receipt does.
 */
export const BUYER_CAUSED: ReadonlySet<string> = new Set(['EXEC_BUYER_GONE']);
export const NONDELIVERY_WEIGHT = 2;
export const UNKNOWN_SCORE = 0.5;
export const DEFAULT_SECOND_HAND_WEIGHT = 0.5;

export interface Figures {
  did: string;
  /** outcomes counted, weighted (successes + failures + disputes + nonDeliveries) */
  jobs: number;
  successes: number;
  failures: number;
  disputes: number;
  /** selected and did not deliver (signed non-delivery records that link) */
  nonDeliveries: number;
  /** successes the buyer countersigned `accepted` (every counted success is) */
  accepted: number;
  /** outcomes from this node's own jobs, with its signature on them (unweighted count) */
  firstHand: number;
  /** weight counted from other buyers' outcomes (trusted or dealt-with) */
  secondHand: number;
  /** outcomes held but not counted: their buyer is not one this node trusts */
  untrusted: number;
  /** smoothed success rate S */
  successRate: number;
  /** (offer, receipt) pairs credited */
  quotePairs: number;
  /** pairs where the work took longer than quoted */
  underQuoted: number;
  /** smoothed quote accuracy A */
  accuracy: number;
  /** S × A */
  score: number;
}

export interface Evidence {
  receipts: Iterable<Opened<Receipt>>;
  acceptances: Iterable<Opened<Acceptance>>;
  offers: Iterable<Opened<Offer>>;
  nondeliveries?: Iterable<Opened<AnyNonDelivery>>;
}

/** Whose second-hand evidence counts (docs/market.md "Reputation and its threat model"). */
export interface TrustSources {
  /** Buyers whose evidence counts second-hand: the operator's list, plus the overlay's allowlist when configured. */
  trustedBuyers?: Iterable<string>;
  /** Count buyers this node ran jobs for as a provider (and that accepted them), each up to that many outcomes per provider. */
  dealtWith?: boolean;
  /** Weight of one second-hand outcome relative to a first-hand one, in (0, 1]; default 0.5. */
  secondHandWeight?: number;
}

/**
 * When a piece of evidence counts from, for reputation "as of" a time (`asOf`): a receipt from its `completedAt`, an
 * acceptance or a non-delivery from its `signedAt`; an offer has no time here (it counts with the receipt citing it).
 * The one rule for both an audit (as of the selection's `decidedAt`) and the decision itself (LiveReputation.asOf):
 * a buyer decides with what its audit will count.
 */
export function evidenceTime(r: Opened): number {
  if (r.type === T.receipt) return (r.record as Receipt).completedAt;
  if (r.type === T.acceptance || isNonDeliveryType(r.type)) return (r.record as { signedAt: number }).signedAt;
  return -Infinity;
}

export interface DeriveOptions {
  /** The deriving node's DID: evidence from its own jobs counts fully, and receipts it signed are its own record. */
  self: string;
  /** Whose second-hand evidence counts; default none (first-hand only). */
  trust?: TrustSources;
  /** count only evidence signed by then (evidenceTime: receipts by completedAt, acceptances and non-deliveries by signedAt): reputation as of a decision */
  asOf?: number;
}

export class ReputationTable implements ReputationView {
  readonly #by: Map<string, Figures>;
  constructor(figures: Figures[]) {
    this.#by = new Map(figures.map((f) => [f.did, f]));
  }
  scoreOf(did: string): number {
    return this.#by.get(did)?.score ?? UNKNOWN_SCORE;
  }
  get(did: string): Figures {
    return this.#by.get(did) ?? unknownFigures(did);
  }
  /** Whether any evidence about this provider is held (counted or not). */
  has(did: string): boolean {
    return this.#by.has(did);
  }
  /** every provider with evidence (counted or not), DID order */
  all(): Figures[] {
    return [...this.#by.values()].sort((a, b) => compareDids(a.did, b.did));
  }
}

export function unknownFigures(did: string): Figures {
  return { did, jobs: 0, successes: 0, failures: 0, disputes: 0, nonDeliveries: 0, accepted: 0, firstHand: 0, secondHand: 0, untrusted: 0, successRate: 0.5, quotePairs: 0, underQuoted: 0, accuracy: 1, score: UNKNOWN_SCORE };
}

const SEVERITY = { success: 0, failure: 1, nondelivery: 2, dispute: 3 } as const;
type Outcome = keyof typeof SEVERITY;

/**
 * Whether a receipt counts at all: signed by the provider it names, or a pooled
 * receipt naming the pool its signer's chain proves (docs/pools.md "Reputation")
 * whose roster had not expired when the work was offered (`offeredAt`: the cited
 * offer's issuedAt when held, else the receipt's startedAt, which an honest
 * receipt never dates before its offer; docs/pools.md "Roster expiry"). Judged
 * at the time the pool committed to the job, not when the job completed: a job
 * offered before the expiry counts, as a non-delivery /2 for it does
 * (nonDeliveryRosterLive), and past the expiry the pool is not selected.
 */
export function receiptCounts(r: Opened<Receipt>, offeredAt: number = r.type === T.receipt ? r.record.startedAt : 0): boolean {
  if (r.type !== T.receipt) return false;
  if (r.signer === r.record.provider) return true;
  const c = chainOf(r);
  return c !== undefined && c.pool === r.record.provider && offeredAt < c.roster.record.expiresAt;
}

/** When the work a receipt answers was offered: its cited offer's issuedAt (signed by the receipt's signer, same job), else its startedAt. */
function offeredAt(r: Opened<Receipt>, offers: ReadonlyMap<string, Opened<Offer>>): number {
  const o = offers.get(r.record.offer);
  return o && o.signer === r.signer && o.record.job === r.record.job ? o.record.issuedAt : r.record.startedAt;
}

/**
 * Whether a pooled receipt's roster was already replaced, when the work was offered (`at`: offeredAt), by a newer roster of its
 * pool that no longer lists its signer: the newest roster of each pool among the evidence (the rosters the pool's
 * receipts carry). A member removed by roster seq 2 still holds seq 1; what it offers for the pool after seq 2 was
 * issued is not the pool's. Before that (or still listed) it is, even when the job ends after seq 2.
 */
function supersededAt(r: Opened<Receipt>, at: number, newer: ReadonlyMap<string, Array<VerifiedChain['roster']>>): boolean {
  const c = chainOf(r);
  if (!c) return false;
  for (const n of newer.get(c.pool) ?? []) {
    if (n.record.seq > c.roster.record.seq && n.record.issuedAt <= at && !n.record.members.some((m) => m.did === r.signer)) return true;
  }
  return false;
}

interface Out {
  buyer: string;
  provider: string;
  outcome: Outcome;
  /** the representative receipt (successes: for quote accuracy) */
  receipt?: Opened<Receipt>;
  /** from a receipt (not a non-delivery) */
  fromReceipt: boolean;
  /**
   * Not signed by its buyer (a receipt it never countersigned, its `buyer` only the provider's claim) and such that
   * only that verdict would make it count: naming this node as buyer, or a failure saying its buyer went away (key
   * `…|claimed`). Weighs 0.
   */
  claimOnly: boolean;
}

export function deriveReputation(ev: Evidence, opts: DeriveOptions): ReputationTable {
  const asOf = opts.asOf ?? Infinity;
  const self = opts.self;
  const trusted = new Set(opts.trust?.trustedBuyers ?? []);
  trusted.delete(self);
  const w2 = clampWeight(opts.trust?.secondHandWeight);
  const offers = new Map<string, Opened<Offer>>();
  for (const o of ev.offers) if (o.type === T.offer) offers.set(o.address, o);
  const receipts = new Map<string, Opened<Receipt>>();
  for (const r of ev.receipts) if (r.type === T.receipt && receiptCounts(r, offeredAt(r, offers)) && evidenceTime(r) <= asOf) receipts.set(r.address, r);
  // each pool's rosters that its receipts carry (distinct by address): a pooled receipt under a roster one of them
  // replaced, and no longer listing its signer, by the time it completed, does not count (supersededAt)
  const rosters = new Map<string, Map<string, VerifiedChain['roster']>>();
  for (const r of receipts.values()) {
    const c = chainOf(r);
    if (!c) continue;
    let m = rosters.get(c.pool);
    if (!m) rosters.set(c.pool, (m = new Map()));
    m.set(c.roster.address, c.roster);
  }
  if (rosters.size) {
    const newer = new Map([...rosters].map(([pool, m]) => [pool, [...m.values()]]));
    for (const [addr, r] of receipts) if (supersededAt(r, offeredAt(r, offers), newer)) receipts.delete(addr);
  }

  // the buyer's latest verdict per receipt (tie: disputed, then the lower address)
  const verdicts = new Map<string, Opened<Acceptance>>();
  const seenAcc = new Set<string>();
  for (const a of ev.acceptances) {
    if (a.type !== T.acceptance || seenAcc.has(a.address) || evidenceTime(a) > asOf) continue;
    seenAcc.add(a.address);
    const r = receipts.get(a.record.receipt);
    if (!r || a.signer !== r.record.buyer) continue; // only the receipt's own buyer
    if (!verdictCounts(a)) continue;
    const cur = verdicts.get(r.address);
    if (!cur || laterVerdict(a, cur)) verdicts.set(r.address, a);
  }

  // one outcome per (buyer, provider, job): the worst; its representative receipt is the lowest address among the worst
  const outcomes = new Map<string, Out>();
  const consider = (key: string, o: Out) => {
    const cur = outcomes.get(key);
    if (!cur || SEVERITY[o.outcome] > SEVERITY[cur.outcome]) outcomes.set(key, o);
  };
  // k_B: jobs this node ran as a provider for B that B accepted
  const dealings = new Map<string, number>();
  /** (buyer, provider, job) with a receipt its buyer countersigned: a /3 for it gives way (below) */
  const countersigned = new Set<string>();
  for (const addr of [...receipts.keys()].sort()) {
    const r = receipts.get(addr)!;
    const v = verdicts.get(addr)?.record.verdict;
    let outcome: Outcome | undefined;
    if (r.record.status === 'failed') outcome = 'failure';
    else if (v === 'disputed') outcome = 'dispute';
    else if (v === 'accepted') outcome = 'success';
    if (!outcome) continue; // completed but never countersigned by its buyer: proves nothing
    const { buyer, provider } = r.record;
    if (provider === self && outcome === 'success') dealings.set(buyer, (dealings.get(buyer) ?? 0) + 1);
    // A receipt's `buyer` is its signer's claim: one naming this node is first-hand only with this node's own verdict
    // on it (it countersigns every receipt of its jobs, a failed one too: src/roles/buyer.ts). Without it, it is an
    // outcome of its own (it cannot take the place of a proven one for the job) and weighs as a stranger's: nothing.
    // a failed receipt saying its buyer went away is not its provider's admission: only the buyer's verdict makes it one
    const claimOnly = v === undefined && (buyer === self || (outcome === 'failure' && BUYER_CAUSED.has(r.record.failure?.code ?? '')));
    const key = claimOnly ? `${buyer}|${provider}|${r.record.job}|claimed` : `${buyer}|${provider}|${r.record.job}`;
    consider(key, { buyer, provider, outcome, receipt: r, fromReceipt: true, claimOnly });
    if (v !== undefined) countersigned.add(key);
  }
  const nds = new Map<string, Opened<AnyNonDelivery>>();
  for (const n of ev.nondeliveries ?? []) if (isNonDeliveryType(n.type) && evidenceTime(n) <= asOf) nds.set(n.address, n);
  for (const addr of [...nds.keys()].sort()) {
    const n = nds.get(addr)!;
    if (!nonDeliveryLinks(n) || !nonDeliveryRosterLive(n)) continue;
    // against the provider the offer stood for: the pool, for a /2 (it carries the pooled advert its offer cites)
    const provider = nonDeliveryProvider(n);
    const key = `${n.signer}|${provider}|${n.record.job}`;
    // An open order's /3 gives way to the claimant's own receipt for the job that its buyer countersigned: a winner
    // that stalled and later signed its failure (EXEC_PROVIDER_STALLED, countersigned late) is charged that failure,
    // not a non-delivery; one that never signs anything (killed) is charged the /3 (docs/matching.md).
    if (isClaimNonDelivery(n) && countersigned.has(key)) continue;
    consider(key, { buyer: n.signer, provider, outcome: 'nondelivery', fromReceipt: false, claimOnly: false });
  }

  // n_BP: outcomes per (buyer, provider), for the dealt-with cap
  const perPair = new Map<string, number>();
  for (const o of outcomes.values()) perPair.set(`${o.buyer}|${o.provider}`, (perPair.get(`${o.buyer}|${o.provider}`) ?? 0) + 1);
  const weightOf = (o: Out): number => {
    if (o.claimOnly) return 0;
    if (o.provider === self && o.fromReceipt) return 1;
    if (o.buyer === self) return 1;
    if (trusted.has(o.buyer)) return w2;
    const k = opts.trust?.dealtWith ? (dealings.get(o.buyer) ?? 0) : 0;
    if (k > 0) return w2 * Math.min(1, k / perPair.get(`${o.buyer}|${o.provider}`)!);
    return 0;
  };

  type Acc = { s: number; f: number; d: number; n: number; accepted: number; first: number; second: number; untrusted: number; pairs: Array<[string, number, number]>; under: number };
  const acc = new Map<string, Acc>();
  for (const key of [...outcomes.keys()].sort()) {
    const o = outcomes.get(key)!;
    let a = acc.get(o.provider);
    if (!a) acc.set(o.provider, (a = { s: 0, f: 0, d: 0, n: 0, accepted: 0, first: 0, second: 0, untrusted: 0, pairs: [], under: 0 }));
    const w = weightOf(o);
    if (w === 0) {
      a.untrusted++;
      continue;
    }
    if (o.buyer === self) a.first++; // signed by this node: weight 0 otherwise (claimOnly)
    else if (o.provider !== self || !o.fromReceipt) a.second += w;
    if (o.outcome === 'success') {
      a.s += w;
      a.accepted += w;
      const r = o.receipt!.record;
      const offer = offers.get(r.offer);
      // A pooled receipt names the pool; its offer is the coordinator's, who signed the receipt too (docs/pools.md "Reputation").
      const quotedBy = r.pool ? o.receipt!.signer : r.provider;
      if (offer && offer.signer === quotedBy && offer.record.job === r.job && offer.record.issuedAt <= r.startedAt) {
        const actual = r.completedAt - r.startedAt;
        const quoted = offer.record.durationMs;
        const x = actual <= quoted ? 1 : quoted / actual;
        if (actual > quoted) a.under++;
        a.pairs.push([o.receipt!.address, x, w]);
      }
    } else if (o.outcome === 'failure') a.f += w;
    else if (o.outcome === 'nondelivery') a.n += w;
    else a.d += w;
  }

  const figures: Figures[] = [];
  for (const did of [...acc.keys()].sort()) {
    const a = acc.get(did)!;
    a.pairs.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
    let sum = 0;
    let mass = 0;
    for (const [, x, w] of a.pairs) {
      sum += w * x;
      mass += w;
    }
    const S = (1 + a.s) / (2 + a.s + a.f + DISPUTE_WEIGHT * a.d + NONDELIVERY_WEIGHT * a.n);
    const A = (1 + sum) / (1 + mass);
    figures.push({
      did,
      jobs: a.s + a.f + a.d + a.n,
      successes: a.s,
      failures: a.f,
      disputes: a.d,
      nonDeliveries: a.n,
      accepted: a.accepted,
      firstHand: a.first,
      secondHand: a.second,
      untrusted: a.untrusted,
      successRate: S,
      quotePairs: a.pairs.length,
      underQuoted: a.under,
      accuracy: A,
      score: S * A,
    });
  }
  return new ReputationTable(figures);
}

function clampWeight(w: number | undefined): number {
  if (w === undefined || !Number.isFinite(w)) return DEFAULT_SECOND_HAND_WEIGHT;
  return Math.min(1, Math.max(0, w));
}

function rankVerdict(a: Opened<Acceptance>): number {
  return a.record.verdict === 'disputed' ? 1 : 0;
}

/** A verdict that counts: an acceptance, or a dispute with a reason. */
function verdictCounts(a: Opened<Acceptance>): boolean {
  return !(a.record.verdict === 'disputed' && !(a.record.reason && a.record.reason.trim()));
}

/** Whether `a` replaces `cur` as a buyer's verdict on a receipt: the later one; at the same time the dispute, then the lower address. */
function laterVerdict(a: Opened<Acceptance>, cur: Opened<Acceptance>): boolean {
  return a.record.signedAt > cur.record.signedAt || (a.record.signedAt === cur.record.signedAt && (rankVerdict(a) > rankVerdict(cur) || (rankVerdict(a) === rankVerdict(cur) && a.address < cur.address)));
}

/**
 * Whether `a` takes the place of `cur`, one signer's two verdicts on one receipt: a verdict that counts beats one that
 * does not, else the later (laterVerdict: at the same time the dispute, then the lower address). A total order, so
 * the one kept of any set is the same in any arrival order, and it is the one buyerVerdict and deriveReputation count:
 * the evidence store keeps only it (one verdict per (signer, receipt)).
 */
export function replacesVerdict(a: Opened<Acceptance>, cur: Opened<Acceptance>): boolean {
  const counts = verdictCounts(a);
  return counts !== verdictCounts(cur) ? counts : laterVerdict(a, cur);
}

/** The verdict reputation counts on a receipt among these acceptances: its own buyer's latest (a tie goes to the dispute). */
export function buyerVerdict(receipt: Opened<Receipt>, acceptances: Iterable<Opened<Acceptance>>): Opened<Acceptance> | undefined {
  let cur: Opened<Acceptance> | undefined;
  for (const a of acceptances) {
    if (a.record.receipt !== receipt.address || a.signer !== receipt.record.buyer || !verdictCounts(a)) continue;
    if (!cur || laterVerdict(a, cur)) cur = a;
  }
  return cur;
}
