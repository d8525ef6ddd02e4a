import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';

/** The C0Error `f` throws (any other error is thrown on); fails the test when `f` accepts. */
export function refusal(f: () => unknown): C0Error {
  try {
    f();
  } catch (e) {
    if (e instanceof C0Error) return e;
    throw e;
  }
  assert.fail('accepted');
}
