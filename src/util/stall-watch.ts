/**
 * Notices this process's own freezes (docs/node.md "Buyer": "A buyer that stops or stalls blames no provider"): a SIGSTOP, a suspended
 * VM or laptop, an event loop blocked by synchronous work. While anyone watches, a cheap timer ticks every `everyMs`
 * on the monotonic clock; a gap between two ticks longer than the period is time this process did not run. A watch
 * reports the longest such freeze since it began, counting the one still going on when asked (after a SIGCONT the
 * I/O that broke during the freeze can be handled before the first timer runs), and the sum of the freezes of at
 * least a period (a provider's energy estimate leaves them out: docs/node.md "Provider", "Energy"; a tick a little late
 * is the timer's jitter, not a freeze). Nobody watching, no timer runs.
 */
import { performance } from 'node:perf_hooks';

/** The timer's period, ms. */
export const STALL_TICK_MS = 1_000;

/** One watch, from `begin` to `end`. */
export interface StallWatchHandle {
  /** The longest time, ms, this process did not run since the watch began (0 when it ran throughout). */
  longestFreezeMs(): number;
  /** The time, ms, this process did not run since the watch began, in freezes of at least the tick's period each (the one going on included). */
  totalFreezeMs(): number;
  /** Stop watching (the timer stops with the last watch). */
  end(): void;
}

interface Watch {
  since: number;
  longest: number;
  total: number;
}

export interface StallWatchOptions {
  everyMs?: number;
  /** Monotonic milliseconds (default performance.now). */
  now?: () => number;
  /** Start the periodic tick (default an unref'd setInterval); returns its stop. */
  every?: (fn: () => void, ms: number) => () => void;
}

export class StallWatch {
  readonly #everyMs: number;
  readonly #now: () => number;
  readonly #every: (fn: () => void, ms: number) => () => void;
  readonly #watches = new Set<Watch>();
  #stopTimer: (() => void) | undefined;
  #last = 0;

  constructor(o: StallWatchOptions = {}) {
    this.#everyMs = o.everyMs ?? STALL_TICK_MS;
    this.#now = o.now ?? (() => performance.now());
    this.#every =
      o.every ??
      ((fn, ms) => {
        const t = setInterval(fn, ms);
        t.unref();
        return () => clearInterval(t);
      });
  }

  /** Start a watch (and the timer, when it is the first). */
  begin(): StallWatchHandle {
    const w: Watch = { since: this.#now(), longest: 0, total: 0 };
    if (this.#watches.size === 0) {
      this.#last = w.since;
      this.#stopTimer = this.#every(() => this.#tick(), this.#everyMs);
    }
    this.#watches.add(w);
    return {
      longestFreezeMs: () => Math.max(w.longest, this.#overdue(w, this.#now())),
      totalFreezeMs: () => w.total + this.#freeze(this.#overdue(w, this.#now())),
      end: () => {
        if (!this.#watches.delete(w) || this.#watches.size > 0) return;
        this.#stopTimer?.();
        this.#stopTimer = undefined;
      },
    };
  }

  /**
   * How long the tick is overdue at `now`, counted from the watch's start at the earliest: a freeze still going on, or
   * one the timer has not seen yet (a freeze that ended before the watch began is not the watch's).
   */
  #overdue(w: Watch, now: number): number {
    return this.#watches.has(w) ? Math.max(0, now - Math.max(this.#last, w.since) - this.#everyMs) : 0;
  }

  /** An overdue tick as a freeze to add up: at least a period late, else 0 (jitter). */
  #freeze(overdue: number): number {
    return overdue >= this.#everyMs ? overdue : 0;
  }

  #tick(): void {
    const now = this.#now();
    for (const w of this.#watches) {
      const overdue = this.#overdue(w, now);
      w.longest = Math.max(w.longest, overdue);
      w.total += this.#freeze(overdue);
    }
    this.#last = now;
  }
}
