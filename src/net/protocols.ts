/**
 * Direct protocols (DESIGN §3.5): libp2p streams carrying length-prefixed
 * canonical-CBOR frames, each protocol with a frame size bound and a deadline
 * per stream.
 *
 * Every frame on the wire is a CBOR array:
 *   [0, value]          data (a request, or one response item)
 *   [1]                 end of this side's frames
 *   [2, code, message]  error (the server's last frame; the caller throws C0Error(code))
 *
 * The caller sends its request frames and [1]; the server answers with any
 * number of data frames and [1] (or an error frame), then closes. So one
 * request can be followed by a stream of responses. A streaming protocol
 * (`serveStream`/`open`, used by exec/1) interleaves the two directions: the
 * server reads request frames one at a time and may answer before the caller's
 * [1] (docs/network.md "Direct streams: limits and framing").
 *
 * Inbound request data is bounded by a byte budget shared by every inbound
 * stream (per stream, per connection, in total; src/net/byte-budget.ts), and
 * frames are read with backpressure (src/net/frame-reader.ts).
 */
import type { Connection, PeerId, Stream } from '@libp2p/interface';
import { isMultiaddr, multiaddr, type Multiaddr } from '@multiformats/multiaddr';
import { C0Error } from '../errors.js';
import type { CborValue } from '../records/cbor.js';
import { MAX_ENVELOPE_BYTES } from '../records/envelope.js';
import type { Logger } from '../util/log.js';
import type { NetMetrics } from './metrics.js';
import { ByteBudget, type BudgetOptions, type StreamBudget } from './byte-budget.js';
import { FrameReader } from './frame-reader.js';
import { NET_ERR, deadlineSignal, decodeFrame, encodeFrame, outcomeLabel, readFrame, streamError, writeFrame, type Frame } from './frames.js';

export const PROTOCOLS = {
  exec: '/c0mpute/exec/1',
  records: '/c0mpute/records/1',
  ledger: '/c0mpute/ledger/1',
} as const;

export { NET_ERR, REMOTE_LABEL_CODES, REMOTE_OTHER, neverOpened } from './frames.js';

export interface ProtocolLimits {
  /** Largest frame either side accepts, bytes. */
  maxFrameBytes: number;
  /** Whole-stream deadline, ms (from open to the last frame). */
  deadlineMs: number;
  /** Request frames a server accepts before [1]. */
  maxRequestFrames: number;
  /** Response frames a caller accepts. */
  maxResponseFrames: number;
  /**
   * Response bytes (all frames, encoded) a caller accepts from one call; past it the call fails
   * NET_RESPONSE_TOO_LARGE. Default 16 MiB: a peer cannot make `call` hold maxResponseFrames × maxFrameBytes.
   */
  maxResponseBytes?: number;
  /** Concurrent inbound streams of this protocol per connection. */
  maxInboundStreams: number;
  /** Concurrent outbound streams of this protocol per connection a caller opens (absent: libp2p's default, 64). */
  maxOutboundStreams?: number;
  /** How long an answered stream may stay open for the caller to read the rest and close its side; default ANSWER_LINGER_MS. */
  answerLingerMs?: number;
  /** Request bytes one inbound stream may hold at once (frames being read and kept); default maxFrameBytes × min(maxRequestFrames, 64). The end frame's 2 bytes are allowed on top. */
  maxStreamBytes?: number;
  /**
   * For a collecting handler (`serve`): how long the caller has to send its whole request, up to its end frame, ms;
   * the answer then has `deadlineMs` from there. Default requestDeadlineMs: REQUEST_BASE_MS plus one largest frame at
   * REQUEST_MIN_RATE, never past `deadlineMs`.
   */
  requestMs?: number;
}

/**
 * The request phase of a collected request (ProtocolLimits.requestMs): 30 s, plus one largest frame at 128 KiB/s (the
 * buyer's own floor for an exec input). Without it the request was read under the protocol's whole deadline, which
 * steward/1 (a claim may wait in line for a day) and pool/1 (10 min) set long for their answers: four keys that sent
 * all but the last byte of 32 frames each held the steward's whole request budget (96 MiB) for 24 hours, and honest
 * claims were refused NET_BUFFER_LIMIT (review s39, real daemons).
 */
export const REQUEST_BASE_MS = 30_000;
export const REQUEST_MIN_RATE = 128 * 1024;

