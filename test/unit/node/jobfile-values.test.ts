/**
 * Job file values that were taken otherwise than written (QA ffBuyerDay2): every refusal is JOB_FILE_INVALID naming
 * the file and the field, before anything is signed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseJobFileText } from '../../../src/node/jobfile.js';
import { refusal } from './refusal.js';

const base = 'workload: builtin.sha256\nmaxPrice: "0.01 USD"\n';

test('input and inputFile both: JOB_FILE_INVALID naming inputFile (before, inputFile won without a word); --input still replaces both', () => {
  const text = `${base}input: "x"\ninputFile: other.bin\n`;
  const e = refusal(() => parseJobFileText(text, 'job.yaml'));
  assert.equal(e.code, 'JOB_FILE_INVALID');
  assert.equal(e.field, 'inputFile');
  assert.match(e.message, /^job\.yaml: input and inputFile: give the input one way/);
  // each alone is taken (inputFile is not read in the console: files false)
  assert.equal(parseJobFileText(`${base}input: "x"\n`, 'job.yaml').input, Buffer.from('x').toString('base64'));
  const dir = mkdtempSync(join(tmpdir(), 'c0-jobfile-values-'));
  try {
    const given = join(dir, 'in.bin');
    writeFileSync(given, 'from --input');
    assert.equal(parseJobFileText(text, 'job.yaml', { input: given }).input, Buffer.from('from --input').toString('base64'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a number as params is sent as the decimal text the file writes, digit for digit; other number notations are refused (quote them)', () => {
  const params = (v: string) => parseJobFileText(`${base}input: "x"\nparams: ${v}\n`, 'job.yaml').params;
  assert.equal(params('100000'), '100000');
  assert.equal(params('123456789012345678901234567890'), '123456789012345678901234567890');
  assert.equal(params('1.50'), '1.50');
  assert.equal(params('-5   # a comment'), '-5');
  assert.equal(params('"0x1F"'), '0x1F', 'quoted: the text as it is');
  for (const v of ['0x1F', '1e3', '0o17', '+5']) {
    const e = refusal(() => parseJobFileText(`${base}input: "x"\nparams: ${v}\n`, 'job.yaml'));
    assert.equal(e.code, 'JOB_FILE_INVALID', v);
    assert.equal(e.field, 'params');
    assert.match(e.message, /^job\.yaml: params: .* quote what the workload should get/);
  }
});

test("the job record's limits are JOB_FILE_INVALID naming the file and the key: allowlist entries, an empty allowlist, a long params, a timeout past a record's integers", () => {
  for (const [extra, field, why] of [
    ['requirements: { allowlist: [bob] }', 'requirements.allowlist[0]', /did:key/],
    ['requirements: { allowlist: [] }', 'requirements.allowlist', /empty allowlist/],
    [`params: "${'a'.repeat(4097)}"`, 'params', /longer than 4096 characters/],
    ['timeout: 99999999999999999999h', 'timeout', /more than a job record holds/],
  ] as const) {
    const e = refusal(() => parseJobFileText(`${base}input: "x"\n${extra}\n`, 'job.yaml'));
    assert.equal(e.code, 'JOB_FILE_INVALID', extra);
    assert.equal(e.field, field);
    assert.ok(e.message.startsWith(`job.yaml: ${field}: `), e.message);
    assert.match(e.message, why);
  }
  // at the limits: taken
  assert.equal((parseJobFileText(`${base}input: "x"\nparams: "${'a'.repeat(4096)}"\n`, 'job.yaml').params as string).length, 4096);
});

test('params given by an alias is refused (its source is the anchor’s name: `*5` after `&5 60000` was sent as "5"); a long number is caught by the record limit, naming the file (review s56)', () => {
  const aliased = `workload: builtin.sha256\nmaxPrice: "0.01 USD"\ndeadline: &5 60000\ninput: "x"\nparams: *5\n`;
  const e = refusal(() => parseJobFileText(aliased, 'job.yaml'));
  assert.equal(e.code, 'JOB_FILE_INVALID');
  assert.equal(e.field, 'params');
  assert.match(e.message, /an alias \(\*5\) is not taken for params/);
  const long = refusal(() => parseJobFileText(`${base}input: "x"\nparams: 1.${'0'.repeat(5000)}\n`, 'job.yaml'));
  assert.equal(long.code, 'JOB_FILE_INVALID');
  assert.match(long.message, /^job\.yaml: params: longer than 4096 characters \(5002\)/);
});

test("an unknown key in a job file is hinted from the job file's keys, never the node config's (review s57)", () => {
  const at = (extra: string) => refusal(() => parseJobFileText(`${base}${extra}`, 'job.yaml')).message;
  assert.match(at('dedline: 60s\n'), /Unrecognized key: "dedline" \("dedline": did you mean "deadline"\?\)/);
  // `provider` is a key of the node's config, not of a job file: no "did you mean provider?" (nor "market" for markets)
  assert.doesNotMatch(at('provider: did:key:z6Mk\n'), /did you mean/);
  assert.doesNotMatch(at('markets: [eu]\n'), /did you mean "market"/);
});
