/**
 * The training protocol `/c0mpute/train/1` over direct libp2p streams
 * (docs/training.md "Wire"; DESIGN §3.5): one request per message, the first
 * frame a header `{k, tag?, …}`, then any payload as byte frames of at most
 * 512 KiB (a 16 MB gradient travels as many frames within the bounded-frame
 * rules). Only the run's members may send anything: any other key is refused
 * by its connection's key before a byte of its request is read (`admit`,
 * ServeOptions.admit), so strangers cannot fill the node's request byte budget
 * that the members' chunks need. Chunks land in a bounded Mailbox keyed by the
 * sender's rank in the run; every receive has a deadline (the run's timeoutMs).
 */
import { C0Error } from '../errors.js';
import type { CborValue } from '../records/cbor.js';
import type { Network } from '../net/node.js';
import { didFromPeerId } from '../node/peer-id.js';
import { monotonicClock, type Clock } from '../util/clock.js';
import type { Mailbox} from './allreduce.js';
import { type RingTransport } from './allreduce.js';

export const TRAIN_PROTOCOL = '/c0mpute/train/1';
export const PAYLOAD_FRAME = 512 * 1024;
/** A request is up to 200 frames (128 MiB): it may take the whole deadline (ProtocolLimits.requestMs), as before. */
export const TRAIN_LIMITS = { maxFrameBytes: PAYLOAD_FRAME + 1024, maxRequestFrames: 200, deadlineMs: 60_000, requestMs: 60_000, maxInboundStreams: 64, maxStreamBytes: 128 * 1024 * 1024, maxResponseBytes: 128 * 1024 * 1024 };

export interface TrainMessage {
  k: string;
  [field: string]: CborValue;
}

/** What a message handler gets: the header, the payload frames joined, the sender's DID. */
export type MessageHandler = (from: string, head: TrainMessage, payload: Uint8Array) => Promise<CborValue[] | void> | CborValue[] | void;

function join(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

export function splitPayload(data: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let off = 0; off < data.length; off += PAYLOAD_FRAME) out.push(data.subarray(off, Math.min(data.length, off + PAYLOAD_FRAME)));
  return out;
}

/**
 * Retry a request whose stream could not be opened or broke (NET_DIAL_FAILED,
 * NET_PROTOCOL_UNSUPPORTED: a stage that has not yet registered its protocol, NET_STREAM_FAILED), up to 3 attempts: loopback peers dialling each other at
 * once sometimes lose a connection and its streams. Delivery stays exactly-once
 * because receivers refuse a second message under one key: a retry answered
 * with TRAIN_DUPLICATE_MESSAGE means the first attempt arrived (returns []).
 * A deadline (NET_DEADLINE) is not retried, so a silent peer is still noticed
 * within the run's timeout.
 */
export async function withRetry<T>(fn: () => Promise<T[]>, attempts = 3): Promise<T[]> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i > 1 && e instanceof C0Error && e.code === 'TRAIN_DUPLICATE_MESSAGE') return [];
      if (!(e instanceof C0Error) || (e.code !== 'NET_DIAL_FAILED' && e.code !== 'NET_PROTOCOL_UNSUPPORTED' && e.code !== 'NET_STREAM_FAILED') || (e.detail as { remote?: boolean } | undefined)?.remote || i >= attempts) throw e;
      await new Promise((r) => setTimeout(r, 50 * i));
    }
  }
}

/**
 * The receiver's node's refusals that may pass: its request byte budget full (NET_BUFFER_LIMIT: others may be filling
 * it), its request phase run out while this message was sent (NET_DEADLINE). Another NET_* code (a frame too large or
 * malformed for it: another version's limits) fails the same way every time.
 */
const NODE_BUSY_CODES: ReadonlySet<string> = new Set(['NET_BUFFER_LIMIT', 'NET_DEADLINE']);

/**
 * Whether a send failed on the receiver's node, not in its training handler, in a way that may pass: a NODE_BUSY_CODES
 * code the receiver answered (`detail.remote`). That is the state of the receiver's node, not a refusal of the message
 * by the member.
 */
export function nodeRefusal(e: unknown): e is C0Error {
  return e instanceof C0Error && NODE_BUSY_CODES.has(e.code) && (e.detail as { remote?: unknown } | undefined)?.remote === true;
}

/** The longest pause between two tries of a send its receiver's node refused (ms). */
export const BUSY_PAUSE_MS = 1_000;

