/** How long ago, for a status line: `(12 s ago)`, `(4 min ago)`, `(3 h ago)`; a clock a little behind is now. Shared by the CLI and the console. */
export function agoText(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 120 ? `(${s} s ago)` : s < 7200 ? `(${Math.round(s / 60)} min ago)` : `(${Math.round(s / 3600)} h ago)`;
}
