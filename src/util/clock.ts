/**
 * Clocks are injected; decisions never read time themselves.
 *
 * Two kinds, both `() => number` in milliseconds:
 * - the **wall clock** (`systemClock`, Date.now): for times that are signed, sent, stored or compared with a
 *   time in a record (issuedAt, expiresAt, deadline, freshness). NTP, an operator or a VM restore may step it,
 *   backwards or forwards.
 * - the **monotonic clock** (`monotonicClock`, performance.now): for durations this process measures for itself
 *   (rate-limit refill, abuse decay, bans, debounces, timeouts). It never steps; its origin is arbitrary, so its
 *   value is never written to a record or compared with a wall time.
 * Code that takes both names the second one `mono` (or `monoClock`); tests inject a `fakeClock` for either.
 */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now();
/** Monotonic milliseconds (performance.now): durations only, never a timestamp. */
export const monotonicClock: Clock = () => performance.now();

/** A manual clock for tests. */
export function fakeClock(start = 1_800_000_000_000): Clock & { set(t: number): void; advance(ms: number): void } {
  let t = start;
  const c = (() => t) as Clock & { set(t: number): void; advance(ms: number): void };
  c.set = (x: number) => {
    t = x;
  };
  c.advance = (ms: number) => {
    t += ms;
  };
  return c;
}