export function requestDeadlineMs(limits: ProtocolLimits): number {
  return Math.min(limits.deadlineMs, limits.requestMs ?? REQUEST_BASE_MS + Math.ceil((limits.maxFrameBytes / REQUEST_MIN_RATE) * 1000));
}

export const DEFAULT_LIMITS: ProtocolLimits = {
  maxFrameBytes: 1024 * 1024,
  deadlineMs: 30_000,
  maxRequestFrames: 64,
  maxResponseFrames: 10_000,
  maxInboundStreams: 32,
};

/** `/c0mpute/steward/1`, as src/roles/steward-ports.ts names it (the net layer imports nothing from roles). */
const STEWARD_PROTOCOL_ID = '/c0mpute/steward/1';
/**
 * The steward protocol's streams per connection, each way: the admission asks one buyer may have waiting in the
 * steward's line (MAX_QUEUED_PER_BUYER, 256), each holding its stream, plus STEWARD_STREAM_HEADROOM (32) for its
 * withdraws, selects, `reclaimed` asks and the asks being decided. Before (review s43 R1 F2) libp2p's defaults (32 in,
 * 64 out): 32 jobs waiting in line took every stream and a withdraw of a held claim failed NET_STREAM_FAILED.
 */
export const STEWARD_STREAM_HEADROOM = 32;
export const STEWARD_STREAMS = 256 + STEWARD_STREAM_HEADROOM;

/** Defaults per protocol; `serve`/`call` take overrides. */
export const PROTOCOL_LIMITS: Record<string, ProtocolLimits> = {
  [PROTOCOLS.records]: { ...DEFAULT_LIMITS, maxFrameBytes: MAX_ENVELOPE_BYTES + 64, deadlineMs: 10_000, maxRequestFrames: 1, maxResponseFrames: 4_096 },
  // exec/1 is a streaming protocol: small frames (header, 256 KiB chunks); its handler sets the deadlines per phase.
  [PROTOCOLS.exec]: { ...DEFAULT_LIMITS, maxFrameBytes: 512 * 1024, deadlineMs: 30_000, maxRequestFrames: 1 << 20 },
  // ledger/1 answers a range of at most MAX_LEDGER_RANGE (1,024) entries, each one record
  [PROTOCOLS.ledger]: { ...DEFAULT_LIMITS, maxFrameBytes: MAX_ENVELOPE_BYTES + 64, deadlineMs: 30_000, maxRequestFrames: 1, maxResponseFrames: 1024, maxResponseBytes: 1024 * (MAX_ENVELOPE_BYTES + 64) },
  // steward/1 (src/roles/steward-ports.ts STEWARD_PROTOCOL): a buyer's admission asks waiting in line each hold their
  // stream, up to the line's per-buyer cap (256), with room beside them for its withdraws and other ops
  // (STEWARD_STREAMS; the steward serves max(that, its own cap + the room): stewardInboundStreams)
  [STEWARD_PROTOCOL_ID]: { ...DEFAULT_LIMITS, maxInboundStreams: STEWARD_STREAMS, maxOutboundStreams: STEWARD_STREAMS },
};

/** What `call` accepts in all from one response unless the protocol or the caller says otherwise. */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;

export function limitsFor(protocol: string, override: Partial<ProtocolLimits> = {}): ProtocolLimits {
  return { ...(PROTOCOL_LIMITS[protocol] ?? DEFAULT_LIMITS), ...override };
}

export interface ServeContext {
  /** The remote peer. */
  peer: PeerId;
  /** Aborts at the stream's deadline, or as soon as the caller resets the stream or its connection drops (NET_STREAM_FAILED). */
  signal: AbortSignal;
  /** Send one response frame (bounded by maxFrameBytes). */
  send(frame: CborValue): Promise<void>;
  /** How the caller ended the stream (StreamContext.callerEnded; a collecting handler's ctx is that same context). */
  callerEnded?(): Promise<CallerEnd>;
}

