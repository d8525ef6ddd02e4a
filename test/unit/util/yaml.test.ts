/**
 * Operator files take plain YAML (src/util/yaml.ts): a YAML 1.1 tag (`!!binary`, `!!set`, `!!omap`, `!!timestamp`) or
 * an unknown one is an error naming where it is, and nothing is printed. Before, a config's `buyer: !!binary …` was
 * refused with a hundred Buffer methods named as unknown keys, and `!foo` printed Node's YAMLWarning on stderr and
 * was read as a string. Each file's loader wraps the error in its own code (config: CONFIG_INVALID with the field).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parsePlainYaml, YamlValueError } from '../../../src/util/yaml.js';
import { loadConfig } from '../../../src/node/config.js';
import { parseJobFileText } from '../../../src/node/jobfile.js';
import { C0Error } from '../../../src/errors.js';

test('plain YAML parses as before: maps, lists, scalars; a date-like or tag-like string stays a string', () => {
  assert.deepEqual(parsePlainYaml('a: 1\nb: [x, "y", true, null]\nc: { d: 2001-12-14 }\ne: "!!binary"\nf: !!str 5\n'), {
    a: 1,
    b: ['x', 'y', true, null],
    c: { d: '2001-12-14' },
    e: '!!binary',
    f: '5',
  });
  assert.equal(parsePlainYaml(''), null);
});

test('a tagged value or an unknown tag is a YamlValueError naming where it is; nothing goes to stderr', () => {
  const warned: unknown[] = [];
  const onWarning = (w: unknown) => warned.push(w);
  process.on('warning', onWarning);
  try {
    for (const [text, path, what] of [
      ['buyer: !!binary aGVsbG8=\n', 'buyer', /bytes \(!!binary\)/],
      ['a:\n  - x\n  - !!set { y }\n', 'a[1]', /a set/],
      ['a: { b: !!omap [ { x: 1 } ] }\n', 'a.b', /ordered map/],
      ['when: !!timestamp 2001-12-14\n', 'when', /timestamp/],
      ['a: !foo bar\n', '', /Unresolved tag: !foo.*no tags/],
    ] as const) {
      let e: unknown;
      try {
        parsePlainYaml(text);
      } catch (x) {
        e = x;
      }
      assert.ok(e instanceof YamlValueError, `${text}: ${String(e)}`);
      assert.equal(e.path, path, text);
      assert.match(e.message, what);
    }
  } finally {
    process.off('warning', onWarning);
  }
  assert.deepEqual(warned, [], 'no YAMLWarning emitted');
  // syntax errors are still the parser's own (each loader's *_NOT_YAML)
  assert.throws(() => parsePlainYaml('a: 1\na: 2\n'), (e: Error) => !(e instanceof YamlValueError) && /unique/i.test(e.message));
  assert.throws(() => parsePlainYaml('a: [1\n'), (e: Error) => !(e instanceof YamlValueError));
});

test('in a config: CONFIG_INVALID with the field (not a hundred Buffer methods); in a job file: its own code', () => {
  const dir = mkdtempSync(join(tmpdir(), 'c0-yaml-'));
  try {
    const p = join(dir, 'config.yaml');
    writeFileSync(p, 'buyer: !!binary aGVsbG8=\n');
    let e: unknown;
    try {
      loadConfig({ file: p });
    } catch (x) {
      e = x;
    }
    assert.ok(e instanceof C0Error);
    assert.equal(e.code, 'CONFIG_INVALID');
    assert.equal(e.field, 'buyer');
    assert.ok(e.message.length < 300, e.message);
    assert.doesNotMatch(e.message, /readUInt|toJSON/);
    writeFileSync(p, 'log: { level: !debug info }\n');
    assert.throws(() => loadConfig({ file: p }), { code: 'CONFIG_INVALID' });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.throws(() => parseJobFileText('workload: !!binary aGVsbG8=\n', 'job.yaml'), { code: 'JOB_FILE_NOT_YAML' });
});
