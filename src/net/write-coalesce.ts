/**
 * Fewer socket writes: the frames a connection sends in one pass of the
 * event loop's tick queue leave in one write (docs/scale.md §3 "Seventh round").
 *
 * Every frame a node sends goes down synchronously: gossipsub's RPC → yamux
 * frame → Noise, which appends a 2-byte length and the ciphertext as two
 * buffers → @libp2p/tcp's `sendData`, which calls `socket.write` once per
 * buffer. Each `socket.write` on an uncorked socket is a write request of its
 * own (a libuv request, usually a syscall), so one gossip copy cost two, and a
 * forward, an IDONTWANT and a window update to one peer cost six or more:
 * socket writes were 15–18 % of a busy node's time (`npm run bench -- copies
 * --prof`).
 *
 * So the first frame corks the connection's socket and `process.nextTick`
 * uncorks it: whatever is written before Node next drains its tick queue
 * leaves in one `writev`. Node drains that queue after each callback, and
 * again between promise microtasks, so a turn's frames go out in one write or
 * a few, never later than the end of the turn that produced them. Order is
 * kept. Backpressure is the socket's: `write` returns false once the bytes
 * held reach the high-water mark and the connection waits for 'drain', as
 * before; the difference is that a burst of small frames in one pass now
 * counts together against the mark (16 KiB) instead of draining write by
 * write. A reset (`sendReset`, which destroys the socket) uncorks first, so a
 * frame written just before it (yamux's GoAway) still goes out; a close ends
 * the socket, which flushes.
 *
 * This reaches into the connection's transport (libp2p's `Connection.maConn`,
 * which is the raw TCP connection also under a private network's pnet, and
 * @libp2p/tcp's `socket`, `sendData` and `sendReset`); a connection without
 * them (another transport, a libp2p that changed them) is left as it is.
 */
import { Socket } from 'node:net';
import type { Connection } from '@libp2p/interface';

const WRAPPED = Symbol('c0.writeCoalesce');
interface TcpMaConn {
  socket?: unknown;
  sendData?: (data: unknown) => unknown;
  sendReset?: (err: unknown) => unknown;
  [WRAPPED]?: true;
}

/** Are `conn`'s socket writes coalesced? */
export function isCoalescing(conn: Connection): boolean {
  return (conn as unknown as { maConn?: TcpMaConn }).maConn?.[WRAPPED] === true;
}

/** Coalesce the writes of `conn`'s socket. True when it applies (a TCP connection), false when left alone. */
export function coalesceWrites(conn: Connection): boolean {
  const ma = (conn as unknown as { maConn?: TcpMaConn }).maConn;
  const socket = ma?.socket;
  const send = ma?.sendData;
  const reset = ma?.sendReset;
  if (ma === undefined || !(socket instanceof Socket) || typeof send !== 'function') return false;
  if (ma[WRAPPED]) return true;
  // uncork() is a no-op on a socket that is not corked or already destroyed
  const uncork = (): void => void socket.uncork();
  ma.sendData = function (this: TcpMaConn, data: unknown): unknown {
    if (socket.writableCorked === 0 && !socket.destroyed) {
      socket.cork();
      process.nextTick(uncork);
    }
    return send.call(this, data);
  };
  if (typeof reset === 'function') {
    ma.sendReset = function (this: TcpMaConn, err: unknown): unknown {
      while (socket.writableCorked > 0) socket.uncork();
      return reset.call(this, err);
    };
  }
  ma[WRAPPED] = true;
  return true;
}
