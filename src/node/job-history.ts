/**
 * A node's job history, a page at a time: the jobs it published as a buyer
 * (newest first, from the record store's job index) with the receipts held for
 * each and their buyer's verdict, and the receipts naming it as a provider. What
 * `GET /v1/jobs`, `c0mpute jobs` and the console's Jobs page show
 * (docs/node.md "Job history").
 *
 * Until the sixteenth round of issue #16 these read every job the node had
 * stored and matched every receipt and acceptance held against each: a busy
 * buyer's console, which asks again at every job, stalled its node within a day
 * (`npm run soak`; docs/scale.md §6). Now a page costs its own jobs, found
 * through indexes.
 */
import { C0Error } from '../errors.js';
import { T, type Acceptance, type Job, type NonDelivery, type Receipt, type Selection } from '../records/kinds.js';
import { selectedProvider } from './late-receipts.js';
import { receiptProviderFor } from '../pools/chain.js';
import type { Opened } from '../records/envelope.js';
import type { EvidenceStore } from '../reputation/store.js';
import { buyerVerdict } from '../reputation/derive.js';
import type { RecordStore } from '../store/records.js';
import { JOBS_PAGE_DEFAULT, JOBS_PAGE_MAX } from './jobs-page.js';

export { JOBS_PAGE_DEFAULT, JOBS_PAGE_MAX } from './jobs-page.js';

export interface JobsPageQuery {
  limit: number;
  /** `next` of the page before. */
  before?: string;
}

/** `?limit=` and `?before=` of a job-history request; API_BAD_LIMIT / API_BAD_CURSOR when malformed. */
export function parseJobsPage(query: URLSearchParams): JobsPageQuery {
  const l = query.get('limit');
  const b = query.get('before');
  let limit = JOBS_PAGE_DEFAULT;
  if (l !== null) {
    if (!/^[0-9]{1,9}$/.test(l) || Number(l) < 1 || Number(l) > JOBS_PAGE_MAX) throw new C0Error('API_BAD_LIMIT', `limit must be a whole number from 1 to ${JOBS_PAGE_MAX}, got "${l.slice(0, 40)}"`, { field: 'limit' });
    limit = Number(l);
  }
  if (b !== null && !/^[0-9]{16}!sha256:[0-9a-f]{64}$/.test(b)) throw new C0Error('API_BAD_CURSOR', `before must be the "next" of an earlier page, got "${b.slice(0, 100)}"`, { field: 'before' });
  return { limit, ...(b !== null ? { before: b } : {}) };
}

export interface HeldReceipt {
  receipt: Opened<Receipt>;
  /** The receipt's buyer's acceptance of it that reputation counts (its latest verdict), when held. */
  acceptance?: Opened<Acceptance>;
}

/** The receipts held for a job, oldest first, each with its own buyer's verdict (no one else's). */
function receiptsOfJob(ev: EvidenceStore, job: string): HeldReceipt[] {
  return ev
    .receiptsOf(job)
    .sort((a, b) => a.record.startedAt - b.record.startedAt || (a.address < b.address ? -1 : 1))
    .map((receipt) => withVerdict(ev, receipt));
}

/** A receipt with the verdict reputation counts on it (its buyer's latest; derive.ts buyerVerdict). */
function withVerdict(ev: EvidenceStore, receipt: Opened<Receipt>): HeldReceipt {
  const acceptance = buyerVerdict(receipt, ev.acceptancesOf(receipt.address));
  return { receipt, ...(acceptance ? { acceptance } : {}) };
}

/** A provider this buyer selected for a job and what it signed about that provider's attempt: its non-delivery, if any. */
export interface HeldAttempt {
  provider: string;
  selection: Opened<Selection>;
  nondelivery?: Opened<NonDelivery>;
}

/**
 * What a job with no receipt held has instead (`c0mpute jobs` says "no outcome held" and lists these): each selection
 * held for it, by decision time, with the provider it chose and the non-delivery this buyer signed against that
 * attempt (none: the exchange ended without one, e.g. the node stopped during it).
 *
 * The evidence store files a non-delivery under the provider it counts against (nonDeliveryProvider): a /2 on a pool
 * member's offer under the pool's DID, not the member's the selection names. So it is looked up under the member,
 * then under the pool the winning offer's advert stands for (receiptProviderFor). Before, only under the member: a
 * failed pooled attempt showed no non-delivery while `c0mpute reputation` counted it against the pool.
 */
export async function attemptsOf(records: RecordStore, ev: EvidenceStore, job: string): Promise<HeldAttempt[]> {
  const out: HeldAttempt[] = [];
  for (const selection of await records.selectionsOf(job)) {
    const provider = selectedProvider(selection.record);
    if (provider === undefined) continue;
    const against = (p: string) => ev.nondeliveriesAbout(p).find((n) => n.record.selection === selection.address);
    let nondelivery = against(provider);
    if (!nondelivery) {
      const pool = await poolOfWinner(records, selection.record.winner, provider);
      if (pool !== undefined) nondelivery = against(pool);
    }
    out.push({ provider, selection, ...(nondelivery ? { nondelivery } : {}) });
  }
  return out;
}

/**
 * The pool `provider`'s winning offer stood for: that of the advert the offer cites (held here), else of the provider's
 * current advert (the cited one replaced or evicted since); undefined when neither is a pooled advert of its own.
 */
