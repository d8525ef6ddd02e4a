/**
 * The buyer's side of an open order: "the first valid claim wins"
 * (spec/matching-and-leases.md "Leases": any provider may claim any job it may
 * claim, the first valid claim wins; docs/matching.md "Open orders, claims and
 * leases"). Where the spec has a chain decide, the buyer's node decides here,
 * from the `c0mpute.claim/1` records it received, in the order it received them.
 *
 * Pure and deterministic: the caller passes each claim's envelope bytes with the
 * arrival sequence number its node assigned (and the local arrival time); the
 * decision depends only on those, the order's terms and the adverts known.
 * A claim is valid when:
 *   - it opens (schema, rules, strict signature; open());
 *   - it names this job, and its signer is not the buyer;
 *   - it cites an advert signed by the claimant that passes the eligibility
 *     gates for the job at the claim's arrival (src/market/eligibility.ts);
 *   - its price is in the job's currency and at most the order's bid (the
 *     job's maxPrice, or the designated price when the order names one);
 *   - when the order names a designated provider, the claimant is that provider, or, when it names a pool, a member
 *     of it: the claim cites the claimant's pooled advert of that pool (docs/pools.md "One provider to buyers");
 *   - it was signed and received before the job's deadline, and not signed
 *     before the job was announced nor (beyond the skew window) after it arrived;
 *   - when the caller passes the buyer's reputation floor (`standing`), the
 *     claimant (its pool, for a pooled advert) scores at least the floor in the
 *     buyer's own view. Buyer-local, like CLAIM_ADVERT_UNKNOWN: an auditor passes
 *     none, and such a refusal is not listed (listedInSelection).
 * The claim with the lowest sequence number among the valid ones wins; every
 * other claim gets a refusal with a stable code: its own invalidity, or
 * ORDER_TAKEN when it was valid but later than the winner.
 */
import { C0Error } from '../errors.js';
import { cmpAmount } from '../market/amount.js';
import { checkEligibility, type Failure } from '../market/eligibility.js';
import { open, T, type Advert, type Claim, type Job, type Money, type Opened } from '../records/index.js';
import { receiptProviderFor } from '../pools/chain.js';
import { UNKNOWN_REPUTATION } from '../market/policy.js';

/** Refusal codes of a claim (stable; tests and the signed refusal carry them). */
export const CLAIM_REFUSAL = {
  INVALID: 'CLAIM_INVALID',
  WRONG_JOB: 'CLAIM_WRONG_JOB',
  BY_BUYER: 'CLAIM_BY_BUYER',
  DUPLICATE: 'CLAIM_DUPLICATE',
  ADVERT_UNKNOWN: 'CLAIM_ADVERT_UNKNOWN',
  ADVERT_NOT_CLAIMANTS: 'CLAIM_ADVERT_NOT_CLAIMANTS',
  INELIGIBLE: 'CLAIM_INELIGIBLE',
  CURRENCY_MISMATCH: 'CLAIM_CURRENCY_MISMATCH',
  OVER_BID: 'CLAIM_PRICE_OVER_BID',
  NOT_DESIGNATED: 'CLAIM_NOT_DESIGNATED',
  AFTER_DEADLINE: 'CLAIM_AFTER_DEADLINE',
  BEFORE_JOB: 'CLAIM_BEFORE_JOB',
  FROM_FUTURE: 'CLAIM_FROM_FUTURE',
  REPUTATION_TOO_LOW: 'CLAIM_REPUTATION_TOO_LOW',
  ORDER_TAKEN: 'ORDER_TAKEN',
} as const;
export type ClaimRefusalCode = (typeof CLAIM_REFUSAL)[keyof typeof CLAIM_REFUSAL];

/**
 * The refusals that rest on what the buyer's node alone knew when the claim
 * arrived, which no record shows: CLAIM_ADVERT_UNKNOWN (the advert it held) and
 * CLAIM_REPUTATION_TOO_LOW (its own reputation view of the claimant, derived
 * from the evidence it holds and the buyers it trusts).
 */
const BUYER_LOCAL: ReadonlySet<string> = new Set([CLAIM_REFUSAL.ADVERT_UNKNOWN, CLAIM_REFUSAL.REPUTATION_TOO_LOW]);

