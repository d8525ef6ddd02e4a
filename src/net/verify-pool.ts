/**
 * Signature work shared with worker threads (DESIGN §3.4 validation; issue #16
 * "the validation cost"; docs/network.md §Signature threads): one pool of
 * worker threads per process, shared by every node in it (the sim and the
 * benches run many nodes per process), verifying envelopes in batches.
 *
 * `verify(bytes)` queues one envelope; everything queued by the same task (the
 * records of one socket read: a gossipsub RPC carries several) is gathered two
 * microtask hops later. A lone record (fewer than MIN_SHARED_BATCH: all of
 * propagation) is verified on the event loop, as inline. A larger batch is
 * copied into SharedArrayBuffers in chunks of CHUNK, each handed to the thread
 * with the least work ahead of it, and the event loop goes on with its sockets
 * (the next read's decode and shape checks overlap this one's signatures); the
 * thread answers with the batch's id once every envelope is taken, and the
 * batch's envelopes are settled in order.
 *
 * The threads' lead is bounded (LEAD envelopes, all threads together): past it the
 * event loop finishes the oldest handed batches itself in the same turn (an
 * atomic counter hands each envelope to exactly one taker; it waits briefly for
 * those a thread is verifying), and so reads no socket meanwhile: a flood meets
 * TCP's backpressure as when everything was inline, instead of piling up behind
 * the pipeline's in-flight bound. A batch its thread has not answered within
 * STALL_MS (descheduled, not started yet) or whose thread died is finished the
 * same way, so a verdict never waits on a thread for long.
 *
 * History (docs/scale.md §1): the third round handed batches over and awaited
 * them with no bound, and a flood was dropped at the in-flight bound; from then
 * until the fourteenth round each batch was settled within its own task, the
 * loop taking envelopes beside the threads, which measured no gain on 2 cores
 * because nothing else of the loop's overlapped the verify.
 *
 * Each thread (verify-worker.ts) and the loop run exactly the inline check
 * (`verifyOne`: the precheck verify and then the strict key check for a signer
 * new to that thread, the full signature check otherwise). A thread's verdict
 * is taken as it is: "verified", or refused with its code (written back as a
 * status: a forged record costs one verify, not a second one here to learn the
 * code; only a code outside ENV_ERR is re-checked here). A thread that dies (or stops answering) is counted in
 * `crashes`, reported to `onThreadLost` listeners (each node logs it), and replaced: at once, or after a doubling
 * backoff (respawnDelayMs) when its slot keeps losing threads before any answers a batch; its envelopes are verified
 * here, so nothing unverified is accepted and nothing is lost. Threads start with the pool (a node's start),
 * not at the first batch, so their start-up is not paid inside a flood.
 */
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { isC0Error } from '../errors.js';
import { didChecked } from '../records/did.js';
import { checkSignerKey, ENV_ERR, peekType, precheckSignature, verifySignature } from '../records/envelope.js';

export const VERIFY_ERR = {
  /** The thread verifying the envelope died before answering (a SignatureVerifier may fail with it; the pipeline makes it ignore). */
  WORKER_FAILED: 'VERIFY_WORKER_FAILED',
} as const;

/** The most threads one pool runs. */
export const MAX_VERIFY_THREADS = 16;
/** A batch smaller than this is verified on the event loop (a lone record: a thread's round trip would be on its hop). */
export const MIN_SHARED_BATCH = 4;
/** Envelopes per batch handed to a thread (a larger read is split, so several threads share it). */
export const CHUNK = 32;
/**
 * Envelopes the threads may be behind by, all of them together: past it, the event loop finishes the oldest handed
 * batches itself, and so stops reading sockets until the threads catch up (a flood's backpressure). 128 is about
 * 6 ms of one thread's work, four chunks, and half a flooding peer's in-flight share (flood-limits.ts
 * maxInFlightPerPeer, 256): not per thread, or more threads would let one peer's flood reach that share and be
 * refused RATE_LIMITED while it waits for threads.
 */
export const LEAD = 128;
/**
 * A thread that has answered nothing for this many ms while holding batches is stopped and replaced (stuck: its queue
 * would only grow). Long enough that a thread starved by a loaded machine, which a new thread would not cure, is kept.
 */
