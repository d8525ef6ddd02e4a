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
 * request can be followed by a stream of responses (exec: progress events,
 * output, receipt).
 */
import type { Connection, PeerId, Stream } from '@libp2p/interface';
import type { Multiaddr } from '@multiformats/multiaddr';
import { lpStream, type LengthPrefixedStream } from '@libp2p/utils';
import { C0Error, isC0Error } from '../errors.js';
import { decodeCanonical, encodeCanonical, type CborValue } from '../records/cbor.js';
import { MAX_ENVELOPE_BYTES } from '../records/envelope.js';
import type { Logger } from '../util/log.js';
import type { NetMetrics } from './metrics.js';

export const PROTOCOLS = {
  exec: '/c0mpute/exec/1',
  records: '/c0mpute/records/1',
  ledger: '/c0mpute/ledger/1',
  witness: '/c0mpute/witness/1',
} as const;

export const NET_ERR = {
  DEADLINE: 'NET_DEADLINE',
  FRAME_TOO_LARGE: 'NET_FRAME_TOO_LARGE',
  TOO_MANY_FRAMES: 'NET_TOO_MANY_FRAMES',
  BAD_FRAME: 'NET_BAD_FRAME',
  STREAM: 'NET_STREAM_FAILED',
  DIAL: 'NET_DIAL_FAILED',
  HANDLER: 'NET_HANDLER_FAILED',
  BAD_REQUEST: 'NET_BAD_REQUEST',
} as const;

export interface ProtocolLimits {
  /** Largest frame either side accepts, bytes. */
  maxFrameBytes: number;
  /** Whole-stream deadline, ms (from open to the last frame). */
  deadlineMs: number;
  /** Request frames a server accepts before [1]. */
  maxRequestFrames: number;
  /** Response frames a caller accepts. */
  maxResponseFrames: number;
  /** Concurrent inbound streams of this protocol per connection. */
  maxInboundStreams: number;
}

export const DEFAULT_LIMITS: ProtocolLimits = {
  maxFrameBytes: 1024 * 1024,
  deadlineMs: 30_000,
  maxRequestFrames: 64,
  maxResponseFrames: 10_000,
  maxInboundStreams: 32,
};

/** Defaults per protocol; `serve`/`call` take overrides. */
export const PROTOCOL_LIMITS: Record<string, ProtocolLimits> = {
  [PROTOCOLS.records]: { ...DEFAULT_LIMITS, maxFrameBytes: MAX_ENVELOPE_BYTES + 64, deadlineMs: 10_000, maxRequestFrames: 1, maxResponseFrames: 4_096 },
  [PROTOCOLS.exec]: { ...DEFAULT_LIMITS, maxFrameBytes: 16 * 1024 * 1024, deadlineMs: 15 * 60_000, maxRequestFrames: 16 },
  [PROTOCOLS.ledger]: { ...DEFAULT_LIMITS, maxFrameBytes: 1024 * 1024, deadlineMs: 30_000, maxRequestFrames: 1 },
  [PROTOCOLS.witness]: { ...DEFAULT_LIMITS, maxFrameBytes: 256 * 1024, deadlineMs: 10_000, maxRequestFrames: 4 },
};

export function limitsFor(protocol: string, override: Partial<ProtocolLimits> = {}): ProtocolLimits {
  return { ...(PROTOCOL_LIMITS[protocol] ?? DEFAULT_LIMITS), ...override };
}

export interface ServeContext {
  /** The remote peer. */
  peer: PeerId;
  /** Aborts at the stream's deadline or when the stream fails. */
  signal: AbortSignal;
  /** Send one response frame (bounded by maxFrameBytes). */
  send(frame: CborValue): Promise<void>;
}

/**
 * A server handler: gets the request frames, sends responses with `ctx.send`.
 * Throw a C0Error to send an error frame with its code.
 */
export type ProtocolHandler = (requests: CborValue[], ctx: ServeContext) => Promise<void> | void;

export interface CallOptions {
  /** Called for each response frame as it arrives. */
  onFrame?: (frame: CborValue) => void | Promise<void>;
  signal?: AbortSignal;
  limits?: Partial<ProtocolLimits>;
}

/** The subset of libp2p the direct protocols use. */
export interface StreamHost {
  handle(protocol: string, handler: (stream: Stream, connection: Connection) => void | Promise<void>, options?: { maxInboundStreams?: number; force?: true }): Promise<void>;
  unhandle(protocol: string): Promise<void>;
  dialProtocol(peer: PeerId | Multiaddr | Multiaddr[], protocols: string | string[], options?: { signal?: AbortSignal }): Promise<Stream>;
}

