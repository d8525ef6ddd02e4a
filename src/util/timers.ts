/**
 * Timers for delays of any length. Node's setTimeout and setInterval (and
 * AbortSignal.timeout) take at most 2^31 − 1 ms (~24.8 days) and run a longer
 * delay after 1 ms instead (TimeoutOverflowWarning), so a deadline a month
 * away would fire at once. These split such a delay into a chain of timers of
 * at most MAX_TIMER_MS each. Use them wherever a delay comes from a job's
 * deadline or timeout, or from a config value without an upper bound.
 */

/** The longest delay one Node timer takes, ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** A timer set by `setLongTimeout` or `setLongInterval`. */
export interface LongTimer {
  /** Stop it (it never fires afterwards). */
  clear(): void;
  /** Do not keep the process alive for it (kept across the chain). */
  unref(): LongTimer;
  /** Keep the process alive for it (the default). */
  ref(): LongTimer;
}

/** setTimeout for any delay: `fn` runs once, `ms` from now (a delay over MAX_TIMER_MS is a chain of timers; Infinity never fires). */
export function setLongTimeout(fn: () => void, ms: number): LongTimer {
  let left = Number.isNaN(ms) ? 0 : Math.max(0, ms);
  let t: NodeJS.Timeout | undefined;
  let refed = true;
  let cleared = false;
  const arm = (): void => {
    const step = Math.min(left, MAX_TIMER_MS);
    t = setTimeout(() => {
      t = undefined;
      if (cleared) return;
      left -= step;
      if (left > 0) arm();
      else fn();
    }, step);
    if (!refed) t.unref();
  };
  arm();
  const timer: LongTimer = {
    clear() {
      cleared = true;
      if (t) clearTimeout(t);
      t = undefined;
    },
    unref() {
      refed = false;
      t?.unref();
      return timer;
    },
    ref() {
      refed = true;
      t?.ref();
      return timer;
    },
  };
  return timer;
}

/** setInterval for any period: `fn` runs every `ms` (a period over MAX_TIMER_MS is a chain of timers per run). */
export function setLongInterval(fn: () => void, ms: number): LongTimer {
  if (ms <= MAX_TIMER_MS) {
    const t = setInterval(fn, ms);
    const timer: LongTimer = {
      clear: () => clearInterval(t),
      unref: () => (t.unref(), timer),
      ref: () => (t.ref(), timer),
    };
    return timer;
  }
  let refed = true;
  let cleared = false;
  let current: LongTimer;
  const arm = (): void => {
    current = setLongTimeout(() => {
      if (cleared) return;
      arm();
      fn();
    }, ms);
    if (!refed) current.unref();
  };
  arm();
  const timer: LongTimer = {
    clear() {
      cleared = true;
      current.clear();
    },
    unref() {
      refed = false;
      current.unref();
      return timer;
    },
    ref() {
      refed = true;
      current.ref();
      return timer;
    },
  };
  return timer;
}

/**
 * AbortSignal.timeout for any delay: aborts `ms` from now with a TimeoutError
 * DOMException, like AbortSignal.timeout (which it is up to MAX_TIMER_MS), and
 * does not keep the process alive.
 */
export function timeoutSignal(ms: number): AbortSignal {
  if (ms <= MAX_TIMER_MS) return AbortSignal.timeout(Math.max(0, ms));
  return clearableTimeoutSignal(ms).signal;
}

/**
 * What `p` settles to, or `timedOut` if `ms` pass first (any delay: setLongTimeout). The timer is cleared either way,
 * so a wait that ended early leaves nothing behind; `p` itself goes on (a rejection after the timeout is not seen here).
 * `unref`: the timer does not keep the process alive (a wait a stop may cut short).
 */
export async function raceTimeout<T, U>(p: Promise<T>, ms: number, timedOut: U, opts: { unref?: boolean } = {}): Promise<T | U> {
  let timer: LongTimer | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<U>((resolve) => {
        timer = setLongTimeout(() => resolve(timedOut), ms);
        if (opts.unref) timer.unref();
      }),
    ]);
  } finally {
    timer?.clear();
  }
}

/** A timeout signal its owner can clear (clearableTimeoutSignal). */
export interface ClearableTimeoutSignal {
  /** Aborts `ms` after it was made, with a TimeoutError DOMException, unless cleared first. */
  signal: AbortSignal;
  /** Stop its timers now (the signal then never aborts): a wait that ended early frees them at once. */
  clear(): void;
}

/**
 * timeoutSignal with a clear(): the signal aborts `ms` from now with a
 * TimeoutError DOMException (any delay, a chain of timers past MAX_TIMER_MS;
 * it does not keep the process alive), and `clear()` stops it. timeoutSignal's
 * timers stay until the delay passes, however early the wait they bound ended:
 * use this one where a wait can end long before its deadline (a deadline of
 * weeks, a run per job).
 */
export function clearableTimeoutSignal(ms: number): ClearableTimeoutSignal {
  const ac = new AbortController();
  const t = setLongTimeout(() => ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms).unref();
  return { signal: ac.signal, clear: () => t.clear() };
}