/**
 * Tries of a message with a payload over BUSY_SMALL_BYTES that the receiver's node keeps refusing: each try uploads it
 * whole again. Without a bound, a receiver that kept answering NET_BUFFER_LIMIT made its sender upload a 16 MiB chunk
 * 13 times in 10 s (about 33 times within the usual 30 s), blaming nobody (second-round review).
 */
export const BUSY_TRIES_LARGE = 3;
export const BUSY_SMALL_BYTES = 64 * 1024;

export interface TrainWireOptions {
  /** Who may send (by DID): an error refuses any other key before its request is read (ServeOptions.admit). */
  admit?: (did: string) => C0Error | undefined;
  /** The monotonic clock a send's deadline is measured on (default monotonicClock). */
  mono?: Clock;
}

export class TrainWire {
  readonly #mono: Clock;
  constructor(
    private readonly net: Pick<Network, 'handle' | 'request' | 'did'> & Partial<Pick<Network, 'unhandle'>>,
    private readonly onMessage: MessageHandler,
    private readonly opts: TrainWireOptions = {},
  ) {
    this.#mono = opts.mono ?? monotonicClock;
  }

  async start(): Promise<void> {
    await this.net.handle(
      TRAIN_PROTOCOL,
      async (reqs, ctx) => {
        const head = reqs[0] as TrainMessage | undefined;
        if (!head || typeof head !== 'object' || typeof head.k !== 'string') throw new C0Error('TRAIN_BAD_MESSAGE', 'first frame must be a message header');
        const payload = join(reqs.slice(1).filter((f): f is Uint8Array => f instanceof Uint8Array));
        const from = didFromPeerId(ctx.peer);
        const reply = await this.onMessage(from, head, payload);
        if (reply) for (const r of reply) await ctx.send(r);
      },
      TRAIN_LIMITS,
      this.opts.admit ? { admit: (peer) => this.opts.admit!(didFromPeerId(peer)) } : {},
    );
  }

  /** Stop serving the protocol (a node that outlives the run, a provider's, hands no more messages to it). */
  async stop(): Promise<void> {
    try {
      await this.net.unhandle?.(TRAIN_PROTOCOL);
    } catch {
      /* the node is stopping anyway */
    }
  }

