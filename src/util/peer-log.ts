/**
 * Warnings a peer can trigger at will (a refused exec/1 stream: one bad frame each), written so that no peer can fill
 * the log (docs/node.md "Logs"): the first of each (peer, code) in full, then at most one summary line a window
 * (`<msg> (repeated)` with `more`: how many came since the last line), written when the window ends (a timer, or the
 * next one past it); a window with none ends the key, and the next is written in full again. The keys held are bounded
 * (the oldest goes, with a summary of what it held). Like the connection refusals' RefusalLog (net/refusals.ts), for
 * any message. Without a peer (`undefined`), by code alone: what many peers cause together, or this node's own state
 * (a full delivery queue, a store that takes no writes), written no more often than that.
 */
import type { Logger } from './log.js';
import { monotonicClock } from './clock.js';

export interface PeerLogOptions {
  log: Logger;
  /** `warn` (default) or `info`. */
  level?: 'warn' | 'info';
  /** Monotonic clock for the windows (default performance.now): a wall-clock step neither hides nor repeats lines. */
  clock?: () => number;
  /** At most one line per (peer, code) this often, ms (default 60 000). */
  windowMs?: number;
  /** (peer, code) pairs held at most (default 1,024). */
  maxKeys?: number;
  /**
   * Peers held with one code at most (default 16): past it, a new peer's line for that code goes to one key of all
   * the others (peer MANY_PEERS), so throwaway keys, each new, cannot each get a line in full (review s42 R7 F2: a
   * provider wrote a 281-byte refusal line per fresh key, ~1.3 KB/s from one IP).
   */
  maxPeersPerCode?: number;
}

/** The peer of the line that stands for every peer past maxPeersPerCode with one code. */
export const MANY_PEERS = 'many peers';

interface Held {
  peer: string | undefined;
  code: string;
  msg: string;
  /** when the last line for it was written */
  at: number;
  /** how many came since */
  more: number;
}

export class PeerLog {
  readonly #d: PeerLogOptions;
  readonly #held = new Map<string, Held>();
  /** Keys held per code (maxPeersPerCode). */
  readonly #peersOf = new Map<string, number>();
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(d: PeerLogOptions) {
    this.#d = d;
  }

  get #window(): number {
    return this.#d.windowMs ?? 60_000;
  }

  #now(): number {
    return (this.#d.clock ?? monotonicClock)();
  }

  /** One `msg` caused by `peer` (a PeerId or DID; undefined: by code alone), of kind `code` (an error code), with `fields` for the full line. */
  warn(peer: string | undefined, code: string, msg: string, fields: Record<string, unknown> = {}): void {
    const now = this.#now();
    let key = peer === undefined ? ` ${code}` : `${peer} ${code}`;
    if (peer !== undefined && !this.#held.has(key) && (this.#peersOf.get(code) ?? 0) >= (this.#d.maxPeersPerCode ?? 16)) {
      peer = MANY_PEERS;
      key = `${peer} ${code}`;
    }
    const h = this.#held.get(key);
    // a window that ended quiet ends the key (as flush does when its timer runs first): this one is written in full
    if (h && !(h.more === 0 && now - h.at >= this.#window)) {
      h.more++;
      if (now - h.at >= this.#window) this.#summary(h, now);
      return;
    }
    if (h) this.#drop(key, h);
    while (this.#held.size >= (this.#d.maxKeys ?? 1_024)) {
      const [k, old] = this.#held.entries().next().value as [string, Held];
      this.#drop(k, old);
      if (old.more) this.#summary(old, now);
    }
    this.#held.set(key, { peer, code, msg, at: now, more: 0 });
    this.#peersOf.set(code, (this.#peersOf.get(code) ?? 0) + 1);
    this.#write({ ...(peer === undefined ? {} : { peer }), code, ...fields }, msg);
    if (!this.#timer) {
      this.#timer = setInterval(() => this.flush(), this.#window);
      this.#timer.unref?.();
    }
  }

  /** Write the summary of each key whose window ended with more to say; let go of the keys whose window was quiet. */
  flush(): void {
    const now = this.#now();
    for (const [k, h] of this.#held) {
      if (now - h.at < this.#window) continue;
      if (h.more) this.#summary(h, now);
      else this.#drop(k, h);
    }
    if (!this.#held.size) this.#stopTimer();
  }

  /** Write every summary pending and stop the timer. */
  stop(): void {
    const now = this.#now();
    for (const h of this.#held.values()) if (h.more) this.#summary(h, now);
    this.#held.clear();
    this.#peersOf.clear();
    this.#stopTimer();
  }

  #drop(key: string, h: Held): void {
    this.#held.delete(key);
    const n = (this.#peersOf.get(h.code) ?? 1) - 1;
    if (n > 0) this.#peersOf.set(h.code, n);
    else this.#peersOf.delete(h.code);
  }

  #summary(h: Held, now: number): void {
    this.#write({ ...(h.peer === undefined ? {} : { peer: h.peer }), code: h.code, more: h.more, sinceMs: now - h.at }, `${h.msg} (repeated)`);
    h.at = now;
    h.more = 0;
  }

  #write(fields: Record<string, unknown>, msg: string): void {
    if ((this.#d.level ?? 'warn') === 'info') this.#d.log.info(fields, msg);
    else this.#d.log.warn(fields, msg);
  }

  #stopTimer(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
