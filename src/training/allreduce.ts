/**
 * Ring all-reduce over int32 vectors (docs/training.md "Ring all-reduce";
 * spec/compute-pool.md, the worker's quantised all-reduce): reduce-scatter
 * then all-gather over N−1 steps each, so every worker sends 2(N−1)/N of the
 * vector to its successor and receives as much from its predecessor. The
 * reduction (int32 sum or max) is exact, commutative and associative, so the
 * result equals the plain reduction whatever order messages arrive in.
 *
 * The transport is a port: `send(to, tag, bytes)` and `recv(from, tag)`; a
 * `Mailbox` holds arrived messages by (sender, tag), bounded, with a deadline
 * on every receive (TRAIN_PEER_TIMEOUT names the silent peer). The libp2p
 * transport is src/training/transport.ts; unit tests use an in-process one.
 *
 * A received chunk is checked before it touches the vector: the wrong length
 * (TRAIN_CHUNK_INVALID) or, given the bounds of one contribution, a value no
 * honest sender can hold (TRAIN_CHUNK_OUT_OF_RANGE); both carry the sender's
 * rank in `detail.rank`, so the caller can hold the sender to it.
 */
import { C0Error } from '../errors.js';
import { int32Bytes, int32FromBytes } from './quantize.js';

export interface RingTransport {
  readonly rank: number;
  readonly size: number;
  send(to: number, tag: string, data: Uint8Array): Promise<void>;
  recv(from: number, tag: string): Promise<Uint8Array>;
}

export type ReduceOp = 'sum' | 'max';

export function chunkBounds(len: number, n: number, c: number): [number, number] {
  return [Math.floor((c * len) / n), Math.floor(((c + 1) * len) / n)];
}

const mod = (a: number, n: number) => ((a % n) + n) % n;

/**
 * What one rank may contribute: every value in [lo, hi]. A partial of k
 * contributions then lies in [k·lo, k·hi] for a sum and in [lo, hi] for a max.
 */
export interface ContributionBounds {
  lo: number;
  hi: number;
}

/** Refuse a chunk from `from` holding the contributions of `k` ranks that no honest partial can be. */
function checkChunk(v: Int32Array, want: number, op: ReduceOp, bounds: ContributionBounds | undefined, k: number, from: number, tag: string): void {
  if (v.length !== want) throw new C0Error('TRAIN_CHUNK_INVALID', `chunk ${tag} from rank ${from} of ${v.length} values, expected ${want}`, { detail: { rank: from, tag } });
  if (!bounds) return;
  const lo = op === 'sum' ? bounds.lo * k : bounds.lo;
  const hi = op === 'sum' ? bounds.hi * k : bounds.hi;
  for (let i = 0; i < v.length; i++) {
    const x = v[i]!;
    if (x < lo || x > hi) throw new C0Error('TRAIN_CHUNK_OUT_OF_RANGE', `chunk ${tag} from rank ${from}: value ${x} outside [${lo}, ${hi}] (${op} of ${k} contribution(s))`, { detail: { rank: from, tag } });
  }
}

/**
 * All-reduce `data` with the other ranks; returns a new array (the input is
 * not changed). With `bounds`, every received chunk is checked against them
 * (a partial of s+1 contributions in reduce-scatter step s, of all N in the
 * all-gather) before it is used.
 */
export async function ringAllReduce(t: RingTransport, data: Int32Array, op: ReduceOp, tag: string, bounds?: ContributionBounds): Promise<Int32Array> {
  const n = t.size;
  const out = Int32Array.from(data);
  if (n === 1) return out;
  const r = t.rank;
  const next = mod(r + 1, n);
  const prev = mod(r - 1, n);
  const L = out.length;
  for (let s = 0; s < n - 1; s++) {
    const [sa, sb] = chunkBounds(L, n, mod(r - s, n));
    const [ra, rb] = chunkBounds(L, n, mod(r - s - 1, n));
    const [, got] = await Promise.all([t.send(next, `${tag}/rs${s}`, int32Bytes(out, sa, sb)), t.recv(prev, `${tag}/rs${s}`)]);
    const v = int32FromBytes(got);
    checkChunk(v, rb - ra, op, bounds, s + 1, prev, `${tag}/rs${s}`);
    for (let i = 0; i < v.length; i++) out[ra + i] = op === 'sum' ? (out[ra + i]! + v[i]!) | 0 : Math.max(out[ra + i]!, v[i]!);
  }
  for (let s = 0; s < n - 1; s++) {
    const [sa, sb] = chunkBounds(L, n, mod(r + 1 - s, n));
    const [ra, rb] = chunkBounds(L, n, mod(r - s, n));
    const [, got] = await Promise.all([t.send(next, `${tag}/ag${s}`, int32Bytes(out, sa, sb)), t.recv(prev, `${tag}/ag${s}`)]);
    const v = int32FromBytes(got);
    checkChunk(v, rb - ra, op, bounds, n, prev, `${tag}/ag${s}`);
    out.set(v, ra);
  }
  return out;
}