async function poolOfWinner(records: RecordStore, winner: string, provider: string): Promise<string | undefined> {
  const offer = await records.get(winner, T.offer);
  const cited = offer?.signer === provider ? await records.get(offer.record.advert, T.advert) : undefined;
  for (const advert of [cited, records.advertOf(provider)]) {
    if (!advert?.record.pool) continue;
    try {
      const pool = receiptProviderFor(provider, advert);
      if (pool !== provider) return pool;
    } catch {
      // a chain that does not verify stands for no pool
    }
  }
  return undefined;
}

/**
 * A receipt of this buyer's own job that it never countersigned (docs/node.md "Job history", "A receipt the buyer did
 * not get on the stream"): it reached the node after the run had ended without it (the provider sent it directly over
 * outcome/1, or it was heard on gossip), so the run's result said `failed` (BUYER_STALLED, EXEC_PROVIDER_SILENT…)
 * while the provider reports otherwise. Every receipt the run itself got is countersigned in the same attempt
 * (Buyer.attempt), so one without this node's verdict is one the run did not get. Its output never reached the buyer,
 * which therefore signs no acceptance or dispute of it; reputation counts such a receipt as no outcome (completed) or
 * at weight 0 (failed: docs/market.md "Per provider P").
 */
export interface LateReceipt {
  receipt: string;
  provider: string;
  status: Receipt['status'];
  /** A failed receipt's code. */
  failure?: string;
  /** When the provider says it finished (the receipt's `completedAt`); the node does not record when it arrived. */
  at: number;
  /** What it means, in a sentence (`c0mpute jobs` prints it). */
  note: string;
}

/** The last receipt of `did`'s own job that `did` signed no verdict on (LateReceipt), if any. */
export function lateReceipt(did: string, receipts: readonly HeldReceipt[]): LateReceipt | undefined {
  // a provider with a receipt this node signed its verdict on had its outcome settled in the run: another receipt of
  // its own for the job is not a late outcome (second-round review: a winner's second, failed receipt after its accepted
  // one read as a run given up)
  const settled = new Set(receipts.filter((x) => x.acceptance).map((x) => x.receipt.record.provider));
  const h = receipts.filter((x) => !x.acceptance && x.receipt.record.buyer === did && !settled.has(x.receipt.record.provider)).at(-1);
  if (!h) return undefined;
  const r = h.receipt.record;
  // another provider's completed receipt this node accepted: the run went on without this one (a failover) and the job
  // was done, so this receipt is no sign of a run given up (second-round review: the note said so on a completed job)
  const doneElsewhere = receipts.some((x) => x.acceptance?.record.verdict === 'accepted' && x.receipt.record.status === 'completed' && x.receipt.record.provider !== r.provider);
  const when = doneElsewhere ? 'after this node had moved the job to another provider, whose completed receipt it accepted' : 'after this node’s run of the job ended';
  const note =
    r.status === 'completed'
      ? `the provider reports completed ${when}; its output was not received, so no acceptance or dispute was signed`
      : `the provider reports failed${r.failure ? ` (${r.failure.code})` : ''} ${when}; no verdict was signed on it`;
  return { receipt: h.receipt.address, provider: r.provider, status: r.status, ...(r.failure ? { failure: r.failure.code } : {}), at: r.completedAt, note };
}

/** One page of the jobs `did` published, newest first, with their receipts (and the one that came after its run, if any). */
export async function jobHistory(records: RecordStore, ev: EvidenceStore, did: string, page: JobsPageQuery): Promise<{ jobs: Array<{ job: Opened<Job>; receipts: HeldReceipt[]; late?: LateReceipt }>; next?: string }> {
  const p = await records.jobsOf(did, page);
  return {
    jobs: p.jobs.map((job) => {
      const receipts = receiptsOfJob(ev, job.address);
      const late = lateReceipt(did, receipts);
      return { job, receipts, ...(late ? { late } : {}) };
    }),
    ...(p.next !== undefined ? { next: p.next } : {}),
  };
}

/** The newest `limit` records by `time` (then the higher address), newest first, without sorting them all. */
export function newest<R extends { address: string }>(all: Iterable<R>, limit: number, time: (r: R) => number): R[] {
  const top: R[] = [];
  if (limit <= 0) return top;
  // > 0 when a is newer than b
  const cmp = (a: R, b: R) => time(a) - time(b) || (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);
  for (const r of all) {
    if (top.length === limit && cmp(r, top[top.length - 1]!) <= 0) continue;
    // binary search for the first in `top` that r is newer than
    let lo = 0;
    let hi = top.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cmp(r, top[mid]!) > 0) hi = mid;
      else lo = mid + 1;
    }
    top.splice(lo, 0, r);
    if (top.length > limit) top.pop();
  }
  return top;
}

/** The newest `limit` receipts naming `did` as the provider (by startedAt), and how many are held. */
export function providedReceipts(ev: EvidenceStore, did: string, limit: number): { receipts: HeldReceipt[]; total: number } {
  const all = ev.receiptsAbout(did);
  return { receipts: newest(all, limit, (r) => r.record.startedAt).map((r) => withVerdict(ev, r)), total: all.length };
}
