/** The wire job spec (POST /v1/run, src/node/control.ts parseJobSpec): every field typed, named when wrong, nothing else accepted. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { C0Error } from '../../../src/errors.js';
import { parseJobSpec } from '../../../src/node/control.js';
import { requireDid } from '../../../src/records/did.js';

const base = { workload: 'builtin.sha256', maxPrice: '0.01 USD', deadlineMs: 20_000 };
const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return `${(e as C0Error).code} ${(e as C0Error).field ?? ''}`.trim();
  }
  return 'accepted';
};

test('a full spec converts: money parsed, input decoded, optional fields kept', () => {
  const s = parseJobSpec({
    ...base,
    maxPrice: { amount: '0.02', currency: 'USD' },
    timeoutMs: 5000,
    params: '7',
    input: Buffer.from('hello').toString('base64'),
    sealInput: true,
    policy: 'cheapest',
    entitlement: 'team-a',
    class: 'c1',
    energy: { uj: 10, grade: 'Estimator' },
    requirements: { cpuCores: 2 },
  });
  assert.deepEqual(s.maxPrice, { amount: '0.02', currency: 'USD' });
  assert.equal(Buffer.from(s.input).toString(), 'hello');
  assert.deepEqual([s.timeoutMs, s.params, s.sealInput, s.policy, s.entitlement, s.class, s.energy, s.requirements], [5000, '7', true, 'cheapest', 'team-a', 'c1', { uj: 10, grade: 'Estimator' }, { cpuCores: 2 }]);
  assert.deepEqual(parseJobSpec(base).maxPrice, { amount: '0.01', currency: 'USD' });
  assert.equal(parseJobSpec(base).input.length, 0);
  assert.equal(Buffer.from(parseJobSpec({ ...base, input: 'aGVsbG8' }).input).toString(), 'hello', 'padding is optional');
  // a large input (the check once overflowed V8's regex stack above ~3 MiB)
  const big = Buffer.alloc(12 * 1024 * 1024, 7);
  assert.equal(parseJobSpec({ ...base, input: big.toString('base64') }).input.length, big.length);
});

test('each wrong field is JOB_SPEC_INVALID naming it; an unknown field is refused, not dropped', () => {
  const cases: Array<[unknown, string]> = [
    [null, 'JOB_SPEC_INVALID'],
    [[base], 'JOB_SPEC_INVALID'],
    [{ ...base, workload: '' }, 'JOB_SPEC_INVALID workload'],
    [{ ...base, deadlineMs: -1 }, 'JOB_SPEC_INVALID deadlineMs'],
    [{ ...base, deadlineMs: 1.5 }, 'JOB_SPEC_INVALID deadlineMs'],
    [{ ...base, timeoutMs: 0 }, 'JOB_SPEC_INVALID timeoutMs'],
    [{ ...base, maxPrice: { amount: 5, currency: 'USD' } }, 'JOB_SPEC_INVALID maxPrice'],
    [{ ...base, maxPrice: 'lots' }, 'JOB_SPEC_INVALID maxPrice'],
    [{ ...base, input: 'aGVsbG8==' }, 'JOB_SPEC_INVALID input'],
    [{ ...base, input: 'aGVsb' }, 'JOB_SPEC_INVALID input'],
    [{ ...base, input: 5 }, 'JOB_SPEC_INVALID input'],
    [{ ...base, input: '!!!not base64$$$' }, 'JOB_SPEC_INVALID input'],
    [{ ...base, input: 'aGVsbG8=x' }, 'JOB_SPEC_INVALID input'],
    [{ ...base, params: 5 }, 'JOB_SPEC_INVALID params'],
    [{ ...base, sealInput: 'yes' }, 'JOB_SPEC_INVALID sealInput'],
    [{ ...base, policy: 'nonsense' }, 'JOB_SPEC_INVALID policy'],
    [{ ...base, class: 5 }, 'JOB_SPEC_INVALID class'],
    [{ ...base, energy: { uj: 'x', grade: 'Estimator' } }, 'JOB_SPEC_INVALID energy.uj'],
    [{ ...base, energy: { uj: 1, grade: 'Guess' } }, 'JOB_SPEC_INVALID energy.grade'],
    [{ ...base, requirements: 'abc' }, 'JOB_SPEC_INVALID requirements'],
    [{ ...base, requirements: { cpuCores: 2, colour: 'red' } }, 'JOB_SPEC_INVALID requirements'],
    [{ ...base, deadline: '60s' }, 'JOB_SPEC_INVALID'],
  ];
  for (const [body, want] of cases) assert.equal(refusal(() => parseJobSpec(body)), want, JSON.stringify(body));
});

test('requireDid names the field of a value that is not a did:key', () => {
  assert.equal(refusal(() => requireDid('not-a-did', 'steward')), 'DID_MALFORMED steward');
  assert.equal(refusal(() => requireDid('/ip4/1.2.3.4', 'did')), 'DID_MALFORMED did');
  const did = 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK';
  assert.equal(requireDid(did, 'did'), did);
});

test('the job file: a zero duration is refused naming the file’s own field, and what it makes is a spec /v1/run takes', async () => {
  const { parseJobFileText } = await import('../../../src/node/jobfile.js');
  const text = (deadline: string) => `workload: builtin.sha256\nparams: 10\ninput: hi\nmaxPrice: "0.01 USD"\ndeadline: ${deadline}\n`;
  assert.equal(refusal(() => parseJobFileText(text('0s'), 'job.yaml')), 'JOB_FILE_INVALID deadline');
  assert.equal(refusal(() => parseJobFileText(text('00m'), 'job.yaml')), 'JOB_FILE_INVALID deadline');
  const spec = parseJobSpec(parseJobFileText(text('90s'), 'job.yaml'));
  assert.deepEqual([spec.deadlineMs, spec.params, Buffer.from(spec.input).toString()], [90_000, '10', 'hi']);
});

test('a job file’s maxPrice that is no price says what a price looks like (a bare YAML number read "maxPrice: Invalid input")', async () => {
  const { parseJobFileText } = await import('../../../src/node/jobfile.js');
  for (const v of ['0.01', '{ amount: 1, currency: USD }', '[1]']) {
    assert.throws(
      () => parseJobFileText(`workload: builtin.sha256\ninput: hi\nmaxPrice: ${v}\n`, 'job.yaml'),
      (e: C0Error) => e.code === 'JOB_FILE_INVALID' && e.message === 'job.yaml: maxPrice: expected a price like "0.01 USD" (quoted, with its currency) or {amount: "0.01", currency: USD}',
      v,
    );
  }
});
