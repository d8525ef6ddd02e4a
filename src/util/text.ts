/**
 * Text for a signed record's free-text field (a failure message, a
 * non-delivery's detail): at most `max` UTF-16 code units (the unit the
 * schema's maxLen counts), cut before a surrogate pair rather than through it,
 * with any lone surrogate already in `s` replaced by U+FFFD. The result is
 * always well-formed, so the CBOR encoder takes it (a lone surrogate is
 * CBOR_INVALID_UTF8) whatever text it was cut from, e.g. a peer's params or an
 * error message quoting them.
 */
export function truncateText(s: string, max: number): string {
  const w = (s as string & { toWellFormed(): string }).toWellFormed(); // Node 20+; replaces code unit for code unit
  if (w.length <= max) return w;
  const end = max > 0 && isHighSurrogate(w.charCodeAt(max - 1)) ? max - 1 : max;
  return w.slice(0, Math.max(0, end));
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}