/**
 * Whether a claim the buyer judged goes into its selection's `arrivals` (when
 * it came before the winner): every claim that opened, except one refused for
 * what only the buyer's node knew (BUYER_LOCAL). CLAIM_ADVERT_UNKNOWN: a
 * claimant can cite an advert it signed and kept to itself, then publish it,
 * and an auditor recomputing the listed claim would find it valid and earlier
 * than the winner (FIRST_CLAIM_SKIPPED_VALID against an honest buyer).
 * CLAIM_REPUTATION_TOO_LOW: an auditor holds other evidence and trusts other
 * buyers, so it cannot recompute the buyer's view, and would report the same.
 * Every other refusal follows from the job, the claim, its advert and the
 * listed arrival time, so an auditor recomputes it as the buyer did
 * (docs/matching.md "How "first" is audited").
 */
export function listedInSelection(a: Pick<ClaimAnswer, 'claim' | 'code'>): boolean {
  return a.claim !== undefined && (a.code === undefined || !BUYER_LOCAL.has(a.code));
}

/**
 * The buyer's floor on whom its order takes (docs/matching.md "Whom an order
 * takes"): a claimant (the pool, for a claim citing a pooled advert) scoring
 * below `min` in the buyer's own reputation view is refused
 * CLAIM_REPUTATION_TOO_LOW, and with `recorded` one scoring no better than a
 * provider with no evidence (UNKNOWN_REPUTATION, what every fresh key has) too.
 */
export interface ReputationFloor {
  /** The least score taken, 0..1 (0: any). */
  min: number;
  /** Take only claimants with a record above a stranger's (the `trusted` policy). */
  recorded: boolean;
  /** The buyer's derived score of a provider (0.5 when it holds no evidence). */
  scoreOf(did: string): number;
}

/** The selection policy name an open order's selection carries (src/records/kinds.ts). */
export { FIRST_CLAIM_POLICY } from '../records/kinds.js';

/** The terms of an open order, as the buyer posted it. */
export interface OrderTerms {
  /** The buyer's signed job. */
  job: Opened<Job>;
  /** The price the buyer pays (the open bid, or the designated price); default the job's maxPrice. */
  bid?: Money;
  /** The one provider the order names, if any. */
  designated?: string;
}

/** A claim as the buyer's node received it. */
export interface ReceivedClaim {
  /** Arrival sequence number assigned by the buyer's node (unique, increasing with arrival). */
  seq: number;
  /** Local arrival time, ms since the epoch. */
  receivedAt: number;
  /** The claim envelope as received. */
  bytes: Uint8Array;
  /**
   * The caller's own `open(bytes, T.claim)` of these very bytes, when it has
   * one (the buyer's node opened the claim as it arrived): used instead of
   * opening them again. An auditor passes bytes alone.
   */
  opened?: Opened<Claim>;
}

export interface ClaimInput {
  order: OrderTerms;
  claims: readonly ReceivedClaim[];
  /** The adverts known to the buyer, by address (the claimant may attach its advert). */
  adverts: (address: string) => Opened<Advert> | undefined;
  /** Clock-skew window for times in the future (default 30 s). */
  skewMs?: number;
  /** The buyer's reputation floor (buyer-local: an auditor passes none). */
  standing?: ReputationFloor;
}

export interface ClaimAnswer {
  seq: number;
  /** The claim's address and signer (absent when it did not open). */
  claim?: string;
  provider?: string;
  verdict: 'won' | 'refused';
  code?: ClaimRefusalCode;
  /** The error code under CLAIM_INVALID, or the first eligibility failure under CLAIM_INELIGIBLE. */
  cause?: string;
  failures?: Failure[];
  message: string;
}

export interface ClaimDecision {
  job: string;
  /** The winning claim (first valid by arrival), if any. */
  winner?: { seq: number; receivedAt: number; claim: Opened<Claim> };
  /** One answer per claim, in arrival order. */
  answers: ClaimAnswer[];
  /**
   * What the signed selection records so an auditor can check "first": every
   * claim that opened and arrived up to and including the winner, in arrival
   * order with its sequence number (earlier ones each refused for a reason the
   * auditor can recompute from the records), but for those refused
   * CLAIM_ADVERT_UNKNOWN (listedInSelection).
   */
  considered: Array<{ seq: number; provider: string; claim: string }>;
}

const DEFAULT_SKEW_MS = 30_000;

