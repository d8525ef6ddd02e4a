/**
 * Freshness against the receiving node's `now` (src/records/freshness.ts): a job or order whose deadline lies further
 * ahead than MAX_JOB_DEADLINE_AHEAD_MS (plus the clock-skew window) is refused with JOB_DEADLINE_TOO_FAR, while the
 * record itself stays well-formed: one already stored still opens.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { checkFresh, DEFAULT_SKEW_MS } from '../../../src/records/freshness.js';
import { open, seal } from '../../../src/records/envelope.js';
import { T, type Job } from '../../../src/records/kinds.js';
import { NOW, PROVIDER, assertCode, buyer, records } from './fixtures.js';
import { parseJobFileText } from '../../../src/node/jobfile.js';
import { parseJobSpec } from '../../../src/node/control.js';

const DAY = 24 * 3600_000;
const job = (deadline: number, o: Partial<Job> = {}): Job => ({ ...records.job(), deadline, ...o });

describe('checkFresh: how far ahead a job deadline may be', () => {
  it('refuses a job whose deadline is centuries away (2^45 ms, 2^53 − 1 ms) with JOB_DEADLINE_TOO_FAR', () => {
    for (const deadline of [2 ** 45, Number.MAX_SAFE_INTEGER]) {
      const e = assertCode(() => checkFresh(T.job, job(deadline), NOW), 'JOB_DEADLINE_TOO_FAR', String(deadline));
      assert.equal(e.field, 'deadline');
    }
  });

  it('refuses an open order (a job with `order`) with a far deadline the same way', () => {
    assertCode(() => checkFresh(T.job, job(NOW + 10 * 365 * DAY, { order: {} }), NOW), 'JOB_DEADLINE_TOO_FAR');
    assertCode(() => checkFresh(T.job, job(NOW + 400 * DAY, { order: { designated: PROVIDER } }), NOW), 'JOB_DEADLINE_TOO_FAR');
  });

  it('takes a deadline up to 90 days past now (plus the skew window), and refuses one just past that', () => {
    checkFresh(T.job, job(NOW + 30 * DAY), NOW);
    checkFresh(T.job, job(NOW + 90 * DAY + DEFAULT_SKEW_MS), NOW);
    assertCode(() => checkFresh(T.job, job(NOW + 90 * DAY + DEFAULT_SKEW_MS + 1), NOW), 'JOB_DEADLINE_TOO_FAR');
    // measured from the receiving node's now, not from announcedAt: a job announced long ago is no further ahead
    checkFresh(T.job, job(NOW + 60 * DAY, { announcedAt: NOW - 40 * DAY }), NOW);
  });

  it('keeps a stored job with a far deadline readable: the bound is a check on arrival, not a rule of the record', () => {
    const env = seal(T.job, job(2 ** 45) as never, buyer);
    assert.equal(open(env.bytes, T.job, { trusted: true }).record.deadline, 2 ** 45);
    assert.equal(open(env.bytes, T.job).record.deadline, 2 ** 45);
  });

  it('refuses a deadline past the bound in a job file or an API job spec before anything is signed', () => {
    const file = (deadline: string) => `workload: builtin.sha256\nmaxPrice: "0.01 USD"\ninput: hi\ndeadline: ${deadline}\n`;
    assert.equal(parseJobFileText(file('2160h'), 'job.yaml').deadlineMs, 90 * DAY);
    assertCode(() => parseJobFileText(file('2161h'), 'job.yaml'), 'JOB_DEADLINE_TOO_FAR');
    assertCode(() => parseJobFileText(file('10000000h'), 'job.yaml'), 'JOB_DEADLINE_TOO_FAR');
    // the API's job spec (POST /v1/run) the same
    const spec = (deadlineMs: number) => ({ workload: 'builtin.sha256', maxPrice: '0.01 USD', deadlineMs });
    assert.equal(parseJobSpec(spec(90 * DAY)).deadlineMs, 90 * DAY);
    assertCode(() => parseJobSpec(spec(2 ** 45)), 'JOB_DEADLINE_TOO_FAR');
  });
});
