/**
 * The buyer role: publishes a job, collects offers for a window (ending early
 * when enough arrived), selects by policy with the market engine, sends the
 * selection and input to the winner over `/c0mpute/exec/1`, verifies the output
 * against the receipt's output hash, countersigns (accepts or disputes with a
 * reason), and gossips receipt and acceptance. If the winner fails or vanishes
 * it moves to the runner-up while the deadline allows; a winner that did not
 * deliver a receipt earns a signed non-delivery record (docs/market.md
 * "Reputation and its threat model"), stored and gossiped.
 */
import { randomBytes } from 'node:crypto';
import { parsePolicy } from '../market/policy.js';
import { C0Error } from '../errors.js';
import { open, seal, type Opened } from '../records/envelope.js';
import { T, type Acceptance, type Advert, type Job, type NonDeliveryReason, type Offer, type PolicyName, type Receipt, type Requirements, type Selection } from '../records/kinds.js';
import { moneyEquals, type Money } from '../records/money.js';
import { hashHex } from '../records/address.js';
import { Ed25519Signer } from '../records/ed25519.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import { seal as sealBox } from '../crypto/sealed-box.js';
import type { SelectResult } from '../market/select.js';
import type { MarketExplanation } from '../market/explain.js';
import { EXEC_MAX_INPUT_BYTES, EXEC_PROTOCOL, EXEC_SILENCE_FACTOR, parseExecFrame, silenceLimitMs, type ExecFrame, type ExecRequest } from './exec-protocol.js';
import { receiptProviderFor } from '../pools/chain.js';
import type { NetworkAssessment } from '../node/net-health.js';
import { runOrder, type ClaimOutcomeSummary, type OrderPorts } from './buyer-orders.js';
import { recordNonDelivery } from './buyer-nondelivery.js';
import { clearableTimeoutSignal, raceTimeout, setLongTimeout, type LongTimer } from '../util/timers.js';
import { linkedSignal, unlessAborted } from '../util/signals.js';
import { BUFFER_LIMIT } from '../net/byte-budget.js';
import { NET_ERR } from '../net/frames.js';
import type { NonDeliveryTopicKind } from '../net/topics.js';
import { impossibleReceiptTimes } from '../records/freshness.js';
import { truncateText } from '../util/text.js';
import { STALL_TICK_MS, type StallWatch } from '../util/stall-watch.js';
import { RunBreak } from './run-break.js';
import type { DenyBasis } from '../util/deny-text.js';
import { JOB_NO_PROVIDER_SELECTED, JOB_RUNNING, NO_PROVIDER_ENDED } from '../util/run-failure.js';
import { shortDid } from '../util/did-text.js';

/**
 * Progress frames from the selected provider (docs/node.md "Buyer"): an honest provider sends at most 10 a second, so
 * the buyer passes on at most PROGRESS_PER_SEC a second (after a burst of PROGRESS_BURST); frames past that are
 * coalesced (the latest is kept and passed on at the next free slot, or before the receipt) and each message is cut to
 * PROGRESS_MESSAGE_MAX characters. A flood is dropped, not held against the provider: the frames cost the buyer only
 * the reading.
 */
export const PROGRESS_PER_SEC = 10;
export const PROGRESS_BURST = 10;
export const PROGRESS_MESSAGE_MAX = 200;

/** `s` cut to at most `max` UTF-16 code units, ending in '…' when cut (truncateText: never through a surrogate pair). */
function clip(s: string, max: number): string {
  return s.length <= max ? s : `${truncateText(s, max - 1)}…`;
}

/**
 * A freeze of this process longer than this during an attempt (SIGSTOP, a suspended machine, a blocked event loop)
 * may be why its exec stream broke: a peer drops a connection whose pings go unanswered that long (LIVENESS's
 * pingMinTimeoutMs in src/net/libp2p-host.ts), so the attempt is recorded as interrupted here, not as the provider's
 * non-delivery (docs/node.md "Buyer": "A buyer that stops or stalls blames no provider").
 */
export const STALL_MS = 30_000;
/** How long a node's stop waits for its runs to end once it interrupted them, ms (docs/node.md "Buyer": "A buyer that stops or stalls blames no provider"). */
export const INTERRUPT_WAIT_MS = 3_000;
/**
 * The most of a failed receipt's message an attempt carries (`detail`): the provider's own words on what went wrong
 * (which field of the job, which bound), printed by `c0mpute run` and `train buy` next to the code (review s43 R8 F4:
 * they printed the code alone). The receipt keeps the whole message.
 */
export const ATTEMPT_DETAIL_MAX = 300;

/**
 * Why a job's offer window ended: its whole length passed (`window`), `buyer.enoughOffers` providers' eligible offers
 * came (`enough`), every provider the job's allowlist names has an eligible offer (`allowlist`: fewer than
 * `buyer.enoughOffers`, or it is 0), every provider in the buyer's view that could win quoted (`all-quoted`:
 * `buyer.endWhenAllQuoted`), or the node is stopping (`stopped`). The wait for offers (BuyerDeps.waitForOffers) says
 * `enough` for both of the first two; `enoughEnd` tells them apart.
 */
export type WindowEnd = 'window' | 'enough' | 'allowlist' | 'all-quoted' | 'stopped';

/** What a job's offer window ended with: the offers held for the job and why it ended. */
export interface OffersCollected {
  offers: number;
  ended: WindowEnd;
}

/**
 * How many providers' eligible offers end a job's collection window early: `buyer.enoughOffers` (0: none, the whole
 * window), but never more than the job's allowlist names, since no other provider's offer can pass its gates. A job
 * allowlisting N providers ends its window once all N offered: a `train buy` member job names one provider, and each
 * waited out the whole window (`buyer.collectWindowMs`) for offers that could not come.
 */
export function offersToWaitFor(enoughOffers: number, job: Pick<Job, 'requirements'>): number {
  const named = job.requirements?.allowlist ? new Set(job.requirements.allowlist).size : 0;
  if (named === 0) return enoughOffers;
  return enoughOffers > 0 ? Math.min(enoughOffers, named) : named;
}

/**
 * Why a window that ended with offersToWaitFor's count of offers ended: `allowlist` when the job's allowlist set that
 * count (buyer.enoughOffers is 0, or more than it names), else `enough`. Before, `run` said "enough offers
 * (buyer.enoughOffers)" with buyer.enoughOffers at 0 (QA qaRep F8).
 */
export function enoughEnd(enoughOffers: number, job: Pick<Job, 'requirements'>): 'enough' | 'allowlist' {
  const named = job.requirements?.allowlist ? new Set(job.requirements.allowlist).size : 0;
  return named > 0 && (enoughOffers === 0 || enoughOffers > named) ? 'allowlist' : 'enough';
}

/** The code of a run broken off because its node is stopping. */
export const JOB_INTERRUPTED = 'JOB_INTERRUPTED';

/** What a run has made so far: the job once signed, and whether it was kept (an auction's). */
interface RunMade {
  opened?: Opened<Job>;
  stored?: boolean;
}
/** The code in an attempt's outcome when this node was frozen during it (no non-delivery signed). */
export const BUYER_STALLED = 'BUYER_STALLED';
/** Attempts ended without a receipt remembered for a provider's lapse refusals (per provider and per job), at most. */
const UNFINISHED_KEPT = 4096;
/** How long such an attempt explains a lapse refusal: a provider's longest lapse pause (64 × a 30 s offer lifetime) and as much again. */
const UNFINISHED_WINDOW_MS = 2 * 64 * 30_000;

/**
 * A provider that promised no keepalives is given up once its quoted duration has overrun by as much again, and by
 * at least this much (overrunLimitMs; docs/node.md "Buyer"): the silence a provider that promises keepalives is
 * allowed (3 × 5 s), so a winner that quoted next to nothing and stalls is left while its runner-ups' offers (30 s by
 * default) still hold.
 */
export const OVERRUN_GRACE_MS = 15_000;
/** The code an attempt is given up with when its provider, which promised no keepalives, overran its quote (a `timeout` non-delivery). */
export const EXEC_PROVIDER_OVERRAN = 'EXEC_PROVIDER_OVERRAN';

/**
 * How long the buyer waits for the exec stream to its winner to open (docs/node.md "Buyer"): longer than an honest
 * provider frozen for a while on a loaded machine takes to answer (the review's runs: 10–20 s, then it completed),
 * shorter than its runner-ups' offers (30 s by default, from the job's announcement) last. Once the stream is open the
 * provider has OVERRUN_GRACE_MS to take the request (its `ready`, for an input sent in frames).
 */
export const EXEC_OPEN_MS = 25_000;

/**
 * Errors an exec stream ends with here because of what the provider sent (exec-protocol.ts, and this node's frame
 * reader, frames.ts): a frame that is not CBOR or not an exec frame, one over the frame bound, more output than this
 * buyer takes. A frame cut short by a broken link is NET_STREAM_FAILED, not one of these. Its non-delivery says `no-receipt` (it answered, without a receipt), not
 * `unreachable`: before, the signed record told everyone a link failed (review s40).
 */
const PROVIDER_PROTOCOL_ERRORS: ReadonlySet<string> = new Set(['EXEC_BAD_FRAME', 'EXEC_OUTPUT_TOO_LARGE', 'NET_BAD_FRAME', 'NET_FRAME_TOO_LARGE']);
/** The code an attempt is given up with when its stream did not open, or its provider did not take the request, in time (a `timeout` non-delivery). */
export const EXEC_PROVIDER_NOT_READY = 'EXEC_PROVIDER_NOT_READY';

/**
 * How long a buyer waits, from the provider's `accepted` (it has the input and the work starts), for the output (or the
 * receipt) of a provider that promised no keepalives and quoted `durationMs`: max(2 × durationMs, durationMs + graceMs).
 * The input's time on the wire is not in it: that phase is bounded by inputLimitMs, before `accepted`.
 */
export function overrunLimitMs(durationMs: number, graceMs = OVERRUN_GRACE_MS): number {
  const d = Number.isFinite(durationMs) ? Math.max(0, durationMs) : 0;
  return d + Math.max(d, graceMs);
}

/**
 * The slowest an input may travel and still count (a provider's own bound by default: provider.execMinInputBytesPerSec,
 * 128 KiB/s).
 */
export const INPUT_MIN_BYTES_PER_SEC = 128 * 1024;
export function inputAllowanceMs(bytes: number): number {
  return bytes > 0 ? Math.ceil((bytes * 1000) / INPUT_MIN_BYTES_PER_SEC) : 0;
}

/** The base of a provider's input phase by default (provider.execRequestMs): it allows an input this plus inputAllowanceMs. */
export const EXEC_INPUT_BASE_MS = 30_000;

/**
 * How long a buyer waits, from the provider's `ready` (or, for an input inside the header, from the request being
 * sent), for its `accepted`: the input phase a provider allows itself by default (execRequestMs, 30 s, plus the input
 * at 128 KiB/s: `baseMs` + inputAllowanceMs) and the grace for the way back. The buyer cannot tell when the input's
 * last byte reached the provider (its "sent" only says its own buffers took it: a 2 MiB input on a 64 KiB/s link was
 * "sent" 1 s after the stream opened and arrived 32 s later), and a provider can promise keepalives only in
 * `accepted`, once it has the input: an honest provider still taking the input at the provider's own pace is not given
 * up (it was, at 15 s + its quote + the input at 128 KiB/s after "sent", and blamed; third-round review).
 */
export function inputLimitMs(bytes: number, baseMs = EXEC_INPUT_BASE_MS, graceMs = OVERRUN_GRACE_MS): number {
  return baseMs + inputAllowanceMs(bytes) + graceMs;
}

/**
 * The slowest a provider that promised no keepalives may deliver its output once it began (docs/node.md "Buyer"):
 * after the grace, it must have sent at least this many bytes a second on average. A floor on bytes, not a gap
 * between chunks: a byte every 14 s passed a per-chunk gap and held the buyer to the deadline, while an honest
 * provider on a 16 KiB/s link (a 256 KiB chunk taking 16 s) failed it (second-round review).
 */
export const OUTPUT_MIN_BYTES_PER_SEC = 4 * 1024;

/**
 * Providers dialled ahead of their selection (docs/node.md "Buyer": "Providers that cannot be dialled"): before it
 * signs a selection the buyer dials the decision's winner and the next ones of its ranking, DIAL_AHEAD in all, one
 * more for each provider it could not reach, at most DIAL_AHEAD_MAX; a winner that cannot be dialled is left out of
 * the decision without a selection, so a run of unreachable keys costs dials in parallel, not an attempt each. One
 * with no address known (NO_ADDRESS) costs nothing until every provider with an address was tried.
 */
export const DIAL_AHEAD = 8;
export const DIAL_AHEAD_MAX = 32;
/**
 * How long the buyer waits for its winner's dial while providers ranked after it are already reached (connected, or
 * dialled ahead), docs/node.md "Buyer": "Providers that cannot be dialled". It stops waiting when the first of those
 * reached providers' offers would lapse within DIAL_LAPSE_MARGIN_MS (the time a selection takes to be signed, kept,
 * published and sent), but not before the winner's dial has run DIAL_MIN_WAIT_MS (a reachable winner is dialled
 * within it: the winner of a buyer that reaches every provider is not passed over), nor once those offers lapsed; then
 * every provider not reached is set aside (like one with no address known) and the decision is taken again among
 * those reached. Keys whose address is a black hole (a TCP accept that never speaks) each hold a dial for 6-10 s, so
 * a hundred of them ranked first held the buyer past the 30 s offers of two providers it was connected to all along
 * (review s38, K=100: failed at 33 s, every honest offer lapsed); how many keys it takes does not matter now.
 */