/** First valid claim wins. Throws C0Error only on bad input from the caller (duplicate sequence numbers, a bid above maxPrice). */
export function decideClaims(input: ClaimInput): ClaimDecision {
  const { job } = input.order;
  const j = job.record;
  const skew = input.skewMs ?? DEFAULT_SKEW_MS;
  const bid = input.order.bid ?? j.maxPrice;
  if (bid.currency !== j.maxPrice.currency || cmpAmount(bid.amount, j.maxPrice.amount) > 0) throw new C0Error('ORDER_BID_INVALID', `the bid ${bid.amount} ${bid.currency} is not within the job's maxPrice ${j.maxPrice.amount} ${j.maxPrice.currency}`, { field: 'bid' });
  const claims = [...input.claims].sort((a, b) => a.seq - b.seq);
  for (let i = 1; i < claims.length; i++) if (claims[i]!.seq === claims[i - 1]!.seq) throw new C0Error('CLAIM_SEQ_DUPLICATE', `two claims carry arrival sequence ${claims[i]!.seq}`, { field: 'seq' });

  const answers: ClaimAnswer[] = [];
  const considered: ClaimDecision['considered'] = [];
  const seen = new Set<string>();
  let winner: ClaimDecision['winner'];
  for (const rc of claims) {
    let c: Opened<Claim>;
    try {
      c = rc.opened ?? open(rc.bytes, T.claim);
    } catch (e) {
      if (!(e instanceof C0Error)) throw e;
      answers.push({ seq: rc.seq, verdict: 'refused', code: CLAIM_REFUSAL.INVALID, cause: e.code, message: `the claim does not open: ${e.message}` });
      continue;
    }
    const base = { seq: rc.seq, claim: c.address, provider: c.signer };
    const refuse = (code: ClaimRefusalCode, message: string, extra: Partial<ClaimAnswer> = {}): void => {
      answers.push({ ...base, verdict: 'refused', code, message, ...extra });
      if (!winner && listedInSelection({ claim: c.address, code })) considered.push({ seq: rc.seq, provider: c.signer, claim: c.address });
    };
    if (seen.has(c.address)) {
      refuse(CLAIM_REFUSAL.DUPLICATE, 'the same claim arrived earlier');
      continue;
    }
    seen.add(c.address);
    const r = c.record;
    if (r.job !== job.address) {
      refuse(CLAIM_REFUSAL.WRONG_JOB, `the claim names job ${r.job}, not ${job.address}`);
      continue;
    }
    if (c.signer === job.signer) {
      refuse(CLAIM_REFUSAL.BY_BUYER, 'the buyer does not claim its own order');
      continue;
    }
    if (r.issuedAt >= j.deadline || rc.receivedAt >= j.deadline) {
      refuse(CLAIM_REFUSAL.AFTER_DEADLINE, `the claim was signed at ${r.issuedAt} and received at ${rc.receivedAt}; the job's deadline is ${j.deadline}`);
      continue;
    }
    if (r.issuedAt < j.announcedAt) {
      refuse(CLAIM_REFUSAL.BEFORE_JOB, `the claim is signed at ${r.issuedAt}, before the job was announced (${j.announcedAt})`);
      continue;
    }
    if (r.issuedAt > rc.receivedAt + skew) {
      refuse(CLAIM_REFUSAL.FROM_FUTURE, `the claim is signed at ${r.issuedAt}, beyond the skew window after its arrival (${rc.receivedAt})`);
      continue;
    }
    if (input.order.designated !== undefined && c.signer !== input.order.designated) {
      // An order designated to a pool is claimed by one of its members, citing its pooled advert of that pool (the
      // chain the advert carries, checked when it was opened, proves the membership): docs/pools.md "One provider to
      // buyers". Any other claimant is not designated. A claimant whose advert is not known cannot be judged either way.
      const cited = input.adverts(r.advert);
      if (!cited) {
        refuse(CLAIM_REFUSAL.ADVERT_UNKNOWN, `the advert ${r.advert} is not known`);
        continue;
      }
      if (cited.type !== T.advert || cited.signer !== c.signer || receiptProviderFor(c.signer, cited) !== input.order.designated) {
        refuse(CLAIM_REFUSAL.NOT_DESIGNATED, `the order is designated to ${input.order.designated}`);
        continue;
      }
    }
    if (r.price.currency !== bid.currency) {
      refuse(CLAIM_REFUSAL.CURRENCY_MISMATCH, `priced in ${r.price.currency}; the order pays in ${bid.currency} (never converted)`);
      continue;
    }
    if (cmpAmount(r.price.amount, bid.amount) > 0) {
      refuse(CLAIM_REFUSAL.OVER_BID, `asks ${r.price.amount} ${r.price.currency}, above the order's bid ${bid.amount}`);
      continue;
    }
    const advert = input.adverts(r.advert);
    if (!advert) {
      refuse(CLAIM_REFUSAL.ADVERT_UNKNOWN, `the advert ${r.advert} is not known`);
      continue;
    }
    if (advert.type !== T.advert || advert.signer !== c.signer) {
      refuse(CLAIM_REFUSAL.ADVERT_NOT_CLAIMANTS, 'the advert the claim cites is not the claimant’s');
      continue;
    }
    const failures = checkEligibility(job, advert, undefined, rc.receivedAt, { skewMs: skew });
    if (failures.length > 0) {
      refuse(CLAIM_REFUSAL.INELIGIBLE, failures.map((f) => f.message).join('; '), { cause: failures[0]!.code, failures });
      continue;
    }
    const low = input.standing ? belowFloor(input.standing, receiptProviderFor(c.signer, advert)) : undefined;
    if (low !== undefined) {
      refuse(CLAIM_REFUSAL.REPUTATION_TOO_LOW, low);
      continue;
    }
    if (winner) {
      refuse(CLAIM_REFUSAL.ORDER_TAKEN, `the order was taken by claim ${winner.claim.address} (arrival ${winner.seq})`);
      continue;
    }
    winner = { seq: rc.seq, receivedAt: rc.receivedAt, claim: c };
    considered.push({ seq: rc.seq, provider: c.signer, claim: c.address });
    answers.push({ ...base, verdict: 'won', message: `first valid claim (arrival ${rc.seq})` });
  }
  return { job: job.address, ...(winner ? { winner } : {}), answers, considered: winner ? considered : [] };
}

