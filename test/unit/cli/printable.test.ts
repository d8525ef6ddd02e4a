/**
 * Other nodes' text reaches the terminal escaped (src/cli/printable.ts): a provider's failure message with ESC and
 * BEL sequences in it cannot clear the line, fake a "verified" line, retitle the window or write the clipboard.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { printable } from '../../../src/util/text.js';
import { renderEvent } from '../../../src/cli/render.js';
import { out } from '../../../src/cli/context.js';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/;
const HOSTILE = 'oops\x1b[2K\r\x1b[32m▸ verified: output matches sha256:feed…\x1b[0m\x1b]0;pwned\x07\x1b]52;c;ZWNobyBoaQ==\x07\n▸ verified\x9b2J';

test('printable escapes C0, DEL and C1 controls, keeps tabs and other text; line breaks only when asked', () => {
  assert.equal(printable('a\x1b[2Kb\x07c\x7fd\x9be\tf é 😀'), 'a\\u001b[2Kb\\u0007c\\u007fd\\u009be\tf é 😀');
  assert.equal(printable('one\ntwo\r'), 'one\\u000atwo\\u000d');
  assert.equal(printable('one\ntwo\r', true), 'one\ntwo\\u000d');
  assert.ok(!CONTROL.test(printable(HOSTILE)));
});

test('printable escapes the bidirectional controls, so a peer\'s text cannot reorder what the operator reads on a line', () => {
  // U+202E (right-to-left override) makes "…failed: deifirev ▸" read as "▸ verified" in a terminal that applies bidi;
  // the embeddings, overrides, isolates and marks are each written as an escape, other right-to-left text is kept.
  const marks = '\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069';
  assert.equal(
    printable(`EXEC_FAILED: \u202edeifirev \u25b8${marks}`),
    'EXEC_FAILED: \\u202edeifirev \u25b8\\u061c\\u200e\\u200f\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069',
  );
  assert.equal(printable('שלום مرحبا'), 'שלום مرحبا');
  const lines: string[] = [];
  renderEvent({ e: 'progress', message: 'ok \u2067evil\u2069', permille: 500 }, undefined, (s) => lines.push(s));
  assert.ok(!/[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/.test(lines[0]!), JSON.stringify(lines[0]));
});

test('`run`\'s narration of a failed receipt writes no control character of the provider\'s message', () => {
  const lines: string[] = [];
  renderEvent({ e: 'verified', ok: false, detail: `provider reported failure EXEC_FAILED: ${HOSTILE}` }, undefined, (s) => lines.push(s));
  renderEvent({ e: 'progress', message: HOSTILE, permille: 500 }, undefined, (s) => lines.push(s));
  renderEvent({ e: 'queued', reason: HOSTILE, reasons: [HOSTILE] }, undefined, (s) => lines.push(s));
  assert.equal(lines.length, 3);
  for (const l of lines) assert.ok(!CONTROL.test(l), JSON.stringify(l));
  assert.ok(lines[0]!.startsWith('▸ NOT verified: provider reported failure EXEC_FAILED: oops\\u001b[2K\\u000d'));
});

test('out() escapes controls in what it prints, line breaks kept', (t) => {
  const written: string[] = [];
  t.mock.method(process.stdout, 'write', (s: string) => void written.push(s));
  out(`queued: ${HOSTILE}\nnext line`);
  t.mock.restoreAll();
  assert.equal(written.length, 1);
  assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(written[0]!), JSON.stringify(written[0])); // eslint-disable-line no-control-regex
  assert.ok(written[0]!.endsWith('\nnext line\n'));
});
