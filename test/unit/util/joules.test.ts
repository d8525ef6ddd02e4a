/**
 * Energy text (src/util/joules.ts), one function for the CLI's `steward status` and the console. QA (session 49): the
 * console rounded to whole joules from 10 J ("53 J" where the CLI said "52.5 J"), and showed "0.00 J" and "2000 J".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { joulesText } from '../../../src/util/joules.js';

test('microjoules as joules with one decimal, as steward status prints them', () => {
  assert.equal(joulesText(52_450_000), '52.5 J');
  assert.equal(joulesText(0), '0.0 J');
  assert.equal(joulesText(2_000_000_000), '2000.0 J');
  assert.equal(joulesText(33_680_000), '33.7 J');
  assert.equal(joulesText(49_999), '0.0 J');
  assert.equal(joulesText(50_000), '0.1 J');
  assert.equal(joulesText(-1_250_000), '-1.3 J');
  assert.equal(joulesText(9_007_199_254_740_991), '9007199254.7 J');
});