/** Why `did` is below the floor, or undefined when it is not. Scores are compared as the market scores them (floats). */
function belowFloor(f: ReputationFloor, did: string): string | undefined {
  const score = f.scoreOf(did);
  if (score < f.min) return `${did} scores ${score.toFixed(3)} in this node's reputation view, below the order's floor ${f.min}`;
  if (f.recorded && !(score > UNKNOWN_REPUTATION)) return `${did} has no record above a stranger's (${score.toFixed(3)}) in this node's reputation view, and the order takes only providers with one (policy trusted)`;
  return undefined;
}

/**
 * An auditor's check of a first-claim decision: given the order, the claims the
 * buyer says it considered (in its arrival order, with sequence numbers and
 * arrival times, as its selection would record them) and the winner it named,
 * recompute the rule. Passes when the named winner is valid and no earlier
 * considered claim was valid; throws a C0Error otherwise. It cannot prove a
 * claim the buyer never listed arrived (only the buyer saw arrivals; the
 * claimant holds the buyer's signed refusal for that).
 */
export function auditFirstClaim(input: ClaimInput & { winner: string }): ClaimDecision {
  const d = decideClaims(input);
  if (!d.answers.some((a) => a.claim === input.winner)) throw new C0Error('FIRST_CLAIM_WINNER_NOT_CONSIDERED', `the winner ${input.winner} is not among the considered claims`, { field: 'winner' });
  if (!d.winner) {
    const a = d.answers.find((x) => x.claim === input.winner)!;
    throw new C0Error('FIRST_CLAIM_WINNER_INVALID', `the named winner is not a valid claim (${a.code ?? '?'}: ${a.message})`, { field: 'winner', detail: { code: a.code } });
  }
  if (d.winner.claim.address !== input.winner) {
    const named = d.answers.find((x) => x.claim === input.winner)!;
    if (named.code === CLAIM_REFUSAL.ORDER_TAKEN) throw new C0Error('FIRST_CLAIM_SKIPPED_VALID', `claim ${d.winner.claim.address} (arrival ${d.winner.seq}) was valid and earlier than the named winner`, { field: 'winner', detail: { first: d.winner.claim.address } });
    throw new C0Error('FIRST_CLAIM_WINNER_INVALID', `the named winner is not a valid claim (${named.code ?? '?'}: ${named.message})`, { field: 'winner', detail: { code: named.code } });
  }
  return d;
}