export const DIAL_LAPSE_MARGIN_MS = 5_000;
export const DIAL_MIN_WAIT_MS = 2_000;
/**
 * The code BuyerDeps.dial refuses a provider with when no address of it is known and it was not to be looked up: the
 * buyer leaves such providers out of its decisions until no provider with an address known is left, then looks
 * them up (docs/node.md "Buyer").
 */
export const NO_ADDRESS = 'NET_PEER_NOT_FOUND';
/** The wait for a winner's dial ended before the dial did (DIAL_LAPSE_MARGIN_MS). */
const NOT_YET = Symbol('not yet');
/** How many providers not tried a run that ends without delivery names in its attempts (the rest are counted in one entry). */
export const UNTRIED_NAMED = DIAL_AHEAD_MAX;
/**
 * A run's bounds (docs/node.md "Buyer"): at most this many selections signed (each is stored and published), and this
 * many providers tried in all (selected, unreachable, lapsed). Late offers join later decisions, so without them a
 * flood of keys that each refuse made one run sign, store and publish 2,000 selections and 2,000 refusals (second-round
 * review); an honest market that fails this often has something else wrong. The rest are named as not tried.
 */
export const MAX_SELECTIONS_PER_RUN = 32;
export const MAX_TRIES_PER_RUN = 128;
/**
 * How many times a run that has no provider left to fail over to asks for more offers (BuyerDeps.rescue) before it
 * ends (docs/node.md "Buyer"): providers that learned the job after its selection skip it as decided, so only the
 * buyer's own push reaches them; twice, so a rescued provider that fails too can be followed by one more.
 */
export const MAX_RESCUES_PER_RUN = 2;

/**
 * Whether an attempt that got no receipt ended by this node's own doing, and so earns the provider no non-delivery:
 * `stopping` when this node is stopping (its stop aborted the exec stream), `stalled` when this process did not run
 * for longer than `stallMs` during the attempt. Undefined: the provider's doing as far as this node can tell.
 */
export function localInterruption(o: { stopping: boolean; frozenMs: number; stallMs?: number }): 'stopping' | 'stalled' | undefined {
  if (o.stopping) return 'stopping';
  if (o.frozenMs > (o.stallMs ?? STALL_MS)) return 'stalled';
  return undefined;
}

type ProgressEvent = Extract<BuyerEvent, { e: 'progress' }>;

/** The reclaim a failed receipt reports, if any. */
function reclaimCodeOf(r: Opened<Receipt> | undefined): ReclaimCode | undefined {
  const c = r?.record.status === 'failed' ? r.record.failure?.code : undefined;
  return c === 'EXEC_PREEMPTED' || c === 'EXEC_IDLE_RECLAIMED' ? c : undefined;
}

/** A token bucket over progress events: `offer` passes one on or coalesces it; `flush` passes on the one held back. */
class ProgressGate {
  #tokens = PROGRESS_BURST;
  #at: number;
  #held: ProgressEvent | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly emit: (e: ProgressEvent) => void,
  ) {
    this.#at = clock();
  }

  offer(provider: string, f: { message: string; permille?: number }): void {
    const now = this.clock();
    this.#tokens = Math.min(PROGRESS_BURST, this.#tokens + (Math.max(0, now - this.#at) * PROGRESS_PER_SEC) / 1000);
    this.#at = now;
    const permille = typeof f.permille === 'number' && Number.isFinite(f.permille) ? Math.min(1000, Math.max(0, Math.round(f.permille))) : undefined;
    const ev: ProgressEvent = { e: 'progress', provider, message: clip(f.message, PROGRESS_MESSAGE_MAX), ...(permille === undefined ? {} : { permille }) };
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      this.#held = undefined;
      this.emit(ev);
    } else {
      this.#held = ev;
    }
  }

  flush(): void {
    const h = this.#held;
    this.#held = undefined;
    if (h) this.emit(h);
  }
}

export interface RankedCandidate {
  provider: string;
  offer: Opened<Offer>;
  /**
   * The market entry the offer stood for when it was ranked, where that is not `provider`: a pool's DID for a member's
   * offer citing a pooled advert. A failover leaves it out with the provider, though the member may leave the pool.
   */
  entry?: string;
  total: number;
  scores: Record<string, number>;
}

/** The market's decision for a job, with the offers it ranked opened for sending. */
export interface Decision {
  /** The market engine's result: ranked candidates with scores and why, or the explanation. */
  result: SelectResult;
  /** Eligible candidates, best first, with their offers. */
  ranked: RankedCandidate[];
  /** Every known provider judged against the job (those that did not quote too), with every failed requirement. */
  market: MarketExplanation;
}

/** What the buyer needs from the market engine (wired in the daemon). */
export interface BuyerMarket {
  /**
   * Rank the job's offers at `now`. `excluded`: providers already tried, whose offers are left out, so a
   * failover decides afresh among the rest (removing a provider can reorder the others: every proportional
   * score is relative to the best price and duration still in the running), and a selection signed from it
   * recomputes to its winner.
   */
  decide(job: Opened<Job>, policy: PolicyName, now: number, excluded?: ReadonlySet<string>): Promise<Decision>;
  offerCount(job: string, now: number): number;
  /** Sign the selection of `winner` among the decision's candidates. */
  signSelection(job: Opened<Job>, decision: Decision, winner: RankedCandidate, now: number): Opened<Selection>;
}

export interface JobSpec {
  workload: string;
  requirements?: Requirements;
  maxPrice: Money;
  /** Relative deadline from announcement. */
  deadlineMs: number;
  timeoutMs?: number;
  params?: string;
  input: Uint8Array;
  sealInput?: boolean;
  policy?: PolicyName;
  /** On an overlay with a steward: the pool/1 entitlement the job runs under. */
  entitlement?: string;
  /** The claim's comparability class (pool/1 §2.4); lets the steward derive an estimate from history. */
  class?: string;
  /** The claim's energy estimate with its grade (pool/1 §2.3). */
  energy?: { uj: number; grade: 'HwShunt' | 'ModelBased' | 'Estimator' };
  /** A member job of a gang admitted as one pool/1 claim (docs/training.md "A gang on a stewarded overlay"): the claim and member index it runs under. */
  gang?: { claim: string; member: number };
  /**
   * An open order (docs/matching.md "Open orders, claims and leases"): claims at maxPrice instead of an offer window;
   * `designated` names the one provider that may claim it. `minReputation` (0..1, this node's own: not in the signed
   * job) is the least score in this node's reputation view a claimant needs (docs/matching.md "Whom an order takes";
   * default ORDER_DEFAULT_FLOOR for an open bid, none for a designated order).
   */
  order?: { designated?: string; minReputation?: number };
}

/**
 * What the steward answers op `reclaimed` (src/roles/steward-handlers.ts) about the provider named: it asked that
 * provider to stop the claim (`priority`: for a higher priority, `idle`), it did not (`no`: the claim is open, or was
 * reclaimed from other providers), or the claim is closed and was not reclaimed (`closed`: released for another
 * reason, a receipt, a withdraw, its deadline). Only `priority` and `idle` confirm a reclaim.
 */
export type ReclaimAnswer = 'priority' | 'idle' | 'no' | 'closed';

/** The codes a provider ends or refuses a job with when the overlay's steward reclaimed it (docs/overlays.md "Preemption"). */
type ReclaimCode = 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED';

/** How long the buyer waits for its steward's `reclaimed` answer, ms (the wiring's bound on the request). */
export const RECLAIMED_ASK_MS = 10_000;

/** What the steward made of a provider's claim that the steward reclaimed the job (Buyer.#checkReclaim). */
type ReclaimCheck = { v: 'confirmed'; note?: string } | { v: 'denied'; note: string } | { v: 'unknown'; note: string };

/** What the steward answered a claim (pool/1 §4). */
export interface Admission {
  verdict: 'Admit' | 'Deny' | 'Expired';
  reason?: string;
  reasons?: string[];
  reserved?: { uj: number; grade: string };
  borrowed_uj?: number;
  /** A Deny's figures, as its steward sent them (src/util/deny-text.ts; a steward before them sends none). */
  basis?: DenyBasis;
  entry?: string;
  /** The steward's signed `Admitted` entry for the claim (its answer's `admission`): carried in the exec header to the provider. */
  proof?: Uint8Array;
}

export type BuyerEvent =
  | { e: 'job'; job: Opened<Job> }
  | { e: 'queued'; reason: string; reasons: string[] }
  /** The steward refused the claim STEWARD_RATE_LIMITED (its budget of this buyer's claims withdrawn unrun is spent): the run waits `waitMs`, then asks again (once per run). */
  | { e: 'admission-wait'; code: string; waitMs: number }
  | { e: 'admission'; admission: Admission }
  | { e: 'offer'; offer: Opened<Offer>; count: number }
  | { e: 'order'; job: string; designated?: string; bid: Money; minReputation?: number; recordOnly?: 'yes' }
  /** Before an order is posted: no live provider could claim it now (the probe's summary and reasons); it is posted anyway. */
  | { e: 'order-check'; candidates: number; summary: string; counts: Record<string, number>; raiseTo?: Money }
  | ({ e: 'claim' } & ClaimOutcomeSummary)
  | { e: 'collected'; offers: number; waitedMs: number; ended: WindowEnd }
  | { e: 'decision'; decision: Decision; policy: PolicyName }
  | { e: 'selection'; selection: Opened<Selection>; winner: RankedCandidate; attempt: number }
  | { e: 'accepted'; provider: string }
  | { e: 'progress'; provider: string; message: string; permille?: number }
  | { e: 'receipt'; receipt: Opened<Receipt> }
  | { e: 'verified'; ok: boolean; detail: string }
  /** `receiptStatus`: the countersigned receipt's status (an `accepted` failed receipt is said `acknowledged`: util/acceptance-text.ts). */
  | { e: 'acceptance'; acceptance: Opened<Acceptance>; receiptStatus: Receipt['status'] }
  | { e: 'failover'; from: string; reason: string }
  | { e: 'nondelivery'; provider: string; reason: NonDeliveryReason; address: string }
  /** The run was broken off because this node is stopping: the last event of the run. */
  | { e: 'interrupted'; code: typeof JOB_INTERRUPTED; message: string }
  | ({ e: 'network' } & NetworkAssessment);

export interface JobResult {
  job: Opened<Job>;
  status: 'completed' | 'failed' | 'no-eligible-provider' | 'no-offers' | 'denied' | 'queue-expired' | 'preempted' | 'unclaimed' | 'interrupted';
  admission?: Admission;
  output?: Uint8Array;
  receipt?: Opened<Receipt>;
  acceptance?: Opened<Acceptance>;
  selection?: Opened<Selection>;
  decision?: Decision;
  /** Each provider tried, and how it went; `detail`: a failed receipt's own message (its code is in `outcome`), cut to ATTEMPT_DETAIL_MAX. */
  attempts: Array<{ provider: string; outcome: string; nondelivery?: string; detail?: string }>;
  /**
   * `collectMs`: from the job's publication to the offers collected; `admissionMs` (on an overlay with a steward): the
   * wait for the steward's admission before it, a queue included; `restMs`: everything after. They add up to the run.
   */
  timings: { collectMs: number; restMs: number; admissionMs?: number };
  /** When no offer came: the node had no peers or heard no market (node/net-health.ts). */
  network?: NetworkAssessment;
  /** An open order: every claim's outcome in arrival order, the first MAX_CLAIM_SUMMARIES (src/roles/buyer-orders.ts). */
  claims?: ClaimOutcomeSummary[];
  /** An open order: claim outcomes past MAX_CLAIM_SUMMARIES, counted (each was an event), absent when none. */
  claimsOmitted?: number;
  /** An open order that was decided: the envelopes an audit needs (job, selection, the claims it lists, their adverts). */
  evidence?: Uint8Array[];
  /** Why the run ended without work (a stable code), e.g. ORDER_NOT_CLAIMED, JOB_INTERRUPTED. */
  error?: { code: string; message: string };
}

export interface ExecStream {
  frames: AsyncIterable<unknown>;
}

