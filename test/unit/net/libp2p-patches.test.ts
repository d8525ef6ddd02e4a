/**
 * The yamux window-update guard, the muxer close's listener allowance (its unpatched half prints one
 * MaxListenersExceededWarning on purpose), and the LengthPrefixedDecoder fix (libp2p-patches.ts): the same frames and the
 * same errors as @libp2p/utils' own decoder, without calling the length
 * decoder on an empty buffer (where it throws a fresh RangeError per read).
 *
 * @own-process: the unpatched halves need modules no other test file has patched (scripts/run-tests.mjs).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getMaxListeners } from 'node:events';
import { AbstractStreamMuxer, LengthPrefixedDecoder } from '@libp2p/utils';
import { YamuxStream } from '@libp2p/yamux/stream';
import { allowCloseListeners, guardWindowUpdate, patchLengthPrefixedDecoder, patchMuxerCloseListeners, patchYamuxWindowUpdate } from '../../../src/net/libp2p-patches.js';

/** A Uint8Array or @libp2p/utils' Uint8ArrayList (what the decoder buffers in). */
type Buf = Uint8Array | { byteLength: number; subarray(begin?: number, end?: number): Uint8Array };

/** Noise's 2-byte big-endian length decoder, counting the empty buffers it is handed. */
function uint16(): { decode: (b: Buf) => number; empty: number; calls: number } {
  const s = {
    empty: 0,
    calls: 0,
    decode: (b: Buf): number => {
      s.calls++;
      if (b.byteLength === 0) s.empty++;
      if (b.byteLength < 2) throw new RangeError('Could not decode int16BE');
      const two = b.subarray(0, 2);
      return (two[0]! << 8) | two[1]!;
    },
  };
  return s;
}

const frame = (n: number, fill: number): Uint8Array => {
  const f = new Uint8Array(2 + n).fill(fill);
  f[0] = n >> 8;
  f[1] = n & 255;
  return f;
};
const cat = (...xs: Uint8Array[]): Uint8Array => Uint8Array.from(xs.flatMap((x) => [...x]));

/** Feed `chunks` to a decoder and return the frames (as hex) it yields after each. */
function run(chunks: Uint8Array[], ld: (b: Buf) => number): string[][] {
  const d = new LengthPrefixedDecoder({ lengthDecoder: ld, encodingLength: () => 2, maxBufferSize: 1 << 20 });
  return chunks.map((c) => [...d.decode(c)].map((f) => Buffer.from((f as { subarray(): Uint8Array }).subarray()).toString('hex')));
}

// chunks: whole frames, several in one read, a frame split inside its data, a length prefix split across reads, an empty read
const a = frame(5, 1);
const b = frame(300, 2);
const c = frame(1, 3);
const all = cat(a, b, c);
const CASES: Uint8Array[][] = [
  [a, b, c],
  [all],
  [all.subarray(0, 10), all.subarray(10, 200), all.subarray(200)],
  [all.subarray(0, 1), all.subarray(1, 8), all.subarray(8, 9), all.subarray(9)],
  [a, new Uint8Array(0), b, c],
];

test('frames are what the unpatched decoder yields, read by read', () => {
  // the reference first, before the patch (the patch is process-wide and stays)
  const before = CASES.map((chunks) => run(chunks, uint16().decode));
  const ref = uint16();
  run(CASES[0]!, ref.decode);
  assert.ok(ref.empty > 0, 'unpatched, the decoder is handed an empty buffer after each whole read');

  assert.equal(patchLengthPrefixedDecoder(), true);
  assert.equal(patchLengthPrefixedDecoder(), true, 'applying it again changes nothing');
  const counted = uint16();
  const after = CASES.map((chunks) => run(chunks, counted.decode));
  assert.deepEqual(after, before);
  assert.equal(counted.empty, 0, 'patched, the length decoder never sees an empty buffer');
  assert.ok(counted.calls > 0);
});

test('a partial length prefix still waits for the next read, and a bad length is still refused', () => {
  patchLengthPrefixedDecoder();
  const d = new LengthPrefixedDecoder({ lengthDecoder: uint16().decode, encodingLength: () => 2, maxDataLength: 100 });
  assert.deepEqual([...d.decode(Uint8Array.of(0))], []);
  assert.equal([...d.decode(Uint8Array.of(2, 7, 7))].length, 1);
  assert.throws(() => [...d.decode(frame(200, 9))], /Invalid message length/);
});