export const REPLACE_MS = 2_000;
/** A handed batch not answered within this many ms (its thread descheduled, or stuck) is finished on the event loop. */
export const STALL_MS = 50;
/** How long the event loop waits for an envelope a thread is verifying, when it finishes that thread's batch itself. */
const HELP_WAIT_MS = 2;
/**
 * A thread lost again before it answered any batch waits this long before its replacement starts, doubling with each
 * further loss up to RESPAWN_MAX_MS (a thread that cannot start, or dies on every batch, would otherwise be restarted
 * in a loop, each start costing 100–300 ms of CPU). The first loss is replaced at once; an answered batch resets it.
 */
export const RESPAWN_BASE_MS = 1_000;
export const RESPAWN_MAX_MS = 60_000;

/** How long the replacement of a slot's `losses`-th consecutive lost thread waits: 0 for the first, then RESPAWN_BASE_MS doubling, at most RESPAWN_MAX_MS. */
export function respawnDelayMs(losses: number, baseMs = RESPAWN_BASE_MS, maxMs = RESPAWN_MAX_MS): number {
  if (losses <= 1) return 0;
  return Math.min(maxMs, baseMs * 2 ** Math.min(30, losses - 2));
}

/** A thread given up on, as the pool reports it (logged by each node holding the pool; docs/network.md §3). */
export interface ThreadLoss {
  /**
   * exit: it exited or threw (`error` says what, when it threw); stuck: it answered nothing for replaceMs while
   * holding batches; spawn: the thread could not be created (`error` says why).
   */
  reason: 'exit' | 'stuck' | 'spawn';
  /** Its exit code, when it exited. */
  exitCode?: number;
  /** The uncaught error it died of, when there was one. */
  error?: string;
  /** Whether it had said it was ready (a thread lost before that could not start: its module or libsodium failed to load). */
  wasReady: boolean;
  /** Threads lost in a row in this slot without an answered batch between them, this one included. */
  losses: number;
  /** When its replacement starts, in ms from now (respawnDelayMs). */
  respawnInMs: number;
}

/**
 * `min(4, cores − 1)`: one core stays with the event loop; 0 (verify on the event loop) on one core. On this 2-core
 * machine one thread lifts a flood's ingest from 0.65–0.75 to 0.85–1.08 of raw verify, a lone record being verified
 * inline as before (docs/scale.md §1, fourteenth round). Until the fourteenth round a batch was shared between the
 * loop and the threads within its turn, which measured no gain on 2 cores, and the default there was 0.
 */
export function defaultVerifyThreads(): number {
  const cores = availableParallelism();
  return cores <= 1 ? 0 : Math.min(4, cores - 1);
}

export type VerifyFailure = { code: string; message: string };

/** What the validation pipeline needs: the signature check of one envelope, null when it verified. Never rejects. */
export interface SignatureVerifier {
  verify(bytes: Uint8Array): Promise<VerifyFailure | null>;
}

/**
 * One batch offered to a thread: the envelopes back to back in `data`, their
 * offsets, and `ctl` = [next envelope to take, then per envelope 0 (not done),
 * 1 (taken), 2 (verified), 3 (refused, its code not listed), 4 + i (refused
 * with REFUSAL_CODES[i])].
 */
export interface SharedBatch {
  /** The pool's number for it: a thread answers with it when it has taken the last envelope. */
  id: number;
  ctl: SharedArrayBuffer;
  data: SharedArrayBuffer;
  offsets: number[];
}

const TAKEN = 1;
const VERIFIED = 2;
const REFUSED = 3;
const REFUSED_CODE = 4;
/** The refusal codes a thread writes back as a status (the envelope checks' codes); any other is re-checked on the loop. */
const REFUSAL_CODES: readonly string[] = Object.values(ENV_ERR);

function refusalStatus(code: string): number {
  const k = REFUSAL_CODES.indexOf(code);
  return k < 0 ? REFUSED : REFUSED_CODE + k;
}

/** A thread's refusal with its code, on the loop without verifying again (the message as the inline check words it, near enough). */
function threadRefusal(code: string, bytes: Uint8Array): VerifyFailure {
  let signer = 'an unreadable signer';
  try {
    signer = peekType(bytes).signer.slice(0, 80);
  } catch {
    /* the code says it all */
  }
  return { code, message: code === ENV_ERR.SIGNATURE ? `signature does not verify for ${signer}` : `${code}: ${signer} refused (on a signature thread)` };
}