export interface BuyerDeps {
  signer: Ed25519Signer;
  did: string;
  clock: Clock;
  log: Logger;
  market: BuyerMarket;
  adverts: (did: string) => Opened<Advert> | undefined;
  /** An advert by address, when held (the one an offer cites: a pooled offer's non-delivery carries it). */
  advertAt?: (address: string) => Opened<Advert> | undefined;
  /** `nondelivery2`: a pooled offer's non-delivery (c0mpute.nondelivery/2); `nondelivery3`: an open order's (/3); each on its own topic kind. */
  publish: (kind: 'job' | 'selection' | 'receipt' | 'acceptance' | NonDeliveryTopicKind, env: Opened) => Promise<void>;
  /**
   * Open `/c0mpute/exec/1` to a provider by DID, send the request, iterate the answer frames (output chunks assembled
   * into one before the receipt); `heard`, when given, is told of every frame as it arrives (`ready` too), each output
   * chunk too; `sent`, once the whole request (header and input) is sent; `opened`, once the stream is open.
   */
  exec: (did: string, protocol: string, request: ExecRequest, signal: AbortSignal, heard?: (f: ExecFrame) => void, sent?: () => void, opened?: () => void) => AsyncIterable<unknown>;
  /**
   * Connect to a provider by DID, resolving once connected; rejects (NET_DIAL_FAILED) when it cannot be reached. With
   * `lookUp`, its addresses come from the peer store, else from a routing look-up; without, a provider with no
   * connection and no address in the peer store is refused at once with NO_ADDRESS. The buyer dials ahead of its
   * selections with it (DIAL_AHEAD). Absent: nothing is dialled ahead, and an unreachable winner fails its attempt
   * as before.
   */
  dial?: (did: string, lookUp: boolean) => Promise<void>;
  /**
   * Whether this node holds an open connection to a provider now (no dial): such a provider is reached, so the buyer
   * does not let its offer lapse while it waits for a dial to a provider ranked before it (DIAL_LAPSE_MARGIN_MS).
   * Absent: only providers whose dial ahead succeeded count as reached.
   */
  connected?: (did: string) => boolean;
  /**
   * Whether an address of a provider is known (a connection, or one in the peer store; no routing look-up): when a
   * decision's winner has no address known, the providers ranked next with none either are set aside with it in the
   * same turn. Absent: only those whose dial ahead was already refused NO_ADDRESS are.
   */
  addressKnown?: (did: string) => Promise<boolean>;
  /** Store a record this buyer signed or received (receipts, acceptances, jobs, selections). */
  store: (rec: Opened) => Promise<void>;
  /** Keep how an attempt ended when it got no receipt and no non-delivery was signed (RecordStore.noteAttempt); absent: not kept. */
  noteAttempt?: (selection: Opened<Selection>, note: { code?: string; message: string }) => Promise<void>;
  /**
   * Keep how a run ended when no provider was selected and nothing signed says, by the job's address: an order's stop
   * (JOB_INTERRUPTED), an auction's no offers, none eligible or break after publishing (Buyer #noteEnded); absent: not kept.
   */
  noteRun?: (job: Opened<Job>, note: { code?: string; message: string }) => Promise<void>;
  /**
   * Wait for offers: resolves at the window's end, when `enough` providers' eligible offers for the job arrived, when
   * every provider that could win has quoted (`buyer.endWhenAllQuoted`), or when `signal` aborts (the node is stopping).
   */
  waitForOffers: (job: string, windowMs: number, enough: number, onOffer: (o: Opened<Offer>, count: number) => void, signal?: AbortSignal) => Promise<OffersCollected>;
  collectWindowMs: number;
  enoughOffers: number;
  defaultPolicy: PolicyName;
  /**
   * On an overlay with a steward: ask it to admit the claim before the job is
   * announced. Resolves once decided (it may report `queued` events meanwhile);
   * asks again by itself while the steward may hold the claim without a verdict
   * heard, and withdraws the claim when it gives up after an ask that may have
   * landed (src/roles/admission-client.ts). `signal` is the run's abort (the
   * node stopping): it then rejects with the signal's reason.
   */
  admission?: (job: Opened<Job>, spec: JobSpec, onQueued: (reason: string, reasons: string[]) => void, signal: AbortSignal, onRateLimited?: (waitMs: number) => void) => Promise<Admission>;
  /** On an overlay with a steward: an admitted job that will not complete is withdrawn, releasing its claim now. */
  withdraw?: (job: Opened<Job>) => Promise<void>;
  /**
   * On an overlay with a steward: whether it reclaimed the job's claim from `provider` (`/c0mpute/steward/1` op
   * `reclaimed` naming it, bounded by a short deadline), asked when that provider refuses the exec EXEC_PREEMPTED or
   * EXEC_IDLE_RECLAIMED or ends it with a failed receipt coded so (Buyer.#checkReclaim). Throws when the steward did
   * not answer it (a steward before the op answers STEWARD_BAD_REQUEST). Absent: nothing can confirm a reclaim.
   */
  reclaimed?: (job: Opened<Job>, provider: string) => Promise<ReclaimAnswer>;
  /** The clock-skew window (network.clockSkewMs, default DEFAULT_SKEW_MS): a receipt dated later than now plus it is refused. */
  skewMs?: number;
  /** The largest input this buyer sends (default EXEC_MAX_INPUT_BYTES, the providers' documented default). */
  maxInputBytes?: number;
  /** On a managed overlay: the steward signs the selection (excluding providers already tried). */
  managedSelect?: (job: Opened<Job>, policy: PolicyName, excluded: ReadonlySet<string>, offers: readonly Opened<Offer>[]) => Promise<{ selection: Opened<Selection>; offer: Opened<Offer> }>;
  /** The overlay's name (for refusals' messages). */
  overlay?: string;
  /** This node's overlays that have a steward (a spec naming an entitlement on an overlay without one is pointed there). */
  stewardedOverlays?: readonly string[];
  /** Open orders (src/roles/buyer-orders.ts): where claims arrive; absent, a job with `order` is refused. */
  orders?: OrderPorts;
  /** Notices this process's own freezes during an attempt (src/util/stall-watch.ts); absent, none is noticed. */
  stalls?: StallWatch;
  /** A freeze longer than this during an attempt spares the provider a non-delivery (default STALL_MS). */
  stallMs?: number;
  /**
   * The least overrun of its quote a provider that promised no keepalives is allowed, the longest wait between its
   * output chunks, and how long a provider has to take the request once the stream is open (default OVERRUN_GRACE_MS).
   */
  overrunGraceMs?: number;
  /** How long the exec stream to a winner may take to open (default EXEC_OPEN_MS). */
  openLimitMs?: number;
  /** Before a reached provider's offer lapses, how early the buyer stops waiting for a dial (default DIAL_LAPSE_MARGIN_MS). */
  dialLapseMarginMs?: number;
  /** The least the buyer waits for its winner's dial before it turns to providers reached (default DIAL_MIN_WAIT_MS). */
  dialMinWaitMs?: number;
  /** The base of the wait for a provider to take the input (inputLimitMs; default EXEC_INPUT_BASE_MS, a provider's default execRequestMs). */
  inputBaseMs?: number;
  /**
   * A run with no provider left to fail over to while its deadline is more than `collectWindowMs` away asks live
   * providers that offer the workload and were not `tried` for offers now (job-push/1: a provider that learned the
   * job after its selection skips it as decided, and only a push gets its offer), resolving once they answered
   * (bounded by the push's own deadline) to how many offers came and whom it asked; the run then decides again among
   * them. `tried` also names those an earlier ask of the run asked: an ask that brought no offer (its targets silent)
   * is followed by one to others, as wide as a push goes (`widen`: silent cheap keys filled the first ask's targets).
   * At most MAX_RESCUES_PER_RUN times a run, never on a managed overlay. Absent: the run ends as before.
   */
  rescue?: (job: Opened<Job>, tried: ReadonlySet<string>, opts?: { widen?: boolean }) => Promise<{ offers: number; asked: readonly string[] }>;
}

/** What a job spec is checked against before anything is signed or sent (Buyer.check, Buyer.checkSpec). */
export interface SpecCheck {
  defaultPolicy: PolicyName;
  /** The largest input this buyer sends (default EXEC_MAX_INPUT_BYTES). */
  maxInputBytes?: number;
  /** Whether this node takes claims on open orders (not on an overlay with a steward). */
  orders: boolean;
  /** Whether the overlay has a steward (pool/1 admission): what `entitlement`, `class` and `energy` are for. */
  steward: boolean;
  /** The overlay's name, for the refusals' messages. */
  overlay?: string;
  /** This node's overlays that have a steward (where a spec naming an entitlement belongs), for the refusals' messages. */
  stewarded?: readonly string[];
}

/** The spec fields only an overlay with a steward reads (pool/1 claim: §2.3 estimate, §2.4 class). */
const STEWARD_FIELDS = ['entitlement', 'class', 'energy'] as const;

/** Refusals a spec gets before anything is published: the policy's needs, the input's size, open orders here, steward fields on an overlay without a steward (and no entitlement on one with). */
function refuseEarly(spec: JobSpec, c: SpecCheck): void {
  const policy = parsePolicy(spec.policy ?? c.defaultPolicy);
  if (policy === 'private' && !spec.requirements?.allowlist) {
    throw new C0Error('POLICY_PRIVATE_NEEDS_ALLOWLIST', 'the private policy needs a job with a provider allowlist (requirements.allowlist)');
  }
  const maxInput = c.maxInputBytes ?? EXEC_MAX_INPUT_BYTES;
  if (spec.input.length > maxInput) {
    // Refused before anything is announced or sent: no provider on the documented defaults would take it.
    throw new C0Error('INPUT_TOO_LARGE', `the input of ${spec.input.length} bytes exceeds the limit of ${maxInput} bytes (providers' provider.maxInputBytes, 16 MiB by default)`, { field: 'input' });
  }
  // An open order: claims instead of an offer window (src/roles/buyer-orders.ts).
  if (spec.order && !c.orders) throw new C0Error('ORDERS_NOT_SUPPORTED', 'this node does not take claims on open orders (on an overlay with a steward the steward selects)', { field: 'order' });
  if (spec.order) refuseOrderPolicy(spec);
  refuseStewardMismatch(spec, c);
}

/**
 * An order takes the first valid claim: a policy that ranks offers (`cheapest`, `fastest`, `balanced`) has nothing to
 * rank there, so one named for an order is refused, not dropped without a word (QA qaOrd F2: `--policy trusted` on an
 * order did nothing). `trusted` and `private` keep their meaning (docs/matching.md "Whom an order takes"). The node's
 * own default policy (`buyer.policy`) is not refused: it applies to orders only when it is one of those two.
 */
function refuseOrderPolicy(spec: JobSpec): void {
  if (spec.policy !== undefined && !ORDER_POLICIES.has(spec.policy)) {
    throw new C0Error('POLICY_NOT_FOR_ORDERS', `policy ${spec.policy} ranks offers, and an order has none: it takes the first valid claim. Leave the policy out, or use trusted (only claimants with a record above a stranger's in this node's reputation view) or private (with requirements.allowlist); order.minReputation sets the least score a claimant needs`, { field: 'policy' });
  }
  const min = spec.order?.minReputation;
  if (min !== undefined && !(Number.isFinite(min) && min >= 0 && min <= 1)) throw new C0Error('ORDER_MIN_REPUTATION_INVALID', `order.minReputation must be a number from 0 to 1, not ${String(min)}`, { field: 'order.minReputation' });
}

/** The policies that mean something for an order (the others rank offers). */
const ORDER_POLICIES: ReadonlySet<PolicyName> = new Set(['trusted', 'private']);

/**
 * The least score an open bid's claimant needs when the order says none (docs/matching.md "Whom an order takes"): a
 * provider's with no evidence, so a fresh key (0.5) is taken, on a young network every provider is, and one this node
 * holds worse evidence about than about a stranger is not. A designated order has none (its buyer named the provider).
 */
export const ORDER_DEFAULT_FLOOR = 0.5;

/** The reputation floor of an order (claims.ts ReputationFloor without the view): from the spec and the policy that applies. */
export function orderFloor(spec: JobSpec, policy: PolicyName): { min: number; recorded: boolean } {
  const named = spec.order?.minReputation;
  const min = named ?? (spec.order?.designated === undefined ? ORDER_DEFAULT_FLOOR : 0);
  return { min, recorded: policy === 'trusted' };
}

/**
 * A spec written for an overlay with a steward (it names an entitlement, a class or an estimate) on one without is
 * refused: run there, those fields would be dropped and the job, and its input, would go to that overlay's market
 * (the public one, for a node whose primary overlay is public) — never what its writer meant. On an overlay with a
 * steward, a spec without an entitlement could never be admitted.
 */
function refuseStewardMismatch(spec: JobSpec, c: SpecCheck): void {
  const where = c.overlay === undefined ? 'this overlay' : `overlay ${c.overlay}`;
  if (!c.steward) {
    const named = STEWARD_FIELDS.find((f) => spec[f] !== undefined);
    if (named === undefined) return;
    const others = (c.stewarded ?? []).filter((o) => o !== c.overlay);
    const hint = others.length
      ? `add --overlay ${others[0]} (this node's overlays with a steward: ${others.join(', ')}; \`?overlay=\` on the control API)`
      : `none of this node's overlays has a steward; leave out ${STEWARD_FIELDS.join(', ')} to run it on ${where}'s market`;
    throw new C0Error('JOB_ENTITLEMENT_WITHOUT_STEWARD', `the job names \`${named}\`, which only an overlay with a steward reads, but ${where} has no steward: it would run on ${where}'s market without admission, its input sent to any of its providers. Refused before anything was signed or sent: ${hint}`, { field: named });
  }
  if (!spec.entitlement) throw new C0Error('JOB_NEEDS_ENTITLEMENT', `${where} has a steward: name the entitlement the job runs under (entitlement:)`, { field: 'entitlement' });
}

