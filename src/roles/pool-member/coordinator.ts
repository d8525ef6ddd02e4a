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
import { T, type Job, type Offer, type PoolDispatch, type PoolRoster, type Receipt } from '../../records/kinds.js';
import type { Money } from '../../records/money.js';
import type { CborValue } from '../../records/cbor.js';
import { selectMember } from '../../pools/choice.js';
import { admit } from '../../pools/gates.js';
import { splitPrice } from '../../pools/settlement.js';
import { DispatchTrail, type TrailEntry } from '../../pools/trail.js';
import { receiptFor, type SlotRun } from '../provider/provider.js';
import type { ExecContext } from '../provider/executors.js';
import type { PoolReply } from './protocol.js';
import type { PoolMemberDeps } from './member.js';
import { timeoutSignal } from '../../util/timers.js';
import { REMOTE_LABEL_CODES, remoteCodeLabel } from '../../net/frames.js';

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
  ...['POOL_NOT_MEMBER', 'POOL_MEMBER_LEFT', 'POOL_NOT_CHOSEN', 'POOL_MEMBER_BUSY', 'POOL_BAD_REQUEST', 'POOL_ALREADY_RUN', 'POOL_ALREADY_DISPATCHED', 'POOL_DISPATCH_MISMATCH', 'POOL_DISPATCH_NOT_CALLERS', 'POOL_WRONG_POOL', 'POOL_ROSTER_STALE', 'POOL_INTERNAL'],
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
  /** The live members that can run the job, in roster order. */
  active(job: Opened<Job>): string[];
  /** Fresh liveness (before judging who is gone). */
  pingAll(): Promise<void>;
  /** Run a dispatched job on this member: at most once, whoever asks (under `run`'s signal, its process group recorded). */
  runHere(dispatch: Opened<PoolDispatch>, job: Opened<Job>, input: Uint8Array, run: SlotRun): Promise<Uint8Array>;
  /** A receipt as the pool's. */
  receipt(r: Receipt): Receipt;
  /** The members a broadcast goes to (other than this one). */
  broadcastTo(): string[];
}

export class PoolCoordinator {
  /**
   * Jobs this copy took on and has not closed: from the run's start until `closed` (or `abandoned`), so also while
   * the provider stores the receipt and streams the output. Recovery leaves them alone.
   */
  readonly inFlight = new Set<string>();

  constructor(
    private d: PoolMemberDeps,
    private v: CoordinatorView,
    private m: PoolMetrics | undefined,
  ) {}

  /**
   * Close every dispatch in the trail that nobody will finish: one this member
   * made before it restarted (not in flight), one whose coordinator is no
   * longer live, or one whose coordinator left the pool and no longer runs it or
   * cannot be reached (one that left finishes the dispatches it runs). A member
   * that holds the outcome already (asked first) lends it; otherwise the job is
   * failed with a signed receipt (POOL_COORDINATOR_LOST).
   */
  async recover(): Promise<number> {
    const pending = await this.d.trail.pending();
    if (!pending.length) return 0;
    // Fresh liveness before judging who is gone (a member just restarted has heard nobody yet).
    await this.v.pingAll();
    const live = new Set(this.v.live());
    let closed = 0;
    const seen = new Set<string>();
    // Past its history window (`history.keepDays` after the job's deadline) the other members have dropped their
    // closed copies: nobody could lend the outcome, and failing a job that may have completed and settled would be
    // false. Such an entry is left to the history's pruning (DispatchTrail.pruneHistory), which drops it with a warning.
    const windowMs = this.d.keepDays ? this.d.keepDays * 24 * 3600_000 : Infinity;
    const now = this.d.clock();
    for (const { job, entry } of pending) {
      if (this.inFlight.has(job) || seen.has(job)) continue;
      seen.add(job);
      if (now - open(entry.job, T.job).record.deadline > windowMs) continue;
      const by = open(entry.dispatch, T.poolDispatch).signer;
      if (by !== this.d.did && (live.has(by) || this.v.hasLeft(by))) {
        // A live coordinator's job, or one whose coordinator left the pool (a dispatch it already runs finishes as
        // usual): take its outcome if it has one (this member missed its `closed`, e.g. while down).
        const r = await this.d.call(by, { op: 'status', job }, this.d.options.livenessMs).catch(() => undefined);
        if (r?.receipt instanceof Uint8Array && (r.state === 'completed' || r.state === 'failed')) {
          await this.d.trail.close(job, by, r.state, r.receipt, r.settlement instanceof Uint8Array ? open(r.settlement, T.poolSettlement).bytes : undefined);
          continue;
        }
        // Left: it is never elected again, so its dispatch is closed here once it cannot be reached, or answers that
        // it no longer runs the job (it restarted, or could not store the receipt).
        if (live.has(by) || (r !== undefined && r.code === undefined && r.running !== 'no')) continue;
      }
      await this.#closeOrphan(job, entry);
      closed++;
    }
    return closed;
  }

