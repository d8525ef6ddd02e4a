/**
 * A receipt that reaches the buyer directly, over `/c0mpute/outcome/1`, because
 * its exec stream could not deliver it (the buyer left mid-job, or the stream
 * broke: src/roles/provider/receipt-delivery.ts; docs/network.md §14 "Who
 * hears a job's outcome", docs/node.md "A receipt the buyer did not get on the
 * stream"). It is the buyer's own evidence, so it is checked as the exec
 * stream's receipt is (src/roles/buyer.ts `attempt`) before it is kept:
 *
 *   the receipt's buyer is this node, and the job it cites is held here and
 *   signed by this node                               → else ignore RECEIPT_NOT_OWN_JOB
 *   (whatever roles the node runs now: a node restarted without the `buyer`
 *   role still holds its jobs and selections, and this is still its outcome)
 *   a selection of that job held here names the receipt's offer as its winner,
 *   and the provider it selected signed the receipt; the receipt links to the
 *   offer (provider, price), the job (input hash, workload), and its times are
 *   possible (not after now, nor started before the offer was issued, beyond
 *   the clock-skew window: impossibleReceiptTimes)    → else ignore RECEIPT_NOT_SELECTED
 *   or, for a pool: the selected coordinator went down, and another member of
 *   its pool failed the job from the dispatch trail (docs/pools.md "A
 *   coordinator that crashes"): a failed POOL_COORDINATOR_LOST receipt for the
 *   winning offer, whose advert (held here) is a pool's, signed by a member
 *   whose own chain proves that same pool (verifyPoolProof), under a roster not
 *   older than the one that advert cites, or one that roster names too (a
 *   member the pool removed still holds the old roster naming it)
 *
 * Ignored, not rejected: nothing is held against the sender (a provider that
 * ran another buyer's job simply has nothing to tell this one), and the record
 * is neither stored nor served. A gossiped or synced receipt naming this node
 * as its buyer is checked the same way (receiptHook); one of another buyer's
 * job is untouched (it is counted as second-hand evidence where the node hears
 * outcomes).
 */
import { ignoreError, type SemanticHook } from '../net/gossip-validation.js';
import type { Opened } from '../records/envelope.js';
import { T, type Advert, type Job, type Offer, type Receipt, type Selection } from '../records/kinds.js';
import type { RecordStore } from '../store/records.js';
import { moneyEquals } from '../records/money.js';
import { receiptProviderFor, verifyPoolProof } from '../pools/chain.js';
import { LOST_CODE } from '../pools/outcome.js';
import { impossibleReceiptTimes } from '../records/freshness.js';

export const LATE_RECEIPT_ERR = { NOT_OWN_JOB: 'RECEIPT_NOT_OWN_JOB', NOT_SELECTED: 'RECEIPT_NOT_SELECTED' } as const;

/** What the check reads: this node's own records (its roles do not matter: the records say whose job it is). */
export interface OwnReceiptLookups {
  /** This node's DID. */
  did: string;
  job(address: string): Promise<Opened<Job> | undefined>;
  selections(job: string): Promise<Array<Opened<Selection>>>;
  /** The record a selection took, by address: an auction's offer, or an open order's winning claim (src/records/taken.ts). */
  offer(address: string): Promise<Opened<Offer> | undefined>;
  advert(address: string): Opened<Advert> | undefined;
  skewMs?: number;
}

/** Where this node holds what its selections took: the live offer book, and its store. */
export interface HeldRecords {
  did: string;
  book(address: string): Opened<Offer> | undefined;
  records: Pick<RecordStore, 'get' | 'selectionsOf'>;
  advert(address: string): Opened<Advert> | undefined;
  skewMs?: number;
}

/**
 * The lookups of a node's own records (overlay.ts). What a selection took is an offer, or, for an open order, the
 * won claim, which stands where an offer stands (same job, signer, advert and price: src/records/taken.ts). Before,
 * only offers were looked up, so a pooled order's POOL_COORDINATOR_LOST receipt signed by another member of the pool
 * (lostByPoolMember needs the taken record's advert) was ignored RECEIPT_NOT_SELECTED (QA qaOrd F1, noticed by its fix).
 */