interface Waiter {
  resolve(b: Uint8Array): void;
  reject(e: Error): void;
}

/** What a waiting message costs against the byte bounds on top of its length, so empty messages are not free. */
export const MESSAGE_OVERHEAD = 64;

/**
 * Messages by (sender rank, tag). `put` refuses a second message under the same
 * key (TRAIN_DUPLICATE_MESSAGE), more than `maxHeld` waiting messages in all or
 * `maxHeldPerSender` from one sender, and a message that would make the
 * waiting ones hold more than `maxBytes` in all or `maxBytesPerSender` from its
 * sender (TRAIN_MAILBOX_FULL, naming the sender); each waiting message is
 * charged its length + MESSAGE_OVERHEAD bytes, so one sender cannot use up the
 * room the others need with empty messages. `take` waits at most `timeoutMs`.
 */
export class Mailbox {
  #held = new Map<string, Uint8Array>();
  #waiting = new Map<string, Waiter>();
  #taken = new Set<string>();
  #closed: Error | undefined;
  #closing: { promise: Promise<never>; reject: (e: Error) => void } | undefined;
  #bytes = 0;
  readonly #bytesFrom = new Map<number, number>();
  readonly #heldFrom = new Map<number, number>();

  constructor(
    private readonly opts: { timeoutMs: number; maxHeld: number; maxHeldPerSender?: number; maxBytes?: number; maxBytesPerSender?: number; name?: (rank: number) => string },
  ) {}

  /** Bytes charged for the messages waiting to be taken (each its length + MESSAGE_OVERHEAD). */
  get bytesHeld(): number {
    return this.#bytes;
  }

