/** Clocks are injected; decisions never read wall time themselves. */
export type Clock = () => number;
export const systemClock: Clock = () => Date.now();

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
