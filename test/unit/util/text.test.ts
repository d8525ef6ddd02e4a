/**
 * truncateText (src/util/text.ts): text cut for a signed record's free-text
 * field is always well-formed, so the CBOR encoder takes it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { truncateText } from '../../../src/util/text.js';
import { encodeCanonical } from '../../../src/records/cbor.js';

const wellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();
const EMOJI = '\u{1F600}'; // two UTF-16 code units

describe('truncateText', () => {
  it('keeps text within the limit as it is', () => {
    assert.equal(truncateText('abc', 3), 'abc');
    assert.equal(truncateText('a' + EMOJI, 3), 'a' + EMOJI);
    assert.equal(truncateText('', 0), '');
  });

  it('cuts at the limit in code units, but before a surrogate pair rather than through it', () => {
    assert.equal(truncateText('abcdef', 4), 'abcd');
    const s = 'a'.repeat(39) + EMOJI; // 41 code units
    assert.equal(truncateText(s, 41), s);
    assert.equal(truncateText(s, 40), 'a'.repeat(39), 'a cut at 40 would end on the high surrogate');
    const t = 'a'.repeat(999) + EMOJI + 'b';
    const u = truncateText(t, 1000);
    assert.equal(u, 'a'.repeat(999));
    assert.ok(wellFormed(u));
    assert.doesNotThrow(() => encodeCanonical(u));
    assert.equal(truncateText(EMOJI, 1), '');
  });

  it('replaces a lone surrogate already in the text, so whatever it was cut from encodes', () => {
    const broken = `got "${'a'.repeat(39)}\uD83D"`; // a quote cut through a pair elsewhere
    const out = truncateText(broken, 1000);
    assert.equal(out, `got "${'a'.repeat(39)}\uFFFD"`);
    assert.ok(wellFormed(out));
    assert.doesNotThrow(() => encodeCanonical(out));
    assert.equal(truncateText('\uDE00x', 1), '\uFFFD');
  });
});
