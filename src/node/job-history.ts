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
import { FIRST_CLAIM_POLICY, T, type Acceptance, type Job, type AnyNonDelivery, type Receipt, type Selection } from '../records/kinds.js';
import { selectedProvider } from './late-receipts.js';
import { receiptProviderFor } from '../pools/chain.js';
import type { Opened } from '../records/envelope.js';
import type { EvidenceStore } from '../reputation/store.js';
import { buyerVerdict } from '../reputation/derive.js';
import type { AttemptNote, RecordStore } from '../store/records.js';
import { JOBS_PAGE_DEFAULT, JOBS_PAGE_MAX } from './jobs-page.js';
import { JOB_RUNNING, type NO_PROVIDER_ENDED } from '../util/run-failure.js';

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
  nondelivery?: Opened<AnyNonDelivery>;
  /**
   * How the attempt ended as this node's run said it, kept when it signed no non-delivery and got no receipt on the
   * run (RecordStore.noteAttempt): e.g. `{code: 'EXEC_BUSY', message: 'provider busy with another of our jobs: refused:
   * EXEC_BUSY'}`. Absent for one with a non-delivery, one from before notes were kept, or one nothing was noted for.
   */
  note?: AttemptNote;
}

/**
 * A job's attempts (`c0mpute jobs` lists them under every job): each selection held for it, by decision time, with the
 * provider it chose and the non-delivery this buyer signed against that attempt (none: the provider delivered a
 * receipt, or the exchange ended without one, e.g. the node stopped during it).
 *
 * The evidence store files a non-delivery under the provider it counts against (nonDeliveryProvider): a /2 on a pool
 * member's offer under the pool's DID, not the member's the selection names. So it is looked up under the member,
 * then under the pool the winning offer's advert stands for (receiptProviderFor). Before, only under the member: a
 * failed pooled attempt showed no non-delivery while `c0mpute reputation` counted it against the pool. An open order's
 * attempt is found the same way: its selection's winner is a claim, its non-delivery a /3 (under the pool its claim's
 * pooled advert stands for, when it carries one).
 */
export async function attemptsOf(records: RecordStore, ev: EvidenceStore, job: string): Promise<HeldAttempt[]> {
  const out: HeldAttempt[] = [];
  for (const selection of await records.selectionsOf(job)) {
    const provider = selectedProvider(selection.record);
    if (provider === undefined) continue;
    const against = (p: string) => ev.nondeliveriesAbout(p).find((n) => n.record.selection === selection.address);
    let nondelivery = against(provider);
    if (!nondelivery) {
      const pool = await poolOfWinner(records, selection, provider);
      if (pool !== undefined) nondelivery = against(pool);
    }
    const note = nondelivery ? undefined : await records.attemptNoteOf(selection.address);
    out.push({ provider, selection, ...(nondelivery ? { nondelivery } : {}), ...(note ? { note } : {}) });
  }
  return out;
}

/**
 * The pool `provider`'s winning offer (or an open order's winning claim) stood for: that of the advert it cites (held
 * here), else of the provider's current advert (the cited one replaced or evicted since); undefined when neither is a
 * pooled advert of its own.
 */