type Frame = { t: 'data'; v: CborValue } | { t: 'end' } | { t: 'error'; code: string; message: string };

function encodeFrame(f: Frame): Uint8Array {
  if (f.t === 'data') return encodeCanonical([0, f.v]);
  if (f.t === 'end') return encodeCanonical([1]);
  return encodeCanonical([2, f.code, f.message]);
}

function decodeFrame(b: Uint8Array): Frame {
  let v: CborValue;
  try {
    v = decodeCanonical(b, { recheck: false });
  } catch (e) {
    throw new C0Error(NET_ERR.BAD_FRAME, `frame is not CBOR: ${(e as Error).message}`);
  }
  if (Array.isArray(v)) {
    if (v[0] === 0 && v.length === 2) return { t: 'data', v: v[1]! };
    if (v[0] === 1 && v.length === 1) return { t: 'end' };
    if (v[0] === 2 && v.length === 3 && typeof v[1] === 'string' && typeof v[2] === 'string') return { t: 'error', code: v[1].slice(0, 64), message: v[2].slice(0, 500) };
  }
  throw new C0Error(NET_ERR.BAD_FRAME, 'frame is not [0,v], [1] or [2,code,message]');
}

/** Map a stream-level failure to a coded error. */
function streamError(e: unknown, signal: AbortSignal, deadlineMs: number): C0Error {
  if (isC0Error(e)) return e;
  const name = (e as Error)?.name ?? '';
  if (signal.aborted && signal.reason instanceof C0Error) return signal.reason;
  if (name === 'InvalidDataLengthError' || name === 'InvalidDataLengthLengthError') return new C0Error(NET_ERR.FRAME_TOO_LARGE, `frame over the bound: ${(e as Error).message}`);
  if (signal.aborted || name === 'AbortError' || name === 'TimeoutError') return new C0Error(NET_ERR.DEADLINE, `stream passed its deadline of ${deadlineMs} ms`);
  return new C0Error(NET_ERR.STREAM, `stream failed: ${(e as Error)?.message ?? String(e)}`, { detail: { name } });
}

async function readFrame(lp: LengthPrefixedStream, signal: AbortSignal): Promise<Frame> {
  const buf = await lp.read({ signal });
  return decodeFrame(buf.subarray());
}

function deadlineSignal(ms: number, outer?: AbortSignal): { signal: AbortSignal; clear: () => void } {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(new C0Error(NET_ERR.DEADLINE, `stream passed its deadline of ${ms} ms`)), ms);
  const onOuter = () => ac.abort(outer?.reason);
  if (outer) {
    if (outer.aborted) onOuter();
    else outer.addEventListener('abort', onOuter, { once: true });
  }
  return {
    signal: ac.signal,
    clear: () => {
      clearTimeout(t);
      outer?.removeEventListener('abort', onOuter);
    },
  };
}

export class DirectProtocols {
  readonly #host: StreamHost;
  readonly #m: NetMetrics;
  readonly #log: Logger;
  readonly #served = new Set<string>();

  constructor(host: StreamHost, metrics: NetMetrics, log: Logger) {
    this.#host = host;
    this.#m = metrics;
    this.#log = log;
  }

  /** Serve `protocol` with `handler` (replaces an earlier handler). */
  async serve(protocol: string, handler: ProtocolHandler, override: Partial<ProtocolLimits> = {}): Promise<void> {
    const limits = limitsFor(protocol, override);
    await this.#host.handle(protocol, (stream, connection) => this.#onStream(protocol, limits, handler, stream, connection), { maxInboundStreams: limits.maxInboundStreams, force: true });
    this.#served.add(protocol);
  }

