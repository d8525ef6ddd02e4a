/**
 * A price's amount as the Market grid's narrow column shows it: exact where it
 * can be (trailing zeros of the fraction dropped, a run of zeros as a power
 * of ten: `200000000000000000000` is `2e20`, `0.000000005` is `5e-9`), else cut
 * in the middle with `…` (the full price is in the cell's title). Plain
 * string work on the decimal: an amount is never turned into a float
 * (docs/market.md "Money"). The currency is drawn beside it, never cut
 * (review s43 R3 F2: `0.200000000 BTC` read `0.2000000…`, as if 0.20 USD).
 */
export function compactAmount(amount: string, max = 9): string {
  let a = amount;
  if (a.includes('.')) a = a.replace(/0+$/, '').replace(/\.$/, '');
  if (a.length <= max) return a;
  const big = /^([1-9][0-9]*?)(0+)$/.exec(a);
  if (big) {
    const [, d, z] = big as unknown as [string, string, string];
    const e = `${d[0]}${d.length > 1 ? `.${d.slice(1)}` : ''}e${z.length + d.length - 1}`;
    if (e.length <= max) return e;
  }
  const small = /^0\.(0*)([1-9][0-9]*)$/.exec(a);
  if (small) {
    const [, z, d] = small as unknown as [string, string, string];
    const e = `${d[0]}${d.length > 1 ? `.${d.slice(1)}` : ''}e-${z.length + 1}`;
    if (e.length <= max) return e;
  }
  return `${a.slice(0, max - 5)}…${a.slice(-4)}`;
}
