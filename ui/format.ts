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
