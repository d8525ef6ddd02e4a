/**
 * One socket write per connection and turn of the event loop, not one per frame
 * (docs/scale.md §3 "Seventh round").
 *
 * Every frame a node sends goes down synchronously: gossipsub's RPC → yamux
 * frame → Noise, which appends a 2-byte length and the ciphertext as two
 * buffers → @libp2p/tcp's `sendData`, which calls `socket.write` once per
 * buffer. Each `socket.write` on an uncorked socket is a write attempt of its
 * own (a libuv request, usually a syscall), so one gossip copy costs at least
 * two, and a forward, an IDONTWANT and a window update to one peer in the same
 * turn cost six or more: socket writes were 15–18 % of a busy node's time
 * (`npm run bench -- copies --prof`).
 *
 * So the first frame of a turn corks the connection's socket and the rest of
 * the turn's frames queue behind it; `process.nextTick` uncorks it once the
 * current callback and its microtasks are done, and Node hands everything
 * queued to the kernel in one `writev`. Nothing waits for I/O or a later turn:
 * the bytes leave at the end of the same turn that produced them. Backpressure
 * is unchanged (`write` still returns false above the high-water mark, and
 * the connection waits for 'drain' as before).
 *
 * This reaches into the connection's transport (libp2p's `Connection.maConn`,
 * @libp2p/tcp's `socket` and `sendData`); a connection without them (another
 * transport, a libp2p that changed them) is left as it is.
 */
import { Socket } from 'node:net';
import type { Connection } from '@libp2p/interface';

interface TcpMaConn {
  socket?: unknown;
  sendData?: (data: unknown) => unknown;
  [WRAPPED]?: true;
}
const WRAPPED = Symbol('c0.writeCoalesce');

/** Are `conn`'s socket writes coalesced? */
export function isCoalescing(conn: Connection): boolean {
  return (conn as unknown as { maConn?: TcpMaConn }).maConn?.[WRAPPED] === true;
}

/** Coalesce the writes of `conn`'s socket within a turn. True when it applies (a TCP connection), false when left alone. */
export function coalesceWrites(conn: Connection): boolean {
  const ma = (conn as unknown as { maConn?: TcpMaConn }).maConn;
  const socket = ma?.socket;
  const send = ma?.sendData;
  if (ma === undefined || !(socket instanceof Socket) || typeof send !== 'function') return false;
  if (ma[WRAPPED]) return true;
  const uncork = (): void => {
    // uncork() is a no-op on a socket already destroyed or not corked
    socket.uncork();
  };
  ma.sendData = function (this: TcpMaConn, data: unknown): unknown {
    if (socket.writableCorked === 0 && !socket.destroyed) {
      socket.cork();
      process.nextTick(uncork);
    }
    return send.call(this, data);
  };
  ma[WRAPPED] = true;
  return true;
}