/** What a streaming handler (`serveStream`) gets. */
export interface StreamContext extends ServeContext {
  /** The next request data frame; undefined once the caller sent [1]. */
  next(): Promise<CborValue | undefined>;
  /**
   * Reserve `bytes` of the node's request budget for data the handler keeps
   * (released when the stream ends). Throws NET_BUFFER_LIMIT when it does not fit.
   */
  reserve(bytes: number): void;
  /** Move the stream's deadline to `ms` from now (`what` names the phase in the error). */
  setDeadline(ms: number, what: string): void;
  /**
   * Settles when the caller is done with the stream from now on: `closed` when it closes its writing side (a
   * deliberate act: it read what it wanted), `reset` when the stream ends from its end otherwise (its reset, which a
   * caller also sends when it gives up before reading anything more, or its connection closing), `lost` when the
   * stream ends from this side (its connection died under it, or the deadline fired). Only what happens after the
   * call counts as the caller's close (a side closed earlier says nothing about frames sent since); a reset already
   * seen counts. Never settles while the stream stays open and silent (a half-open link): the handler bounds its own
   * wait.
   */
  callerEnded(): Promise<CallerEnd>;
}

/** How a caller's stream ended (StreamContext.callerEnded). */
export type CallerEnd = 'closed' | 'reset' | 'lost';

export type StreamHandler = (ctx: StreamContext) => Promise<void>;

/** A caller's side of a streaming protocol (`open`). */
export interface ClientStream {
  /** Send one request data frame (waits while the stream cannot take more). */
  send(frame: CborValue): Promise<void>;
  /** Send [1]: no more request frames. */
  end(): Promise<void>;
  /** The next response data frame; undefined at the server's [1]. Throws the server's error frame as C0Error. */
  next(): Promise<CborValue | undefined>;
  /**
   * Close this side for writing (a FIN after the end frame already sent): tells the server this caller is done and
   * read what it wanted, unlike a reset, which a caller also sends when it gives up. Resolves once the FIN is handed
   * to the connection; `close` must still be called.
   */
  closeWrite(): Promise<void>;
  /** Close (after the server's end) or abort (earlier). */
  close(): Promise<void>;
  readonly signal: AbortSignal;
  /** Response bytes read so far (encoded frames). */
  readonly bytesIn: number;
}

/**
 * A server handler: gets the request frames, sends responses with `ctx.send`.
 * Throw a C0Error to send an error frame with its code.
 */
export type ProtocolHandler = (requests: CborValue[], ctx: ServeContext) => Promise<void> | void;

/** How a served protocol is served, beyond its limits. */
export interface ServeOptions {
  /**
   * Who may call it, decided by the connection's key before a byte of the request is read: an error refuses the
   * stream with that error frame at once. A protocol served to a known set of keys (pool/1 to the pool's members,
   * pipeline/1 to the run's stages, preempt/1 to the steward) sets it, so a stranger cannot hold request bytes, the
   * stream budget or a stream slot for the request phase before its request is refused.
   */
  admit?: (peer: PeerId) => C0Error | undefined;
}

export interface CallOptions {
  /** Called for each response frame as it arrives. */
  onFrame?: (frame: CborValue) => void | Promise<void>;
  signal?: AbortSignal;
  limits?: Partial<ProtocolLimits>;
}

/** The subset of libp2p the direct protocols use. */
/**
 * libp2p's options for a protocol this node serves. Its outbound bound too: libp2p takes the handler's
 * maxOutboundStreams (its default 64 when none is given) over the one a dial passes, so on a node that serves a
 * protocol a higher limit passed only to the dial was ignored (a pipeline stage's 65th forward to the next stage
 * failed "Too many outbound protocol streams": review s53).
 */
function handleOptions(limits: ProtocolLimits): { maxInboundStreams: number; maxOutboundStreams?: number; force: true } {
  return { maxInboundStreams: limits.maxInboundStreams, ...(limits.maxOutboundStreams === undefined ? {} : { maxOutboundStreams: limits.maxOutboundStreams }), force: true };
}

export interface StreamHost {
  handle(protocol: string, handler: (stream: Stream, connection: Connection) => void | Promise<void>, options?: { maxInboundStreams?: number; maxOutboundStreams?: number; force?: true }): Promise<void>;
  unhandle(protocol: string): Promise<void>;
  dialProtocol(peer: PeerId | Multiaddr | Multiaddr[], protocols: string | string[], options?: { signal?: AbortSignal; maxOutboundStreams?: number }): Promise<Stream>;
  /** The peer's connections (to try another when the one libp2p chose does not speak a protocol). */
  getConnections?(peer: PeerId): Connection[];
  /** Dial an address (`force`: a new connection even with one open to the peer). */
  dial?(peer: Multiaddr, options: { signal: AbortSignal; force: true }): Promise<Connection>;
}

