/**
 * The steward's admission and its line of queued claims (pool/1 §4, §6.2):
 * the `admit` op of `/c0mpute/steward/1`. Admit → an `Admitted` entry is
 * appended (durably, preempting first when needed) and the buyer proceeds.
 * Queue → the claim is written to the queue store (synced,
 * src/roles/steward-queue.ts), the buyer is told why and its claim waits on
 * the open stream; queued claims are decided again, in arrival order, one at
 * a time, whenever capacity frees. After a restart the queue comes back with
 * no buyer attached; a buyer re-asking with the same job keeps its place, and
 * a claim whose buyer is away holds the line for at most `reaskGraceMs`.
 * Asking again for a job already admitted answers `admitted` again. Deny →
 * the buyer is told why; nothing is recorded. Part of src/roles/steward.ts.
 *
 * The line goes first (docs/overlays.md "The line goes first"): before a
 * fresh claim — a job here, a gang in src/roles/steward-gangs.ts — is
 * decided, the line is served in the same section, so capacity that freed
 * goes to the claims already waiting, in arrival order, and the newcomer gets
 * what is left. While a claim that would be admitted is held for its away
 * buyer, a newcomer that would be admitted is queued behind it
 * (`LINE_AHEAD`); one that can never fit is still denied (§4.2).
 *
 * Every decision that can lead to an `Admitted` append — a fresh claim, a
 * queued claim decided again, a gang (src/roles/steward-gangs.ts) — runs in
 * the steward's one admission section (`serial`, src/util/serial.ts): decide,
 * preempt if needed, decide again, append. The next decision sees the book
 * after the previous append, so two claims are never admitted against the
 * same free devices or energy (the ledger's append checks only duplicates and
 * arithmetic). A `Released` is appended outside the section; appendAdmitted
 * re-checks the decision on the book its entry lands on (src/roles/
 * steward-reclaim.ts). Sends to the buyer stay outside the section.
 */
import { C0Error } from '../errors.js';
import { open, type Opened } from '../records/envelope.js';
import { T, type Energy, type Job } from '../records/kinds.js';
import { checkClaim, type Claim, type QueueReason, type Verdict } from '../pool/admission.js';
import { buyersOf, type Tree } from '../pool/tree.js';
import type { OpenClaim } from '../pool/usage.js';
import type { Ledger } from '../ledger/store.js';
import type { Serial } from '../util/serial.js';
import { monotonicClock } from '../util/clock.js';
import { ClaimQueueStore, type QueuedClaimRecord } from './steward-queue.js';
import type { ClaimAccounts } from './steward-accounts.js';
import type { GangCite, Gangs } from './steward-gangs.js';
import { appendAdmitted, type Decided, type Reclaimer } from './steward-reclaim.js';
import { MAX_QUEUED, MAX_QUEUED_PER_BUYER, REASK_GRACE_MS, type StewardConfig, type StewardPorts, type StewardStream } from './steward-ports.js';
import { setLongTimeout, type LongTimer } from '../util/timers.js';
import { KeyedBuckets, type BucketSpec } from '../net/rate-limit.js';

/**
 * The steward's own queue reason, beside pool/1's (§4.5): the claim fits now,
 * but a claim ahead of it in line that would be admitted is held for its
 * buyer, who is away (after a restart).
 */
export const LINE_AHEAD = 'LINE_AHEAD';

/** A Queue verdict as the steward reports it: pool/1's reasons, or LINE_AHEAD. */
export type QueueVerdict = Omit<Verdict & { verdict: 'Queue' }, 'reason' | 'reasons'> & { reason: QueueReason | typeof LINE_AHEAD; reasons: Array<QueueReason | typeof LINE_AHEAD> };

/** The verdict of a claim that would be admitted but waits behind a held line. */
export function lineAhead(claim: Claim): QueueVerdict {
  return { verdict: 'Queue', claim: claim.id, entitlement: claim.entitlement, reason: LINE_AHEAD, reasons: [LINE_AHEAD], estimate: claim.estimate, devices: claim.gang_size * claim.devices_per_member };
}

/**
 * The reason of the `expired` frame that ends the ask of a claim its buyer withdrew while it waited in line or was
 * being decided (AdmissionLine.withdraw): a final verdict to any client (`Expired`), nothing admitted or left open.
 */
export const WITHDRAWN = 'WITHDRAWN';

/** Thrown by the `Admitted` append's precondition when the claim was withdrawn meanwhile; never leaves this module. */
const CLAIM_WITHDRAWN = 'STEWARD_CLAIM_WITHDRAWN';

/** What a decision in the admission section came to; the buyer is told outside it. */
type Outcome =
  | { t: 'admitted'; admit: Verdict & { verdict: 'Admit' }; seq: number; entry: string }
  | { t: 'denied'; v: Verdict & { verdict: 'Deny' } }
  | { t: 'expired'; v: QueueVerdict }
  | { t: 'withdrawn' }
  | { t: 'failed'; err: unknown };

/**
 * What ends a wait in line: an outcome, or no answer at all on this stream (the steward stops; the buyer asked again
 * on another stream; the stream closed under the wait: the buyer left).
 */
type Wake = Outcome | { gone: 'stopping' | 'superseded' | 'left' };

