/**
 * Energy as people read it, from the integer microjoules records carry: `52.5 J`, `0.0 J`, `2000.0 J`, one decimal,
 * as `c0mpute steward status` prints budgets and the console shows them (ui/lib.ts fmtJoules). Rounded from the
 * integer (tenths of a joule, halves up), not through a float's toFixed. Free of Node and of the DOM.
 */
export function joulesText(uj: number): string {
  if (!Number.isFinite(uj)) return `${uj} µJ`;
  const neg = uj < 0;
  const tenths = Math.round(Math.abs(uj) / 100_000);
  return `${neg && tenths ? '-' : ''}${Math.floor(tenths / 10)}.${tenths % 10} J`;
}
