/**
 * The provider role: advertises what it has (republished before expiry),
 * quotes offers on jobs it is eligible for, runs the work it wins, and signs a
 * receipt for every outcome — a timeout, a crash or an empty output is a signed
 * `failed` receipt with the actual duration and an honestly graded energy figure.
 */
import { C0Error } from '../../errors.js';
import { open, seal, type Opened } from '../../records/envelope.js';
import { T, type Advert, type Hardware, type Job, type Offer, type Receipt, type Selection } from '../../records/kinds.js';
import { compareMoney } from '../../records/money.js';
import { openTaken } from '../../records/taken.js';
import { hashHex } from '../../records/address.js';
import type { Ed25519Signer } from '../../records/ed25519.js';
import { monotonicClock, type Clock } from '../../util/clock.js';
import type { Logger } from '../../util/log.js';
import type { ProviderConfig } from '../../node/config.js';
import { unseal, type BoxKeyPair } from '../../crypto/sealed-box.js';
import { EXEC_KEEPALIVE_MS, chunks, execRequestInvalid, parseExecHeader, receiptAcknowledged, silenceLimitMs, type ExecHeader, type ReceiptAck } from '../exec-protocol.js';
import { StallWatch } from '../../util/stall-watch.js';
import { PeerLog } from '../../util/peer-log.js';
import { inputLapse, readExecInput, refusedAfterHold, runPhaseMs, type ExecIO, type InputLapse } from './exec-input.js';
import { createExecutor, type ExecContext, type ExecHost, type Executor } from './executors.js';
import { procStartTime, type ProcessRegistry } from './orphans.js';
import { recoverCrashedWork } from './crash-recovery.js';
import { receiptFor } from './receipt.js';
import { guardOutput } from './output-guard.js';
import { overran, runBudgetMs } from './run-budget.js';
import type { Meter, MeterSpan } from './meters.js';
import { quotePrice, quotedDurationMs } from './pricing.js';
import { QuoteBudget } from './quote-budget.js';
import type { ProviderPoolHooks } from '../pool-member/hooks.js';
import { advertInterval, type AdvertInterval } from '../../matching/advert-rate.js';
import { clearableTimeoutSignal, raceTimeout } from '../../util/timers.js';
import { checkAdmission } from './admission-proof.js';
import { truncateText } from '../../util/text.js';
import { peerIdFromDid } from '../../node/peer-id.js';

/** The receipt of one run (receipt.ts), still importable from here. */
export { receiptFor };

/**
 * How long a receipt written on the exec stream waits for the buyer to show it got it: every buyer resets (or closes)
 * the stream as soon as it has read the receipt, one round trip after it was written. A write that returned only put
 * the frame in this node's buffers (yamux's window, the socket's): on a half-open link (a dropped NAT mapping, a dead
 * uplink) it resolves all the same and the frame goes nowhere. Without the buyer's word in this time the receipt
 * goes to the re-delivery path (`deliver`, outcome/1), where a copy the buyer already holds is answered as such.
 */
export const RECEIPT_ACK_MS = 10_000;

/**
 * The slowest output the wait for the buyer's word allows for (receiptAckWaitMs): the rate below which a buyer gives
 * up on output itself (the buyer's OUTPUT_MIN_BYTES_PER_SEC), so a buyer still reading gets to the receipt.
 */
export const RECEIPT_ACK_FLOOR_BYTES_PER_SEC = 4 * 1024;

/**
 * How long a receipt written after `outputBytes` of output waits for the buyer's word: RECEIPT_ACK_MS once the output
 * has left, and a write that returned only put the last of it in this node's buffers. On a slow link the output is
 * still on its way then (4 MiB at 64 KiB/s is 64 s): it waits for the output at the floor rate as well, up to the
 * job's deadline. Before, the 10 s ran out while the buyer was still reading, the stream was closed under it 15 s
 * later (ANSWER_LINGER_MS), and a job that had completed failed at the buyer (second-round review, real daemons).
 */
export function receiptAckWaitMs(outputBytes: number, deadlineLeftMs: number, ackMs = RECEIPT_ACK_MS): number {
  const transfer = Math.ceil((outputBytes * 1000) / RECEIPT_ACK_FLOOR_BYTES_PER_SEC);
  return ackMs + Math.max(0, Math.min(transfer, deadlineLeftMs));
}

/**
 * How long a clean stop waits for the runs it aborted to sign, store and send their receipts (EXEC_ABORTED) while the
 * network, the delivery and the store still work: as long as a stopping buyer waits for its own runs (INTERRUPT_WAIT_MS).
 */
export const STOP_DRAIN_MS = 3_000;

export interface EligibilityFailure {
  code: string;
}

/** The refusal of work this provider cannot keep the record of (its store takes no writes). */
function storeRefusal(cause: string): C0Error {
  // the OS's reason only ("No space left on device"): the buyer has no use for this node's paths
  const reason = cause.split(': ').at(-1) || 'a write failed';
  return new C0Error('EXEC_PROVIDER_STORE_FAILED', `this provider cannot store its work now (${reason}); nothing ran`);
}

/** The failure code of work whose buyer gave up on it while this provider's process was frozen (not EXEC_BUYER_GONE). */
export const PROVIDER_STALLED = 'EXEC_PROVIDER_STALLED';
/** Without keepalives a buyer notices a silent provider by the connection's pings, which time out after 30 s. */
export const PROVIDER_STALL_PING_MS = 30_000;