/**
 * The signature check of one envelope, the inline path and each thread's: a
 * signer whose key this thread has not checked gets a cheap precheck verify
 * first, so garbage costs one verify, then only the strict key check (the
 * precheck was the signature check); a known signer gets the signature check.
 * Null when it verified; a coded refusal otherwise. Non-coded exceptions propagate.
 */
export function verifyOne(bytes: Uint8Array, signer?: string): VerifyFailure | null {
  try {
    const s = signer ?? peekType(bytes).signer;
    if (!didChecked(s) && precheckSignature(bytes)) checkSignerKey(bytes);
    else verifySignature(bytes);
    return null;
  } catch (e) {
    if (!isC0Error(e)) throw e;
    return { code: e.code, message: e.message };
  }
}

/** Take envelopes of a shared batch until none is left (each thread's loop, and the event loop's). Calls `done(i, result)` for each taken. */
export function drainBatch(b: SharedBatch, done?: (i: number, r: VerifyFailure | null) => void, check: (bytes: Uint8Array) => VerifyFailure | null = verifyOne): number {
  const ctl = new Int32Array(b.ctl);
  const n = b.offsets.length - 1;
  let took = 0;
  for (;;) {
    const i = Atomics.add(ctl, 0, 1);
    if (i >= n) return took;
    Atomics.store(ctl, 1 + i, TAKEN);
    // copied out of the shared memory: sodium-native does not take views of a SharedArrayBuffer (it fails closed)
    const r = check(new Uint8Array(b.data, b.offsets[i]!, b.offsets[i + 1]! - b.offsets[i]!).slice());
    Atomics.store(ctl, 1 + i, r === null ? VERIFIED : refusalStatus(r.code));
    // the event loop may be waiting for this one (a batch it finishes itself)
    Atomics.notify(ctl, 1 + i);
    done?.(i, r);
    took++;
  }
}

/** Has every envelope of a batch of n a final status (verified or refused)? */
function allFinal(ctl: Int32Array, n: number): boolean {
  for (let i = 0; i < n; i++) if (Atomics.load(ctl, 1 + i) < VERIFIED) return false;
  return true;
}

interface Pending {
  bytes: Uint8Array;
  resolve: (r: VerifyFailure | null) => void;
}

interface Slot {
  /** Its index in the pool (its replacement takes the same). */
  k: number;
  /** Undefined when the thread could not even be created (its loss is reported as 'spawn'). */
  worker: Worker | undefined;
  dead: boolean;
  /** It said it is ready (its modules and libsodium loaded): no batch is handed to it before. */
  ready: boolean;
  /** Envelopes offered to this thread and not settled yet. */
  ahead: number;
  /** Since when it has held batches without answering any (undefined: it holds none, or answered since). */
  waitingSince: number | undefined;
  /** The uncaught error it threw, kept for the report of its exit. */
  error?: string;
}

/** A batch handed to one thread and not settled yet. */
interface Handed {
  batch: SharedBatch;
  items: Pending[];
  slot: Slot;
  /** performance.now() when it was handed over. */
  at: number;
}

export interface VerifyPoolOptions {
  /** The worker's module (default verify-worker.js beside this file; tests substitute one that crashes or stalls). */
  workerUrl?: URL;
  /** A handed batch its thread has not answered within this many ms is verified on the event loop (default STALL_MS). */
  stallMs?: number;
  /** A thread that answers nothing for this many ms while holding batches is replaced (default REPLACE_MS). */
  replaceMs?: number;
  /** The replacement of a thread lost again before any answer waits this long, doubling (default RESPAWN_BASE_MS). */
  respawnBaseMs?: number;
  /** At most this long (default RESPAWN_MAX_MS). */
  respawnMaxMs?: number;
}

