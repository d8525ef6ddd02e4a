/**
 * Text as the CLI writes it to a terminal. Much of what it prints came from
 * other nodes (a provider's failure message or progress line, a steward's
 * reason, a remote error): C0 and C1 control characters and DEL are written
 * as `\u001b`-style escapes, so no peer can clear lines, move the cursor, fake
 * a line of the narration, set the window title or write the clipboard (OSC
 * 52). A tab stays; a line break stays only where `lines` (a caller printing
 * several lines of its own), never inside one event's line.
 */
export function printable(s: string, lines = false): string {
  return s.replace(lines ? CONTROLS_BUT_NEWLINE : CONTROLS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex
const CONTROLS_BUT_NEWLINE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;