  async unserve(protocol: string): Promise<void> {
    if (this.#served.delete(protocol)) await this.#host.unhandle(protocol);
  }

  async #onStream(protocol: string, limits: ProtocolLimits, handler: ProtocolHandler, stream: Stream, connection: Connection): Promise<void> {
    const t0 = performance.now();
    const { signal, clear } = deadlineSignal(limits.deadlineMs);
    const lp = lpStream(stream, { maxDataLength: limits.maxFrameBytes });
    let outcome = 'ok';
    const onAbort = () => stream.abort(signal.reason instanceof Error ? signal.reason : new Error('deadline'));
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      const requests: CborValue[] = [];
      for (;;) {
        const f = await readFrame(lp, signal);
        if (f.t === 'end') break;
        if (f.t !== 'data') throw new C0Error(NET_ERR.BAD_FRAME, 'a request may not carry an error frame');
        if (requests.length >= limits.maxRequestFrames) throw new C0Error(NET_ERR.TOO_MANY_FRAMES, `more than ${limits.maxRequestFrames} request frames`);
        requests.push(f.v);
      }
      const send = async (v: CborValue): Promise<void> => {
        const bytes = encodeFrame({ t: 'data', v });
        if (bytes.length > limits.maxFrameBytes) throw new C0Error(NET_ERR.FRAME_TOO_LARGE, `response frame of ${bytes.length} bytes over ${limits.maxFrameBytes}`);
        await lp.write(bytes, { signal });
      };
      await handler(requests, { peer: connection.remotePeer, signal, send });
      await lp.write(encodeFrame({ t: 'end' }), { signal });
      await stream.close({ signal });
    } catch (e) {
      const err = streamError(e, signal, limits.deadlineMs);
      outcome = err.code;
      if (signal.aborted) {
        stream.abort(err);
      } else {
        // tell the caller why, then close
        try {
          await lp.write(encodeFrame({ t: 'error', code: err.code, message: err.message }), { signal });
          await stream.close({ signal });
        } catch {
          stream.abort(err);
        }
      }
      this.#log.debug({ protocol, peer: connection.remotePeer.toString(), code: err.code }, 'inbound stream failed');
    } finally {
      signal.removeEventListener('abort', onAbort);
      clear();
      this.#m.streams.inc({ protocol, direction: 'in', outcome });
      this.#m.streamSeconds.observe({ protocol, direction: 'in' }, (performance.now() - t0) / 1000);
    }
  }

  /**
   * Open a stream to `peer`, send the request frames, and collect the response
   * frames (also passed to `onFrame` as they arrive) until the server's end.
   * Throws C0Error: NET_DEADLINE, NET_FRAME_TOO_LARGE, NET_DIAL_FAILED,
   * NET_STREAM_FAILED, or the code of the server's error frame (detail.remote = true).
   */
  async call(peer: PeerId | Multiaddr, protocol: string, requests: CborValue[], opts: CallOptions = {}): Promise<CborValue[]> {
    const limits = limitsFor(protocol, opts.limits);
    const t0 = performance.now();
    const { signal, clear } = deadlineSignal(limits.deadlineMs, opts.signal);
    let outcome = 'ok';
    let stream: Stream | undefined;
    try {
      try {
        stream = await this.#host.dialProtocol(peer, protocol, { signal });
      } catch (e) {
        if (signal.aborted) throw streamError(e, signal, limits.deadlineMs);
        throw new C0Error(NET_ERR.DIAL, `cannot open ${protocol} to ${peer.toString()}: ${(e as Error).message}`, { detail: { name: (e as Error).name } });
      }
      const s = stream;
      const onAbort = () => s.abort(signal.reason instanceof Error ? signal.reason : new Error('deadline'));
      signal.addEventListener('abort', onAbort, { once: true });
      try {
        const lp = lpStream(s, { maxDataLength: limits.maxFrameBytes });
        for (const r of requests) {
          const bytes = encodeFrame({ t: 'data', v: r });
          if (bytes.length > limits.maxFrameBytes) throw new C0Error(NET_ERR.FRAME_TOO_LARGE, `request frame of ${bytes.length} bytes over ${limits.maxFrameBytes}`);
          await lp.write(bytes, { signal });
        }
        await lp.write(encodeFrame({ t: 'end' }), { signal });
        const out: CborValue[] = [];
        for (;;) {
          const f = await readFrame(lp, signal);
          if (f.t === 'end') break;
          if (f.t === 'error') throw new C0Error(f.code, `${protocol} peer answered: ${f.message}`, { detail: { remote: true } });
          if (out.length >= limits.maxResponseFrames) throw new C0Error(NET_ERR.TOO_MANY_FRAMES, `more than ${limits.maxResponseFrames} response frames`);
          out.push(f.v);
          if (opts.onFrame) await opts.onFrame(f.v);
        }
        await s.close({ signal }).catch(() => s.abort(new Error('close failed')));
        return out;
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    } catch (e) {
      const err = streamError(e, signal, limits.deadlineMs);
      outcome = err.code;
      stream?.abort(err);
      throw err;
    } finally {
      clear();
      this.#m.streams.inc({ protocol, direction: 'out', outcome });
      this.#m.streamSeconds.observe({ protocol, direction: 'out' }, (performance.now() - t0) / 1000);
    }
  }
}
