/**
 * Non-delivery records (`c0mpute.nondelivery/1`, `/2` and `/3`; docs/market.md "Reputation
 * and its threat model"; spec scheduling.md "Reputation": failures count,
 * which is why they are signed). A buyer whose selected provider did not
 * deliver a receipt signs one; it counts against the provider only when it
 * links, and that is checked here from the record alone, because it carries
 * the linking records as its proof:
 *
 *   job        signed by the non-delivery's signer (the buyer), address = `job`
 *   selection  for that job, on that buyer's behalf (`buyer` = signer; the
 *              decider may be the buyer, its gateway or the overlay's steward),
 *              winner = `offer`, and `considered` names `provider` with `offer`;
 *              decided no later than the non-delivery was signed
 *   offer      signed by `provider`, answering that job, address = `offer`
 *   advert     a /2 only (required there): the advert the offer cites (address
 *              = the offer's `advert`), signed by `provider`, pooled (its chain
 *              verified on open). A /2 counts against the pool the offer stood
 *              for, as a pooled receipt does (docs/pools.md "Reputation"):
 *              `nonDeliveryProvider`. `provider` still names the offer's signer
 *              (the member that quoted), whom the selection names with the offer.
 *
 * A `/3` is an open order's (docs/matching.md "Open orders, claims and leases"):
 * the buyer took a claim, not an offer, so it proves by the claim:
 *
 *   job        as above, and an open order (it carries `order`)
 *   selection  as above, and: policy `first-claim`, signed by the buyer itself
 *              (only the buyer's node sees arrivals: docs/matching.md "How
 *              "first" is audited"), winner = `claim`, its last arrival and
 *              `considered` naming `provider` with `claim`
 *   claim      signed by `provider`, for that job, address = `claim`
 *   advert     optional: when present, the advert the claim cites, signed by
 *              `provider`, pooled; the /3 then counts against that pool, as a
 *              /2 does
 *
 * The pool is read from the record alone, so every node that holds the record
 * charges the same provider; a node's own adverts never decide it (nodes hold
 * different ones). The field is a new version, not a new field of /1
 * (docs/protocol.md §3: a previous-version node refuses unknown fields); a
 * buyer signs a /1, as before, for every offer that does not cite a pooled
 * advert.
 *
 * Pure: no clock, no I/O. Verdicts are cached by address (the address fixes
 * the bytes, so the answer never changes), at most 20,000 of them.
 */
import { C0Error } from '../errors.js';
import { MAX_ENVELOPE_BYTES, open, seal, type Opened } from '../records/envelope.js';
import { FIRST_CLAIM_POLICY, NONDELIVERY_PROOF_MAX, NONDELIVERY_TYPES, T, type Advert, type AnyNonDelivery, type Claim, type ClaimNonDelivery, type Job, type NonDelivery, type NonDeliveryReason, type NonDeliveryType, type Offer, type Selection } from '../records/kinds.js';
import type { Signer } from '../records/ed25519.js';
import { receiptProviderFor, rosterExpiresAt } from '../pools/chain.js';
import { truncateText } from '../util/text.js';

/** Whether a content type is a non-delivery (/1, /2 or /3). */
export function isNonDeliveryType(type: string): boolean {
  return (NONDELIVERY_TYPES as readonly string[]).includes(type);
}

/** Whether a non-delivery is an open order's (/3: proved by the winning claim, not an offer). */
export function isClaimNonDelivery(nd: Opened<AnyNonDelivery>): nd is Opened<ClaimNonDelivery> {
  return nd.type === T.nondelivery3;
}

