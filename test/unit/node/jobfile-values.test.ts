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
