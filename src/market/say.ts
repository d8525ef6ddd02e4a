/**
 * How the market's messages say times (docs/market.md, "Messages"): instants
 * as ISO 8601 UTC, spans as durations ("90 s", "2 min 5 s"), never raw epoch
 * milliseconds. Machine-readable fields (`wanted`, `offered`) keep numbers.
 */

/** An instant as ISO 8601 UTC (a value past year 275760 as `at=<ms>`). */
export function isoTime(ms: number): string {
  return Math.abs(ms) <= 8.64e15 ? new Date(ms).toISOString() : `at=${ms}`;
}

/** A span in the largest whole units: "1 h", "2 min 5 s", "1.5 s", "250 ms". */
export function duration(ms: number): string {
  if (ms < 0) return `-${duration(-ms)}`;
  if (ms < 1000) return `${ms} ms`;
  if (ms % 1000 !== 0) return ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : `${duration(Math.floor(ms / 1000) * 1000)}`;
  const s = ms / 1000;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  return [h ? `${h} h` : '', m ? `${m} min` : '', r ? `${r} s` : ''].filter(Boolean).join(' ');
}
