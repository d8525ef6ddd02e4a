/**
 * A job file's deadline or timeout too short to collect offers and run (a bare number is milliseconds: `deadline: 60`
 * is 60 ms) is refused before anything is signed, with its own code naming the field, the value as read and the
 * minimum; before, the job was published already past and the run ended "no eligible provider … widen the market".
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as jobfile from '../../../src/node/jobfile.js';
import { refusal } from './refusal.js';

// through the namespace: without the fix these are undefined, and each test fails on its own assertion
const { parseJobFileText } = jobfile;
const minJobDeadlineMs = (w?: number): number => jobfile.minJobDeadlineMs?.(w) ?? 8000;
const DEFAULT_COLLECT_WINDOW_MS = jobfile.DEFAULT_COLLECT_WINDOW_MS ?? 3000;
const MIN_JOB_TIMEOUT_MS = jobfile.MIN_JOB_TIMEOUT_MS ?? 1000;

const file = (extra: string) => `workload: builtin.sha256\nparams: 10\ninput: hi\nmaxPrice: "0.01 USD"\n${extra}`;

test('deadline: 60 (a bare number, 60 ms) is JOB_DEADLINE_TOO_SOON naming the field, the value as read, the minimum, and how to write seconds', () => {
  const e = refusal(() => parseJobFileText(file('deadline: 60\n'), 'job.yaml'));
  assert.equal(e.code, 'JOB_DEADLINE_TOO_SOON');
  assert.equal(e.field, 'deadline');
  assert.match(e.message, /job\.yaml: deadline 60 is 60 ms/);
  assert.match(e.message, /read as milliseconds; write 60s for seconds/);
  assert.match(e.message, new RegExp(`at least ${minJobDeadlineMs()} ms`));
  assert.deepEqual(e.detail, { value: 60, ms: 60, minMs: minJobDeadlineMs(), collectWindowMs: DEFAULT_COLLECT_WINDOW_MS });
});

test('a deadline with a unit but shorter than the collect window plus the run margin is refused too, without the bare-number hint', () => {
  const e = refusal(() => parseJobFileText(file('deadline: 2s\n'), 'job.yaml'));
  assert.equal(e.code, 'JOB_DEADLINE_TOO_SOON');
  assert.doesNotMatch(e.message, /bare number/);
  // the window the caller's buyer collects for moves the minimum
  const min = minJobDeadlineMs(20_000);
  assert.ok(min > 20_000);
  assert.equal(refusal(() => parseJobFileText(file('deadline: 20s\n'), 'job.yaml', { collectWindowMs: 20_000 })).code, 'JOB_DEADLINE_TOO_SOON');
  assert.equal(parseJobFileText(file(`deadline: ${min}ms\n`), 'job.yaml', { collectWindowMs: 20_000 }).deadlineMs, min);
});

test('the minimum itself, a bare number at or above it, and the default deadline are taken', () => {
  const min = minJobDeadlineMs();
  assert.equal(parseJobFileText(file(`deadline: ${min}\n`), 'job.yaml').deadlineMs, min);
  assert.equal(parseJobFileText(file('deadline: 60000\n'), 'job.yaml').deadlineMs, 60_000);
  assert.equal(parseJobFileText(file(''), 'job.yaml').deadlineMs, 60_000);
});

test('timeout: 5 (5 ms) is JOB_TIMEOUT_TOO_SHORT naming the field; a timeout of a second or more is kept', () => {
  const e = refusal(() => parseJobFileText(file('deadline: 60s\ntimeout: 5\n'), 'job.yaml'));
  assert.equal(e.code, 'JOB_TIMEOUT_TOO_SHORT');
  assert.equal(e.field, 'timeout');
  assert.match(e.message, /timeout 5 is 5 ms \(a bare number is read as milliseconds; write 5s for seconds\)/);
  assert.equal(parseJobFileText(file(`deadline: 60s\ntimeout: ${MIN_JOB_TIMEOUT_MS}ms\n`), 'job.yaml').timeoutMs, MIN_JOB_TIMEOUT_MS);
  assert.equal(parseJobFileText(file('deadline: 60s\ntimeout: 30s\n'), 'job.yaml').timeoutMs, 30_000);
});

test('an order collects no offers: a deadline of a few seconds is taken; under a second is still refused', () => {
  assert.equal(parseJobFileText(file('deadline: 3s\norder: {}\n'), 'job.yaml').deadlineMs, 3000);
  assert.equal(parseJobFileText(file('deadline: 3s\n'), 'job.yaml', { designated: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK' }).deadlineMs, 3000);
  assert.equal(refusal(() => parseJobFileText(file('deadline: 60\norder: {}\n'), 'job.yaml')).code, 'JOB_DEADLINE_TOO_SOON');
});

test('a maxPrice without a currency is MONEY_MALFORMED naming the file and the field, as every other job-file error does', () => {
  const text = 'workload: builtin.sha256\nparams: 10\ninput: hi\nmaxPrice: "0.01"\ndeadline: 60s\n';
  assert.throws(() => parseJobFileText(text, 'j.yaml'), (e: { code: string; message: string; field?: string }) => {
    assert.equal(e.code, 'MONEY_MALFORMED');
    assert.equal(e.field, 'maxPrice');
    assert.match(e.message, /^j\.yaml: maxPrice: not an amount with a currency: "0\.01"/);
    return true;
  });
});

test('an order designated to something that is not a did:key is JOB_FILE_INVALID naming the file and order.designated (market probe took it)', () => {
  for (const d of ['notadid', 'did:key:z6MkBAD', '']) {
    const text = `workload: builtin.sha256\nparams: 10\ninput: hi\nmaxPrice: "0.01 USD"\ndeadline: 60s\norder: { designated: "${d}" }\n`;
    assert.throws(() => parseJobFileText(text, 'o.yaml'), (e: { code: string; message: string; field?: string }) => {
      assert.equal(e.code, 'JOB_FILE_INVALID', d);
      assert.equal(e.field, 'order.designated');
      assert.match(e.message, /^o\.yaml: order\.designated: /);
      return true;
    });
  }
  const ok = parseJobFileText('workload: builtin.sha256\nparams: 10\ninput: hi\nmaxPrice: "0.01 USD"\ndeadline: 60s\norder: { designated: "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK" }\n', 'o.yaml');
  assert.deepEqual(ok.order, { designated: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK' });
});
