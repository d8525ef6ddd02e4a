/**
 * The coordinator's side of a pool member (docs/pools.md "Dispatch recorded
 * before the call", "The output guard", "Settlement", "Failure modes, tested";
 * issue #13 "The coordinator"): for work the elected copy won, it gates,
 * chooses the member by hash, makes the signed dispatch durable and sends it to
 * the other members before the input goes out, calls the member, refuses empty
 * output, settles completed jobs, and closes the dispatch trail a crashed
 * coordinator left. The membership side (liveness, election, rosters, serving
 * the other members) is member.ts, which owns one of these and hands it the
 * view it needs (CoordinatorView).
 */
import type { Counter } from 'prom-client';
import { C0Error } from '../../errors.js';
import { open, seal, type Opened } from '../../records/envelope.js';
import { T, type Energy, type Job, type Offer, type PoolDispatch, type PoolRoster, type Receipt } from '../../records/kinds.js';
import type { Money } from '../../records/money.js';
import type { CborValue } from '../../records/cbor.js';
import { openTaken } from '../../records/taken.js';
import { coordinatorRanking, selectMember } from '../../pools/choice.js';
import { admit } from '../../pools/gates.js';
import { splitPrice } from '../../pools/settlement.js';
import { DispatchTrail, type TrailEntry } from '../../pools/trail.js';
import { givesWay, LOST_CODE, verifyOutcome, type VerifiedOutcome } from '../../pools/outcome.js';
import { receiptFor, type SlotRun } from '../provider/provider.js';
import type { ExecContext } from '../provider/executors.js';
import { blankOutputText } from '../provider/output-guard.js';
import type { PoolReply } from './protocol.js';
import type { PoolMemberDeps } from './member.js';
import { clearableTimeoutSignal } from '../../util/timers.js';
import { monotonicClock } from '../../util/clock.js';
import { REMOTE_LABEL_CODES, remoteCodeLabel } from '../../net/frames.js';
import { ranHere } from './sync.js';

/** Pending dispatches of one coordinator a recovery tick handles at once. */
export const RECOVERY_PARALLEL = 8;

/**
 * When a dispatch's budget ends: its `issuedAt` plus the longest its coordinator waits for the member,
 * `min(job timeout, time to the deadline, pool.memberTimeoutMs)` (docs/pools.md "The output guard"). The coordinator
 * delivers no output that came back after it (POOL_MEMBER_TIMEOUT, by its clock, whatever its timers did during a
 * pause), and recovery fails a dispatch whose coordinator is silent only past it (+ RECOVERY_GRACE_LIVENESS ×
 * livenessMs): so a coordinator that was only paused never completes a job the pool has failed.
 */
export function dispatchEnd(dispatch: PoolDispatch, job: Job, memberTimeoutMs: number): number {
  return dispatch.issuedAt + Math.max(1, Math.min(job.timeoutMs, job.deadline - dispatch.issuedAt, memberTimeoutMs));
}

/**
 * How long one recovery tick spends on one coordinator's pending entries, in livenessMs (real time: each question is
 * itself bounded by livenessMs): a round of RECOVERY_PARALLEL questions is started only within it, and the entries
 * left wait for the next tick, which starts after the last one asked. So a member that answers every `status` just
 * inside livenessMs holds a tick no longer than this (plus the round under way), however many entries it has.
 */
export const RECOVERY_TICK_LIVENESS = 2;

/**
 * The longest recovery waits for the receipts it asks of the job's buyer and the live members before it signs a
 * POOL_COORDINATOR_LOST receipt (all asked at once; at most min(this, livenessMs), dial included).
 */
export const RECEIPT_ASK_MS = 3000;

/** The most peers one such ask goes to: the job's buyer, then live members (roster order). */
export const RECEIPT_ASK_PEERS = 4;

/** Receipt frames one answer to that ask may carry (a job has a receipt per provider that ran it): a peer answering more fails its ask. */
export const RECEIPT_ASK_FRAMES = 32;

/** One recovery tick's state for one coordinator's entries: whether it went silent, and the peers that did not answer a receipt ask (not asked again this tick). */
interface Tick {
  silent: boolean;
  quiet: Set<string>;
}

/** How many livenessMs past a dispatch's budget recovery waits before failing it for a silent coordinator. */
export const RECOVERY_GRACE_LIVENESS = 3;

/**
 * The turn of each member ahead in the take-over order (the election's ranking, `coordinatorRanking`) that this one
 * does not see live, in livenessMs: a recovering member about to fail another coordinator's dispatch as lost first
 * gives each such member this long to do it (its `closed` heard, or its receipt found by the lookups each tick
 * repeats), so two members that each believe themselves elected (after a whole-pool restart, or while their views of
 * each other's liveness differ) do not both sign a POOL_COORDINATOR_LOST receipt (docs/pools.md "A coordinator that
 * crashes"). 3 × livenessMs is what a member takes to be seen live once it is back, with a tick after it.
 */
export const RECOVERY_TURN_LIVENESS = 3;

/** The most turns a recovering member waits (each RECOVERY_TURN_LIVENESS × livenessMs): a dead or cut-off member ahead delays the close, never keeps it open. */
export const RECOVERY_TURNS_MAX = 3;

export function code(e: unknown): string {
  return e instanceof C0Error ? e.code : 'POOL_INTERNAL';
}

/**
 * The codes a member's refusal (`{code, message}`, serve.ts) may carry that c0mpute_pool_member_outcomes_total keeps
 * as its outcome label: pool/1's own, the run's failures (docs/protocol.md's receipt failure codes) and the
 * stream-level ones. Any other code a member sends is counted as `remote_other` (the error keeps it).
 */
export const MEMBER_REPLY_CODES: ReadonlySet<string> = new Set<string>([
  ...REMOTE_LABEL_CODES,
  ...['POOL_NOT_MEMBER', 'POOL_MEMBER_LEFT', 'POOL_NOT_CHOSEN', 'POOL_MEMBER_BUSY', 'POOL_BAD_REQUEST', 'POOL_ALREADY_RUN', 'POOL_ALREADY_DISPATCHED', 'POOL_DISPATCH_MISMATCH', 'POOL_DISPATCH_NOT_CALLERS', 'POOL_TRAIL_FULL', 'POOL_CLOSE_NOT_ENTITLED', 'POOL_OUTCOME_MISMATCH', 'POOL_SETTLEMENT_INVALID', 'POOL_STILL_RUNNING', 'POOL_WRONG_POOL', 'POOL_ROSTER_STALE', 'POOL_RESULT_UNKNOWN', 'POOL_INTERNAL'],
  ...['EXEC_INPUT_MISMATCH', 'EXEC_TIMEOUT', 'EXEC_ABORTED', 'EXEC_FAILED', 'EXEC_CRASHED', 'EXEC_EMPTY_OUTPUT', 'EXEC_OUTPUT_TOO_LARGE', 'EXEC_SPAWN_FAILED', 'EXEC_HTTP_STATUS', 'EXEC_HTTP_UNREACHABLE', 'EXEC_BAD_PARAMS', 'EXEC_WORKLOAD_UNKNOWN'],
]);

