/**
 * The Market grid's price amount (ui/amount.ts), against review s43 R3 F2:
 * `20000000000 USD` and `200000000000000000000 USD` both read `200000000…`,
 * `0.200000000 BTC` read `0.2000000…`. The compact form is exact where it
 * can be, and whatever is cut is cut in the middle, never at the end.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compactAmount } from '../../../ui/amount.js';

test('an amount is shown exactly when it can be, never ellipsised at its end', () => {
  assert.equal(compactAmount('0.042'), '0.042');
  assert.equal(compactAmount('0.200000000'), '0.2');
  assert.equal(compactAmount('0.0010000000'), '0.001');
  assert.equal(compactAmount('2.000'), '2');
  assert.equal(compactAmount('20000000000'), '2e10');
  assert.equal(compactAmount('200000000000000000000'), '2e20');
  assert.equal(compactAmount('1250000000000'), '1.25e12');
  assert.equal(compactAmount('0.000000005'), '5e-9');
  assert.equal(compactAmount('0.0000000052'), '5.2e-9');
  assert.notEqual(compactAmount('20000000000'), compactAmount('200000000000000000000'));
  const long = compactAmount('123456789012345.678');
  assert.equal(long, '1234….678');
  assert.ok(long.length <= 9);
  // the same value and a look-alike show differently
  assert.notEqual(compactAmount('0.10000000000000000001'), compactAmount('0.1'));
});
