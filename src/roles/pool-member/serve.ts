/**
 * A pool member answering the other members on `/c0mpute/pool/1` (docs/pools.md;
 * the frames: protocol.ts): `ping` (liveness, and the roster in use for a
 * caller on an older one), `roster` and `left` (a newer roster, a member that
 * left), `trail` (a coordinator's dispatch, kept before the work starts),
 * `run` (dispatched work, at most once whoever asks, inside one of this
 * member's provider slots), `result` (the answer of such a run, again, to the
 * coordinator whose stream broke before it read it: results.ts), `closed` (how the work ended: kept only when it
 * checks out, src/pools/outcome.ts), `status` (the outcome held here, and
 * whether this member still runs the job as its coordinator, or as its chosen member), and `sync`/`fetch` (this
 * member's trail, to a member catching up on what it missed: sync.ts). The caller is authenticated by the connection's
 * key and must be a member; one that left is handed back its own `left` record and dispatches nothing.
 * Errors become `{code, message}` replies. Split out of member.ts.
 */
import type { PeerId } from '@libp2p/interface';
import { C0Error } from '../../errors.js';
import { didFromPeerId } from '../../node/peer-id.js';
import { open, type Opened } from '../../records/envelope.js';
import { hashHex } from '../../records/address.js';
import { compareBytes } from '../../records/cbor.js';
import { T, type Job, type PoolDispatch } from '../../records/kinds.js';
import { DispatchTrail } from '../../pools/trail.js';
import { givesWay, verifyOutcome } from '../../pools/outcome.js';
import { checkDispatch, type PoolReply } from './protocol.js';
import { fetchTrail, listTrail, mayFailLost, ranHere } from './sync.js';
import type { RosterState } from './roster-state.js';
import type { RunResults } from './results.js';
import { code } from './coordinator.js';
import { TRAIL_HORIZON_MS, trailKeep, type PoolMemberDeps } from './member.js';
import type { SlotRun } from '../provider/provider.js';
import { clearableTimeoutSignal, raceTimeout } from '../../util/timers.js';
import { truncateText } from '../../util/text.js';

/** What serving needs of the member. */
export interface MemberServePorts {
  d: PoolMemberDeps;
  pool: string;
  rs: RosterState;
  members(): string[];
  /** `member` was heard from now (liveness). */
  seen(member: string): void;
  /** The workloads `member` said it runs (its ping). */
  heardWorkloads(member: string, workloads: unknown): void;
  /** Whether `member` said its database takes no writes (its ping's `storeFailing`; absent: it takes writes). */
  heardStore(member: string, storeFailing: unknown): void;
  /** A roster another member sent (newer ones are noted). */
  heard(roster: Uint8Array): void;
  /** A member's `left` record, with the roster it left. */
  memberLeft(from: string, roster: Uint8Array, membership: Uint8Array): Promise<void>;
  /** Run a dispatched job on this member: at most once, whoever asks (under `run`'s signal, its process group recorded). */
  runHere(dispatch: Opened<PoolDispatch>, job: Opened<Job>, input: Uint8Array, run: SlotRun): Promise<Uint8Array>;
  /** Whether this member, as coordinator, has the job in flight (its run, or its receipt on the way). */
  running(job: string): boolean;
  /** Whether this member runs the job now as the member a dispatch chose. */
  runsHere(job: string): boolean;
  /** Settles once the catch-up at this member's start is over (sync.ts); undefined: nothing to wait for. */
  synced?(): Promise<unknown> | undefined;
  /** The answers of the runs done here, kept for the coordinator that asked (`op: result`: results.ts). */
  results?: RunResults;
}

/** The answer a run cut by the end of its stream leaves: no output is kept for the coordinator to ask for again. */
const CUT: PoolReply = { code: 'POOL_RESULT_UNKNOWN', message: 'the run of this dispatch ended with the stream it came on: no result is kept' };

function whenAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    const fail = () => reject(new C0Error('NET_STREAM_FAILED', 'the stream ended while the run it asks about went on'));
    if (signal.aborted) fail();
    else signal.addEventListener('abort', fail, { once: true });
  });
}

const notMember = (): C0Error => new C0Error('POOL_NOT_MEMBER', 'only the pool’s members may call this protocol');

/**
 * Who may call pool/1, decided by the connection's key before its request is read (ServeOptions.admit): a member of
 * the roster in use, as serveMember checks first. Without it a stranger's request (a frame of up to 4 MiB) was held
 * for the request phase (62 s) before it was refused.
 */
