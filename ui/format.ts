/** Small formatting helpers the views and the pure modules share (ui/lib.ts re-exports them). Free of the DOM. */

export function ago(t: number | undefined, now = Date.now()): string {
  if (!t) return '—';
  const s = Math.round((now - t) / 1000);
  if (s < 0) return `in ${fmtDuration(-s * 1000)}`;
  return `${fmtDuration(s * 1000)} ago`;
}

export function fmtDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 90) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = s / 60;
  if (m < 90) return `${m.toFixed(0)} min`;
  return `${(m / 60).toFixed(1)} h`;
}

/** A count with its noun, singular for one: `1 offer`, `2 offers`, `1 provider` (QA s49: "collected 1 offers", "1 providers with evidence held"). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

