/** The line splitter the CLI's and the console's NDJSON readers use (src/util/lines.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LineSplitter } from '../../../src/util/lines.js';

function splitAll(pieces: string[]): string[] {
  const s = new LineSplitter();
  const out = pieces.flatMap((p) => s.push(p));
  const rest = s.rest();
  return rest ? [...out, rest] : out;
}

test('lines come out whole and in order however the text is cut into pieces', () => {
  const text = 'a\nbb\n\nccc\n{"e":"result","output":"' + 'x'.repeat(5000) + '"}\nlast';
  const want = text.split('\n');
  for (const size of [1, 2, 3, 7, 64, 4999, 5001, text.length]) {
    const pieces: string[] = [];
    for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
    assert.deepEqual(splitAll(pieces), want, `pieces of ${size}`);
  }
});

test('a piece holding several lines and the start of the next; an empty piece; a trailing newline leaves nothing', () => {
  const s = new LineSplitter();
  assert.deepEqual(s.push('one\ntwo\nthr'), ['one', 'two']);
  assert.deepEqual(s.push(''), []);
  assert.deepEqual(s.push('ee'), []);
  assert.deepEqual(s.push('\n'), ['three']);
  assert.equal(s.rest(), '');
});

test('a 16 MiB line in 64 KiB pieces is one line, equal to the text sent', () => {
  const line = 'y'.repeat(16 * 1024 * 1024);
  const s = new LineSplitter();
  const got: string[] = [];
  for (let i = 0; i < line.length; i += 65536) got.push(...s.push(line.slice(i, i + 65536)));
  got.push(...s.push('\n'));
  assert.equal(got.length, 1);
  assert.equal(got[0]!.length, line.length);
  assert.ok(got[0] === line);
});
