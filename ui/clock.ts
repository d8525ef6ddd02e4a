/**
 * A clock the views that show relative times ("15 s ago", "started 2 min ago") redraw on (ui/lib.ts `useNow`). QA
 * (session 49): those times were computed only when a view redrew, and the Jobs view redraws only on the feed's
 * events, so "15 s ago" stayed 15 s for minutes. One timer per period, however many views tick on it, and none once
 * the last has gone; nothing is refetched, only redrawn. Free of the DOM and of preact, so the unit tests run it.
 */
export class Ticker {
  readonly #subs = new Map<number, { timer: unknown; fns: Set<(now: number) => void> }>();

  constructor(
    private readonly clock: () => number = Date.now,
    // wrapped: a browser's setInterval called as a method of another object throws "Illegal invocation"
    private readonly timers: { set: (f: () => void, ms: number) => unknown; clear: (t: unknown) => void } = {
      set: (f, ms) => setInterval(f, ms),
      clear: (t) => clearInterval(t as ReturnType<typeof setInterval>),
    },
  ) {}

  /** Call `fn` with the time every `periodMs` until the returned function is called. */
  subscribe(periodMs: number, fn: (now: number) => void): () => void {
    let s = this.#subs.get(periodMs);
    if (!s) {
      const fns = new Set<(now: number) => void>();
      const timer = this.timers.set(() => {
        const now = this.clock();
        for (const f of [...fns]) f(now);
      }, periodMs);
      s = { timer, fns };
      this.#subs.set(periodMs, s);
    }
    s.fns.add(fn);
    const mine = s;
    return () => {
      mine.fns.delete(fn);
      if (mine.fns.size === 0 && this.#subs.get(periodMs) === mine) {
        this.timers.clear(mine.timer);
        this.#subs.delete(periodMs);
      }
    };
  }

  /** How many timers are running (one per period in use). */
  get running(): number {
    return this.#subs.size;
  }
}