test('an error other than RangeError from the length decoder still propagates', () => {
  patchLengthPrefixedDecoder();
  const d = new LengthPrefixedDecoder({
    lengthDecoder: () => {
      throw new TypeError('broken');
    },
    encodingLength: () => 2,
  });
  assert.throws(() => [...d.decode(Uint8Array.of(1, 2))], TypeError);
});

test('yamux: a window update that meets a closed connection aborts its stream instead of throwing out of a microtask', () => {
  assert.equal(patchYamuxWindowUpdate(), true);
  assert.equal(patchYamuxWindowUpdate(), true, 'idempotent');
  const closed = Object.assign(new Error('Cannot write to a stream that is closed'), { name: 'StreamStateError' });
  let aborted: Error | undefined;
  const proto = {
    sendWindowUpdate(): void {
      throw closed;
    },
  };
  assert.equal(guardWindowUpdate(proto), true);
  const stream = Object.assign(Object.create(proto) as typeof proto, { abort: (e: Error) => void (aborted = e) });
  assert.doesNotThrow(() => stream.sendWindowUpdate());
  assert.equal(aborted, closed);
  // any other error is thrown as before
  const other = { sendWindowUpdate(): void { throw new TypeError('a bug'); } };
  guardWindowUpdate(other);
  assert.throws(() => other.sendWindowUpdate(), TypeError);
  // the real stream class's method, through the guard: a stream opening (SYN) whose connection is closed aborts
  let realAborted: Error | undefined;
  const opening = {
    state: 'init',
    recvWindow: 256 * 1024,
    recvWindowCapacity: 0,
    epochStart: 0,
    streamId: 1,
    getSendFlags: () => 1,
    getRTT: () => -1,
    sendFrame: () => {
      throw closed;
    },
    abort: (e: Error) => void (realAborted = e),
  };
  assert.doesNotThrow(() => (YamuxStream.prototype as unknown as { sendWindowUpdate(this: unknown): void }).sendWindowUpdate.call(opening));
  assert.equal(realAborted, closed);
});

test('muxer close: one close signal may hold a listener per stream without a MaxListeners warning; the close itself is unchanged', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on('warning', onWarning);
  try {
    /** A muxer whose close waits on its signal once per stream, as @libp2p/utils' does for streams still draining. */
    const muxer = () =>
      class Muxer {
        streams = Array.from({ length: 40 }, (_, i) => i);
        closed = 0;
        async close(options?: { signal?: AbortSignal }): Promise<void> {
          const signal = options?.signal;
          await Promise.all(this.streams.map(() => new Promise<void>((resolve) => {
            signal?.addEventListener('abort', () => resolve(), { once: true });
            setImmediate(resolve);
          })));
          this.closed++;
        }
      };
    // unpatched, the same close warns: the test can see the warning it guards against
    const Plain = muxer();
    await new Plain().close({ signal: new AbortController().signal });
    await new Promise((r) => setImmediate(r));
    assert.ok(warnings.includes('MaxListenersExceededWarning'), 'an unpatched close of 40 draining streams warns');
    warnings.length = 0;
    const Muxer = muxer();
    assert.equal(allowCloseListeners(Muxer.prototype as never), true);
    assert.equal(allowCloseListeners(Muxer.prototype as never), true, 'idempotent');
    const m = new Muxer();
    const signal = new AbortController().signal;
    await m.close({ signal });
    assert.equal(m.closed, 1);
    assert.equal(getMaxListeners(signal), 50, 'one per stream, plus the usual ten');
    await m.close({});
    assert.equal(m.closed, 2, 'a close without a signal goes through untouched');
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(warnings.filter((n) => n === 'MaxListenersExceededWarning'), []);
  } finally {
    process.off('warning', onWarning);
  }
  assert.equal(patchMuxerCloseListeners(), true, "@libp2p/utils' muxer still has the close it wraps");
  assert.equal(typeof AbstractStreamMuxer.prototype.close, 'function');
});
