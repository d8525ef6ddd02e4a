/**
 * Times on the console (ui/format.ts). QA (session 49): the Record page showed startedAt/completedAt as raw epoch
 * milliseconds, and a job's deadline was a time of day alone.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { dateTime, isTimeField, whenText } from '../../../ui/format.js';

describe('console times', () => {
  it('a date and a time, ISO-like', () => {
    const t = new Date(2026, 11, 7, 1, 53, 2).getTime();
    assert.equal(dateTime(t), '2026-12-07 01:53:02');
    assert.equal(whenText(t, t + 15_000), '2026-12-07 01:53:02 (15 s ago)');
    assert.equal(whenText(t, t - 60_000), '2026-12-07 01:53:02 (in 60 s)');
  });
  it("a record's time fields are told from its other numbers", () => {
    const t = 1_796_000_000_000;
    for (const k of ['startedAt', 'completedAt', 'announcedAt', 'decidedAt', 'deadline']) assert.ok(isTimeField(k, t), k);
    assert.ok(!isTimeField('startedAt', 390), 'a duration is no date');
    assert.ok(!isTimeField('uj', t), 'energy is no date');
    assert.ok(!isTimeField('deadline', '1796000000000'));
  });
});