export const ND_ERR = {
  PROOF_INVALID: 'NONDELIVERY_PROOF_INVALID',
  NOT_BUYER: 'NONDELIVERY_NOT_BUYER',
  JOB_MISMATCH: 'NONDELIVERY_JOB_MISMATCH',
  SELECTION_MISMATCH: 'NONDELIVERY_SELECTION_MISMATCH',
  OFFER_MISMATCH: 'NONDELIVERY_OFFER_MISMATCH',
  /** A /3's claim: not the one cited, not signed by `provider`, or for another job. */
  CLAIM_MISMATCH: 'NONDELIVERY_CLAIM_MISMATCH',
  /** A /3's job is not an open order (no `order`): an auction's non-delivery proves by its offer (/1, /2). */
  NOT_AN_ORDER: 'NONDELIVERY_NOT_AN_ORDER',
  /** A /3's selection is not a `first-claim` selection signed by the buyer itself. */
  NOT_FIRST_CLAIM: 'NONDELIVERY_NOT_FIRST_CLAIM',
  ADVERT_MISMATCH: 'NONDELIVERY_ADVERT_MISMATCH',
  BEFORE_SELECTION: 'NONDELIVERY_BEFORE_SELECTION',
  TOO_LARGE: 'NONDELIVERY_TOO_LARGE',
} as const;

function fail(code: string, field: string, msg: string): never {
  throw new C0Error(code, `${field}: ${msg}`, { field });
}

function inner<R>(bytes: Uint8Array, type: string, field: string): Opened<R> {
  try {
    return open(bytes, type) as Opened<R>;
  } catch (e) {
    throw new C0Error(ND_ERR.PROOF_INVALID, `proof.${field}: does not open as a ${type} (${(e as C0Error).code ?? (e as Error).message})`, { field: `proof.${field}`, cause: e });
  }
}

/** Verdicts by address (small: `ok` or the error's code, field and message), bounded. */
const cache = new Map<string, 'ok' | { code: string; field: string | undefined; message: string }>();
const CACHE_MAX = 20_000;

/** Check that a non-delivery links (see the file comment); throws a C0Error with a NONDELIVERY_* code when it does not. */
export function linkNonDelivery(nd: Opened<AnyNonDelivery>): void {
  const key = `${nd.address}|${nd.signer}`; // the signer is fixed by the address for a real envelope; keyed anyway
  const hit = cache.get(key);
  if (hit === 'ok') return;
  if (hit) throw new C0Error(hit.code, hit.message, hit.field === undefined ? {} : { field: hit.field });
  let verdict: 'ok' | { code: string; field: string | undefined; message: string } = 'ok';
  try {
    check(nd);
  } catch (e) {
    if (!(e instanceof C0Error)) throw e;
    verdict = { code: e.code, field: e.field, message: e.message };
  }
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(key, verdict);
  if (verdict !== 'ok') throw new C0Error(verdict.code, verdict.message, verdict.field === undefined ? {} : { field: verdict.field });
}

/** Whether a non-delivery links (no throw). */
export function nonDeliveryLinks(nd: Opened<AnyNonDelivery>): boolean {
  try {
    linkNonDelivery(nd);
    return true;
  } catch {
    return false;
  }
}

function check(any: Opened<AnyNonDelivery>): void {
  if (!isNonDeliveryType(any.type)) fail(ND_ERR.PROOF_INVALID, 'type', `expected ${T.nondelivery}, ${T.nondelivery2} or ${T.nondelivery3}`);
  if (isClaimNonDelivery(any)) return checkClaim(any);
  const nd = any as Opened<NonDelivery>;
  const n = nd.record;
  linkJob(nd);
  const s = linkSelection(nd).record;
  if (s.winner !== n.offer) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the selection’s winner is not the cited offer');
  if (!s.considered.some((c) => c.offer === n.offer && c.provider === n.provider)) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the selection does not name this provider with this offer');
  notBeforeSelection(s, n);
  const offer = linkProvedBy(nd, 'offer');
  // the schema holds a /1 without an advert and a /2 with one; checked here too for a record built without it
  if (nd.type === T.nondelivery) {
    if (n.proof.advert !== undefined) fail(ND_ERR.PROOF_INVALID, 'proof.advert', `a ${T.nondelivery} carries no advert (that is a ${T.nondelivery2})`);
    return;
  }
  if (n.proof.advert === undefined) fail(ND_ERR.PROOF_INVALID, 'proof.advert', `a ${T.nondelivery2} carries the pooled advert the offer cites`);
  linkPooledAdvert(nd, n.proof.advert, 'offer', offer, `a non-pooled offer's non-delivery is a ${T.nondelivery}`);
}

