/**
 * How long a provider waits for the buyer's word on a receipt written after the output (receiptAckWaitMs): the output
 * may still be on its way when the last write returned (a slow link), so the wait allows for it at the slowest rate a
 * buyer reads output before giving up itself, up to the job's deadline. Before, 10 s ran out while a buyer on a
 * 64 KiB/s link was still reading 4 MiB of output; the stream was closed under it and the completed job failed there.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RECEIPT_ACK_FLOOR_BYTES_PER_SEC, RECEIPT_ACK_MS, receiptAckWaitMs } from '../../../src/roles/provider/provider.js';
import { OUTPUT_MIN_BYTES_PER_SEC } from '../../../src/roles/buyer.js';

test('no output: the plain wait', () => {
  assert.equal(receiptAckWaitMs(0, 60_000), RECEIPT_ACK_MS);
  assert.equal(receiptAckWaitMs(0, 60_000, 300), 300, 'the configured wait');
});

test('output: its transfer at the floor rate is waited for as well, up to the deadline', () => {
  assert.equal(receiptAckWaitMs(40 * 1024, 600_000), RECEIPT_ACK_MS + 10_000, '40 KiB at 4 KiB/s');
  assert.equal(receiptAckWaitMs(4 * 1024 * 1024, 300_000), RECEIPT_ACK_MS + 300_000, '4 MiB would take 1,024 s at the floor: the deadline bounds it');
  assert.equal(receiptAckWaitMs(4 * 1024 * 1024, -5_000), RECEIPT_ACK_MS, 'past the deadline: the plain wait');
});

test('the floor is the rate below which a buyer gives up on output itself', () => {
  assert.equal(RECEIPT_ACK_FLOOR_BYTES_PER_SEC, OUTPUT_MIN_BYTES_PER_SEC);
});