export function ownReceiptLookups(h: HeldRecords): OwnReceiptLookups {
  return {
    did: h.did,
    job: (a) => h.records.get(a, T.job),
    selections: (job) => h.records.selectionsOf(job),
    offer: async (a) => h.book(a) ?? (await h.records.get(a, T.offer)) ?? ((await h.records.get(a, T.claim)) as unknown as Opened<Offer> | undefined),
    advert: h.advert,
    ...(h.skewMs === undefined ? {} : { skewMs: h.skewMs }),
  };
}

/** The provider a selection chose: the signer of its winning offer (or claim), as the selection lists it. */
export function selectedProvider(sel: Selection): string | undefined {
  return sel.considered.find((c) => c.offer === sel.winner)?.provider ?? sel.arrivals?.find((a) => a.claim === sel.winner)?.provider;
}

/** Throws the ignore a receipt that arrived directly earns unless it is this buyer's own, from the provider it selected. */
export async function checkOwnReceipt(rec: Opened<Receipt>, l: OwnReceiptLookups, now: number): Promise<void> {
  const r = rec.record;
  const notOwn = (why: string) => ignoreError(LATE_RECEIPT_ERR.NOT_OWN_JOB, `a receipt sent directly is taken only by the buyer of its job: ${why}`, 'job');
  const notSelected = (why: string) => ignoreError(LATE_RECEIPT_ERR.NOT_SELECTED, `a receipt sent directly is taken only from the provider the buyer selected, linking to its job and offer: ${why}`, 'offer');
  if (r.buyer !== l.did) throw notOwn('it names another buyer');
  const job = await l.job(r.job);
  if (!job || job.signer !== l.did) throw notOwn('the job is not one this node published');
  const sel = (await l.selections(r.job)).find((s) => s.record.job === r.job && s.record.buyer === l.did && s.record.winner === r.offer);
  if (!sel) throw notSelected('no selection of the job names its offer as the winner');
  const selected = selectedProvider(sel.record);
  const offer = await l.offer(r.offer);
  if (selected !== rec.signer && !lostByPoolMember(rec, selected, offer, l)) throw notSelected('its signer is not the provider selected, nor a member of the selected pool that failed the job as its coordinator’s lost');
  if (r.inputHash !== job.record.input.hash || r.workload !== job.record.workload) throw notSelected('its input hash or workload is not the job’s');
  if (offer) {
    if (offer.signer !== selected || offer.record.job !== r.job || !moneyEquals(offer.record.price, r.price)) throw notSelected('it does not match the offer (signer, job or price)');
    if (r.provider !== receiptProviderFor(offer.signer, l.advert(offer.record.advert))) throw notSelected('it names another provider than the offer’s');
  } else if (r.provider !== rec.signer && !r.pool) {
    throw notSelected('it names another provider than its signer');
  }
  // as the exec stream's receipt (buyer.ts): a claim is dated by this buyer's clock, so the window applies both ways
  const impossible = impossibleReceiptTimes(r, offer?.record.issuedAt, now, l.skewMs);
  if (impossible) throw notSelected(impossible);
}

/**
 * Whether `rec` is the POOL_COORDINATOR_LOST receipt another member of the selected coordinator's pool signed for its
 * offer (docs/pools.md "The lost receipt reaches the buyer"): failed with that code, for the selected offer, held here
 * with the advert it cites, which is a pool's (receiptProviderFor); the receipt's own chain proves its signer a member
 * of that same pool (verifyPoolProof: the roster signed by the pool, the signer's countersignature of it); and that
 * roster is not older (seq) than the one the advert cites, or the advert's roster names the signer too. A member the
 * pool removed by a newer roster still holds an older one naming it, and its chain alone verifies: it is not taken
 * once the advert the buyer selected cites the newer roster. Any other key, a member of another pool, a former member,
 * or any other receipt from a member is not taken.
 */
function lostByPoolMember(rec: Opened<Receipt>, selected: string | undefined, offer: Opened<Offer> | undefined, l: OwnReceiptLookups): boolean {
  const r = rec.record;
  if (selected === undefined || !offer || offer.signer !== selected || !r.pool) return false;
  if (r.status !== 'failed' || r.failure?.code !== LOST_CODE) return false;
  try {
    const advert = l.advert(offer.record.advert);
    const pool = receiptProviderFor(selected, advert);
    if (!advert?.record.pool || pool === selected || r.provider !== pool) return false;
    const own = verifyPoolProof(r.pool, rec.signer);
    if (own.pool !== pool) return false;
    const cited = verifyPoolProof(advert.record.pool, advert.signer).roster;
    return own.roster.record.seq >= cited.record.seq || cited.record.members.some((m) => m.did === rec.signer);
  } catch {
    // a chain that does not verify proves nothing
    return false;
  }
}

