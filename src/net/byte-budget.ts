/**
 * The byte budget of the direct protocols (DESIGN §3.5; docs/network.md
 * "Direct streams: limits and framing"): how many bytes of request data this
 * node holds for inbound streams before and while their handlers run — frames
 * being read, request frames collected for a handler, input a handler keeps.
 * Three bounds, each checked before the bytes are read: per stream, per
 * connection, and in total. A reservation that does not fit fails at once with
 * a coded error (NET_BUFFER_LIMIT, detail.scope = stream | connection | total);
 * the stream answers with that error frame and closes, so what it asked for is
 * never buffered. Everything a stream reserved is released when it ends.
 */
import { C0Error } from '../errors.js';

export const BUFFER_LIMIT = 'NET_BUFFER_LIMIT';

export interface BudgetOptions {
  /** All inbound streams together, bytes. */
  totalBytes: number;
  /** All inbound streams of one connection together, bytes. */
  perConnectionBytes: number;
}

export const DEFAULT_BUDGET: BudgetOptions = {
  // Room for a few 16 MiB inputs at once, and no more than that however many peers ask.
  totalBytes: 96 * 1024 * 1024,
  // One full input (16 MiB, sealed) plus its frames; a second at once from the same connection is refused (NET_BUFFER_LIMIT, scope connection).
  perConnectionBytes: 24 * 1024 * 1024,
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
  return { perConnectionBytes, totalBytes: Math.max(DEFAULT_BUDGET.totalBytes, 4 * perConnectionBytes) };
}

export class ByteBudget {
  readonly opts: BudgetOptions;
  #used = 0;
  #perConn = new Map<string, number>();

  constructor(opts: Partial<BudgetOptions> = {}) {
    this.opts = { ...DEFAULT_BUDGET, ...opts };
  }

  /** Bytes reserved now, all streams together. */
  get used(): number {
    return this.#used;
  }

  /** Bytes reserved now by one connection's streams. */
  usedBy(connection: string): number {
    return this.#perConn.get(connection) ?? 0;
  }

  /** A stream's account: at most `perStreamBytes` at once. */
  open(connection: string, perStreamBytes: number): StreamBudget {
    return new StreamBudget(this, connection, perStreamBytes);
  }

  /** @internal */
  take(connection: string, bytes: number, streamHeld: number, perStream: number): void {
    if (streamHeld + bytes > perStream) throw new C0Error(BUFFER_LIMIT, `this stream may hold ${perStream} bytes of request data; ${streamHeld + bytes} asked`, { detail: { scope: 'stream' } });
    const conn = this.#perConn.get(connection) ?? 0;
    if (conn + bytes > this.opts.perConnectionBytes) {
      throw new C0Error(BUFFER_LIMIT, `this connection's streams may hold ${this.opts.perConnectionBytes} bytes of request data at once; try again later`, { detail: { scope: 'connection' } });
    }
    if (this.#used + bytes > this.opts.totalBytes) throw new C0Error(BUFFER_LIMIT, `this node is holding all the request data it will (${this.opts.totalBytes} bytes); try again later`, { detail: { scope: 'total' } });
    this.#perConn.set(connection, conn + bytes);
    this.#used += bytes;
  }

  /** @internal */
  give(connection: string, bytes: number): void {
    const conn = (this.#perConn.get(connection) ?? 0) - bytes;
    if (conn <= 0) this.#perConn.delete(connection);
    else this.#perConn.set(connection, conn);
    this.#used = Math.max(0, this.#used - bytes);
  }
}

export class StreamBudget {
  #held = 0;
  #closed = false;

  constructor(
    private readonly budget: ByteBudget,
    private readonly connection: string,
    readonly perStreamBytes: number,
  ) {}

  get held(): number {
    return this.#held;
  }

  /** Reserve `bytes` or throw NET_BUFFER_LIMIT (nothing reserved then). */
  reserve(bytes: number): void {
    if (this.#closed) throw new C0Error(BUFFER_LIMIT, 'the stream has ended', { detail: { scope: 'stream' } });
    if (bytes <= 0) return;
    this.budget.take(this.connection, bytes, this.#held, this.perStreamBytes);
    this.#held += bytes;
  }

  release(bytes: number): void {
    const n = Math.min(bytes, this.#held);
    if (n <= 0) return;
    this.#held -= n;
    this.budget.give(this.connection, n);
  }

  /** Release everything (the stream ended); later reservations fail. */
  close(): void {
    this.release(this.#held);
    this.#closed = true;
  }
}