export function admitMembers(members: () => readonly string[]): (peer: PeerId) => C0Error | undefined {
  return (peer) => {
    try {
      return members().includes(didFromPeerId(peer)) ? undefined : notMember();
    } catch (e) {
      return e instanceof C0Error ? e : notMember();
    }
  };
}

/** Answer one request from `from` (authenticated by the connection's key); `signal` is the stream's (a `run` ends with it). */
export async function serveMember(p: MemberServePorts, frame: unknown, from: string, signal?: AbortSignal): Promise<PoolReply> {
  const f = frame as Record<string, unknown>;
  // a `run` whose work started here (its end is logged with it; a refusal before it, below)
  let started = false;
  try {
    if (!p.members().includes(from)) throw notMember();
    if (f?.op !== 'ping' || f.seq === p.rs.seq) p.seen(from);
    // A caller held as having left (it sent its own `left` record for the roster in use or a newer one): out of the
    // election here, so nothing it dispatches now is kept or run (docs/pools.md "A member leaves a running pool").
    const theirs = p.rs.leftRecordOf(from);
    switch (f?.op) {
      case 'ping':
        if (f.workloads !== undefined) p.heardWorkloads(from, f.workloads);
        p.heardStore(from, f.storeFailing);
        // One that left says so, with its record: the caller drops it from its active list.
        if (p.rs.left) return { code: 'POOL_MEMBER_LEFT', message: 'this member has left the pool', roster: p.rs.left.roster.bytes, membership: p.rs.left.membership.bytes };
        // A caller that left (its own signed record is held here) is handed that record back: one whose disk was
        // restored from before its leave adopts it (its own signature, of a roster of this pool no older than its
        // own) and stops quoting and coordinating, instead of rejoining silently. A build before this reads the
        // record as the callee's, which does not verify, and counts this member not live.
        if (theirs) return { code: 'POOL_MEMBER_LEFT', message: 'you have left this pool: your own signed `left` record', roster: theirs.roster.bytes, membership: theirs.membership.bytes };
        // A caller on an older roster gets the one in use here (how a member that missed the push learns it).
        // A member whose database takes no writes says so (it could keep neither a dispatch nor its run note): the
        // caller, as coordinator, dispatches nothing to it while it does (docs/pools.md "Member choice").
        // `now`: this member's wall clock, from which the caller judges it (docs/pools.md "Clocks and the election")
        return { ok: 'yes', seq: p.rs.seq, now: p.d.clock(), ...(p.d.workloads ? { workloads: [...p.d.workloads] } : {}), ...(p.d.storeProblem?.() !== undefined ? { storeFailing: 'yes' } : {}), ...(typeof f.seq === 'number' && f.seq < p.rs.seq ? { roster: p.rs.roster.bytes } : {}) };
      case 'roster': {
        if (!(f.roster instanceof Uint8Array)) throw new C0Error('POOL_BAD_REQUEST', 'roster: the roster envelope is required');
        p.heard(f.roster);
        return { ok: 'yes', seq: p.rs.seq };
      }
      case 'left': {
        if (!(f.roster instanceof Uint8Array) || !(f.membership instanceof Uint8Array)) throw new C0Error('POOL_BAD_REQUEST', 'left: the roster and the left membership are required');
        await p.memberLeft(from, f.roster, f.membership);
        return { ok: 'yes' };
      }
      case 'trail': {
        if (theirs) throw new C0Error('POOL_MEMBER_LEFT', 'the calling member has left the pool: it dispatches nothing');
        const { dispatch, job, offer } = checkDispatch(f, from, p.pool, p.members(), (a) => p.rs.rosterOf(a));
        // Bounded (docs/pools.md "Dispatch trail"): open entries per coordinator (POOL_TRAIL_FULL), all its entries kept
        // here, closed ones included (its earliest closed ones dropped for a new one), and the date a far deadline gives
        // the entry for the history's pruning.
        const until = Math.min(job.record.deadline, p.d.clock() + TRAIL_HORIZON_MS);
        // Under a roster this member holds (in use, or the newest heard): the job's settlement is split by it
        // (src/pools/outcome.ts), so a dispatch naming an older roster the pool once signed, with other weights, is refused.
        const roster = p.rs.rosterOf(dispatch.record.roster);
        if (!roster) throw new C0Error('POOL_ROSTER_STALE', 'the dispatch names a roster this member does not hold (the one in use, or the newest heard)');
        await p.d.trail.record(job.address, dispatch.signer, { dispatch: dispatch.bytes, job: job.bytes, offer: offer.bytes }, until, p.d.options.maxOpenDispatches, roster, trailKeep(p.d.options, true));
        return { ok: 'yes' };
      }
      case 'run': {
        if (p.rs.left) throw new C0Error('POOL_MEMBER_LEFT', 'this member has left the pool');
        const { dispatch, job } = checkDispatch(f, from, p.pool, p.members(), (a) => p.rs.rosterOf(a));
        if (dispatch.record.member !== p.d.did) throw new C0Error('POOL_NOT_CHOSEN', 'the dispatch names another member');
        // A member that left finishes the work it dispatched before: run only a dispatch of its that this member kept
        // (`op: trail`, refused once it had left), still open.
        if (theirs && !(await p.d.trail.entries(job.address)).some((e) => e.key === DispatchTrail.key(job.address, from) && e.entry.state === 'dispatched' && compareBytes(e.entry.dispatch, dispatch.bytes) === 0)) {
          throw new C0Error('POOL_MEMBER_LEFT', 'the calling member has left the pool: it dispatches nothing new');
        }
        const input = f.input;
        if (!(input instanceof Uint8Array) || input.length !== job.record.input.size || hashHex(input) !== job.record.input.hash) throw new C0Error('EXEC_INPUT_MISMATCH', 'the input does not match the job’s input hash and size');
        // The coordinator waits no longer than this (coordinator.ts #call): nor does the run hold this member's slot.
        const budget = Math.max(1, Math.min(job.record.timeoutMs, job.record.deadline - p.d.clock(), p.d.options.memberTimeoutMs));
        // At most once, also across a restore that rewound the run log: not before the catch-up at the start has
        // brought back the closed dispatches (within the budget), and never a job whose dispatch to this member closed.
        const synced = p.synced?.();
        if (synced) await raceTimeout(synced, budget, undefined);
        if (await ranHere(p.d.trail, job.address, p.d.did)) throw new C0Error('POOL_ALREADY_RUN', 'a dispatch of this job to this member is closed: it ran here');
        // Inside one of this member's provider slots, taken before the at-most-once claim (a busy member has not run it);
        // the slot's signal ends the run when the provider stops, and its hooks record the exec process group. The stream's
        // signal ends it with the stream.
        const slot = p.d.slots?.take(job.address);
        if (p.d.slots && !slot) throw new C0Error('POOL_MEMBER_BUSY', 'every slot of this member is busy');
        // memberTimeoutMs has no upper bound (nor timeoutMs, and a deadline may be 90 days out): the timer is cleared with
        // the run, not left (past Node's longest timer, a chain holding the run's AbortController) until the budget passes
        const timeout = clearableTimeoutSignal(budget);
        // Its answer is kept for this caller (a first run of the dispatch only): a coordinator whose stream breaks before
        // it reads the answer (it was paused, its connection dropped) asks for it again within its budget (`op: result`).
        const keep = p.results?.begin(dispatch.address, from, job.address, budget);
        // The member's side of the story (docs/pools.md "Operating a pool"): what it ran, for whom, and how it ended.
        const t0 = performance.now();
        started = true;
        p.d.log.info({ job: job.address, coordinator: from, dispatch: dispatch.address, workload: job.record.workload, budgetMs: budget }, 'pool: work received from the coordinator');
        try {
          const ends = [timeout.signal, ...(signal ? [signal] : []), ...(slot ? [slot.signal] : [])];
          const output = await p.runHere(dispatch, job, input, { ...slot, signal: AbortSignal.any(ends) });
          const reply: PoolReply = { ok: 'yes', output };
          keep?.(reply);
          p.d.log.info({ job: job.address, coordinator: from, ms: Math.round(performance.now() - t0), bytes: output.length }, 'pool: work done here; answering the coordinator');
          return reply;
        } catch (e) {
          const cut = signal?.aborted && !timeout.signal.aborted;
          keep?.(cut ? CUT : { code: code(e), message: truncateText((e as Error).message, 500) });
          p.d.log.info({ job: job.address, coordinator: from, ms: Math.round(performance.now() - t0), failure: code(e), ...(cut ? { cut: 'the stream it came on ended' } : {}) }, 'pool: work failed here; answering the coordinator with the code');
          throw e;
        } finally {
          timeout.clear();
          p.d.slots?.give(job.address);
        }
      }
      case 'result': {
        // The answer of a run of this dispatch the caller asked for before (kept, or still to come): never a second run.
        if (typeof f.dispatch !== 'string') throw new C0Error('POOL_BAD_REQUEST', 'result: the dispatch address is required');
        const kept = p.results?.get(f.dispatch, from);
        if (!kept) throw new C0Error('POOL_RESULT_UNKNOWN', 'no run of this dispatch for the calling member is held here (not run here, ended with its stream, or this member restarted since)');
        return await (signal ? Promise.race([kept, whenAborted(signal)]) : kept);
      }
      case 'closed': {
        if (typeof f.job !== 'string' || !(f.receipt instanceof Uint8Array)) throw new C0Error('POOL_BAD_REQUEST', 'closed: job and receipt required');
        // The entry closed is the named coordinator's (a build before these checks always names it; else the caller's).
        const coordinator = typeof f.coordinator === 'string' ? f.coordinator : from;
        const entries = await p.d.trail.entries(f.job);
        const target = entries.find((e) => e.key === DispatchTrail.key(f.job as string, coordinator));
        if (!target) return { ok: 'yes' };
        const rosterOf = (a: string) => p.rs.rosterOf(a) ?? p.d.trail.rosterOf(a);
        const o = verifyOutcome(target.entry, f.receipt, f.settlement, { pool: p.pool, entries: entries.map((e) => e.entry), roster: rosterOf, unsettled: from !== coordinator });
        // A dispatch is closed only with its coordinator's own outcome (signed by it: sent by it, with its settlement
        // when completed; or relayed, the receipt alone, by a member whose recovery heard it outside the pool), or with
        // a receipt failing it as lost signed by a member other than its coordinator: the sender's own (recovery's), or
        // one the sender took instead of signing a second and relays, signed by a member of the roster in use or of a
        // roster not older than the dispatch's (mayFailLost: as catching up judges it, sync.ts; docs/pools.md "A
        // coordinator that crashes"; its signature and pool proof checked above).
        const lostBy = o.receipt.signer;
        if (o.lost ? lostBy !== from && !mayFailLost(o.receipt, open(target.entry.dispatch, T.poolDispatch, { trusted: true }), p.members(), rosterOf) : o.coordinator !== coordinator) throw new C0Error('POOL_CLOSE_NOT_ENTITLED', 'a dispatch closes only with its coordinator’s own outcome, or with a POOL_COORDINATOR_LOST receipt a member of the roster in use signed');
        // A member that left closes only its own dispatches (the work it had in flight), with its own outcome: it
        // fails nobody's dispatch as lost, nor relays another's outcome.
        if (theirs && (o.lost || coordinator !== from)) throw new C0Error('POOL_MEMBER_LEFT', 'a member that left closes only its own dispatches, with its own outcome');
        if (o.lost && coordinator === p.d.did && p.running(f.job)) throw new C0Error('POOL_STILL_RUNNING', 'this member still runs the job it dispatched');
        // Its receipt and settlement count toward what another coordinator keeps here (its earliest closed ones dropped past the bound)
        await p.d.trail.close(f.job, coordinator, o.state, o.receipt.bytes, o.settlement?.bytes, o.lost ? undefined : givesWay, coordinator === p.d.did ? undefined : trailKeep(p.d.options, true));
        return { ok: 'yes' };
      }
      case 'sync':
        return await listTrail(p.d.trail, f.after);
      case 'fetch':
        return await fetchTrail(p.d.trail, f.keys);
      case 'status': {
        if (typeof f.job !== 'string') throw new C0Error('POOL_BAD_REQUEST', 'status: job required');
        const all = await p.d.trail.entries(f.job);
        // The named coordinator's entry when it is closed (a build before this names none), else any closed one.
        const named = typeof f.coordinator === 'string' ? all.find((x) => x.key === DispatchTrail.key(f.job as string, f.coordinator as string) && x.entry.state !== 'dispatched') : undefined;
        const e = (named ?? all.find((x) => x.entry.state !== 'dispatched') ?? all[0])?.entry;
        // `running`: whether this member still runs it as coordinator; `runs`: whether it runs it now as the member a
        // dispatch chose (recovery fails neither's dispatch: docs/pools.md "A coordinator that crashes").
        const now = { running: p.running(f.job) ? 'yes' : 'no', runs: p.runsHere(f.job) ? 'yes' : 'no' } as const;
        return e ? { state: e.state, ...(e.receipt ? { receipt: e.receipt } : {}), ...(e.settlement ? { settlement: e.settlement } : {}), ...now } : { state: 'unknown', ...now };
      }
      default:
        throw new C0Error('POOL_BAD_REQUEST', 'unknown op');
    }
  } catch (e) {
    const c = code(e);
    if (c === 'POOL_INTERNAL') p.d.log.warn({ err: (e as Error).message }, 'pool: request failed');
    else if (f?.op === 'run' && !started) p.d.log.info({ coordinator: from, ...(f.job instanceof Uint8Array ? { job: hashHex(f.job) } : {}), code: c }, 'pool: work from the coordinator refused here');
    return { code: c, message: truncateText((e as Error).message, 500) };
  }
}
