/** `c0mpute status` on a witness: one line of what it holds per overlay it witnesses on (src/cli/commands/node.ts witnessSummary, witnessOverlays). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { witnessOverlays, witnessSummary } from '../../../src/cli/commands/node.js';

test('the witness line: stewards held, the longest length, evidence pairs and rolled-back stewards flagged', () => {
  assert.equal(witnessSummary({ stewards: {} }), '0 stewards held, evidence 0 (c0mpute witness status)');
  assert.equal(witnessSummary({ stewards: { a: { held: { length: 200 }, evidence: 0, last: { length: 200 } } } }), '1 steward held (longest length 200), evidence 0 (c0mpute witness status)');
  assert.equal(
    witnessSummary({ stewards: { a: { held: { length: 266 }, evidence: 2, rolledBack: { held: 266 } }, b: { held: { length: 0 }, evidence: 0 }, c: { held: { length: 12 }, evidence: 1 } } }),
    '2 stewards held (longest length 266), ⚠ evidence 3 pairs kept, ⚠ 1 steward rolled back [WITNESS_LEDGER_ROLLED_BACK] (c0mpute witness status)',
  );
});

test('a witness line for each overlay with the witness role, the primary’s and any other’s (asked with ?overlay=)', () => {
  assert.deepEqual(witnessOverlays({ roles: ['witness', 'buyer'] }), [{}]);
  assert.deepEqual(witnessOverlays({ roles: ['buyer'], overlays: { lab: { roles: ['witness'] }, other: { roles: ['provider'] } } }), [{ overlay: 'lab' }]);
  assert.deepEqual(witnessOverlays({ roles: ['witness'], overlays: { lab: { roles: ['steward', 'witness'] } } }), [{}, { overlay: 'lab' }]);
  assert.deepEqual(witnessOverlays({ roles: ['buyer'] }), []);
});
