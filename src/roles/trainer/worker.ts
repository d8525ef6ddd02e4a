/**
 * The training worker (spec/compute-pool.md, the worker in training mode;
 * docs/training.md): one process per member of a signed run. It joins
 * (countersigned membership, exchanged with every member), then per step runs
 * forward/backward on its shard, the quantised ring all-reduce over
 * `/c0mpute/train/1`, the update, and signs a step commitment sent to every
 * member. At each epoch's end the elected coordinator finalises the
 * EpochAggregator's root, signs the epoch commitment, collects witness
 * countersignatures from the other members (each recomputes the root from the
 * commitments it holds) and sends the result to all; the others wait for it.
 *
 * Failure: a member silent for the run's timeoutMs fails the step
 * (TRAIN_PEER_TIMEOUT) or the epoch (TRAIN_EPOCH_INCOMPLETE); a member that
 * sends an all-reduce chunk no honest member can send (TRAIN_CHUNK_OUT_OF_RANGE,
 * TRAIN_CHUNK_INVALID) or signs a step commitment whose weights are not the
 * ones reached (TRAIN_COMMIT_FORGED, checked once this worker has done that
 * step) fails the step as its own fault: it is named, and this worker leaves
 * it out of the next view however it answers pings. With
 * onFailure=stop the worker stops (state `stopped`, the code kept); with
 * continue the survivors ping the view, exchange proposals, and resume under
 * view+1 from the start of the first uncommitted epoch (the last committed
 * state), the dropped members recorded in the next epoch commitment. A
 * member that finds the others settled the next view without it (a ping
 * answer at that view or later, its proposal refused as past, or no live
 * member's proposal arriving) stops with TRAIN_DROPPED rather than train on
 * as a view of its own. One whose next view would hold it alone (no other
 * member answers) stops with TRAIN_ALONE, but only once the members that did
 * not answer have been pinged again and again for the run's timeoutMs: a
 * member paused for less than that (GC, swap, SIGSTOP) is waited for.
 *
 * Its parts beside it: the epoch commitment and witnessing
 * (src/roles/trainer/epoch-commit.ts) and its status (status.json, the
 * contributions kept as they are counted: src/roles/trainer/status.ts).
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { C0Error } from '../../errors.js';
import type { Ed25519Signer } from '../../records/ed25519.js';
import { open, seal, type Opened } from '../../records/envelope.js';
import { createNetwork, type Network } from '../../net/node.js';
import { refusals, type AbuseReports } from '../../net/peer-abuse.js';
import { KeyedBuckets, TokenBucket, type BucketSpec } from '../../net/rate-limit.js';
import { peerIdFromDid } from '../../node/peer-id.js';
import { monotonicClock, type Clock } from '../../util/clock.js';
import { silentLogger, type Logger } from '../../util/log.js';
import { Mailbox, chunkBounds } from '../../training/allreduce.js';
import { EpochAggregator, electCoordinator } from '../../training/aggregator.js';
import { baselineAccuracy, iris, shard } from '../../training/data.js';
import { addressOf, cloneState, ringStep, type StepParams, type WorkerState } from '../../training/engine.js';
import { accuracy, initWeights, tensors, weightsBytes } from '../../training/model.js';
import { TRAIN_T, type TrainEpoch, type TrainMember, type TrainRun, type TrainStep, type TrainWitness } from '../../training/record-kinds.js';
import { ChunkAssembler, MAX_MESSAGE_BYTES, TrainWire, assemblyLimits, wireRing, type TrainMessage, type TrainWireOptions } from '../../training/transport.js';
import { Contributions, StatusFile, statusView } from './status.js';
import { Witness, commitEpoch, epochMismatch, type EpochParty, type EpochResult } from './epoch-commit.js';
import { refuseEvidence, writeRecord } from './record-file.js';
import { raceTimeout } from '../../util/timers.js';
import { makeDirs } from '../../util/make-dirs.js';

export interface TrainerOptions {
  signer: Ed25519Signer;
  did: string;
  run: Opened<TrainRun>;
  /** Members' listen multiaddrs (without /p2p). */
  addrs: Record<string, string>;
  /** Where status.json, epochs/ and steps/ go. */
  dir: string;
  /** The wall clock: only for the times written into records (joinedAt, signedAt, witnessedAt). */
  clock: Clock;
  /**
   * The monotonic clock (default `monotonicClock`, src/util/clock.ts) for what the worker times for itself: the join
   * deadline, an epoch's wait for step commitments, how long unanswering members are pinged before TRAIN_ALONE, steps per second
   * and the status.json cadence (`statusEveryMs`).
   * Never signed nor compared with a record's time, so a step of the wall clock never stretches them.
   */
  monoClock?: Clock;
  log?: Logger;
  /** Progress events (the CLI prints them). */
  onEvent?: (e: TrainerEvent) => void;
  /** How long to wait for every member's membership (default 60 s). */
  joinTimeoutMs?: number;
  /** Use this node's network instead of starting one (a provider running the run as a job); members are reached by DID. One worker runs on a node's network at a time (TRAIN_BUSY). */
  net?: Pick<Network, 'handle' | 'request' | 'did'> & Partial<Pick<Network, 'unhandle'>>;
  /** status.json while steps run: written at most this often, ms of `monoClock` (default STATUS_EVERY_MS); always at join, epoch ends, view changes and the finish. */
  statusEveryMs?: number;
  /**
   * The node's abuse score (net/peer-abuse.ts), when the worker runs on a node's network: a step commitment that does
   * not open is a strike (`invalid`); commitments refused for IGNORED_COMMIT_RATE and train/1 requests from keys
   * outside the run are free up to REFUSED_RATE per key, each past it reported (`report`).
   */
  abuse?: Pick<AbuseReports, 'invalid' | 'report'>;
}

export type TrainerEvent =
  | { e: 'joined'; members: string[] }
  | { e: 'step'; step: number; epoch: number; loss: number; stepsPerSec: number }
  | { e: 'epoch'; epoch: number; root: string; address: string; coordinator: string; witnesses: string[] }
  | { e: 'view'; view: number; members: string[]; dropped: string[]; resumeEpoch: number; cause: string; silent?: string }
  /** `unshown`: ignored commitments not shown as events since the last one shown (IGNORED_EVENT_RATE). */
  | { e: 'ignored'; code: string; from: string; step?: number; unshown?: number }
  | { e: 'done'; weights: string; accuracy: number; baseline: number; view?: number; dropped?: string[] }
  | { e: 'stopped'; code: string; message: string };

export type { EpochResult } from './epoch-commit.js';

/** TRAIN_PEER_BUSY: a receiver's node refused a message for its own limits (NET_BUFFER_LIMIT, …) until the run's timeout: no one's fault, like a deadline. */
const RECOVERABLE = new Set(['TRAIN_PEER_TIMEOUT', 'TRAIN_EPOCH_INCOMPLETE', 'NET_DIAL_FAILED', 'NET_PROTOCOL_UNSUPPORTED', 'NET_STREAM_FAILED', 'NET_DEADLINE', 'NET_PEER_NOT_FOUND', 'TRAIN_PEER_BUSY']);
/** A member's doing, detected here: recoverable by leaving that member out (`detail.member`). TRAIN_PEER_REFUSED: the member refused a chunk this worker sent (whatever code it answered), so it is the receiver's failure, never the sender's. */
const FAULTS = new Set(['TRAIN_CHUNK_OUT_OF_RANGE', 'TRAIN_CHUNK_INVALID', 'TRAIN_COMMIT_FORGED', 'TRAIN_PEER_REFUSED', 'TRAIN_EPOCH_OUT_OF_WINDOW']);
/** View changes a member whose chunk or result did not arrive may cause (without an excuse: see `#recover`) before it is left out of the proposal however it answers pings. */
export const STRIKES_TO_DROP = 2;
/** View changes in a row without a newly committed epoch, for a run of `n` members, before the run stops (TRAIN_VIEW_LIMIT); a step commitment's view is at most 64 in any case. */
export const MAX_STALLED_VIEWS = (n: number): number => 2 * n + 2;
const MAX_VIEW = 64;
/**
 * Step commitments from one member that this worker ignores (duplicates, out of the epoch, not opening, …), for a run
 * of `stepsPerEpoch`: this many at once, then this many a second; past it, that member's commitments are refused
 * TRAIN_RATE_LIMITED before they are opened. An honest member's are ignored only now and then (late ones after a
 * view change: at most an epoch's worth), so it never comes near; before, one key had 25,824 replayed commitments
 * signature-checked and shown in 20 s (review s40 A F2).
 */
