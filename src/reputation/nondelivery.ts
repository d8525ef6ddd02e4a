/**
 * Non-delivery records (`c0mpute.nondelivery/1` and `/2`; docs/market.md "Reputation
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
import { NONDELIVERY_PROOF_MAX, T, type Advert, type Job, type NonDelivery, type NonDeliveryReason, type Offer, type Selection } from '../records/kinds.js';
import type { Signer } from '../records/ed25519.js';
import { receiptProviderFor, rosterExpiresAt } from '../pools/chain.js';
import { truncateText } from '../util/text.js';

/** Whether a content type is a non-delivery (/1 or /2). */
export function isNonDeliveryType(type: string): boolean {
  return type === T.nondelivery || type === T.nondelivery2;
}

export const ND_ERR = {
  PROOF_INVALID: 'NONDELIVERY_PROOF_INVALID',
  NOT_BUYER: 'NONDELIVERY_NOT_BUYER',
  JOB_MISMATCH: 'NONDELIVERY_JOB_MISMATCH',
  SELECTION_MISMATCH: 'NONDELIVERY_SELECTION_MISMATCH',
  OFFER_MISMATCH: 'NONDELIVERY_OFFER_MISMATCH',
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
export function linkNonDelivery(nd: Opened<NonDelivery>): void {
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
export function nonDeliveryLinks(nd: Opened<NonDelivery>): boolean {
  try {
    linkNonDelivery(nd);
    return true;
  } catch {
    return false;
  }
}

function check(nd: Opened<NonDelivery>): void {
  if (!isNonDeliveryType(nd.type)) fail(ND_ERR.PROOF_INVALID, 'type', `expected ${T.nondelivery} or ${T.nondelivery2}`);
  const n = nd.record;
  const buyer = nd.signer;
  const job = inner<Job>(n.proof.job, T.job, 'job');
  if (job.address !== n.job) fail(ND_ERR.JOB_MISMATCH, 'job', 'the attached job is not the one cited');
  if (job.signer !== buyer) fail(ND_ERR.NOT_BUYER, 'job', 'only the job’s buyer reports a non-delivery on it');
  const sel = inner<Selection>(n.proof.selection, T.selection, 'selection');
  if (sel.address !== n.selection) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the attached selection is not the one cited');
  const s = sel.record;
  if (s.job !== n.job) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the selection decides another job');
  if (s.buyer !== buyer) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the selection was made for another buyer');
  if (s.winner !== n.offer) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the selection’s winner is not the cited offer');
  if (!s.considered.some((c) => c.offer === n.offer && c.provider === n.provider)) fail(ND_ERR.SELECTION_MISMATCH, 'selection', 'the selection does not name this provider with this offer');
  if (s.decidedAt > n.signedAt) fail(ND_ERR.BEFORE_SELECTION, 'signedAt', 'signed before the selection was decided');
  const offer = inner<Offer>(n.proof.offer, T.offer, 'offer');
  if (offer.address !== n.offer) fail(ND_ERR.OFFER_MISMATCH, 'offer', 'the attached offer is not the one cited');
  if (offer.signer !== n.provider) fail(ND_ERR.OFFER_MISMATCH, 'offer', 'the offer is not signed by the provider named');
  if (offer.record.job !== n.job) fail(ND_ERR.OFFER_MISMATCH, 'offer', 'the offer answers another job');
  // the schema holds a /1 without an advert and a /2 with one; checked here too for a record built without it
  if (nd.type === T.nondelivery) {
    if (n.proof.advert !== undefined) fail(ND_ERR.PROOF_INVALID, 'proof.advert', `a ${T.nondelivery} carries no advert (that is a ${T.nondelivery2})`);
    return;
  }
  if (n.proof.advert === undefined) fail(ND_ERR.PROOF_INVALID, 'proof.advert', `a ${T.nondelivery2} carries the pooled advert the offer cites`);
  const advert = inner<Advert>(n.proof.advert, T.advert, 'advert'); // a pooled advert's chain is verified here
  if (advert.address !== offer.record.advert) fail(ND_ERR.ADVERT_MISMATCH, 'proof.advert', 'the attached advert is not the one the offer cites');
  if (advert.signer !== n.provider) fail(ND_ERR.ADVERT_MISMATCH, 'proof.advert', 'the advert is not signed by the provider named');
  if (!advert.record.pool) fail(ND_ERR.ADVERT_MISMATCH, 'proof.advert', `the advert is not pooled (a non-pooled offer's non-delivery is a ${T.nondelivery})`);
}

/** The provider each /2 counts against, by record object (the proof's advert is opened once). */
const attributed = new WeakMap<object, string>();

/**
 * The provider a non-delivery counts against: for a /2, the pool its advert stands for (the offer cited that pooled
 * advert, so it was made for the pool; `receiptProviderFor`, as for a pooled receipt); for a /1, `provider`, the
 * offer's signer. Read from the record alone: for a record that links (linkNonDelivery), the same on every node.
 */
export function nonDeliveryProvider(nd: Opened<NonDelivery>): string {
  const n = nd.record;
  if (nd.type !== T.nondelivery2 || n.proof.advert === undefined) return n.provider;
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
 * receipts nor non-deliveries against it count. A /1 is not pooled: true.
 */
export function nonDeliveryRosterLive(nd: Opened<NonDelivery>): boolean {
  const n = nd.record;
  if (nd.type !== T.nondelivery2 || n.proof.advert === undefined) return true;
  let live = rosterLive.get(nd);
  if (live === undefined) {
    try {
      const advert = open(n.proof.advert, T.advert) as Opened<Advert>;
      const offer = open(n.proof.offer, T.offer) as Opened<Offer>;
      live = offer.record.issuedAt < rosterExpiresAt(advert);
    } catch {
      live = false; // does not open: such a record does not link, and is counted nowhere
    }
    rosterLive.set(nd, live);
  }
  return live;
}

export interface NonDeliveryInput {
  job: Opened<Job>;
  selection: Opened<Selection>;
  offer: Opened<Offer>;
  /**
   * The advert the offer cites, when the caller holds it. When it is that advert, signed by the offer's signer and
   * pooled, the record is a `c0mpute.nondelivery/2` carrying it and counts against the pool (docs/pools.md
   * "Reputation"); otherwise (none, not pooled, not the offer's, or too large to carry) a /1, as before, counting
   * against the offer's signer.
   */
  advert?: Opened<Advert>;
  reason: NonDeliveryReason;
  detail?: string;
  signedAt: number;
  signer: Signer;
}

/** Sign a non-delivery carrying its proof; checks that it links before returning it. */
export function signNonDelivery(i: NonDeliveryInput): Opened<NonDelivery> {
  // cut at a code-point boundary: the detail may quote a provider's text, and half a surrogate pair cannot be sealed
  const detail = i.detail === undefined ? undefined : truncateText(i.detail.trim(), 256);
  const rec: NonDelivery = {
    job: i.job.address,
    selection: i.selection.address,
    offer: i.offer.address,
    provider: i.offer.signer,
    reason: i.reason,
    ...(detail ? { detail } : {}),
    signedAt: i.signedAt,
    proof: { job: i.job.bytes, selection: i.selection.bytes, offer: i.offer.bytes },
  };
  for (const k of ['job', 'selection', 'offer'] as const) {
    if (rec.proof[k].length > NONDELIVERY_PROOF_MAX[k]) throw new C0Error(ND_ERR.TOO_LARGE, `proof.${k}: ${rec.proof[k].length} bytes, more than a non-delivery carries (${NONDELIVERY_PROOF_MAX[k]})`, { field: `proof.${k}` });
  }
  const a = i.advert;
  if (a && a.type === T.advert && a.record.pool && a.address === i.offer.record.advert && a.signer === i.offer.signer && a.bytes.length <= NONDELIVERY_PROOF_MAX.advert) {
    const nd = seal(T.nondelivery2, { ...rec, proof: { ...rec.proof, advert: a.bytes } }, i.signer) as Opened<NonDelivery>;
    // past the envelope bound with the advert, no node would open it: a /1 instead (it counts against the member that quoted)
    if (nd.bytes.length <= MAX_ENVELOPE_BYTES) {
      linkNonDelivery(nd);
      return nd;
    }
  }
  const nd = seal(T.nondelivery, rec, i.signer) as Opened<NonDelivery>;
  linkNonDelivery(nd);
  return nd;
}
