/**
 * Signature work off the event loop (DESIGN §3.4 validation; issue #16 "the
 * validation cost"; docs/network.md §Signature threads): one pool of worker
 * threads per process, shared by every node in it (the sim and the benches run
 * many nodes per process), verifying envelopes in batches.
 *
 * `verify(bytes)` queues one envelope; everything queued in the same turn of
 * the event loop goes out at the next `setImmediate`, split over the threads
 * (least loaded first) as one message per thread: the envelopes packed back to
 * back in one transferred buffer (a view into a larger buffer is copied, never
 * its whole backing store). Each worker (verify-worker.ts) runs exactly the
 * inline check (`verifyOne`: the precheck verify and the strict key check for
 * a signer new to that thread, the full signature check otherwise) and answers
 * with one message per batch.
 *
 * A worker that dies (an uncaught exception, an exit) fails every envelope it
 * held with VERIFY_WORKER_FAILED (the pipeline makes that `ignore`: nothing
 * unverified is ever accepted, and the sender is not penalised for our crash);
 * its slot is refilled by a fresh thread at the next batch. A worker holds the
 * process open only while it has work.
 */
import { Worker } from 'node:worker_threads';
import { availableParallelism } from 'node:os';
import { isC0Error } from '../errors.js';
import { didChecked } from '../records/did.js';
import { checkSignerKey, peekType, precheckSignature, verifySignature } from '../records/envelope.js';

export const VERIFY_ERR = {
  /** The worker verifying the envelope died before answering. */
  WORKER_FAILED: 'VERIFY_WORKER_FAILED',
  /** The pool was closed (the last node using it stopped) before the envelope was verified. */
  POOL_CLOSED: 'VERIFY_POOL_CLOSED',
} as const;

/** The most threads one pool runs. */
export const MAX_VERIFY_THREADS = 16;

/** `min(4, cores − 1)`: one core stays with the event loop (0 on a single core: verify inline). */
export function defaultVerifyThreads(): number {
  return Math.max(0, Math.min(4, availableParallelism() - 1));
}

export type VerifyFailure = { code: string; message: string };

/** What the validation pipeline needs: the signature check of one envelope, null when it verified. Never rejects. */
export interface SignatureVerifier {
  verify(bytes: Uint8Array): Promise<VerifyFailure | null>;
}

export interface VerifyBatch {
  id: number;
  buf: ArrayBuffer;
  lengths: number[];
}

export interface VerifyAnswer {
  id: number;
  results: Array<VerifyFailure | null>;
}

/**
 * The signature check of one envelope, the inline path and each worker's: a
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

/** Verify every envelope of a batch, in order (the worker's whole job). */
export function verifyBatch(req: VerifyBatch): VerifyAnswer {
  const all = new Uint8Array(req.buf);
  const results: Array<VerifyFailure | null> = [];
  let at = 0;
  for (const n of req.lengths) {
    results.push(verifyOne(all.subarray(at, at + n)));
    at += n;
  }
  return { id: req.id, results };
}

interface Pending {
  bytes: Uint8Array;
  resolve: (r: VerifyFailure | null) => void;
}

interface Slot {
  worker: Worker;
  /** batch id → its envelopes, until the answer arrives */
  batches: Map<number, Pending[]>;
  /** envelopes held */
  load: number;
  dead: boolean;
  /** why it died (the first error it reported) */
  error?: string;
}

export interface VerifyPoolOptions {
  /** The worker's module (default verify-worker.js beside this file; tests substitute one that crashes). */
  workerUrl?: URL;
}

export class VerifyPool implements SignatureVerifier {
  readonly #url: URL;
  readonly #slots: Slot[] = [];
  #size: number;
  #queue: Pending[] = [];
  #scheduled = false;
  #nextId = 0;
  #closed = false;
  /** Workers that died with work or without (each was replaced). */
  crashes = 0;
  /** Batches posted to the threads (one message each). */
  batches = 0;