  #who(rank: number): string {
    return this.opts.name ? this.opts.name(rank) : `rank ${rank}`;
  }

  #release(key: string): Uint8Array | undefined {
    const got = this.#held.get(key);
    if (!got) return undefined;
    this.#held.delete(key);
    const from = Number(key.slice(0, key.indexOf('|')));
    const cost = got.length + MESSAGE_OVERHEAD;
    this.#bytes -= cost;
    const left = (this.#bytesFrom.get(from) ?? 0) - cost;
    if (left > 0) this.#bytesFrom.set(from, left);
    else this.#bytesFrom.delete(from);
    const n = (this.#heldFrom.get(from) ?? 0) - 1;
    if (n > 0) this.#heldFrom.set(from, n);
    else this.#heldFrom.delete(from);
    return got;
  }

  put(from: number, tag: string, data: Uint8Array): void {
    const key = `${from}|${tag}`;
    if (this.#held.has(key) || this.#taken.has(key)) throw new C0Error('TRAIN_DUPLICATE_MESSAGE', `a second message ${tag} from rank ${from}`);
    const w = this.#waiting.get(key);
    this.#taken.add(key);
    if (w) {
      this.#waiting.delete(key);
      w.resolve(data);
      return;
    }
    this.#taken.delete(key);
    const { maxHeldPerSender, maxBytes, maxBytesPerSender } = this.opts;
    const count = this.#heldFrom.get(from) ?? 0;
    if (maxHeldPerSender !== undefined && count >= maxHeldPerSender) throw new C0Error('TRAIN_MAILBOX_FULL', `more than ${maxHeldPerSender} messages waiting from ${this.#who(from)}`, { detail: { rank: from } });
    if (this.#held.size >= this.opts.maxHeld) throw new C0Error('TRAIN_MAILBOX_FULL', `more than ${this.opts.maxHeld} messages waiting`, { detail: { rank: from } });
    const cost = data.length + MESSAGE_OVERHEAD;
    if (maxBytes !== undefined && this.#bytes + cost > maxBytes) throw new C0Error('TRAIN_MAILBOX_FULL', `a message of ${data.length} bytes from ${this.#who(from)}: waiting messages would hold over ${maxBytes} bytes`, { detail: { rank: from } });
    const mine = this.#bytesFrom.get(from) ?? 0;
    if (maxBytesPerSender !== undefined && mine + cost > maxBytesPerSender) throw new C0Error('TRAIN_MAILBOX_FULL', `messages waiting from ${this.#who(from)} would hold over ${maxBytesPerSender} bytes`, { detail: { rank: from } });
    this.#held.set(key, data);
    this.#bytes += cost;
    this.#bytesFrom.set(from, mine + cost);
    this.#heldFrom.set(from, count + 1);
  }

  /** Why it was closed (`close`), or undefined while it is open. */
  get closedBy(): Error | undefined {
    return this.#closed;
  }

  /** Rejects with close's error once it is closed (at once if it is); never settles while it stays open. */
  whenClosed(): Promise<never> {
    if (!this.#closing) {
      let reject!: (e: Error) => void;
      const promise = new Promise<never>((_, r) => (reject = r));
      // one promise per mailbox, handled here: one that nobody awaits (its waiter already gone) is no unhandled rejection
      promise.catch(() => {});
      this.#closing = { promise, reject };
      if (this.#closed) reject(this.#closed);
    }
    return this.#closing.promise;
  }

  take(from: number, tag: string, timeoutMs = this.opts.timeoutMs): Promise<Uint8Array> {
    if (this.#closed) return Promise.reject(this.#closed);
    const key = `${from}|${tag}`;
    const got = this.#release(key);
    if (got) {
      this.#taken.add(key);
      return Promise.resolve(got);
    }
    return new Promise<Uint8Array>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiting.delete(key);
        const who = this.#who(from);
        reject(new C0Error('TRAIN_PEER_TIMEOUT', `no ${tag} from ${who} within ${timeoutMs} ms`, { detail: { rank: from, tag } }));
      }, timeoutMs);
      this.#waiting.set(key, {
        resolve: (b) => {
          clearTimeout(timer);
          resolve(b);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
    });
  }

  /** Forget delivered keys whose tag starts with `prefix` (a finished step). */
  forget(prefix: string): void {
    this.prune((tag) => !tag.startsWith(prefix));
  }

  /** Forget delivered keys and drop waiting messages whose tag `keep` refuses (tags no longer expected). */
  prune(keep: (tag: string) => boolean): void {
    const tagOf = (k: string) => k.slice(k.indexOf('|') + 1);
    for (const k of [...this.#taken]) if (!keep(tagOf(k))) this.#taken.delete(k);
    for (const k of [...this.#held.keys()]) if (!keep(tagOf(k))) this.#release(k);
  }

  /** Fail every waiting receive and drop what is held (the run stopped). */
  close(err: Error): void {
    this.#closed = err;
    this.#closing?.reject(err);
    for (const w of this.#waiting.values()) w.reject(err);
    this.#waiting.clear();
    for (const k of [...this.#held.keys()]) this.#release(k);
  }
}

/** In-process transport for unit tests and single-process runs: one mailbox per rank, optional delivery delays. */
export function memoryRing(n: number, opts: { delay?: (from: number, to: number, tag: string) => number; timeoutMs?: number } = {}): RingTransport[] {
  const boxes = Array.from({ length: n }, () => new Mailbox({ timeoutMs: opts.timeoutMs ?? 10_000, maxHeld: 1 << 16 }));
  return boxes.map((_, rank) => ({
    rank,
    size: n,
    send: async (to, tag, data) => {
      const copy = data.slice();
      const d = opts.delay?.(rank, to, tag) ?? 0;
      if (d > 0) setTimeout(() => boxes[to]!.put(rank, tag, copy), d);
      else boxes[to]!.put(rank, tag, copy);
    },
    recv: (from, tag) => boxes[rank]!.take(from, tag),
  }));
}
