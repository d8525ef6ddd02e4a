/**
 * `c0mpute status` on a witness: one line of what it holds per overlay it witnesses on (src/cli/commands/node.ts
 * witnessSummary, witnessOverlays); on a steward, one line of its ledger per overlay it stewards (stewardSummary,
 * roleOverlays: before, the steward's status said nothing of its ledger, QA witness pass, finding 10).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { roleOverlays, stewardSummary, witnessOverlays, witnessSummary } from '../../../src/cli/commands/node.js';

test('the witness line: stewards held, the longest length, evidence pairs and rolled-back stewards flagged', () => {
  assert.equal(witnessSummary({ stewards: {} }), '0 stewards held, evidence 0 (c0mpute witness status)');
  assert.equal(witnessSummary({ stewards: { a: { held: { length: 200 }, evidence: 0, last: { length: 200 } } } }), '1 steward held (longest length 200), evidence 0 (c0mpute witness status)');
  assert.equal(
    witnessSummary({ stewards: { a: { held: { length: 266 }, evidence: 2, rolledBack: { held: 266 } }, b: { held: { length: 0 }, evidence: 0 }, c: { held: { length: 12 }, evidence: 1 } } }),
    '2 stewards held (longest length 266), ⚠ evidence 3 pairs kept, ⚠ 1 steward rolled back [WITNESS_LEDGER_ROLLED_BACK] (c0mpute witness status)',
  );
});

test('the hint on an overlay other than the primary names it (--overlay), for the witness and the steward line (QA qaWit F3)', () => {
  assert.equal(witnessSummary({ stewards: {} }, 'o2'), '0 stewards held, evidence 0 (c0mpute witness status --overlay o2)');
  assert.equal(stewardSummary({ ledger: { length: 0 }, queued: [] }, 'acme'), 'ledger length 0, self-attested, 0 queued (c0mpute steward status --overlay acme)');
});

test('a witness line for each overlay with the witness role, the primary’s and any other’s (asked with ?overlay=)', () => {
  assert.deepEqual(witnessOverlays({ roles: ['witness', 'buyer'] }), [{}]);
  assert.deepEqual(witnessOverlays({ roles: ['buyer'], overlays: { lab: { roles: ['witness'] }, other: { roles: ['provider'] } } }), [{ overlay: 'lab' }]);
  assert.deepEqual(witnessOverlays({ roles: ['witness'], overlays: { lab: { roles: ['steward', 'witness'] } } }), [{}, { overlay: 'lab' }]);
  assert.deepEqual(witnessOverlays({ roles: ['buyer'] }), []);
});

test('the steward line: ledger length, how far it is witnessed and by how many, claims queued, and what contradicts it', () => {
  assert.equal(stewardSummary({ ledger: { length: 0 }, queued: [], attestation: { grade: 'self-attested', witnesses: [], witnessedLength: 0 } }), 'ledger length 0, self-attested, 0 queued (c0mpute steward status)');
  assert.equal(
    stewardSummary({ ledger: { length: 26 }, queued: [{}], attestation: { grade: 'witnessed', witnesses: [{ witness: 'a', length: 20 }, { witness: 'b', length: 18 }], witnessedLength: 20 } }),
    'ledger length 26, witnessed to length 20 by 2 witnesses (the last 6 self-attested), 1 queued (c0mpute steward status)',
  );
  assert.equal(
    stewardSummary({ ledger: { length: 20 }, attestation: { grade: 'witnessed', witnesses: [{ witness: 'a', length: 20 }], witnessedLength: 20 }, contradictingWitnesses: [{ code: 'WITNESS_LENGTH_BEYOND' }, { code: 'WITNESS_HEAD_MISMATCH' }], evidence: { pairs: 1 } }),
    'ledger length 20, witnessed to length 20 by 1 witness, 0 queued, ⚠ 2 witnesses contradict it [WITNESS_HEAD_MISMATCH, WITNESS_LENGTH_BEYOND], ⚠ equivocation evidence 1 pair (c0mpute steward status)',
  );
});

test('a steward line for each overlay with the steward role', () => {
  assert.deepEqual(roleOverlays({ roles: ['steward'] }, 'steward'), [{}]);
  assert.deepEqual(roleOverlays({ roles: ['buyer'], overlays: { acme: { roles: ['steward', 'witness'] } } }, 'steward'), [{ overlay: 'acme' }]);
  assert.deepEqual(roleOverlays({ roles: ['witness'] }, 'steward'), []);
});

test('witness status: a steward not reached, or a key that serves no ledger, gets a line saying what to check; a verdict on its entries does not', async () => {
  const { unreachedNote } = await import('../../../src/cli/commands/witness.js');
  assert.match(unreachedNote('NET_DIAL_FAILED')!, /^not reached \(NET_DIAL_FAILED\): .*network\.steward.*swarm key/);
  assert.match(unreachedNote('WITNESS_NOT_A_STEWARD')!, /^WITNESS_NOT_A_STEWARD: .*serves no ledger/);
  assert.equal(unreachedNote('WITNESS_EQUIVOCATION'), undefined);
  assert.equal(unreachedNote(undefined), undefined);
});

test('a witness its overlay does not name: flagged on the status line, and said first by witness status', async () => {
  const { notNamedNote } = await import('../../../src/cli/commands/witness.js');
  assert.equal(
    witnessSummary({ stewards: { a: { held: { length: 16 }, evidence: 0, last: { length: 16 } } }, notNamed: { witnesses: ['w'] } }),
    '1 steward held (longest length 16), evidence 0, ⚠ not named in network.witnesses: its receipts are dropped [WITNESS_NOT_NAMED] (c0mpute witness status)',
  );
  assert.match(notNamedNote(['w1', 'w2']), /^⚠ not named in network\.witnesses \(2 named\): every member configured alike drops this witness's receipts \[WITNESS_NOT_NAMED\]/);
});