/** A /3's links (see the file comment): the order, the buyer's first-claim selection, the winning claim, a pooled advert. */
function checkClaim(nd: Opened<ClaimNonDelivery>): void {
  const n = nd.record;
  const buyer = nd.signer;
  if ((n.proof as { offer?: unknown }).offer !== undefined) fail(ND_ERR.PROOF_INVALID, 'proof.offer', `a ${T.nondelivery3} proves by the claim, not an offer`);
  const job = linkJob(nd);
  if (job.record.order === undefined) fail(ND_ERR.NOT_AN_ORDER, 'job', `the job is not an open order (an auction’s non-delivery is a ${T.nondelivery} or ${T.nondelivery2})`);
  const sel = linkSelection(nd);
  const s = sel.record;
  if (s.policy !== FIRST_CLAIM_POLICY) fail(ND_ERR.NOT_FIRST_CLAIM, 'selection', `the selection’s policy is ${s.policy}, not ${FIRST_CLAIM_POLICY}`);
  if (sel.signer !== buyer) fail(ND_ERR.NOT_FIRST_CLAIM, 'selection', 'a first-claim selection is signed by the buyer itself (only its node sees arrivals)');
  if (s.winner !== n.claim) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the selection’s winner is not the cited claim');
  const last = s.arrivals?.at(-1);
  if (!last || last.claim !== n.claim || last.provider !== n.provider || !s.considered.some((c) => c.offer === n.claim && c.provider === n.provider)) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the selection does not name this provider with this claim');
  notBeforeSelection(s, n);
  const claim = linkProvedBy(nd, 'claim');
  if (n.proof.advert === undefined) return;
  linkPooledAdvert(nd, n.proof.advert, 'claim', claim, 'a claim on an advert of its own is charged to its claimant: carry no advert');
}

/** What every version checks of its job: the attached job is the one cited, and its buyer signed the non-delivery. */
function linkJob(nd: Opened<AnyNonDelivery>): Opened<Job> {
  const n = nd.record;
  const job = inner<Job>(n.proof.job, T.job, 'job');
  if (job.address !== n.job) fail(ND_ERR.JOB_MISMATCH, 'job', 'the attached job is not the one cited');
  if (job.signer !== nd.signer) fail(ND_ERR.NOT_BUYER, 'job', 'only the job’s buyer reports a non-delivery on it');
  return job;
}

/** What every version checks of its selection: the attached one is the one cited, and it decides that job for that buyer. */
function linkSelection(nd: Opened<AnyNonDelivery>): Opened<Selection> {
  const n = nd.record;
  const sel = inner<Selection>(n.proof.selection, T.selection, 'selection');
  if (sel.address !== n.selection) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the attached selection is not the one cited');
  if (sel.record.job !== n.job) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the selection decides another job');
  if (sel.record.buyer !== nd.signer) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the selection was made for another buyer');
  return sel;
}

/** Every version: signed no earlier than the selection was decided. */
function notBeforeSelection(s: Selection, n: AnyNonDelivery): void {
  if (s.decidedAt > n.signedAt) fail(ND_ERR.BEFORE_SELECTION, 'signedAt', 'signed before the selection was decided');
}

/** What the provider committed by, and the record's field naming it: an offer (/1, /2) or a claim (/3). */
type ProvedBy = 'offer' | 'claim';
const PROVED_BY = {
  offer: { type: T.offer, code: ND_ERR.OFFER_MISMATCH, otherJob: 'the offer answers another job' },
  claim: { type: T.claim, code: ND_ERR.CLAIM_MISMATCH, otherJob: 'the claim is for another job' },
} as const;

/** The winning offer or claim: the attached one is the one cited, signed by `provider`, for that job. */
function linkProvedBy(nd: Opened<NonDelivery>, by: 'offer'): Opened<Offer>;
function linkProvedBy(nd: Opened<ClaimNonDelivery>, by: 'claim'): Opened<Claim>;
function linkProvedBy(nd: Opened<AnyNonDelivery>, by: ProvedBy): Opened<Offer | Claim> {
  const n = nd.record as AnyNonDelivery & Record<ProvedBy, string> & { proof: Record<ProvedBy, Uint8Array> };
  const p = PROVED_BY[by];
  const rec = inner<Offer | Claim>(n.proof[by], p.type, by);
  if (rec.address !== n[by]) fail(p.code, by, `the attached ${by} is not the one cited`);
  if (rec.signer !== n.provider) fail(p.code, by, `the ${by} is not signed by the provider named`);
  if (rec.record.job !== n.job) fail(p.code, by, p.otherJob);
  return rec;
}

