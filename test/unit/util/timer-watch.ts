/**
 * Tests: watch the timers code sets through the global setTimeout / clearTimeout (unref'd timers do not show in
 * process.getActiveResourcesInfo). `armed` lists every delay asked for; `pending` holds the timers of at least
 * `minMs` not yet fired or cleared. `restore()` puts the globals back.
 */
export function watchTimers(minMs = 0): { armed: number[]; pending: Set<unknown>; restore: () => void } {
  const armed: number[] = [];
  const pending = new Set<unknown>();
  const [st, ct] = [globalThis.setTimeout, globalThis.clearTimeout];
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    armed.push(ms ?? 0);
    const t: NodeJS.Timeout = st(() => (pending.delete(t), fn()), ms);
    if ((ms ?? 0) >= minMs) pending.add(t);
    return t;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((t: NodeJS.Timeout | undefined) => (pending.delete(t), ct(t))) as typeof clearTimeout;
  return {
    armed,
    pending,
    restore: () => {
      globalThis.setTimeout = st;
      globalThis.clearTimeout = ct;
    },
  };
}
