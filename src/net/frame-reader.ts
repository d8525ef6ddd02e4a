/**
 * Length-prefixed frames read straight off a libp2p stream (DESIGN §3.5;
 * docs/network.md "Direct streams: limits and framing"), replacing
 * `lpStream` on the direct protocols for three reasons:
 *  - backpressure: the stream is paused whenever the reader holds what its
 *    caller asked for, so a peer can only send as far as the muxer's window
 *    (yamux stops granting credit) instead of filling a 4 MiB buffer that
 *    then resets the stream;
 *  - a frame's declared length is checked against its stream's bound as soon as
 *    its length prefix is read, before its body is, and its bytes are reserved
 *    in the node's byte budget as they arrive (refused when they do not fit): a
 *    peer holds what it has sent, not what a 3-byte prefix declares;
 *  - a length prefix fails as soon as it can: a length over the frame bound
 *    with NET_FRAME_TOO_LARGE once its prefix ends, and a prefix still
 *    unterminated after 8 bytes (a length past 2^53; e.g. twenty bytes of
 *    0xff) with NET_BAD_FRAME, instead of waiting for more bytes that never end it.
 */
import type { Stream } from '@libp2p/interface';
import { C0Error } from '../errors.js';
import type { StreamBudget } from './byte-budget.js';

/** The longest length prefix read: 8 varint bytes hold 56 bits, past any safe integer. */
export const MAX_PREFIX_BYTES = 8;

/** Bytes a varint needs to encode `n`. */
export function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    len++;
  }
  return len;
}

export interface FrameReaderOptions {
  maxFrameBytes: number;
  /** Reserve each frame's bytes here as they arrive, its declared length checked against the stream's bound first (inbound streams). */
  budget?: StreamBudget;
}

/** A frame as read: its bytes, and the budget it holds (released with `release`). */
export interface RawFrame {
  bytes: Uint8Array;
  release(): void;
}

export class FrameReader {
  readonly #stream: Stream;
  readonly #opts: FrameReaderOptions;
  readonly #maxLenLen: number;
  #chunks: Uint8Array[] = [];
  #len = 0;
  /** Bytes the pending read waits for (0: no read pending). */
  #want = 0;
  #wake: (() => void) | undefined;
  #ended = false;
  #error: Error | undefined;
  #detach: () => void;

  constructor(stream: Stream, opts: FrameReaderOptions) {
    this.#stream = stream;
    this.#opts = opts;
    this.#maxLenLen = varintLength(opts.maxFrameBytes);
    const onMessage = (evt: Event): void => {
      const data = (evt as Event & { data: { subarray(): Uint8Array } }).data.subarray();
      if (data.byteLength === 0) return;
      this.#chunks.push(data);
      this.#len += data.byteLength;
      if (this.#len >= this.#want) this.#pause();
      this.#wake?.();
    };
    const onEnd = (): void => {
      this.#ended = true;
      this.#wake?.();
    };
    const onClose = (evt: Event): void => {
      const err = (evt as Event & { error?: Error }).error;
      if (err) this.#error ??= err;
      onEnd();
    };
    stream.addEventListener('message', onMessage);
    stream.addEventListener('remoteCloseWrite', onEnd);
    stream.addEventListener('close', onClose);
    this.#detach = () => {
      stream.removeEventListener('message', onMessage);
      stream.removeEventListener('remoteCloseWrite', onEnd);
      stream.removeEventListener('close', onClose);
    };
    if (stream.remoteWriteStatus !== 'writable') this.#ended = true;
    // Nothing is read until asked for: data waits in the muxer's window.
    this.#pause();
  }

  /** Bytes read off the stream and not yet handed out. */
  get buffered(): number {
    return this.#len;
  }