export const IGNORED_COMMIT_RATE = (stepsPerEpoch: number): BucketSpec => ({ ratePerSec: 4, burst: 64 + 2 * stepsPerEpoch });
/** `ignored` events (each a line `train join` prints): this many at once, then this many a second; the rest are counted (status.json `ignored.count`) and the next event shown says how many were not (`unshown`). */
export const IGNORED_EVENT_RATE: BucketSpec = { ratePerSec: 1, burst: 20 };
/** A ping in a view change waits at most this long (ms; the run's timeoutMs if shorter). */
const PING_MS = 3_000;
/** Before TRAIN_ALONE, members that did not answer are pinged again at most this often (ms) until the run's timeoutMs has passed. */
const PING_EVERY_MS = 1_000;

/**
 * Where a tag falls in a view's order of receives: [view, step, phase, k]
 * with phase 0–3 the exponent and gradient all-reduces' reduce-scatter and
 * all-gather, 4 an epoch's step commitments (`commit/v<view>/e<epoch>`, what a
 * coordinator waits for) and 5 its result (`final/…`). A member sends a
 * chunk only after receiving the one before it in this order, so a member
 * that was waiting for an earlier tag of the same view could not have sent a
 * later one. Undefined for anything else.
 */
export function tagOrder(tag: string, stepsPerEpoch: number): number[] | undefined {
  const int = (x: string) => (x.length < 10 ? Number(x) : NaN);
  let m = /^v(0|[1-9]\d*)\/s(0|[1-9]\d*)\/([eg])\/(rs|ag)(0|[1-9]\d*)$/.exec(tag);
  if (m) return [int(m[1]!), int(m[2]!), (m[3] === 'g' ? 2 : 0) + (m[4] === 'ag' ? 1 : 0), int(m[5]!)];
  m = /^(commit|final)\/v(0|[1-9]\d*)\/e(0|[1-9]\d*)$/.exec(tag);
  if (m) return [int(m[2]!), (int(m[3]!) + 1) * stepsPerEpoch - 1, m[1] === 'commit' ? 4 : 5, 0];
  return undefined;
}

