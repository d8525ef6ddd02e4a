/**
 * The buyer's side of an open order (docs/matching.md "Open orders, claims and
 * leases"; spec/matching-and-leases.md "Leases": the first valid claim wins):
 * the job is published with `order` and, instead of an offer window, the
 * buyer's node takes claims on `/c0mpute/claim/1` (src/roles/claim-protocol.ts),
 * numbered in arrival order. Each claim is judged as it arrives with
 * decideClaims (src/matching/claims.ts), opened once (by the claim desk as it
 * arrived, or here) and kept opened: the first valid one wins and gets the
 * signed first-claim selection (published on gossip, so other providers drop
 * the order); every other claim gets a signed `c0mpute.claim-refusal/1` —
 * its own invalidity, or ORDER_TAKEN citing the winner — for as long as the
 * run lasts; the winning claim sent again gets the same selection again. Then the work runs with the winner exactly as an auction's does
 * (the exec header carries the claim where an auction carries the offer; the
 * receipt's `offer` is the claim's address and its price the claim's).
 * No winner before the deadline: the run ends `unclaimed` (a designated order
 * its provider did not claim included; no fall-back to an auction). A winner
 * that does not deliver, for a reason an auction signs a non-delivery for
 * (timeout, unreachable, refused, no-receipt, bad-receipt; never this node's
 * own stop or freeze), gets a `c0mpute.nondelivery/3` proved by the order, the
 * selection and its claim, kept and published on `nondelivery3`; the run ends
 * `failed`, the order not re-opened.
 */
import { C0Error } from '../errors.js';
import { open, type Opened } from '../records/envelope.js';
import { T, type Advert, type Claim, type ClaimRefusal, type Job, type NonDeliveryReason, type Offer, type Selection } from '../records/kinds.js';
import { recordNonDelivery } from './buyer-nondelivery.js';
import { decideClaims, listedInSelection, type ClaimAnswer, type ClaimDecision, type ReceivedClaim } from '../matching/claims.js';
import { refusalCode, signClaimRefusal, signFirstClaimSelection } from '../matching/first-claim.js';
import { BUYER_STALLED, JOB_INTERRUPTED, orderFloor, type BuyerDeps, type BuyerEvent, type JobResult, type JobSpec, type RankedCandidate } from './buyer.js';
import { clearableTimeoutSignal, type ClearableTimeoutSignal } from '../util/timers.js';
import { linkedSignal, type LinkedSignal } from '../util/signals.js';
import { NODE_CLOSING_FRAME } from './claim-protocol.js';
import type { OrderCheck } from '../matching/probe.js';
import { formatMoney } from '../records/money.js';

/** What the open-order path needs from the node (src/roles/claim-protocol.ts ClaimDesk). */
export interface OrderPorts {
  /** Start taking claims for a job: arrivals numbered in order; close() stops taking them. */
  inbox(job: string): ClaimInbox;
  /**
   * Whether a live provider could claim the order now, by the probe's rule (ProbeService.check; nothing marked).
   * Asked before the order is posted (none: an `order-check` event says why, and the order is posted anyway) and when
   * it went unclaimed (its reasons join ORDER_NOT_CLAIMED's message). Absent: neither is said.
   */
  check?(job: Opened<Job>, designated?: string): Promise<OrderCheck>;
  /**
   * This node's derived score of a provider now (its reputation view: LiveReputation; 0.5 with no evidence), which the
   * order's floor is checked against (docs/matching.md "Whom an order takes"). Absent: no floor applies.
   */
  scoreOf?(did: string): number;
}

/** A claim as it arrived on `/c0mpute/claim/1`, with the way to answer it. */
export interface ArrivedClaim {
  seq: number;
  receivedAt: number;
  claim: Uint8Array;
  /** `claim` opened (the desk opens it to check it, src/roles/claim-protocol.ts); absent, the buyer opens it once. */
  opened?: Opened<Claim>;
  /** The claimant's advert, when it sent one along. */
  advert?: Uint8Array;
  /** The peer it came from. */
  from: string;
  answer(frame: ClaimAnswerFrame): void;
}

