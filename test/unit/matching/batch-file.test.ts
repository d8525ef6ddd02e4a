/**
 * batch.yaml (docs/matching.md "Batch plans"): a good file becomes the
 * planner's batch; every bad input is a coded error naming the field.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { readBatchFile, readBatchRunFile } from '../../../src/cli/batchfile.js';
import { batchLines, lineSpec } from '../../../src/node/batch-client.js';
import { parseBatch } from '../../../src/matching/batch-input.js';

const dir = mkdtempSync(join(tmpdir(), 'c0-batchfile-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let n = 0;
function file(text: string): string {
  const p = join(dir, `b${n++}.yaml`);
  writeFileSync(p, text);
  return p;
}

const coded = (code: string, field?: string) => (e: unknown) => {
  assert.ok(e instanceof C0Error, String(e));
  assert.equal(e.code, code, e.message);
  if (field !== undefined) assert.equal(e.field, field, e.message);
  return true;
};

test('a good batch file: window, lines, summed units, lineTime derived from summed seconds, maxPrice as text', () => {
  const b = readBatchFile(
    file(`window: 10m
workloads:
  - workload: builtin.sha256
    lines: 100
    units: { second: 250 }
    maxPrice: "0.05 USD"
  - workload: infer.llm
    lines: 4
    lineTime: 30s
    maxPrice: { amount: "1", currency: EUR }
    requirements: { tier: standard }
`),
  );
  assert.deepEqual(b, {
    windowMs: 600_000,
    workloads: [
      // timeoutMs: what each line's job carries, its deadline (2 min) when the file gives no timeout
      { workload: 'builtin.sha256', lines: 100, units: { second: '250' }, lineMs: 2500, timeoutMs: 120_000, maxPrice: { amount: '0.05', currency: 'USD' } },
      { workload: 'infer.llm', lines: 4, units: {}, lineMs: 30_000, timeoutMs: 120_000, maxPrice: { amount: '1', currency: 'EUR' }, requirements: { tier: 'standard' } },
    ],
  });
  // no lineTime and no seconds: one line per slot in the window
  assert.equal(readBatchFile(file('windowMs: 5000\nworkloads: [{ workload: a.b, lines: 2, maxPrice: "1 USD" }]\n')).workloads[0]!.lineMs, 5000);
});

test('bad batch files: coded errors naming the field', () => {
  assert.throws(() => readBatchFile(join(dir, 'missing.yaml')), coded('BATCH_FILE_UNREADABLE'));
  assert.throws(() => readBatchFile(file('window: [unclosed\n')), coded('BATCH_FILE_NOT_YAML'));
  assert.throws(() => readBatchFile(file('window: 1m\nworkloads: [{ workload: a.b, maxPrice: "1 USD" }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0.lines'));
  assert.throws(() => readBatchFile(file('window: 1m\nworkloads: [{ workload: a.b, lines: 0, maxPrice: "1 USD" }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0.lines'));
  assert.throws(() => readBatchFile(file('window: 1m\nworkloads: [{ workload: a.b, lines: 2.5, maxPrice: "1 USD" }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0.lines'));
  assert.throws(() => readBatchFile(file('workloads: [{ workload: a.b, lines: 2, maxPrice: "1 USD" }]\n')), coded('BATCH_FIELD_INVALID', 'window'));
  assert.throws(() => readBatchFile(file('window: 1m\nwindowMs: 60000\nworkloads: [{ workload: a.b, lines: 2, maxPrice: "1 USD" }]\n')), coded('BATCH_FIELD_INVALID', 'window'));
  assert.throws(() => readBatchFile(file('window: soon\nworkloads: [{ workload: a.b, lines: 2, maxPrice: "1 USD" }]\n')), coded('BATCH_FIELD_INVALID', 'window'));
  assert.throws(() => readBatchFile(file('window: 1m\nworkloads: [{ workload: a.b, lines: 2, maxPrice: "cheap" }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0.maxPrice'));
  assert.throws(() => readBatchFile(file('window: 1m\nworkloads: [{ workload: a.b, lines: 2, maxPrice: "1 USD", units: { second: "-3" } }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0.units.second'));
  assert.throws(() => readBatchFile(file('window: 1m\nworkloads: [{ workload: "Not A Workload", lines: 2, maxPrice: "1 USD" }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0.workload'));
  assert.throws(() => readBatchFile(file('window: 1m\nworkloads: [{ workload: a.b, lines: 2, maxPrice: "1 USD", requirements: { tier: gold } }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0.requirements.tier'));
  assert.throws(() => readBatchFile(file('window: 1m\nworkloads: [{ workload: a.b, lines: 2, maxPrice: "1 USD", colour: red }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0'));
  assert.throws(() => readBatchFile(file('window: 1m\nworkloads: []\n')), coded('BATCH_FIELD_INVALID', 'workloads'));
  assert.throws(
    () => readBatchFile(file('window: 1m\nworkloads: [{ workload: a.b, lines: 2, maxPrice: "1 USD" }, { workload: a.b, lines: 1, maxPrice: "1 USD" }]\n')),
    coded('BATCH_FIELD_INVALID', 'workloads.1.workload'),
  );
  // a line longer than the window: the field is wrong (QA qaMatch F4: it was BATCH_EXCEEDS_CAPACITY "… has no lineTime")
  assert.throws(() => readBatchFile(file('window: 10s\nworkloads: [{ workload: a.b, lines: 2, lineTime: 20s, maxPrice: "1 USD" }]\n')), (e: unknown) => coded('BATCH_FIELD_INVALID', 'workloads.0.lineTime')(e) && /lineTime \(20 s\) is longer than the window \(10 s\)/.test((e as Error).message));
  assert.throws(() => readBatchFile(file('window: 10s\nworkloads: [{ workload: a.b, lines: 2, units: { second: 50 }, maxPrice: "1 USD" }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0.units.second'));
  assert.equal(readBatchFile(file('window: 10s\nworkloads: [{ workload: a.b, lines: 2, lineTime: 10s, maxPrice: "1 USD" }]\n')).workloads[0]!.lineMs, 10_000, 'as long as the window: one line a slot');
  assert.throws(() => readBatchFile(file('window: 0s\nworkloads: [{ workload: a.b, lines: 2, lineTime: 10s, maxPrice: "1 USD" }]\n')), coded('BATCH_FIELD_INVALID', 'windowMs'));
  assert.throws(() => parseBatch({ windowMs: 1000, workloads: [{ workload: 'a.b', lines: 1, units: {}, lineMs: 1001, maxPrice: { amount: '1', currency: 'USD' } }] }), coded('BATCH_FIELD_INVALID', 'workloads.0.lineMs'));
  // the API body is checked by the same schema
  assert.throws(() => parseBatch({ windowMs: 1000, workloads: [{ workload: 'a.b', lines: 1, units: {}, lineMs: 0, maxPrice: { amount: '1', currency: 'USD' } }] }), coded('BATCH_FIELD_INVALID', 'workloads.0.lineMs'));
  assert.throws(() => parseBatch(undefined), coded('BATCH_FIELD_INVALID', 'windowMs'));
});

test('batch run lines: generated inputs and params with {n} / {n:W}, input files under the input dir (checked before anything runs), coded errors', () => {
  const f = file('window: 1m\nworkloads:\n  - { workload: builtin.sha256, lines: 12, maxPrice: "0.01 USD", params: "{n}00", inputText: "line {n:3}", deadline: 30s }\n  - { workload: builtin.primes, lines: 2, maxPrice: "0.01 USD", input: "in-{n}.txt" }\n');
  const { batch, run } = readBatchRunFile(f);
  assert.equal(batch.workloads.length, 2);
  assert.deepEqual(run[0], { workload: 'builtin.sha256', lines: 12, params: '{n}00', inputText: 'line {n:3}', deadlineMs: 30_000 });
  assert.throws(() => batchLines(batch, run, dir), coded('INPUT_UNREADABLE', 'workloads.1.input'));
  writeFileSync(join(dir, 'in-1.txt'), 'one');
  writeFileSync(join(dir, 'in-2.txt'), 'two');
  const lines = batchLines(batch, run, dir);
  assert.equal(lines.length, 14);
  assert.deepEqual([lines[0]!.id, lines[8]!.id, lines[11]!.id, lines[13]!.id], ['builtin.sha256-01', 'builtin.sha256-09', 'builtin.sha256-12', 'builtin.primes-2']);
  assert.equal(lines[8]!.inputText, 'line 009');
  assert.equal(lines[8]!.params, '900');
  const spec = lineSpec(lines[13]!, 'did:key:zP');
  assert.deepEqual(spec.order, { designated: 'did:key:zP' });
  assert.equal(spec.requirements, undefined);
  assert.equal(Buffer.from(spec.input as string, 'base64').toString(), 'two');
  assert.equal(spec.deadlineMs, 120_000);
  // batch plan reads the same file and ignores what the lines run
  assert.deepEqual(readBatchFile(f), batch);
  assert.throws(() => readBatchRunFile(file('window: 1m\nworkloads: [{ workload: a.b, lines: 1, maxPrice: "1 USD", input: x, inputText: y }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0.input'));
  assert.throws(() => readBatchRunFile(file('window: 1m\nworkloads: [{ workload: a.b, lines: 1, maxPrice: "1 USD", input: ../x }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0.input'));
  assert.throws(() => readBatchRunFile(file('window: 1m\nworkloads: [{ workload: a.b, lines: 1, maxPrice: "1 USD", deadline: soon }]\n')), coded('BATCH_FIELD_INVALID', 'workloads.0.deadline'));
});
