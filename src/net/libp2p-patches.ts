/**
 * Fixes to libp2p's code that this node applies at load, until they are upstream
 * (docs/scale.md §3 "Seventh round").
 *
 * @libp2p/utils' `LengthPrefixedDecoder.decode` (the reader of Noise's frames
 * on every connection) takes whole frames off its buffer until it cannot, and
 * it learns that it cannot by calling the length decoder on what is left and
 * catching the RangeError that throws. After the last whole frame of a socket
 * read, what is left is almost always nothing: so every read of every
 * connection ended by constructing a RangeError and capturing its stack trace.
 *
 * Here each decoder's length decoder, on an empty buffer, throws one RangeError
 * made once at load instead (no construction, no stack trace): the decode loop
 * stops exactly where it stopped. A buffer holding part of a length prefix
 * goes to the real length decoder as before. Same frames, same errors.
 */
import { getMaxListeners, setMaxListeners } from 'node:events';
import { AbstractStreamMuxer, LengthPrefixedDecoder } from '@libp2p/utils';
import { YamuxStream } from '@libp2p/yamux/stream';

type LengthDecoder = (buf: { byteLength: number }) => number;
interface DecoderInternals {
  lengthDecoder: LengthDecoder;
  decode(buf: unknown): Generator<unknown>;
  [DONE]?: true;
}

const EMPTY = new RangeError('no length prefix in an empty buffer');
/** Marks a decoder instance whose length decoder is wrapped, and the prototype once patched. */
const DONE = Symbol.for('c0.lengthPrefixedDecoder.emptyStop');

/** Apply the fix (idempotent). False when @libp2p/utils no longer has the shape it expects (then nothing changes). */
export function patchLengthPrefixedDecoder(): boolean {
  const proto = LengthPrefixedDecoder.prototype as unknown as DecoderInternals;
  // patched already (by an earlier host, or another copy of this module)
  if (proto[DONE]) return true;
  const decode = proto.decode;
  if (typeof decode !== 'function') return false;
  proto.decode = function (this: DecoderInternals, buf: unknown): Generator<unknown> {
    if (!Object.prototype.hasOwnProperty.call(this, DONE)) {
      const inner = this.lengthDecoder;
      if (typeof inner === 'function') {
        this.lengthDecoder = (b) => {
          if (b.byteLength === 0) throw EMPTY;
          return inner(b);
        };
      }
      this[DONE] = true;
    }
    return decode.call(this, buf);
  };
  proto[DONE] = true;
  return true;
}

/**
 * A second fix, for @libp2p/yamux 8: a stream opened on a connection queues its
 * opening window update (SYN) in a microtask, and a window update is sent from
 * other callbacks too; when the connection under it closed in between, the
 * muxer's send throws `StreamStateError` ("Cannot write to a stream that is
 * closed") from that microtask, uncaught, and the process exits. The
 * hundred-node sim hit it (docs/scale.md §2 "Twelfth round"). Here a window
 * update that meets a closed connection aborts its stream instead: the update
 * had nowhere to go, and the stream's users see it fail as any stream on a
 * closed connection does. Any other error is thrown as before.
 */
interface YamuxStreamInternals {
  sendWindowUpdate(...args: unknown[]): unknown;
  abort?(err: Error): void;
  [YAMUX_DONE]?: true;
}
const YAMUX_DONE = Symbol.for('c0.yamuxStream.windowUpdateOnClosed');

/** The wrapped method, for a prototype that has one (exported for its unit test). */
export function guardWindowUpdate(proto: YamuxStreamInternals): boolean {
  return wrapOnce(proto, 'sendWindowUpdate', YAMUX_DONE, (inner) => function (this: YamuxStreamInternals, ...args: unknown[]): unknown {
    try {
      return inner.apply(this, args);
    } catch (e) {
      if ((e as Error | undefined)?.name !== 'StreamStateError') throw e;
      try {
        this.abort?.(e as Error);
      } catch {
        // aborting sends a reset on the same closed connection: nothing more to do
      }
      return undefined;
    }
  });
}

/**
 * Replace `proto[name]` with `wrap(original)` once, marking the prototype with `done`; false (nothing changed)
 * when the library no longer has such a method.
 */
function wrapOnce<P extends object, K extends keyof P>(proto: P, name: K, done: symbol, wrap: (inner: P[K]) => P[K]): boolean {
  const marks = proto as Record<symbol, unknown>;
  if (marks[done]) return true;
  const inner = proto[name];
  if (typeof inner !== 'function') return false;
  proto[name] = wrap(inner);
  marks[done] = true;
  return true;
}

/** Apply the fix (idempotent). False when @libp2p/yamux no longer has the shape it expects (then nothing changes). */
export function patchYamuxWindowUpdate(): boolean {
  return guardWindowUpdate(YamuxStream.prototype as unknown as YamuxStreamInternals);
}

/**
 * @libp2p/utils' `AbstractStreamMuxer.close` closes every stream of the
 * connection with the one close signal it was given; a stream whose writes are
 * still queued waits for them to drain with a listener on that signal. A
 * connection closed with more than ten such streams (a node behind on its
 * writes: the doubly loaded hundred-node sim, docs/scale.md §2 "Twenty-first
 * round") made Node print "MaxListenersExceededWarning: Possible EventTarget
 * memory leak detected. 11 abort listeners added to [AbortSignal]" — no leak:
 * each listener goes when its stream's close ends, and the signal with the
 * connection. Here the signal may hold one listener per stream (plus Node's
 * usual ten) for that close, so the warning keeps its meaning elsewhere.
 */