/** What each connection's process speaks and where a process that spoke a protocol listens (peer-conns.ts PeerConnections). */
export interface ConnectionView {
  speaks(connId: string, protocol: string): boolean | undefined;
  altAddrs(peer: string, protocol: string): string[];
}

/** How long a stream may stay half-open after an error frame before it is reset (the caller has only that frame to read). */
const ERROR_LINGER_MS = 2_000;
/**
 * How long a stream may stay open after the answer's end frame, by default, before it is reset: what the server wrote
 * may still sit in the caller's receive window (yamux grants up to megabytes), and an honest caller closes its side
 * only once it has read the last frame, so this is the time a slow honest reader has to finish.
 */
export const ANSWER_LINGER_MS = 15_000;

/** Has the stream ended both ways (closed, or reset by either side)? */
function streamEnded(stream: Stream): boolean {
  return stream.status !== 'open' && stream.status !== 'closing';
}

/**
 * End an inbound stream after the server's last frame (its end frame, or an error frame): stop reading, so what the
 * caller sent and was not read is dropped, and anything it still sends is too (a paused stream grants no more
 * window); close our side once what we wrote is sent; then wait for the caller to close its side, at most `lingerMs`,
 * and reset the stream if it has not. So no stream outlives its answer by more than `lingerMs`, however long the
 * caller keeps its side open, and none holds data outside the byte budget meanwhile. The timer is a plain one: an
 * `AbortSignal.timeout` nothing else references can be collected on Node 20 before it fires.
 */
async function finish(stream: Stream, lingerMs: number, err: Error): Promise<void> {
  if (stream.readStatus === 'readable') {
    try {
      stream.pause();
    } catch {
      /* closing */
    }
  }
  await stream.closeRead().catch(() => {});
  const linger = new AbortController();
  const timer = setTimeout(() => linger.abort(err), lingerMs);
  try {
    await stream.close({ signal: linger.signal });
    await new Promise<void>((resolve) => {
      if (streamEnded(stream) || linger.signal.aborted) return resolve();
      const done = (): void => {
        stream.removeEventListener('close', done);
        linger.signal.removeEventListener('abort', done);
        resolve();
      };
      stream.addEventListener('close', done);
      linger.signal.addEventListener('abort', done);
    });
  } catch {
    /* the linger ran out while our side was still being sent, or the stream failed */
  } finally {
    clearTimeout(timer);
  }
  if (!streamEnded(stream)) stream.abort(err);
}

/**
 * The caller's end frame ([1], 2 bytes): read through the stream's budget like any frame, while a collecting
 * handler still holds every request frame, so each stream may hold this much on top of its request bound (without
 * it, request frames that fill the bound exactly, e.g. one frame of maxFrameBytes, were refused at the end frame).
 */
export const END_FRAME_BYTES = encodeFrame({ t: 'end' }).length;

export interface DirectOptions {
  /** The inbound request budget (src/net/byte-budget.ts). */
  budget?: Partial<BudgetOptions>;
  /** Per-connection identify (src/net/peer-conns.ts): which connection of a peer to try when another does not speak a protocol. */
  conns?: ConnectionView;
}

/** How long an address dialled for a protocol no open connection of its peer spoke, and that gave none, is left alone, ms. */
export const ALT_RETRY_MS = 600_000;

/** libp2p's error when the peer, connected, answers a protocol it does not speak (multistream-select: "na"). */
export function isUnsupportedProtocol(e: unknown): boolean {
  return (e as Error | undefined)?.name === 'UnsupportedProtocolError';
}

/**
 * Why a stream did not open, as a C0Error: NET_PROTOCOL_UNSUPPORTED when the peer was reached and does not speak the
 * protocol (the dial worked: before, QA qaNet F1, this was NET_DIAL_FAILED, which sent the operator looking for a
 * network fault), NET_DIAL_FAILED for anything else (no address, refused, timed out, the handshake failed).
 */
export function openError(e: unknown, peer: PeerId | Multiaddr, protocol: string): C0Error {
  const name = (e as Error).name;
  if (isUnsupportedProtocol(e)) return new C0Error(NET_ERR.PROTOCOL, `cannot open ${protocol} to ${peer.toString()}: the peer does not speak it (${(e as Error).message})`, { detail: { name } });
  return new C0Error(NET_ERR.DIAL, `cannot open ${protocol} to ${peer.toString()}: ${(e as Error).message}`, { detail: { name } });
}

