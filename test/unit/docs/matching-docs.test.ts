/** docs/matching.md says what the code does: how many refused claims a first-claim selection lists, and that open orders do not move the rotation. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MAX_LISTED_REFUSALS } from '../../../src/roles/buyer-orders.js';

const doc = readFileSync(fileURLToPath(new URL('../../../../docs/matching.md', import.meta.url)), 'utf8').replace(/\s+/g, ' ');

describe('docs/matching.md', () => {
  it('names the refused claims a selection lists as the buyer does (MAX_LISTED_REFUSALS)', () => {
    const para = doc.slice(doc.indexOf('**A flood of refused claims.**'), doc.indexOf('### On the network'));
    assert.match(para, new RegExp(`lists the first ${MAX_LISTED_REFUSALS.toLocaleString('en-US')} refused claims`));
    assert.doesNotMatch(para, /4,095/);
  });

  it('says once, and the same way, that open orders do not advance the rotation', () => {
    assert.doesNotMatch(doc, /Open orders mark their first candidate/);
    const rotation = doc.slice(doc.indexOf('### Rotation'), doc.indexOf('### The probe'));
    assert.match(rotation, /Open orders do not advance the rotation/);
    assert.match(doc, /Open orders do not advance the probe's rotation/);
  });
});
