/**
 * `pool-provider roster --seq N` (docs/pools.md "Operating a pool"): a seq not greater than the highest the pool is
 * known locally to have signed is refused with a stable code, since members keep the roster they hold and ignore one
 * of the same or a lower seq; without --seq the next one is taken.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { nextRosterSeq } from '../../../src/pools/roster-seq.js';
import { codeOf } from '../../../src/errors.js';

describe('the seq a new roster is signed with', () => {
  const known = { seq: 3, where: 'at roster.cose' };

  test('default: one above the known seq (1 when none is known)', () => {
    assert.equal(nextRosterSeq(undefined, known), 4);
    assert.equal(nextRosterSeq(undefined, undefined), 1);
  });

  test('a greater --seq is taken; one not greater is refused POOL_ROSTER_SEQ_NOT_NEWER', () => {
    assert.equal(nextRosterSeq('4', known), 4);
    assert.equal(nextRosterSeq('10', known), 10);
    assert.equal(nextRosterSeq('2', undefined), 2);
    assert.equal(codeOf(() => nextRosterSeq('3', known)), 'POOL_ROSTER_SEQ_NOT_NEWER');
    assert.equal(codeOf(() => nextRosterSeq('1', known)), 'POOL_ROSTER_SEQ_NOT_NEWER');
  });

  test('a --seq that is not a non-negative integer is refused POOL_ROSTER_SEQ_INVALID', () => {
    for (const s of ['abc', '-1', '1.5', '', '1e3', '99999999999999999999']) assert.equal(codeOf(() => nextRosterSeq(s, undefined)), 'POOL_ROSTER_SEQ_INVALID', s);
  });
});