export class DirectProtocols {
  readonly #host: StreamHost;
  readonly #m: NetMetrics;
  readonly #log: Logger;
  readonly #served = new Set<string>();
  readonly #conns: ConnectionView | undefined;
  /** `${peer} ${addr}` → when (monotonic ms) a dial there gave no stream of the protocol: not tried again for ALT_RETRY_MS. */
  readonly #altFailed = new Map<string, number>();
  /** Request bytes held for inbound streams: per stream, per connection, in total. */
  readonly budget: ByteBudget;

  constructor(host: StreamHost, metrics: NetMetrics, log: Logger, opts: DirectOptions = {}) {
    this.#host = host;
    this.#m = metrics;
    this.#log = log;
    this.#conns = opts.conns;
    this.budget = new ByteBudget(opts.budget);
  }

  /**
   * A stream of `protocol` to `peer`: on the connection libp2p chooses (an open one, else a dial). When the peer
   * answers that it does not speak it and is named by PeerId, its other open connections that may (those whose
   * identify listed it first, then those not identified yet; not those whose identify did not), then the addresses
   * where a process of its key that spoke it listens (`ConnectionView.altAddrs`, each dialled as a new connection),
   * before the first refusal is thrown. Two processes that hold one key are one PeerId to libp2p, which took the
   * first connection it found: a buyer's exec stream went to a clone that is no provider, three times in a row, and
   * the honest provider, connected too, was signed three non-deliveries (docs/network.md §11 "Two processes with one
   * key"; QA qaNet F1).
   */
  async #dialStream(peer: PeerId | Multiaddr, protocol: string, signal: AbortSignal, maxOutboundStreams: number | undefined): Promise<Stream> {
    const o = { signal, ...(maxOutboundStreams === undefined ? {} : { maxOutboundStreams }) };
    try {
      return await this.#host.dialProtocol(peer, protocol, o);
    } catch (e) {
      if (!isUnsupportedProtocol(e) || signal.aborted || isMultiaddr(peer) || !this.#host.getConnections) throw e;
      const other = await this.#otherRoute(peer, protocol, o);
      if (other) return other;
      throw e;
    }
  }

