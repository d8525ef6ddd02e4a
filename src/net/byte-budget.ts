/**
 * The byte budget of the direct protocols (DESIGN §3.5; docs/network.md
 * "Direct streams: limits and framing"): how many bytes of request data this
 * node holds for inbound streams before and while their handlers run — frames
 * being read, request frames collected for a handler, input a handler keeps.
 * Four bounds: per stream, per connection, per peer (the remote key, across all
 * its connections), and in total. A reservation that does not fit fails at once
 * with a coded error (NET_BUFFER_LIMIT, detail.scope = stream | connection |
 * peer | total); the stream answers with that error frame and closes. A frame
 * being read reserves its bytes as they arrive (frame-reader.ts), so what a
 * peer holds is what it has sent; one peer, however many connections it opens,
 * holds at most perPeerBytes, so no one key can fill the total and refuse
 * everyone else. Everything a stream reserved is released when it ends.
 */
import { C0Error } from '../errors.js';

export const BUFFER_LIMIT = 'NET_BUFFER_LIMIT';

export interface BudgetOptions {
  /** All inbound streams together, bytes. */
  totalBytes: number;
  /** All inbound streams of one connection together, bytes. */
  perConnectionBytes: number;
  /**
   * All inbound streams of one remote peer (PeerId) together, over all its connections, bytes. Default: the
   * per-connection bound (a quarter of the total with the defaults and with `budgetForInput`), so a second
   * connection buys a peer nothing and four keys at least are needed to fill the total.
   */
  perPeerBytes: number;
}

export const DEFAULT_BUDGET: BudgetOptions = {
  // Room for a few 16 MiB inputs at once, and no more than that however many peers ask.
  totalBytes: 96 * 1024 * 1024,
  // One full input (16 MiB, sealed) plus its frames; a second at once from the same connection is refused (NET_BUFFER_LIMIT, scope connection).
  perConnectionBytes: 24 * 1024 * 1024,
  // What one connection may hold, however many connections the peer opens: one full input and its frames.
  perPeerBytes: 24 * 1024 * 1024,
};

/** What a connection may hold beside one full input: its sealing, the chunk frame being read, other protocols' frames. */
export const INPUT_ROOM_BYTES = 8 * 1024 * 1024;

/**
 * The budget of a node that takes exec inputs of up to `maxInputBytes` (provider.maxInputBytes): the defaults, sized
 * for 16 MiB, or for a larger bound one full input plus INPUT_ROOM_BYTES per connection and four connections' worth
 * in total, so every input the provider quotes for can be read (docs/network.md "Direct streams: limits and framing").
 */
export function budgetForInput(maxInputBytes: number): BudgetOptions {
  const perConnectionBytes = Math.max(DEFAULT_BUDGET.perConnectionBytes, maxInputBytes + INPUT_ROOM_BYTES);
  return { perConnectionBytes, perPeerBytes: perConnectionBytes, totalBytes: Math.max(DEFAULT_BUDGET.totalBytes, 4 * perConnectionBytes) };
}

export class ByteBudget {
  readonly opts: BudgetOptions;
  #used = 0;
  #perConn = new Map<string, number>();
  #perPeer = new Map<string, number>();

  constructor(opts: Partial<BudgetOptions> = {}) {
    const perConnectionBytes = opts.perConnectionBytes ?? DEFAULT_BUDGET.perConnectionBytes;
    this.opts = { ...DEFAULT_BUDGET, perPeerBytes: perConnectionBytes, ...opts };
  }

  /** Bytes reserved now, all streams together. */
  get used(): number {
    return this.#used;
  }

  /** Bytes reserved now by one connection's streams. */
  usedBy(connection: string): number {
    return this.#perConn.get(connection) ?? 0;
  }

  /** Bytes reserved now by one peer's streams, all its connections together. */
  usedByPeer(peer: string): number {
    return this.#perPeer.get(peer) ?? 0;
  }

  /** A stream's account, on `connection` from `peer` (its PeerId as a string): at most `perStreamBytes` at once. */
  open(connection: string, peer: string, perStreamBytes: number): StreamBudget {
    return new StreamBudget(this, connection, peer, perStreamBytes);
  }

  /** @internal */
  take(connection: string, peer: string, bytes: number, streamHeld: number, perStream: number): void {
    if (streamHeld + bytes > perStream) throw new C0Error(BUFFER_LIMIT, `this stream may hold ${perStream} bytes of request data; ${streamHeld + bytes} asked`, { detail: { scope: 'stream' } });
    const conn = this.#perConn.get(connection) ?? 0;
    if (conn + bytes > this.opts.perConnectionBytes) {
      throw new C0Error(BUFFER_LIMIT, `this connection's streams may hold ${this.opts.perConnectionBytes} bytes of request data at once; try again later`, { detail: { scope: 'connection' } });
    }
    const byPeer = this.#perPeer.get(peer) ?? 0;
    if (byPeer + bytes > this.opts.perPeerBytes) {
      throw new C0Error(BUFFER_LIMIT, `this peer's streams, over all its connections, may hold ${this.opts.perPeerBytes} bytes of request data at once; try again later`, { detail: { scope: 'peer' } });
    }
    if (this.#used + bytes > this.opts.totalBytes) throw new C0Error(BUFFER_LIMIT, `this node is holding all the request data it will (${this.opts.totalBytes} bytes); try again later`, { detail: { scope: 'total' } });
    this.#perConn.set(connection, conn + bytes);
    this.#perPeer.set(peer, byPeer + bytes);
    this.#used += bytes;
  }

  /** @internal */
  give(connection: string, peer: string, bytes: number): void {
    drop(this.#perConn, connection, bytes);
    drop(this.#perPeer, peer, bytes);
    this.#used = Math.max(0, this.#used - bytes);
  }
}

function drop(m: Map<string, number>, key: string, bytes: number): void {
  const left = (m.get(key) ?? 0) - bytes;
  if (left <= 0) m.delete(key);
  else m.set(key, left);
}

export class StreamBudget {
  #held = 0;
  #closed = false;

  constructor(
    private readonly budget: ByteBudget,
    private readonly connection: string,
    private readonly peer: string,
    readonly perStreamBytes: number,
  ) {}

  get held(): number {
    return this.#held;
  }

  /** Throw NET_BUFFER_LIMIT (scope stream) unless `bytes` more would fit this stream's own bound; reserves nothing. */
  fits(bytes: number): void {
    if (this.#closed) throw new C0Error(BUFFER_LIMIT, 'the stream has ended', { detail: { scope: 'stream' } });
    if (this.#held + bytes > this.perStreamBytes) throw new C0Error(BUFFER_LIMIT, `this stream may hold ${this.perStreamBytes} bytes of request data; ${this.#held + bytes} asked`, { detail: { scope: 'stream' } });
  }

  /** Reserve `bytes` or throw NET_BUFFER_LIMIT (nothing reserved then). */
  reserve(bytes: number): void {
    if (this.#closed) throw new C0Error(BUFFER_LIMIT, 'the stream has ended', { detail: { scope: 'stream' } });
    if (bytes <= 0) return;
    this.budget.take(this.connection, this.peer, bytes, this.#held, this.perStreamBytes);
    this.#held += bytes;
  }

  release(bytes: number): void {
    const n = Math.min(bytes, this.#held);
    if (n <= 0) return;
    this.#held -= n;
    this.budget.give(this.connection, this.peer, n);
  }

  /** Release everything (the stream ended); later reservations fail. */
  close(): void {
    this.release(this.#held);
    this.#closed = true;
  }
}