/** Whether a member that was waiting for `claim` is excused for not sending `missed`: same view, strictly earlier. */
export function excused(claim: unknown, missed: string, stepsPerEpoch: number): boolean {
  if (typeof claim !== 'string') return false;
  const a = tagOrder(claim, stepsPerEpoch);
  const b = tagOrder(missed, stepsPerEpoch);
  if (!a || !b || a[0] !== b[0]) return false;
  for (let i = 1; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
}

/** One turn of the event loop (setImmediate: after pending I/O and due timers). */
const yieldToLoop = () => new Promise<void>((r) => setImmediate(r));

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const dec = <T>(b: Uint8Array) => JSON.parse(new TextDecoder().decode(b)) as T;

/**
 * The most a worker's Mailbox holds in all, whatever the gang's size (its floor, 16 × gradient + 16 MiB, may be more):
 * every member's share fits below it for small models and small gangs; a large gang at the model bound gets this.
 */
export const MAILBOX_MAX_BYTES = 1024 * 1024 * 1024;

export class TrainerWorker {
  readonly runAddr: string;
  readonly rec: TrainRun;
  readonly params: StepParams;
  net: Network | undefined;
  wire!: TrainWire;
  readonly box: Mailbox;
  state: WorkerState;
  view = 0;
  members: string[];
  dropped: string[] = [];
  status: 'joining' | 'training' | 'done' | 'stopped' = 'joining';
  stopReason: { code: string; message: string } | undefined;
  lastCommittedEpoch = -1;
  readonly epochs: EpochResult[] = [];
  readonly losses: Array<{ step: number; view: number; loss: number }> = [];
  readonly views: Array<{ view: number; members: string[]; dropped: string[]; resumeEpoch: number; cause: string; silent?: string }> = [];
  readonly ignored: Array<{ code: string; from: string; step?: number }> = [];
  ignoredCount = 0;
  accuracy: number | undefined;
  readonly #memberships = new Map<string, Uint8Array>();
  readonly #aggs = new Map<string, EpochAggregator>();
  readonly #ownWeights = new Map<string, string>();
  readonly #snapshots = new Map<number, WorkerState>();
  /** Members caught at a fault (DID → code): never in a view this worker proposes again. */
  readonly #faulty = new Map<string, string>();
  /** View changes in a row a member caused by not delivering, without an excuse (DID → count); cleared when an epoch commits. */
  readonly #strikes = new Map<string, number>();
  /** Per view: the tag of the receive this worker is waiting for, or last waited for in vain (what a ping asks). */
  readonly #waits = new Map<number, string>();
  /** The furthest epoch committed so far, and the view changes since. */
  #bestEpoch = -1;
  #stalledViews = 0;
  /** What the epoch's commitment reads of this worker (src/roles/trainer/epoch-commit.ts), and its witness side. */
  readonly #epochParty: EpochParty;
  readonly #witness: Witness;
  readonly #pending = new Set<Promise<unknown>>();
  readonly #log: Logger;
  /** Parts of chunks not yet whole, bounded by what the run's model implies (#chunkSize, assemblyLimits). */
  readonly #chunks: ChunkAssembler;
  #startedAt = 0;
  #stepsDone = 0;
  /** The step running (or last run) in this view: which chunk tags are expected. */
  #step = 0;
  readonly #contributions = new Contributions();
  readonly #statusFile: StatusFile;
  readonly #mono: Clock;
  /** Per member: ignored step commitments it may still send before more are refused unopened (IGNORED_COMMIT_RATE). */
  readonly #ignoredCommits: KeyedBuckets;
  /** `ignored` events shown (IGNORED_EVENT_RATE), and how many were not since the last one shown. */
  readonly #ignoredShown: TokenBucket;
  #unshown = 0;
  /** Refusals an honest key earns now and then (outside the run, over the commitment rate): free up to REFUSED_RATE per key, then reported. */
  readonly #refused: (peer: string) => void;

  constructor(private readonly o: TrainerOptions) {
    this.rec = o.run.record;
    this.runAddr = o.run.address;
    this.members = [...this.rec.members];
    this.#log = o.log ?? silentLogger();
    this.#mono = o.monoClock ?? monotonicClock;
    this.#ignoredCommits = new KeyedBuckets(IGNORED_COMMIT_RATE(this.rec.stepsPerEpoch), this.#mono, Math.max(16, this.rec.members.length));
    this.#ignoredShown = new TokenBucket(IGNORED_EVENT_RATE, this.#mono);
    this.#refused = refusals(o.abuse?.report, this.#mono);
    if (!this.members.includes(o.did)) throw new C0Error('TRAIN_NOT_MEMBER', `${o.did} is not a member of run ${this.runAddr}`);
    const data = iris();
    if (data.hash !== this.rec.data.hash) throw new C0Error('TRAIN_DATA_MISMATCH', `run trains on data ${this.rec.data.hash}, this node holds ${data.hash}`);
    const shape = { layers: this.rec.model.layers };
    const w = initWeights(shape, this.rec.init.seed);
    if (addressOf(weightsBytes(w)) !== this.rec.init.weights) throw new C0Error('TRAIN_INIT_MISMATCH', 'the starting weights do not hash to the run’s init.weights');
    this.state = { w, r: new Float64Array(w.length) };
    this.params = { shape, lr: Number(this.rec.lr), batch: this.rec.batch, feedback: this.rec.quant.feedback === 'yes' };
    // Two steps of all-reduce chunks from a predecessor hold under 4 × the int32 gradient; room for two predecessors (a view change) and the small messages.
    const grad = 4 * w.length;
    // a member never needs more than two steps of chunks waiting (under 8·(N−1) ≤ 504 messages): one sender holds at most a quarter of the count
    refuseEvidence(o.dir);
    // the total is at least the members' shares together, so members filling theirs never take the room an honest member's share needs
    // (review s43 R8 F3: with 16·grad + 16 MiB in all, colluders filled it and an honest chunk was refused TRAIN_MAILBOX_FULL naming its sender)
    // It is capped at MAILBOX_MAX_BYTES (1 GiB): at the model bound a share is about 130 MiB, and 64 members' shares
    // together would be 8 GiB a colluding gang could make an honest member hold; past the cap, the old refusal stands.
    const perSender = 8 * grad + 2 * MAX_MESSAGE_BYTES;
    const floor = 16 * grad + 16 * MAX_MESSAGE_BYTES;
    const maxBytes = Math.max(floor, Math.min(perSender * this.rec.members.length, MAILBOX_MAX_BYTES));
    this.box = new Mailbox({ timeoutMs: this.rec.timeoutMs, maxHeld: 4096, maxHeldPerSender: 1024, maxBytesPerSender: perSender, maxBytes, name: (r) => this.rec.members[r] ?? `rank ${r}` });
    // the largest chunk a member sends: half the gradient (a ring of two; the exponents' chunks are far smaller)
    const maxChunk = 4 * Math.ceil(w.length / 2);
    this.#chunks = new ChunkAssembler((from, tag, data) => this.box.put(from, tag, data), assemblyLimits(maxChunk, this.rec.members.length), Date.now, (from, tag) => this.#chunkSize(from, tag, maxChunk));
    // a refusal is DATA_DIR_UNWRITABLE, as for the run's records (record-file.ts); not mkdirSync's recursive form, which never returns under /proc (src/util/make-dirs.ts)
    for (const sub of ['epochs', 'steps']) makeDirs(join(o.dir, sub), { code: 'DATA_DIR_UNWRITABLE', field: 'dataDir', what: `cannot write ${join(o.dir, sub)}` });
    this.#epochParty = {
      runAddr: this.runAddr,
      rec: this.rec,
      did: o.did,
      signer: o.signer,
      clock: o.clock,
      mono: this.#mono,
      live: () => ({ wire: this.wire, view: this.view, members: this.members, dropped: this.dropped }),
      ownWeights: (view, step) => this.#ownWeights.get(`${view}:${step}`),
      agg: (view, epoch) => this.#aggInWindow(view, epoch),
      fault: (did, code) => {
        if (did !== o.did && this.members.includes(did)) this.#faulty.set(did, code);
      },
    };
    this.#witness = new Witness(this.#epochParty, o.dir);
    this.#statusFile = new StatusFile(join(o.dir, 'status.json'), () => this.statusView(), this.#mono, o.statusEveryMs);
  }

  #rank = (did: string): number => this.rec.members.indexOf(did);
  #emit(e: TrainerEvent): void {
    this.o.onEvent?.(e);
  }

  async start(): Promise<void> {
    if (this.o.net) {
      // the protocol handler is the node's: a second run on it would take the first one's messages
      const busy = onNet.get(this.o.net);
      if (busy && busy !== this) throw new C0Error('TRAIN_BUSY', `this node is already a member of run ${busy.runAddr}; it trains one run at a time`);
      onNet.set(this.o.net, this);
      this.wire = new TrainWire(this.o.net, (from, head, payload) => this.#onMessage(from, head, payload), this.#wireOptions());
      try {
        await this.wire.start();
      } catch (e) {
        onNet.delete(this.o.net);
        throw e;
      }
      return;
    }
    const self = this.o.addrs[this.o.did];
    if (!self) throw new C0Error('TRAIN_RUN_FILE', `no address for ${this.o.did} in the run bundle`);
    const bootstrap = this.members.filter((d) => d !== this.o.did && this.o.addrs[d]).map((d) => `${this.o.addrs[d]}/p2p/${peerIdFromDid(d).toString()}`);
    this.net = await createNetwork({ signer: this.o.signer, listen: [self], bootstrap, loopback: true, syncOnConnect: [], logger: this.#log, listenAs: { who: 'this member', fix: 'its address in the run bundle must be free on this machine' } });
    this.wire = new TrainWire(this.net, (from, head, payload) => this.#onMessage(from, head, payload), this.#wireOptions());
    try {
      await this.wire.start();
      await this.net.start();
    } catch (e) {
      // a node that did not start (its address in use or not listenable: NET_LISTEN_FAILED) is stopped, or its open
      // handles keep the process alive after the error is printed
      await this.net.stop().catch(() => {});
      throw e;
    }
  }

  /**
   * Who may send on train/1: the run's members only (joins, chunks, commitments, witness requests, results, pings and
   * proposals all come from members; the buyer and other nodes never send here). Any other key is refused
   * TRAIN_NOT_MEMBER before its request is read, so keys outside the run cannot fill this node's request byte budget
   * and have a member's chunk refused for it (review s40 A F1).
   */
  #wireOptions(): TrainWireOptions {
    const admit = (did: string): C0Error | undefined => {
      if (this.#rank(did) >= 0) return undefined;
      this.#refused(peerIdFromDid(did).toString());
      return new C0Error('TRAIN_NOT_MEMBER', `only the members of run ${this.runAddr} may send on train/1`);
    };
    return { admit, mono: this.#mono };
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.#pending]);
    this.box.close(new C0Error('TRAIN_STOPPED', 'worker stopped'));
    if (this.o.net && onNet.get(this.o.net) === this) {
      await this.wire.stop();
      onNet.delete(this.o.net);
    }
    await this.net?.stop();
  }

  #track(p: Promise<unknown>): void {
    const q = p.catch(() => {}).finally(() => this.#pending.delete(q));
    this.#pending.add(q);
  }

  // ------------------------------------------------------------------ messages

  async #onMessage(from: string, head: TrainMessage, payload: Uint8Array): Promise<Array<Uint8Array | Record<string, number | string>> | void> {
    // the network refuses other keys before their request is read (#wireOptions); a network that does not apply `admit` is checked here
    if (this.#rank(from) < 0) throw new C0Error('TRAIN_NOT_MEMBER', 'only the run’s members may send this');
    if (head.k === 'commit') return this.#onCommit(from, payload);
    switch (head.k) {
      case 'member': {
        const m = open(payload, TRAIN_T.member) as Opened<TrainMember>;
        if (m.signer !== from || m.record.run !== this.runAddr) throw new C0Error('TRAIN_BAD_MEMBERSHIP', 'membership for another run or signer');
        this.#memberships.set(from, payload);
        return;
      }
      case 'chunk':
        if (typeof head.tag === 'string' && this.#expected(from, head.k, head.tag) === 'past') return;
        // views only shrink: a member left out of this one sends nothing this worker takes (its parts were let go: #prune)
        if (!this.members.includes(from)) throw new C0Error('TRAIN_BAD_MESSAGE', `${from} is not in view ${this.view}: its chunks are not taken`, { detail: { from } });
        try {
          this.#chunks.put(this.#rank(from), head, payload);
        } catch (e) {
          // parts that are not what its chunk makes: the sender's doing (it is left out of the next view), never the receiver's
          if (e instanceof C0Error && e.code === 'TRAIN_CHUNK_INVALID' && from !== this.o.did) this.#faulty.set(from, e.code);
          throw e;
        }
        return;
      case 'ping': {
        // asked about a tag it did not deliver: what it was itself waiting for in that view, if anything
        const v = typeof head.tag === 'string' ? tagOrder(head.tag, this.rec.stepsPerEpoch)?.[0] : undefined;
        const waiting = v === undefined ? undefined : this.#waits.get(v);
        return [{ lastEpoch: this.lastCommittedEpoch, view: this.view, ...(waiting ? { waiting } : {}) }];
      }
      case 'view':
      case 'final':
        if (typeof head.tag !== 'string') throw new C0Error('TRAIN_BAD_MESSAGE', `${head.k} without a tag`);
        if (payload.length > MAX_MESSAGE_BYTES) throw new C0Error('TRAIN_BAD_MESSAGE', `a ${head.k} message of ${payload.length} bytes from ${from}; at most ${MAX_MESSAGE_BYTES}`);
        if (this.#expected(from, head.k, head.tag) === 'past') {
          // a proposal for a view this member is already in, from a member that view left out: it was dropped, and is told so (TRAIN_DROPPED on its side); from a member of the view it is a late retry
          if (head.k === 'view' && !this.members.includes(from)) throw new C0Error('TRAIN_VIEW_PAST', `${head.tag} is past: this member is in view ${this.view}, which does not include ${from}`, { detail: { view: this.view } });
          return;
        }
        this.box.put(this.#rank(from), head.tag, payload.slice());
        return;
      case 'witness':
        return [await this.#witness.countersign(from, payload)];
      default:
        throw new C0Error('TRAIN_BAD_MESSAGE', `unknown message ${head.k}`);
    }
  }

  /**
   * Whether a chunk, view or final tag may be held now: `now` — a chunk
   * `v<view>/s<step>/{e,g}/{rs,ag}<k>` of this view for the step running or the
   * next (a member is never more than one step ahead in a ring), or of the next
   * view for a step of an epoch it may resume at; `view/v<n>` for the next two
   * views; `final/v<view>/e<epoch>` for the epoch running. `past` — a step,
   * view or epoch already done here (dropped unheld: a late retry). Any other
   * tag is TRAIN_BAD_MESSAGE naming the sender, so nothing is held under a tag
   * that will never be taken.
   */
  #expected(from: string, kind: string, tag: string): 'now' | 'past' {
    const spe = this.rec.stepsPerEpoch;
    const own = this.lastCommittedEpoch + 1;
    const int = (x: string | undefined) => (x !== undefined && x.length < 10 ? Number(x) : NaN);
    let m: RegExpExecArray | null;
    if (kind === 'chunk' && (m = /^v(0|[1-9]\d*)\/s(0|[1-9]\d*)\/[eg]\/(?:rs|ag)(0|[1-9]\d*)$/.exec(tag))) {
      const [v, s, k] = [int(m[1]), int(m[2]), int(m[3])];
      if (k <= this.rec.members.length - 2) {
        if (v < this.view || (v === this.view && s < this.#step)) return 'past';
        if (v === this.view && s <= this.#step + 1) return 'now';
        if (v === this.view + 1 && s >= Math.max(0, own - 2) * spe && s < (own + 1) * spe) return 'now';
      }
    } else if (kind === 'view' && (m = /^view\/v(0|[1-9]\d*)$/.exec(tag))) {
      const v = int(m[1]);
      if (v <= this.view) return 'past';
      if (v <= this.view + 2) return 'now';
    } else if (kind === 'final' && (m = /^final\/v(0|[1-9]\d*)\/e(0|[1-9]\d*)$/.exec(tag))) {
      const [v, e] = [int(m[1]), int(m[2])];
      if (v < this.view || (v === this.view && e < own)) return 'past';
      if (v === this.view && e === own) return 'now';
    }
    throw new C0Error('TRAIN_BAD_MESSAGE', `${from} sent ${kind} ${tag.slice(0, 80)}, not expected in view ${this.view} at step ${this.#step}`, { detail: { from } });
  }

  /** Drop what is held under tags no longer expected (a step or view done), and the partial chunks of members no longer in the view. */
  #prune(): void {
    const now = (tag: string) => {
      const kind = tag.startsWith('view/') ? 'view' : tag.startsWith('final/') ? 'final' : 'chunk';
      try {
        return this.#expected('', kind, tag) === 'now';
      } catch {
        return false;
      }
    };
    this.box.prune(now);
    this.#chunks.prune((from, tag) => this.members.includes(this.rec.members[from] ?? '') && now(tag));
  }

  /**
   * The bytes of chunk `tag` from run rank `from` (ChunkSizeOf): in this view, exactly its chunk of the ring
   * (ringAllReduce: in reduce-scatter step k the sender at ring place r sends chunk r − k, in all-gather step k chunk
   * r + 1 − k, of the gradient or of the exponents); in the next view, whose members are not known yet, at most
   * `maxChunk` (a ring of two).
   */
  #chunkSize(from: number, tag: string, maxChunk: number): { bytes: number; exact: boolean } | undefined {
    const m = /^v(0|[1-9]\d*)\/s(?:0|[1-9]\d*)\/([eg])\/(rs|ag)(0|[1-9]\d*)$/.exec(tag);
    if (!m) return undefined;
    const len = m[2] === 'g' ? this.state.w.length : tensors(this.params.shape).length;
    const r = this.members.indexOf(this.rec.members[from] ?? '');
    if (Number(m[1]) !== this.view || r < 0) return { bytes: m[2] === 'g' ? maxChunk : 4 * len, exact: false };
    const n = this.members.length;
    const k = Number(m[4]);
    const c = ((((m[3] === 'rs' ? r - k : r + 1 - k) % n) + n) % n);
    const [a, b] = chunkBounds(len, n, c);
    return { bytes: 4 * (b - a), exact: true };
  }

  /** The (view:epoch) keys of the aggregators this worker holds (at most the epoch running and the one last committed, of this view). */
  heldEpochs(): string[] {
    return [...this.#aggs.keys()];
  }

  /**
   * The aggregator of (view, epoch) for a peer's request (a witness request):
   * only in the window a member holds epoch state for — this view, the epoch
   * running (the first uncommitted) or, if still held, the one just committed
   * (a late request). An epoch ahead of it no honest coordinator asks about
   * (TRAIN_EPOCH_OUT_OF_WINDOW, `detail.ahead`); one behind it, or another
   * view's, is done here (TRAIN_EPOCH_OUT_OF_WINDOW). Nothing is created for
   * either.
   */
  #aggInWindow(view: number, epoch: number): EpochAggregator {
    const own = this.lastCommittedEpoch + 1;
    const held = this.#aggs.get(`${view}:${epoch}`);
    if (view === this.view && epoch === own && epoch < this.rec.epochs) return this.#agg(view, epoch);
    if (view === this.view && epoch === own - 1 && held) return held;
    const ahead = view > this.view || (view === this.view && epoch > own);
    throw new C0Error('TRAIN_EPOCH_OUT_OF_WINDOW', `epoch ${epoch} of view ${view} is outside the epochs this member holds state for (epoch ${own} of view ${this.view}, or the one before it)`, { detail: { epoch, view, ahead } });
  }

  /**
   * Let go of the aggregators no request can use any more: every other view's, and this view's before `keepFrom`; and of
   * the weights reached at their steps, which only those aggregators and the checks of this view's running or last
   * committed epoch read (before, one entry per step was kept for the whole run: ~158 MB a million steps; review s43 R4 F4).
   */
  #dropAggs(keepFrom: number): void {
    for (const [key, a] of this.#aggs) if (a.scope.view !== this.view || a.scope.epoch < keepFrom) this.#aggs.delete(key);
    const fromStep = keepFrom * this.rec.stepsPerEpoch;
    for (const key of this.#ownWeights.keys()) {
      const [view, step] = key.split(':').map(Number) as [number, number];
      if (view !== this.view || step < fromStep) this.#ownWeights.delete(key);
    }
  }

  /** How many steps' weights this worker holds (at most the epoch running and the one last committed, of this view). */
  heldOwnWeights(): number {
    return this.#ownWeights.size;
  }

  #agg(view: number, epoch: number): EpochAggregator {
    const key = `${view}:${epoch}`;
    let a = this.#aggs.get(key);
    if (!a) {
      const spe = this.rec.stepsPerEpoch;
      a = new EpochAggregator({ run: this.runAddr, epoch, view, fromStep: epoch * spe, toStep: epoch * spe + spe - 1, members: view === this.view ? this.members : [] }, (s) => this.#ownWeights.get(`${view}:${s}`));
      this.#aggs.set(key, a);
    }
    return a;
  }

  #ignore(code: string, from: string, step?: number): void {
    this.ignoredCount++;
    const i = { code, from, ...(step !== undefined ? { step } : {}) };
    if (this.ignored.length < 200) this.ignored.push(i);
    // every one is counted; only so many are shown (each shown is a line of `train join`)
    if (!this.#ignoredShown.take()) {
      this.#unshown++;
      return;
    }
    this.#emit({ e: 'ignored', ...i, ...(this.#unshown ? { unshown: this.#unshown } : {}) });
    this.#unshown = 0;
  }

  /** A commitment from `from` ignored in #onCommit: takes one of its IGNORED_COMMIT_RATE tokens. */
  #ignoreCommit(code: string, from: string, step?: number): void {
    this.#ignoredCommits.take(from);
    this.#ignore(code, from, step);
  }

  #onCommit(from: string, payload: Uint8Array): void {
    // a member that keeps sending commitments this worker ignores is refused before they are opened (signature checked)
    if (!this.#ignoredCommits.has(from)) {
      this.#refused(peerIdFromDid(from).toString());
      const r = IGNORED_COMMIT_RATE(this.rec.stepsPerEpoch);
      throw new C0Error('TRAIN_RATE_LIMITED', `more than ${r.burst} ignored step commitments, then ${r.ratePerSec} a second, from ${from}: refused unopened`);
    }
    // opened (signature checked) once here; the aggregator takes it opened
    let opened: Opened<TrainStep>;
    try {
      opened = open(payload, TRAIN_T.step) as Opened<TrainStep>;
    } catch {
      // no member sends a commitment that does not open
      this.o.abuse?.invalid(peerIdFromDid(from).toString());
      return this.#ignoreCommit('TRAIN_COMMIT_INVALID', from);
    }
    const rec = opened.record;
    const epoch = Math.floor(rec.step / this.rec.stepsPerEpoch);
    // only the epoch running is taken (a commitment for a later one, or past the run's last, is never held: docs/training.md "Epoch roots")
    if (rec.view !== this.view || epoch <= this.lastCommittedEpoch || epoch > this.lastCommittedEpoch + 1 || epoch >= this.rec.epochs || rec.run !== this.runAddr) {
      return this.#ignoreCommit(rec.run !== this.runAddr ? 'TRAIN_COMMIT_WRONG_RUN' : 'TRAIN_COMMIT_OUT_OF_EPOCH', from, rec.step);
    }
    const r = this.#agg(this.view, epoch).offer(opened);
    if (r.counted) this.#contributions.counted(`${this.view}:${epoch}`, r.signer);
    else if ('ignored' in r) this.#ignoreCommit(r.ignored.code, from, rec.step);
    // else held until this worker has done that step (#settle)
  }

  /** Decide the commitments held for steps this worker has now done; then fail the step if a member of the view is at fault. */
  #settle(agg: EpochAggregator, view: number, epoch: number): void {
    for (const r of agg.settle()) {
      if (r.counted) this.#contributions.counted(`${view}:${epoch}`, r.signer);
      else this.#ignore(r.ignored.code, r.ignored.signer ?? '', r.ignored.step);
    }
    this.#noteForged();
    const bad = this.members.find((m) => this.#faulty.has(m));
    if (bad) throw new C0Error(this.#faulty.get(bad)!, `${bad} is at fault (${this.#faulty.get(bad)}): leaving it out of the view`, { detail: { member: bad } });
  }

  /** Members of this view that signed a forged step commitment are at fault. */
  #noteForged(): void {
    for (const a of this.#aggs.values()) {
      if (a.scope.view !== this.view) continue;
      for (const d of a.forged) if (d !== this.o.did && this.members.includes(d) && !this.#faulty.has(d)) this.#faulty.set(d, 'TRAIN_COMMIT_FORGED');
    }
  }

  // ------------------------------------------------------------------ join

  async join(): Promise<void> {
    // a membership this node signed for the run before (a join that timed out, say) is kept and sent again, not signed anew
    const path = join(this.o.dir, 'membership.cbor');
    let mine: Uint8Array | undefined;
    if (existsSync(path)) {
      const held = new Uint8Array(readFileSync(path));
      let m: Opened<TrainMember> | undefined;
      try {
        m = open(held, TRAIN_T.member) as Opened<TrainMember>;
      } catch {
        // empty or torn: an older build's write that failed (a full disk) or was killed. A membership is sent only once it is synced whole, so this one never was: set aside (not deleted) and signed anew
        const aside = `${path}.unreadable`;
        renameSync(path, aside);
        this.#log.warn({ path, aside, bytes: held.length }, 'membership file unreadable (an earlier join’s failed write): set aside, signing anew');
      }
      if (m && (m.signer !== this.o.did || m.record.run !== this.runAddr)) throw new C0Error('TRAIN_RUN_EXISTS', `${path} holds another membership; not overwritten`, { detail: { path } });
      if (m) mine = held;
    }
    if (!mine) {
      const m: TrainMember = { run: this.runAddr, joinedAt: this.o.clock() };
      mine = seal(TRAIN_T.member, m as never, this.o.signer).bytes;
      writeRecord(path, mine);
    }
    this.#memberships.set(this.o.did, mine);
    const others = this.members.filter((d) => d !== this.o.did);
    const deadline = this.#mono() + (this.o.joinTimeoutMs ?? 60_000);
    const sent = new Set<string>();
    // each member's last refusal: kept trying (it may not be up yet, or be restarted on this run), named at the timeout
    const refused = new Map<string, C0Error | Error>();
    while (sent.size < others.length || others.some((d) => !this.#memberships.has(d))) {
      if (this.box.closedBy) throw this.box.closedBy;
      for (const d of others) {
        if (sent.has(d)) continue;
        try {
          await this.wire.send(d, { k: 'member' }, mine, 5_000);
          sent.add(d);
          refused.delete(d);
        } catch (e) {
          refused.set(d, e as Error);
        }
      }
      if (this.#mono() > deadline) {
        const missing = others.filter((d) => !this.#memberships.has(d) || !sent.has(d));
        throw new C0Error('TRAIN_JOIN_TIMEOUT', `members not joined: ${missing.map((d) => `${d}: ${notJoined(refused.get(d), sent.has(d))}`).join('; ')}`, {
          detail: { members: Object.fromEntries(missing.map((d) => [d, refused.get(d) instanceof C0Error ? (refused.get(d) as C0Error).code : sent.has(d) ? 'NO_MEMBERSHIP' : 'NO_ANSWER'])) },
        });
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    this.#emit({ e: 'joined', members: this.members });
    this.status = 'training';
    this.#writeStatus();
  }

  // ------------------------------------------------------------------ training

  async run(): Promise<void> {
    this.#startedAt = this.#mono();
    let epoch = 0;
    try {
      while (epoch < this.rec.epochs) {
        if (!this.#snapshots.has(epoch)) this.#snapshots.set(epoch, cloneState(this.state));
        this.#snapshots.delete(epoch - 2);
        try {
          await this.#runEpoch(epoch);
          epoch++;
        } catch (e) {
          // a malformed message from a member (TRAIN_BAD_MESSAGE), or a chunk or commitment no honest member sends, is that member's failure
          if (!(e instanceof C0Error) || !(RECOVERABLE.has(e.code) || e.code === 'TRAIN_BAD_MESSAGE' || this.#isFault(e))) throw e;
          this.#noteForged();
          epoch = await this.#recover(e);
          const snap = this.#snapshots.get(epoch);
          if (!snap) throw new C0Error('TRAIN_STOPPED', `no snapshot to resume epoch ${epoch} from`);
          this.state = cloneState(snap);
        }
      }
      const d = iris();
      this.accuracy = accuracy(this.params.shape, this.state.w, d.test.x, d.test.y);
      writeFileSync(join(this.o.dir, 'weights.bin'), weightsBytes(this.state.w));
      this.status = 'done';
      this.#writeStatus();
      this.#emit({ e: 'done', weights: addressOf(weightsBytes(this.state.w)), accuracy: this.accuracy, baseline: baselineAccuracy(d.test), ...(this.dropped.length ? { view: this.view, dropped: [...this.dropped] } : {}) });
    } catch (e) {
      const err = e instanceof C0Error ? e : new C0Error('TRAIN_FAILED', (e as Error).message);
      this.status = 'stopped';
      this.stopReason = { code: err.code, message: err.message };
      try {
        this.#writeStatus();
      } catch (we) {
        // a full disk that stopped the run may refuse the status too: the stop and its code are what is reported
        this.#log.warn({ err: (we as Error).message }, 'status not written');
      }
      this.#emit({ e: 'stopped', ...this.stopReason });
      throw err;
    }
  }

  /** Between two blocks of a step's gradient: the event loop runs, and the worker's end (the mailbox closed) ends the step. */
  readonly #between = async (): Promise<void> => {
    await yieldToLoop();
    if (this.box.closedBy) throw this.box.closedBy;
  };

  async #runEpoch(epoch: number): Promise<void> {
    const spe = this.rec.stepsPerEpoch;
    const view = this.view;
    const ring = wireRing(this.wire, this.box, this.members, this.o.did, this.#rank, this.rec.timeoutMs, (tag, state) => this.#noteWait(view, tag, state));
    const data = shard(iris().train, ring.rank, ring.size);
    const agg = this.#agg(view, epoch);
    for (let step = epoch * spe; step < (epoch + 1) * spe; step++) {
      // Every step yields to the event loop (a macrotask: a microtask would not let timers or sockets run). A one-member
      // run awaits nothing else that is not already settled (no chunk, no commitment, no witness), so without this its
      // node froze: its API, libp2p and signal handlers never ran, nor did the job's deadline (review s43 R4 F1). The
      // worker's end (its job aborted or timed out, `stop()`: the mailbox closed) ends the run here, between two steps.
      await yieldToLoop();
      if (this.box.closedBy) throw this.box.closedBy;
      this.#step = step;
      this.#prune();
      // the gradient yields to the event loop after every block of work too: one step of a large model is seconds (review s43 R8 F2)
      const res = await ringStep(ring, this.params, this.state, data, step, `v${view}/s${step}`, this.#between).catch((e: unknown) => {
        throw this.#blame(e);
      });
      this.#ownWeights.set(`${view}:${step}`, res.weights);
      this.#settle(agg, view, epoch);
      const rec: TrainStep = { run: this.runAddr, view, step, grad: res.grad, weights: res.weights, lossMicro: Math.round(res.loss * 1e6), signedAt: this.o.clock() };
      const env = seal(TRAIN_T.step, rec as never, this.o.signer);
      writeRecord(join(this.o.dir, 'steps', view === 0 ? `${step}.cbor` : `${step}.v${view}.cbor`), env.bytes);
      if (agg.offer(env as Opened<TrainStep>).counted) this.#contributions.counted(`${view}:${epoch}`, this.o.did);
      for (const d of this.members) if (d !== this.o.did) this.#track(this.wire.send(d, { k: 'commit' }, env.bytes, this.rec.timeoutMs));
      this.box.forget(`v${view}/s${step}/`);
      this.#stepsDone++;
      this.losses.push({ step, view, loss: res.loss });
      if (this.losses.length > 1000) this.losses.shift();
      const secs = Math.max(1, this.#mono() - this.#startedAt) / 1000;
      this.#emit({ e: 'step', step, epoch, loss: res.loss, stepsPerSec: this.#stepsDone / secs });
      this.#statusFile.step();
    }
    const coordinator = electCoordinator(this.runAddr, epoch, this.members);
    let result: EpochResult;
    if (coordinator === this.o.did) {
      result = await commitEpoch(this.#epochParty, epoch, agg).catch((e: unknown) => {
        // waiting in vain for members' step commitments: what this coordinator answers a ping about its result
        if (e instanceof C0Error && e.code === 'TRAIN_EPOCH_INCOMPLETE') this.#noteWait(view, `commit/v${view}/e${epoch}`, 'failed');
        throw e;
      });
    } else {
      const tag = `final/v${view}/e${epoch}`;
      this.#noteWait(view, tag, 'start');
      const bytes = await this.box.take(this.#rank(coordinator), tag, this.rec.timeoutMs * 3).catch((e: unknown) => {
        this.#noteWait(view, tag, 'failed');
        throw e;
      });
      this.#noteWait(view, tag, 'done');
      const { ep, envelope, witnesses } = parseFinal(bytes, coordinator);
      if (ep.signer !== coordinator || ep.record.epoch !== epoch || ep.record.view !== view) throw new C0Error('TRAIN_EPOCH_INCOMPLETE', 'the coordinator’s epoch commitment does not match');
      const mine = agg.finalise();
      if (mine.root !== ep.record.root) throw new C0Error('TRAIN_EPOCH_INCOMPLETE', 'the coordinator’s root differs from this worker’s');
      // a signed commitment that does not say what this epoch was (range, leaves, weights, dropped) is the coordinator's failure
      const why = epochMismatch(this.#epochParty, ep.record, this.dropped);
      if (why) throw new C0Error('TRAIN_BAD_MESSAGE', `epoch result from ${coordinator}: ${why}`, { detail: { from: coordinator } });
      // what is kept is read from the signed commitment, not the message around it
      result = { epoch, view, address: ep.address, root: ep.record.root, coordinator, envelope, witnesses, leaves: mine.leaves };
    }
    writeRecord(join(this.o.dir, 'epochs', view === 0 ? `${epoch}.json` : `${epoch}.v${view}.json`), new TextEncoder().encode(JSON.stringify(result, null, 2)));
    this.epochs.push(result);
    this.#contributions.committed(`${result.view}:${result.epoch}`);
    this.lastCommittedEpoch = epoch;
    // the committed epoch's aggregator stays for a late witness request; earlier ones are let go
    this.#dropAggs(epoch);
    if (epoch > this.#bestEpoch) {
      this.#bestEpoch = epoch;
      this.#stalledViews = 0;
      this.#strikes.clear();
    }
    this.#emit({ e: 'epoch', epoch, root: result.root, address: result.address, coordinator, witnesses: result.witnesses.map((w) => w.did) });
    this.#writeStatus();
  }

  // ------------------------------------------------------------------ failure

  /** A bad chunk is its sender's fault: name the member (its ring rank is its place in the view) and keep it out of the next view; a refused chunk is its receiver's (named by the ring). */
  #blame(e: unknown): unknown {
    if (!(e instanceof C0Error) || !FAULTS.has(e.code) || e.detail?.remote) return e;
    if (e.code === 'TRAIN_PEER_REFUSED') {
      const m = e.detail?.member;
      if (typeof m === 'string' && m !== this.o.did && this.members.includes(m)) this.#faulty.set(m, e.code);
      return e;
    }
    const rank = e.detail?.rank;
    const did = typeof rank === 'number' ? this.members[rank] : undefined;
    if (!did || did === this.o.did) return e;
    this.#faulty.set(did, e.code);
    return new C0Error(e.code, `${e.message} (${did})`, { detail: { ...e.detail, member: did } });
  }

  #isFault(e: C0Error): boolean {
    const m = e.detail?.member;
    return FAULTS.has(e.code) && typeof m === 'string' && this.#faulty.has(m);
  }

  /** A receive of `view` starts, ends, or fails (kept: what this worker answers a ping about that view). */
  #noteWait(view: number, tag: string, state: 'start' | 'done' | 'failed'): void {
    if (state === 'start' || state === 'failed') this.#waits.set(view, tag);
    else if (this.#waits.get(view) === tag) this.#waits.delete(view);
  }

  /** The member whose chunk or epoch result did not arrive (TRAIN_PEER_TIMEOUT), or whose step commitments are missing (TRAIN_EPOCH_INCOMPLETE), and the tag it did not deliver. */
  #silent(cause: C0Error): { did: string; tag: string } | undefined {
    const d = cause.detail ?? {};
    if (cause.code === 'TRAIN_PEER_TIMEOUT' && typeof d.rank === 'number' && typeof d.tag === 'string') {
      const did = this.rec.members[d.rank];
      return did && did !== this.o.did && this.members.includes(did) ? { did, tag: d.tag } : undefined;
    }
    if (cause.code === 'TRAIN_EPOCH_INCOMPLETE' && typeof d.member === 'string' && typeof d.epoch === 'number' && d.member !== this.o.did && this.members.includes(d.member)) {
      return { did: d.member, tag: `commit/v${this.view}/e${d.epoch}` };
    }
    return undefined;
  }

  async #recover(cause: C0Error): Promise<number> {
    const member = cause.detail?.member;
    this.#log.warn({ code: cause.code, err: cause.message, ...(typeof member === 'string' ? { member } : {}) }, 'training step failed');
    if (this.rec.onFailure === 'stop') throw new C0Error('TRAIN_STOPPED', `a member stopped answering (${cause.code}: ${cause.message}); the run stops as its spec says`, { detail: { cause: cause.code } });
    const limit = MAX_STALLED_VIEWS(this.rec.members.length);
    if (this.#stalledViews >= limit || this.view + 1 > MAX_VIEW) {
      throw new C0Error('TRAIN_VIEW_LIMIT', `${this.#stalledViews} view changes without a newly committed epoch (at most ${limit}; views at most ${MAX_VIEW}), the last for ${cause.code}: the run cannot make progress`, { detail: { cause: cause.code, view: this.view } });
    }
    // a member that sent a malformed message, or a chunk or commitment no honest member sends, is not asked again: it is dropped
    const culprit = cause.code === 'TRAIN_BAD_MESSAGE' ? (cause.detail as { from?: unknown } | undefined)?.from : undefined;
    const silent = this.#silent(cause);
    const others = this.members.filter((d) => d !== this.o.did && d !== culprit && !this.#faulty.has(d));
    // the silent member is asked what it was itself waiting for: a member waiting for an earlier receive of the view could not send (the ring's cascade)
    const ping = (d: string, ms: number) => this.wire.send(d, { k: 'ping', ...(silent?.did === d ? { tag: silent.tag } : {}) }, undefined, ms);
    const askedAt = this.#mono();
    let pings = await Promise.allSettled(others.map((d) => ping(d, Math.min(PING_MS, this.rec.timeoutMs))));
    // whether the silent member, having answered, gets a strike (not excused) and is left out for it (its STRIKES_TO_DROP-th)
    const strike = (ps: typeof pings): 'none' | 'strike' | 'out' => {
      const i = silent ? others.indexOf(silent.did) : -1;
      const p = ps[i];
      if (!silent || p?.status !== 'fulfilled') return 'none';
      if (excused((p.value[0] as { waiting?: unknown } | undefined)?.waiting, silent.tag, this.rec.stepsPerEpoch)) return 'none';
      return (this.#strikes.get(silent.did) ?? 0) + 1 >= STRIKES_TO_DROP ? 'out' : 'strike';
    };
    const live = (ps: typeof pings) => others.filter((d, i) => ps[i]!.status === 'fulfilled' && !(d === silent?.did && strike(ps) === 'out'));
    // a view of this worker alone ends its run (TRAIN_ALONE, below), which cannot be undone: not on one short ping. A member that did not
    // answer (paused, swapping, a slow link) is asked again until the run's timeoutMs has passed since it was first asked
    if (this.rec.members.length > 1 && live(pings).length === 0) pings = await this.#askAgain(others, pings, ping, askedAt + this.rec.timeoutMs, (ps) => live(ps).length > 0);
    const askedMs = this.#mono() - askedAt;
    const next = this.view + 1;
    // a live member that answers it is already in view `next` or later says it settled that view without this worker's proposal (not sent yet).
    // That is its word alone (a ping answer is not signed, and no other member vouches for it): it left this worker out, so it is left out of this
    // worker's next view. This worker was dropped (TRAIN_DROPPED) only if no other member carries on with it (below): one member that claims a
    // later view must not end every honest member's run (review s43 R8 F1). It answered, so the proposal still names it alive: leaving it out
    // there would drop it from the views of the members that take the proposal, whose view it may well be in
    const claims = new Map<string, number>();
    this.#movedOn(others, pings, next, claims);
    let alive = [this.o.did, ...others.filter((_, i) => pings[i]!.status === 'fulfilled')].sort();
    const struck = strike(pings);
    if (silent && struck !== 'none') {
      this.#strikes.set(silent.did, (this.#strikes.get(silent.did) ?? 0) + 1);
      if (struck === 'out') {
        // it answers pings but does not deliver: left out however it answers
        this.#faulty.set(silent.did, 'TRAIN_PEER_TIMEOUT');
        alive = alive.filter((d) => d !== silent.did);
      }
    }
    const proposal = { view: next, alive, resume: this.lastCommittedEpoch + 1 };
    const tag = `view/v${next}`;
    const peers = alive.filter((d) => d !== this.o.did);
    const sent = await Promise.allSettled(peers.map((d) => this.wire.send(d, { k: 'view', tag }, enc(proposal), this.rec.timeoutMs)));
    // a member that moved on to view `next` without this worker answers its proposal so (it got there between the ping and the proposal):
    // its word, like a ping answer's, leaves only it out of this worker's view
    for (const [i, r] of sent.entries()) {
      const e = r.status === 'rejected' ? r.reason : undefined;
      if (e instanceof C0Error && e.code === 'TRAIN_VIEW_PAST' && e.detail?.remote) {
        const v = Number(e.detail.view);
        claims.set(peers[i]!, Number.isSafeInteger(v) && v >= next && v <= MAX_VIEW ? v : next);
      }
    }
    let members = alive.filter((d) => !claims.has(d));
    let resume = proposal.resume;
    const missing: string[] = [];
    for (const d of [...members]) {
      if (d === this.o.did) continue;
      try {
        // a proposal that is malformed or out of range (TRAIN_BAD_MESSAGE) is its sender's failure, like silence
        const p = parseProposal(await this.box.take(this.#rank(d), tag, this.rec.timeoutMs * 3), d, next, this.members, proposal.resume, (e) => this.#snapshots.has(e));
        members = members.filter((m) => p.alive.includes(m));
        resume = Math.min(resume, p.resume);
      } catch (e) {
        if (e instanceof C0Error && e.code === 'TRAIN_BAD_MESSAGE') this.#log.warn({ from: d, err: e.message }, 'bad view proposal');
        else missing.push(d);
        members = members.filter((m) => m !== d);
      }
    }
    if (members.length < 1 || !members.includes(this.o.did)) throw new C0Error('TRAIN_STOPPED', 'no membership view to continue in');
    if (missing.length) {
      // live members whose proposal did not come may have settled the view without this worker meanwhile: asked again
      const again = await Promise.allSettled(missing.map((d) => this.wire.send(d, { k: 'ping' }, undefined, Math.min(PING_MS, this.rec.timeoutMs))));
      this.#movedOn(missing, again, next, claims);
    }
    // no other member carries on with this worker, and one that answered says it is in a later view: the others settled it without this worker
    const by = [...claims][0];
    if (members.length === 1 && by) throw this.#dropped(by[0], by[1], claims.size);
    // every live member's proposal failed to come: this worker is not in their view; it does not carry the run on as a view of its own
    if (members.length === 1 && alive.length > 1) {
      throw new C0Error('TRAIN_DROPPED', `no proposal for view ${next} came from the live members (${peers.join(', ')}): they moved on without this member, which does not go on as a one-member view`, { detail: { view: next, members: peers } });
    }
    // a run of several members never goes on as a one-member view: no one could witness its epochs (TRAIN_VERIFY_NO_WITNESS), so it would sign
    // commitments nothing verifies and end `done` (a member job: a completed receipt) with weights no one else reached. Nobody answered that
    // this worker was left out (that is TRAIN_DROPPED, above): the others are gone (exited, a run that finished while this one was stalled) or were left out
    if (members.length === 1 && this.rec.members.length > 1) throw this.#alone(next, others, pings, culprit, askedMs);
    const dropped = this.members.filter((m) => !members.includes(m));
    this.dropped.push(...dropped);
    this.view = next;
    this.#stalledViews++;
    for (const v of [...this.#waits.keys()]) if (v < next - 1) this.#waits.delete(v);
    this.#contributions.viewChanged(next);
    this.members = members;
    this.lastCommittedEpoch = Math.min(this.lastCommittedEpoch, resume - 1);
    this.#step = resume * this.rec.stepsPerEpoch;
    this.#prune();
    // the old view's aggregators are abandoned: no commitment or witness request of that view is taken any more
    this.#dropAggs(Infinity);
    const v = { view: next, members, dropped, resumeEpoch: resume, cause: cause.code, ...(silent ? { silent: silent.did } : {}) };
    this.views.push(v);
    this.#emit({ e: 'view', ...v });
    this.#writeStatus();
    return resume;
  }

  /**
   * TRAIN_DROPPED: `by` answered that it is in view `view` (at or past the one this worker would propose), which therefore left this worker
   * out, and no other member carries on with this worker (`claimed`: how many members answered so).
   */
  #dropped(by: string, view: number, claimed: number): C0Error {
    const others = claimed > 1 ? ` (as ${claimed - 1} other member${claimed > 2 ? 's' : ''} answered)` : '';
    return new C0Error('TRAIN_DROPPED', `dropped from the run: ${by} is in view ${view}${others}, which does not include this member, and no other member carries on with it (a dropped member is not taken back); this member was in view ${this.view}`, {
      detail: { view, by, ownView: this.view, claimed },
    });
  }

  /**
   * Ping the members of `asked` that have not answered (`pings`, kept in step with `asked`) again, each ping within what is left
   * before `deadline` (of the monotonic clock) and at most PING_MS, a round at most every PING_EVERY_MS, until `enough` holds
   * or the deadline passes; `pings` with each member's latest outcome.
   */
  async #askAgain<T>(asked: string[], pings: Array<PromiseSettledResult<T>>, ping: (d: string, ms: number) => Promise<T>, deadline: number, enough: (ps: Array<PromiseSettledResult<T>>) => boolean): Promise<Array<PromiseSettledResult<T>>> {
    const ps = [...pings];
    // the worker's end (its job aborted or timed out, the worker stopped: the mailbox closed) ends the wait at once, with its reason
    if (this.box.closedBy) throw this.box.closedBy;
    const closed = this.box.whenClosed();
    for (;;) {
      if (this.box.closedBy) throw this.box.closedBy;
      const round = this.#mono();
      const left = deadline - round;
      const todo = asked.flatMap((d, i) => (ps[i]!.status === 'rejected' ? [i] : []));
      if (left <= 0 || !todo.length || enough(ps)) return ps;
      const again = await Promise.race([Promise.allSettled(todo.map((i) => ping(asked[i]!, Math.min(PING_MS, left)))), closed]);
      for (const [j, i] of todo.entries()) ps[i] = again[j]!;
      if (enough(ps)) return ps;
      const pause = Math.min(round + PING_EVERY_MS, deadline) - this.#mono();
      if (pause > 0) await raceTimeout(closed, pause, undefined);
    }
  }

  /** TRAIN_ALONE: the view `next` would hold this worker alone; names each other member of the view and why it is not in it (`askedMs`: how long the unreachable ones were asked). */
  #alone(next: number, asked: string[], pings: Array<PromiseSettledResult<unknown[]>>, culprit: unknown, askedMs: number): C0Error {
    const unreachable = asked.filter((_, i) => pings[i]!.status === 'rejected');
    const leftOut = this.members.filter((d) => d !== this.o.did && !unreachable.includes(d));
    const why = [
      ...(unreachable.length ? [`${unreachable.join(', ')} did not answer pings for ${Math.round(askedMs)} ms (the run's timeoutMs is ${this.rec.timeoutMs}): gone, or not reachable`] : []),
      ...leftOut.map((d) => `${d} was left out (${d === culprit ? 'TRAIN_BAD_MESSAGE' : (this.#faulty.get(d) ?? 'its proposal did not come')})`),
    ];
    return new C0Error('TRAIN_ALONE', `no other member of view ${this.view} is left for view ${next}: ${why.join('; ')}. A one-member view's epochs cannot be witnessed, so this member stops rather than train the run on alone`, {
      detail: { view: next, ownView: this.view, unreachable, leftOut, askedMs: Math.round(askedMs) },
    });
  }

  /**
   * Into `claims`, each member whose ping answer says it is at view `next` or later (it settled that view without this worker). Only its
   * word: the member is left out of this worker's next view, and this worker stops only if no other member carries on with it.
   */
  #movedOn(peers: string[], answers: Array<PromiseSettledResult<unknown[]>>, next: number, claims: Map<string, number>): void {
    for (const [i, r] of answers.entries()) {
      if (r.status !== 'fulfilled') continue;
      const v = (r.value[0] as { view?: unknown } | undefined)?.view;
      if (typeof v === 'number' && Number.isSafeInteger(v) && v >= next && v <= MAX_VIEW) claims.set(peers[i]!, v);
    }
  }

  // ------------------------------------------------------------------ status

  statusView(): Record<string, unknown> {
    const secs = Math.max(1, this.#mono() - this.#startedAt) / 1000;
    return statusView(this, { self: this.o.did, stepsPerSec: this.#startedAt ? this.#stepsDone / secs : 0, contributions: this.#contributions.view() });
  }

  #writeStatus(): void {
    this.#statusFile.write();
  }
}

/** The worker running on a shared network (a provider's node), by network: one at a time. */
const onNet = new WeakMap<object, TrainerWorker>();

/** A peer's JSON message that must be an object; else `bad` (TRAIN_BAD_MESSAGE naming the sender). */
function decodeObject(bytes: Uint8Array, bad: (why: string) => C0Error): Record<string, unknown> {
  let v: unknown;
  try {
    v = dec<unknown>(bytes);
  } catch {
    throw bad('not JSON');
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad('not an object');
  return v as Record<string, unknown>;
}

/**
 * A member's view proposal, checked before it is used: JSON {view, alive,
 * resume} for view `next`, `alive` a DID-ordered subset of the current
 * `members` naming the sender, `resume` an integer epoch within one of this
 * worker's own (`own`, its first uncommitted epoch: a member may have missed
 * the last epoch's result, or got it when this worker did not), one before it
 * only with a snapshot to resume from. Anything else is TRAIN_BAD_MESSAGE (the
 * sender is treated as failed).
 */
export function parseProposal(bytes: Uint8Array, from: string, next: number, members: string[], own: number, hasSnapshot: (epoch: number) => boolean): { alive: string[]; resume: number } {
  const bad = (why: string) => new C0Error('TRAIN_BAD_MESSAGE', `view proposal from ${from}: ${why}`, { detail: { from } });
  const { view, alive, resume } = decodeObject(bytes, bad);
  if (view !== next) throw bad(`for view ${String(view)}, expected ${next}`);
  if (!Array.isArray(alive) || !alive.every((d, i) => typeof d === 'string' && members.includes(d) && (i === 0 || (alive[i - 1] as string) < d))) throw bad('alive must be DID-ordered members of the current view');
  if (!alive.includes(from)) throw bad('alive must name its sender');
  // a member that missed the last epoch's result is one behind, one that got it while this worker did not is one ahead
  if (typeof resume !== 'number' || !Number.isInteger(resume) || resume < own - 1 || resume > own + 1 || (resume < own && !hasSnapshot(resume))) throw bad(`resume ${String(resume)} is not within one epoch of ${own}`);
  return { alive: alive as string[], resume };
}

/**
 * Why a member is not joined at the join's timeout, by the last refusal it gave: a membership for another run
 * (TRAIN_BAD_MEMBERSHIP: it joined a run with another address, a bundle differing in seed or createdAt, say), or the
 * last failure to reach it, or ours taken but its own never received.
 */
function notJoined(e: Error | undefined, sent: boolean): string {
  if (sent) return 'took this node’s membership but sent none of its own for this run';
  if (!e) return 'not reached';
  if (e instanceof C0Error && e.code === 'TRAIN_BAD_MEMBERSHIP') return `on another run (TRAIN_BAD_MEMBERSHIP: it refused this run’s membership; is it joined to another bundle of the same members?)`;
  return `${e instanceof C0Error ? `${e.code}: ` : ''}${e.message.slice(0, 160)}`;
}

/**
 * The coordinator's `final` message: JSON whose `envelope` (hex) opens as an
 * epoch commitment, and whose `witnesses` are kept only where the
 * countersignature opens, is signed by the member it names (once) and covers
 * this commitment and root. A message that does not parse or open is
 * TRAIN_BAD_MESSAGE naming the coordinator (treated as its failure).
 */
export function parseFinal(bytes: Uint8Array, from: string): { ep: Opened<TrainEpoch>; envelope: string; witnesses: EpochResult['witnesses'] } {
  const bad = (why: string) => new C0Error('TRAIN_BAD_MESSAGE', `epoch result from ${from}: ${why}`, { detail: { from } });
  const { envelope, witnesses } = decodeObject(bytes, bad);
  if (typeof envelope !== 'string' || envelope.length % 2 !== 0 || !/^[0-9a-f]*$/.test(envelope)) throw bad('envelope must be hex');
  if (!Array.isArray(witnesses)) throw bad('witnesses must be a list');
  let ep: Opened<TrainEpoch>;
  try {
    ep = open(new Uint8Array(Buffer.from(envelope, 'hex')), TRAIN_T.epoch) as Opened<TrainEpoch>;
  } catch (e) {
    throw bad(`the epoch commitment does not open (${(e as Error).message})`);
  }
  const kept: EpochResult['witnesses'] = [];
  for (const w of witnesses.slice(0, ep.record.members.length)) {
    const { did, envelope: we } = (w ?? {}) as { did?: unknown; envelope?: unknown };
    if (typeof did !== 'string' || !ep.record.members.includes(did) || kept.some((k) => k.did === did) || typeof we !== 'string' || !/^[0-9a-f]*$/.test(we)) continue;
    try {
      const wo = open(new Uint8Array(Buffer.from(we, 'hex')), TRAIN_T.witness) as Opened<TrainWitness>;
      if (wo.signer === did && wo.record.epochCommitment === ep.address && wo.record.root === ep.record.root) kept.push({ did, address: wo.address, envelope: we });
    } catch {
      /* a countersignature that does not open is not kept */
    }
  }
  return { ep, envelope, witnesses: kept };
}