/** A fresh ask, after the section: answered again, decided, or waiting in line. */
/** `reasked`: a claim already in line asked again (capacity may have freed while its buyer was away); `wake` ends this ask's wait. */
type Asked = { again: OpenClaim } | { outcome: Outcome } | { wait: Waiting; got: Promise<Wake>; wake: (d: Wake) => void; reasked?: true };

/**
 * An ask for a claim not answered yet: from its arrival (before it waits for the admission section) until its
 * decision is taken (AdmissionLine.askInFlight). A `withdraw` of its claim arriving meanwhile marks it, and the
 * decision that follows admits nothing (or releases at once what it appended). One per ask on an open stream: bounded
 * as the streams are, never by what a withdraw names.
 */
export interface AskInFlight {
  readonly claim: string;
  readonly buyer: string;
  withdrawn: boolean;
  /** The ask is decided: no longer marked by a withdraw. */
  done(): void;
}

/** What a withdraw did to a claim the accounts do not hold (AdmissionLine.withdraw). */
export type LineWithdrawn = 'dequeued' | 'noted';

interface Waiting {
  /** arrival number (the place in line; the queue store's key) */
  n: number;
  claim: Claim;
  job: Opened<Job>;
  since: number;
  verdict: QueueVerdict;
  /** The buyer's open stream; absent while the buyer is away (restored after a restart, or its stream failed). */
  wake?: (d: Wake) => void;
  expire?: LongTimer;
  grace?: LongTimer;
  /**
   * The re-ask grace is spent only while its buyer is away, summed over its absences (`awayMs`, and the one under way
   * since `awayAt`), so a re-ask on a stream that closes at once does not buy a fresh grace (a buyer re-asking so could
   * hold the line, its claim never admitted, for as long as it liked: s35k). A buyer back for a whole grace (since
   * `backAt`) has it whole again. Monotonic times.
   */
  awayMs?: number;
  awayAt?: number;
  backAt?: number;
  /** Its buyer withdrew it while a pass was deciding it (out of line, before its outcome): not admitted, or released at once. */
  withdrawn?: boolean;
}

export interface AdmitRequest {
  op: 'admit';
  job: Uint8Array;
  entitlement: string;
  class?: string;
  estimate?: Energy;
  /** A member job of an admitted gang: the claim it runs under (src/roles/steward-gangs.ts). */
  gang?: GangCite;
}

function claimFor(job: Opened<Job>, req: Pick<AdmitRequest, 'entitlement' | 'class'>, estimate: Energy): Claim {
  return {
    id: job.address,
    entitlement: req.entitlement,
    ...(req.class ? { class: req.class } : {}),
    gang_size: 1,
    // A job occupies its GPUs; a CPU-only job occupies one machine slot.
    devices_per_member: job.record.requirements.gpu?.count ?? 1,
    estimate,
  };
}

export interface AdmissionDeps {
  ports: StewardPorts;
  ledger: Ledger;
  cfg: StewardConfig;
  accounts: ClaimAccounts;
  reclaim: Reclaimer;
  stopped: () => boolean;
  /** Append a ledger entry and publish the new head. */
  append: Ledger['append'];
  /** The steward's admission section, shared with the gangs: every decision that can append `Admitted` runs in it. */
  serial: Serial;
  /** Gang claims: a job citing one is bound to it instead of claiming alone (src/roles/steward-gangs.ts). */
  gangs?: Pick<Gangs, 'admitMember'>;
  /** The tree as loaded at this start: who may claim under each entitlement now (a restored claim is checked again). */
  tree: Tree;
}

/** Whether the tree lets `did` claim under `entitlement` (requireEntitled). */
function isEntitled(tree: Tree, entitlement: string, did: string): boolean {
  const buyers = buyersOf(tree, entitlement);
  return buyers === undefined || buyers.has(did);
}

/**
 * Refuse `did` a claim under `entitlement` unless the tree lets it claim there (its `buyers`, or the nearest
 * ancestor's: src/pool/tree.ts buyersOf; no list on the path: any member may). Asked before anything is decided,
 * stored, queued or appended: on `admit`, `admit-gang` and a managed `select` (docs/overlays.md "Who may claim under
 * an entitlement"). An unknown entitlement is left to admission, which denies it.
 */
export function requireEntitled(tree: Tree, entitlement: string, did: string): void {
  if (isEntitled(tree, entitlement, did)) return;
  throw new C0Error('STEWARD_NOT_ENTITLED', `${did} may not claim under entitlement ${entitlement}: it is not among the buyers the steward's tree lists for it`, { field: 'entitlement', detail: { entitlement, did } });
}

/**
 * A claim's energy estimate (pool/1 §2.6): the buyer's figure, or one derived
 * from the ledger's measured history of the class it names. `missing` is the
 * message when it gives neither.
 *
 * The buyer's figure is its declaration of what work not yet run will cost: a
 * prediction, never a reading. Its grade is capped at `ModelBased` as a
 * derived estimate's is (§2.6: "a figure for the *next* run is a prediction";
 * §2.3: `HwShunt` asserts a counter was read for this work, which no claim can
 * have before it runs). A `HwShunt` estimate is taken as `ModelBased` — a
 * grade lowered, never raised; the answer's `reserved.grade` shows it — and
 * `ModelBased` or `Estimator` as declared.
 */