export interface ProviderDeps {
  signer: Ed25519Signer;
  did: string;
  config: ProviderConfig;
  hardware: Hardware;
  meter: Meter;
  box: BoxKeyPair;
  clock: Clock;
  /**
   * The monotonic clock (default `monotonicClock`, src/util/clock.ts) for what this provider times for itself: the
   * throttle of a run's progress events (one per 100 ms; a wall clock stepped back would hold them back as long), and
   * how long a run has run in a `usage` answer (`elapsedMs`; a wall clock stepped forward would make a working run
   * look idle to the steward, one stepped back a truly idle one look busy).
   */
  monoClock?: Clock;
  /** Watches this process's own freezes while work runs (default one of its own): a run its buyer gave up on while this process was frozen is this provider's failure (EXEC_PROVIDER_STALLED), not EXEC_BUYER_GONE. */
  stalls?: StallWatch;
  log: Logger;
  /** The market's eligibility check of this provider's advert against a job (no offer yet). */
  eligibility: (job: Opened<Job>, advert: Opened<Advert>, now: number) => EligibilityFailure[];
  /** Publish a record on its topic (`advert` travels with offers; an offer goes to `buyer`, the job's signer, only); resolves to the number of peers it reached. */
  publish: (kind: 'advert' | 'offer' | 'receipt', env: Opened, withAdvert?: Opened<Advert>, buyer?: string) => Promise<number>;
  /**
   * Why this node's store takes no writes now (store/db.ts storeHealth: a write failed, the database is not reopened
   * yet), or undefined. Meanwhile nothing is quoted and an exec is refused EXEC_PROVIDER_STORE_FAILED before its
   * input is read: work whose note and receipt cannot be kept is not run.
   */
  storeProblem?: () => string | undefined;
  /** Durable provider state. */
  state: {
    loadSeq(): Promise<number>;
    saveSeq(seq: number): Promise<void>;
    hasReceiptFor(job: string): Promise<boolean>;
    /** Keep a bar durably (preempt of a job not running here), so a restart still refuses its exec; without it a bar is memory only. */
    saveBar?(job: string, code: 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED', until: number): Promise<void>;
    /** The bar kept on `job`, if any. */
    barOf?(job: string): Promise<{ code: 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED'; until: number } | undefined>;
    /**
     * Note work accepted here before it runs (src/store/provider-runs.ts), superseded when its receipt is kept
     * (`onReceipt`): a note left at the next start is work a crash took with it, whose failed receipt is then signed.
     */
    noteRun?(n: { job: string; jobEnvelope: Uint8Array; offerEnvelope: Uint8Array; startedAt: number }, until: number): Promise<void>;
    /** Drop a run note (the work ended, but no receipt could be kept). */
    dropNote?(job: string): Promise<void>;
    /** The run notes held (at start: what a crashed run left). */
    notes?(): Promise<Array<{ job: string; jobEnvelope: Uint8Array; offerEnvelope: Uint8Array; startedAt: number }>>;
  };
  /**
   * Keep a receipt this provider signed, with the offer it cites (its quote: the evidence's accuracy pair), and note
   * that `job` ran here; awaited before the run's slot is given back. With `deliver`, the receipt's wait for its
   * buyer (ReceiptDelivery.entry) is kept in the same write, cleared by `acknowledged` or taken over by `deliver`.
   */
  onReceipt: (r: Opened<Receipt>, offer: Opened<Offer>, job: Opened<Job>) => Promise<void>;
  /**
   * Send a receipt its buyer did not get on the exec stream (it left, or the stream broke) to that buyer directly,
   * and again when it connects (src/roles/provider/receipt-delivery.ts); not awaited. Default: gossip only.
   */
  deliver?: (r: Opened<Receipt>) => void;
  /**
   * The buyer showed it got a receipt on the exec stream (it ended the stream after it): the wait `onReceipt` kept
   * with the receipt (ReceiptDelivery.entry) is dropped. Default: nothing.
   */
  acknowledged?: (r: Opened<Receipt>) => void;
  /**
   * At start: the receipts a run before the restart kept but never saw delivered (its buyer had not acknowledged them
   * on the stream, nor were they sent directly: the provider was killed or stopped first), now being sent to their
   * buyers (ReceiptDelivery.resume); the provider gossips them too. Default: none.
   */
  resumeDelivery?: () => Array<Opened<Receipt>>;
  /**
   * How long a written receipt waits for the buyer to show it got it (it closes or resets the exec stream) before it
   * is handed to `deliver`; default RECEIPT_ACK_MS.
   */
  receiptAckMs?: number;
  /** How often a buyer that asked gets `{t:'keepalive'}` while its work runs; default EXEC_KEEPALIVE_MS (5 s). */
  keepaliveMs?: number;
  /** Metrics hook: job outcomes. */
  onOutcome?: (status: 'completed' | 'failed', workload: string) => void;
  /**
   * Charge a peer for an invalid exec request (execRequestInvalid: malformed frames or records, a forged selection, an
   * input other than the job's): the network's abuse score, `network.floodLimits.abusePerInvalid` points
   * (AbuseReports.invalid, net/peer-abuse.ts). Default none.
   */
  strike?: (peer: string) => void;
  /** Who besides the job's buyer may sign a selection this provider runs (an overlay's steward). */
  selectionAuthority?: (selectionSigner: string, jobBuyer: string) => boolean;
  /**
   * What this node holds that ends a job's quoting (docs/market.md "Jobs already decided"), read before a job within
   * budget is quoted: `selection` (one signed by the job's buyer or an authorised decider), `receipt` (one this node
   * signed), `acceptance` (the job's buyer countersigned a receipt for it), or `quoted` (this node quoted on it
   * before, and keeps the job: a restart forgot the quote, not the job). Such a job gets no offer and spends no
   * quoting budget: a restarted provider that anti-entropy hands the buyer's earlier jobs does not fill that buyer's
   * budget with offers on work already done. `quoted` is not read for a job its buyer pushed (it asks for an offer
   * now). Default none.
   */
  held?: (job: Opened<Job>) => Promise<HeldOutcome | undefined>;
  /**
   * On an overlay with a steward (this node's `network.steward`): an exec runs only with the steward's `Admitted`
   * entry for the job's claim (the header's `admission` for the job's own claim, else `admissionOf` asks the steward), refused
   * EXEC_NOT_ADMITTED otherwise (src/roles/provider/admission-proof.ts).
   */
  steward?: { did: string; admissionOf?: (job: Opened<Job>) => Promise<Uint8Array | undefined> };
  /** Where running `exec` process groups are recorded, to end them after a crash (src/roles/provider/orphans.ts). */
  processes?: ProcessRegistry;
  /** The quoting budget (default: one from `config.quoteBudget`, without metrics). */
  quoteBudget?: QuoteBudget<Opened<Offer>>;
  /** Called when a slot is taken or freed (the presence publisher answers with a fresh presence). */
  onSlotsChanged?: () => void;
  /** A pool member (docs/pools.md): the advert and receipts are the pool's, work runs through the pool. */
  pool?: ProviderPoolHooks;
  /**
   * How many live providers this node sees that would rank before it for the
   * job on price, counted up to `limit` (src/matching/candidates.ts rankAhead).
   * With `config.offerRank` > 0, a job heard on gossip gets no offer when
   * `offerRank` providers rank before this one (docs/market.md "How many
   * offers a job draws"); a job its buyer pushed is always quoted.
   */
  rankAhead?: (job: Opened<Job>, advert: Opened<Advert>, limit: number, now: number) => number;
  /** Live providers this node sees in its largest market (itself included): in a large one the advert lives longer (advert-rate.ts). */
  liveInMarket?: () => number;
  /** The node, for builtins that join other nodes (builtin.train-member). */
  execHost?: ExecHost;
}

/**
 * What a slot taken for work outside exec/1 gives that work (`takeSlot`): the run's abort signal, which `stop()`
 * aborts, and the hooks that record its `exec` process group so a restart after a crash ends it.
 */
export type SlotRun = Pick<ExecContext, 'signal' | 'onSpawn' | 'onExit'>;

/** What this node holds that ends a job's quoting (ProviderDeps.held). */
export type HeldOutcome = 'selection' | 'receipt' | 'acceptance' | 'quoted';

/** How many jobs a provider remembers selections of (heard before the job, or without an offer of its own), oldest dropped first. */
export const DECIDED_MAX = 10_000;

/** How many jobs reclaimed while not running a provider keeps barred (Provider.preempt), and for how long without a deadline. */
export const PREEMPTED_MAX = 4096;
export const PREEMPTED_KEEP_MS = 24 * 60 * 60 * 1000;

/**
 * Jobs whose exec input lapsed here that are remembered at most (Provider #lapsedJobs; the oldest goes first). Each
 * took a lapse to add: a slot held past the grace, and a pause for its buyer.
 */
export const LAPSED_JOBS_MAX = 4096;

export class Provider {
  #advert: Opened<Advert> | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** This process's freezes while work runs (deps.stalls, else its own, made on first use). */
  #stalls: StallWatch | undefined;
  #running = new Map<string, AbortController>();
  /** Jobs started here recently (bounded; read by `runs`). */
  readonly #started = new Set<string>();
  /**
   * Jobs whose exec input lapsed here (#inputLapsed), the last LAPSED_JOBS_MAX: an exec of one is refused
   * EXEC_JOB_LAPSED, whatever offer or claim and selection it carries. Before, the buyer opened exec again at once with
   * the same ones and held the slot again (an open order's claim has no start-by: until the job's deadline, review s41
   * D round 2 F1).
   */
  readonly #lapsedJobs = new Set<string>();
  /**
   * Jobs being preempted: `done` resolves once the job's receipt is signed and its slot is free (undefined: it could not
   * be signed); every stop of the job asked meanwhile waits for it.
   */
  #stopping = new Map<string, { done: Promise<Opened<Receipt> | undefined>; resolve: (receipt: Opened<Receipt> | undefined) => void }>();
  /**
   * Jobs the steward reclaimed while they were not running here (`preempt` found no run): an exec of one is refused
   * with the reclaim's code until the time kept (the job's deadline as the steward gave it, else PREEMPTED_KEEP_MS).
   * At most PREEMPTED_MAX here; each is also kept durably (`state.saveBar`) and read back by an exec this map does
   * not answer, so a restart forgets none (docs/overlays.md "Preemption").
   */
  #preempted = new Map<string, { code: 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED'; until: number }>();
  /**
   * Meter spans of running jobs, for usage reports to the overlay's steward: `startedAt` on the wall clock (the
   * attempt's id, as its receipt says), `monoStart` on the monotonic clock (what `elapsedMs` counts from).
   */
  #spans = new Map<string, { span: MeterSpan; startedAt: number; monoStart: number; units?: number }>();
  #executors = new Map<string, Executor>();
  #offered = new Set<string>();
  /** Gossiped jobs this provider held back on, outranked on price (docs/market.md §12). */
  #heldBack = new Set<string>();
  /**
   * Job address → the signers of the selections heard for it (at most DECIDED_MAX jobs, oldest first out): a job
   * whose selection by its buyer (or an authorised decider) came first, as anti-entropy sends selections before jobs,
   * is decided and gets no offer. Who signed is checked when the job is heard (the selection does not name the buyer).
   */
  readonly #selected = new Map<string, Set<string>>();
  #stopped = false;
  /** The last advert reached no peer, and that was said (publishAdvert): its retries are logged at debug. */
  #unheard = false;
  #stopDone: Promise<void> | undefined;
  /**
   * Exec runs under way, each settled once its receipt is stored and written on its stream (or handed to `deliver`),
   * or once the run ended without one: what `stop` waits for.
   */
  readonly #inFlight = new Set<Promise<void>>();
  /** Refused exec streams, logged per peer and code at most once a minute (any peer can open one). */
  readonly #refusals: PeerLog;
  readonly budget: QuoteBudget<Opened<Offer>>;

  constructor(private d: ProviderDeps) {
    this.#refusals = new PeerLog({ log: d.log });
    this.budget = d.quoteBudget ?? new QuoteBudget({ ...d.config.quoteBudget, windowMs: d.config.offerLifetimeMs, clock: d.clock });
    for (const [w, cfg] of Object.entries(d.config.workloads)) {
      try {
        this.#executors.set(w, createExecutor(cfg.executor, { log: d.log }));
      } catch (e) {
        // name the workload's key in the config, not the executor's bare field
        if (e instanceof C0Error && e.code === 'CONFIG_INVALID') throw new C0Error(e.code, `provider.workloads.${w}.executor: ${e.message}`, { field: `provider.workloads.${w}.executor${e.field ? `.${e.field}` : ''}` });
        throw e;
      }
    }
  }

  get advert(): Opened<Advert> | undefined {
    return this.#advert;
  }

  get running(): number {
    return this.#running.size;
  }

  /**
   * Has this job started here (running now, or started since)? An open order's
   * won claim stops holding a pending slot once its job has started, even when
   * it started and finished between two of the claimer's ticks.
   */
  runs(job: string): boolean {
    return this.#running.has(job) || this.#started.has(job);
  }

  /**
   * Start: first what an earlier run of this node left (crash-recovery.ts: the exec groups a crash left behind are
   * ended, the failed receipt EXEC_PROVIDER_CRASHED of each job they or a run note name is signed, receipts kept
   * untried are sent), then the first advert.
   */
  async start(): Promise<void> {
    await recoverCrashedWork({
      signer: this.d.signer,
      did: this.d.did,
      clock: this.d.clock,
      log: this.d.log,
      state: this.d.state,
      ...(this.d.processes ? { processes: this.d.processes } : {}),
      keep: (r, offer, job) => this.d.onReceipt(r, offer, job),
      publish: (r) => this.d.publish('receipt', r),
      ...(this.d.deliver ? { deliver: this.d.deliver } : {}),
      ...(this.d.resumeDelivery ? { resumeDelivery: this.d.resumeDelivery } : {}),
      ...(this.d.onOutcome ? { onOutcome: this.d.onOutcome } : {}),
      shape: (r) => this.#shape(r),
    });
    await this.publishAdvert();
  }

  /**
   * Stop: no more offers or runs; every run in flight is aborted and ends with its signed receipt (EXEC_ABORTED). Resolves
   * once each exec run's receipt is stored and written on its stream (or handed to `deliver`), at most `waitMs` later:
   * the first step of the node's stop (OverlayNode.interruptRuns), while the network, the delivery and the store still
   * work. A second call waits for the first.
   */
  stop(waitMs = STOP_DRAIN_MS): Promise<void> {
    this.#stopDone ??= this.#stop(waitMs);
    return this.#stopDone;
  }

  async #stop(waitMs: number): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#refusals.stop();
    this.budget.close();
    for (const c of this.#running.values()) c.abort(new C0Error('EXEC_ABORTED', 'provider shutting down'));
    if (this.#inFlight.size === 0) return;
    const late = (await raceTimeout(Promise.allSettled([...this.#inFlight]), waitMs, 'late')) === 'late';
    // what is left keeps going: a receipt stored by then waits untried in the store and is sent at the next start
    if (late) this.d.log.warn({ runs: this.#inFlight.size, waitedMs: waitMs }, 'runs still ending at the stop: their receipts are sent at the next start if they are stored by then');
  }

  /**
   * Sign and publish a new advert (higher seq), and schedule the next before
   * this one expires. A provider that starts before it has gossip peers
   * publishes into nothing: it then signs and publishes a fresh advert again
   * (gossip refuses identical bytes twice) with backoff from `retryMs` until
   * one reaches a peer. Peers that join later get it by sync.
   */
  async publishAdvert(retryMs = 250): Promise<Opened<Advert>> {
    const { config: cfg, clock } = this.d;
    const now = clock();
    const seq = Math.max((await this.d.state.loadSeq()) + 1, now);
    await this.d.state.saveSeq(seq);
    const workloads = Object.keys(cfg.workloads).sort();
    const interval = this.advertInterval();
    const advert: Advert = {
      seq,
      issuedAt: now,
      expiresAt: now + interval.lifetimeMs,
      workloads,
      tier: cfg.tier,
      ...(cfg.region ? { region: cfg.region } : {}),
      hardware: this.d.hardware,
      ...(workloads.length ? { prices: workloads.map((w) => ({ workload: w, unit: cfg.workloads[w]!.unit, price: cfg.workloads[w]!.price })) } : {}),
      boxKey: this.d.box.publicKey,
    };
    const env = seal(T.advert, this.d.pool ? this.d.pool.advert(advert) : advert, this.d.signer);
    this.#advert = env;
    const reached = await this.d.publish('advert', env);
    // Unheard, it is sent again until a peer hears it (every 15 s at most): said once at info, each retry at debug.
    // Before (QA qaOps F10) each retry was an info line, some 5,800 a day for a provider with no peers.
    const fields = { advert: env.address, seq, workloads, reached, lifetimeMs: interval.lifetimeMs };
    if (reached > 0) {
      this.#unheard = false;
      this.d.log.info(fields, 'advert published');
    } else if (!this.#unheard) {
      this.#unheard = true;
      this.d.log.info(fields, 'advert published; no peer heard it yet: retrying until one does (the retries at debug)');
    } else this.d.log.debug(fields, 'advert published again: no peer heard it yet');
    if (!this.#stopped) {
      if (this.#timer) clearTimeout(this.#timer);
      // Republish at half the lifetime so peers never see it lapse; sooner while nobody heard it.
      const next = reached === 0 ? retryMs : interval.everyMs;
      const nextRetry = reached === 0 ? Math.min(retryMs * 2, 15_000) : 250;
      this.#timer = setTimeout(() => void this.publishAdvert(nextRetry).catch((e) => this.d.log.error({ err: e }, 'advert republish failed')), next);
      this.#timer.unref();
    }
    return env;
  }

  /** The advert's lifetime and republish interval in the market as this node sees it now (advert-rate.ts). */
  advertInterval(): AdvertInterval {
    return advertInterval(this.d.liveInMarket?.() ?? 0, this.d.config.advertLifetimeMs, this.d.config.advertTargetPerMarket);
  }

  /**
   * Stop running work on the steward's request (preemption, pool/1 §5): the
   * work ends with a signed `failed` receipt, code EXEC_PREEMPTED. Resolves
   * once that receipt is stored and the slot is free (so the capacity the
   * steward reclaimed is really there), to that receipt. A job not running
   * here (its attempt here failed, its exec has not come yet, or its buyer is
   * gone) resolves to undefined and is barred: an exec of it is refused with
   * the same code (EXEC_PREEMPTED, or EXEC_IDLE_RECLAIMED) until `deadline`
   * (the job's, as the steward gives it; else PREEMPTED_KEEP_MS from now), so
   * the devices the steward releases stay free. A stop asked again while one
   * is under way ends with it (the same receipt); asked again once the job
   * stopped, or of a job not running here, it bars the job (again): asking
   * twice does no harm.
   */
  async preempt(job: string, reason: 'priority' | 'idle' = 'priority', deadline?: number): Promise<Opened<Receipt> | undefined> {
    const c = this.#running.get(job);
    if (!c) {
      // kept on disk before the steward hears `barred` (it then releases the claim)
      await this.#bar(job, reason === 'idle' ? 'EXEC_IDLE_RECLAIMED' : 'EXEC_PREEMPTED', deadline);
      return undefined;
    }
    // a stop asked again while one is under way (a steward restarted before its first request settled) waits for the same end
    let stopping = this.#stopping.get(job);
    if (!stopping) {
      let resolve!: (receipt: Opened<Receipt> | undefined) => void;
      const done = new Promise<Opened<Receipt> | undefined>((ok) => (resolve = ok));
      this.#stopping.set(job, (stopping = { done, resolve }));
      c.abort(
        reason === 'idle'
          ? new C0Error('EXEC_IDLE_RECLAIMED', 'the overlay’s steward reclaimed the devices: the work was measured idle')
          : new C0Error('EXEC_PREEMPTED', 'the overlay’s steward reclaimed the devices for a higher-priority claim'),
      );
    }
    const receipt = await stopping.done;
    // Stopped, but no receipt could be signed (logged): barred like a job not running here, so the answer holds.
    if (!receipt) await this.#bar(job, reason === 'idle' ? 'EXEC_IDLE_RECLAIMED' : 'EXEC_PREEMPTED', deadline);
    return receipt;
  }

  /** Keep a job reclaimed while not running here (preempt), dropping the entries past their time and, over the bound, the oldest. */
  async #bar(job: string, code: 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED', deadline: number | undefined): Promise<void> {
    const now = this.d.clock();
    for (const [j, b] of this.#preempted) if (b.until <= now) this.#preempted.delete(j);
    this.#preempted.delete(job);
    while (this.#preempted.size >= PREEMPTED_MAX) this.#preempted.delete(this.#preempted.keys().next().value!);
    const until = typeof deadline === 'number' && Number.isSafeInteger(deadline) && deadline > now ? deadline : now + PREEMPTED_KEEP_MS;
    this.#preempted.set(job, { code, until });
    await this.d.state.saveBar?.(job, code, until);
  }

  /** Refuse an exec of a job the steward reclaimed while it was not running here (preempt): the bar held here. */
  #checkBarred(job: string): void {
    const b = this.#preempted.get(job);
    if (!b) return;
    if (b.until <= this.d.clock()) {
      this.#preempted.delete(job);
      return;
    }
    throw barredError(b.code);
  }

  /** The same, from the bars kept durably (one set before a restart, or dropped here over PREEMPTED_MAX). */
  async #checkBarKept(job: string): Promise<void> {
    const b = await this.d.state.barOf?.(job);
    if (b && b.until > this.d.clock()) throw barredError(b.code);
  }

  /**
   * Energy spent so far by a running job's attempt here, with its grade, how long it has run (pool/1 §2.7), the units
   * it reports completed (§5.1) and when the attempt started (this node's clock): every figure is the attempt's own,
   * so the steward tells one attempt from the next by `startedAt` and never subtracts across them. How long it has run
   * is measured on the monotonic clock, as the meter's energy is paced by real time: the steward divides the one by
   * the other, and a wall clock stepped by 25 s between two samples would otherwise read 20 W as 3 W (or, stepped
   * back, an idle run as busy for as long as the step).
   */
  usage(job: string): { uj: number; grade: string; elapsedMs: number; startedAt: number; units?: number } | undefined {
    const s = this.#spans.get(job);
    if (!s) return undefined;
    const e = s.span.sample();
    const elapsedMs = Math.max(0, Math.floor((this.d.monoClock ?? monotonicClock)() - s.monoStart));
    return { uj: e.uj, grade: e.grade, elapsedMs, startedAt: s.startedAt, ...(s.units === undefined ? {} : { units: s.units }) };
  }

  /**
   * Why this provider's executor would refuse the job's params (EXEC_BAD_PARAMS: builtin.sha256's rounds over
   * 10,000,000, say), or undefined. Such a job is neither quoted nor claimed: won, it would fail here for the buyer's
   * own params, and the failed receipt would count against this provider.
   */
  paramsRefusal(job: Opened<Job>): C0Error | undefined {
    try {
      this.#executors.get(job.record.workload)?.checkParams?.(job.record.params);
      return undefined;
    } catch (e) {
      return e instanceof C0Error ? e : new C0Error('EXEC_BAD_PARAMS', (e as Error).message);
    }
  }

  /**
   * Whether this provider could take the job at all, whatever the market: a workload it prices, an input within
   * maxInputBytes, params its executor takes (paramsRefusal). The quote path (onJob) and the claimer (canRun) both ask
   * it (#cannotTake), so a job that gets no offer for one of these is not claimed either.
   */
  canTake(job: Opened<Job>): boolean {
    return this.#cannotTake(job) === undefined;
  }

  /** canTake's answer with its reason: what onJob counts the skip as (a workload it prices not is no skip). */
  #cannotTake(job: Opened<Job>): { reason: 'input-too-large' } | { reason: 'bad-params'; refused: C0Error } | { reason: 'no-workload' } | undefined {
    if (job.record.input.size > this.d.config.maxInputBytes) return { reason: 'input-too-large' };
    // params the workload would refuse: won, the job would fail here for the buyer's own params, in this provider's record
    const refused = this.paramsRefusal(job);
    if (refused) return { reason: 'bad-params', refused };
    if (!this.d.config.workloads[job.record.workload]) return { reason: 'no-workload' };
    return undefined;
  }

  /**
   * A job was heard: quote if eligible, able to start it (a free slot, input
   * within bounds, the deadline reachable) and within the quoting budget
   * (quote-budget.ts), and, for a job heard on gossip, among the first
   * `offerRank` on price in this node's view (`invited`: the buyer pushed the
   * job to this provider, which quotes whatever its rank). A job that gets no
   * offer is counted with its reason.
   */
  async onJob(job: Opened<Job>, opts: { invited?: boolean } = {}): Promise<Opened<Offer> | undefined> {
    const advert = this.#advert;
    if (!advert || this.#stopped) return undefined;
    // a store that takes no writes could keep neither the note nor the receipt: no offer for work it would refuse
    if (this.d.storeProblem?.()) return undefined;
    if (job.signer === this.d.did) return undefined;
    if (job.record.order) return undefined; // an open order is claimed (claimer.ts), never quoted
    // quoted once; a job its buyer pushes again once that offer has lapsed (or was released by a selection) is quoted
    // anew: a rescue asks the runner-up whose first offer ran out while the winner ran (second-round review)
    if (this.#offered.has(job.address) && !(opts.invited && !this.offerFor(job.address))) return undefined;
    if (!opts.invited && this.#heldBack.has(job.address)) return undefined;
    if (this.d.pool && !this.d.pool.mayQuote(job)) return undefined;
    const now = this.d.clock();
    const skip = (reason: Parameters<QuoteBudget['skip']>[0], msg: string, extra: Record<string, unknown> = {}) => {
      this.budget.skip(reason);
      this.d.log.debug({ job: job.address, reason, ...extra }, msg);
      return undefined;
    };
    // a job its buyer pushes asks for an offer now (job-push/1), whatever was heard of it: only gossip and sync are judged
    if (!opts.invited && this.#selectedFor(job)) {
      // decided once per job, as `outranked` is: a flood of selections that pushes this one out of #selected (any key
      // can sign one naming any job) does not make a copy of the job heard later quotable again
      this.#holdBack(job.address);
      return skip('decided', 'the job’s buyer has selected already; no offer', { held: 'selection' });
    }
    const failures = this.d.eligibility(job, advert, now);
    if (failures.length) return skip('ineligible', 'not eligible; no offer', { failures: failures.map((f) => f.code) });
    if (this.#running.size >= this.d.config.slots) return skip('no-free-slot', 'all slots busy; no offer');
    const cannot = this.#cannotTake(job);
    if (cannot?.reason === 'input-too-large') return skip('input-too-large', 'the input is larger than this provider takes; no offer');
    if (cannot?.reason === 'bad-params') return skip('bad-params', 'the job’s params are not ones this workload takes; no offer', { code: cannot.refused.code, why: cannot.refused.message });
    const w = this.d.config.workloads[job.record.workload];
    if (cannot || !w) return undefined;
    const durationMs = quotedDurationMs(w, job.record.input.size);
    const price = quotePrice(w, job.record.input.size, durationMs);
    if (price.currency !== job.record.maxPrice.currency || compareMoney(price, job.record.maxPrice) > 0) return skip('price', 'our price is above the job’s maximum; no offer', { price });
    if (this.d.pool?.mayQuoteAt?.(job, price) === false) return undefined;
    // The offer must let the work finish before the deadline: startBy + duration ≤ deadline.
    const latestStart = job.record.deadline - durationMs;
    const expiresAt = Math.min(now + this.d.config.offerLifetimeMs, latestStart);
    if (expiresAt <= now) return skip('deadline', 'the deadline cannot be met; no offer');
    const over = this.budget.check(job.signer, now);
    if (over) return skip(over, 'quoting budget spent; no offer', { buyer: job.signer });
    // after the budget too (a store read; a job over budget is skipped either way): what this node holds may say the
    // job is decided already, or that it quoted on it before a restart (anti-entropy brings a buyer's earlier jobs)
    if (this.d.held && !opts.invited) {
      const held = await this.d.held(job);
      if (held === 'quoted') return skip('already-quoted', 'this provider quoted on the job before; no offer', { held });
      if (held) {
        this.#holdBack(job.address);
        return skip('decided', 'the job is decided in what this node holds; no offer', { held });
      }
      // meanwhile: the provider stopped, another copy of the job was quoted, or another job took the budget
      if (this.#stopped || this.#offered.has(job.address)) return undefined;
      const again = this.budget.check(job.signer, now);
      if (again) return skip(again, 'quoting budget spent; no offer', { buyer: job.signer });
    }
    // after the budget, which is cheaper (a few map reads; the rank walks the presence view): a flood over budget never pays for the rank
    const rank = this.d.config.offerRank;
    if (!opts.invited && rank > 0 && !job.record.requirements.allowlist && this.d.rankAhead) {
      const ahead = this.d.rankAhead(job, advert, rank, now);
      if (ahead >= rank) {
        // decided once per job: a copy that sync brings again later is not ranked (or counted) again
        this.#holdBack(job.address);
        return skip('outranked', `at least ${rank} live provider(s) rank before this one on price; no offer unless the buyer asks`);
      }
    }
    const offer: Offer = { job: job.address, advert: advert.address, price, durationMs, issuedAt: now, startBy: expiresAt, expiresAt };
    const env = seal(T.offer, offer, this.d.signer);
    this.#offered.add(job.address);
    if (this.#offered.size > 10_000) this.#offered.clear();
    this.budget.add({ job: job.address, buyer: job.signer, expiresAt, record: env });
    await this.d.publish('offer', env, advert, job.signer);
    this.d.log.debug({ job: job.address, offer: env.address, price: `${price.amount} ${price.currency}`, durationMs }, 'offer published');
    return env;
  }

  /** A job not to quote unless its buyer pushes it (outranked, or decided): the last DECIDED_MAX, oldest first out. */
  #holdBack(job: string): void {
    this.#heldBack.delete(job);
    this.#heldBack.add(job);
    while (this.#heldBack.size > DECIDED_MAX) this.#heldBack.delete(this.#heldBack.values().next().value!);
  }

  /**
   * A selection was heard: the buyer has decided the job, so the offer made
   * for it no longer holds quoting budget (the winner's runs, the others are
   * spent). Only the job's buyer, or an authorised decider, can release it.
   */
  onSelection(sel: Opened<Selection>): void {
    this.budget.release(sel.record.job, sel.signer, (signer, buyer) => this.d.selectionAuthority?.(signer, buyer) ?? false);
    // remembered for a job not heard yet (anti-entropy sends selections before jobs): it is not quoted when it comes
    const job = sel.record.job;
    let signers = this.#selected.get(job);
    if (!signers) {
      while (this.#selected.size >= DECIDED_MAX) this.#selected.delete(this.#selected.keys().next().value!);
      this.#selected.set(job, (signers = new Set()));
    }
    // a few signers a job (any key can sign a selection naming any job): past them the oldest goes, so the buyer's own still lands
    if (!signers.has(sel.signer)) {
      if (signers.size >= 8) signers.delete(signers.values().next().value!);
      signers.add(sel.signer);
    }
  }

  /** Whether a selection heard for `job` was signed by its buyer or an authorised decider (onSelection). */
  #selectedFor(job: Opened<Job>): boolean {
    const signers = this.#selected.get(job.address);
    if (!signers) return false;
    for (const s of signers) if (s === job.signer || this.d.selectionAuthority?.(s, job.signer)) return true;
    return false;
  }

  /**
   * Take a slot for work that did not come through exec/1 (a pool member running
   * a job another coordinator dispatched, docs/pools.md "Members run dispatched
   * work inside their slots"); undefined when every slot is busy or the job holds
   * one. The work runs under the slot's signal (aborted by `stop()`) and records
   * its process group with the hooks (docs/node.md "Orphaned work after a crash").
   */
  takeSlot(job: string): SlotRun | undefined {
    if (this.#stopped || this.#running.has(job) || this.#running.size >= this.d.config.slots) return undefined;
    const ctl = new AbortController();
    this.#running.set(job, ctl);
    this.d.onSlotsChanged?.();
    return { signal: ctl.signal, ...this.#groupHooks(job, this.d.clock()) };
  }

  giveSlot(job: string): void {
    if (this.#running.delete(job)) this.d.onSlotsChanged?.();
  }

  /** The live offer this provider made for a job (a pushed job already quoted is answered with it). */
  offerFor(job: string): Opened<Offer> | undefined {
    return this.budget.offerFor(job, this.d.clock())?.record;
  }

  /**
   * Serve one `/c0mpute/exec/1` stream (src/roles/exec-protocol.ts): the
   * header's records are checked (and a slot reserved) before any input is
   * read; then the input is read within the byte budget and the request-phase
   * deadline; then the work runs under the job's own timeout.
   */
  async handleExec(io: ExecIO): Promise<void> {
    const { send } = io;
    let checked: { job: Opened<Job>; offer: Opened<Offer>; input: Uint8Array; ctl: AbortController; keepalive: boolean; takenAt: number };
    try {
      const header = parseExecHeader(await io.next());
      const h = await this.#checkHeader(header, io.peer);
      // the slot is held from here: a hold is timed from it, with or without `ready` (an inline input gets none)
      const mono = this.d.monoClock ?? monotonicClock;
      const takenAt = mono();
      try {
        const input = await readExecInput(io, header, h.job, { maxInputBytes: this.d.config.maxInputBytes, minInputBytesPerSec: this.d.config.execMinInputBytesPerSec, requestMs: this.d.config.execRequestMs, clock: mono, heldSince: takenAt });
        try {
          checked = { ...h, input: this.#checkInput(h.job, input), keepalive: header.keepalive === 'yes', takenAt };
        } catch (e) {
          throw refusedAfterHold(e, Math.round(mono() - takenAt), h.job.record);
        }
        // a stop that came while the input was read: nothing has run yet, so nothing runs
        if (this.#stopped) throw new C0Error('EXEC_BUSY', 'this provider is stopping');
      } catch (e) {
        // Nothing ran: the slot goes back.
        this.#running.delete(h.job.address);
        this.d.onSlotsChanged?.();
        // However the input failed after the slot was taken (its deadline, the caller's end, a refusal of what it sent),
        // a hold past the grace is the buyer's lapse (review s41 D F1); a provider stopping is nobody's.
        const lapse = this.#stopped ? undefined : inputLapse(e);
        if (lapse) this.#inputLapsed(io, h.job, lapse);
        throw e;
      }
    } catch (e) {
      if (!(e instanceof C0Error) || e.code.startsWith('NET_')) throw e;
      // any peer can open exec/1 with one bad frame: an invalid request costs it abuse points (it is hung up on past
      // network.abuse.disconnectAt), and the log gets one line per peer and code, then a count a minute (PeerLog)
      const peer = io.peer ?? 'unknown';
      // another key's exec (EXEC_NOT_BUYER) is a strike too: no flow opens exec/1 for a job another key signed, and the
      // records it replays are public (the buyer publishes its selection before it opens its own exec)
      if ((execRequestInvalid(e.code) || e.code === 'EXEC_NOT_BUYER') && io.peer !== undefined) this.d.strike?.(io.peer);
      this.#refusals.warn(peer, e.code, 'exec request refused', { err: e.message });
      await send({ t: 'refused', code: e.code, message: e.message });
      return;
    }
    // From here (in the same synchronous step as the check of a stop above) the run ends with a receipt, or the
    // refusal below: `stop` waits for it to be stored and sent.
    let handedOff!: () => void;
    const inFlight = new Promise<void>((resolve) => (handedOff = resolve));
    this.#inFlight.add(inFlight);
    try {
      await this.#run(io, checked, handedOff);
    } finally {
      handedOff();
      this.#inFlight.delete(inFlight);
    }
  }

  /**
   * The buyer took a slot (its header checked out) and its input did not come whole and valid in time: the stream's
   * deadline passed (exec-input.ts inputDeadlineMs), or the buyer reset or ended it short, or lost its connection, or
   * sent input that was refused, after holding the slot past INPUT_HOLD_GRACE_MS. It gets no offer from this provider
   * for a while (QuoteBudget.lapsed, doubling with each lapse its work has not made up for), and the log says so once
   * per peer (then a count a minute). Charged to the stream's peer: #checkHeader let only the job's signer open it.
   * Not an abuse strike in itself: a slow link lapses too (a refused frame is one, as it always was). The job is not
   * taken again here (#checkLapsed: EXEC_JOB_LAPSED).
   */
  #inputLapsed(io: ExecIO, job: Opened<Job>, lapse: InputLapse): void {
    this.#lapsedJobs.delete(job.address);
    while (this.#lapsedJobs.size >= LAPSED_JOBS_MAX) this.#lapsedJobs.delete(this.#lapsedJobs.values().next().value!);
    this.#lapsedJobs.add(job.address);
    const pauseMs = this.budget.lapsed(job.signer, lapse.heldMs);
    const { received, expected, ended, heldMs } = lapse;
    this.#refusals.warn(io.peer ?? job.signer, 'EXEC_INPUT_LAPSED', 'exec input lapsed: the buyer held a slot without sending its input in time; no offers to it for a while', { job: job.address, buyer: job.signer, received, expected, ended, heldMs, pauseMs });
  }

  /** The accepted run of `handleExec`: the work, its receipt kept and sent (`handedOff` once it is), then acknowledged or re-delivered. */
  async #run(io: ExecIO, checked: { job: Opened<Job>; offer: Opened<Offer>; input: Uint8Array; ctl: AbortController; keepalive: boolean; takenAt: number }, handedOff: () => void): Promise<void> {
    const { send, signal } = io;
    io.setDeadline(runPhaseMs(checked.job.record, this.d.clock()), 'run');
    // #checkHeader reserved the slot (this.#running) in the same synchronous step as its last check.
    const { job, offer, input, ctl, keepalive } = checked;
    // The offer is taken up: it holds no quoting budget from here on (the slot bounds the work).
    this.budget.release(job.address, job.signer);
    // this process's own freezes while the work runs (a SIGSTOP, a suspended VM): see PROVIDER_STALLED below
    const frozen = (this.#stalls ??= this.d.stalls ?? new StallWatch()).begin();
    // How long the buyer waits for a frame: its silence limit for the keepalives it asked for, else the connection's pings.
    const keepaliveMs = this.d.keepaliveMs ?? EXEC_KEEPALIVE_MS;
    const waits = keepalive ? silenceLimitMs(keepaliveMs) : PROVIDER_STALL_PING_MS;
    // The buyer closed the stream. Frozen meanwhile past what it waits (the freeze still going on counts: after a SIGCONT
    // the stream's end can be read before the watch's next tick), it gave up on this provider: the work is stopped with
    // that code, so what the work itself records of its end (a gang member's run status, docs/training.md) says the
    // receipt's code, not EXEC_BUYER_GONE (QA ffGang F6).
    const onGone = () =>
      ctl.abort(
        frozen.longestFreezeMs() >= waits
          ? new C0Error(PROVIDER_STALLED, `this provider did not run for ${Math.round(frozen.longestFreezeMs() / 1000)} s and its buyer gave up on it meanwhile`)
          : new C0Error('EXEC_BUYER_GONE', 'the buyer closed the stream'),
      );
    signal.addEventListener('abort', onGone, { once: true });
    const startedAt = this.d.clock();
    // Noted before it runs (a pool's work is failed from its dispatch trail after a crash, as its exec groups are).
    // A note that cannot be written (the store's write failed: a full disk) refuses the work before it runs: its
    // receipt could not be kept either, and the buyer fails over at once instead of waiting for a receipt never sent.
    const refusal = this.d.pool ? undefined : await this.#noteRun(job, offer, startedAt);
    if (refusal) {
      frozen.end();
      signal.removeEventListener('abort', onGone);
      this.#running.delete(job.address);
      this.d.onSlotsChanged?.();
      this.#refusals.warn(io.peer ?? 'unknown', refusal.code, 'exec refused: the store takes no writes', { err: refusal.message });
      await send({ t: 'refused', code: refusal.code, message: refusal.message });
      return;
    }
    // The run's time: its timeout, cut at the job's deadline (≤ 90 days away: JOB_DEADLINE_TOO_FAR). The timer is cleared
    // when the run ends (below): a buyer's huge timeoutMs must not leave a timer and its signal behind for months per job.
    const mono = this.d.monoClock ?? monotonicClock;
    const budgetMs = runBudgetMs(job.record, this.d.clock());
    const budgetFrom = mono();
    const deadline = clearableTimeoutSignal(budgetMs);
    const runSignal = AbortSignal.any([ctl.signal, deadline.signal]);
    const span = this.d.meter.start();
    const monoStart = mono();
    this.#spans.set(job.address, { span, startedAt, monoStart });
    let output: Uint8Array | undefined;
    let failure: { code: string; message: string } | undefined;
    let frozeMs: number;
    // A buyer that asked for keepalives gets one every keepaliveMs while the work runs (exec-protocol.ts), so it can
    // tell a stalled link from a long silent run well inside a runner-up's offer.
    let beat: ReturnType<typeof setInterval> | undefined;
    try {
      await send({ t: 'accepted', startedAt, ...(keepalive ? { keepaliveMs } : {}) });
      if (keepalive) beat = setInterval(() => void send({ t: 'keepalive' }).catch(() => {}), keepaliveMs);
      // on the monotonic clock: a wall clock stepped back would hold every progress event back as long
      let lastProgress = -Infinity;
      // A pool's output guard is its coordinator's (POOL_OUTPUT_EMPTY); this provider's own work goes through the same one.
      const run = this.d.pool ? (c: ExecContext) => this.d.pool!.run(job, offer, c) : async (c: ExecContext) => guardOutput(await this.#executors.get(job.record.workload)!.run(c));
      output = await run({
        input,
        ...(job.record.params === undefined ? {} : { params: job.record.params }),
        signal: runSignal,
        maxOutputBytes: this.d.config.maxOutputBytes,
        ...(this.d.execHost ? { host: this.d.execHost } : {}),
        // A pool's work is failed from its dispatch trail after a crash (POOL_COORDINATOR_LOST): its record carries no
        // envelopes, so the restart ends the group without signing a second failed receipt.
        ...this.#groupHooks(job.address, startedAt, this.d.pool ? undefined : { job, offer }),
        onProgress: (p) => {
          const sp = this.#spans.get(job.address);
          if (sp && p.units !== undefined) sp.units = p.units;
          const t = mono();
          if (t - lastProgress < 100 && p.fraction !== 1) return;
          lastProgress = t;
          void send({ t: 'progress', message: p.message, ...(p.fraction === undefined ? {} : { permille: Math.round(p.fraction * 1000) }) }).catch(() => {});
        },
      });
    } catch (e) {
      // Cut at a code-point boundary: a message may quote the buyer's params, and half a surrogate pair would make the receipt unsealable.
      if (e instanceof C0Error) failure = { code: e.code, message: truncateText(e.message, 1000) };
      else failure = { code: 'EXEC_CRASHED', message: truncateText(String((e as Error)?.message ?? e), 1000) };
      // What the signed receipt leaves out (executors.ts: the back end's URL without userinfo or query, the command, the
      // local error) is for this operator only.
      if (e instanceof C0Error && e.detail) this.d.log.debug({ job: job.address, failure: e.code, ...e.detail }, 'work failed: what the receipt does not say');
    } finally {
      clearInterval(beat);
      signal.removeEventListener('abort', onGone);
      deadline.clear();
      // read before the watch ends (an ended watch counts no freeze still going on)
      frozeMs = frozen.longestFreezeMs();
      frozen.end();
    }
    // The buyer closed the stream while this process was frozen longer than the buyer waits for a frame (its silence
    // limit for the keepalives it asked for, else the connection's 30 s pings): it gave up on this provider, which
    // is this provider's failure, not a buyer gone (QA qaMatch F10: a provider SIGSTOPped 30 s signed EXEC_BUYER_GONE
    // blaming its buyer, a code reputation counts for nobody). The buyer's node countersigns this code when the
    // receipt reaches it (docs/market.md), so it counts against this provider there.
    // Work that finished during or after such a freeze is the same failure (QA qaOrd F4: SIGSTOPped 35 s on a 20 s job,
    // it signed `completed` for output its buyer never received, having signed a non-delivery): the buyer closed the
    // stream, or, having asked for keepalives, it gave up by its own rule (no frame within its silence limit), whether
    // or not this process has read the stream's end yet (after a SIGCONT the work's end can come first). An unfrozen
    // run signs what it did, as before.
    const gaveUp = failure ? failure.code === 'EXEC_BUYER_GONE' || failure.code === PROVIDER_STALLED : signal.aborted || keepalive;
    if (gaveUp && frozeMs >= waits) {
      const finished = failure === undefined;
      failure = { code: PROVIDER_STALLED, message: `this provider did not run for ${Math.round(frozeMs / 1000)} s while the work ran, and its buyer gave up on it meanwhile (${signal.aborted ? 'the buyer closed the stream' : `no frame for longer than the ${Math.round(waits / 1000)} s it waits`})${finished ? '; the work finished, but its output was not delivered' : ''}` };
      output = undefined;
      this.d.log.warn({ job: job.address, frozeMs: Math.round(frozeMs), finished }, 'this process was frozen while the work ran and the buyer gave up on it: signed failed EXEC_PROVIDER_STALLED');
    }
    const ranMs = mono() - budgetFrom;
    const energy = span.stop();
    this.#spans.delete(job.address);
    const completedAt = Math.max(this.d.clock(), startedAt);
    // Work that returned after its time (this process stopped while it ran, and its end raced the deadline's timer
    // when it ran again) is not done in time: failed, never `completed` past the deadline (run-budget.ts).
    const late = failure ? undefined : overran({ deadline: job.record.deadline, completedAt, ranMs, budgetMs });
    if (late) {
      failure = late;
      output = undefined;
      this.d.log.warn({ job: job.address, deadline: job.record.deadline, completedAt, ranMs: Math.round(ranMs), budgetMs }, 'work returned after its time (this process did not run in time to stop it): signed failed EXEC_TIMEOUT');
    }
    let receipt: Receipt | undefined;
    let env: Opened<Receipt> | undefined;
    let stored = false;
    try {
      // A pool's failed work that ran on another member: this node's meter measured only its wait (pool hooks).
      const billed = this.d.pool?.energy ? this.d.pool.energy(job.address, energy, failure !== undefined) : energy;
      receipt = this.#shape(receiptFor(job, offer, { startedAt, completedAt, energy: billed, ...(failure ? { failure } : {}), ...(output ? { output } : {}) }));
      try {
        env = seal(T.receipt, receipt, this.d.signer);
      } catch (e) {
        this.d.log.error({ job: job.address, failure: failure?.code, err: (e as Error).message }, 'the receipt could not be signed: the buyer gets none; the slot is freed');
        throw e;
      }
      await this.d.onReceipt(env, offer, job);
      stored = true;
      // Work done for the buyer: the job's whole slot time, from the slot taken (its input's upload included) to its
      // receipt kept, forgives lapses (QuoteBudget.delivered; a failed run's does not). Before, only the run counted, and
      // a buyer of big inputs and short runs on a poor link was never forgiven (review s41 D round 2 F2).
      if (receipt.status === 'completed') this.budget.delivered(job.signer, mono() - checked.takenAt);
    } finally {
      // Released only once the receipt is stored (or could not be signed), so a request in between cannot run the job again.
      this.#running.delete(job.address);
      this.d.onSlotsChanged?.();
      this.#stopping.get(job.address)?.resolve(env);
      this.#stopping.delete(job.address);
      // A pool's job stays in flight until `closed` below; without a stored receipt that never comes.
      if (!stored) this.d.pool?.abandoned?.(job.address);
      // no receipt kept: the note must not make the next start sign one for work that ended here
      if (!stored && !this.d.pool) await this.d.state.dropNote?.(job.address).catch(() => undefined);
    }
    this.d.onOutcome?.(receipt.status, receipt.workload);
    // A buyer this provider has worked for is no longer held to the total quoting budget.
    this.budget.markKnownBuyer(job.signer);
    this.d.log.info({ job: job.address, receipt: env.address, status: receipt.status, failure: failure?.code, ms: completedAt - startedAt, energy }, 'work finished');
    let written = false;
    try {
      if (keepalive) await send({ t: 'keepalive', last: 'yes' }); // the buyer stops its silence watch: the output's transfer is the link's
      if (output) for (const c of chunks(output)) await send({ t: 'output', data: c });
      await send({ t: 'receipt', receipt: env.bytes });
      written = true;
    } catch {
      this.d.log.warn({ job: job.address }, 'buyer gone before the receipt was delivered; it is gossiped, and sent to the buyer directly (now, and when it connects again)');
      this.d.deliver?.(env);
    }
    // stored and on its way: a stop need not wait for the gossip or the buyer's acknowledgement (the receipt's wait
    // for its buyer is in the store until then, ProviderDeps.acknowledged)
    handedOff();
    // A write that returned is in this node's buffers, not yet in the buyer's hands: the receipt counts as delivered
    // once the buyer shows it got it (receiptAcknowledged; meanwhile it is gossiped, and a pool's job is closed).
    const taken = written ? this.#receiptTaken(io, receiptAckWaitMs(output?.length ?? 0, job.record.deadline - this.d.clock(), this.d.receiptAckMs)) : undefined;
    await this.d.publish('receipt', env).catch((e) => this.d.log.warn({ err: (e as Error).message }, 'receipt gossip failed'));
    await this.d.pool?.closed(env).catch((e) => this.d.log.warn({ err: (e as Error).message }, 'pool: closing the job failed'));
    const why = await taken;
    if (why !== undefined && receiptAcknowledged(why, keepalive)) this.d.acknowledged?.(env);
    else if (why !== undefined) {
      // this node stopping closes the stream itself: the buyer may well have the receipt (a clean stop's EXEC_ABORTED
      // was countersigned while this warned that it was not shown; QA pass, session 48), so that is said plainly
      if (this.#stopped) this.d.log.info({ job: job.address, why }, 'stopping before the buyer showed it got the receipt: it is gossiped, and sent to the buyer directly (now, and at the next start until the buyer answers)');
      else this.d.log.warn({ job: job.address, why }, 'the buyer did not show it got the receipt; it is gossiped, and sent to the buyer directly (now, and when it connects again)');
      this.d.deliver?.(env);
    }
  }

  /**
   * How the buyer left the exec stream after the receipt was written: `closed` or `reset` (which of them counts:
   * receiptAcknowledged), `lost` (the stream ended from this side: its connection died), `silent` (nothing within
   * the wait, receiptAckWaitMs: a half-open link), or `unknown` (the stream cannot tell).
   */
  async #receiptTaken(io: ExecIO, waitMs: number): Promise<ReceiptAck> {
    if (!io.callerEnded) return 'unknown';
    return raceTimeout(io.callerEnded(), waitMs, 'silent' as const);
  }

  /**
   * Note accepted work before it runs (ProviderDeps.state.noteRun). A note that cannot be written is the refusal
   * EXEC_PROVIDER_STORE_FAILED (the work must not run: a crash during it would sign no receipt, and the receipt
   * itself could not be kept).
   */
  async #noteRun(job: Opened<Job>, offer: Opened<Offer>, startedAt: number): Promise<C0Error | undefined> {
    try {
      await this.d.state.noteRun?.({ job: job.address, jobEnvelope: job.bytes, offerEnvelope: offer.bytes, startedAt }, job.record.deadline);
      return undefined;
    } catch (e) {
      this.d.log.warn({ job: job.address, err: (e as Error).message }, 'could not note the work before it runs: refused');
      return storeRefusal((e as Error).message);
    }
  }

  /** A receipt as signed: the pool's when this provider is a pool member. */
  #shape(r: Receipt): Receipt {
    return this.d.pool ? this.d.pool.receipt(r) : r;
  }

  /**
   * Record the exec executor's process group while it runs (ProviderDeps.processes); with the job's envelopes when
   * the restart is to sign its failed receipt (EXEC_PROVIDER_CRASHED), else it only ends the group.
   */
  #groupHooks(job: string, startedAt: number, envelopes?: { job: Opened<Job>; offer: Opened<Offer> }): { onSpawn?: (pid: number) => void; onExit?: (pid: number) => void } {
    const reg = this.d.processes;
    if (!reg) return {};
    const env = envelopes ? { jobEnvelope: Buffer.from(envelopes.job.bytes).toString('base64'), offerEnvelope: Buffer.from(envelopes.offer.bytes).toString('base64') } : {};
    return {
      onSpawn: (pid) => reg.add({ pid, pgid: pid, job, startedAt, procStart: procStartTime(pid) ?? '', ...env }),
      onExit: (pid) => reg.remove(pid),
    };
  }

  /**
   * The header's records: everything that can be checked before the input is read. Reserves the slot. `peer`: the
   * stream's remote PeerId (absent: unknown, as in tests without a network).
   */
  async #checkHeader(req: ExecHeader, peer: string | undefined): Promise<{ job: Opened<Job>; offer: Opened<Offer>; ctl: AbortController }> {
    const job = open(req.job, T.job);
    // An open order's winning claim stands where an auction's offer stands (same job, signer, address and price; no
    // startBy, so the EXEC_OFFER_LAPSED check below never refuses one). A won claim stops being opened once it ran here
    // (EXEC_ALREADY_RUN), once its input lapsed here (EXEC_JOB_LAPSED), while its buyer is paused (EXEC_BUYER_PAUSED),
    // and at the job's deadline.
    const offer = openTaken(req.offer, job);
    const selection: Opened<Selection> = open(req.selection, T.selection);
    const now = this.d.clock();
    const problem = this.d.storeProblem?.();
    if (problem !== undefined) throw storeRefusal(problem);
    if (offer.signer !== this.d.did) throw new C0Error('EXEC_NOT_MY_OFFER', 'the offer was not signed by this provider');
    if (offer.record.job !== job.address) throw new C0Error('EXEC_OFFER_MISMATCH', 'the offer answers another job');
    if (selection.record.job !== job.address || selection.record.winner !== offer.address) throw new C0Error('EXEC_NOT_SELECTED', 'the selection does not name this offer as the winner of this job');
    const authorised = selection.signer === job.signer || (this.d.selectionAuthority?.(selection.signer, job.signer) ?? false);
    if (!authorised || selection.record.buyer !== job.signer) throw new C0Error('EXEC_SELECTION_UNAUTHORISED', 'the selection is not signed by the job’s buyer (or the overlay’s steward)');
    // Only the job's buyer may open its exec (its DID and its PeerId are one key): the job, the offer and the selection
    // are public (gossiped; the buyer publishes its selection before it opens its exec), so without this a third party
    // could take the slot first, get the honest buyer refused EXEC_ALREADY_RUN and, by stalling, paused (review s40 F1).
    // Every flow that opens exec/1 (Buyer.attempt: auctions, orders, gangs, training) does so for a job its own key
    // signed; a steward's selection is signed by the steward, but the exec is still opened by the buyer.
    if (peer !== undefined && peer !== peerIdFromDid(job.signer).toString()) throw new C0Error('EXEC_NOT_BUYER', 'only the job’s buyer (its signer’s peer) may open its exec');
    if (now > offer.record.startBy) throw new C0Error('EXEC_OFFER_LAPSED', 'the offer’s start-by time has passed');
    if (now >= job.record.deadline) throw new C0Error('EXEC_DEADLINE_PASSED', 'the job’s deadline has passed');
    this.#checkLapsed(job);
    if (job.record.input.size > this.d.config.maxInputBytes) throw new C0Error('EXEC_INPUT_TOO_LARGE', `the job's input of ${job.record.input.size} bytes exceeds this provider's ${this.d.config.maxInputBytes}`);
    this.#checkBarred(job.address);
    await this.#checkBarKept(job.address);
    if (this.#running.has(job.address) || (await this.d.state.hasReceiptFor(job.address))) throw new C0Error('EXEC_ALREADY_RUN', 'this job already ran here');
    if (this.#running.size >= this.d.config.slots) throw new C0Error('EXEC_BUSY', 'all slots are busy');
    if (!this.#executors.has(job.record.workload)) throw new C0Error('EXEC_WORKLOAD_UNKNOWN', `this provider does not run ${job.record.workload}`);
    if (this.d.steward) await this.#checkAdmitted(job, req.admission, this.d.steward);
    // Checked again after the await above and reserved in this same synchronous step: two requests at once
    // must not both pass (the same job run twice, or more jobs than slots), and a stop that came meanwhile bars it.
    if (this.#stopped) throw new C0Error('EXEC_BUSY', 'this provider is stopping');
    this.#checkBarred(job.address);
    this.#checkLapsed(job);
    if (this.#running.has(job.address)) throw new C0Error('EXEC_ALREADY_RUN', 'this job already ran here');
    if (this.#running.size >= this.d.config.slots) throw new C0Error('EXEC_BUSY', 'all slots are busy');
    const ctl = new AbortController();
    this.#running.set(job.address, ctl);
    if (this.#started.size >= 4096) this.#started.delete(this.#started.values().next().value!);
    this.#started.add(job.address);
    this.d.onSlotsChanged?.();
    return { job, offer, ctl };
  }

  /**
   * Refuse an exec whose input lapsed here before (EXEC_JOB_LAPSED: the job is not taken again, with its offer or
   * claim or any other), or whose buyer is in a lapse pause (EXEC_BUYER_PAUSED: none of its jobs gets a slot until the
   * pause is over, as none gets an offer or a claim). A pause stopped only new offers and claims before, so a buyer
   * re-opened what it had already won at once (review s41 D round 2 F1). Neither is an abuse strike: an honest buyer
   * whose link dropped may retry, and the refusal sends it to its runner-up.
   */
  #checkLapsed(job: Opened<Job>): void {
    if (this.#lapsedJobs.has(job.address)) throw new C0Error('EXEC_JOB_LAPSED', 'this job’s exec input lapsed here: it is not taken again');
    if (this.budget.paused(job.signer)) throw new C0Error('EXEC_BUYER_PAUSED', 'an exec input of this buyer’s lapsed here lately: no slot for it until its pause is over');
  }

  /**
   * pool/1 on this overlay: the job's claim was admitted by the steward this node names. The buyer's proof when it
   * admits the job's own address (a single job); else (a gang member job, or a buyer before this version that sends
   * none) the steward's answer for this job when asked; refused EXEC_NOT_ADMITTED otherwise (admission-proof.ts).
   */
  async #checkAdmitted(job: Opened<Job>, proof: Uint8Array | undefined, steward: NonNullable<ProviderDeps['steward']>): Promise<void> {
    let refused: unknown;
    if (proof) {
      try {
        checkAdmission(job, proof, steward.did, 'header');
        return;
      } catch (e) {
        refused = e;
      }
    }
    const given = await steward.admissionOf?.(job).catch((e) => {
      this.d.log.debug({ job: job.address, err: (e as Error).message }, 'the steward gave no admission for this exec');
      return undefined;
    });
    // the steward had none: the header's refusal says more (why the buyer's proof did not bind)
    if (!given && refused) throw refused;
    checkAdmission(job, given, steward.did, 'steward');
  }

  /** The input as received: unsealed, and exactly the job's (size and hash). */
  #checkInput(job: Opened<Job>, received: Uint8Array): Uint8Array {
    const input = job.record.inputSealed === 'yes' ? unseal(received, this.d.box) : received;
    if (input.length > this.d.config.maxInputBytes) throw new C0Error('EXEC_INPUT_TOO_LARGE', `input of ${input.length} bytes exceeds ${this.d.config.maxInputBytes}`);
    if (input.length !== job.record.input.size || hashHex(input) !== job.record.input.hash) throw new C0Error('EXEC_INPUT_MISMATCH', 'the input does not match the job’s input hash and size');
    return input;
  }
}

/** An exec of a job the steward reclaimed before it ran here (Provider.preempt). */
function barredError(code: 'EXEC_PREEMPTED' | 'EXEC_IDLE_RECLAIMED'): C0Error {
  return new C0Error(code, code === 'EXEC_IDLE_RECLAIMED' ? 'the overlay’s steward reclaimed this job’s devices before it ran here' : 'the overlay’s steward preempted this job for a higher-priority claim before it ran here');
}