/** The answer on the claim's stream; `error` ends it with an unsigned error frame (nothing to sign about). */
export type ClaimAnswerFrame = { t: 'won'; selection: Uint8Array } | { t: 'refused'; refusal: Uint8Array } | { t: 'error'; code: string; message: string };

export interface ClaimInbox {
  /** The next claim, or undefined when the signal fires (also when it already has: a claim waiting is then left to close) or the inbox closed. */
  next(signal: AbortSignal): Promise<ArrivedClaim | undefined>;
  /**
   * Stop taking claims: every claim still waiting is answered with `answer` (default ORDER_UNKNOWN: the run ended;
   * NODE_CLOSING once the node is stopping), so no claimant waits out its stream's deadline.
   */
  close(answer?: Extract<ClaimAnswerFrame, { t: 'error' }>): void;
}

/** One claim's outcome, as the run reports it (events and result). */
export interface ClaimOutcomeSummary {
  seq: number;
  receivedAt: number;
  provider?: string;
  claim?: string;
  verdict: 'won' | 'refused';
  code?: string;
  /** The signed refusal's address (claims that did not open get none). */
  refusal?: string;
}

/** Run the exec exchange with the winner (the auction's own, Buyer.attempt). */
export type ExecWithWinner = (job: Opened<Job>, cand: RankedCandidate, selection: Opened<Selection>) => Promise<WinnerAttempt>;

/** What one exec exchange with the winner came to (Buyer.attempt's answer, the fields an order reads). */
export interface WinnerAttempt {
  outcome: string;
  output?: Uint8Array;
  receipt?: JobResult['receipt'];
  acceptance?: JobResult['acceptance'];
  /** Why the buyer holds it against the provider: an auction signs a /1 or /2 for it, an order a /3 (orderNonDelivery). */
  nondelivery?: NonDeliveryReason;
  interrupted?: 'stopping' | 'stalled';
}

/** The code of a failed order whose attempt's outcome names none, by why the provider did not deliver. */
const NO_DELIVERY_CODE: Record<string, string> = { refused: 'EXEC_REFUSED', unreachable: 'EXEC_PROVIDER_GONE', timeout: 'EXEC_TIMEOUT', 'no-receipt': 'EXEC_NO_RECEIPT', 'bad-receipt': 'RECEIPT_INVALID' };

/**
 * The `error` of an order that ended `failed` (docs/matching.md "No winner by the deadline"), as the other end states
 * carry one: the failure code of the provider's receipt; RECEIPT_DISPUTED when this node disputed a completed one;
 * BUYER_STALLED when this node did not run during the attempt; else the code the attempt's outcome names
 * (EXEC_PROVIDER_SILENT, EXEC_PROVIDER_OVERRAN, a refusal's code…), else one for why nothing was delivered.
 * Before, a failed order's result had no `error`, only the attempt's outcome as text.
 */
export function failedOrderError(provider: string, a: WinnerAttempt): { code: string; message: string } {
  const r = a.receipt?.record;
  if (r?.status === 'failed') return { code: r.failure?.code ?? 'EXEC_FAILED', message: `the provider ${provider} reports the job failed: ${r.failure?.message ?? a.outcome}` };
  if (r && a.acceptance?.record.verdict === 'disputed') return { code: 'RECEIPT_DISPUTED', message: `this node disputed the receipt of ${provider}: ${a.acceptance.record.reason ?? a.outcome}` };
  const message = `the attempt with ${provider} ended: ${a.outcome}`;
  if (a.interrupted === 'stalled') return { code: BUYER_STALLED, message };
  const named = /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/.exec(a.outcome)?.[0];
  return { code: named ?? (a.nondelivery !== undefined ? NO_DELIVERY_CODE[a.nondelivery] : undefined) ?? 'JOB_FAILED', message };
}

/**
 * Refused claims a selection lists at most. A selection is one envelope of at most 64 KiB, and each refused claim
 * it lists costs about 280 bytes when its provider is new to the list (an arrival and a `considered` entry), so a
 * run that listed every claim that opened could be kept from ever being won by a few hundred refused claims from
 * throwaway keys: the winner's selection would not open. 200 keep the worst case near 56 KiB. Past it the run
 * still answers each claim (a signed refusal) but lists, stores and keeps none.
 */