/** A carried advert (a /2's, a pooled /3's): the one the offer or claim cites, signed by `provider`, pooled. */
function linkPooledAdvert(nd: Opened<AnyNonDelivery>, bytes: Uint8Array, by: ProvedBy, cites: Opened<Offer | Claim>, notPooled: string): void {
  const advert = inner<Advert>(bytes, T.advert, 'advert'); // a pooled advert's chain is verified here
  if (advert.address !== cites.record.advert) fail(ND_ERR.ADVERT_MISMATCH, 'proof.advert', `the attached advert is not the one the ${by} cites`);
  if (advert.signer !== nd.record.provider) fail(ND_ERR.ADVERT_MISMATCH, 'proof.advert', 'the advert is not signed by the provider named');
  if (!advert.record.pool) fail(ND_ERR.ADVERT_MISMATCH, 'proof.advert', `the advert is not pooled (${notPooled})`);
}

/** The provider each /2 counts against, by record object (the proof's advert is opened once). */
const attributed = new WeakMap<object, string>();

/**
 * The provider a non-delivery counts against: for a /2, the pool its advert stands for (the offer cited that pooled
 * advert, so it was made for the pool; `receiptProviderFor`, as for a pooled receipt); for a /1, `provider`, the
 * offer's signer; for a /3, the pool of the pooled advert it carries, else `provider`, the claimant. Read from the
 * record alone: for a record that links (linkNonDelivery), the same on every node.
 */
export function nonDeliveryProvider(nd: Opened<AnyNonDelivery>): string {
  const n = nd.record;
  if ((nd.type !== T.nondelivery2 && nd.type !== T.nondelivery3) || n.proof.advert === undefined) return n.provider;
  let p = attributed.get(nd);
  if (p === undefined) {
    try {
      p = receiptProviderFor(n.provider, open(n.proof.advert, T.advert) as Opened<Advert>);
    } catch {
      p = n.provider; // does not open: such a record does not link, and is counted nowhere
    }
    attributed.set(nd, p);
  }
  return p;
}

/** Whether each /2's roster was live when its offer was made, by record object. */
const rosterLive = new WeakMap<object, boolean>();

/**
 * Whether the pool a /2 counts against had a live roster when the offer was made: the offer's `issuedAt` before the
 * expiry of the roster its advert carries (docs/pools.md "Roster expiry"), the rule a pooled receipt is judged by
 * (derive.ts receiptCounts). Past it, the pool is not selected (eligibility ADVERT_ROSTER_EXPIRED) and neither its
 * receipts nor non-deliveries against it count. A /3 carrying a pooled advert: the claim's `issuedAt`, by the same
 * rule. A /1, or a /3 without an advert, is not pooled: true.
 */
export function nonDeliveryRosterLive(nd: Opened<AnyNonDelivery>): boolean {
  const n = nd.record;
  if ((nd.type !== T.nondelivery2 && nd.type !== T.nondelivery3) || n.proof.advert === undefined) return true;
  let live = rosterLive.get(nd);
  if (live === undefined) {
    try {
      const advert = open(n.proof.advert, T.advert) as Opened<Advert>;
      // when the provider committed: the offer's issuedAt (/2), the claim's (/3)
      const committedAt = isClaimNonDelivery(nd) ? (open(nd.record.proof.claim, T.claim) as Opened<Claim>).record.issuedAt : (open((n as NonDelivery).proof.offer, T.offer) as Opened<Offer>).record.issuedAt;
      live = committedAt < rosterExpiresAt(advert);
    } catch {
      live = false; // does not open: such a record does not link, and is counted nowhere
    }
    rosterLive.set(nd, live);
  }
  return live;
}

/** What every version's signing takes: the job and selection it proves by, the reason, when and who signs. */
interface NonDeliveryCommon {
  job: Opened<Job>;
  selection: Opened<Selection>;
  advert?: Opened<Advert>;
  reason: NonDeliveryReason;
  detail?: string;
  signedAt: number;
  signer: Signer;
}

