/**
 * Reputation, derived (spec: "Reputation"): never stored as a score, always
 * recomputed from the signed evidence a node holds — receipts, the buyers'
 * acceptances, and the offers receipts cite. The same evidence in any order
 * gives the same figures (sets keyed by address; sums in address order).
 *
 * Per provider P:
 *   outcomes   one per (P, offer cited): only receipts signed by the provider
 *              they name; duplicates (same address) once; several receipts for
 *              one offer count once, the worst outcome (dispute > failure > success)
 *   success    a completed receipt not disputed
 *   failure    a failed receipt (signed by the provider itself)
 *   dispute    a completed receipt whose own buyer (the DID in the receipt)
 *              signed an acceptance with verdict `disputed` and a reason; when
 *              the buyer signed several verdicts the latest signedAt counts
 *              (a tie goes to the dispute)
 *   S          = (1 + successes) / (2 + successes + failures + 2 × disputes)
 *              Laplace: one imaginary success and one imaginary failure, so an
 *              unknown provider is exactly 0.5; a dispute weighs two failures
 *   accuracy   over (offer O, receipt R) pairs: R completed and not disputed,
 *              R cites O by address, O signed by R's provider, same job, and O
 *              issued no later than the work started. a = 1 when the actual
 *              duration (completedAt − startedAt) ≤ the quoted one, else
 *              quoted / actual. A = (1 + Σa) / (1 + n): one imaginary accurate
 *              pair, so no pairs ⇒ A = 1
 *   score      = S × A   (an unknown provider: 0.5 × 1 = 0.5 exactly)
 *
 * Under-quoting is what costs: a provider that quotes half its real duration
 * drives A toward 0.5 and halves its score. Over-quoting is not penalised here;
 * it already loses on the speed dimension of scoring, which uses the quote.
 */
import { T, type Acceptance, type Offer, type Receipt } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import type { ReputationView } from '../market/policy.js';
import { compareDids } from '../records/did.js';

export const DISPUTE_WEIGHT = 2;
export const UNKNOWN_SCORE = 0.5;

export interface Figures {
  did: string;
  /** outcomes counted (successes + failures + disputes) */
  jobs: number;
  successes: number;
  failures: number;
  disputes: number;
  /** successes the buyer countersigned `accepted` */
  accepted: number;
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
}

export interface DeriveOptions {
  /** count only evidence signed by then (receipts by completedAt, acceptances by signedAt): reputation as of a decision */
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
  /** every provider with evidence, DID order */
  all(): Figures[] {
    return [...this.#by.values()].sort((a, b) => compareDids(a.did, b.did));
  }
}

export function unknownFigures(did: string): Figures {
  return { did, jobs: 0, successes: 0, failures: 0, disputes: 0, accepted: 0, successRate: 0.5, quotePairs: 0, underQuoted: 0, accuracy: 1, score: UNKNOWN_SCORE };
}

const SEVERITY = { success: 0, failure: 1, dispute: 2 } as const;
type Outcome = keyof typeof SEVERITY;

/** Whether a receipt counts at all: signed by the provider it names. */
export function receiptCounts(r: Opened<Receipt>): boolean {
  return r.type === T.receipt && r.signer === r.record.provider;
}

export function deriveReputation(ev: Evidence, opts: DeriveOptions = {}): ReputationTable {
  const asOf = opts.asOf ?? Infinity;
  const receipts = new Map<string, Opened<Receipt>>();
  for (const r of ev.receipts) if (receiptCounts(r) && r.record.completedAt <= asOf) receipts.set(r.address, r);
  const offers = new Map<string, Opened<Offer>>();
  for (const o of ev.offers) if (o.type === T.offer) offers.set(o.address, o);

  // the buyer's latest verdict per receipt (tie: disputed)
  const verdicts = new Map<string, Opened<Acceptance>>();
  const seenAcc = new Set<string>();
  for (const a of ev.acceptances) {
    if (a.type !== T.acceptance || seenAcc.has(a.address) || a.record.signedAt > asOf) continue;
    seenAcc.add(a.address);
    const r = receipts.get(a.record.receipt);
    if (!r || a.signer !== r.record.buyer) continue; // only the receipt's own buyer
    if (a.record.verdict === 'disputed' && !(a.record.reason && a.record.reason.trim())) continue;
    const cur = verdicts.get(r.address);
    if (!cur || a.record.signedAt > cur.record.signedAt || (a.record.signedAt === cur.record.signedAt && (rankVerdict(a) > rankVerdict(cur) || (rankVerdict(a) === rankVerdict(cur) && a.address < cur.address)))) {
      verdicts.set(r.address, a);
    }
  }

  // one outcome per (provider, offer): the worst; its representative receipt is the lowest address among the worst
  const outcomes = new Map<string, { provider: string; outcome: Outcome; receipt: Opened<Receipt>; accepted: boolean }>();
  for (const addr of [...receipts.keys()].sort()) {
    const r = receipts.get(addr)!;
    const v = verdicts.get(addr);
    const outcome: Outcome = r.record.status === 'failed' ? 'failure' : v?.record.verdict === 'disputed' ? 'dispute' : 'success';
    const key = `${r.record.provider}|${r.record.offer}`;
    const cur = outcomes.get(key);
    if (!cur || SEVERITY[outcome] > SEVERITY[cur.outcome]) outcomes.set(key, { provider: r.record.provider, outcome, receipt: r, accepted: v?.record.verdict === 'accepted' });
  }

  const acc = new Map<string, { s: number; f: number; d: number; accepted: number; pairs: Array<[string, number]>; under: number }>();
  for (const key of [...outcomes.keys()].sort()) {
    const o = outcomes.get(key)!;
    let a = acc.get(o.provider);
    if (!a) acc.set(o.provider, (a = { s: 0, f: 0, d: 0, accepted: 0, pairs: [], under: 0 }));
    if (o.outcome === 'success') {
      a.s++;
      if (o.accepted) a.accepted++;
      const r = o.receipt.record;
      const offer = offers.get(r.offer);
      if (offer && offer.signer === r.provider && offer.record.job === r.job && offer.record.issuedAt <= r.startedAt) {
        const actual = r.completedAt - r.startedAt;
        const quoted = offer.record.durationMs;
        const x = actual <= quoted ? 1 : quoted / actual;
        if (actual > quoted) a.under++;
        a.pairs.push([o.receipt.address, x]);
      }
    } else if (o.outcome === 'failure') a.f++;
    else a.d++;
  }

  const figures: Figures[] = [];
  for (const did of [...acc.keys()].sort()) {
    const a = acc.get(did)!;
    a.pairs.sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
    let sum = 0;
    for (const [, x] of a.pairs) sum += x;
    const S = (1 + a.s) / (2 + a.s + a.f + DISPUTE_WEIGHT * a.d);
    const A = (1 + sum) / (1 + a.pairs.length);
    figures.push({ did, jobs: a.s + a.f + a.d, successes: a.s, failures: a.f, disputes: a.d, accepted: a.accepted, successRate: S, quotePairs: a.pairs.length, underQuoted: a.under, accuracy: A, score: S * A });
  }
  return new ReputationTable(figures);
}

function rankVerdict(a: Opened<Acceptance>): number {
  return a.record.verdict === 'disputed' ? 1 : 0;
}
