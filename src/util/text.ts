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

/**
 * Text as the CLI (and the pretty log format) writes it to a terminal. Much of what it prints came from
 * other nodes (a provider's failure message or progress line, a steward's
 * reason, a remote error): C0 and C1 control characters and DEL are written
 * as `\u001b`-style escapes, so no peer can clear lines, move the cursor, fake
 * a line of the narration, set the window title or write the clipboard (OSC
 * 52). The bidirectional controls (embeddings, overrides, isolates and the
 * LRM/RLM/ALM marks) are escaped too, so a peer's text cannot reorder what a
 * terminal that applies bidi shows on the line (a right-to-left override makes
 * a failure read as "verified"); right-to-left letters themselves stay. So
 * are the line and paragraph separators (U+2028, U+2029: a line break in
 * editors and web log viewers) and every default-ignorable code point (zero-
 * width space and joiners, word joiner, BOM, soft hyphen, Hangul fillers,
 * variation selectors, tags: drawn as nothing), which let a peer's text look
 * like another's (reviews s42 R4 F2, R6 F4). A tab
 * stays; a line break stays only where `lines` (a caller printing several
 * lines of its own), never inside one event's line.
 */
export function printable(s: string, lines = false): string {
  // a code point past U+FFFF (a tag character) as `\u{e0041}`: both its halves, not the first alone
  return s.replace(lines ? CONTROLS_BUT_NEWLINE : CONTROLS, (c) => {
    const cp = c.codePointAt(0)!;
    return cp > 0xffff ? `\\u{${cp.toString(16)}}` : `\\u${cp.toString(16).padStart(4, '0')}`;
  });
}

// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u061c\u2028-\u202e\u2066-\u2069\p{Default_Ignorable_Code_Point}]/gu;
// eslint-disable-next-line no-control-regex
const CONTROLS_BUT_NEWLINE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u2028-\u202e\u2066-\u2069\p{Default_Ignorable_Code_Point}]/gu;

/** A count with its noun, singular for one: `1 offer`, `2 offers`, `1 provider` (QA s49: "collected 1 offers", "1 providers with evidence held"; the CLI's "offer(s)"). */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