export interface NonDeliveryInput extends NonDeliveryCommon {
  offer: Opened<Offer>;
  /**
   * The advert the offer cites, when the caller holds it. When it is that advert, signed by the offer's signer and
   * pooled, the record is a `c0mpute.nondelivery/2` carrying it and counts against the pool (docs/pools.md
   * "Reputation"); otherwise (none, not pooled, not the offer's, or too large to carry) a /1, as before, counting
   * against the offer's signer.
   */
  advert?: Opened<Advert>;
}

/** Sign a non-delivery carrying its proof; checks that it links before returning it. */
export function signNonDelivery(i: NonDeliveryInput): Opened<NonDelivery> {
  // past the envelope bound with the advert, no node would open it: a /1 instead (it counts against the member that quoted)
  return signProved(i, 'offer', i.offer, T.nondelivery, T.nondelivery2) as Opened<NonDelivery>;
}

export interface ClaimNonDeliveryInput extends NonDeliveryCommon {
  /** The open order (signed by `signer`). */
  job: Opened<Job>;
  /** The buyer's first-claim selection naming `claim`. */
  selection: Opened<Selection>;
  claim: Opened<Claim>;
  /**
   * The advert the claim cites, when the caller holds it: carried only when it is that advert, signed by the
   * claimant, pooled and within the bounds (the record then counts against the pool, as a /2 does); otherwise the
   * /3 counts against the claimant.
   */
  advert?: Opened<Advert>;
}

/** Sign an open order's non-delivery (`c0mpute.nondelivery/3`) carrying its proof; checks that it links before returning it. */
export function signClaimNonDelivery(i: ClaimNonDeliveryInput): Opened<ClaimNonDelivery> {
  // past the envelope bound with the advert, no node would open it: without it (it counts against the claimant)
  return signProved(i, 'claim', i.claim, T.nondelivery3, T.nondelivery3) as Opened<ClaimNonDelivery>;
}

/**
 * Sign a non-delivery proved by `by` (the winning offer or claim, named in the record's field `field`): as `pooled`
 * carrying the advert `by` cites when the caller holds it, it is signed by the same provider, pooled and within the
 * bounds, and the whole stays within the envelope bound; otherwise as `plain`, without it. Checks that it links.
 */
function signProved(i: NonDeliveryCommon, field: ProvedBy, by: Opened<Offer | Claim>, plain: NonDeliveryType, pooled: NonDeliveryType): Opened<AnyNonDelivery> {
  // cut at a code-point boundary: the detail may quote a provider's text, and half a surrogate pair cannot be sealed
  const detail = i.detail === undefined ? undefined : truncateText(i.detail.trim(), 256);
  const proof: Record<string, Uint8Array> = { job: i.job.bytes, selection: i.selection.bytes, [field]: by.bytes };
  const rec = {
    job: i.job.address,
    selection: i.selection.address,
    [field]: by.address,
    provider: by.signer,
    reason: i.reason,
    ...(detail ? { detail } : {}),
    signedAt: i.signedAt,
    proof,
  };
  for (const k of ['job', 'selection', field] as const) {
    if (proof[k]!.length > NONDELIVERY_PROOF_MAX[k]) throw new C0Error(ND_ERR.TOO_LARGE, `proof.${k}: ${proof[k]!.length} bytes, more than a non-delivery carries (${NONDELIVERY_PROOF_MAX[k]})`, { field: `proof.${k}` });
  }
  const a = i.advert;
  if (a && a.type === T.advert && a.record.pool && a.address === by.record.advert && a.signer === by.signer && a.bytes.length <= NONDELIVERY_PROOF_MAX.advert) {
    const nd = seal(pooled, { ...rec, proof: { ...proof, advert: a.bytes } } as never, i.signer) as Opened<AnyNonDelivery>;
    if (nd.bytes.length <= MAX_ENVELOPE_BYTES) {
      linkNonDelivery(nd);
      return nd;
    }
  }
  const nd = seal(plain, rec as never, i.signer) as Opened<AnyNonDelivery>;
  linkNonDelivery(nd);
  return nd;
}
