/**
 * The frames of the direct protocols (DESIGN §3.5; docs/network.md §4 and
 * "Direct streams: limits and framing"): `[0, value]` data, `[1]` end,
 * `[2, code, message]` error, each length-prefixed; writing with backpressure,
 * reading through a FrameReader, and the movable per-stream deadline.
 */
import type { Stream } from '@libp2p/interface';
import { C0Error, isC0Error } from '../errors.js';
import { decodeCanonical, encodeCanonical, type CborValue } from '../records/cbor.js';
import { setLongTimeout, type LongTimer } from '../util/timers.js';
import type { FrameReader } from './frame-reader.js';

export const NET_ERR = {
  DEADLINE: 'NET_DEADLINE',
  FRAME_TOO_LARGE: 'NET_FRAME_TOO_LARGE',
  TOO_MANY_FRAMES: 'NET_TOO_MANY_FRAMES',
  RESPONSE_TOO_LARGE: 'NET_RESPONSE_TOO_LARGE',
  BAD_FRAME: 'NET_BAD_FRAME',
  STREAM: 'NET_STREAM_FAILED',
  DIAL: 'NET_DIAL_FAILED',
  /** Connected, but the peer does not speak the protocol (protocol negotiation failed): the dial worked, the peer refused. */
  PROTOCOL: 'NET_PROTOCOL_UNSUPPORTED',
  HANDLER: 'NET_HANDLER_FAILED',
  BAD_REQUEST: 'NET_BAD_REQUEST',
  BUFFER_LIMIT: 'NET_BUFFER_LIMIT',
  BAD_REMOTE_CODE: 'NET_BAD_REMOTE_CODE',
} as const;

/**
 * A stream that never opened, so nothing of the request was sent: the peer could not be reached (NET_DIAL_FAILED), or
 * it was and does not speak the protocol (NET_PROTOCOL_UNSUPPORTED). Callers that treated a dial failure as "nothing
 * reached the peer" treat both so.
 */
export function neverOpened(code: string | undefined): boolean {
  return code === NET_ERR.DIAL || code === NET_ERR.PROTOCOL;
}

/** What an error code looks like (ours, and any node's of this protocol): upper case, digits and `_`, at most 64. */
export const CODE_FORM = /^[A-Z][A-Z0-9_]{0,63}$/;

/**
 * The codes a peer's error frame may carry that this node keeps as they are in
 * a metric label: the direct protocols' stream-level refusals, which a peer
 * running this code answers with on any protocol. Any other code from a peer
 * (a handler's own, or anything a hostile peer makes up: up to 64 characters,
 * a new one per stream) is counted as REMOTE_OTHER, so a peer cannot add label
 * values (series) without bound; the error itself keeps the peer's code.
 */
export const REMOTE_LABEL_CODES: ReadonlySet<string> = new Set<string>([...Object.values(NET_ERR), 'NET_RATE_LIMITED']);

/** The label value of a code from a peer that is not among the known ones. */
export const REMOTE_OTHER = 'remote_other';

/** A code a peer sent, as a metric label: itself when `known` has it, else REMOTE_OTHER. */
export function remoteCodeLabel(code: string, known: ReadonlySet<string> = REMOTE_LABEL_CODES): string {
  return known.has(code) ? code : REMOTE_OTHER;
}

/** A stream's failure as its outcome label: its code, or for a peer's error frame (detail.remote) remoteCodeLabel of it. */
export function outcomeLabel(err: C0Error): string {
  return (err.detail as { remote?: unknown } | undefined)?.remote === true ? remoteCodeLabel(err.code) : err.code;
}

export type Frame = { t: 'data'; v: CborValue } | { t: 'end' } | { t: 'error'; code: string; message: string };

export function encodeFrame(f: Frame): Uint8Array {
  if (f.t === 'data') return encodeCanonical([0, f.v]);
  if (f.t === 'end') return encodeCanonical([1]);
  return encodeCanonical([2, f.code, f.message]);
}