  constructor(threads: number, opts: VerifyPoolOptions = {}) {
    this.#size = clampThreads(threads);
    if (this.#size < 1) throw new Error('a verify pool needs at least one thread');
    this.#url = opts.workerUrl ?? new URL('./verify-worker.js', import.meta.url);
  }

  get threads(): number {
    return this.#size;
  }

  /** Grow to `threads` (never shrinks: another node in the process may rely on the threads it asked for). */
  grow(threads: number): void {
    this.#size = Math.max(this.#size, clampThreads(threads));
  }

  verify(bytes: Uint8Array): Promise<VerifyFailure | null> {
    if (this.#closed) return Promise.resolve({ code: VERIFY_ERR.POOL_CLOSED, message: 'the signature pool is closed' });
    return new Promise((resolve) => {
      this.#queue.push({ bytes, resolve });
      if (!this.#scheduled) {
        this.#scheduled = true;
        setImmediate(() => this.#flush());
      }
    });
  }

  /** Stop every thread; whatever is queued or in flight fails with VERIFY_POOL_CLOSED. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const queued = this.#queue;
    this.#queue = [];
    for (const p of queued) p.resolve({ code: VERIFY_ERR.POOL_CLOSED, message: 'the signature pool is closed' });
    const slots = this.#slots.splice(0);
    for (const s of slots) this.#failAll(s, VERIFY_ERR.POOL_CLOSED, 'the signature pool is closed');
    await Promise.all(slots.map((s) => s.worker.terminate().catch(() => undefined)));
  }

  #flush(): void {
    this.#scheduled = false;
    const items = this.#queue;
    this.#queue = [];
    if (!items.length || this.#closed) return;
    const parts = Math.min(this.#size, items.length);
    const per = Math.ceil(items.length / parts);
    for (let i = 0; i < items.length; i += per) this.#send(this.#leastLoaded(), items.slice(i, i + per));
  }

  #leastLoaded(): Slot {
    for (let i = 0; i < this.#size; i++) {
      const s = this.#slots[i];
      if (s === undefined || s.dead) this.#slots[i] = this.#spawn();
    }
    let best = this.#slots[0]!;
    for (let i = 1; i < this.#size; i++) if (this.#slots[i]!.load < best.load) best = this.#slots[i]!;
    return best;
  }

  #send(slot: Slot, items: Pending[]): void {
    let total = 0;
    for (const p of items) total += p.bytes.length;
    const buf = new ArrayBuffer(total);
    const all = new Uint8Array(buf);
    const lengths: number[] = [];
    let at = 0;
    for (const p of items) {
      all.set(p.bytes, at);
      at += p.bytes.length;
      lengths.push(p.bytes.length);
    }
    const id = this.#nextId++;
    slot.batches.set(id, items);
    if (slot.load === 0) slot.worker.ref();
    slot.load += items.length;
    this.batches++;
    const req: VerifyBatch = { id, buf, lengths };
    slot.worker.postMessage(req, [buf]);
  }

  #spawn(): Slot {
    const worker = new Worker(this.#url);
    const slot: Slot = { worker, batches: new Map(), load: 0, dead: false };
    worker.unref();
    worker.on('message', (ans: VerifyAnswer) => {
      const items = slot.batches.get(ans.id);
      if (!items) return;
      slot.batches.delete(ans.id);
      slot.load -= items.length;
      if (slot.load === 0) worker.unref();
      for (let i = 0; i < items.length; i++) {
        const r = ans.results[i];
        items[i]!.resolve(r === undefined ? { code: VERIFY_ERR.WORKER_FAILED, message: 'the signature worker gave no answer' } : r);
      }
    });
    worker.on('error', (err) => {
      slot.error ??= err instanceof Error ? err.message : String(err);
    });
    worker.on('exit', (code) => {
      if (this.#closed) return;
      slot.dead = true;
      this.crashes++;
      this.#failAll(slot, VERIFY_ERR.WORKER_FAILED, `the signature worker stopped (exit ${code}${slot.error ? `: ${slot.error}` : ''}) before answering`);
    });
    return slot;
  }

  #failAll(slot: Slot, code: string, message: string): void {
    const batches = [...slot.batches.values()];
    slot.batches.clear();
    slot.load = 0;
    for (const items of batches) for (const p of items) p.resolve({ code, message });
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

/**
 * A node's handle on the process's pool: `open()` when the node starts,
 * `close()` when it stops (the last node to stop closes the pool). A record
 * checked while the node is not open is verified inline.
 */
export class SharedPoolVerifier implements SignatureVerifier {
  #lease: { pool: VerifyPool; release: () => Promise<void> } | undefined;
  constructor(readonly threads: number) {}
  open(): void {
    this.#lease ??= acquireVerifyPool(this.threads);
  }
  async close(): Promise<void> {
    const l = this.#lease;
    this.#lease = undefined;
    await l?.release();
  }
  verify(bytes: Uint8Array): Promise<VerifyFailure | null> {
    return this.#lease ? this.#lease.pool.verify(bytes) : Promise.resolve(verifyOne(bytes));
  }
}