export const MAX_LISTED_REFUSALS = 200;
/** Claim outcomes the run's result keeps (each is also an event as it happens); past it they are counted only. */
export const MAX_CLAIM_SUMMARIES = 4096;

/**
 * Post an open order and run it: claims until a winner or the deadline, then the work with the winner. `stopping` is
 * the node's stop (Buyer.interrupt): it ends the wait for claims at once, the run `interrupted`, and every claim still
 * waiting is answered NODE_CLOSING (before, the wait went on to the deadline past the node's stop, and a claim
 * waiting in the inbox was never answered: its provider waited out the stream's 15 s deadline).
 */
export async function runOrder(d: BuyerDeps, ports: OrderPorts, job: Opened<Job>, spec: JobSpec, onEvent: (e: BuyerEvent) => void, exec: ExecWithWinner, stopping?: AbortSignal, withdrawn: () => boolean = () => false): Promise<JobResult> {
  const { clock, log } = d;
  const t0 = job.record.announcedAt;
  const designated = spec.order?.designated;
  if (designated === d.did) throw new C0Error('ORDER_DESIGNATED_SELF', 'an order cannot be designated to the buyer itself', { field: 'order.designated' });
  // whom the order takes: the floor on this node's view of the claimant (buyer-local, never listed in the selection)
  const floor = orderFloor(spec, spec.policy ?? d.defaultPolicy);
  const scoreOf = ports.scoreOf;
  const standing = scoreOf && (floor.min > 0 || floor.recorded) ? { ...floor, scoreOf: (did: string) => scoreOf(did) } : undefined;
  /** Claims refused CLAIM_REPUTATION_TOO_LOW (an unclaimed order's message says how many). */
  let belowFloor = 0;
  const inbox = ports.inbox(job.address);
  const claims: ClaimOutcomeSummary[] = [];
  /** Every claim that opened before the winner, in arrival order (each was refused), but for those refused for what only the buyer knew (CLAIM_ADVERT_UNKNOWN, CLAIM_REPUTATION_TOO_LOW: listedInSelection): what the selection lists. */
  const considered: ClaimDecision['considered'] = [];
  const arrivedAt = new Map<number, number>();
  const adverts = new Map<string, Opened<Advert>>();
  /** The claims that opened up to the winner, by address, kept opened (stored with the selection, cited as evidence). */
  const opened = new Map<string, Opened<Claim>>();
  const stop = new AbortController();
  let winner: { claim: Opened<Claim>; selection: Opened<Selection> } | undefined;
  let omitted = 0;
  /** Keep a claim's outcome for the result (the winner's always), up to MAX_CLAIM_SUMMARIES. */
  const summarise = (s: ClaimOutcomeSummary, always = false): void => {
    if (always || claims.length < MAX_CLAIM_SUMMARIES) claims.push(s);
    else omitted++;
  };

  /** Judge one arrival alone (every earlier one was refused, or there is a winner), answer it, report it. */
  const judge = (a: ArrivedClaim): void => {
    let attached: Opened<Advert> | undefined;
    if (a.advert) {
      try {
        attached = open(a.advert, T.advert);
      } catch {
        attached = undefined;
      }
    }
    // Opened once: by the desk as it arrived, else here; decideClaims takes the opened record.
    let c: Opened<Claim> | undefined = a.opened;
    if (!c) {
      try {
        c = open(a.claim, T.claim);
      } catch {
        c = undefined;
      }
    }
    // The winning claim sent again (its claimant did not get the answer, claimer.ts resends the same bytes): the
    // same answer, the selection already signed. Refusing it ORDER_TAKEN would have the winner free its slot and
    // drop the order while the buyer's exec is on its way.
    if (winner && c && c.address === winner.claim.address) {
      a.answer({ t: 'won', selection: winner.selection.bytes });
      log.debug({ job: job.address, claim: c.address, seq: a.seq }, 'winning claim sent again; answered with its selection');
      return;
    }
    const claimant = c?.signer;
    // The advert a claim cites: the one it attached, or the claimant's live advert this node holds.
    const lookup = (addr: string): Opened<Advert> | undefined => {
      if (attached?.address === addr) return attached;
      const known = adverts.get(addr);
      if (known) return known;
      const cur = claimant ? d.adverts(claimant) : undefined;
      return cur?.address === addr ? cur : undefined;
    };
    const rc: ReceivedClaim = { seq: a.seq, receivedAt: a.receivedAt, bytes: a.claim, ...(c ? { opened: c } : {}) };
    const decision = decideClaims({ order: { job, ...(designated ? { designated } : {}) }, claims: [rc], adverts: lookup, ...(d.skewMs !== undefined ? { skewMs: d.skewMs } : {}), ...(standing ? { standing } : {}) });
    const ans: ClaimAnswer = decision.answers[0]!;
    if (ans.code === 'CLAIM_REPUTATION_TOO_LOW') {
      belowFloor++;
      log.info({ job: job.address, claim: ans.claim, provider: ans.provider, seq: a.seq }, `claim refused: ${ans.message}`);
    }
    // A claim refused for what only this node knew (an advert it did not hold, its reputation view) is answered but not listed (listedInSelection).
    if (c && listedInSelection(ans)) {
      if (!winner && (ans.verdict === 'won' || considered.length < MAX_LISTED_REFUSALS)) {
        opened.set(c.address, c); // only the claims the selection lists are read back
        considered.push({ seq: a.seq, provider: c.signer, claim: c.address });
        arrivedAt.set(a.seq, a.receivedAt);
        const cited = lookup(c.record.advert);
        if (cited) adverts.set(cited.address, cited);
      }
    }
    const now = clock();
    if (ans.verdict === 'won' && !winner) {
      const claim = decision.winner!.claim;
      // The selection lists every claim that opened up to this one (but for the buyer-local refusals: listedInSelection), in arrival order: the earlier ones were each
      // refused as they came (judged one at a time), so they are not judged again.
      const selection = signFirstClaimSelection(job, { job: job.address, winner: decision.winner!, answers: [], considered }, (seq) => arrivedAt.get(seq) ?? a.receivedAt, now, d.signer);
      winner = { claim, selection };
      a.answer({ t: 'won', selection: selection.bytes });
      const s: ClaimOutcomeSummary = { seq: a.seq, receivedAt: a.receivedAt, provider: claim.signer, claim: claim.address, verdict: 'won' };
      summarise(s, true);
      onEvent({ e: 'claim', ...s });
      return;
    }
    const code: ClaimRefusal['code'] = ans.verdict === 'won' ? 'ORDER_TAKEN' : refusalCode(ans);
    let refusal: Opened<ClaimRefusal> | undefined;
    if (ans.claim && ans.provider && ans.provider !== d.did) {
      refusal = signClaimRefusal(job, { address: ans.claim, provider: ans.provider }, code, winner?.claim.address, Math.max(now, t0), d.signer);
      a.answer({ t: 'refused', refusal: refusal.bytes });
    } else {
      // Nothing to sign about (a claim that does not open, or our own): the stream ends with an error frame.
      a.answer({ t: 'error', code, message: ans.message });
    }
    const s: ClaimOutcomeSummary = { seq: a.seq, receivedAt: a.receivedAt, ...(ans.provider ? { provider: ans.provider } : {}), ...(ans.claim ? { claim: ans.claim } : {}), verdict: 'refused', code, ...(refusal ? { refusal: refusal.address } : {}) };
    summarise(s);
    onEvent({ e: 'claim', ...s });
  };

  /** The probe's answer, said in one sentence: its summary and the bid at which one could claim it. */
  const said = (c: OrderCheck) => `${c.summary.replace(/\.$/, '')}${c.raiseTo ? `; raise maxPrice to ${formatMoney(c.raiseTo)} for one to claim it` : ''}`;
  /** Ask the probe; a check that fails says nothing (it only explains, it never holds the order back). */
  const check = async (): Promise<OrderCheck | undefined> => {
    try {
      return await ports.check?.(job, designated);
    } catch (e) {
      log.debug({ job: job.address, err: (e as Error).message }, 'order check failed');
      return undefined;
    }
  };

  let deadline: ClearableTimeoutSignal | undefined;
  let untilDeadline: LinkedSignal | undefined;
  try {
    // Before posting: when no live provider could claim it now, say why at once (QA qaMatch F6). The order is posted
    // all the same: a provider may come back, free a slot or lower its ask before the deadline.
    const before = await check();
    if (before && before.candidates === 0) {
      onEvent({ e: 'order-check', candidates: 0, summary: before.summary, counts: before.counts, ...(before.raiseTo ? { raiseTo: before.raiseTo } : {}) });
      log.info({ job: job.address, counts: before.counts }, 'no live provider can claim the order now; posting it anyway');
    }
    await d.store(job);
    await d.publish('job', job);
    onEvent({ e: 'job', job });
    onEvent({ e: 'order', job: job.address, ...(designated ? { designated } : {}), bid: job.record.maxPrice, ...(standing && floor.min > 0 ? { minReputation: floor.min } : {}), ...(standing && floor.recorded ? { recordOnly: 'yes' as const } : {}) });
    log.info({ job: job.address, workload: spec.workload, designated }, 'open order published');
    deadline = clearableTimeoutSignal(Math.max(1, job.record.deadline - clock()));
    // not AbortSignal.any: on Node 20 it leaves an entry on the node's stopping signal per order, for good (signals.ts)
    untilDeadline = linkedSignal([stop.signal, deadline.signal, ...(stopping ? [stopping] : [])]);
    while (!winner) {
      const a = await inbox.next(untilDeadline.signal);
      if (!a) break;
      judge(a);
    }
    const collectMs = clock() - t0;
    const result: JobResult = { job, status: 'unclaimed', attempts: [], timings: { collectMs, restMs: 0 }, claims };
    if (!winner && stopping?.aborted) {
      // the node is stopping: the run is broken off (Buyer.run says JOB_INTERRUPTED), not unclaimed; kept, so the job's
      // history says so once the node is back, before the deadline and after (QA qaOrd F3: it read ORDER_NOT_CLAIMED)
      result.status = 'interrupted';
      // the run's client going away (Ctrl-C: how an order is withdrawn) breaks it off the same way (review s53)
      const why = withdrawn() ? 'its client went away while the order waited for claims: the order was withdrawn' : 'this node stopped while the order waited for claims';
      await d.noteRun?.(job, { code: 'JOB_INTERRUPTED', message: why }).catch((e: unknown) => log.warn({ job: job.address, err: (e as Error).message }, 'could not keep how the order’s run ended'));
      if (omitted) result.claimsOmitted = omitted;
      return result;
    }
    if (!winner) {
      // what the probe says now: why nobody could claim it (before, only that nobody did)
      const after = await check();
      const takes = [floor.recorded ? 'only providers with a record above a stranger’s' : '', floor.min > 0 ? `providers scoring at least ${floor.min}` : ''].filter(Boolean).join(' and ');
      const low = belowFloor > 0 ? `; ${belowFloor === 1 ? '1 claim was' : `${belowFloor} claims were`} refused CLAIM_REPUTATION_TOO_LOW (the order takes ${takes} in this node’s reputation view)` : '';
      const why = `${low}${after && after.candidates === 0 ? `; the market now: ${said(after)}` : ''}`;
      result.error = designated
        ? { code: 'ORDER_NOT_CLAIMED', message: `the designated provider ${designated} did not claim the order before its deadline${why}` }
        : { code: 'ORDER_NOT_CLAIMED', message: `no valid claim arrived before the order’s deadline${why}` };
      result.timings.restMs = clock() - t0 - collectMs;
      if (omitted) result.claimsOmitted = omitted;
      return result;
    }
    // Later claims keep getting a signed ORDER_TAKEN while the work runs.
    const late = (async () => {
      for (;;) {
        const a = await inbox.next(stop.signal);
        if (!a) return;
        judge(a);
      }
    })();
    const { claim, selection } = winner;
    await d.store(selection);
    // The winner's advert (it may have come with the claim): exec seals a sealed input to its box key.
    const cited = adverts.get(claim.record.advert);
    if (cited && d.adverts(claim.signer)?.address !== cited.address) await d.store(cited).catch(() => {});
    for (const x of selection.record.arrivals ?? []) {
      const c = opened.get(x.claim);
      if (c) await d.store(c).catch(() => {});
    }
    await d.publish('selection', selection).catch(() => {});
    result.selection = selection;
    result.evidence = [job.bytes, selection.bytes, ...(selection.record.arrivals ?? []).map((x) => opened.get(x.claim)?.bytes).filter((b): b is Uint8Array => !!b), ...[...adverts.values()].map((a) => a.bytes)];
    // The claim stands where an auction's offer stands: exec header, receipt.offer, price.
    const cand: RankedCandidate = { provider: claim.signer, offer: claim as unknown as Opened<Offer>, total: Number.NaN, scores: {} };
    onEvent({ e: 'selection', selection, winner: cand, attempt: 1 });
    const attempt = await exec(job, cand, selection);
    // Not delivered, for a reason that is the claimant's (Buyer.attempt names none for this node's own stop or freeze,
    // `interrupted`): a /3, as an auction signs a /1 (docs/matching.md "No winner by the deadline").
    const nd = attempt.nondelivery && !attempt.interrupted ? await orderNonDelivery(d, job, selection, claim, cited, attempt.nondelivery, attempt.outcome, onEvent) : undefined;
    result.attempts.push({ provider: claim.signer, outcome: attempt.outcome, ...(nd ? { nondelivery: nd } : {}) });
    // No receipt and no non-delivery: nothing signed says how it ended, so the run's words are kept for the history, as
    // an auction's are (Buyer.run, noteAttempt). Before, an order's attempt kept none, and once its deadline passed
    // `jobs` read an attempt that ended BUYER_STALLED (this node frozen) or EXEC_BUSY as broken off by this node's stop or
    // crash (job-history.ts outcomeNow: no note is a crash).
    if (!attempt.receipt && !nd) {
      const code = attempt.interrupted === 'stopping' ? JOB_INTERRUPTED : failedOrderError(claim.signer, attempt).code;
      await d.noteAttempt?.(selection, { code, message: attempt.outcome }).catch((e: unknown) => log.debug({ selection: selection.address, err: (e as Error).message }, 'the note of an attempt was not kept'));
    }
    if (attempt.receipt) {
      result.receipt = attempt.receipt;
      if (attempt.acceptance) result.acceptance = attempt.acceptance;
    }
    // broken off by this node's stop: the run is `interrupted` (Buyer.run says so), not failed
    result.status = attempt.output && attempt.receipt?.record.status === 'completed' && attempt.acceptance?.record.verdict === 'accepted' ? 'completed' : attempt.interrupted === 'stopping' ? 'interrupted' : 'failed';
    if (result.status === 'completed') result.output = attempt.output!;
    else if (result.status === 'failed') result.error = failedOrderError(claim.signer, attempt);
    stop.abort();
    await late;
    result.timings.restMs = clock() - t0 - collectMs;
    if (omitted) result.claimsOmitted = omitted;
    return result;
  } finally {
    // the deadline's timers go with the run (a winner may come weeks before it)
    deadline?.clear();
    untilDeadline?.clear();
    stop.abort();
    inbox.close(stopping?.aborted ? NODE_CLOSING_FRAME : undefined);
  }
}

/**
 * An open order's non-delivery (`c0mpute.nondelivery/3`: the order, the first-claim selection and the winning claim,
 * and the claim's advert when it is pooled), on its own topic kind, `nondelivery3` (recordNonDelivery); its address,
 * or undefined when it cannot be signed (logged: the run's outcome is unchanged).
 */
async function orderNonDelivery(d: BuyerDeps, job: Opened<Job>, selection: Opened<Selection>, claim: Opened<Claim>, cited: Opened<Advert> | undefined, reason: NonDeliveryReason, detail: string, onEvent: (e: BuyerEvent) => void): Promise<string | undefined> {
  const nd = await recordNonDelivery(d, job, selection, { provider: claim.signer, claim, cited }, reason, detail, onEvent, { job: job.address });
  if (nd) d.log.info({ job: job.address, provider: claim.signer, reason, nondelivery: nd }, 'the winning claimant did not deliver: non-delivery signed');
  return nd;
}