export function claimEstimate(req: { estimate?: Energy; class?: string }, ledger: Pick<Ledger, 'book'>, cfg: Pick<StewardConfig, 'requiredEvidence'>, missing: string): Energy {
  if (req.estimate) return asPrediction(req.estimate);
  if (!req.class) throw new C0Error('STEWARD_NO_ESTIMATE', missing, { field: 'estimate' });
  const d = ledger.book.estimate(req.class, { required: cfg.requiredEvidence });
  if (!d.ok) throw new C0Error('STEWARD_NO_ESTIMATE', `no estimate for class ${req.class}: ${d.evidence} of ${d.seen} observations are evidence, ${d.required} needed`, { field: 'estimate', detail: d });
  return d.estimate;
}

/** A buyer's estimate at most `ModelBased` (claimEstimate); a malformed one is left for checkClaim to refuse. */
function asPrediction(e: Energy): Energy {
  const x = e as unknown as { uj?: unknown; grade?: unknown } | null;
  if (typeof x === 'object' && x !== null && x.grade === 'HwShunt') return { uj: x.uj as number, grade: 'ModelBased' };
  return e;
}

/**
 * A buyer's claims withdrawn with nothing run (released with no selection named and no receipt, or taken out of the
 * line): each such round writes an `Admitted` and a `Released` entry to the ledger, which is never pruned, the job to
 * the store and two info lines, and one entitled key did 85 a second (review s42 R7 F1: a 1 GiB disk in
 * under two hours). Past this budget its next new claim is refused STEWARD_RATE_LIMITED until a token returns;
 * claims that run cost nothing, and a claim asked again (its answer lost) is never refused.
 */
export const UNRUN_WITHDRAWS: BucketSpec = { ratePerSec: 0.5, burst: 64 };

export class AdmissionLine {
  #queue: Waiting[] = [];
  /** Each buyer's budget of claims withdrawn unrun (UNRUN_WITHDRAWS). */
  readonly #unrun: KeyedBuckets;
  /** A pass over the line is asked for and has not started yet. */
  #passAsked = false;
  /** Asks not decided yet, by claim (askInFlight): what a withdraw of a claim not held yet marks. */
  readonly #asks = new Map<string, Set<AskInFlight>>();
  /** Queued claims dropped since the last summary line (their buyers left and did not ask again), and its timer. */
  #dropped = 0;
  #droppedSummary: ReturnType<typeof setTimeout> | undefined;
  /** The queued claims a pass is deciding now (out of line until their outcome), by claim. */
  readonly #deciding = new Map<string, Waiting>();
  readonly #queueStore: ClaimQueueStore;

  constructor(private d: AdmissionDeps) {
    this.#unrun = new KeyedBuckets(UNRUN_WITHDRAWS, d.ports.monoClock ?? monotonicClock, 4_096);
    this.#queueStore = new ClaimQueueStore(d.ports.sub('steward-queue'), d.ports.log.child({ role: 'steward', overlay: d.ports.name }));
  }