export class VerifyPool implements SignatureVerifier {
  readonly #url: URL;
  readonly #stallMs: number;
  readonly #replaceMs: number;
  readonly #respawnBaseMs: number;
  readonly #respawnMaxMs: number;
  /** One per thread index; a lost thread stays here, dead, until its replacement starts. */
  readonly #slots: Slot[] = [];
  /** Per thread index: threads lost in a row without an answered batch (the respawn backoff). */
  readonly #losses: number[] = [];
  /** Per thread index: a replacement waiting out its backoff. */
  readonly #respawns: Array<ReturnType<typeof setTimeout> | undefined> = [];
  readonly #lossListeners = new Set<(loss: ThreadLoss) => void>();
  #size: number;
  #queue: Pending[] = [];
  #scheduled = false;
  #closed = false;
  /** Batches handed to threads, oldest first (a Map keeps insertion order). */
  readonly #handed = new Map<number, Handed>();
  #nextId = 0;
  #ahead = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Threads that died, or were stopped for not answering (each replaced: at once, or after a backoff when lost again before any answer). */
  crashes = 0;
  /** Batches handed to the threads. */
  batches = 0;
  /** Envelopes the threads verified (the rest the event loop did). */
  byThreads = 0;
  /** Envelopes the threads refused, taken with their code (not verified again here). */
  refusedByThreads = 0;
  /** Handed batches the event loop finished itself (threads behind by more than the lead, stalled, or dead); not those a thread had finished, its answer still on the way. */
  helped = 0;
  /** Of those, the batches finished because their thread had not answered within stallMs. */
  stalled = 0;
  /** Envelopes verified in all. */
  total = 0;
  /** Of those, the envelopes the event loop verified (lone records, no thread ready, past the lead, a thread's unfinished or unlisted ones). */
  byLoop = 0;