  #pause(): void {
    if (this.#stream.readStatus === 'readable') {
      try {
        this.#stream.pause();
      } catch {
        /* closing */
      }
    }
  }

  #resume(): void {
    if (this.#stream.readStatus === 'paused') {
      try {
        this.#stream.resume();
      } catch {
        /* closing */
      }
    }
  }

  /** Wait until `n` bytes are buffered; false if the stream ended first. `arrived` hears of each batch that arrives (it may throw). */
  async #fill(n: number, signal: AbortSignal, arrived?: () => void): Promise<boolean> {
    arrived?.();
    while (this.#len < n) {
      if (this.#error) throw this.#error;
      // The remote closed its side, but what arrived while the stream was paused is still in its buffer.
      if (this.#ended && (this.#stream.readBufferLength ?? 0) === 0) return false;
      signal.throwIfAborted();
      this.#want = n;
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
        signal.addEventListener('abort', onAbort, { once: true });
        this.#wake = () => {
          signal.removeEventListener('abort', onAbort);
          this.#wake = undefined;
          resolve();
        };
        this.#resume();
      });
      arrived?.();
    }
    this.#want = 0;
    this.#pause();
    return true;
  }

  #take(n: number): Uint8Array {
    const first = this.#chunks[0]!;
    let out: Uint8Array;
    if (first.byteLength >= n) {
      out = first.subarray(0, n);
      if (first.byteLength === n) this.#chunks.shift();
      else this.#chunks[0] = first.subarray(n);
    } else {
      out = new Uint8Array(n);
      let off = 0;
      while (off < n) {
        const c = this.#chunks[0]!;
        const k = Math.min(c.byteLength, n - off);
        out.set(c.subarray(0, k), off);
        off += k;
        if (k === c.byteLength) this.#chunks.shift();
        else this.#chunks[0] = c.subarray(k);
      }
    }
    this.#len -= n;
    return out;
  }

  /**
   * The next frame, or null when the stream ended cleanly at a frame boundary.
   * Throws C0Error NET_BAD_FRAME (length prefix too long), NET_FRAME_TOO_LARGE,
   * NET_BUFFER_LIMIT (the budget cannot hold it), NET_STREAM_FAILED (ended mid-frame).
   */
  async read(signal: AbortSignal): Promise<RawFrame | null> {
    let length = 0;
    let scale = 1;
    for (let i = 0; ; i++) {
      if (!(await this.#fill(1, signal))) {
        if (i === 0) return null;
        throw new C0Error('NET_STREAM_FAILED', 'the stream ended inside a length prefix');
      }
      const b = this.#take(1)[0]!;
      length += (b & 0x7f) * scale;
      scale *= 0x80;
      if ((b & 0x80) === 0) break;
      if (i + 1 >= MAX_PREFIX_BYTES) throw new C0Error('NET_BAD_FRAME', `a length prefix of more than ${MAX_PREFIX_BYTES} bytes (frames here are at most ${this.#opts.maxFrameBytes} bytes, a ${this.#maxLenLen}-byte prefix)`);
    }
    if (length > this.#opts.maxFrameBytes) throw new C0Error('NET_FRAME_TOO_LARGE', `frame of ${length} bytes over the bound of ${this.#opts.maxFrameBytes}`);
    const budget = this.#opts.budget;
    // a length the stream itself could never hold is refused now; the rest of the budget is taken as bytes arrive
    budget?.fits(length);
    let reserved = 0;
    const arrived = (): void => {
      const have = Math.min(this.#len, length);
      if (!budget || have <= reserved) return;
      budget.reserve(have - reserved);
      reserved = have;
    };
    const release = (): void => {
      budget?.release(reserved);
      reserved = 0;
    };
    try {
      if (!(await this.#fill(length, signal, arrived))) throw new C0Error('NET_STREAM_FAILED', `the stream ended inside a frame of ${length} bytes`);
    } catch (e) {
      release();
      throw e;
    }
    return { bytes: length === 0 ? new Uint8Array(0) : this.#take(length), release };
  }

  /** Stop listening; drop what is buffered. */
  close(): void {
    this.#detach();
    this.#chunks = [];
    this.#len = 0;
    this.#wake?.();
  }
}