async function poolOfWinner(records: RecordStore, selection: Opened<Selection>, provider: string): Promise<string | undefined> {
  // the winner is a claim under the first-claim policy, an offer under every other: one read, of its own kind
  const won = await records.get(selection.record.winner, selection.record.policy === FIRST_CLAIM_POLICY ? T.claim : T.offer);
  const cited = won?.signer === provider ? await records.get(won.record.advert, T.advert) : undefined;
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

/**
 * How this node's run of its own job ended, as what it signed tells it (docs/node.md "Job history"): what `c0mpute
 * jobs`, `GET /v1/jobs` (`outcome`) and the console's Jobs page give as the job's status. A receipt that came after
 * the run ended (LateReceipt) never decides it: the run had already ended without it.
 * - `completed`: a completed receipt of the job this node accepted (the run's `completed` needs exactly that);
 * - `failed`: none such, and the last attempt ended with this node's verdict on a receipt (a failed one acknowledged,
 *   a completed one disputed) or its non-delivery (an unreachable, silent or refusing provider);
 * - `none`: nothing this node signed says how it ended: no provider was selected (no offers, none eligible, the
 *   steward refused), the run is still going, or the node stopped during the exchange.
 */
export interface JobOutcome {
  status: 'completed' | 'failed' | 'none';
  /** the provider of the attempt that decided it (the one a selection names: a pool's member) */
  provider?: string;
  /** the receipt that decided it, with this node's verdict on it and a failed one's code */
  receipt?: string;
  verdict?: Acceptance['verdict'];
  failure?: string;
  /** the non-delivery this node signed that decided it, and its reason */
  nondelivery?: string;
  reason?: AnyNonDelivery['reason'];
  /** when this node signed that verdict or non-delivery */
  at?: number;
}

/** A buyer's attempt with the receipts held for the offer its selection chose (their verdicts with them), oldest first. */
export interface JobAttempt extends HeldAttempt {
  receipts: HeldReceipt[];
}

/** Each attempt with its receipts: those citing the offer its selection chose. */
export function withReceipts(attempts: readonly HeldAttempt[], receipts: readonly HeldReceipt[]): JobAttempt[] {
  return attempts.map((a) => ({ ...a, receipts: receipts.filter((r) => r.receipt.record.offer === a.selection.record.winner) }));
}

/** JobOutcome of `did`'s own job from its receipts and attempts (attemptsOf, withReceipts). */
export function jobOutcome(did: string, receipts: readonly HeldReceipt[], attempts: readonly JobAttempt[]): JobOutcome {
  // a verdict this node signed on its own job's receipt (a late receipt has none)
  const judged = (h: HeldReceipt) => h.receipt.record.buyer === did && h.acceptance !== undefined;
  const done = receipts.filter((h) => judged(h) && h.receipt.record.status === 'completed' && h.acceptance!.record.verdict === 'accepted').at(-1);
  if (done) return { status: 'completed', provider: attemptOf(attempts, done)?.provider ?? done.receipt.record.provider, ...fromReceipt(done) };
  const last = attempts.at(-1);
  // no selection held (a job from before selections were kept, or one a steward decided elsewhere): its receipts say it
  const ended = last ? last.receipts.filter(judged).at(-1) : receipts.filter(judged).at(-1);
  if (ended) return { status: 'failed', provider: last?.provider ?? ended.receipt.record.provider, ...fromReceipt(ended) };
  if (last?.nondelivery) return { status: 'failed', provider: last.provider, nondelivery: last.nondelivery.address, reason: last.nondelivery.record.reason, at: last.nondelivery.record.signedAt };
  return { status: 'none' };
}

function attemptOf(attempts: readonly JobAttempt[], h: HeldReceipt): JobAttempt | undefined {
  return attempts.find((a) => a.receipts.includes(h));
}

function fromReceipt(h: HeldReceipt): Pick<JobOutcome, 'receipt' | 'verdict' | 'failure' | 'at'> {
  const r = h.receipt.record;
  return { receipt: h.receipt.address, ...(h.acceptance ? { verdict: h.acceptance.record.verdict, at: h.acceptance.record.signedAt } : {}), ...(r.failure ? { failure: r.failure.code } : {}) };
}

/** One of a buyer's jobs in its history: its receipts, its attempts with their non-deliveries, how its run ended, and a receipt that came late. */
export interface HistoryJob {
  job: Opened<Job>;
  receipts: HeldReceipt[];
  attempts: JobAttempt[];
  outcome: JobOutcome;
  late?: LateReceipt;
  /**
   * How the run ended when no provider was selected and nothing it signed says (RecordStore.noteAttempt keyed by the
   * job's address): `{code: 'JOB_INTERRUPTED'}` when this node's stop broke off an order's wait for claims or an
   * auction after it was published; JOB_NO_OFFERS, JOB_NO_ELIGIBLE_PROVIDER (with the explanation's summary) for an
   * auction that selected nobody (util/run-failure.ts NO_PROVIDER_ENDED).
   */
  ended?: AttemptNote;
}

/** How an auction found running as this process started ended: its run died with the earlier process. */
const EARLIER_RUN_BROKEN = 'the run was broken off before a provider was selected: the node crashed or was killed during it, and nothing was paid';

/**
 * The codes `outcomeNow` gives a job with no outcome held: how it stands although nothing this node signed decides it.
 * An auction's is the code its run kept (Buyer #endedNote: NO_PROVIDER_ENDED's, JOB_INTERRUPTED,
 * JOB_NO_PROVIDER_SELECTED, or the error that ended it), with its words in `message`.
 */
export type OutcomeCode = 'ORDER_NOT_CLAIMED' | 'JOB_INTERRUPTED' | typeof NO_PROVIDER_ENDED[keyof typeof NO_PROVIDER_ENDED]['code'] | (string & {});

/**
 * The outcome as this node says it now (`GET /v1/jobs`, `c0mpute jobs`, the console's Jobs list and job page): an open
 * or designated order of this node's (a job with `order`) whose deadline passed with no selection held has `code`
 * ORDER_NOT_CLAIMED and `at` its deadline. No claim was taken, and none can be now; the status stays `none`, since
 * nothing this node signed decided it. Before (QA qaMatch F7), it read as a run still waiting for a claim.
 */
export function outcomeNow({ job, attempts, outcome, ended }: Pick<HistoryJob, 'job' | 'attempts' | 'outcome' | 'ended'>, now: number, o: { earlier?: boolean } = {}): JobOutcome & { code?: OutcomeCode; message?: string } {
  // An order whose wait for claims this node's stop broke off (its run noted it), or that was waiting as this process
  // started (`earlier`: the earlier process's run died with it): interrupted, before its deadline and after. Before (QA
  // qaOrd F3), it read "it may be claimed until …", then ORDER_NOT_CLAIMED, blaming the market for the node's own stop.
  const noClaim = job.record.order !== undefined && outcome.status === 'none' && attempts.length === 0;
  if (noClaim && (ended?.code === 'JOB_INTERRUPTED' || o.earlier === true)) return { ...outcome, code: 'JOB_INTERRUPTED' };
  // An auction that selected nobody, as its run said it (Buyer #noteEnded): no offers, none eligible, or broken off
  // after it was published. Before, every such job read "no provider was selected" (and the console, until a restart,
  // said why in other words).
  // Its note still saying it runs (JOB_RUNNING, kept as it was published) while it was live as this process started
  // (`earlier`), or past its deadline (a run ends by then): it died with a process before a provider was selected, a
  // crash (a stop notes how it ended): JOB_INTERRUPTED (QA ffBuyerDay2 F3: it read like a market that would not take
  // it). Otherwise this process runs it. No note: a job from a build before these notes, nothing known.
  const unselected = job.record.order === undefined && outcome.status === 'none' && attempts.length === 0;
  if (unselected && ended?.code === JOB_RUNNING) return o.earlier === true || job.record.deadline <= now ? { ...outcome, code: 'JOB_INTERRUPTED', message: EARLIER_RUN_BROKEN } : outcome;
  if (unselected && ended?.code !== undefined) return { ...outcome, code: ended.code, message: ended.message };
  const unclaimed = noClaim && job.record.deadline <= now;
  if (unclaimed) return { ...outcome, code: 'ORDER_NOT_CLAIMED', at: job.record.deadline };
  // A provider selected and nothing signed about how it went (no verdict, no non-delivery): the run was broken off by
  // this node's stop or crash (a run that gives up on its provider signs a non-delivery), once its deadline passed or,
  // before it, when the job was live as this process started (`earlier`: MarketService.earlierJobs). QA qaCon F10.
  // A run that noted how its last attempt ended said so itself (EXEC_BUSY for another of our jobs, a stalled buyer…):
  // broken off only when that note is this node's stop, or there is none (a crash notes nothing).
  const last = attempts.at(-1)?.note;
  const broken = outcome.status === 'none' && attempts.length > 0 && (last === undefined || last.code === 'JOB_INTERRUPTED') && (job.record.deadline <= now || o.earlier === true);
  return broken ? { ...outcome, code: 'JOB_INTERRUPTED' } : outcome;
}

/** `job` (one of `did`'s own) as its history shows it (HistoryJob). */
export async function historyOf(records: RecordStore, ev: EvidenceStore, did: string, job: Opened<Job>): Promise<HistoryJob> {
  const receipts = receiptsOfJob(ev, job.address);
  const late = lateReceipt(did, receipts);
  const attempts = withReceipts(await attemptsOf(records, ev, job.address), receipts);
  // no provider selected: how its run ended, when it noted it (an order's stop; an auction's no offers, none eligible, break)
  const ended = attempts.length === 0 ? await records.attemptNoteOf(job.address) : undefined;
  return { job, receipts, attempts, outcome: jobOutcome(did, receipts, attempts), ...(late ? { late } : {}), ...(ended ? { ended } : {}) };
}

/**
 * One page of the jobs `did` published, newest first, with their receipts, every attempt (the provider each selection
 * chose, with the non-delivery signed against it), how the run ended, and the receipt that came after it, if any.
 * Before, the attempts were given only for a job with no receipt held, so a run that failed (a non-delivery signed)
 * and then got its provider's receipt late read as the receipt's `completed` (QA, reputation and audit pass, F1).
 */
export async function jobHistory(records: RecordStore, ev: EvidenceStore, did: string, page: JobsPageQuery): Promise<{ jobs: HistoryJob[]; next?: string }> {
  const p = await records.jobsOf(did, page);
  // the page's jobs read at once (each an index read of its selections and their non-deliveries), not one after another
  const jobs = await Promise.all(p.jobs.map((job) => historyOf(records, ev, did, job)));
  return { jobs, ...(p.next !== undefined ? { next: p.next } : {}) };
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