  constructor(threads: number, opts: VerifyPoolOptions = {}) {
    this.#size = clampThreads(threads);
    if (this.#size < 1) throw new Error('a verify pool needs at least one thread');
    this.#url = opts.workerUrl ?? new URL('./verify-worker.js', import.meta.url);
    this.#stallMs = opts.stallMs ?? STALL_MS;
    this.#replaceMs = opts.replaceMs ?? REPLACE_MS;
    this.#respawnBaseMs = opts.respawnBaseMs ?? RESPAWN_BASE_MS;
    this.#respawnMaxMs = opts.respawnMaxMs ?? RESPAWN_MAX_MS;
    // started now, not at the first batch: a thread loads the record modules and libsodium (≈ 100–300 ms of CPU)
    for (let k = 0; k < this.#size; k++) this.#slot(k);
  }

  get threads(): number {
    return this.#size;
  }

  /** Threads ready for batches (started, modules loaded, not given up on). */
  get ready(): number {
    return this.#slots.filter((x) => x.ready && !x.dead).length;
  }

  /** Threads started and not ready yet (loading their modules). */
  get starting(): number {
    return this.#slots.filter((x) => !x.ready && !x.dead).length;
  }

  /** Lost threads whose replacement waits out its backoff (respawnDelayMs). */
  get waiting(): number {
    return this.#respawns.filter((t) => t !== undefined).length;
  }

  /** Be told of each thread given up on; returns the unsubscribe. */
  onThreadLost(listener: (loss: ThreadLoss) => void): () => void {
    // each subscription its own entry: the same function given twice is unsubscribed once per subscription
    const entry = (loss: ThreadLoss): void => listener(loss);
    this.#lossListeners.add(entry);
    return () => this.#lossListeners.delete(entry);
  }

  /** Envelopes handed to the threads and not settled yet. */
  get ahead(): number {
    return this.#ahead;
  }

  /** Grow to `threads` (never shrinks: another node in the process may rely on the threads it asked for). */
  grow(threads: number): void {
    this.#size = Math.max(this.#size, clampThreads(threads));
    for (let k = 0; k < this.#size; k++) this.#slot(k);
  }

  verify(bytes: Uint8Array): Promise<VerifyFailure | null> {
    if (this.#closed) return Promise.resolve(verifySafe(bytes));
    return new Promise((resolve) => {
      this.#queue.push({ bytes, resolve });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // the records of one socket read (a gossipsub RPC carries several) reach here a few microtasks apart,
        // so two hops of the microtask queue gather them into one batch
        queueMicrotask(() => queueMicrotask(() => this.#flush()));
      }
    });
  }

  /** Stop every thread; what is queued or handed over is verified here first. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#flush();
    this.#closed = true;
    for (const h of [...this.#handed.values()]) this.#help(h);
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const t of this.#respawns) if (t) clearTimeout(t);
    this.#respawns.length = 0;
    const slots = this.#slots.splice(0);
    await Promise.all(slots.map((s) => s.worker?.terminate().catch(() => undefined)));
  }

  #flush(): void {
    this.#scheduled = false;
    const items = this.#queue;
    this.#queue = [];
    const n = items.length;
    if (n === 0) return;
    this.total += n;
    // a lone record (propagation: one per socket read) is verified here: a thread's round trip would be on every hop
    if (this.#closed || n < MIN_SHARED_BATCH) {
      for (const p of items) p.resolve(this.#onLoop(p.bytes));
      return;
    }
    // handed over in chunks, each to the ready thread with the least ahead; the event loop goes on with the next socket
    // read. With no thread ready (starting, or just replaced) a chunk is verified here, as inline.
    for (let i = 0; i < n; i += CHUNK) {
      const chunk = items.slice(i, i + CHUNK);
      if (!this.#hand(chunk)) for (const p of chunk) p.resolve(this.#onLoop(p.bytes));
    }
    // the threads' lead is bounded: past it the loop finishes the oldest batches itself (and so reads no socket meanwhile)
    for (const h of this.#handed.values()) {
      if (this.#ahead <= LEAD) break;
      this.#help(h);
    }
  }

  /** Hand a chunk to the ready thread with the least ahead; false when no thread is ready. */
  #hand(items: Pending[]): boolean {
    let slot: Slot | undefined;
    for (const s of this.#slots) if (s.ready && !s.dead && (slot === undefined || s.ahead < slot.ahead)) slot = s;
    if (slot === undefined) return false;
    const n = items.length;
    const offsets = new Array<number>(n + 1);
    offsets[0] = 0;
    for (let i = 0; i < n; i++) offsets[i + 1] = offsets[i]! + items[i]!.bytes.length;
    const data = new SharedArrayBuffer(offsets[n]!);
    const view = new Uint8Array(data);
    for (let i = 0; i < n; i++) view.set(items[i]!.bytes, offsets[i]!);
    const batch: SharedBatch = { id: this.#nextId++, ctl: new SharedArrayBuffer(4 * (n + 1)), data, offsets };
    const at = performance.now();
    this.#handed.set(batch.id, { batch, items, slot, at });
    slot.waitingSince ??= at;
    slot.ahead += n;
    this.#ahead += n;
    this.batches++;
    slot.worker!.postMessage(batch);
    this.#arm();
    return true;
  }

  /** The event loop's own check of one envelope, counted. */
  #onLoop(bytes: Uint8Array): VerifyFailure | null {
    this.byLoop++;
    return verifySafe(bytes);
  }

  /** The thread answered: every envelope of the batch is done (it took them all, or the loop took the rest). */
  #answered(slot: Slot, id: number): void {
    const h = this.#handed.get(id);
    if (h) this.#settle(h, []);
    // it works: a later loss of this slot is replaced at once again (not a late answer from a thread given up on)
    if (!slot.dead) this.#losses[slot.k] = 0;
    // alive (an answer for a batch the loop already finished counts too): the wait starts again if it holds more
    slot.waitingSince = slot.ahead > 0 ? performance.now() : undefined;
  }

  /**
   * The event loop finishes a handed batch itself: takes every envelope no thread has taken, waits briefly for
   * the ones a thread is verifying, and verifies here any still unfinished (a thread stalled or dead). A batch
   * its thread has finished (its answer not delivered yet) is only settled. True when the loop did some of it.
   */
  #help(h: Handed): boolean {
    if (!this.#handed.has(h.batch.id)) return false;
    const ctl = new Int32Array(h.batch.ctl);
    const n = h.items.length;
    if (Atomics.load(ctl, 0) >= n && allFinal(ctl, n)) {
      this.#settle(h, []);
      return false;
    }
    this.helped++;
    const mine: Array<VerifyFailure | null | undefined> = [];
    // verifySafe: a bug in a check settles that envelope (VERIFY_WORKER_FAILED, ignore) instead of leaving it taken
    drainBatch(h.batch, (i, r) => (mine[i] = r), (b) => this.#onLoop(b));
    const waitUntil = performance.now() + HELP_WAIT_MS;
    for (let i = 0; i < n; i++) {
      if (mine[i] !== undefined || Atomics.load(ctl, 1 + i) !== TAKEN || h.slot.dead) continue;
      const left = waitUntil - performance.now();
      if (left > 0) Atomics.wait(ctl, 1 + i, TAKEN, left);
    }
    this.#settle(h, mine);
    return true;
  }

  /** Resolve a handed batch's envelopes, in order: the loop's own verdicts, the threads' statuses, and a verify here for anything unfinished. */
  #settle(h: Handed, mine: Array<VerifyFailure | null | undefined>): void {
    this.#handed.delete(h.batch.id);
    const n = h.items.length;
    h.slot.ahead -= n;
    this.#ahead -= n;
    const ctl = new Int32Array(h.batch.ctl);
    for (let i = 0; i < n; i++) {
      let r = mine[i];
      if (r === undefined) {
        const st = Atomics.load(ctl, 1 + i);
        if (st === VERIFIED) {
          r = null;
          this.byThreads++;
        } else if (st >= REFUSED_CODE && st - REFUSED_CODE < REFUSAL_CODES.length) {
          r = threadRefusal(REFUSAL_CODES[st - REFUSED_CODE]!, h.items[i]!.bytes);
          this.refusedByThreads++;
        } else {
          // not taken, taken and not finished, or refused with a code not listed: verified here
          r = this.#onLoop(h.items[i]!.bytes);
        }
      }
      h.items[i]!.resolve(r);
    }
    if (this.#handed.size === 0 && this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  /** While batches are handed over, a timer is due when the oldest of them has waited stallMs. */
  #arm(): void {
    if (this.#timer || this.#closed) return;
    const oldest = this.#handed.values().next().value as Handed | undefined;
    if (!oldest) return;
    const wait = Math.max(1, oldest.at + this.#stallMs - performance.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      const now = performance.now();
      for (const h of [...this.#handed.values()]) {
        if (now - h.at < this.#stallMs) break; // handed in order: the rest are younger
        if (!this.#help(h)) continue;
        this.stalled++;
        // a thread that has answered nothing for replaceMs is stuck: stopped and replaced (its queue would only grow)
        if (h.slot.waitingSince !== undefined && now - h.slot.waitingSince >= this.#replaceMs) this.#retire(h.slot, 'stuck');
      }
      this.#arm();
    }, wait);
  }

  /**
   * A thread given up on (dead, or stopped for not answering): its batches are finished here, and a new thread takes
   * its place, at once the first time, after a doubling backoff when the slot loses thread after thread without an
   * answered batch (a thread that cannot start, or dies on every batch). Listeners are told.
   */
  #retire(slot: Slot, reason: ThreadLoss['reason'], exitCode?: number): void {
    if (slot.dead) return;
    slot.dead = true;
    this.crashes++;
    for (const h of [...this.#handed.values()]) if (h.slot === slot) this.#help(h);
    void slot.worker?.terminate().catch(() => undefined);
    if (this.#closed || this.#slots[slot.k] !== slot) return;
    const losses = (this.#losses[slot.k] = (this.#losses[slot.k] ?? 0) + 1);
    const respawnInMs = respawnDelayMs(losses, this.#respawnBaseMs, this.#respawnMaxMs);
    const loss: ThreadLoss = { reason, wasReady: slot.ready, losses, respawnInMs, ...(exitCode !== undefined ? { exitCode } : {}), ...(slot.error !== undefined ? { error: slot.error } : {}) };
    for (const l of this.#lossListeners) {
      try {
        l(loss);
      } catch {
        /* a listener's fault is not the pool's */
      }
    }
    // a listener may have closed the pool (a node stopping on it): start nothing
    if (this.#closed) return;
    if (respawnInMs === 0) {
      this.#spawn(slot.k);
      return;
    }
    const t = setTimeout(() => {
      this.#respawns[slot.k] = undefined;
      if (!this.#closed) this.#spawn(slot.k);
    }, respawnInMs);
    t.unref();
    this.#respawns[slot.k] = t;
  }

  /** The slot at k, started when there is none (a lost thread's slot is restarted by #retire, not here). */
  #slot(k: number): Slot {
    return this.#slots[k] ?? this.#spawn(k);
  }

  #spawn(k: number): Slot {
    let worker: Worker | undefined;
    let error: string | undefined;
    try {
      worker = new Worker(this.#url);
    } catch (e) {
      // the system would not give a thread (ERR_WORKER_INIT_FAILED: a thread limit, memory): lost like one that
      // could not start, after this turn so that a node subscribing to the pool right after creating it is told
      error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    }
    const slot: Slot = { k, worker, dead: false, ready: false, ahead: 0, waitingSince: undefined, ...(error !== undefined ? { error } : {}) };
    this.#slots[k] = slot;
    if (worker === undefined) {
      queueMicrotask(() => this.#retire(slot, 'spawn'));
      return slot;
    }
    worker.unref();
    // an uncaught exception in the thread: kept for the report of its exit, which follows
    worker.on('error', (e: unknown) => (slot.error = e instanceof Error ? `${e.name}: ${e.message}` : String(e)));
    worker.on('message', (m: number | 'ready') => {
      if (m === 'ready') slot.ready = true;
      else this.#answered(slot, m);
    });
    // it answers nothing more: its batches are finished here
    worker.on('exit', (code: number) => {
      if (!this.#closed) this.#retire(slot, 'exit', code);
    });
    return slot;
  }
}

/** verifyOne for a settled batch: an exception that is not a coded refusal (a bug) fails the envelope as VERIFY_WORKER_FAILED (ignore) instead of leaving its caller waiting. */
export function verifySafe(bytes: Uint8Array): VerifyFailure | null {
  try {
    return verifyOne(bytes);
  } catch (e) {
    return { code: VERIFY_ERR.WORKER_FAILED, message: `the signature check failed: ${e instanceof Error ? e.message : String(e)}` };
  }
}

function clampThreads(n: number): number {
  return Math.max(0, Math.min(MAX_VERIFY_THREADS, Math.floor(n)));
}

let shared: { pool: VerifyPool; users: number } | undefined;

/**
 * The process's pool, for one more user (a node): created on first use with
 * `threads` threads, grown when a later user asks for more. `release()` when
 * the node stops; the last release closes the pool (a later user gets a new one).
 */
export function acquireVerifyPool(threads: number): { pool: VerifyPool; release: () => Promise<void> } {
  if (shared) shared.pool.grow(threads);
  else shared = { pool: new VerifyPool(threads), users: 0 };
  const mine = shared;
  mine.users++;
  let released = false;
  return {
    pool: mine.pool,
    release: async () => {
      if (released) return;
      released = true;
      if (--mine.users > 0) return;
      if (shared === mine) shared = undefined;
      await mine.pool.close();
    },
  };
}

/** The process's pool's counters and thread states (verifyPoolStats). */
export interface VerifyPoolStats {
  threads: number;
  /** Threads by state: ready for batches, starting (loading), waiting (lost, the replacement in its backoff). */
  ready: number;
  starting: number;
  waiting: number;
  batches: number;
  byThreads: number;
  refusedByThreads: number;
  helped: number;
  stalled: number;
  total: number;
  byLoop: number;
  crashes: number;
}

/** The process's pool's counters (benches, diagnostics, the node's metrics); undefined while no node holds the pool. */
export function verifyPoolStats(): VerifyPoolStats | undefined {
  const p = shared?.pool;
  return (
    p && {
      threads: p.threads,
      ready: p.ready,
      starting: p.starting,
      waiting: p.waiting,
      batches: p.batches,
      byThreads: p.byThreads,
      refusedByThreads: p.refusedByThreads,
      helped: p.helped,
      stalled: p.stalled,
      total: p.total,
      byLoop: p.byLoop,
      crashes: p.crashes,
    }
  );
}

/**
 * A node's handle on the process's pool: `open()` when the node starts,
 * `close()` when it stops (the last node to stop closes the pool). A record
 * checked while the node is not open is verified inline.
 */
export class SharedPoolVerifier implements SignatureVerifier {
  #lease: { pool: VerifyPool; release: () => Promise<void> } | undefined;
  #unlisten: (() => void) | undefined;
  /** `onThreadLost`: told of each of the pool's threads given up on while this node holds the pool (the node logs it). */
  constructor(
    readonly threads: number,
    readonly onThreadLost?: (loss: ThreadLoss) => void,
  ) {}
  open(): void {
    if (this.#lease) return;
    this.#lease = acquireVerifyPool(this.threads);
    if (this.onThreadLost) this.#unlisten = this.#lease.pool.onThreadLost(this.onThreadLost);
  }
  async close(): Promise<void> {
    const l = this.#lease;
    this.#lease = undefined;
    this.#unlisten?.();
    this.#unlisten = undefined;
    await l?.release();
  }
  verify(bytes: Uint8Array): Promise<VerifyFailure | null> {
    return this.#lease ? this.#lease.pool.verify(bytes) : Promise.resolve(verifySafe(bytes));
  }
}