  async #otherRoute(peer: PeerId, protocol: string, o: { signal: AbortSignal; maxOutboundStreams?: number }): Promise<Stream | undefined> {
    const rank = (c: Connection): number => {
      const s = this.#conns?.speaks(c.id, protocol);
      return s === true ? 0 : s === undefined ? 1 : 2;
    };
    const open = this.#host
      .getConnections!(peer)
      .filter((c) => c.status === 'open' && rank(c) < 2)
      .sort((a, b) => rank(a) - rank(b));
    for (const c of open) {
      try {
        const s = await c.newStream(protocol, o);
        this.#log.debug({ protocol, peer: peer.toString(), via: c.remoteAddr.toString() }, 'stream opened on another connection of the peer: the first did not speak the protocol');
        return s;
      } catch (e) {
        if (o.signal.aborted) throw e;
      }
    }
    if (!this.#host.dial || !this.#conns) return undefined;
    const now = performance.now();
    for (const a of this.#conns.altAddrs(peer.toString(), protocol)) {
      // an address that gave nothing lately is not dialled again: a peer of another version that does not speak a
      // protocol, with a remembered address it no longer listens on, would cost a dial on every call
      const key = `${peer.toString()} ${a}`;
      const failed = this.#altFailed.get(key);
      if (failed !== undefined && now - failed < ALT_RETRY_MS) continue;
      try {
        const c = await this.#host.dial(multiaddr(`${a}/p2p/${peer.toString()}`), { signal: o.signal, force: true });
        const s = await c.newStream(protocol, o);
        this.#altFailed.delete(key);
        this.#log.info({ protocol, peer: peer.toString(), addr: a }, 'stream opened on a new connection to the peer: none open spoke the protocol (another process holds its key?)');
        return s;
      } catch (e) {
        if (o.signal.aborted) throw e;
        if (this.#altFailed.size >= 1_024) this.#altFailed.delete(this.#altFailed.keys().next().value as string);
        this.#altFailed.set(key, performance.now());
      }
    }
    return undefined;
  }

  /** Serve `protocol` with `handler` (replaces an earlier handler). */
  async serve(protocol: string, handler: ProtocolHandler, override: Partial<ProtocolLimits> = {}, opts: ServeOptions = {}): Promise<void> {
    const limits = limitsFor(protocol, override);
    const requestMs = requestDeadlineMs(limits);
    const streamHandler: StreamHandler = async (ctx) => {
      const requests: CborValue[] = [];
      for (;;) {
        const v = await ctx.next();
        if (v === undefined) break;
        requests.push(v);
      }
      // the whole request is in: the answer has the protocol's deadline from here
      if (requestMs < limits.deadlineMs) ctx.setDeadline(limits.deadlineMs, 'stream');
      await handler(requests, ctx);
    };
    await this.#host.handle(protocol, (stream, connection) => this.#onStream(protocol, { ...limits, deadlineMs: requestMs }, streamHandler, stream, connection, true, opts), handleOptions(limits));
    this.#served.add(protocol);
  }

  /** Serve a streaming protocol: the handler reads request frames one at a time and may answer before the caller's [1]. */
  async serveStream(protocol: string, handler: StreamHandler, override: Partial<ProtocolLimits> = {}, opts: ServeOptions = {}): Promise<void> {
    const limits = limitsFor(protocol, override);
    await this.#host.handle(protocol, (stream, connection) => this.#onStream(protocol, limits, handler, stream, connection, false, opts), handleOptions(limits));
    this.#served.add(protocol);
  }

  async unserve(protocol: string): Promise<void> {
    if (this.#served.delete(protocol)) await this.#host.unhandle(protocol);
  }

  async #onStream(protocol: string, limits: ProtocolLimits, handler: StreamHandler, stream: Stream, connection: Connection, keepFrames: boolean, opts: ServeOptions): Promise<void> {
    const t0 = performance.now();
    // The caller resetting the stream (or its connection dropping) aborts the handler's signal at once, not at the
    // deadline: a handler that no longer reads (a provider running the job) learns its caller left.
    const gone = new AbortController();
    const { signal, clear, reset } = deadlineSignal(limits.deadlineMs, gone.signal);
    const onClose = (evt: Event): void => {
      const local = (evt as { local?: boolean }).local === true;
      if (!gone.signal.aborted) gone.abort(new C0Error(NET_ERR.STREAM, local ? 'the stream was closed' : 'the caller reset the stream'));
    };
    stream.addEventListener('close', onClose, { once: true });
    // How the stream closed, for callerEnded: from the caller's end (its reset, or its connection closing) or from this side.
    let closedBy: CallerEnd | undefined;
    const endedBy = (evt: Event): CallerEnd => ((evt as { local?: boolean }).local === true ? 'lost' : 'reset');
    const onClosedBy = (evt: Event): void => void (closedBy ??= endedBy(evt));
    stream.addEventListener('close', onClosedBy, { once: true });
    const callerEnded = (): Promise<CallerEnd> =>
      new Promise<CallerEnd>((resolve) => {
        if (closedBy !== undefined || streamEnded(stream)) return resolve(closedBy ?? 'lost');
        const settle = (v: CallerEnd): void => {
          stream.removeEventListener('close', onEnd);
          stream.removeEventListener('remoteCloseWrite', onRemoteEnd);
          resolve(v);
        };
        const onEnd = (evt: Event): void => settle(endedBy(evt));
        // its FIN arrives before anything that ends the stream after it (yamux keeps a stream's frames in order)
        const onRemoteEnd = (): void => settle('closed');
        stream.addEventListener('close', onEnd);
        if (stream.remoteWriteStatus === 'writable') stream.addEventListener('remoteCloseWrite', onRemoteEnd);
      });
    const budget: StreamBudget = this.budget.open(connection.id, connection.remotePeer.toString(), (limits.maxStreamBytes ?? limits.maxFrameBytes * Math.min(limits.maxRequestFrames, 64)) + END_FRAME_BYTES);
    const reader = new FrameReader(stream, { maxFrameBytes: limits.maxFrameBytes, budget });
    let outcome = 'ok';
    const onAbort = () => stream.abort(signal.reason instanceof Error ? signal.reason : new Error('deadline'));
    signal.addEventListener('abort', onAbort, { once: true });
    let frames = 0;
    let ended = false;
    // The stream's outcome and time are counted once its last frame is sent (what the caller then does with its side
    // is not the server's answer), or when it fails.
    let counted = false;
    const count = (): void => {
      if (counted) return;
      counted = true;
      this.#m.streams.inc({ protocol, direction: 'in', outcome });
      this.#m.streamSeconds.observe({ protocol, direction: 'in' }, (performance.now() - t0) / 1000);
    };
    try {
      // refused by key: answered before anything of the request is read (ServeOptions.admit)
      const refused = opts.admit?.(connection.remotePeer);
      if (refused) throw refused;
      const next = async (): Promise<CborValue | undefined> => {
        if (ended) return undefined;
        const raw = await reader.read(signal);
        if (!raw) throw new C0Error(NET_ERR.STREAM, 'the caller closed the stream before its end frame');
        let f: Frame;
        try {
          f = decodeFrame(raw.bytes);
        } finally {
          // A collecting handler keeps its frames until it returns; a streaming one copies what it keeps (reserve).
          if (!keepFrames) raw.release();
        }
        if (f.t === 'end') {
          raw.release();
          ended = true;
          return undefined;
        }
        if (f.t !== 'data') throw new C0Error(NET_ERR.BAD_FRAME, 'a request may not carry an error frame');
        if (++frames > limits.maxRequestFrames) throw new C0Error(NET_ERR.TOO_MANY_FRAMES, `more than ${limits.maxRequestFrames} request frames`);
        return f.v;
      };
      const send = async (v: CborValue): Promise<void> => {
        const bytes = encodeFrame({ t: 'data', v });
        if (bytes.length > limits.maxFrameBytes) throw new C0Error(NET_ERR.FRAME_TOO_LARGE, `response frame of ${bytes.length} bytes over ${limits.maxFrameBytes}`);
        await writeFrame(stream, bytes, signal);
      };
      await handler({ peer: connection.remotePeer, signal, send, next, reserve: (n) => budget.reserve(n), setDeadline: (ms, what) => reset(ms, what), callerEnded });
      // Our own close below ends the stream: not the caller leaving.
      stream.removeEventListener('close', onClose);
      await writeFrame(stream, encodeFrame({ t: 'end' }), signal);
      // The request is done with: its reservations go now, not when the caller gets round to closing its side.
      reader.close();
      budget.close();
      count();
      // The answer is written: the request's deadline no longer applies, the answer's linger does.
      clear();
      signal.removeEventListener('abort', onAbort);
      const lingerMs = limits.answerLingerMs ?? ANSWER_LINGER_MS;
      await finish(stream, lingerMs, new C0Error(NET_ERR.STREAM, `the caller kept its side of the stream open ${lingerMs} ms after the answer`));
    } catch (e) {
      const err = streamError(e, signal, limits.deadlineMs);
      // a handler may rethrow a peer's error: counted by outcomeLabel, like the caller's side
      outcome = outcomeLabel(err);
      reader.close();
      budget.close();
      if (signal.aborted) {
        stream.abort(err);
      } else {
        // Tell the caller why, stop reading, and reset the stream if the caller does not close its side soon.
        try {
          await writeFrame(stream, encodeFrame({ t: 'error', code: err.code, message: err.message }), signal);
          count();
          clear();
          signal.removeEventListener('abort', onAbort);
          await finish(stream, ERROR_LINGER_MS, err);
        } catch {
          stream.abort(err);
        }
      }
      this.#log.debug({ protocol, peer: connection.remotePeer.toString(), code: err.code }, 'inbound stream failed');
    } finally {
      stream.removeEventListener('close', onClose);
      stream.removeEventListener('close', onClosedBy);
      signal.removeEventListener('abort', onAbort);
      clear();
      reader.close();
      budget.close();
      count();
    }
  }

  /**
   * Open a stream to `peer`, send the request frames, and collect the response
   * frames (also passed to `onFrame` as they arrive) until the server's end.
   * Throws C0Error: NET_DEADLINE, NET_FRAME_TOO_LARGE, NET_DIAL_FAILED,
   * NET_PROTOCOL_UNSUPPORTED (connected, but the peer does not speak `protocol`), NET_STREAM_FAILED, or the code of the server's error frame (detail.remote = true).
   */
  async call(peer: PeerId | Multiaddr, protocol: string, requests: CborValue[], opts: CallOptions = {}): Promise<CborValue[]> {
    const limits = limitsFor(protocol, opts.limits);
    // Refuse an oversized request before dialling.
    const encoded = requests.map((r) => encodeFrame({ t: 'data', v: r }));
    for (const bytes of encoded) if (bytes.length > limits.maxFrameBytes) throw new C0Error(NET_ERR.FRAME_TOO_LARGE, `request frame of ${bytes.length} bytes over ${limits.maxFrameBytes}`);
    const s = await this.open(peer, protocol, opts);
    try {
      for (const r of requests) await s.send(r);
      await s.end();
      const out: CborValue[] = [];
      const maxBytes = limits.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
      for (;;) {
        const v = await s.next();
        if (v === undefined) break;
        if (out.length >= limits.maxResponseFrames) throw new C0Error(NET_ERR.TOO_MANY_FRAMES, `more than ${limits.maxResponseFrames} response frames`);
        if (s.bytesIn > maxBytes) throw new C0Error(NET_ERR.RESPONSE_TOO_LARGE, `response over ${maxBytes} bytes`);
        out.push(v);
        if (opts.onFrame) await opts.onFrame(v);
      }
      await s.close();
      return out;
    } catch (e) {
      await s.close();
      throw e;
    }
  }

  /**
   * Open a stream for a streaming protocol. Errors (thrown by send/next) are
   * C0Errors as for `call`; `close` must be called in every case.
   */
  async open(peer: PeerId | Multiaddr, protocol: string, opts: Omit<CallOptions, 'onFrame'> = {}): Promise<ClientStream> {
    const limits = limitsFor(protocol, opts.limits);
    const t0 = performance.now();
    const { signal, clear } = deadlineSignal(limits.deadlineMs, opts.signal);
    let outcome = 'ok';
    let stream: Stream;
    let finished = false;
    let closed = false;
    const fail = (e: unknown): C0Error => {
      const err = streamError(e, signal, limits.deadlineMs);
      // a peer's error frame names any code it likes: the label keeps only known ones (frames.ts REMOTE_LABEL_CODES)
      if (outcome === 'ok') outcome = outcomeLabel(err);
      return err;
    };
    const done = (): void => {
      clear();
      this.#m.streams.inc({ protocol, direction: 'out', outcome });
      this.#m.streamSeconds.observe({ protocol, direction: 'out' }, (performance.now() - t0) / 1000);
    };
    try {
      stream = await this.#dialStream(peer, protocol, signal, limits.maxOutboundStreams);
    } catch (e) {
      const err = signal.aborted ? streamError(e, signal, limits.deadlineMs) : openError(e, peer, protocol);
      outcome = err.code;
      done();
      throw err;
    }
    const s = stream;
    const onAbort = () => s.abort(signal.reason instanceof Error ? signal.reason : new Error('deadline'));
    signal.addEventListener('abort', onAbort, { once: true });
    const reader = new FrameReader(s, { maxFrameBytes: limits.maxFrameBytes });
    let bytesIn = 0;
    const tally = (n: number) => void (bytesIn += n);
    return {
      signal,
      get bytesIn() {
        return bytesIn;
      },
      send: async (v) => {
        try {
          const bytes = encodeFrame({ t: 'data', v });
          if (bytes.length > limits.maxFrameBytes) throw new C0Error(NET_ERR.FRAME_TOO_LARGE, `request frame of ${bytes.length} bytes over ${limits.maxFrameBytes}`);
          await writeFrame(s, bytes, signal);
        } catch (e) {
          throw fail(e);
        }
      },
      end: async () => {
        try {
          await writeFrame(s, encodeFrame({ t: 'end' }), signal);
        } catch (e) {
          throw fail(e);
        }
      },
      next: async () => {
        if (finished) return undefined;
        try {
          const f = await readFrame(reader, signal, false, tally);
          if (f.t === 'end') {
            finished = true;
            return undefined;
          }
          if (f.t === 'error') {
            finished = true;
            throw new C0Error(f.code, `${protocol} peer answered: ${f.message}`, { detail: { remote: true } });
          }
          return f.v;
        } catch (e) {
          throw fail(e);
        }
      },
      closeWrite: async () => {
        if (closed) return;
        try {
          await s.close({ signal });
        } catch (e) {
          throw fail(e);
        }
      },
      close: async () => {
        if (closed) return;
        closed = true;
        signal.removeEventListener('abort', onAbort);
        reader.close();
        if (finished && outcome === 'ok') await s.close({ signal }).catch(() => s.abort(new Error('close failed')));
        else s.abort(new C0Error(outcome === 'ok' ? NET_ERR.STREAM : outcome, 'stream closed early'));
        done();
      },
    };
  }
}