/** The job record a spec makes, announced at `now`, signed by `signer`. */
function jobRecord(spec: JobSpec, now: number, signer: Ed25519Signer): Opened<Job> {
  const job: Job = {
    workload: spec.workload,
    requirements: spec.requirements ?? {},
    maxPrice: spec.maxPrice,
    announcedAt: now,
    deadline: now + spec.deadlineMs,
    timeoutMs: spec.timeoutMs ?? spec.deadlineMs,
    input: { hash: hashHex(spec.input), size: spec.input.length },
    inputSealed: spec.sealInput ? 'yes' : 'no',
    ...(spec.params === undefined ? {} : { params: spec.params }),
    ...(spec.order ? { order: spec.order.designated === undefined ? {} : { designated: spec.order.designated } } : {}),
    nonce: new Uint8Array(randomBytes(8)),
  };
  return seal(T.job, job, signer);
}

export class Buyer {
  /**
   * What `check` refuses, without a node: the in-process `c0mpute run` checks a spec before it starts a node and
   * waits for a market (the daemon's control API answers these at once). The job record is built with a throwaway
   * key and dropped.
   */
  static checkSpec(spec: JobSpec, c: SpecCheck, now: number): void {
    refuseEarly(spec, c);
    jobRecord(spec, now, Ed25519Signer.generate());
  }

  /** Exec streams in flight, by provider: a provider refusing a second large input on our connection is our doing. */
  readonly #inFlight = new Map<string, number>();
  /**
   * Attempts of ours that ended without a receipt, for a provider's lapse refusals (EXEC_BUYER_PAUSED: when, per
   * provider; EXEC_JOB_LAPSED: provider|job). Bounded: the oldest goes past UNFINISHED_KEPT.
   */
  readonly #unfinished = new Map<string, number>();
  /** Aborted when the node stops (`interrupt`): every run in flight ends as interrupted, blaming no provider. */
  readonly #stop = new AbortController();
  /** Runs in flight, for `interrupt` to wait on. */
  readonly #runs = new Set<Promise<unknown>>();

  constructor(private d: BuyerDeps) {}

  buildJob(spec: JobSpec, now: number): Opened<Job> {
    return jobRecord(spec, now, this.d.signer);
  }