  get #log() {
    return this.d.ports.log;
  }

  async admit(req: AdmitRequest, ctx: StewardStream): Promise<void> {
    if (!(req.job instanceof Uint8Array)) throw new C0Error('STEWARD_BAD_REQUEST', 'admit: job must be an envelope', { field: 'job' });
    if (typeof req.entitlement !== 'string') throw new C0Error('STEWARD_BAD_REQUEST', 'admit: entitlement is required', { field: 'entitlement' });
    const job = open(req.job, T.job);
    const { didFromPeerId } = await import('../node/peer-id.js');
    if (didFromPeerId(ctx.peer.toString()) !== job.signer) throw new C0Error('STEWARD_NOT_BUYER', 'only the job’s buyer may ask to admit it');
    if (req.gang !== undefined) {
      const g = req.gang as Partial<GangCite>;
      if (!this.d.gangs || typeof g !== 'object' || g === null || typeof g.claim !== 'string' || typeof g.member !== 'number') throw new C0Error('STEWARD_BAD_REQUEST', 'admit: gang must be {claim, member}', { field: 'gang' });
      return this.d.gangs.admitMember(job, req.entitlement, { claim: g.claim, member: g.member }, ctx);
    }
    await this.checkUnrunBudgetOn(job.signer, job.address, ctx);
    const ask = this.askInFlight(job.address, job.signer);
    let asked: Asked;
    try {
      asked = await this.d.serial.run(() => this.#decideFresh(job, req, ask));
      // Withdrawn while it was decided, once the Admitted entry was on its way to disk (or an earlier ask's was): released now.
      if (ask.withdrawn && ('again' in asked || ('outcome' in asked && asked.outcome.t === 'admitted'))) asked = { outcome: await this.releaseWithdrawn(job.address) };
    } finally {
      ask.done();
    }
    if ('again' in asked) {
      // Asked again (the first answer was lost with its stream): the same answer, nothing recorded.
      const a = asked.again;
      await ctx.send({ t: 'admitted', reserved: a.reserved, devices: a.devices, borrowed_uj: a.borrowed_uj } as never);
      return;
    }
    if ('outcome' in asked) return this.#tell(asked.outcome, ctx);
    const { wait: waiting, got, wake, reasked } = asked;
    try {
      await ctx.send({ t: 'queued', reason: waiting.verdict.reason, reasons: waiting.verdict.reasons, place: this.#queue.indexOf(waiting) + 1 } as never);
    } catch (e) {
      // The buyer is already gone: its claim stays in line, waiting for it to ask again (unless a re-ask took it over).
      if (this.#queue.includes(waiting) && waiting.wake === wake) this.#away(waiting);
      throw e;
    }
    // The stream closing under the wait (the buyer reset it, or its connection dropped) is the buyer leaving: away at
    // once, so its claim keeps its place only for the re-ask grace and is never admitted into the dead stream.
    const left = (): void => {
      if (waiting.wake !== wake) return; // decided, withdrawn, taken over by a re-ask, or the steward stopped
      this.#log.debug({ claim: waiting.claim.id, graceMs: this.#reaskGrace }, 'the buyer of a queued claim left (its stream closed); the claim keeps its place for the re-ask grace');
      this.#away(waiting);
      wake({ gone: 'left' });
    };
    if (ctx.signal.aborted) left();
    else ctx.signal.addEventListener('abort', left, { once: true });
    // Capacity may have freed while the buyer was away (a fresh claim was decided after a pass over the line already).
    if (reasked) void this.retry();
    let outcome: Wake;
    try {
      outcome = await got;
    } finally {
      ctx.signal.removeEventListener('abort', left);
    }
    if ('gone' in outcome) return;
    await this.#tell(outcome, ctx);
  }

  /**
   * An ask for `claim` by `buyer` (its job's signer, checked) from now until its decision is taken: `done()` ends
   * it. A withdraw of the claim meanwhile marks it (withdraw).
   */
  askInFlight(claim: string, buyer: string): AskInFlight {
    let set = this.#asks.get(claim);
    if (!set) this.#asks.set(claim, (set = new Set()));
    const asks = set;
    const a: AskInFlight = {
      claim,
      buyer,
      withdrawn: false,
      done: () => {
        asks.delete(a);
        if (!asks.size && this.#asks.get(claim) === asks) this.#asks.delete(claim);
      },
    };
    asks.add(a);
    return a;
  }

  /**
   * `withdraw` of a claim the accounts do not hold (not admitted, or its `Admitted` entry not tracked yet) by `buyer`:
   *
   * - waiting in line: taken out of it and out of the queue store (synced), its waiting ask (if any) told `expired`
   *   `WITHDRAWN`, and the line decided again (what it held may go to the next) → `dequeued`;
   * - being decided (an ask before or in the admission section, or a pass deciding it out of line: a preemption
   *   waiting on a stop, its append on its way to disk): marked, so the decision admits nothing — or, its `Admitted`
   *   already sealed, releases it at once with nothing spent — and tells the ask `expired` `WITHDRAWN` → `noted`;
   * - neither: undefined (the handler answers `no`). Nothing is kept for a claim the steward is not deciding.
   *
   * Only the claim's buyer may withdraw it (STEWARD_NOT_BUYER). Never waits for the admission section.
   */
  async withdraw(claim: string, buyer: string | undefined): Promise<LineWithdrawn | undefined> {
    const w = this.#queue.find((x) => x.claim.id === claim);
    const deciding = this.#deciding.get(claim);
    const asks = this.#asks.get(claim);
    const owner = w?.job.signer ?? deciding?.job.signer ?? (asks?.size ? [...asks][0]!.buyer : undefined);
    if (owner === undefined) return undefined;
    if (buyer !== owner) throw new C0Error('STEWARD_NOT_BUYER', 'only the job’s buyer may withdraw it');
    for (const a of asks ?? []) a.withdrawn = true;
    if (deciding) deciding.withdrawn = true;
    this.withdrawnUnrun(owner);
    if (!w) {
      this.#log.info({ claim }, 'withdraw of a claim being decided: it will not be left admitted');
      return 'noted';
    }
    this.#dequeue(w);
    await this.#queueStore.remove(w.n).catch((e) => this.#log.warn({ claim, err: (e as Error).message }, 'cannot drop a withdrawn queued claim from the queue store (dropped at the next start, once its buyer stays away)'));
    this.#log.info({ claim, place: w.n }, 'queued claim withdrawn by its buyer; taken out of the line');
    const wake = w.wake;
    w.wake = undefined;
    wake?.({ t: 'withdrawn' });
    void this.retry();
    return 'dequeued';
  }

  /**
   * A new claim (a job's, or a gang's run) of `buyer` past its budget of claims withdrawn unrun (UNRUN_WITHDRAWS) is
   * refused STEWARD_RATE_LIMITED, saying when to ask again (in its message: an error frame carries a code and a message
   * only); one held or being decided already (asked again, its answer lost) is answered.
   */
  checkUnrunBudget(buyer: string, claim: string): void {
    if (this.#unrun.available(buyer) >= 1 || this.d.accounts.get(claim) || this.#queue.some((w) => w.claim.id === claim) || this.#asks.has(claim)) return;
    const inS = Math.ceil((1 - this.#unrun.available(buyer)) / UNRUN_WITHDRAWS.ratePerSec);
    throw new C0Error('STEWARD_RATE_LIMITED', `too many of this buyer's claims were withdrawn without running lately (${UNRUN_WITHDRAWS.burst}, then one every ${1 / UNRUN_WITHDRAWS.ratePerSec} s): ask again in ${inS} s`, { detail: { retryInMs: inS * 1000 } });
  }

  /**
   * checkUnrunBudget for an ask on `ctx`: before the refusal, a data frame `{t: 'rate-limited', retry_in_ms}` says
   * when to ask again, so the buyer's admission client can give up at once when that is past its job's deadline (an
   * error frame carries a code and a message only; a buyer before the frame ignores one it does not know, and reads the
   * refusal as before).
   */
  async checkUnrunBudgetOn(buyer: string, claim: string, ctx: Pick<StewardStream, 'send'>): Promise<void> {
    try {
      this.checkUnrunBudget(buyer, claim);
    } catch (e) {
      const ms = (e as C0Error).detail?.retryInMs;
      if (typeof ms === 'number') await ctx.send({ t: 'rate-limited', retry_in_ms: ms } as never).catch(() => {});
      throw e;
    }
  }

  /**
   * A claim of `buyer` withdrawn with nothing run: one token of its budget (UNRUN_WITHDRAWS), into debt down to minus
   * the burst: claims admitted together while one token was left are charged as they are withdrawn (second-round
   * review s42 R8 F2: batches of 32 admitted at once made 12 rounds a second), and a buyer withdrawing many leftover
   * claims after a crash is refused new ones for two bursts' time at most (~2 minutes; its admission client waits and
   * asks again), not for one token per leftover.
   */
  withdrawnUnrun(buyer: string): void {
    if (this.#unrun.available(buyer) > -UNRUN_WITHDRAWS.burst) this.#unrun.charge(buyer, 1);
  }

  /**
   * A claim (a job's, or a gang's: Steward's admit-gang) withdrawn while it was decided, its `Admitted` entry
   * appended: released at once, nothing spent (it never ran).
   */
  async releaseWithdrawn(claim: string): Promise<Outcome> {
    const oj = this.d.accounts.get(claim);
    if (oj) {
      this.#log.info({ claim }, 'claim withdrawn by its buyer while it was decided; released at once');
      // a failed append is retried by the accounts (and the claim still ends at its deadline)
      await this.d.accounts.release(oj, 'withdrawn').catch((e) => this.#log.warn({ claim, err: (e as Error).message }, 'cannot release a claim withdrawn while it was decided'));
    }
    return { t: 'withdrawn' };
  }

  /**
   * A fresh ask, in the admission section: the same answer for a claim already
   * admitted, the place kept for one in line, else decided now (admitted and
   * appended, denied, or put in line). Its wait is armed here, so a pass or an
   * expiry after the section finds someone to tell.
   */
  async #decideFresh(job: Opened<Job>, req: AdmitRequest, ask: AskInFlight): Promise<Asked> {
    const admitted = this.d.ledger.book.open.get(job.address);
    if (admitted) return { again: admitted };
    if (this.d.ledger.book.released.has(job.address)) throw new C0Error('STEWARD_ALREADY_RELEASED', 'this job was admitted and has been released already');
    let w = this.#queue.find((x) => x.claim.id === job.address);
    if (w) {
      // The buyer asks again for a queued claim (its stream failed, or the steward restarted): it keeps its place.
      if (w.claim.entitlement !== req.entitlement) throw new C0Error('STEWARD_CLAIM_MISMATCH', `this job is queued under entitlement ${w.claim.entitlement}`, { field: 'entitlement' });
      w.wake?.({ gone: 'superseded' });
      w.wake = undefined;
      this.#log.info({ claim: w.claim.id, place: this.#queue.indexOf(w) + 1 }, 'queued claim asked again; it keeps its place');
      const got = this.#arm(w);
      return { wait: w, got, wake: w.wake!, reasked: true };
    }
    // Withdrawn while it waited for the section: nothing decided, nothing preempted for it.
    if (ask.withdrawn) return { outcome: { t: 'withdrawn' } };
    const estimate = claimEstimate(req, this.d.ledger, this.d.cfg, 'admit: give an energy estimate, or a class with enough measured history');
    const claim = checkClaim(claimFor(job, req, estimate));
    // The line goes first: the claims already waiting take what freed before this one is decided.
    const held = await this.serve();
    let d = this.d.reclaim.decideNow(claim);
    // A denied claim is not stored (nothing refers to it) and costs a token of its buyer's unrun budget, as a claim
    // withdrawn unrun does; logged at debug, as a gang's is (review s43 R1 F3: 3,000 denials in 164 s, an info line and
    // ~1 KiB stored each, never refused). Any other is stored first, then decided again (the store's write awaited).
    if (d.v.verdict !== 'Deny') {
      await this.d.ports.records.put(job);
      d = this.d.reclaim.decideNow(claim);
    }
    let v: Verdict | QueueVerdict = d.v.verdict === 'Admit' && held ? lineAhead(claim) : d.v;
    if (v.verdict === 'Admit') {
      const c = await this.#commit(claim, job, d, undefined, () => ask.withdrawn);
      if (c.t === 'admitted' || c.t === 'withdrawn') return { outcome: c };
      // Decided again before the append and not admitted (a preemption that freed nothing): that verdict stands.
      v = c.v;
    }
    if (v.verdict === 'Deny') {
      this.withdrawnUnrun(job.signer);
      this.#log.debug({ claim: claim.id, entitlement: claim.entitlement, reason: v.reason }, 'claim denied');
      return { outcome: { t: 'denied', v } };
    }
    // Withdrawn while it was decided: not put in line for a buyer that is gone.
    if (ask.withdrawn) return { outcome: { t: 'withdrawn' } };
    this.#roomInLine(job.signer);
    w = { n: this.#queueStore.next(), claim, job, since: this.d.ports.clock(), verdict: v };
    // In line at once (a second ask for the same job finds it); durable before acknowledged: on disk before the buyer hears "queued".
    this.#enqueue(w);
    try {
      await this.#queueStore.put(this.#record(w));
    } catch (e) {
      this.#dequeue(w);
      throw e;
    }
    this.#log.info({ claim: claim.id, entitlement: claim.entitlement, reason: v.reason, place: this.#queue.length }, 'claim queued');
    const got = this.#arm(w);
    return { wait: w, got, wake: w.wake! };
  }

  /**
   * The line is bounded, per buyer and in all (docs/overlays.md "A bounded line"): every claim in it is kept on disk
   * until its deadline and decided again on every pass, so one buyer (or key) sending claims that cannot fit must not
   * grow it without end. A claim past either bound is refused: not queued, nothing appended; one already in line keeps its place
   * (a re-ask never reaches here), and a line restored over a lowered bound is kept whole.
   */
  #roomInLine(buyer: string): void {
    const all = this.d.cfg.maxQueued ?? MAX_QUEUED;
    if (this.#queue.length >= all) {
      throw new C0Error('STEWARD_QUEUE_FULL', `the steward's line is full (${this.#queue.length} claims, steward.maxQueued ${all}); ask again later`, { detail: { queued: this.#queue.length, max: all } });
    }
    const per = this.d.cfg.maxQueuedPerBuyer ?? MAX_QUEUED_PER_BUYER;
    let mine = 0;
    for (const x of this.#queue) if (x.job.signer === buyer) mine++;
    if (mine >= per) {
      throw new C0Error('STEWARD_QUEUE_FULL', `this buyer has ${mine} claims in the steward's line (steward.maxQueuedPerBuyer ${per}); ask again once some are decided`, { detail: { queued: mine, max: per, buyer } });
    }
  }

  /** The buyer's wait for a claim in line: resolved by a pass, the expiry, a re-ask or the stop. */
  #arm(w: Waiting): Promise<Wake> {
    return new Promise<Wake>((resolve) => {
      w.grace?.clear();
      w.grace = undefined;
      w.wake = resolve;
      // back: the absence under way is spent
      const now = this.#mono();
      if (w.awayAt !== undefined) w.awayMs = (w.awayMs ?? 0) + Math.max(0, now - w.awayAt);
      w.awayAt = undefined;
      w.backAt = now;
    });
  }

  /**
   * Admit a claim decided `Admit`, inside the admission section: preempt the
   * victims first when needed, deciding again before and after, then append
   * durably (appendAdmitted). Preempting here holds every other admission
   * until the victims' providers answer (bounded by the request deadlines);
   * it is rare (only past physical capacity, with preemption on), and
   * deciding again outside the section would race them. A claim not admitted
   * by the last decision gets that verdict (`not-admitted`), nothing appended.
   * A claim its buyer withdrew meanwhile (`withdrawn()`, checked before the
   * decision's first step and again right before the entry is sealed, in the
   * append's precondition) is not admitted: `withdrawn`, nothing appended.
   */
  async #commit(claim: Claim, job: Opened<Job>, decided: Decided, queued: number | undefined, withdrawn: () => boolean): Promise<(Outcome & { t: 'admitted' }) | { t: 'withdrawn' } | { t: 'not-admitted'; v: Exclude<Verdict, { verdict: 'Admit' }> }> {
    if (decided.v.verdict !== 'Admit') throw new C0Error('STEWARD_INTERNAL', `unexpected verdict ${decided.v.verdict}`);
    if (withdrawn()) return { t: 'withdrawn' };
    const append: Ledger['append'] = (ev, opts = {}) =>
      this.d.append(ev, {
        ...opts,
        precondition: () => {
          if (withdrawn()) throw new C0Error(CLAIM_WITHDRAWN, 'the claim was withdrawn by its buyer while it was decided');
          opts.precondition?.();
        },
      });
    // §5.2 ranks by what each running claim has spent and completed: appendAdmitted asks, then chooses again.
    let o: Awaited<ReturnType<typeof appendAdmitted>>;
    try {
      o = await appendAdmitted({ reclaim: this.d.reclaim, append }, claim, decided);
    } catch (e) {
      if (!(e instanceof C0Error) || e.code !== CLAIM_WITHDRAWN) throw e;
      this.#log.info({ claim: claim.id, entitlement: claim.entitlement }, 'claim withdrawn by its buyer while it was decided; not admitted');
      return { t: 'withdrawn' };
    }
    if ('v' in o) {
      this.#log.info({ claim: claim.id, entitlement: claim.entitlement, verdict: o.v.verdict, reason: o.v.reason }, 'claim not admitted when decided again before the append');
      return { t: 'not-admitted', v: o.v };
    }
    const { admit, ...r } = o;
    // After the append: a crash in between leaves a stored entry that the restore drops (its claim is open).
    if (queued !== undefined) await this.#queueStore.remove(queued);
    this.d.accounts.track(claim.id, claim.entitlement, job.signer, job.record.deadline);
    this.#log.info({ claim: claim.id, entitlement: claim.entitlement, reserved: admit.reserved, borrowed: admit.borrowed_uj, seq: r.seq }, 'claim admitted');
    return { t: 'admitted', admit, seq: r.seq, entry: r.address };
  }

  /** Tell the buyer an outcome (outside the section). */
  async #tell(o: Outcome, ctx: Pick<StewardStream, 'send'>): Promise<void> {
    if (o.t === 'failed') throw o.err;
    if (o.t === 'expired') {
      await ctx.send({ t: 'expired', reason: o.v.reason } as never).catch(() => {});
      return;
    }
    if (o.t === 'withdrawn') {
      // its buyer withdrew it: most likely gone, so whatever happens to this answer
      await ctx.send({ t: 'expired', reason: WITHDRAWN } as never).catch(() => {});
      return;
    }
    if (o.t === 'denied') {
      await ctx.send({ t: 'denied', reason: o.v.reason, reasons: o.v.reasons, ...(o.v.basis ? { basis: o.v.basis } : {}) } as never);
      return;
    }
    const { admit } = o;
    await ctx.send({ t: 'admitted', reserved: admit.reserved, devices: admit.devices, borrowed_uj: admit.borrowed_uj, seq: o.seq, entry: o.entry } as never);
  }

  #record(w: Waiting): QueuedClaimRecord {
    return { n: w.n, job: w.job, entitlement: w.claim.entitlement, ...(w.claim.class ? { class: w.claim.class } : {}), estimate: w.claim.estimate, since: w.since, reason: w.verdict.reason, reasons: w.verdict.reasons };
  }

  /** Put a claim in line (arrival order) and arm its expiry at the job's deadline. */
  #enqueue(w: Waiting): void {
    this.#queue.push(w);
    this.#queue.sort((a, b) => a.n - b.n);
    w.expire = setLongTimeout(() => void this.#expire(w), Math.max(0, w.job.record.deadline - this.d.ports.clock())).unref();
  }

  #dequeue(w: Waiting): void {
    this.#queue = this.#queue.filter((x) => x !== w);
    w.expire?.clear();
    w.grace?.clear();
  }

  /**
   * The buyer is away: the claim keeps its place for what is left of the re-ask grace (the grace less its earlier
   * absences, unless it has since been back a whole grace), then is dropped.
   */
  #away(w: Waiting): void {
    w.wake = undefined;
    w.grace?.clear();
    const now = this.#mono();
    if (w.backAt !== undefined && now - w.backAt >= this.#reaskGrace) w.awayMs = 0;
    w.backAt = undefined;
    w.awayAt = now;
    const left = Math.max(0, this.#reaskGrace - (w.awayMs ?? 0));
    w.grace = setLongTimeout(() => {
      if (this.d.stopped() || !this.#queue.includes(w) || w.wake) return;
      this.#dequeue(w);
      this.#droppedUnasked(w);
      void this.#queueStore.remove(w.n).then(() => this.retry(), (e) => this.#log.warn({ err: (e as Error).message }, 'cannot drop a queued claim'));
    }, left).unref();
  }

  /**
   * A queued claim dropped because its buyer left and did not ask again within the grace: one of its claims withdrawn
   * unrun (a token of UNRUN_WITHDRAWS), and logged at debug with one summary line a minute at most. Before (review s43
   * R1 F3) queueing and then dropping the stream instead of withdrawing was free: ~8.5 rounds a second per key, three
   * log lines each (one a warn).
   */
  #droppedUnasked(w: Waiting): void {
    this.withdrawnUnrun(w.job.signer);
    this.#log.debug({ claim: w.claim.id, graceMs: this.#reaskGrace }, 'the buyer of a queued claim did not ask again; claim dropped from the queue');
    this.#dropped++;
    this.#droppedSummary ??= setTimeout(() => {
      this.#droppedSummary = undefined;
      this.#log.info({ claims: this.#dropped, graceMs: this.#reaskGrace }, 'queued claims dropped in the last minute: their buyers left and did not ask again within the grace');
      this.#dropped = 0;
    }, 60_000).unref();
  }

  /** The monotonic clock: a buyer's absences are durations the steward measures for itself, as the grace's timer runs. */
  #mono(): number {
    return (this.d.ports.monoClock ?? monotonicClock)();
  }

  get #reaskGrace(): number {
    return this.d.cfg.reaskGraceMs ?? REASK_GRACE_MS;
  }

  async #expire(w: Waiting): Promise<void> {
    if (this.d.stopped() || !this.#queue.includes(w)) return;
    this.#dequeue(w);
    await this.#queueStore.remove(w.n).catch((e) => this.#log.warn({ err: (e as Error).message }, 'cannot drop an expired queued claim'));
    this.#log.info({ claim: w.claim.id }, 'queued claim expired at its deadline');
    w.wake?.({ t: 'expired', v: w.verdict });
    void this.retry();
  }

  /**
   * The queue as it was before a restart, in arrival order, each claim waiting for its buyer to ask again. A claim
   * whose buyer the tree no longer lists under its entitlement (taken off between runs) is dropped: its re-ask is
   * refused STEWARD_NOT_ENTITLED and could never take it out, so it would hold the line for the re-ask grace.
   */
  async restore(): Promise<void> {
    const now = this.d.ports.clock();
    const unlisted: Array<{ claim: string; buyer: string; entitlement: string }> = [];
    for (const q of await this.#queueStore.load()) {
      const id = q.job.address;
      if (this.d.ledger.book.open.has(id) || this.d.ledger.book.released.has(id) || q.job.record.deadline <= now) {
        await this.#queueStore.remove(q.n);
        continue;
      }
      if (!isEntitled(this.d.tree, q.entitlement, q.job.signer)) {
        await this.#queueStore.remove(q.n);
        unlisted.push({ claim: id, buyer: q.job.signer, entitlement: q.entitlement });
        continue;
      }
      const claim = checkClaim(claimFor(q.job, q, q.estimate));
      const verdict = { verdict: 'Queue', claim: id, entitlement: claim.entitlement, reason: q.reason, reasons: q.reasons, estimate: claim.estimate, devices: claim.gang_size * claim.devices_per_member } as QueueVerdict;
      const w: Waiting = { n: q.n, claim, job: q.job, since: q.since, verdict };
      this.#enqueue(w);
      this.#away(w);
    }
    if (unlisted.length) this.#log.info({ code: 'STEWARD_QUEUED_NOT_ENTITLED', claims: unlisted.length, dropped: unlisted.slice(0, 16) }, 'queued claims dropped at start: the tree no longer lists their buyers under their entitlements (a buyer asking again is refused STEWARD_NOT_ENTITLED)');
    if (this.#queue.length) this.#log.info({ queued: this.#queue.map((w) => w.claim.id) }, 'queued claims restored; waiting for their buyers to ask again');
  }

  /**
   * Decide queued claims again, in arrival order, after capacity freed: a
   * pass in the admission section (`serve`). Resolves at once, without
   * waiting for the section: it is asked from inside it too (a release during
   * preemption).
   */
  async retry(): Promise<void> {
    if (this.#passAsked || this.d.stopped()) return;
    this.#passAsked = true;
    void this.d.serial
      .run(() => {
        this.#passAsked = false;
        return this.serve();
      })
      .catch((e) => this.#log.warn({ err: (e as Error).message }, 'deciding the queued claims again failed'));
  }

  /**
   * Serve the line; call only inside the admission section. Queued claims
   * are decided again in arrival order, each taken out of line appended (or
   * denied) before the next decision; one that still does not fit lets those
   * behind it be decided. A claim that would be admitted while its buyer is
   * away holds the line until the buyer asks again or the re-ask grace ends
   * (one that would be denied holds nothing: it is told when its buyer asks
   * again). Answers whether the line is held, so a newcomer that would be
   * admitted waits behind it.
   */
  async serve(): Promise<boolean> {
    // Claims decided again before their append and not admitted (a preemption that freed nothing): back in line,
    // and not decided again in this pass (preempting for them again at once would free nothing more).
    const passed = new Set<Waiting>();
    for (;;) {
      if (this.d.stopped()) return false;
      let next: { w: Waiting; d: Decided } | undefined;
      let held = false;
      for (const w of this.#queue) {
        if (passed.has(w)) continue;
        const d = this.d.reclaim.decideNow(w.claim);
        if (d.v.verdict === 'Queue') continue;
        if (w.wake) next = { w, d };
        else if (d.v.verdict === 'Deny') continue;
        else held = true;
        break;
      }
      if (!next) return held;
      const { w, d } = next;
      const wake = w.wake!;
      this.#dequeue(w);
      // Out of line while it is decided; a withdraw meanwhile finds it here (withdraw).
      this.#deciding.set(w.claim.id, w);
      let o: Outcome;
      try {
        if (d.v.verdict === 'Deny') {
          this.#log.info({ claim: w.claim.id, entitlement: w.claim.entitlement, reason: d.v.reason }, 'claim denied');
          await this.#queueStore.remove(w.n);
          o = { t: 'denied', v: d.v };
        } else {
          const c = await this.#commit(w.claim, w.job, d, w.n, () => w.withdrawn === true);
          if (c.t === 'not-admitted' && c.v.verdict === 'Queue' && !w.withdrawn) {
            // Its place and stored entry are kept; its buyer is still waiting on the stream.
            w.verdict = c.v;
            this.#enqueue(w);
            passed.add(w);
            continue;
          }
          if (c.t === 'admitted') {
            // Withdrawn once its entry was on its way to disk: released at once (the entry tracked, so it can be).
            o = w.withdrawn ? await this.releaseWithdrawn(w.claim.id) : c;
          } else if (c.t === 'withdrawn' || w.withdrawn) {
            await this.#queueStore.remove(w.n);
            o = { t: 'withdrawn' };
          } else {
            await this.#queueStore.remove(w.n);
            o = { t: 'denied', v: c.v as Verdict & { verdict: 'Deny' } };
          }
        }
      } catch (err) {
        // Out of line either way; its stored entry (if the removal failed) comes back at the next start.
        o = { t: 'failed', err };
      } finally {
        this.#deciding.delete(w.claim.id);
      }
      wake(o);
    }
  }

  /**
   * The claims in line whose buyer waits on its stream (only those a pass can admit): the steward's tries of a
   * preemption whose stop got no answer are for them (src/roles/steward-reclaim.ts).
   */
  waiting(): Set<string> {
    const out = new Set<string>();
    for (const w of this.#queue) if (w.wake) out.add(w.claim.id);
    return out;
  }

  /** `status()`'s view of the line. */
  queued(now: number): Array<Record<string, unknown>> {
    return this.#queue.map((w) => ({ claim: w.claim.id, entitlement: w.claim.entitlement, reason: w.verdict.reason, reasons: w.verdict.reasons, waitingMs: now - w.since, buyer: w.wake ? 'waiting' : 'away' }));
  }

  stop(): void {
    // The queue stays on disk; the buyers' streams end without a verdict, and they ask again.
    for (const w of this.#queue) {
      w.expire?.clear();
      w.grace?.clear();
      w.wake?.({ gone: 'stopping' });
    }
    this.#queue = [];
    clearTimeout(this.#droppedSummary);
    this.#droppedSummary = undefined;
  }
}