/** An outcome as a label: a member's code (detail.remote) only when MEMBER_REPLY_CODES has it. */
function outcomeLabel(e: unknown): string {
  return e instanceof C0Error && (e.detail as { remote?: unknown } | undefined)?.remote === true ? remoteCodeLabel(e.code, MEMBER_REPLY_CODES) : code(e);
}

export interface PoolMetrics {
  dispatches: Counter;
  refusals: Counter;
  outcomes: Counter;
  epochs: Counter;
}

/** What the coordinator reads from the member it belongs to. */
export interface CoordinatorView {
  readonly pool: string;
  /** The roster in use (the one this member signs with). */
  roster(): Opened<PoolRoster>;
  live(): string[];
  /** Whether a member sent its `left` record for the roster in use (it is out of `live` while it may still answer). */
  hasLeft(member: string): boolean;
  epoch(now?: number): number;
  /** A roster of the pool this member holds, by address (a settlement names the one it divides by). */
  rosterOf(address: string): Opened<PoolRoster> | undefined;
  /** The live members that can run the job (its hardware, its workload, a database that takes writes), in roster order. */
  active(job: Opened<Job>): string[];
  /** Fresh liveness (before judging who is gone). */
  pingAll(): Promise<void>;
  /** Run a dispatched job on this member: at most once, whoever asks (under `run`'s signal, its process group recorded). */
  runHere(dispatch: Opened<PoolDispatch>, job: Opened<Job>, input: Uint8Array, run: SlotRun): Promise<Uint8Array>;
  /** A receipt as the pool's. */
  receipt(r: Receipt): Receipt;
  /** The members a broadcast goes to (other than this one). */
  broadcastTo(): string[];
  /** Every member a job's outcome goes to (`closed`), live or not (other than this one): one paused or just back must not keep another outcome. */
  outcomeTo(): string[];
  /** Whether this member runs the job now as the member a dispatch chose. */
  runsHere(job: string): boolean;
  /**
   * A member's run answered STORE_WRITE_FAILED: its database takes no writes, so it is left out of `active` as if its
   * ping had said `storeFailing: 'yes'`, until its next ping or answer says otherwise (absent: nothing is noted).
   */
  storeFailed?(member: string): void;
}

export class PoolCoordinator {
  /**
   * Jobs this copy took on and has not closed: from the run's start until `closed` (or `abandoned`), so also while
   * the provider stores the receipt and streams the output. Recovery leaves them alone.
   */
  readonly inFlight = new Set<string>();
  /** Won jobs in flight whose work was dispatched to another member (its energy is not this node's to measure). */
  readonly #elsewhere = new Set<string>();
  /** Per coordinator, the last job a recovery tick asked about: the next tick starts after it. */
  #cursor = new Map<string, string>();
  /**
   * Per open entry (`<job>|<coordinator>`) another coordinator left, since when this member has been about to fail it
   * as lost and under which epoch's take-over order it waits its turn (#turn); dropped once the entry is closed.
   */
  #waiting = new Map<string, { since: number; epoch: number; logged: boolean }>();
  /**
   * Catch-up: since when (monotonic) each coordinator has not answered this member's `status` asks; dropped at its
   * next answer. At most one per member of the roster.
   */
  #quietSince = new Map<string, number>();
  /** Open entries whose envelopes do not open (#readable): each logged once while it stays in the trail. */
  readonly #unreadable = new Set<string>();
  /** When this member started (wall clock, as a dispatch's issuedAt): its own dispatches issued before are from before a restart. */
  readonly #startedAt: number;

  constructor(
    private d: PoolMemberDeps,
    private v: CoordinatorView,
    private m: PoolMetrics | undefined,
  ) {
    this.#startedAt = d.clock();
  }