  /**
   * The node is stopping (OverlayNode.stop, before its network stops): every run in flight is broken off with a local
   * reason (an exec stream aborted by it earns its provider no non-delivery) and ends as `interrupted`
   * (JOB_INTERRUPTED); no run starts after. Resolves when they all ended, or after `waitMs` at the latest.
   */
  async interrupt(waitMs = INTERRUPT_WAIT_MS): Promise<void> {
    if (!this.#stop.signal.aborted) this.#stop.abort(new C0Error(JOB_INTERRUPTED, 'this node is stopping'));
    if (this.#runs.size === 0) return;
    const late = (await raceTimeout(Promise.allSettled([...this.#runs]), waitMs, 'late')) === 'late';
    if (late) this.d.log.warn({ runs: this.#runs.size, waitedMs: waitMs }, 'runs still in flight at the stop; they end as interrupted');
  }

  get #stopping(): boolean {
    return this.#stop.signal.aborted;
  }

  /** Aborted when the node stops (`interrupt`): buyer work outside a run (a gang's admission) ends with it too. */
  get stopping(): AbortSignal {
    return this.#stop.signal;
  }

  /**
   * Run a job. `opts.gone` aborts when the run's client went away (the control API's `/v1/run` caller closed its
   * connection): before the run commits (RunBreak) the job is withdrawn as at the node's stop, after it the run goes
   * on to its end.
   */
  async run(spec: JobSpec, onEvent: (e: BuyerEvent) => void = () => {}, opts: { gone?: AbortSignal } = {}): Promise<JobResult> {
    if (this.#stopping) throw new C0Error(JOB_INTERRUPTED, 'this node is stopping: the job was not started');
    let result: JobResult;
    const made: RunMade = {};
    const brk = new RunBreak(this.#stop.signal, opts.gone);
    const running = this.#run(spec, onEvent, made, brk);
    this.#runs.add(running);
    try {
      result = await running;
    } catch (e) {
      // broken off by the node's stop (a store closed under a run the stop did not wait for, a request on a network
      // that stopped) or by its client leaving before it committed (a steward's admission asked then): the run was
      // interrupted, not failed
      if (brk.aborted && made.opened) {
        result = this.#interrupted({ job: made.opened, status: 'interrupted', attempts: [], timings: { collectMs: 0, restMs: 0 } }, onEvent, brk);
      } else {
        // refused before anything was published (a bad spec) or broken off after: either way the operator sees it end
        this.d.log.info({ ...(made.opened ? { job: made.opened.address } : {}), workload: spec.workload, status: 'error', code: (e as C0Error).code ?? 'ERROR', err: (e as Error).message }, 'job ended');
        if (made.stored && made.opened) await this.#noteRun(made.opened, { code: (e as C0Error).code ?? 'INTERNAL', message: `the run failed: ${(e as Error).message}` });
        throw e;
      }
    } finally {
      this.#runs.delete(running);
      brk.clear();
    }
    // an auction kept with no provider selected: how its run ended, in place of the note that it was running
    if (made.stored && !result.selection) await this.#noteRun(result.job, this.#endedNote(result));
    // One line per job for the operator: how it ended, who did it, how long each part took.
    const won = result.receipt?.record.provider ?? result.attempts.at(-1)?.provider;
    this.d.log.info(
      {
        job: result.job.address,
        workload: spec.workload,
        status: result.status,
        ...(won ? { provider: won } : {}),
        attempts: result.attempts.length,
        ...(result.attempts.length > 1 || (result.status !== 'completed' && result.attempts.length) ? { outcomes: result.attempts.map((a) => a.outcome) } : {}),
        collectMs: result.timings.collectMs,
        restMs: result.timings.restMs,
        ...(result.timings.admissionMs === undefined ? {} : { admissionMs: result.timings.admissionMs }),
        ...(result.error ? { code: result.error.code } : {}),
      },
      'job ended',
    );
    return result;
  }

  /**
   * What `run` refuses before anything is signed or sent, checked alone (the control API answers these as an HTTP
   * error before it starts streaming a run): the policy's needs, the input's size, open orders on this node, and the
   * job record the spec makes (built and checked, then dropped).
   */
  check(spec: JobSpec): void {
    this.#refuseEarly(spec);
    this.buildJob(spec, this.d.clock());
  }

  #refuseEarly(spec: JobSpec): void {
    refuseEarly(spec, {
      defaultPolicy: this.d.defaultPolicy,
      orders: !!this.d.orders,
      steward: !!this.d.admission,
      ...(this.d.overlay === undefined ? {} : { overlay: this.d.overlay }),
      ...(this.d.stewardedOverlays ? { stewarded: this.d.stewardedOverlays } : {}),
      ...(this.d.maxInputBytes === undefined ? {} : { maxInputBytes: this.d.maxInputBytes }),
    });
  }

  /**
   * The run ends here: this node is stopping, or the run's client went away before it committed (JOB_INTERRUPTED,
   * said as the run's last event; the latter logged once).
   */
  #interrupted(result: JobResult, onEvent: (e: BuyerEvent) => void, brk: RunBreak, provider?: string): JobResult {
    const why = brk.byClient && !this.#stopping ? 'its client went away before a provider was selected: the job was withdrawn' : 'this node is stopping';
    const message = `the run was broken off because ${why}${provider ? ` (the job was running at ${provider}, which is not blamed for it: no non-delivery signed)` : ''}`;
    if (brk.byClient && !this.#stopping) this.d.log.info({ job: result.job.address }, 'run client went away: job withdrawn');
    result.status = 'interrupted';
    result.error = { code: JOB_INTERRUPTED, message };
    onEvent({ e: 'interrupted', code: JOB_INTERRUPTED, message });
    return result;
  }

  /**
   * How an auction's run that selected no provider ended, as kept with the job (BuyerDeps.noteRun, replacing the
   * JOB_RUNNING note its start kept): no offers, none eligible (with the explanation's summary), broken off
   * (JOB_INTERRUPTED), or none of the providers tried could be selected (JOB_NO_PROVIDER_SELECTED: offers lapsed, not
   * reached, the deadline, the steward did not select; each named). `c0mpute jobs`, `GET /v1/jobs` and the console
   * say it in the run's words after the run and after a restart (job-history.ts outcomeNow); before, they said "no
   * provider was selected" however it ended.
   */
  #endedNote(result: JobResult): { code: string; message: string } {
    if (result.status === 'no-offers' || result.status === 'no-eligible-provider') {
      const ended = NO_PROVIDER_ENDED[result.status];
      const r = result.decision?.result;
      const summary = r && !r.ok ? r.explanation?.summary : undefined;
      return { code: ended.code, message: summary ? `${ended.said}: ${summary}` : ended.said };
    }
    if (result.error) return result.error;
    const tried = result.attempts.map((a) => `${shortDid(a.provider)} ${a.outcome}`).join('; ');
    return { code: JOB_NO_PROVIDER_SELECTED, message: `no provider could be selected: ${tried || 'no attempt could be made before the deadline'}` };
  }

  /** Keep a note of how this auction's run stands or ended (BuyerDeps.noteRun); one not kept is logged, the run's result stands. */
  async #noteRun(job: Opened<Job>, note: { code: string; message: string }): Promise<void> {
    await this.d.noteRun?.(job, note).catch((e: unknown) => this.d.log.warn({ job: job.address, err: (e as Error).message }, 'could not keep how the run stands'));
  }

  /** `made.job` is set once the job is signed, so a run that throws after can still be logged by its address. */
  async #run(spec: JobSpec, onEvent: (e: BuyerEvent) => void, made: RunMade, brk: RunBreak): Promise<JobResult> {
    const { clock, log } = this.d;
    const policy = spec.policy ?? this.d.defaultPolicy;
    this.#refuseEarly(spec);
    if (spec.order && this.d.orders) {
      const order = this.buildJob(spec, clock());
      made.opened = order;
      // the winner was told before the exchange starts: from there the run goes on without its client (brk.commit)
      const r = await runOrder(this.d, this.d.orders, order, spec, onEvent, (job, cand, selection) => (brk.commit(), this.attempt(job, cand, selection, spec, onEvent)), brk.signal, () => brk.byClient && !this.#stopping);
      return r.status === 'interrupted' ? this.#interrupted(r, onEvent, brk, r.attempts.at(-1)?.provider) : r;
    }
    const t0 = clock();
    const job = this.buildJob(spec, t0);
    made.opened = job;
    let admission: Admission | undefined;
    if (this.d.admission) {
      // pool/1: the steward decides before the job is announced. The node's stop, or the run's client leaving, breaks
      // the asking off (the run ends interrupted); a claim the steward may have admitted meanwhile is withdrawn by the
      // admission client as it gives up.
      admission = await this.d.admission(job, spec, (reason, reasons) => onEvent({ e: 'queued', reason, reasons }), brk.signal, (waitMs) => onEvent({ e: 'admission-wait', code: 'STEWARD_RATE_LIMITED', waitMs }));
      onEvent({ e: 'admission', admission });
      if (admission.verdict !== 'Admit') {
        return { job, status: admission.verdict === 'Deny' ? 'denied' : 'queue-expired', admission, attempts: [], timings: { collectMs: 0, restMs: clock() - t0 } };
      }
    }
    // (a client gone before the job was announced: nothing is published)
    if (brk.aborted) {
      await this.#withdraw(job, admission);
      return this.#interrupted({ job, status: 'interrupted', ...(admission ? { admission } : {}), attempts: [], timings: { collectMs: 0, restMs: clock() - t0 } }, onEvent, brk);
    }
    const tPublished = clock();
    try {
      await this.d.store(job);
      // kept, so its run says how it ends (run(): #endedNote); until then it is running, and one found so at a
      // restart died with the process before (job-history.ts outcomeNow: JOB_INTERRUPTED)
      made.stored = true;
      await this.#noteRun(job, { code: JOB_RUNNING, message: 'this node is running it' });
      await this.d.publish('job', job);
    } catch (e) {
      // the job was admitted but is not kept (this node's disk full: STORE_WRITE_FAILED) or not announced: nothing
      // will run it, so its claim must not hold the entitlement's reservation and devices until the deadline
      await this.#withdraw(job, admission);
      throw e;
    }
    onEvent({ e: 'job', job });
    log.info({ job: job.address, workload: spec.workload }, 'job published');

    // the collection counts from here: a claim queued at the steward for minutes (DEVICES_HELD) printed "collected 1
    // offer(s) in 6609 ms" against a 3 s window, and an operator blamed the providers (QA pass, session 48); the
    // admission's wait is its own figure
    const admissionMs = admission ? tPublished - t0 : undefined;
    const collected = await this.d.waitForOffers(job.address, this.d.collectWindowMs, offersToWaitFor(this.d.enoughOffers, job.record), (offer, count) => onEvent({ e: 'offer', offer, count }), brk.signal);
    const { offers } = collected;
    const ended = collected.ended === 'enough' ? enoughEnd(this.d.enoughOffers, job.record) : collected.ended;
    const collectMs = clock() - tPublished;
    const waited = { collectMs, restMs: 0, ...(admissionMs === undefined ? {} : { admissionMs }) };
    if (brk.aborted) {
      await this.#withdraw(job, admission);
      return this.#interrupted({ job, status: 'interrupted', attempts: [], timings: waited, ...(admission ? { admission } : {}) }, onEvent, brk);
    }
    onEvent({ e: 'collected', offers, waitedMs: collectMs, ended });
    const decision = await this.d.market.decide(job, policy, clock());
    onEvent({ e: 'decision', decision, policy });
    const result: JobResult = { job, status: 'failed', decision, attempts: [], timings: waited, ...(admission ? { admission } : {}) };
    if (decision.ranked.length === 0) {
      result.status = offers === 0 ? 'no-offers' : 'no-eligible-provider';
      await this.#withdraw(job, admission);
      result.timings.restMs = clock() - tPublished - collectMs;
      return result;
    }

    // Each attempt picks a winner among the providers not tried yet: the first
    // attempt the decision's winner, each later one the winner of a decision
    // taken afresh without the providers tried (not the next in the first
    // ranking, which a recomputation need not give), or on a managed overlay the
    // steward's choice. The first decision is what the result reports.
    const tried = new Set<string>();
    // The entries the offers tried stood for (a pool, for a member's offer: RankedCandidate.entry), left out of the
    // decisions with them: a member that left its pool after its attempt (its latest advert a plain one) no longer
    // stands for the pool, and the pool's slot can show another member's offer by then (docs/pools.md "Failover and
    // epoch changes").
    const stoodFor = new Set<string>();
    const tryOut = (c: RankedCandidate): void => {
      tried.add(c.provider);
      if (c.entry !== undefined && c.entry !== c.provider) stoodFor.add(c.entry);
    };
    // Providers dialled ahead of their selection: undefined once connected, else why not (DIAL_AHEAD).
    const dials = new Map<string, Promise<string | undefined>>();
    // Those dials once settled (the same answers), read without waiting: a provider reached is one connected now or
    // whose dial ahead succeeded.
    const settled = new Map<string, string | undefined>();
    // When each of those dials began (the least wait for a winner's dial, DIAL_MIN_WAIT_MS, counts from there).
    const dialledAt = new Map<string, number>();
    const reached = (did: string): boolean => (settled.has(did) && settled.get(did) === undefined) || (this.d.connected?.(did) ?? false);
    let unreached = 0;
    // Providers not reached when a reached provider's offer was about to lapse (DIAL_LAPSE_MARGIN_MS): left out of the
    // decisions while a provider reached is left, back in them once their dial succeeds or no one else is left.
    const unsure = new Set<string>();
    // Providers with no address known, left out of the decision until no provider with one is left; then they are
    // dialled with a routing look-up (`lookUp`).
    const deferred = new Set<string>();
    let lookUp = false;
    let lookedUp = 0;
    // Providers with no address known past the DIAL_AHEAD_MAX look-ups: left out of the decisions, named at the end.
    const capped = new Set<string>();
    // Every provider found to have no address known (set aside, or asked during the look-ups): read once each.
    const noAddress = new Set<string>();
    // The latest decision's ranking: whom a run that ends without delivery names as not tried (#untried).
    let latest: readonly RankedCandidate[] = decision.ranked;
    let selections = 0;
    // Times this run asked for more offers with no provider left to fail over to (MAX_RESCUES_PER_RUN).
    let rescues = 0;
    // Those the run's asks asked: the next ask goes to others.
    const asked = new Set<string>();
    // Every provider left out of the decisions for now (no address known, past the look-ups, or not reached yet).
    const leftOut = () => new Set([...deferred, ...capped, ...unsure]);
    // Each turn tries one provider (selects it, fails to dial it, or finds its offer lapsed), sets providers with no
    // address known aside, looks those up once, or ends the run. Later decisions read the live book, so offers that
    // came late join them: turns are not counted against the first ranking (a run of late keys set aside would use
    // them up before a provider with an address was tried), and the loop ends when no provider is left, at the
    // deadline, or on delivery. It is finite: a provider is tried at most once and set aside at most once (one turn
    // sets aside every provider of the decision with no address known: BuyerDeps.addressKnown), the look-up turn
    // comes once, and at most DIAL_AHEAD_MAX providers are looked up after it; providers not reached are set aside
    // (`unsure`) only after a wait for a dial of at least DIAL_MIN_WAIT_MS, and put back all at once only when no
    // provider reached is left to try (a turn that waits for a dial follows). With no provider left, more offers are
    // asked for at most MAX_RESCUES_PER_RUN times (BuyerDeps.rescue). On a managed overlay the steward picks (it is asked to exclude those tried): at most as many turns
    // as its first ranking allows, as before.
    const managedTurns = 2 * decision.ranked.length + 1;
    for (;;) {
      if (brk.aborted) {
        this.#interrupted(result, onEvent, brk);
        break;
      }
      const now = clock();
      if (now >= job.record.deadline) {
        this.#untried(result, latest, tried, leftOut(), 'the job’s deadline passed');
        break;
      }
      if (!this.d.managedSelect && (selections >= MAX_SELECTIONS_PER_RUN || tried.size >= MAX_TRIES_PER_RUN)) {
        this.#untried(result, latest, tried, leftOut(), selections >= MAX_SELECTIONS_PER_RUN ? `${MAX_SELECTIONS_PER_RUN} providers were selected and none delivered` : `${MAX_TRIES_PER_RUN} providers were tried`);
        break;
      }
      let pick: RankedCandidate | undefined;
      let selection: Opened<Selection>;
      if (this.d.managedSelect) {
        if (selections >= managedTurns) break;
        // A managed overlay: the steward decides (its own book, the same engine) and signs. Asking it is the point of
        // no return: from here the run goes on without its client.
        if (!brk.commit()) {
          this.#interrupted(result, onEvent, brk);
          break;
        }
        let managed;
        try {
          // with the offers collected here, which the steward's book may not hold yet
          managed = await this.d.managedSelect(job, policy, tried, decision.ranked.map((c) => c.offer));
        } catch (e) {
          // the node stopping broke the request off: the run is interrupted, the steward did nothing wrong
          if (brk.aborted) this.#interrupted(result, onEvent, brk);
          else result.attempts.push({ provider: '(steward)', outcome: `the steward did not select: ${(e as C0Error).code ?? (e as Error).message}` });
          break;
        }
        const offer = managed.offer;
        pick = decision.ranked.find((c) => c.offer.address === offer.address) ?? { provider: offer.signer, offer, total: Number.NaN, scores: {} };
        selection = managed.selection;
      } else {
        // a provider set aside as not reached whose dial succeeded since is back in the decision
        for (const d of unsure) if (reached(d)) unsure.delete(d);
        const outNow = new Set([...stoodFor, ...leftOut()]);
        const excluded = outNow.size === 0 ? tried : new Set([...tried, ...outNow]);
        const current = excluded.size === 0 ? decision : await this.d.market.decide(job, policy, now, excluded);
        latest = current.ranked;
        pick = current.ranked[0];
        if (!pick && unsure.size > 0) {
          // every provider reached was tried: those set aside as not reached yet are waited for again, as before
          unsure.clear();
          continue;
        }
        if (!pick && deferred.size > 0) {
          // every provider with an address known was tried: now those without one, looked up
          lookUp = true;
          for (const d of deferred) {
            dials.delete(d);
            noAddress.add(d);
          }
          deferred.clear();
          continue;
        }
        if (!pick && this.d.rescue && rescues < MAX_RESCUES_PER_RUN && job.record.deadline - now > this.d.collectWindowMs) {
          // No one left to move to while the deadline leaves time: providers that learned the job after its selection
          // (a restart, a late join) skipped it as decided, and are asked for an offer now; with any, decide again.
          rescues++;
          const got = await unlessAborted(
            this.d.rescue(job, new Set([...tried, ...asked]), { widen: asked.size > 0 }).catch((e: unknown) => {
              log.debug({ job: job.address, err: (e as Error).message }, 'asking for more offers failed');
              return { offers: 0, asked: [] };
            }),
            brk.signal,
          );
          for (const d of got?.asked ?? []) asked.add(d);
          log.info({ job: job.address, tried: tried.size, asked: got?.asked.length ?? 0, offers: got?.offers ?? 0 }, 'no provider left to fail over to: providers not tried were asked for offers');
          // (the node stopping: the next turn ends the run as interrupted); an ask whose targets all stayed silent (cheap
          // keys that never quote can fill its targets) is followed by one to others, within MAX_RESCUES_PER_RUN
          if (got?.offers || got?.asked.length || brk.aborted) continue;
        }
        if (!pick) {
          // No one left to move to: every provider not tried yet dropped out of the decision since the first one (its
          // offer expired meanwhile, or it is no longer eligible). Each is named, so the run says why it ends here
          // after a `failover` event announced the runner-up.
          for (const c of decision.ranked) {
            if (tried.has(c.provider) || capped.has(c.provider)) continue;
            const lapsed = now > c.offer.record.startBy || now >= c.offer.record.expiresAt;
            result.attempts.push({ provider: c.provider, outcome: lapsed ? 'offer lapsed' : 'no longer eligible' });
            tried.add(c.provider);
          }
          if (capped.size) this.#untried(result, [], tried, capped, `${DIAL_AHEAD_MAX} providers with no address known were looked up`);
          break;
        }
        if (now > pick.offer.record.startBy) {
          result.attempts.push({ provider: pick.provider, outcome: 'offer lapsed' });
          tryOut(pick);
          continue;
        }
        if (lookUp && (noAddress.has(pick.provider) || !(await this.#addressKnown(pick.provider)))) {
          // every provider with an address known was tried: as many looked up as dials ahead go, so a flood of keys
          // nobody can reach costs at most that many look-ups; the rest are set aside at once (named at the end), and
          // a provider with an address whose offer came meanwhile is still tried (only look-ups count here)
          noAddress.add(pick.provider);
          if (lookedUp >= DIAL_AHEAD_MAX) {
            capped.add(pick.provider);
            for (const c of current.ranked) if (noAddress.has(c.provider) && !tried.has(c.provider)) capped.add(c.provider);
            continue;
          }
          lookedUp++;
        }
        if (this.d.dial) {
          // The winner and the next of the ranking are dialled at once; a winner that cannot be reached is left out
          // of the decision like one tried (no selection names it, so none is signed and no non-delivery either),
          // and the decision is taken again without it: its recomputation from the selection's offers still gives
          // its winner. The dials ahead are ready (or failed) by the time their providers come up. A winner with no
          // address known is not looked up yet: it waits until no provider with an address is left.
          this.#dialAhead(dials, settled, dialledAt, current.ranked, Math.min(DIAL_AHEAD_MAX, DIAL_AHEAD + unreached), lookUp);
          // The wait for the winner's dial ends, at the latest, when a provider ranked after it that is reached already
          // would see its offer lapse (less the margin a selection needs): a run of keys whose dials hang (a black hole
          // that accepts and never speaks) does not let every reachable offer lapse unconsidered.
          const hurry = this.#hurryAt(current.ranked, reached, now);
          // (the node's stop ends the wait, and with it the timer)
          const dialling = unlessAborted(dials.get(pick.provider)!, brk.signal);
          const leastUntil = (dialledAt.get(pick.provider) ?? now) + (this.d.dialMinWaitMs ?? DIAL_MIN_WAIT_MS);
          const until = hurry === undefined ? undefined : Math.max(hurry, leastUntil);
          let failed = await (until === undefined ? dialling : raceTimeout(dialling, until - clock(), NOT_YET));
          if (failed === NOT_YET && !brk.aborted) {
            // The providers of this ranking not reached yet whose dial has had its least wait are set aside, and the
            // decision is taken again: its winner is the best of the rest by the same policy, and the selection names
            // only the offers it considered, so it still recomputes to its winner. Those ranked above the first
            // reached provider that were never dialled (past the dials ahead) are dialled now, DIAL_AHEAD_MAX at
            // most, and get their least wait in the turns that follow: an honest provider ranked behind a run of keys
            // whose dials hang is dialled before a reached provider ranked after it wins (a hostile connected provider
            // with an offer about to lapse does not take the job from it). Dials go on: one that succeeds puts its
            // provider back, and when no provider reached is left they are all waited for again.
            const minWait = this.d.dialMinWaitMs ?? DIAL_MIN_WAIT_MS;
            // had its least wait: dialled at least minWait before the end of this wait (`until`, on the same clock)
            const aside = current.ranked.filter((c) => !reached(c.provider) && dialledAt.has(c.provider) && dialledAt.get(c.provider)! + minWait <= until!).map((c) => c.provider);
            const firstReached = current.ranked.findIndex((c, i) => i > 0 && reached(c.provider));
            const above = current.ranked.slice(0, firstReached < 0 ? current.ranked.length : firstReached);
            const fresh = above.filter((c) => !dialledAt.has(c.provider)).slice(0, DIAL_AHEAD_MAX);
            if (aside.length || fresh.length) {
              for (const d of aside) unsure.add(d);
              this.#dialAhead(dials, settled, dialledAt, fresh, fresh.length, lookUp);
              log.info({ provider: pick.provider, job: job.address, setAside: aside.length, dialledNow: fresh.length }, 'the winner’s dial outlasted a reached provider’s offer: providers not reached after their least wait are set aside, the decision is taken again');
              continue;
            }
            // nothing to set aside or dial (the winner counts as connected while its own dial is pending): wait for
            // the dial itself, as without a reached runner-up, rather than take the same decision again at once
            failed = await dialling;
          }
          // (a wait cut short is left only when the node is stopping)
          if (brk.aborted || failed === NOT_YET) {
            this.#interrupted(result, onEvent, brk);
            break;
          }
          if (failed === NO_ADDRESS && !lookUp) {
            // set aside with every other provider of this ranking that has no address known either, in one turn: a
            // flood of late keys costs a decision per batch, not one each
            deferred.add(pick.provider);
            for (const d of await this.#withoutAddress(current.ranked, dials, tried)) deferred.add(d);
            continue;
          }
          if (failed !== undefined) {
            log.info({ provider: pick.provider, job: job.address, err: failed }, 'the winner could not be dialled: left out of the decision, which is taken again');
            result.attempts.push({ provider: pick.provider, outcome: `not reached, not selected: ${failed}` });
            tryOut(pick);
            unreached++;
            continue;
          }
          // the dial took its time: an offer that lapsed meanwhile is not selected
          if (clock() > pick.offer.record.startBy) {
            result.attempts.push({ provider: pick.provider, outcome: 'offer lapsed' });
            tryOut(pick);
            continue;
          }
        }
        // the point of no return: a selection signed tells its winner it has the job; a run whose client went away
        // before it ends here instead (brk.commit, synchronous with the signing)
        if (!brk.commit()) {
          this.#interrupted(result, onEvent, brk);
          break;
        }
        selection = this.d.market.signSelection(job, current, pick, now);
      }
      const attemptNo = ++selections;
      tryOut(pick);
      await this.d.publish('selection', selection).catch(() => {});
      await this.d.store(selection);
      onEvent({ e: 'selection', selection, winner: pick, attempt: attemptNo });
      result.selection = selection;
      const attempt = await this.attempt(job, pick, selection, spec, onEvent, admission?.proof);
      if (attempt.interrupted === 'stopping') {
        await this.#noteAttempt(selection, attempt);
        result.attempts.push({ provider: pick.provider, outcome: attempt.outcome });
        this.#interrupted(result, onEvent, brk, pick.provider);
        break;
      }
      // A provider's word that the steward reclaimed the job (a refusal or a failed receipt so coded) is checked with
      // the steward: only a confirmed reclaim ends the job (no non-delivery, no failover).
      const claimed = this.d.admission ? (attempt.reclaimed ?? reclaimCodeOf(attempt.receipt)) : undefined;
      const check = claimed ? await this.#checkReclaim(job, pick.provider, claimed) : undefined;
      if (check?.note) attempt.outcome = `${attempt.outcome} (${check.note})`;
      // a refusal the steward did not ask for is a refusal like any other
      if (check?.v === 'denied' && attempt.reclaimed) attempt.nondelivery = 'refused';
      const nd = attempt.nondelivery ? await recordNonDelivery(this.d, job, selection, { provider: pick.provider, offer: pick.offer }, attempt.nondelivery, attempt.outcome, onEvent) : undefined;
      // no receipt and no non-delivery: nothing signed says how it ended, so the run's words are kept for the history
      if (!attempt.receipt && !nd) await this.#noteAttempt(selection, attempt);
      const failure = attempt.receipt?.record.status === 'failed' ? attempt.receipt.record.failure?.message : undefined;
      result.attempts.push({ provider: pick.provider, outcome: attempt.outcome, ...(nd ? { nondelivery: nd } : {}), ...(failure ? { detail: clip(failure, ATTEMPT_DETAIL_MAX) } : {}) });
      if (attempt.receipt) {
        result.receipt = attempt.receipt;
        result.acceptance = attempt.acceptance;
      }
      if (attempt.output && attempt.receipt?.record.status === 'completed' && attempt.acceptance?.record.verdict === 'accepted') {
        result.status = 'completed';
        result.output = attempt.output;
        break;
      }
      if (check?.v === 'confirmed') {
        // The steward reclaimed the capacity (the work stopped, or was refused before it ran): the claim is over,
        // there is nothing to fail over to.
        result.status = 'preempted';
        break;
      }
      if (decision.ranked.some((c) => !tried.has(c.provider)) || latest.some((c) => !tried.has(c.provider))) onEvent({ e: 'failover', from: pick.provider, reason: attempt.outcome });
    }
    if (result.status === 'failed' || result.status === 'interrupted') await this.#withdraw(job, admission);
    result.timings.restMs = clock() - tPublished - collectMs;
    return result;
  }

  /**
   * Start dials to the first `n` providers of `ranked` not dialled yet (DIAL_AHEAD), with routing look-ups or not
   * (BuyerDeps.dial); each settles to undefined once connected, else to why not (an error code).
   */
  #dialAhead(dials: Map<string, Promise<string | undefined>>, settled: Map<string, string | undefined>, dialledAt: Map<string, number>, ranked: readonly RankedCandidate[], n: number, lookUp: boolean): void {
    const dial = this.d.dial;
    if (!dial) return;
    for (const c of ranked.slice(0, n)) {
      if (dials.has(c.provider)) continue;
      settled.delete(c.provider);
      dialledAt.set(c.provider, this.d.clock());
      const p: Promise<string | undefined> = dial(c.provider, lookUp)
        .then(
          () => undefined,
          (e: unknown) => (e as C0Error).code ?? (e as Error).message ?? String(e),
        )
        .then((why) => {
          // a later dial of the same provider (its look-up) replaced this one: this answer is not its
          if (dials.get(c.provider) === p) settled.set(c.provider, why);
          return why;
        });
      dials.set(c.provider, p);
    }
  }

  /**
   * When the buyer stops waiting for the dial to `ranked`'s winner (DIAL_LAPSE_MARGIN_MS): the margin before the first
   * start-by time among the providers ranked after it that are reached already (connected, or dialled ahead) and whose
   * offers have not lapsed (a time already past when the first lapses within the margin: the wait then ends once the
   * winner's dial had its least wait, DIAL_MIN_WAIT_MS); undefined when there is none (it waits for the dial, as before).
   */
  #hurryAt(ranked: readonly RankedCandidate[], reached: (did: string) => boolean, now: number): number | undefined {
    const margin = this.d.dialLapseMarginMs ?? DIAL_LAPSE_MARGIN_MS;
    let at: number | undefined;
    for (const c of ranked.slice(1)) {
      const t = c.offer.record.startBy - margin;
      if (c.offer.record.startBy >= now && (at === undefined || t < at) && reached(c.provider)) at = t;
    }
    return at;
  }

  /**
   * The providers at the top of `ranked` (the decision's winner already set aside) with no address known, to set
   * aside with it: walked in order, DIAL_AHEAD_MAX at a time, up to the first with an address (those after it cannot
   * win before it is tried). Each is asked BuyerDeps.addressKnown (a peer-store read); without it, those whose dial
   * ahead has already refused them NO_ADDRESS. A provider probed here is set aside or ends the walk, so a flood of
   * keys costs a read each, not a decision each.
   */
  async #withoutAddress(ranked: readonly RankedCandidate[], dials: Map<string, Promise<string | undefined>>, tried: ReadonlySet<string>): Promise<string[]> {
    const out: string[] = [];
    const known = this.d.addressKnown;
    const pending = Symbol('pending');
    const rest = ranked.slice(1).filter((c) => !tried.has(c.provider));
    for (let i = 0; i < rest.length; i += DIAL_AHEAD_MAX) {
      const batch = rest.slice(i, i + DIAL_AHEAD_MAX);
      const none = await Promise.all(
        batch.map(async (c) => {
          if (known) return !(await known(c.provider).catch(() => true));
          const dialled = dials.get(c.provider);
          // settled already (a refusal for no address comes at once), or not known to have none
          return dialled !== undefined && (await Promise.race([dialled, Promise.resolve(pending)])) === NO_ADDRESS;
        }),
      );
      for (let j = 0; j < batch.length; j++) {
        if (!none[j]) return out;
        out.push(batch[j]!.provider);
      }
    }
    return out;
  }

  /** Whether a provider has an address known without a look-up (BuyerDeps.addressKnown; without it: no, so it counts as a look-up). */
  async #addressKnown(did: string): Promise<boolean> {
    try {
      return (await this.d.addressKnown?.(did)) ?? false;
    } catch {
      return false;
    }
  }

  /**
   * A run that ends without delivery while providers were not tried names them (the latest decision's first, then
   * those set aside for no address known), at most UNTRIED_NAMED, the rest counted in one entry: a run cut short does
   * not end silently on live offers it never tried.
   */
  #untried(result: JobResult, latest: readonly RankedCandidate[], tried: ReadonlySet<string>, deferred: ReadonlySet<string>, why: string): void {
    const left = [...latest.map((c) => c.provider).filter((d) => !tried.has(d) && !deferred.has(d)).map((d) => ({ d, outcome: `not tried: ${why}` })), ...[...deferred].filter((d) => !tried.has(d)).map((d) => ({ d, outcome: `not tried (no address known): ${why}` }))];
    for (const u of left.slice(0, UNTRIED_NAMED)) result.attempts.push({ provider: u.d, outcome: u.outcome });
    if (left.length > UNTRIED_NAMED) result.attempts.push({ provider: `(${left.length - UNTRIED_NAMED} more)`, outcome: `not tried: ${why}` });
  }

  /**
   * Keep how an attempt ended that got no receipt and no non-delivery (`c0mpute jobs`, GET /v1/jobs and the console's
   * job page show it: docs/node.md "Job history"); before, `jobs` said "no receipt, no non-delivery" with no reason
   * while the run had said "provider busy with another of our jobs: refused: EXEC_BUSY" (QA qaPnet F4). A note that
   * cannot be written (the node stopping) is logged, never the run's failure.
   */
  async #noteAttempt(selection: Opened<Selection>, attempt: { outcome: string; code?: string }): Promise<void> {
    await this.d.noteAttempt?.(selection, { ...(attempt.code !== undefined ? { code: attempt.code } : {}), message: attempt.outcome }).catch((e: unknown) => this.d.log.debug({ selection: selection.address, err: (e as Error).message }, 'the note of an attempt was not kept'));
  }

  /** An attempt's outcome when it ended by this node's own doing (localInterruption): no non-delivery. */
  #localOutcome(why: 'stopping' | 'stalled', frozenMs: number): { outcome: string; code: string; interrupted: 'stopping' | 'stalled' } {
    if (why === 'stopping') return { outcome: `interrupted: this node is stopping (${JOB_INTERRUPTED})`, code: JOB_INTERRUPTED, interrupted: why };
    return { outcome: `interrupted: this node did not run for ${Math.round(frozenMs / 1000)} s during the attempt (${BUYER_STALLED}); no non-delivery signed`, code: BUYER_STALLED, interrupted: why };
  }

  /**
   * A provider refused the exec, or ended the work, with a reclaim's code: ask the steward whether it reclaimed the
   * claim from that provider (the question names it). `priority`/`idle` (it asked this provider to stop it):
   * confirmed, the job ends `preempted`. `no` (nobody asked this provider to stop: the steward may have asked the
   * provider the buyer failed over from) or `closed` (the claim was released for another reason: a provider that
   * gossiped a receipt of its own, say, then refuses the exec as preempted): it is a refusal (a non-delivery) or a
   * failure like any other, and the buyer fails over. A steward before the op (STEWARD_BAD_REQUEST): the provider is
   * believed, as before it. A steward before the question named the provider ignores the name and answers for the
   * claim (`priority`/`idle` if it asked any provider to stop it): there a failover's provider is still believed
   * after the steward stopped an earlier one. No answer (unreachable, too slow) or no way to ask: nothing is
   * confirmed, the buyer fails over, and signs no non-delivery either (it cannot tell whose doing it was).
   */
  async #checkReclaim(job: Opened<Job>, provider: string, code: ReclaimCode): Promise<ReclaimCheck> {
    if (!this.d.reclaimed) return { v: 'unknown', note: 'no steward to confirm the reclaim: failed over' };
    let said: ReclaimAnswer;
    try {
      said = await this.d.reclaimed(job, provider);
    } catch (e) {
      const err = e as C0Error;
      if (err.code === 'STEWARD_BAD_REQUEST') return { v: 'confirmed', note: 'a steward before the reclaimed check: the provider believed' };
      this.d.log.warn({ provider, job: job.address, code, err: err.message }, 'could not ask the steward whether it reclaimed the job; failing over');
      return { v: 'unknown', note: `the steward did not confirm the reclaim: ${err.code ?? err.message}` };
    }
    if (said === 'priority' || said === 'idle') return { v: 'confirmed' };
    this.d.log.warn({ provider, job: job.address, code, steward: said }, 'the provider reports a reclaim the steward did not ask for: treated as a refusal or failure like any other');
    return { v: 'denied', note: said === 'closed' ? 'not reclaimed: the steward released the claim for another reason' : 'not reclaimed: the steward did not ask this provider to stop it' };
  }

  /** Tell the steward an admitted job is over without completing (its receipts, if any, are charged). */
  async #withdraw(job: Opened<Job>, admission: Admission | undefined): Promise<void> {
    if (admission?.verdict !== 'Admit' || !this.d.withdraw) return;
    await this.d.withdraw(job).catch((e) => this.d.log.warn({ job: job.address, err: (e as Error).message }, 'could not withdraw the claim; the steward releases it at the deadline'));
  }

