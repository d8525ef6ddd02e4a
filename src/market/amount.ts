/**
 * Exact comparison of plain decimal strings (`^(0|[1-9][0-9]*)(\.[0-9]{1,30})?$`,
 * DESIGN §3.1) without building decimal objects: the integer parts have no
 * leading zeros, so a longer integer part is larger and equal lengths compare
 * lexically; fractional parts compare digit by digit with missing digits read as
 * zero ("0.10" equals "0.1"). Exact, allocation-free, and safe for gates.
 */
export function cmpAmount(a: string, b: string): number {
  if (a === b) return 0;
  const da = a.indexOf('.');
  const db = b.indexOf('.');
  const ia = da < 0 ? a.length : da;
  const ib = db < 0 ? b.length : db;
  if (ia !== ib) return ia < ib ? -1 : 1;
  for (let i = 0; i < ia; i++) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(i);
    if (ca !== cb) return ca < cb ? -1 : 1;
  }
  const fa = da < 0 ? a.length : da + 1;
  const fb = db < 0 ? b.length : db + 1;
  const la = a.length - fa;
  const lb = b.length - fb;
  const n = la > lb ? la : lb;
  for (let i = 0; i < n; i++) {
    const ca = i < la ? a.charCodeAt(fa + i) : 48;
    const cb = i < lb ? b.charCodeAt(fb + i) : 48;
    if (ca !== cb) return ca < cb ? -1 : 1;
  }
  return 0;
}