export function decodeFrame(b: Uint8Array): Frame {
  let v: CborValue;
  try {
    v = decodeCanonical(b, { recheck: false });
  } catch (e) {
    throw new C0Error(NET_ERR.BAD_FRAME, `frame is not CBOR: ${(e as Error).message}`);
  }
  if (Array.isArray(v)) {
    if (v[0] === 0 && v.length === 2) return { t: 'data', v: v[1]! };
    if (v[0] === 1 && v.length === 1) return { t: 'end' };
    // a code not in code form is not shown as one (the CLI, /v1 answers and logs show a peer's code as a code): its
    // text goes first in the message, as the peer's (review s42 R4 F1: spaces and escapes in a made-up code)
    if (v[0] === 2 && v.length === 3 && typeof v[1] === 'string' && typeof v[2] === 'string') {
      if (CODE_FORM.test(v[1])) return { t: 'error', code: v[1], message: v[2].slice(0, 500) };
      return { t: 'error', code: NET_ERR.BAD_REMOTE_CODE, message: `${JSON.stringify(v[1].slice(0, 64))}: ${v[2]}`.slice(0, 500) };
    }
  }
  throw new C0Error(NET_ERR.BAD_FRAME, 'frame is not [0,v], [1] or [2,code,message]');
}

/**
 * Map a stream-level failure to a coded error. `signal` is the stream's own (deadlineSignal): its deadline aborts it
 * with a coded NET_DEADLINE, its caller's signal with the caller's reason. NET_DEADLINE only when that signal fired.
 * An AbortError or TimeoutError while it is live did not come from this stream's deadline: the stream was aborted under
 * it, by its connection (libp2p's connection monitor aborting a connection whose pings went unanswered, a muxer torn
 * down), so it is NET_STREAM_FAILED with the connection's reason (`detail.connection`).
 */
export function streamError(e: unknown, signal: AbortSignal, deadlineMs: number): C0Error {
  if (isC0Error(e)) return e;
  const name = (e as Error)?.name ?? '';
  const message = (e as Error)?.message ?? String(e);
  if (signal.aborted) {
    if (signal.reason instanceof C0Error) return signal.reason;
    // the caller's signal (its own deadline or its stop), passed on by deadlineSignal with the caller's reason
    const why = (signal.reason as Error | undefined)?.message;
    return new C0Error(NET_ERR.DEADLINE, why ? `the caller's signal ended the stream: ${why}` : `stream passed its deadline of ${deadlineMs} ms`);
  }
  if (name === 'AbortError' || name === 'TimeoutError') return new C0Error(NET_ERR.STREAM, `the stream's connection was closed under it: ${message}`, { detail: { name, connection: true } });
  return new C0Error(NET_ERR.STREAM, `stream failed: ${message}`, { detail: { name } });
}

function varint(n: number): Uint8Array {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return Uint8Array.from(out);
}

/** Write one length-prefixed frame, waiting for the stream to drain when its buffer is full (backpressure). */
export async function writeFrame(stream: Stream, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  const prefix = varint(bytes.length);
  const buf = new Uint8Array(prefix.length + bytes.length);
  buf.set(prefix, 0);
  buf.set(bytes, prefix.length);
  if (!stream.send(buf)) await stream.onDrain({ signal });
}

/** Read and decode one frame; `tally` is told its encoded size. */
export async function readFrame(reader: FrameReader, signal: AbortSignal, keep = false, tally?: (bytes: number) => void): Promise<Frame> {
  const raw = await reader.read(signal);
  if (!raw) throw new C0Error(NET_ERR.STREAM, 'the stream ended before its end frame');
  tally?.(raw.bytes.length);
  try {
    return decodeFrame(raw.bytes);
  } finally {
    if (!keep) raw.release();
  }
}

/**
 * A deadline that can be moved (phases of a streaming protocol). Any length:
 * one past a Node timer's 24.8 days (a job with a month's deadline) is a chain
 * of timers, not the 1 ms Node would make of it (src/util/timers.ts).
 */
export function deadlineSignal(ms: number, outer?: AbortSignal): { signal: AbortSignal; clear: () => void; reset: (ms: number, what: string) => void } {
  const ac = new AbortController();
  let t: LongTimer | undefined;
  const reset = (after: number, what: string) => {
    t?.clear();
    if (ac.signal.aborted) return;
    t = setLongTimeout(() => ac.abort(new C0Error(NET_ERR.DEADLINE, `stream passed its ${what} deadline of ${after} ms`)), after);
  };
  reset(ms, 'stream');
  const onOuter = () => ac.abort(outer?.reason);
  if (outer) {
    if (outer.aborted) onOuter();
    else outer.addEventListener('abort', onOuter, { once: true });
  }
  return {
    signal: ac.signal,
    reset,
    clear: () => {
      t?.clear();
      outer?.removeEventListener('abort', onOuter);
    },
  };
}