interface MuxerInternals {
  close(options?: { signal?: AbortSignal }): Promise<void>;
  streams?: { length?: number; size?: number };
  [MUXER_DONE]?: true;
}
const MUXER_DONE = Symbol.for('c0.streamMuxer.closeListeners');

/** The wrapped method, for a prototype that has one (exported for its unit test). */
export function allowCloseListeners(proto: MuxerInternals): boolean {
  return wrapOnce(proto, 'close', MUXER_DONE, (inner) => function (this: MuxerInternals, options?: { signal?: AbortSignal }): Promise<void> {
    const signal = options?.signal;
    if (signal instanceof AbortSignal) {
      const streams = this.streams?.length ?? this.streams?.size ?? 0;
      const wanted = streams + 10;
      if (getMaxListeners(signal) < wanted) setMaxListeners(wanted, signal);
    }
    return inner.call(this, options);
  });
}

/** Apply the fix (idempotent). False when @libp2p/utils no longer has the shape it expects (then nothing changes). */
export function patchMuxerCloseListeners(): boolean {
  return allowCloseListeners(AbstractStreamMuxer.prototype as unknown as MuxerInternals);
}

/**
 * Timers a stopped host left behind, each holding the process (every `c0mpute start` stopped by a signal, so
 * every e2e test's teardown and restart, lived on up to a second after "network stopped"):
 *
 * - @libp2p/gossipsub's `stop` replaces its status without clearing the pending heartbeat (`status.heartbeatTimeout`,
 *   up to one heartbeatInterval away); the heartbeat then runs once more on the stopped router. Here the pending
 *   heartbeat is cleared as the stop begins (the status turns "stopped" in the same tick, so a heartbeat in flight
 *   does not schedule another).
 * - libp2p's `AddressManager` debounces the update of the node's own addresses in its peer store by one second and
 *   schedules it on every `transport:close` too, with no stop of its own: `cancelAddressUpdate`, called after
 *   `libp2p.stop()`, drops that update of a node that no longer runs (the debounce's own stop).
 *
 * Each returns false when the library no longer has that shape (then nothing changes).
 */
interface GossipsubInternals {
  stop(): Promise<void>;
  status?: { heartbeatTimeout?: ReturnType<typeof setTimeout> };
  [GOSSIP_DONE]?: true;
}
const GOSSIP_DONE = Symbol.for('c0.gossipsub.stopClearsHeartbeat');

/** Patch the class of a gossipsub instance (the class is not exported; idempotent). */
export function patchGossipsubStop(pubsub: object): boolean {
  const proto = Object.getPrototypeOf(pubsub) as GossipsubInternals | null;
  if (!proto) return false;
  return wrapOnce(proto, 'stop', GOSSIP_DONE, (inner) => function (this: GossipsubInternals): Promise<void> {
    clearTimeout(this.status?.heartbeatTimeout);
    return inner.call(this);
  });
}

interface AddressManagerInternals {
  _updatePeerStoreAddresses?: { stop?: () => void };
}

export function cancelAddressUpdate(libp2p: object): boolean {
  const update = (libp2p as { components?: { addressManager?: AddressManagerInternals } }).components?.addressManager?._updatePeerStoreAddresses;
  if (typeof update?.stop !== 'function') return false;
  update.stop();
  return true;
}

/**
 * Two kinds of per-peer state inside the libp2p stack that a departed peer left behind for the life of the process
 * (a peer-churn review: one entry per departed peer on each, 47 → 254 over ~210 peers, and a hostile host can add
 * one per fresh key it connects with):
 *
 * - @libp2p/gossipsub's `PeerScore.removePeer` deletes a departed peer with a positive score from `peerStats` but not
 *   from `scoreCache`, and only `refreshScores` prunes that cache, walking `peerStats`: the entry was never visited
 *   again. Here the cache entry goes with the stats (a peer whose score is kept for `retainScore` keeps its cache
 *   entry until `refreshScores` expires both, as before).
 * - @libp2p/peer-store expires a peer (6 h after its last update, with no address observed in the last hour) only
 *   when it is read, or on a full `all()`, which libp2p and the DHT call only at start; a peer that never returns is
 *   never read again. `sweepPeerStore` walks the store (the walk deletes what has expired): the network runs it on a
 *   slow timer (src/net/node.ts).
 */
interface PeerScoreInternals {
  removePeer(id: string): void;
  peerStats?: Map<string, unknown>;
  scoreCache?: Map<string, unknown>;
  [SCORE_DONE]?: true;
}
const SCORE_DONE = Symbol.for('c0.gossipsub.removePeerDropsScoreCache');

/** The wrapped method, for a PeerScore prototype (exported for its unit test). */
export function dropScoreCacheOnRemove(proto: PeerScoreInternals): boolean {
  return wrapOnce(proto, 'removePeer', SCORE_DONE, (inner) => function (this: PeerScoreInternals, id: string): void {
    inner.call(this, id);
    if (this.peerStats instanceof Map && this.scoreCache instanceof Map && !this.peerStats.has(id)) this.scoreCache.delete(id);
  });
}

/** Patch the score class of a gossipsub instance (the class is not exported; idempotent). */
export function patchGossipsubScoreCache(pubsub: object): boolean {
  const score = (pubsub as { score?: object }).score;
  const proto = score ? (Object.getPrototypeOf(score) as PeerScoreInternals | null) : null;
  return proto ? dropScoreCacheOnRemove(proto) : false;
}

/** Walk the peer store once: @libp2p/peer-store deletes each expired peer as the walk meets it. */
export async function sweepPeerStore(peerStore: { forEach(fn: (peer: unknown) => void): Promise<void> }): Promise<void> {
  await peerStore.forEach(() => {});
}
