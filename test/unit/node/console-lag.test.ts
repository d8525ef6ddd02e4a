/** The console's event-loop lag is what exceeds the histogram's sampling period: an idle loop reads 0, not 100 ms. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { lagFromHistogramMean } from '../../../src/node/console-hub.js';

test('lag from the histogram mean: the sampling period taken off, never below 0, 0 for no samples', () => {
  assert.equal(lagFromHistogramMean(100.24e6), 0.24);
  assert.equal(lagFromHistogramMean(99.2e6), 0);
  assert.equal(lagFromHistogramMean(350e6), 250);
  assert.equal(lagFromHistogramMean(NaN), 0);
  assert.equal(lagFromHistogramMean(10.5e6, 10), 0.5);
});