  async #closeOrphan(job: string, entry: TrailEntry): Promise<void> {
    for (const m of this.v.live()) {
      if (m === this.d.did) continue;
      const r = await this.d.call(m, { op: 'status', job }, this.d.options.livenessMs).catch(() => undefined);
      if (r?.receipt instanceof Uint8Array && (r.state === 'completed' || r.state === 'failed')) {
        // With the settlement it holds: a completed job was settled by its coordinator before it was lost.
        await this.d.trail.close(job, open(entry.dispatch, T.poolDispatch).signer, r.state, r.receipt, r.settlement instanceof Uint8Array ? open(r.settlement, T.poolSettlement).bytes : undefined);
        return;
      }
    }
    const j = open(entry.job, T.job);
    const offer = open(entry.offer, T.offer);
    const d = open(entry.dispatch, T.poolDispatch);
    const now = this.d.clock();
    const receipt = seal(
      T.receipt,
      this.v.receipt(
        receiptFor(j, offer, {
          startedAt: d.record.issuedAt,
          completedAt: Math.max(now, d.record.issuedAt),
          energy: { uj: 0, grade: 'Estimator' },
          failure: { code: 'POOL_COORDINATOR_LOST', message: `the coordinator ${d.signer} that dispatched this job to ${d.record.member} is gone; the job is failed from the dispatch trail` },
        }),
      ),
      this.d.signer,
    );
    await this.d.trail.close(job, d.signer, 'failed', receipt.bytes);
    this.m?.outcomes.inc({ member: d.record.member, outcome: 'POOL_COORDINATOR_LOST' });
    this.d.log.warn({ job, coordinator: d.signer, member: d.record.member }, 'pool: closed an orphaned dispatch with a failed receipt');
    await this.d.publishReceipt(receipt).catch(() => {});
    await this.broadcast({ op: 'closed', job, coordinator: d.signer, receipt: receipt.bytes });
  }

  async broadcast(frame: Record<string, CborValue>): Promise<void> {
    await Promise.allSettled(this.v.broadcastTo().map((m) => this.d.call(m, frame, this.d.options.livenessMs)));
  }

  /** The coordinator's path for won work (issue #13 "The coordinator"). */
  async run(job: Opened<Job>, offer: Opened<Offer>, ctx: ExecContext): Promise<Uint8Array> {
    try {
      admit(job.record, offer.record.price, this.d.options);
    } catch (e) {
      this.m?.refusals.inc({ gate: code(e) });
      throw e;
    }
    const entries = await this.d.trail.entries(job.address);
    if (entries.some((e) => e.entry.state !== 'dispatched')) throw new C0Error('POOL_ALREADY_DISPATCHED', 'this job was dispatched and closed before');
    const mine = entries.find((e) => e.key === DispatchTrail.key(job.address, this.d.did))?.entry;
    const now = this.d.clock();
    const roster = this.v.roster();
    // The same job always picks the same member: a restarted coordinator reuses its own dispatch.
    const member = mine ? open(mine.dispatch, T.poolDispatch).record.member : selectMember(job.address, this.v.active(job));
    const dispatchRec: PoolDispatch = { pool: this.v.pool, roster: roster.address, job: job.address, offer: offer.address, member, coordinator: this.d.did, epoch: this.v.epoch(now), issuedAt: now };
    const dispatch = mine ? open(mine.dispatch, T.poolDispatch) : seal(T.poolDispatch, dispatchRec, this.d.signer);
    this.inFlight.add(job.address);
    try {
      // 1. Durable, 2. sent to the other members, 3. only then the input goes out.
      await this.d.trail.record(job.address, this.d.did, { dispatch: dispatch.bytes, job: job.bytes, offer: offer.bytes }, job.record.deadline);
      this.m?.dispatches.inc();
      this.d.log.info({ job: job.address, member, dispatch: dispatch.address, epoch: dispatchRec.epoch }, 'pool: dispatch recorded');
      await this.broadcast({ op: 'trail', dispatch: dispatch.bytes, job: job.bytes, offer: offer.bytes });
      this.d.failpoint?.('pool.after-dispatch');
      const output = await this.#call(member, dispatch, job, offer, ctx);
      if (output.length === 0 || new TextDecoder().decode(output).trim().length === 0) {
        throw new C0Error('POOL_OUTPUT_EMPTY', `member ${member} returned empty or whitespace output: work not done`);
      }
      this.m?.outcomes.inc({ member, outcome: 'completed' });
      return output;
    } catch (e) {
      this.m?.outcomes.inc({ member, outcome: outcomeLabel(e) });
      throw e;
    }
    // Still in flight, ended or failed: the provider signs and stores the receipt, then `closed` (or `abandoned`) releases it.
  }

  async #call(member: string, dispatch: Opened<PoolDispatch>, job: Opened<Job>, offer: Opened<Offer>, ctx: ExecContext): Promise<Uint8Array> {
    const budget = Math.max(1, Math.min(job.record.timeoutMs, job.record.deadline - this.d.clock(), this.d.options.memberTimeoutMs));
    // Chosen itself: in the slot its exec stream holds, the process group recorded as the provider's own work is.
    if (member === this.d.did) return this.v.runHere(dispatch, job, ctx.input, { signal: AbortSignal.any([ctx.signal, timeoutSignal(budget)]), onSpawn: ctx.onSpawn, onExit: ctx.onExit });
    let r: PoolReply;
    try {
      // Given up with the run (the buyer gone, the provider stopping): the stream to the member is closed.
      r = await this.d.call(member, { op: 'run', dispatch: dispatch.bytes, job: job.bytes, offer: offer.bytes, input: ctx.input }, budget, ctx.signal);
    } catch (e) {
      const c = code(e);
      if (ctx.signal.aborted) throw ctx.signal.reason;
      if (/TIMEOUT|DEADLINE/.test(c)) throw new C0Error('POOL_MEMBER_TIMEOUT', `member ${member} did not answer in ${budget} ms`);
      throw new C0Error('POOL_MEMBER_UNREACHABLE', `member ${member} could not be reached: ${c}`);
    }
    if (r.ok !== 'yes') throw new C0Error(typeof r.code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(r.code) ? r.code : 'POOL_MEMBER_REFUSED', `member ${member}: ${String(r.message ?? 'refused')}`, { detail: { remote: true } });
    return r.output instanceof Uint8Array ? r.output : new Uint8Array(0);
  }

  /** After the receipt of won work is stored: settle a completed job, close the trail, tell the members. */
  async closed(r: Opened<Receipt>): Promise<void> {
    try {
      const entry = (await this.d.trail.entries(r.record.job)).find((e) => e.key === DispatchTrail.key(r.record.job, this.d.did));
      if (!entry) return;
      let settlement: Uint8Array | undefined;
      if (r.record.status === 'completed') {
        const price: Money = r.record.price;
        const roster = this.v.roster();
        const parts = splitPrice(price, roster.record.members);
        settlement = seal(T.poolSettlement, { pool: this.v.pool, roster: roster.address, job: r.record.job, receipt: r.address, price, parts, signedAt: this.d.clock() }, this.d.signer).bytes;
      }
      await this.d.trail.close(r.record.job, this.d.did, r.record.status, r.bytes, settlement);
      await this.broadcast({ op: 'closed', job: r.record.job, coordinator: this.d.did, receipt: r.bytes, ...(settlement ? { settlement } : {}) });
    } finally {
      this.inFlight.delete(r.record.job);
    }
  }

  /** The receipt of won work could not be stored, so no `closed` follows: the dispatch is recovery's to close. */
  abandoned(job: string): void {
    this.inFlight.delete(job);
  }
}