  /**
   * Send one message within `timeoutMs`. A send the receiver's node refused (`nodeRefusal`: its request byte budget
   * full, say) is tried again, pausing up to BUSY_PAUSE_MS between tries, until `timeoutMs` has passed (a message with a
   * payload over BUSY_SMALL_BYTES at most BUSY_TRIES_LARGE times in all); then it fails
   * TRAIN_PEER_BUSY (`detail.member`, `detail.remoteCode`), which blames no one: the receiver's node was busy, the
   * receiver did not refuse the message (docs/training.md "Failure").
   */
  async send(to: string, head: TrainMessage, payload?: Uint8Array, timeoutMs = 30_000): Promise<CborValue[]> {
    const frames: CborValue[] = [head, ...(payload ? splitPayload(payload) : [])];
    const until = this.#mono() + timeoutMs;
    for (let i = 1; ; i++) {
      try {
        const left = Math.max(1, Math.round(until - this.#mono()));
        return await withRetry(() => this.net.request(to, TRAIN_PROTOCOL, frames, { limits: { ...TRAIN_LIMITS, deadlineMs: left } }));
      } catch (e) {
        // a try after a refused one may find the message arrived after all (a remote NET_DEADLINE after the handler ran)
        if (i > 1 && e instanceof C0Error && e.code === 'TRAIN_DUPLICATE_MESSAGE') return [];
        if (!nodeRefusal(e)) throw e;
        const pause = Math.min(BUSY_PAUSE_MS, 50 * 2 ** i);
        if (until - this.#mono() <= pause || ((payload?.length ?? 0) > BUSY_SMALL_BYTES && i >= BUSY_TRIES_LARGE)) {
          throw new C0Error('TRAIN_PEER_BUSY', `${to}'s node refused ${head.k} message${typeof head.tag === 'string' ? ` ${head.tag}` : ''} for its own limits (${e.code}: ${e.message.slice(0, 200)}) until the deadline`, {
            detail: { member: to, remoteCode: e.code, ...(typeof head.tag === 'string' ? { tag: head.tag } : {}) },
          });
        }
        await new Promise((r) => setTimeout(r, pause));
      }
    }
  }
}

/** Largest payload of one message: a libp2p stream resets above about 4 MiB buffered (docs/STACK), so big chunks travel as parts. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;

/** Bounds of a ChunkAssembler: what members of a run can make it hold in parts of chunks not yet whole. */
export const ASSEMBLY_LIMITS = {
  /** chunks in assembly at once, in all */
  chunks: 64,
  /** chunks in assembly at once from one sender */
  chunksPerSender: 16,
  /** part bytes held in all */
  bytes: 512 * 1024 * 1024,
  /** part bytes held from one sender (a worker sets it from its run's model: `assemblyLimits`) */
  bytesPerSender: 512 * 1024 * 1024,
  /** a chunk not completed within this long of its first part is dropped, ms */
  ttlMs: 10 * 60_000,
};

/**
 * A run's assembly bounds, from the largest chunk one of its members can send (`maxChunkBytes`) and its member count:
 * a member has at most one chunk in assembly at a time (it sends the next only once the last is whole), and one left
 * unfinished by a view change until the receiver moves on too; so each sender gets two such chunks and a part
 * (`bytesPerSender`) and 4 chunks in assembly, and the totals are the members' shares together, so no member's parts
 * can take the room another's need (review s43 R4 F3: one member filled the 512 MiB shared by all with parts of a
 * chunk a 524-byte gradient never needs, and an honest member's next chunk was refused).
 */
export function assemblyLimits(maxChunkBytes: number, members: number): typeof ASSEMBLY_LIMITS {
  const bytesPerSender = Math.min(ASSEMBLY_LIMITS.bytesPerSender, 2 * maxChunkBytes + MAX_MESSAGE_BYTES);
  const chunksPerSender = 4;
  return { ...ASSEMBLY_LIMITS, bytesPerSender, chunksPerSender, chunks: chunksPerSender * members, bytes: Math.min(ASSEMBLY_LIMITS.bytes, bytesPerSender * members) };
}

/**
 * What a chunk under `tag` from a sender holds, in bytes: `exact` when the receiver knows it (the chunk's place in the
 * ring of this view), else the most it can hold (a chunk of the next view, whose members are not known yet).
 * Undefined: no bound known (any part count within the other bounds).
 */
export type ChunkSizeOf = (from: number, tag: string) => { bytes: number; exact: boolean } | undefined;

/**
 * Reassembles chunk parts (`{k:'chunk', tag, part, parts}`) into whole chunks
 * and hands each to `deliver` once; at most 1 024 parts per chunk of at most
 * MAX_MESSAGE_BYTES each (a single-part chunk too), and within
 * ASSEMBLY_LIMITS: chunks in assembly in all and per sender, part bytes held
 * in all and per sender (TRAIN_BAD_MESSAGE beyond each); a chunk left
 * unfinished is dropped after `ttlMs`, so stuck parts neither stay nor block
 * the rest. With `sizeOf`, parts must be what `sendChunk` makes of a chunk of
 * that size: ⌈bytes / MAX_MESSAGE_BYTES⌉ parts (at most that many when the size
 * is a bound), each but the last MAX_MESSAGE_BYTES long, the last (a
 * single-part chunk's only part too) the rest, or at most the rest of the bound;
 * anything else is TRAIN_CHUNK_INVALID naming the sender (`detail.rank`),
 * which no honest member sends. `prune` drops the partial chunks of senders
 * and tags no longer expected (a member dropped, a step or view done).
 */
export class ChunkAssembler {
  readonly #partial = new Map<string, { parts: Array<Uint8Array | undefined>; got: number; from: number; since: number; bytes: number; tag: string }>();
  #bytes = 0;
  readonly #senderBytes = new Map<number, number>();
  constructor(
    private readonly deliver: (from: number, tag: string, data: Uint8Array) => void,
    private readonly limits: typeof ASSEMBLY_LIMITS = ASSEMBLY_LIMITS,
    private readonly now: () => number = Date.now,
    private readonly sizeOf?: ChunkSizeOf,
  ) {}

  /** Part bytes held in chunks not yet whole. */
  get bytesHeld(): number {
    return this.#bytes;
  }

  /** Part bytes held in chunks not yet whole from `from`. */
  bytesFrom(from: number): number {
    return this.#senderBytes.get(from) ?? 0;
  }

  #drop(key: string): void {
    const p = this.#partial.get(key);
    if (!p) return;
    this.#partial.delete(key);
    this.#bytes -= p.bytes;
    const left = (this.#senderBytes.get(p.from) ?? 0) - p.bytes;
    if (left > 0) this.#senderBytes.set(p.from, left);
    else this.#senderBytes.delete(p.from);
  }

  /** Drop the partial chunks `keep` refuses (their sender left the view, their step or view is done). */
  prune(keep: (from: number, tag: string) => boolean): void {
    for (const [k, p] of [...this.#partial]) if (!keep(p.from, p.tag)) this.#drop(k);
  }

  /** TRAIN_CHUNK_INVALID unless part `part` of `parts` (`length` bytes) is what sendChunk makes of this tag's chunk. */
  #checkSize(from: number, tag: string, part: number, parts: number, length: number): void {
    const size = this.sizeOf?.(from, tag);
    if (!size) return;
    const want = Math.max(1, Math.ceil(size.bytes / MAX_MESSAGE_BYTES));
    const bad = (why: string) => new C0Error('TRAIN_CHUNK_INVALID', `chunk ${tag.slice(0, 80)} from member ${from}: ${why}`, { detail: { rank: from, tag } });
    if (size.exact ? parts !== want : parts > want) throw bad(`${parts} parts, where a chunk of ${size.exact ? '' : 'at most '}${size.bytes} bytes travels in ${size.exact ? '' : 'at most '}${want}`);
    // the last part (a single-part chunk's only one) is the rest of the chunk: exactly that, or within the bound (review s43 R8 F3: a
    // single-part chunk skipped this and a member could send 1 MiB under a tag whose chunk holds at most 136 bytes)
    const rest = size.bytes - (parts - 1) * MAX_MESSAGE_BYTES;
    if (part < parts - 1 ? length !== MAX_MESSAGE_BYTES : size.exact ? length !== rest : length > rest || (parts > 1 && length < 1)) {
      const expected = part < parts - 1 || size.exact ? String(part < parts - 1 ? MAX_MESSAGE_BYTES : rest) : `${parts > 1 ? '1 to ' : 'at most '}${rest}`;
      throw bad(`part ${part} of ${parts} holds ${length} bytes, expected ${expected}`);
    }
  }

  put(from: number, head: TrainMessage, payload: Uint8Array): void {
    const tag = head.tag;
    if (typeof tag !== 'string') throw new C0Error('TRAIN_BAD_MESSAGE', 'chunk without a tag');
    const parts = head.parts === undefined ? 1 : head.parts;
    const part = head.part === undefined ? 0 : head.part;
    if (typeof parts !== 'number' || typeof part !== 'number' || !Number.isInteger(parts) || parts < 1 || parts > 1024 || !Number.isInteger(part) || part < 0 || part >= parts) throw new C0Error('TRAIN_BAD_MESSAGE', 'chunk part out of range');
    // sendChunk never sends more in one message: a larger one would skip these bounds (a whole chunk goes straight to the Mailbox)
    if (payload.length > MAX_MESSAGE_BYTES) throw new C0Error('TRAIN_BAD_MESSAGE', `a chunk message of ${payload.length} bytes from member ${from}; at most ${MAX_MESSAGE_BYTES}`);
    this.#checkSize(from, tag, part, parts, payload.length);
    if (parts === 1) return this.deliver(from, tag, payload.slice());
    const now = this.now();
    // chunks begun longest ago come first: drop the ones left unfinished past the time-to-live
    for (const [k, q] of this.#partial) {
      if (now - q.since < this.limits.ttlMs) break;
      this.#drop(k);
    }
    const key = `${from}|${tag}`;
    if (this.#bytes + payload.length > this.limits.bytes) throw new C0Error('TRAIN_BAD_MESSAGE', `chunks in assembly would hold over ${this.limits.bytes} bytes`);
    if (this.bytesFrom(from) + payload.length > this.limits.bytesPerSender) throw new C0Error('TRAIN_BAD_MESSAGE', `chunks in assembly from member ${from} would hold over ${this.limits.bytesPerSender} bytes`);
    let p = this.#partial.get(key);
    if (!p) {
      if (this.#partial.size >= this.limits.chunks) throw new C0Error('TRAIN_BAD_MESSAGE', 'too many chunks in assembly');
      let mine = 0;
      for (const q of this.#partial.values()) if (q.from === from) mine++;
      if (mine >= this.limits.chunksPerSender) throw new C0Error('TRAIN_BAD_MESSAGE', `too many chunks in assembly from member ${from}`);
      p = { parts: new Array<Uint8Array | undefined>(parts), got: 0, from, since: now, bytes: 0, tag };
      this.#partial.set(key, p);
    }
    if (p.parts.length !== parts) throw new C0Error('TRAIN_BAD_MESSAGE', 'part count changed');
    if (p.parts[part]) throw new C0Error('TRAIN_DUPLICATE_MESSAGE', `part ${part} of ${tag} twice`);
    p.parts[part] = payload.slice();
    p.bytes += payload.length;
    this.#bytes += payload.length;
    this.#senderBytes.set(from, this.bytesFrom(from) + payload.length);
    if (++p.got < parts) return;
    this.#drop(key);
    this.deliver(from, tag, join(p.parts as Uint8Array[]));
  }
}

/** Send `data` under `tag` as one or more chunk messages of at most MAX_MESSAGE_BYTES, in order. */
export async function sendChunk(wire: TrainWire, to: string, tag: string, data: Uint8Array, timeoutMs: number): Promise<void> {
  const parts = Math.max(1, Math.ceil(data.length / MAX_MESSAGE_BYTES));
  for (let k = 0; k < parts; k++) {
    await wire.send(to, { k: 'chunk', tag, ...(parts > 1 ? { part: k, parts } : {}) }, data.subarray(k * MAX_MESSAGE_BYTES, Math.min(data.length, (k + 1) * MAX_MESSAGE_BYTES)), timeoutMs);
  }
}

/**
 * A send the receiver answered with an error (`detail.remote`) is the
 * receiver's refusal: TRAIN_PEER_REFUSED naming it (`detail.member`), its code
 * kept as `detail.remoteCode`. The sender never rethrows a peer's code, so
 * whatever a receiver answers, the sender recovers as from that member's
 * failure (docs/training.md "Failure"). A refusal by the receiver's node
 * (a NET_* code: TrainWire.send tried again until its deadline, then
 * TRAIN_PEER_BUSY) never gets here as one.
 */
export function refusedBy(e: unknown, member: string, tag: string): unknown {
  if (!(e instanceof C0Error) || !(e.detail as { remote?: unknown } | undefined)?.remote) return e;
  return new C0Error('TRAIN_PEER_REFUSED', `${member} refused chunk ${tag} (${e.code}: ${e.message.slice(0, 200)})`, { detail: { member, tag, remoteCode: e.code } });
}

/**
 * A send that failed on this side (its deadline, a stream that could not be opened or broke: a NET_* code the
 * receiver did not answer) names the member it was for (`detail.member`, `detail.tag`, and in its message), so the
 * log line and the view change it causes say whom this worker was sending to. Who is at fault is not decided here:
 * the code is kept (a deadline is recoverable, no one's fault).
 */
export function sendFailedTo(e: unknown, member: string, tag: string): unknown {
  if (!(e instanceof C0Error) || !e.code.startsWith('NET_') || e.detail?.remote || e.detail?.member !== undefined) return e;
  return new C0Error(e.code, `sending ${tag} to ${member}: ${e.message}`, { detail: { ...e.detail, member, tag }, cause: e });
}

/**
 * A RingTransport for one view: ranks are positions in `members`, messages go
 * over the wire, chunks arrive in `box` keyed by the sender's run rank. A
 * refused send is TRAIN_PEER_REFUSED naming the receiver (`refusedBy`), one that failed on this side keeps its code
 * and names the receiver too (`sendFailedTo`);
 * `waiting` hears of each receive as it starts, ends and fails, so the worker
 * can say what it was waiting for.
 */
export function wireRing(wire: TrainWire, box: Mailbox, members: string[], self: string, runRank: (did: string) => number, timeoutMs: number, waiting?: (tag: string, state: 'start' | 'done' | 'failed') => void): RingTransport {
  const rank = members.indexOf(self);
  return {
    rank,
    size: members.length,
    send: (to, tag, data) =>
      sendChunk(wire, members[to]!, tag, data, timeoutMs).catch((e: unknown) => {
        throw sendFailedTo(refusedBy(e, members[to]!, tag), members[to]!, tag);
      }),
    recv: async (from, tag) => {
      waiting?.(tag, 'start');
      try {
        const got = await box.take(runRank(members[from]!), tag, timeoutMs);
        waiting?.(tag, 'done');
        return got;
      } catch (e) {
        waiting?.(tag, 'failed');
        throw e;
      }
    },
  };
}