  #noteUnfinished(provider: string, job: string): void {
    const now = this.d.clock();
    for (const k of [provider, `${provider}|${job}`]) {
      this.#unfinished.delete(k);
      this.#unfinished.set(k, now);
    }
    while (this.#unfinished.size > UNFINISHED_KEPT) this.#unfinished.delete(this.#unfinished.keys().next().value!);
  }

  /** A lapse refusal (EXEC_BUYER_PAUSED, EXEC_JOB_LAPSED) that an attempt of ours there, ended without its receipt, explains. */
  #lapseRefusalOurs(code: string, provider: string, job: string): boolean {
    const at = code === 'EXEC_BUYER_PAUSED' ? this.#unfinished.get(provider) : code === 'EXEC_JOB_LAPSED' ? this.#unfinished.get(`${provider}|${job}`) : undefined;
    return at !== undefined && this.d.clock() - at <= UNFINISHED_WINDOW_MS;
  }

  /** One exec exchange with a selected provider (an auction's winner, or an open order's winning claim: src/roles/buyer-orders.ts). */
  async attempt(
    job: Opened<Job>,
    cand: RankedCandidate,
    selection: Opened<Selection>,
    spec: JobSpec,
    onEvent: (e: BuyerEvent) => void,
    admission?: Uint8Array,
  ): Promise<{ outcome: string; code?: string; output?: Uint8Array; receipt?: Opened<Receipt>; acceptance?: Opened<Acceptance>; nondelivery?: NonDeliveryReason; reclaimed?: ReclaimCode; interrupted?: 'stopping' | 'stalled' }> {
    const { clock, log } = this.d;
    let input = spec.input;
    if (job.record.inputSealed === 'yes') {
      const boxKey = this.d.adverts(cand.provider)?.record.boxKey;
      if (!boxKey) return { outcome: 'provider has no box key for a sealed input' };
      input = sealBox(spec.input, boxKey);
    }
    // On an overlay with a steward the provider runs only admitted work: the steward's Admitted entry goes with the request.
    // It asks for keepalives while the work runs: a provider that promises them and then falls silent is given up
    // after silenceLimitMs (EXEC_PROVIDER_SILENT), inside a runner-up's offer, not at the connection's pings (30–45 s);
    // one that promises none is given up once it overran its quote (EXEC_PROVIDER_OVERRAN, SilenceWatch).
    const req: ExecRequest = { t: 'exec', selection: selection.bytes, job: job.bytes, offer: cand.offer.bytes, input, keepalive: true, ...(admission ? { admission } : {}) };
    // Give the provider until the deadline plus a grace period to deliver the receipt; the node's stop ends it sooner.
    const budget = Math.max(1, job.record.deadline - clock() + 5_000);
    // cleared when the attempt ends (below), so a deadline weeks away holds no timer past it
    const deadline = clearableTimeoutSignal(budget);
    // A provider that promises no keepalives is held to its quote instead (overrunLimitMs); a claim quotes no duration.
    const quotedMs = (cand.offer.record as Partial<Offer>).durationMs;
    const graceMs = this.d.overrunGraceMs ?? OVERRUN_GRACE_MS;
    const silence = new SilenceWatch(typeof quotedMs === 'number' ? { quotedMs, limitMs: overrunLimitMs(quotedMs, graceMs), graceMs } : undefined, {
      openMs: this.d.openLimitMs ?? EXEC_OPEN_MS,
      readyMs: graceMs,
      inputMs: inputLimitMs(input.length, this.d.inputBaseMs ?? EXEC_INPUT_BASE_MS, graceMs),
      inputBytes: input.length,
    });
    silence.begin();
    // not AbortSignal.any: on Node 20 it leaves an entry on the node's stop signal per attempt, for good (signals.ts)
    const linked = linkedSignal([deadline.signal, this.#stop.signal, silence.signal]);
    const signal = linked.signal;
    let output: Uint8Array | undefined;
    let receipt: Opened<Receipt> | undefined;
    const concurrent = this.#inFlight.get(cand.provider) ?? 0;
    let refused = false;
    this.#inFlight.set(cand.provider, concurrent + 1);
    const progress = new ProgressGate(clock, onEvent);
    // A stream that broke while this node stopped or did not run is not the provider's non-delivery (localInterruption).
    const watch = this.d.stalls?.begin();
    let frozenMs = 0;
    const local = () => {
      frozenMs = Math.max(frozenMs, watch?.longestFreezeMs() ?? 0);
      const why = localInterruption({ stopping: this.#stopping, frozenMs, ...(this.d.stallMs === undefined ? {} : { stallMs: this.d.stallMs }) });
      if (why) log.info({ provider: cand.provider, job: job.address, why, frozenMs: Math.round(frozenMs) }, 'the attempt was interrupted by this node; no non-delivery is signed');
      return why && this.#localOutcome(why, frozenMs);
    };
    try {
      for await (const raw of this.d.exec(cand.provider, EXEC_PROTOCOL, req, signal, (f) => silence.heard(f), () => silence.sent(), () => silence.opened())) {
        const f: ExecFrame = parseExecFrame(raw);
        silence.heard(f);
        if (f.t === 'refused') {
          refused = true;
          // On an overlay with a steward, a job the steward reclaimed before it ran here is refused with the reclaim's
          // code: the provider did what the steward asked, so no non-delivery is signed against it once the steward
          // confirms it (run(): #checkReclaim; a refusal it did not ask for earns the non-delivery there).
          if (this.d.admission && (f.code === 'EXEC_PREEMPTED' || f.code === 'EXEC_IDLE_RECLAIMED')) return { outcome: `refused: ${f.code}`, code: f.code, reclaimed: f.code };
          // A provider on an overlay with a steward runs only admitted work: refusing this job is not the provider's fault.
          if (f.code === 'EXEC_NOT_ADMITTED') {
            log.warn({ provider: cand.provider, job: job.address, err: f.message }, 'the provider runs only work its overlay’s steward admitted');
            return { outcome: `refused: ${f.code}`, code: f.code };
          }
          // All its slots busy while another of our jobs runs there (two of our runs selected it at once): the slot
          // went to our own job, so it is not the provider's failure, as with NET_BUFFER_LIMIT for another of our inputs
          // (below). Before, a one-slot provider chosen for two of our jobs at once was signed a `refused` non-delivery,
          // at twice a failure's weight, for every second one (review s41 C3: 113 over ~560 jobs, its score 0.595).
          if (f.code === 'EXEC_BUSY' && (concurrent > 0 || (this.#inFlight.get(cand.provider) ?? 0) > 1)) return { outcome: `provider busy with another of our jobs: refused: ${f.code}`, code: f.code };
          // A provider pausing us after an exec input of ours lapsed there (docs/node.md "Exec input lapses") refuses
          // for our own doing, if an attempt of ours there did end without its receipt lately (for that job, when it
          // names the job): no non-delivery. The same code with no such attempt is the provider's word alone, and
          // counts as any refusal (else any provider could refuse what it won for free).
          if (this.#lapseRefusalOurs(f.code, cand.provider, job.address)) return { outcome: `provider paused us after an attempt of ours there ended without its input: refused: ${f.code}`, code: f.code };
          return { outcome: `refused: ${f.code}`, nondelivery: 'refused' };
        }
        if (f.t === 'accepted') onEvent({ e: 'accepted', provider: cand.provider });
        else if (f.t === 'progress') progress.offer(cand.provider, f);
        else if (f.t === 'output') output = f.data;
        else if (f.t === 'receipt') {
          try {
            receipt = open(f.receipt, T.receipt);
          } catch (e) {
            // the provider's own bytes: not a link that failed
            return { outcome: `the provider's receipt does not open: ${(e as C0Error).code ?? (e as Error).message}`, nondelivery: 'bad-receipt' };
          }
          break;
        }
      }
    } catch (e) {
      const mine = receipt ? undefined : local();
      if (mine) return mine;
      log.warn({ provider: cand.provider, err: (e as Error).message }, 'exec stream failed');
      const err = e as C0Error;
      // The provider holds one large input per connection (docs/network.md "Direct streams"): refused for the input of
      // another of our jobs it holds, it did nothing wrong, and no non-delivery is signed against it.
      if (!receipt && err.code === BUFFER_LIMIT && err.detail?.remote === true && (concurrent > 0 || (this.#inFlight.get(cand.provider) ?? 0) > 1)) {
        return { outcome: `provider busy with another of our inputs: ${err.code}`, code: err.code };
      }
      // no output within its quote and the grace, and no promise of keepalives: not delivered in time
      if (!receipt && silence.overran) return { outcome: `provider overran its quote: ${EXEC_PROVIDER_OVERRAN}`, nondelivery: 'timeout' };
      // the stream did not open, or the provider did not take the request, in time
      if (!receipt && silence.notReady) {
        const what = silence.inputNotTaken ? 'the input' : 'the request';
        return { outcome: `provider did not take ${what} in time: ${EXEC_PROVIDER_NOT_READY}`, nondelivery: 'timeout' };
      }
      // what it sent broke exec/1 here (a frame that is not one, more output than this buyer takes): it answered, without a receipt
      if (!receipt && PROVIDER_PROTOCOL_ERRORS.has(err.code) && err.detail?.remote !== true) return { outcome: `the provider broke exec/1: ${err.code}`, nondelivery: 'no-receipt' };
      // Connected, and no connection of its key speaks exec/1, nor any address where a process of its key served it
      // (the net layer tried them all: protocols.ts #dialStream). Still the key's non-delivery: a key is what quoted,
      // and its holder answers for every process that holds it; were it free, a key could win on price and never
      // serve (docs/node.md "A provider whose key two processes hold").
      if (!receipt && err.code === NET_ERR.PROTOCOL) return { outcome: `no connection of the provider's key serves exec/1: ${err.code}`, nondelivery: 'unreachable' };
      if (!receipt) return { outcome: `provider unreachable or gone: ${err.code ?? (e as Error).message}`, nondelivery: deadline.signal.aborted ? 'timeout' : 'unreachable' };
    } finally {
      deadline.clear();
      linked.clear();
      silence.stop();
      frozenMs = Math.max(frozenMs, watch?.longestFreezeMs() ?? 0);
      watch?.end();
      progress.flush();
      const n = (this.#inFlight.get(cand.provider) ?? 1) - 1;
      if (n > 0) this.#inFlight.set(cand.provider, n);
      else this.#inFlight.delete(cand.provider);
      // an attempt that ended without a receipt and without the provider's refusal: its input may have lapsed there
      if (!receipt && !refused) this.#noteUnfinished(cand.provider, job.address);
    }
    if (!receipt) return local() ?? { outcome: 'stream ended without a receipt', nondelivery: 'no-receipt' };
    onEvent({ e: 'receipt', receipt });
    // The receipt must link: this job, this offer, this buyer, this provider, the offer's price, our input, the job's
    // workload (the receipt's market: docs/network.md §14).
    const r = receipt.record;
    const links =
      receipt.signer === cand.provider &&
      r.provider === receiptProviderFor(cand.provider, this.d.adverts(cand.provider)) &&
      r.job === job.address &&
      r.offer === cand.offer.address &&
      r.buyer === this.d.did &&
      r.inputHash === job.record.input.hash &&
      r.workload === job.record.workload &&
      moneyEquals(r.price, cand.offer.record.price);
    if (!links) {
      onEvent({ e: 'verified', ok: false, detail: 'receipt does not link to this job, offer, buyer, workload and price' });
      return { outcome: 'receipt does not link', nondelivery: 'bad-receipt' };
    }
    // Its times must be possible (impossibleReceiptTimes): a receipt from the future would count in this buyer's view
    // only later (as of its completedAt), and in audits with it.
    const detail = impossibleReceiptTimes(r, cand.offer.record.issuedAt, clock(), this.d.skewMs);
    if (detail) {
      onEvent({ e: 'verified', ok: false, detail });
      return { outcome: 'receipt dated impossibly', nondelivery: 'bad-receipt' };
    }
    await this.d.store(receipt);
    await this.d.publish('receipt', receipt).catch(() => {});
    let verdict: Acceptance['verdict'] = 'accepted';
    let reason: string | undefined;
    if (r.status === 'completed') {
      const got = output ? hashHex(output) : undefined;
      if (!output) {
        verdict = 'disputed';
        reason = 'receipt says completed but no output was delivered';
      } else if (got !== r.outputHash) {
        verdict = 'disputed';
        reason = `output hash ${got} does not match the receipt's ${r.outputHash}`;
      }
      onEvent({ e: 'verified', ok: verdict === 'accepted', detail: verdict === 'accepted' ? `output matches ${r.outputHash}` : reason! });
    } else {
      onEvent({ e: 'verified', ok: false, detail: `provider reported failure ${r.failure?.code}: ${r.failure?.message}` });
    }
    const acc: Acceptance = { receipt: receipt.address, verdict, ...(reason ? { reason } : {}), signedAt: clock() };
    const acceptance = seal(T.acceptance, acc, this.d.signer);
    await this.d.store(acceptance);
    await this.d.publish('acceptance', acceptance).catch(() => {});
    onEvent({ e: 'acceptance', acceptance, receiptStatus: r.status });
    return { outcome: r.status === 'completed' ? (verdict === 'accepted' ? 'completed' : 'disputed') : `failed: ${r.failure?.code}`, ...(output ? { output } : {}), receipt, acceptance };
  }
}

/** How long a watchdog that fired late waits once more, for frames already in this node's buffers (at most its own window). */
const WATCHDOG_GRACE_MS = 2 * STALL_TICK_MS;

/** A watchdog's timer (watchdog()), cleared when what it waits for comes. */
interface Watchdog {
  clear(): void;
}

/**
 * A watchdog on the provider (SilenceWatch): `fire` after `ms`, unless its timer fires a stall tick or more late. Then
 * this process did not run meanwhile (SIGSTOP, a suspended machine, a blocked event loop), and after a freeze timers
 * run before the I/O that waited: the provider's frames may be in this node's buffers, unread. So it waits once more,
 * `graceMs` (WATCHDOG_GRACE_MS, at most `ms` unless given), for them to be read (a frame read clears it, as it would the first timer), then fires, late or
 * not: one grace a window, so a loop that is always late (a loaded machine) delays a silent provider's give-up by
 * seconds, never for good. Before (QA ffMatchDay2 F2), a buyer frozen 25 s while its provider sent progress gave that
 * provider up EXEC_PROVIDER_SILENT the moment it ran again and signed a non-delivery against it: a freeze that short
 * is under STALL_MS, so it was not taken as this node's own doing. (A first version re-armed a whole window each
 * late firing: under load, a silent provider could be kept to the deadline; review s57.)
 */
function watchdog(ms: number, fire: () => void, graceMs = Math.min(ms, WATCHDOG_GRACE_MS)): Watchdog {
  const due = performance.now() + ms;
  let timer = setTimeout(() => {
    if (performance.now() - due < STALL_TICK_MS) return fire();
    timer = setTimeout(fire, graceMs);
  }, ms);
  return { clear: () => clearTimeout(timer) };
}

/**
 * The buyer's watch on an attempt (docs/node.md "Buyer"), from the stream's opening to the receipt:
 *
 * - Opening (`opening`): the stream must open within `openMs` of the attempt's start (`begin`), and the provider
 *   take the request within `readyMs` of it opening (`opened`): its `ready` for an input sent in frames, any frame,
 *   or the request sent whole (`sent`). Else `signal` aborts with EXEC_PROVIDER_NOT_READY (`notReady`): a winner that
 *   never says `ready`, or whose process is frozen for longer than `openMs`, is left while its runner-ups' offers
 *   still hold instead of holding the buyer to the deadline.
 * - Input (`opening.inputMs`, inputLimitMs): from the provider's `ready` (or the request sent whole, `sent`) it must
 *   take the input, its `accepted` (or any output, its receipt, its refusal), within the input phase a provider allows
 *   itself, else EXEC_PROVIDER_NOT_READY the same way (`inputNotTaken`). The input may still be on the wire long after
 *   this buyer's "sent", and a provider can promise keepalives only in `accepted`: the overrun below does not run
 *   while the input travels.
 * - Silence: armed by an `accepted` frame that promises keepalives (`keepaliveMs`), reset by every frame, and given
 *   up at silenceLimitMs without one: `signal` aborts with EXEC_PROVIDER_SILENT, which ends the exec stream. The
 *   last keepalive (`last: 'yes'`, sent once the work ended and before the output), the first `output` and the
 *   receipt end it: from there frames are paced by the link's throughput (a 256 KiB chunk may take longer than the
 *   silence limit on a slow link), not by keepalives; the attempt's deadline and the connection's liveness cover
 *   that phase.
 * - Overrun: a provider that has promised no keepalives (one before them, or one that will not say it is there) has
 *   its quoted duration overrun by as much again, at least by OVERRUN_GRACE_MS (`overrun.limitMs`, overrunLimitMs),
 *   counted from its `accepted` (it has the input and its work starts) to its first output: `signal` aborts with
 *   EXEC_PROVIDER_OVERRAN (`overran`). Its frames do not extend it: progress is not delivery, and a `keepalive`
 *   (`last: 'yes'` too) from a provider that promised none is not taken as its work's end. A promise of keepalives
 *   in `accepted` ends it (the silence rule watches that provider instead). From its first output such a provider must deliver at OUTPUT_MIN_BYTES_PER_SEC on average after `overrun.graceMs` until the
 *   receipt (EXEC_PROVIDER_OVERRAN too): one output chunk, or a byte now and then, does not buy it the rest of the
 *   deadline.
 */
export class SilenceWatch {
  readonly #ac = new AbortController();
  /** The silence allowed while armed (silenceLimitMs of the interval the provider promised). */
  #limitMs: number | undefined;
  #timer: Watchdog | undefined;
  #overrunTimer: LongTimer | undefined;
  /** The overrun rule no longer applies: keepalives were promised, the work ended, or it fired. */
  #overrunDone: boolean;
  #overran = false;
  /** Keepalives were promised in `accepted`. */
  #promised = false;
  /** A provider that promised no keepalives is sending its output: each chunk must follow the last within the grace. */
  #delivering = false;
  #deliveryTimer: Watchdog | undefined;
  /** When this provider's output began (performance.now()), and how many bytes of it came since. */
  #outputSince = 0;
  #outputBytes = 0;
  #openTimer: Watchdog | undefined;
  /** The opening rule no longer applies: the provider took the request, the attempt ended, or it fired. */
  #openDone: boolean;
  #notReady = false;
  /** The input rule: running from `ready` (or `sent`) to `accepted`, over once it ended (`#inputDone`), and whether it fired. */
  #inputTimer: LongTimer | undefined;
  #inputDone: boolean;
  #inputNotTaken = false;

  /**
   * `overrun`: the quoted duration, the overrun allowed (overrunLimitMs) and the grace between output chunks; absent,
   * the overrun rule is off (a claim quotes no duration). `opening`: the bounds on the stream's opening, the
   * request's taking and (`inputMs`, for an input of `inputBytes`) the input's; absent, those rules are off.
   */
  constructor(
    private readonly overrun?: { quotedMs: number; limitMs: number; graceMs?: number },
    private readonly opening?: { openMs: number; readyMs: number; inputMs?: number; inputBytes?: number },
  ) {
    this.#overrunDone = overrun === undefined;
    this.#openDone = opening === undefined;
    this.#inputDone = opening?.inputMs === undefined;
  }

  get signal(): AbortSignal {
    return this.#ac.signal;
  }

  /** Whether the attempt was given up because its provider, which promised no keepalives, overran its quote. */
  get overran(): boolean {
    return this.#overran;
  }

  /** Whether the attempt was given up because the stream did not open, or the provider did not take the request, in time. */
  get notReady(): boolean {
    return this.#notReady;
  }

  /** Whether it was the input the provider did not take in time (`accepted`; notReady too). */
  get inputNotTaken(): boolean {
    return this.#inputNotTaken;
  }

  /** The attempt starts: the stream is to open within `opening.openMs`. */
  begin(): void {
    const o = this.opening;
    if (!o || this.#openDone) return;
    this.#startOpening(o.openMs, `the stream to the provider did not open within ${o.openMs} ms`);
  }

  /** The stream is open: the provider is to take the request within `opening.readyMs`. */
  opened(): void {
    const o = this.opening;
    if (!o || this.#openDone) return;
    this.#startOpening(o.readyMs, `the provider did not take the request within ${o.readyMs} ms of the stream opening (no ready)`);
  }

  /**
   * The whole request (header and input) is handed to this node's buffers: the input may still be on the wire. The
   * provider is to take it (its `accepted`) within the input phase, counted from its `ready` if it said it.
   */
  sent(): void {
    this.#endOpening();
    this.#startInput('the request was sent');
  }

  heard(f: ExecFrame): void {
    this.#endOpening();
    if (f.t === 'ready') {
      this.#startInput('its ready');
      return;
    }
    // the provider has the input (or answered otherwise): the input phase is over, the quote's overrun counts from here
    if (f.t !== 'progress' && f.t !== 'keepalive') this.#endInput();
    if (f.t === 'accepted' && f.keepaliveMs !== undefined) {
      this.#promised = true;
      this.#limitMs = silenceLimitMs(f.keepaliveMs);
      this.#endOverrun();
    } else if (f.t === 'accepted') this.#startOverrun();
    const ended = f.t === 'receipt' || f.t === 'refused';
    if (ended || (this.#promised && (f.t === 'output' || (f.t === 'keepalive' && f.last === 'yes')))) {
      this.#limitMs = undefined;
      this.#endOverrun();
      this.#endDelivery();
    } else if (f.t === 'output' && !this.#promised && this.overrun) {
      // a provider that promised no keepalives: its work is over once output comes, and the output must keep a floor
      this.#endOverrun();
      if (!this.#delivering) this.#outputSince = performance.now();
      this.#delivering = true;
      this.#outputBytes += f.data.byteLength;
      this.#armDelivery();
    }
    this.#arm();
  }

  stop(): void {
    this.#limitMs = undefined;
    this.#endOpening();
    this.#endInput();
    this.#endOverrun();
    this.#endDelivery();
    this.#arm();
  }

  #startOpening(ms: number, message: string): void {
    this.#openTimer?.clear();
    if (this.#ac.signal.aborted) return;
    this.#openTimer = watchdog(ms, () => {
      this.#openDone = true;
      if (this.#ac.signal.aborted) return;
      this.#notReady = true;
      this.#ac.abort(new C0Error(EXEC_PROVIDER_NOT_READY, message));
    });
  }

  #endOpening(): void {
    this.#openDone = true;
    this.#openTimer?.clear();
    this.#openTimer = undefined;
  }

  #startInput(since: string): void {
    const ms = this.opening?.inputMs;
    if (ms === undefined || this.#inputDone || this.#inputTimer || this.#ac.signal.aborted) return;
    const bytes = this.opening?.inputBytes ?? 0;
    this.#inputTimer = setLongTimeout(() => {
      this.#inputDone = true;
      if (this.#ac.signal.aborted) return;
      this.#notReady = true;
      this.#inputNotTaken = true;
      this.#ac.abort(new C0Error(EXEC_PROVIDER_NOT_READY, `the provider had not taken the input of ${bytes} bytes (no accepted) ${ms} ms after ${since}: a provider's own default input phase for that size (execRequestMs + the input at execMinInputBytesPerSec) and the grace`));
    }, ms);
  }

  #endInput(): void {
    this.#inputDone = true;
    this.#inputTimer?.clear();
    this.#inputTimer = undefined;
  }

  #startOverrun(): void {
    const o = this.overrun;
    if (!o || this.#overrunDone || this.#overrunTimer || this.#ac.signal.aborted) return;
    this.#overrunTimer = setLongTimeout(() => {
      this.#overrunDone = true;
      if (this.#ac.signal.aborted) return;
      this.#overran = true;
      this.#ac.abort(new C0Error(EXEC_PROVIDER_OVERRAN, `the provider promised no keepalives in its accepted and delivered nothing ${o.limitMs} ms after it (it quoted ${o.quotedMs} ms)`));
    }, o.limitMs);
  }

  #endOverrun(): void {
    this.#overrunDone = true;
    this.#overrunTimer?.clear();
    this.#overrunTimer = undefined;
  }

  /** The output given, since its first chunk, grace plus a second per OUTPUT_MIN_BYTES_PER_SEC bytes: each chunk buys time for its size. */
  #armDelivery(): void {
    this.#deliveryTimer?.clear();
    this.#deliveryTimer = undefined;
    if (!this.#delivering || this.#ac.signal.aborted) return;
    const grace = this.overrun?.graceMs ?? OVERRUN_GRACE_MS;
    const until = this.#outputSince + grace + (this.#outputBytes * 1000) / OUTPUT_MIN_BYTES_PER_SEC;
    // what is left of its time may be nothing: its grace after a freeze is the whole WATCHDOG_GRACE_MS
    this.#deliveryTimer = watchdog(Math.max(0, until - performance.now()), () => {
      if (this.#ac.signal.aborted) return;
      this.#overran = true;
      this.#ac.abort(new C0Error(EXEC_PROVIDER_OVERRAN, `the provider promised no keepalives and delivered its output slower than ${OUTPUT_MIN_BYTES_PER_SEC} bytes/s (${this.#outputBytes} bytes in ${Math.round(performance.now() - this.#outputSince)} ms, after a ${grace} ms grace), and no receipt`));
    }, WATCHDOG_GRACE_MS);
  }

  #endDelivery(): void {
    this.#delivering = false;
    this.#deliveryTimer?.clear();
    this.#deliveryTimer = undefined;
  }

  #arm(): void {
    this.#timer?.clear();
    this.#timer = undefined;
    const ms = this.#limitMs;
    if (ms === undefined || this.#ac.signal.aborted) return;
    const every = ms / EXEC_SILENCE_FACTOR;
    this.#timer = watchdog(ms, () => this.#ac.abort(new C0Error('EXEC_PROVIDER_SILENT', `the provider sent nothing for ${ms} ms while its work ran (it promised a frame every ${every} ms)`)));
  }
}
