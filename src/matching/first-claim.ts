/**
 * The signed records of a first-claim decision (docs/matching.md "How "first"
 * is audited"; docs/protocol.md `c0mpute.selection/1` with policy
 * `first-claim`, `c0mpute.claim-refusal/1`): the selection the buyer signs
 * for the winning claim, the refusal it signs for every other claim, and the
 * audit that recomputes the decision from the job, the claims and the
 * adverts. Pure: no I/O, no clock reads.
 */
import { C0Error } from '../errors.js';
import { seal, type Opened } from '../records/envelope.js';
import type { Signer } from '../records/ed25519.js';
import { compareDids } from '../records/did.js';
import { FIRST_CLAIM_POLICY, T, type Advert, type ClaimRefusal, type Job, type Selection } from '../records/kinds.js';
import { auditFirstClaim, type ClaimAnswer, type ClaimDecision, type ReceivedClaim } from './claims.js';

/**
 * The selection naming a decision's winning claim: `arrivals` = every claim
 * that opened up to and including the winner in arrival order, but for those
 * refused CLAIM_ADVERT_UNKNOWN (the decision's `considered`; one entry per
 * address, its first arrival, the winner's at the arrival that won);
 * `considered` = one claim per provider among them (the winner for the
 * winner's provider, else its first), in DID order.
 */
export function signFirstClaimSelection(job: Opened<Job>, d: ClaimDecision, receivedAt: (seq: number) => number, decidedAt: number, signer: Signer): Opened<Selection> {
  if (!d.winner) throw new C0Error('ORDER_NO_WINNER', 'no valid claim to select');
  const win = d.winner.claim;
  const arrivals: NonNullable<Selection['arrivals']> = [];
  const seen = new Set<string>();
  for (const c of d.considered) {
    // The winning claim at the arrival that won, not at an earlier one where the same claim was refused (the buyer
    // judges each arrival alone, so a claim sent again may pass a time-bound check it failed before): listed at
    // that earlier arrival, an audit would judge it there and find the winner invalid, and the list would not end
    // with the winner (the record's rule), so the selection would not seal.
    if (c.claim === win.address && c.seq !== d.winner.seq) continue;
    if (seen.has(c.claim)) continue;
    seen.add(c.claim);
    arrivals.push({ seq: c.seq, receivedAt: receivedAt(c.seq), provider: c.provider, claim: c.claim });
  }
  const byProvider = new Map<string, string>();
  for (const a of arrivals) if (!byProvider.has(a.provider)) byProvider.set(a.provider, a.claim);
  byProvider.set(win.signer, win.address);
  const considered = [...byProvider.entries()].sort((a, b) => compareDids(a[0], b[0])).map(([provider, offer]) => ({ provider, offer }));
  const sel: Selection = { job: job.address, buyer: job.signer, policy: FIRST_CLAIM_POLICY, winner: win.address, considered, decidedAt: Math.max(decidedAt, job.record.announcedAt), arrivals };
  return seal(T.selection, sel, signer);
}

/** The buyer's signed answer to a claim it did not take (`ORDER_TAKEN` cites the winner). */
export function signClaimRefusal(job: Opened<Job>, claim: { address: string; provider: string }, code: ClaimRefusal['code'], winner: string | undefined, signedAt: number, signer: Signer): Opened<ClaimRefusal> {
  const r: ClaimRefusal = { job: job.address, claim: claim.address, provider: claim.provider, code, ...(code === 'ORDER_TAKEN' && winner ? { winner } : {}), signedAt };
  return seal(T.claimRefusal, r, signer);
}

/** The refusal code an answer carries on the wire (a claim that did not open has no address and gets no signed refusal). */
export function refusalCode(a: ClaimAnswer): ClaimRefusal['code'] {
  return a.code ?? 'CLAIM_INVALID';
}

export interface FirstClaimAudit {
  differences: Array<{ code: string; message: string; address?: string }>;
  recomputedWinner?: string;
  notes: string[];
}

/**
 * Recompute a first-claim selection from records: the job (an order, signed by
 * the selection's signer), every claim in `arrivals` and the adverts they cite.
 * Passes when the named winner is valid and no earlier listed claim was
 * (auditFirstClaim). It cannot show a claim the buyer never listed arrived.
 */
export function auditFirstClaimSelection(sel: Opened<Selection>, get: (address: string) => Opened | undefined, skewMs?: number): FirstClaimAudit {
  const s = sel.record;
  const diffs: FirstClaimAudit['differences'] = [];
  const notes: string[] = [];
  const job = get(s.job) as Opened<Job> | undefined;
  if (!job || job.type !== T.job) return { differences: [{ code: 'AUDIT_MISSING_RECORD', message: `the job ${s.job} is not among the records`, address: s.job }], notes };
  if (!job.record.order) diffs.push({ code: 'AUDIT_NOT_AN_ORDER', message: 'the job is not an open order (no `order`), so it is decided by auction, not by first claim' });
  if (sel.signer !== job.signer || s.buyer !== job.signer) diffs.push({ code: 'AUDIT_DECIDER_NOT_BUYER', message: 'only the buyer’s node decides a first claim (it alone sees arrivals)' });
  const claims: ReceivedClaim[] = [];
  for (const a of s.arrivals ?? []) {
    const c = get(a.claim);
    if (!c) {
      diffs.push({ code: 'AUDIT_MISSING_RECORD', message: `claim ${a.claim} (${a.provider}) is not among the records`, address: a.claim });
      continue;
    }
    if (c.signer !== a.provider) diffs.push({ code: 'AUDIT_PROVIDER_MISMATCH', message: `claim ${a.claim} is signed by ${c.signer}, the selection says ${a.provider}`, address: a.claim });
    claims.push({ seq: a.seq, receivedAt: a.receivedAt, bytes: c.bytes });
  }
  if (diffs.length) return { differences: diffs, notes };
  const adverts = (address: string): Opened<Advert> | undefined => {
    const r = get(address);
    return r && r.type === T.advert ? (r as Opened<Advert>) : undefined;
  };
  try {
    const d = auditFirstClaim({ order: { job, ...(job.record.order?.designated ? { designated: job.record.order.designated } : {}) }, claims, adverts, winner: s.winner, ...(skewMs !== undefined ? { skewMs } : {}) });
    const earlier = d.answers.filter((x) => x.claim !== s.winner);
    for (const x of earlier) notes.push(`claim ${x.claim ?? '(did not open)'} (arrival ${x.seq}) refused first: ${x.code}`);
    return { differences: diffs, recomputedWinner: d.winner!.claim.address, notes };
  } catch (e) {
    if (!(e instanceof C0Error)) throw e;
    diffs.push({ code: e.code, message: e.message });
    return { differences: diffs, notes };
  }
}