/**
 * The receipt hook of an overlay's network: `base` (record-hooks.ts) on every path, and `checkOwnReceipt` as well on
 * the direct route (outcome/1) and, on every path, for a receipt naming this node as its buyer: the buyer holds its
 * own job's selections, so a receipt of its job from a provider it never selected (any provider that quoted the job
 * can sign one for its own offer) is not its outcome, and is not kept to be shown as one (`c0mpute jobs`, the
 * console's jobs, `market export`).
 */
export function receiptHook(base: SemanticHook | undefined, lookups: () => OwnReceiptLookups): SemanticHook {
  return async (rec, ctx) => {
    await base?.(rec, ctx);
    if (ctx.source === 'direct') return checkOwnReceipt(rec as Opened<Receipt>, lookups(), ctx.now);
    const l = lookups();
    if ((rec as Opened<Receipt>).record.buyer === l.did) await checkOwnReceipt(rec as Opened<Receipt>, l, ctx.now);
  };
}

/** How a node logs a receipt that came directly and passed checkOwnReceipt (directReceiptLog). */
export interface DirectReceiptLog {
  level: 'warn' | 'debug';
  fields: Record<string, unknown>;
  msg: string;
}

/**
 * What to log of a receipt of this buyer's own job that came directly (docs/node.md "A receipt the buyer did not get
 * on the stream"): a warning the first time, when the node holds no verdict of its own on it — the run ended without
 * it (the buyer stalled, gave up on a silent provider, or was down), so the run's result said `failed` while the
 * provider reports its own outcome, and the job history shows it as `late` (job-history.ts lateReceipt). A copy of one
 * already held (the provider did not see the first answer) is logged at debug. Before, each was logged at info, with
 * nothing saying the run and the receipt disagree.
 */
export function directReceiptLog(rec: Opened<Receipt>, held: boolean, countersigned: boolean): DirectReceiptLog {
  const r = rec.record;
  const fields = { job: r.job, receipt: rec.address, provider: r.provider, status: r.status, ...(r.failure ? { failure: r.failure.code } : {}) };
  if (held || countersigned) return { level: 'debug', fields, msg: countersigned ? 'a receipt sent directly that this node already holds and countersigned' : 'a receipt sent directly that this node already holds' };
  if (countersignsLate(r)) return { level: 'warn', fields, msg: 'the provider’s receipt came directly after this node’s run of the job ended: it says the provider stalled and this node gave up on it; countersigned, so it counts as the provider’s failure' };
  return {
    level: 'warn',
    fields,
    msg:
      r.status === 'completed'
        ? 'the provider’s receipt came directly after this node’s run of the job ended (it gave up, or it was stopped): it reports completed, but its output was not received; kept, no acceptance or dispute signed'
        : 'the provider’s receipt came directly after this node’s run of the job ended (it gave up, or it was stopped): it reports failed; kept, no verdict signed',
  };
}

/**
 * Failure codes by which a provider admits a failure of its own that ended the buyer's run without the receipt: the
 * buyer's node countersigns such a receipt of its own job when it comes later (`accepted`: the buyer's verdict on a
 * failed receipt, as it signs one on the stream), so the failure counts first-hand here and second-hand at the nodes
 * that trust it. `EXEC_PROVIDER_STALLED`: the provider's process was frozen while the work ran, longer than the buyer
 * waits for a frame, and the buyer gave up on it (src/roles/provider/provider.ts; QA qaMatch F10: it signed
 * EXEC_BUYER_GONE, blaming the buyer, which counts for nobody). Every other late receipt gets no verdict, as before.
 */
export const PROVIDER_ADMITTED_LATE: ReadonlySet<string> = new Set(['EXEC_PROVIDER_STALLED']);

/** Whether this buyer countersigns a receipt of its own job that came after its run ended (checked: checkOwnReceipt). */
export function countersignsLate(r: Receipt): boolean {
  return r.status === 'failed' && PROVIDER_ADMITTED_LATE.has(r.failure?.code ?? '');
}