  get #mono(): () => number {
    return this.d.monoClock ?? monotonicClock;
  }

  /**
   * Close every dispatch in the trail that nobody will finish: one this member
   * made before it restarted (not in flight), or another coordinator's that it
   * says it no longer runs, or that stays silent past the dispatch's budget and
   * RECOVERY_GRACE_LIVENESS × livenessMs more (missed pings are not a crash: a
   * paused coordinator resumes and finishes its work); never while the member the
   * dispatch chose still runs it (this one, or one that says so). Its own
   * dispatch whose receipt the provider role stored before a restart is closed
   * (and settled) with that receipt. Otherwise an outcome that checks out
   * (src/pools/outcome.ts), held here or by a live member (asked), is taken;
   * then the receipt the silent coordinator signed for its dispatch, if this
   * node heard it outside the pool (its evidence store: `heardReceipts`), so the
   * pool never signs a lost receipt contradicting one it already delivered;
   * then a POOL_COORDINATOR_LOST receipt another member already signed for the
   * dispatch (held here, by a live member, or heard); then the coordinator's
   * receipt, else such a lost receipt, as the buyer or a live member holds it
   * (asked: `askReceipts`); failing that, the entry still open once the
   * ask is over, and this member's turn come (#turn: the members ahead of it in
   * the election's take-over order that it cannot see go first), the job is
   * failed with a signed receipt (POOL_COORDINATOR_LOST).
   * The entries are taken per coordinator, RECOVERY_PARALLEL at a time, all
   * coordinators at once; a coordinator that does not answer is not asked again
   * in this tick, and one coordinator's entries get RECOVERY_TICK_LIVENESS ×
   * livenessMs a tick (the rest wait for the next tick, which resumes after the
   * last one asked), so one slow member cannot hold the tick (docs/pools.md
   * "Dispatch trail").
   */
  recover(): Promise<number> {
    return this.#sweep(true);
  }

  /**
   * A member not elected: ask each other coordinator about its open entries here whose dispatch's budget and grace
   * are over (its `closed` should have come: this member missed it, e.g. a timeout, or it was restarting), and close
   * those it answers with an outcome that checks out. It never fails a dispatch (the elected coordinator does), but a
   * missed `closed` no longer keeps a place of pool.maxOpenDispatches for good, and so never makes this member refuse
   * an honest coordinator's `op: trail` (POOL_TRAIL_FULL). Bounded per tick as recovery is.
   */
  catchUp(): Promise<number> {
    return this.#sweep(false);
  }

  async #sweep(elected: boolean): Promise<number> {
    // An entry whose envelopes do not open is skipped, said once (#readable): it never stops a tick, nor the start.
    const all = (await this.d.trail.pending()).filter((p) => this.#readable(p));
    if (this.#waiting.size) {
      const still = new Set(all.map((p) => DispatchTrail.key(p.job, open(p.entry.dispatch, T.poolDispatch, { trusted: true }).signer)));
      for (const k of this.#waiting.keys()) if (!still.has(k)) this.#waiting.delete(k);
    }
    const pastGrace = (p: { entry: TrailEntry }) => {
      const d = open(p.entry.dispatch, T.poolDispatch, { trusted: true });
      return d.signer !== this.d.did && this.d.clock() >= dispatchEnd(d.record, open(p.entry.job, T.job, { trusted: true }).record, this.d.options.memberTimeoutMs) + RECOVERY_GRACE_LIVENESS * this.d.options.livenessMs;
    };
    // Its own dispatches from before a restart are recovered at every tick, elected or not: once it sees the others
    // it may no longer be elected, and the elected member leaves a live coordinator's dispatch to it.
    const mineBefore = (p: { entry: TrailEntry }) => {
      const d = open(p.entry.dispatch, T.poolDispatch, { trusted: true });
      return d.signer === this.d.did && d.record.issuedAt < this.#startedAt;
    };
    const pending = elected ? all : all.filter((p) => pastGrace(p) || mineBefore(p));
    if (!pending.length) return 0;
    // Fresh liveness before judging who is gone (a member just restarted has heard nobody yet).
    if (elected) await this.v.pingAll();
    const live = new Set(this.v.live());
    // Past its history window (`history.keepDays` after the job's deadline) the other members have dropped their
    // closed copies: nobody could lend the outcome, and failing a job that may have completed and settled would be
    // false. Such an entry is left to the history's pruning (DispatchTrail.pruneHistory), which drops it with a warning.
    const windowMs = this.d.keepDays ? this.d.keepDays * 24 * 3600_000 : Infinity;
    const now = this.d.clock();
    const groups = new Map<string, Array<{ job: string; entry: TrailEntry }>>();
    for (const p of pending) {
      if (this.inFlight.has(p.job) || now - open(p.entry.job, T.job, { trusted: true }).record.deadline > windowMs) continue;
      const by = open(p.entry.dispatch, T.poolDispatch, { trusted: true }).signer;
      groups.set(by, [...(groups.get(by) ?? []), p]);
    }
    // Peers that did not answer a receipt ask in this tick (shared by every coordinator's entries): not asked again.
    const quiet = new Set<string>();
    const counts = await Promise.all(
      [...groups.entries()].map(async ([by, list]) => {
        let n = 0;
        const tick: Tick = { silent: false, quiet };
        // From after the last entry the previous tick asked about, round the list: each entry has its turn.
        const after = this.#cursor.get(by);
        const from = after === undefined ? 0 : Math.max(0, list.findIndex((p) => p.job > after));
        const order = [...list.slice(from), ...list.slice(0, from)];
        const stopAt = performance.now() + RECOVERY_TICK_LIVENESS * this.d.options.livenessMs;
        for (let i = 0; i < order.length && !tick.silent && performance.now() < stopAt; i += RECOVERY_PARALLEL) {
          const round = order.slice(i, i + RECOVERY_PARALLEL);
          const done = await Promise.all(round.map((p) => this.#guarded(p.job, by, () => (elected || by === this.d.did ? this.#recoverOne(p.job, p.entry, by, live, tick) : this.#askOne(p.job, p.entry, by, tick)))));
          n += done.filter(Boolean).length;
          this.#cursor.set(by, round[round.length - 1]!.job);
        }
        return n;
      }),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /**
   * Whether a pending entry's envelopes open: its dispatch, its job and the record the buyer took (an auction's offer,
   * an open order's claim: src/records/taken.ts), as recovery and catch-up open them. One that does not (kept by a
   * build that wrote something else, or damaged) cannot be asked about nor failed with a receipt (a receipt names the
   * offer), so it is skipped, logged once at warn with its code, and left to the history's pruning
   * (`history.keepDays` after its job's deadline); the others are recovered as usual. Before, such an entry made every
   * tick throw, and the start with it: a member that was coordinating a pooled order when it was killed could not start
   * again (QA qaOrd F1: its dispatch's claim was opened as an offer, RECORD_WRONG_TYPE, exit 3).
   */
  #readable(p: { job: string; key: string; entry: TrailEntry }): boolean {
    try {
      const job = open(p.entry.job, T.job, { trusted: true });
      open(p.entry.dispatch, T.poolDispatch, { trusted: true });
      openTaken(p.entry.offer, job, { trusted: true });
      this.#unreadable.delete(p.key);
      return true;
    } catch (e) {
      if (!this.#unreadable.has(p.key)) {
        this.#unreadable.add(p.key);
        this.d.log.warn({ job: p.job, key: p.key, code: code(e), err: (e as Error).message }, 'pool: a dispatch in the trail does not open; it is skipped by recovery (neither asked about nor failed) and dropped with the job history');
      }
      return false;
    }
  }

  /** One entry's recovery or catch-up: an error is logged with its code and the entry is left for the next tick, never the tick's end. */
  async #guarded(job: string, by: string, step: () => Promise<boolean>): Promise<boolean> {
    try {
      return await step();
    } catch (e) {
      this.d.log.warn({ job, coordinator: by, code: code(e), err: (e as Error).message }, 'pool: recovering a dispatch failed; it is tried again at the next tick');
      return false;
    }
  }

  /**
   * Catch-up: ask `by` about its open entry here; true when an outcome that checks out closed the entry. Its answer;
   * else (silent, or no outcome yet) the receipt it signed, if this node heard it outside the pool. When it says it
   * no longer runs the job and holds no outcome, or it is gone (not live, and silent to this member's asks for
   * RECOVERY_TURN_LIVENESS × livenessMs), a POOL_COORDINATOR_LOST receipt another member already signed for the
   * dispatch closes the entry too: heard outside the pool, or held by a live member (its `status` answer). Both the
   * signer's `closed` and a relay of it may have missed this member (down at both moments), and it would otherwise
   * keep the entry open, counting the job dispatched and holding one of `by`'s pool.maxOpenDispatches places, until
   * it is itself elected. The same receipt a relayed `closed` would have brought (serve.ts), checked the same way. Not
   * at a coordinator's first silence: one cut off from this member for a moment may have completed the job, and its
   * `closed` having missed this member, a lost close taken now would stay for good.
   */
  async #askOne(job: string, entry: TrailEntry, by: string, tick: Tick): Promise<boolean> {
    const r = tick.silent ? undefined : await this.d.call(by, { op: 'status', job, coordinator: by }, this.d.options.livenessMs).catch(() => undefined);
    if (r === undefined) {
      tick.silent = true;
      if (!this.#quietSince.has(by)) this.#quietSince.set(by, this.#mono());
    } else this.#quietSince.delete(by);
    let o = (r?.receipt !== undefined ? await this.#check(job, entry, r.receipt, r.settlement) : undefined) ?? (await this.#heard(job, entry));
    const gone = r === undefined && !this.v.live().includes(by) && this.#mono() - this.#quietSince.get(by)! >= RECOVERY_TURN_LIVENESS * this.d.options.livenessMs;
    const lostIt = r !== undefined && r.code === undefined && r.running === 'no' && r.receipt === undefined;
    if (!o && (gone || lostIt)) {
      const entries = (await this.d.trail.entries(job)).map((e) => e.entry);
      o = (await this.#heard(job, entry, entries, true)) ?? (await this.#held(job, entry, entries, tick)).find((x) => x.coordinator === by || x.lost);
      if (o?.lost) this.d.log.info({ job, coordinator: by, receipt: o.receipt.address, signer: o.receipt.signer }, 'pool: closed a dispatch whose coordinator is silent with the POOL_COORDINATOR_LOST receipt another member signed (its `closed` missed this member)');
    }
    if (!o) return false;
    await this.#close(job, by, o);
    return true;
  }

  /**
   * The outcomes the live members hold for `entry`'s dispatch (their `status` answers), each checked (#check): at
   * most one ask per live member other than this one and the dispatch's coordinator, all at once, each within
   * livenessMs. With `tick`, a member that did not answer earlier in the tick is not asked, and one that does not
   * answer now is not asked again in it.
   */
  async #held(job: string, entry: TrailEntry, entries: TrailEntry[], tick?: Tick): Promise<VerifiedOutcome[]> {
    const by = open(entry.dispatch, T.poolDispatch, { trusted: true }).signer;
    const peers = this.v.live().filter((m) => m !== this.d.did && m !== by && !tick?.quiet.has(m));
    const answers = await Promise.all(
      peers.map(async (m) => {
        const r = await this.d.call(m, { op: 'status', job, coordinator: by }, this.d.options.livenessMs).catch(() => undefined);
        if (r === undefined) tick?.quiet.add(m);
        return r;
      }),
    );
    const found: VerifiedOutcome[] = [];
    for (const r of answers) {
      if (!(r?.receipt instanceof Uint8Array)) continue;
      const o = await this.#check(job, entry, r.receipt, r.settlement, entries);
      if (o) found.push(o);
    }
    return found;
  }

  /** One pending entry of `by`'s: true when this member closed it in its coordinator's place (or its own after a restart). */
  async #recoverOne(job: string, entry: TrailEntry, by: string, live: Set<string>, tick: Tick): Promise<boolean> {
    if (this.inFlight.has(job)) return false;
    const dispatch = open(entry.dispatch, T.poolDispatch, { trusted: true });
    let silent = false;
    if (by === this.d.did) {
      // Its own, from before a restart: the receipt the provider role stored (killed before `closed`) closes it.
      const mine = await this.d.ownReceipt?.(job).catch(() => undefined);
      if (mine && mine.signer === this.d.did && mine.record.job === job && mine.record.offer === dispatch.record.offer && mine.record.provider === this.v.pool) {
        await this.#settleAndClose(mine);
        this.d.log.warn({ job, receipt: mine.address, status: mine.record.status }, 'pool: closed a dispatch of this member’s from before a restart with the receipt it had stored');
        return true;
      }
    } else {
      // Another coordinator's, live or not, is asked first: it may hold the outcome this member missed (e.g. while
      // down), and one that answers is not gone, whatever the pings said (a paused process answers once it resumes).
      const r = tick.silent ? undefined : await this.d.call(by, { op: 'status', job, coordinator: by }, this.d.options.livenessMs).catch(() => undefined);
      if (r === undefined) tick.silent = true;
      const o = r?.receipt !== undefined ? await this.#check(job, entry, r.receipt, r.settlement) : undefined;
      if (o) {
        await this.#close(job, by, o);
        return false;
      }
      if (live.has(by)) return false;
      // It answers: its word decides. It still runs the job (a coordinator that left finishes what it runs), or it
      // says it no longer does (it restarted, or could not store the receipt): closed here now.
      silent = r === undefined || r.code !== undefined;
      if (!silent && r!.running !== 'no') return false;
      // Silent: not live is not proof of a crash. Failed only past the dispatch's budget (after which its coordinator
      // delivers no output: `run`) and the grace after it.
      const graceEnd = dispatchEnd(dispatch.record, open(entry.job, T.job, { trusted: true }).record, this.d.options.memberTimeoutMs) + RECOVERY_GRACE_LIVENESS * this.d.options.livenessMs;
      if (silent && this.d.clock() < graceEnd) return false;
    }
    // Nor while the member the dispatch chose still runs it: this member, or one that says so.
    if (await this.#memberRuns(job, dispatch, by, silent)) return false;
    return this.#closeOrphan(job, entry, tick);
  }

  /**
   * How long this member still waits before it fails `by`'s dispatch of `job` as lost itself (0: its turn has come),
   * and the members it waits for. The order is the election's: the take-over ranking (`coordinatorRanking`) of the
   * members of the roster in use that have not left, other than the dispatch's coordinator, for the epoch in which
   * this member first came to fail this dispatch (kept while it waits, so an epoch change does not reorder a wait under
   * way). Each member ahead of this one that it does not see live gets RECOVERY_TURN_LIVENESS × livenessMs (at most
   * RECOVERY_TURNS_MAX turns): one that is only unreachable to this member (after a restart, before the connections
   * are up) may be failing the dispatch now. A member ahead that it does see live is not waited for: then this one is
   * not elected, or that one's answer to the lookups (`status`, records/1) carries its lost receipt. So the elected
   * member of a pool whose members see each other signs at once, as before, and of two members that each believe
   * themselves elected the one further down waits at least one turn more than the other. The dispatch's own
   * coordinator, failing it after a restart, is in no one's order: it comes after every other member.
   */
  #turn(job: string, by: string): { waitMs: number; ahead: string[] } {
    const key = DispatchTrail.key(job, by);
    const now = this.d.clock();
    let w = this.#waiting.get(key);
    if (!w) {
      w = { since: now, epoch: this.v.epoch(now), logged: false };
      this.#waiting.set(key, w);
    }
    const candidates = this.v.roster().record.members.map((m) => m.did).filter((m) => m === this.d.did || (m !== by && !this.v.hasLeft(m)));
    const order = coordinatorRanking(this.v.pool, w.epoch, candidates);
    // Not on the roster in use, this member is elected by nobody: every other member goes first. Nor is it in anyone's
    // order for its own dispatch (recovering it after a restart): the others leave it out, so it comes last.
    const me = by === this.d.did ? -1 : order.indexOf(this.d.did);
    const live = new Set(this.v.live());
    const ahead = (me < 0 ? order : order.slice(0, me)).filter((m) => m !== this.d.did && !live.has(m));
    const turnMs = RECOVERY_TURN_LIVENESS * this.d.options.livenessMs;
    const waitMs = Math.max(0, w.since + Math.min(ahead.length, RECOVERY_TURNS_MAX) * turnMs - now);
    if (waitMs > 0 && !w.logged) {
      w.logged = true;
      this.d.log.info({ job, coordinator: by, ahead, waitMs }, `pool: members ahead in the take-over order may be failing ${by === this.d.did ? 'this member’s own dispatch from before it restarted' : 'this silent coordinator’s dispatch'}; waiting their turn before signing a lost receipt`);
    }
    return { waitMs, ahead };
  }

  /**
   * Whether the member `by`'s dispatch of `job` chose runs it now (asked unless it is this member, or the coordinator
   * found silent). A member on neither the roster in use nor the dispatch's own is not dialled: it is no member (a
   * forged dispatch a trail kept before serve.ts checked the member), and a peer must not choose where this one dials.
   */
  async #memberRuns(job: string, dispatch: Opened<PoolDispatch>, by: string, bySilent: boolean): Promise<boolean> {
    const member = dispatch.record.member;
    if (member === this.d.did) return this.v.runsHere(job);
    if (member === by && bySilent) return false;
    if (!this.#onRoster(member, dispatch.record.roster)) return false;
    const r = await this.d.call(member, { op: 'status', job, coordinator: by }, this.d.options.livenessMs).catch(() => undefined);
    return r?.runs === 'yes';
  }

  /** Whether `member` is on the roster in use, or on the roster `roster` (a dispatch's) when this member holds it. */
  #onRoster(member: string, roster?: string): boolean {
    const listed = (r: Opened<PoolRoster> | undefined) => r?.record.members.some((m) => m.did === member) === true;
    return listed(this.v.roster()) || (roster !== undefined && listed(this.v.rosterOf(roster) ?? this.d.trail.rosterOf(roster)));
  }

  /**
   * The `member` label of c0mpute_pool_member_outcomes_total: the member when it is on the roster in use, else `other`.
   * A dispatch's member comes from a record another member signed (its trail); the label is bounded by the roster,
   * as the outcome label is by MEMBER_REPLY_CODES, so no peer adds series without bound.
   */
  #memberLabel(member: string): string {
    return this.#onRoster(member) ? member : 'other';
  }

  /** An outcome offered for `entry` that checks out against the job's entries held here (src/pools/outcome.ts); else undefined, logged. */
  async #check(job: string, entry: TrailEntry, receipt: unknown, settlement: unknown, entries?: TrailEntry[]): Promise<VerifiedOutcome | undefined> {
    try {
      const all = entries ?? (await this.d.trail.entries(job)).map((e) => e.entry);
      return verifyOutcome(entry, receipt, settlement, { pool: this.v.pool, entries: all, roster: (a) => this.v.rosterOf(a), unsettled: true });
    } catch (e) {
      this.d.log.warn({ job, err: code(e) }, 'pool: an outcome offered for a dispatch does not check out; ignored');
      return undefined;
    }
  }

  /**
   * The receipt `entry`'s coordinator signed for its dispatch's offer, as this node heard it outside the pool (its
   * evidence store: gossiped on the job's market, or delivered to it), checked like any outcome (its signature
   * included): a completed one comes without its settlement (the coordinator's own `closed` adds it later). A
   * completed receipt is taken before a failed one; with `lost` (recovery, about to sign a lost receipt of its own),
   * failing those, a POOL_COORDINATOR_LOST receipt a member already signed for the dispatch (#takeable); undefined
   * when none checks out.
   */
  async #heard(job: string, entry: TrailEntry, entries?: TrailEntry[], lost = false): Promise<VerifiedOutcome | undefined> {
    if (!this.d.heardReceipts) return undefined;
    let list: ReadonlyArray<Opened<Receipt>>;
    try {
      list = await this.d.heardReceipts(job);
    } catch (e) {
      this.d.log.warn({ job, err: (e as Error).message }, 'pool: could not read the receipts heard for a job');
      return undefined;
    }
    return this.#takeable(job, entry, list.map((r) => r.bytes), entries, lost);
  }

  /**
   * Of receipt envelopes from anywhere (`candidates`: bytes or junk), the one recovery closes `entry` with instead of
   * signing a lost receipt, checked as any outcome is (#check: signature, pool proof, pool, job, dispatch): the one
   * `entry`'s coordinator signed for its dispatch's offer of `job`, a completed one before a failed one; else, with
   * `lost`, a POOL_COORDINATOR_LOST receipt another member already signed for this dispatch (same job and offer, the
   * pool's receipt with its pool proof) when its signer is on the roster in use: the member entitled to close the
   * dispatch as lost, as a `closed` carrying it is taken from that member. Undefined when none does. Receipts of other
   * signers or offers (a buyer holds every provider's) are passed over without a warning; only one that claims to be
   * the coordinator's or a member's lost close and does not check out is logged.
   */
  async #takeable(job: string, entry: TrailEntry, candidates: readonly unknown[], entries: TrailEntry[] | undefined, lost: boolean): Promise<VerifiedOutcome | undefined> {
    const d = open(entry.dispatch, T.poolDispatch, { trusted: true });
    const members = new Set(this.v.roster().record.members.map((m) => m.did));
    const lostBy = (r: Opened<Receipt>) => lost && r.signer !== d.signer && members.has(r.signer) && r.record.status === 'failed' && r.record.failure?.code === LOST_CODE;
    const mine = candidates.filter((b): b is Uint8Array => {
      if (!(b instanceof Uint8Array)) return false;
      try {
        // its claims only (who signed, for what): #check then verifies the signature and the rest
        const r = open(b, T.receipt, { trusted: true });
        return r.record.offer === d.record.offer && r.record.job === job && (r.signer === d.signer || lostBy(r));
      } catch {
        return false;
      }
    });
    if (!mine.length) return undefined;
    const all = entries ?? (await this.d.trail.entries(job)).map((e) => e.entry);
    let failed: VerifiedOutcome | undefined;
    let lostClose: VerifiedOutcome | undefined;
    for (const b of mine) {
      const o = await this.#check(job, entry, b, undefined, all);
      if (!o) continue;
      if (o.coordinator === d.signer) {
        if (o.state === 'completed') return o;
        failed ??= o;
      } else if (o.lost && lostBy(o.receipt)) lostClose ??= o;
    }
    return failed ?? lostClose;
  }

  /**
   * The receipt `entry`'s coordinator signed, as the job's buyer or the live members hold it (records/1 `jobs`, kind
   * receipt: `askReceipts`), checked as a heard one is (#takeable); failing that, a POOL_COORDINATOR_LOST receipt
   * another member already signed for the dispatch that one of them holds (its `closed` missed this member): asked
   * only when recovery would otherwise sign a POOL_COORDINATOR_LOST receipt. At most RECEIPT_ASK_PEERS peers (the
   * buyer first; never this member, the silent coordinator, or a peer that did not answer earlier in this tick), all
   * at once under one deadline of min(RECEIPT_ASK_MS, livenessMs), so a silent peer holds the tick no longer than
   * that; a completed receipt ends the wait at once. Undefined when nobody answers with one that checks out (the caller then fails the job as lost).
   */
  async #asked(job: string, entry: TrailEntry, entries: TrailEntry[], tick: Tick): Promise<{ o: VerifiedOutcome; from: string } | undefined> {
    const ask = this.d.askReceipts;
    if (!ask) return undefined;
    const d = open(entry.dispatch, T.poolDispatch, { trusted: true });
    const buyer = open(entry.job, T.job, { trusted: true }).signer;
    const skip = (p: string) => p === this.d.did || p === d.signer || tick.quiet.has(p);
    const peers = [...new Set([buyer, ...this.v.live()])].filter((p) => !skip(p)).slice(0, RECEIPT_ASK_PEERS);
    if (!peers.length) return undefined;
    const ms = Math.max(1, Math.min(RECEIPT_ASK_MS, this.d.options.livenessMs));
    const stop = new AbortController();
    const deadline = setTimeout(() => stop.abort(new DOMException(`no receipt in ${ms} ms`, 'TimeoutError')), ms);
    // the wait ends at the deadline whatever the ask does with its signal
    const ended = new Promise<undefined>((res) => stop.signal.addEventListener('abort', () => res(undefined), { once: true }));
    let completed: { o: VerifiedOutcome; from: string } | undefined;
    let failed: { o: VerifiedOutcome; from: string } | undefined;
    let lost: { o: VerifiedOutcome; from: string } | undefined;
    try {
      await Promise.all(
        peers.map(async (peer) => {
          const frames = await Promise.race([ask(peer, job, stop.signal).catch(() => undefined), ended]);
          if (frames === undefined) {
            if (!completed) tick.quiet.add(peer);
            return;
          }
          const o = await this.#takeable(job, entry, frames.slice(0, RECEIPT_ASK_FRAMES), entries, true);
          if (o?.state === 'completed') {
            completed ??= { o, from: peer };
            stop.abort(new DOMException('the coordinator’s completed receipt came back', 'AbortError'));
          } else if (o?.lost) lost ??= { o, from: peer };
          else if (o) failed ??= { o, from: peer };
        }),
      );
    } finally {
      clearTimeout(deadline);
      if (!stop.signal.aborted) stop.abort(new DOMException('every peer asked answered', 'AbortError'));
    }
    const found = completed ?? failed ?? lost;
    if (!found) this.d.log.info({ job, coordinator: d.signer, asked: peers }, `pool: nobody asked holds the receipt of ${d.signer === this.d.did ? 'this member’s own dispatch from before it restarted' : 'a silent coordinator’s dispatch'}`);
    return found;
  }

  /** Whether `by`'s entry of `job` is still open here (read now: a `closed` may have come while recovery waited). */
  async #stillOpen(job: string, by: string): Promise<boolean> {
    const key = DispatchTrail.key(job, by);
    return (await this.d.trail.entries(job)).some((e) => e.key === key && e.entry.state === 'dispatched');
  }

  /** Close `by`'s entry of `job` with a checked outcome: the coordinator's own replaces a lost-dispatch close. */
  async #close(job: string, by: string, o: VerifiedOutcome): Promise<void> {
    await this.d.trail.close(job, by, o.state, o.receipt.bytes, o.settlement?.bytes, !o.lost && o.coordinator === by ? givesWay : undefined);
  }

  /** Close `entry` in its silent coordinator's place; false while this member waits its turn to fail it as lost (#turn). */
  async #closeOrphan(job: string, entry: TrailEntry, tick: Tick): Promise<boolean> {
    const d = open(entry.dispatch, T.poolDispatch, { trusted: true });
    // A dispatch this member signed before it restarted is recovered here too: the log says so, not "silent coordinator"
    const whose = d.signer === this.d.did ? 'this member’s own dispatch from before it restarted' : 'a silent coordinator’s dispatch';
    // Outcomes at hand: this member's other entries of the job (checked when they were kept), then the live members'.
    const entries = (await this.d.trail.entries(job)).map((e) => e.entry);
    const found: VerifiedOutcome[] = [];
    for (const e of entries) {
      if (e.state === 'dispatched' || !e.receipt) continue;
      const o = await this.#check(job, entry, e.receipt, e.settlement, entries);
      if (o) found.push(o);
    }
    if (!found.some((o) => o.coordinator === d.signer)) found.push(...(await this.#held(job, entry, entries)));
    // Its coordinator's own outcome; else a failed receipt already signed for this dispatch as lost (no second one).
    // Never another coordinator's completion of the job: any member can record and complete a dispatch of its own
    // for a job it did not win, and the buyer took this dispatch's offer, not that one (a job completed under another
    // coordinator's dispatch still counts once in the figures: status.ts).
    // Its coordinator's receipt heard outside the pool comes before a lost close: it delivered (or failed) the job and
    // signed for it, and went down before its `closed`; failing the job now would make the pool sign two receipts that
    // contradict each other. It is relayed to the members (they check its signature), as the coordinator would have.
    // That receipt may never have reached this node (gossip lost, this node off the job's market shard, delivered to
    // the buyer on its stream only and the coordinator down before gossiping it): so before signing a lost receipt of
    // its own (none signed yet), this member asks the buyer and a few live members for it (records/1; bounded: a
    // silent peer only delays the close, which then goes on as lost).
    // Nor is a second lost receipt signed when another member already signed one whose `closed` missed this member
    // (a whole-pool restart: the members recover at once, before their connections are up): held by a live member
    // (its `status` answer), found in the evidence store (gossiped) or handed back by the asked, it closes the entry
    // as that member's `closed` would have, and is relayed to the members: its `closed` missed others too, and one
    // not elected would keep the entry open until its catch-up asks around (#askOne). A member of a build before
    // this refuses the relay (POOL_CLOSE_NOT_ENTITLED: it takes a lost close only from its signer).
    const own = found.find((o) => o.coordinator === d.signer);
    const lost = found.find((o) => o.lost);
    let other: { o: VerifiedOutcome; from: string } | undefined;
    if (!own) {
      const o = await this.#heard(job, entry, entries, !lost);
      other = o ? { o, from: 'evidence' } : lost ? undefined : await this.#asked(job, entry, entries, tick);
    }
    const best = own ?? other?.o ?? lost;
    if (best) {
      await this.#close(job, d.signer, best);
      const where = other?.from === 'evidence' ? 'heard outside the pool' : 'held by a peer asked';
      if (best.lost) {
        this.d.log.info({ job, coordinator: d.signer, receipt: best.receipt.address, signer: best.receipt.signer, from: other?.from ?? 'status' }, `pool: closed ${whose} with the POOL_COORDINATOR_LOST receipt another member already signed (${other ? where : 'held by a live member'}), not a second one; relayed to the members`);
        await this.broadcast({ op: 'closed', job, coordinator: d.signer, receipt: best.receipt.bytes }, this.v.outcomeTo().filter((m) => m !== best.receipt.signer));
      } else if (other) {
        this.d.log.warn({ job, coordinator: d.signer, status: other.o.state, receipt: other.o.receipt.address, from: other.from }, `pool: closed ${whose} with the receipt its coordinator had signed (${where}), not as lost`);
        await this.broadcast({ op: 'closed', job, coordinator: d.signer, receipt: other.o.receipt.bytes }, this.v.outcomeTo());
      }
      return true;
    }
    // The ask waited (up to its deadline): a `closed` that came meanwhile (another member's lost close, or the
    // coordinator's own outcome) closed the entry, and no receipt is signed over it.
    if (!(await this.#stillOpen(job, d.signer))) {
      this.d.log.info({ job, coordinator: d.signer }, `pool: ${whose} was closed by another member while this one looked for its receipt; no lost receipt signed`);
      return true;
    }
    // The members ahead in the take-over order that this one cannot see get their turn first (their lost receipt is
    // then found above on a later tick, or their `closed` closes the entry). Its own dispatch too, after a restart:
    // the others leave the dispatch's coordinator out of their order, so a member that does not see it yet (the whole
    // pool restarting) fails the dispatch at once, and this one, signing at once as well, made two lost receipts.
    if ((await this.#turn(job, d.signer)).waitMs > 0) return false;
    const j = open(entry.job, T.job, { trusted: true });
    // The record the buyer took: an auction's offer or an order's claim (src/records/taken.ts).
    const offer = openTaken(entry.offer, j, { trusted: true });
    const now = this.d.clock();
    const receipt = seal(
      T.receipt,
      this.v.receipt(
        receiptFor(j, offer, {
          startedAt: d.record.issuedAt,
          completedAt: Math.max(now, d.record.issuedAt),
          energy: { uj: 0, grade: 'Estimator' },
          failure: { code: 'POOL_COORDINATOR_LOST', message: d.signer === this.d.did ? `the coordinator ${d.signer} that dispatched this job to ${d.record.member} restarted and lost the dispatch's progress; the job is failed from the dispatch trail` : `the coordinator ${d.signer} that dispatched this job to ${d.record.member} is gone; the job is failed from the dispatch trail` },
        }),
      ),
      this.d.signer,
    );
    // Closed only if still open (the trail closes one at a time): a `closed` that came since the re-read keeps its
    // outcome, and this receipt, never published, goes nowhere.
    if (!(await this.d.trail.close(job, d.signer, 'failed', receipt.bytes))) {
      this.d.log.info({ job, coordinator: d.signer }, `pool: ${whose} was closed by another member meanwhile; the lost receipt signed here is dropped unpublished`);
      return true;
    }
    this.#waiting.delete(DispatchTrail.key(job, d.signer));
    this.m?.outcomes.inc({ member: this.#memberLabel(d.record.member), outcome: 'POOL_COORDINATOR_LOST' });
    this.d.log.warn({ job, coordinator: d.signer, member: d.record.member }, d.signer === this.d.did ? 'pool: closed this member’s own dispatch from before it restarted with a failed receipt (POOL_COORDINATOR_LOST)' : 'pool: closed an orphaned dispatch with a failed receipt');
    await this.d.publishReceipt(receipt).catch(() => {});
    await this.broadcast({ op: 'closed', job, coordinator: d.signer, receipt: receipt.bytes }, this.v.outcomeTo());
    return true;
  }

  /** Send `frame` to the members (each bounded by livenessMs); each member's answer, or undefined when none came. */
  async broadcast(frame: Record<string, CborValue>, to = this.v.broadcastTo()): Promise<Array<{ member: string; answer: PoolReply | undefined }>> {
    return Promise.all(to.map(async (member) => ({ member, answer: await this.d.call(member, frame, this.d.options.livenessMs).catch(() => undefined) })));
  }

  /** The coordinator's path for won work (issue #13 "The coordinator"). */
  async run(job: Opened<Job>, offer: Opened<Offer>, ctx: ExecContext): Promise<Uint8Array> {
    try {
      admit(job.record, offer.record.price, this.d.options);
    } catch (e) {
      this.m?.refusals.inc({ gate: code(e) });
      throw e;
    }
    // Only this coordinator's own dispatch of the job, closed, refuses it: another member's entry of the job (a
    // coordinator that briefly also believed it was elected, or a forged one) is not this one's to veto, and the
    // chosen member's run log settles a race (POOL_ALREADY_RUN).
    const mine = (await this.d.trail.entries(job.address)).find((e) => e.key === DispatchTrail.key(job.address, this.d.did))?.entry;
    if (mine && mine.state !== 'dispatched') throw new C0Error('POOL_ALREADY_DISPATCHED', 'this coordinator dispatched and closed this job before');
    const now = this.d.clock();
    const roster = this.v.roster();
    // The same job always picks the same member: a restarted coordinator reuses its own dispatch.
    const member = mine ? open(mine.dispatch, T.poolDispatch).record.member : selectMember(job.address, this.v.active(job));
    const dispatchRec: PoolDispatch = { pool: this.v.pool, roster: roster.address, job: job.address, offer: offer.address, member, coordinator: this.d.did, epoch: this.v.epoch(now), issuedAt: now };
    const dispatch = mine ? open(mine.dispatch, T.poolDispatch) : seal(T.poolDispatch, dispatchRec, this.d.signer);
    this.inFlight.add(job.address);
    try {
      // 1. Durable, 2. sent to the other members, 3. only then the input goes out.
      await this.d.trail.record(job.address, this.d.did, { dispatch: dispatch.bytes, job: job.bytes, offer: offer.bytes }, job.record.deadline, undefined, this.v.rosterOf(dispatch.record.roster) ?? roster);
      this.m?.dispatches.inc();
      this.d.log.info({ job: job.address, member, dispatch: dispatch.address, epoch: dispatchRec.epoch }, 'pool: dispatch recorded');
      const kept = await this.broadcast({ op: 'trail', dispatch: dispatch.bytes, job: job.bytes, offer: offer.bytes });
      // The work goes on (the copies are for recovery), but a member that refused to keep one is said so.
      const refused = kept.filter((x) => x.answer?.code !== undefined);
      if (refused.length) this.d.log.warn({ job: job.address, refused: refused.map((x) => ({ member: x.member, code: x.answer!.code })) }, 'pool: members refused to keep this dispatch in their trail (no copy there for recovery)');
      this.d.failpoint?.('pool.after-dispatch');
      const end = dispatchEnd(dispatch.record, job.record, this.d.options.memberTimeoutMs);
      if (member !== this.d.did) this.#elsewhere.add(job.address);
      const output = await this.#call(member, dispatch, job, offer, ctx, end);
      // Output that came back after the dispatch's budget (this process was paused, or its timers late) is work not
      // done: past it the other members may have failed the dispatch as lost, and the pool must not also complete it.
      if (this.d.clock() > end) throw new C0Error('POOL_MEMBER_TIMEOUT', `member ${member}'s output came back after the dispatch's budget (${end - dispatch.record.issuedAt} ms)`);
      const blank = blankOutputText(output);
      if (blank) throw new C0Error('POOL_OUTPUT_EMPTY', `member ${member} returned ${blank}: work not done`);
      this.m?.outcomes.inc({ member: this.#memberLabel(member), outcome: 'completed' });
      return output;
    } catch (e) {
      this.m?.outcomes.inc({ member: this.#memberLabel(member), outcome: outcomeLabel(e) });
      throw e;
    }
    // Still in flight, ended or failed: the provider signs and stores the receipt, then `closed` (or `abandoned`) releases it.
  }

  async #call(member: string, dispatch: Opened<PoolDispatch>, job: Opened<Job>, offer: Opened<Offer>, ctx: ExecContext, end: number): Promise<Uint8Array> {
    const budget = Math.max(1, end - this.d.clock());
    // Chosen itself: in the slot its exec stream holds, the process group recorded as the provider's own work is.
    if (member === this.d.did) {
      // Never a job the trail says ran here (its run log may have been rewound by a restore: sync.ts ranHere).
      if (await ranHere(this.d.trail, job.address, this.d.did)) throw new C0Error('POOL_ALREADY_RUN', 'a dispatch of this job to this member is closed: it ran here');
      // cleared with the run: the budget follows memberTimeoutMs, which has no upper bound (serve.ts `run` does the same)
      const timeout = clearableTimeoutSignal(budget);
      try {
        return await this.v.runHere(dispatch, job, ctx.input, { signal: AbortSignal.any([ctx.signal, timeout.signal]), onSpawn: ctx.onSpawn, onExit: ctx.onExit });
      } finally {
        timeout.clear();
      }
    }
    let r: PoolReply;
    try {
      // Given up with the run (the buyer gone, the provider stopping): the stream to the member is closed.
      r = await this.d.call(member, { op: 'run', dispatch: dispatch.bytes, job: job.bytes, offer: offer.bytes, input: ctx.input }, budget, ctx.signal);
    } catch (e) {
      const c = code(e);
      if (ctx.signal.aborted) throw ctx.signal.reason;
      if (/TIMEOUT|DEADLINE/.test(c)) throw new C0Error('POOL_MEMBER_TIMEOUT', `member ${member} did not answer in ${budget} ms`);
      if (/DIAL/.test(c)) throw new C0Error('POOL_MEMBER_UNREACHABLE', `member ${member} could not be reached: ${c}`);
      // Reached, but the stream broke before its answer was read (this process paused past the member's linger, a reset,
      // the connection dropped): the member keeps its run's answer, so it is asked for again within the budget.
      r = await this.#again(member, dispatch, job, ctx, end, c);
    }
    if (r.code === 'STORE_WRITE_FAILED') {
      // Its database took no write between its last ping and this dispatch: no more dispatches to it until it says so.
      this.v.storeFailed?.(member);
      this.d.log.warn({ job: job.address, member }, 'pool: a member’s database takes no writes (its run answered STORE_WRITE_FAILED); nothing more is dispatched to it until its ping says otherwise');
    }
    if (r.ok !== 'yes') throw new C0Error(typeof r.code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(r.code) ? r.code : 'POOL_MEMBER_REFUSED', `member ${member}: ${String(r.message ?? 'refused')}`, { detail: { remote: true } });
    return r.output instanceof Uint8Array ? r.output : new Uint8Array(0);
  }

  /**
   * The answer of `member`'s run of `dispatch`, asked for again after the stream of the `run` broke (`broke`: its code)
   * while the budget still runs: `op: result`, on the open connection or a new dial, never a second run (docs/pools.md
   * "A stream that breaks after the work"). A member that cannot be dialled again went away; one that holds no answer
   * (its run ended with the stream, it restarted, or a build before `result`: POOL_BAD_REQUEST) has none to give.
   */
  async #again(member: string, dispatch: Opened<PoolDispatch>, job: Opened<Job>, ctx: ExecContext, end: number, broke: string): Promise<PoolReply> {
    const left = end - this.d.clock();
    if (left <= 0) throw new C0Error('POOL_MEMBER_TIMEOUT', `member ${member}'s stream broke (${broke}) and the dispatch's budget (${end - dispatch.record.issuedAt} ms) is spent`);
    let a: PoolReply;
    try {
      a = await this.d.call(member, { op: 'result', dispatch: dispatch.address }, left, ctx.signal);
    } catch (e) {
      const c = code(e);
      if (ctx.signal.aborted) throw ctx.signal.reason;
      if (/TIMEOUT|DEADLINE/.test(c)) throw new C0Error('POOL_MEMBER_TIMEOUT', `member ${member}'s stream broke (${broke}), and asked again for its result it did not answer within the dispatch's budget`);
      if (/DIAL/.test(c)) throw new C0Error('POOL_MEMBER_UNREACHABLE', `member ${member} went away: the stream to it broke (${broke}) and it could not be reached again (${c}): stopped, crashed or cut off`);
      throw new C0Error('POOL_MEMBER_UNREACHABLE', `member ${member} was reached, but the stream to it broke (${broke}), and so did the one asking it again for its result (${c})`);
    }
    if (a.code === 'POOL_RESULT_UNKNOWN' || a.code === 'POOL_BAD_REQUEST') {
      throw new C0Error('POOL_MEMBER_UNREACHABLE', `member ${member} was reached, but the stream to it broke (${broke}), and asked again it holds no result of this dispatch (${a.code}: ${String(a.message ?? '')})`);
    }
    this.d.log.info({ job: job.address, member, broke, answer: a.ok === 'yes' ? 'output' : a.code }, 'pool: the stream to the member broke before its answer was read; asked again, it handed over its run’s answer (the work was not run again)');
    return a;
  }

  /**
   * The energy the receipt of won work states (docs/pools.md "Energy on a pooled receipt"). This node's meter ran over
   * the whole wait: for work another member ran, an estimator's figure is its watts × the wait, as if this machine
   * had done the work at full load (QA qaPnet F6: 3 kJ for a member stopped 30 s), and a counter's is this machine's
   * draw. A failed run elsewhere states {0, Estimator}, as a POOL_COORDINATOR_LOST receipt does: the member reports
   * no figure, and a steward charging releases by receipts' energy must not charge work not done at the coordinator's
   * full rate. A completed one keeps the measured figure (the stand-in for the member's work it always was).
   */
  energy(job: string, measured: Energy, failed: boolean): Energy {
    const elsewhere = this.#elsewhere.delete(job);
    return elsewhere && failed ? { uj: 0, grade: 'Estimator' } : measured;
  }

  /** After the receipt of won work is stored: settle a completed job, close the trail, tell the members. */
  async closed(r: Opened<Receipt>): Promise<void> {
    try {
      await this.#settleAndClose(r);
    } finally {
      this.inFlight.delete(r.record.job);
      this.#elsewhere.delete(r.record.job);
    }
  }

  /** Settle (completed) and close this member's own dispatch of the receipt's job with it, then tell the members. */
  async #settleAndClose(r: Opened<Receipt>): Promise<void> {
    const entry = (await this.d.trail.entries(r.record.job)).find((e) => e.key === DispatchTrail.key(r.record.job, this.d.did));
    if (!entry) return;
    let settlement: Uint8Array | undefined;
    if (r.record.status === 'completed') {
      const price: Money = r.record.price;
      // By the roster the job was dispatched under (the members check the split against it), not the one in use now.
      const dispatched = open(entry.entry.dispatch, T.poolDispatch, { trusted: true }).record.roster;
      const roster = this.v.rosterOf(dispatched) ?? this.v.roster();
      const parts = splitPrice(price, roster.record.members);
      settlement = seal(T.poolSettlement, { pool: this.v.pool, roster: roster.address, job: r.record.job, receipt: r.address, price, parts, signedAt: this.d.clock() }, this.d.signer).bytes;
    }
    await this.d.trail.close(r.record.job, this.d.did, r.record.status, r.bytes, settlement, givesWay);
    // To every member, not only those this one counts live: after a pause it counts nobody live yet, and a member that
    // closed this dispatch as lost meanwhile must learn that its coordinator's own outcome replaces that close.
    await this.broadcast({ op: 'closed', job: r.record.job, coordinator: this.d.did, receipt: r.bytes, ...(settlement ? { settlement } : {}) }, this.v.outcomeTo());
  }

  /** The receipt of won work could not be stored, so no `closed` follows: the dispatch is recovery's to close. */
  abandoned(job: string): void {
    this.inFlight.delete(job);
    this.#elsewhere.delete(job);
  }
}
