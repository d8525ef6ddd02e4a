/**
 * docs/protocol.md is the wire contract another implementation codes against.
 * Besides "the file is what the generator writes", these tests check
 * properties of the text itself, so a generator that corrupts its own output
 * (issue #11: `$` + backtick in a replacement string) cannot pass.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { render } from '../../scripts/gen-protocol-docs.js';
import type { Field, Schema } from '../../src/records/schema.js';
import { CBOR_ERR } from '../../src/records/cbor.js';
import { seal } from '../../src/records/envelope.js';
import { SCHEMAS, T } from '../../src/records/kinds.js';
import { BUYER, PROVIDER, assertCode, provider, records } from './records/fixtures.js';

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');
const doc = readFileSync(join(root, 'docs', 'protocol.md'), 'utf8');

function count(hay: string, needle: string): number {
  let n = 0;
  for (let i = hay.indexOf(needle); i !== -1; i = hay.indexOf(needle, i + needle.length)) n++;
  return n;
}

/** Every field of a schema as the table names it, with the field and whether an optional ancestor holds it. */
function fields(schema: Schema): Array<{ name: string; f: Field; underOptional: boolean }> {
  const out: Array<{ name: string; f: Field; underOptional: boolean }> = [];
  const walk = (fs: Schema, prefix: string, underOptional: boolean) => {
    for (const [k, f] of Object.entries(fs)) {
      const name = prefix + k;
      out.push({ name, f, underOptional });
      if (f.t === 'object') walk(f.fields, name + '.', underOptional || !!f.optional);
      if (f.t === 'array' && f.of.t === 'object') walk(f.of.fields, name + '[].', underOptional || !!f.optional);
    }
  };
  walk(schema, '', false);
  return out;
}

/** The table rows of one record kind's section. */
function kindSection(type: string): string {
  const head = `### \`${type}\``;
  assert.equal(count(doc, head), 1, `one section for ${type}`);
  const start = doc.indexOf(head);
  const next = doc.indexOf('\n### ', start + head.length);
  const endH2 = doc.indexOf('\n## ', start + head.length);
  const ends = [next, endH2].filter((i) => i !== -1);
  return doc.slice(start, ends.length ? Math.min(...ends) : undefined);
}

test('docs/protocol.md matches the record schemas (regenerate with gen-protocol-docs)', () => {
  assert.equal(doc, render(root));
});

test('docs/protocol.md has exactly one title and one of each numbered section', () => {
  assert.equal(doc.match(/^# /gm)?.length, 1);
  const h2 = doc.match(/^## .*$/gm) ?? [];
  assert.equal(new Set(h2).size, h2.length, `repeated sections: ${h2.join(' | ')}`);
});

test('docs/protocol.md keeps no template placeholders', () => {
  assert.doesNotMatch(doc, /\{\{[^}]*\}\}/);
});

test('every schema field appears exactly once in its kind table, with its regex verbatim', () => {
  for (const [type, schema] of Object.entries(SCHEMAS)) {
    const section = kindSection(type);
    const rows = section.split('\n').filter((l) => l.startsWith('| `'));
    const all = fields(schema);
    assert.equal(rows.length, all.length, `${type}: one row per field`);
    for (const { name, f, underOptional } of all) {
      const mine = rows.filter((r) => r.startsWith(`| \`${name}\` |`));
      assert.equal(mine.length, 1, `${type}.${name} appears once`);
      const row = mine[0]!;
      const cells = row.split(' | ');
      const required = cells[2]!;
      if (f.optional) assert.equal(required, 'no', `${type}.${name}`);
      else if (underOptional) assert.match(required, /^yes \((when `[^`]+` is present|in every `[^`]+` entry)\)$/, `${type}.${name}`);
      else assert.equal(required, 'yes', `${type}.${name}`);
      const re = f.t === 'text' ? f.re : f.t === 'array' && f.of.t === 'text' ? f.of.re : undefined;
      if (f.t === 'text' && re) assert.ok(row.includes('matches `' + re.source + '`'), `${type}.${name} renders ${re.source} verbatim`);
    }
  }
});

test('fields required inside an optional parent say so (issue #11 examples)', () => {
  const want: Array<[string, string]> = [
    ['c0mpute.advert/1', 'hardware.gpus[].model'],
    ['c0mpute.advert/1', 'prices[].unit'],
    ['c0mpute.job/1', 'requirements.gpu.count'],
    ['c0mpute.receipt/1', 'failure.code'],
  ];
  for (const [type, name] of want) {
    const row = kindSection(type)
      .split('\n')
      .find((l) => l.startsWith(`| \`${name}\` |`));
    assert.ok(row, `${type} ${name}`);
    assert.match(row.split(' | ')[2]!, /^yes \(/, `${type} ${name}: ${row}`);
  }
});

test('§1 lists every code the CBOR codec can throw', () => {
  const src = readFileSync(join(root, 'src', 'records', 'cbor.ts'), 'utf8');
  const used = new Set<string>();
  for (const m of src.matchAll(/CBOR_ERR\.([A-Z_0-9]+)/g)) {
    const code = (CBOR_ERR as Record<string, string>)[m[1]!];
    assert.ok(code, `CBOR_ERR.${m[1]} exists`);
    used.add(code);
  }
  for (const m of src.matchAll(/'(CBOR_[A-Z_0-9]+)'/g)) used.add(m[1]!);
  assert.ok(used.size >= 15);
  const s1 = doc.slice(doc.indexOf('## 1.'), doc.indexOf('## 2.'));
  for (const code of used) assert.ok(s1.includes('`' + code + '`'), `${code} listed in §1`);
});

test('the 2^53 bound of uint and time fields and its code are documented', () => {
  const s1 = doc.slice(doc.indexOf('## 1.'), doc.indexOf('## 2.'));
  assert.ok(s1.includes('`RECORD_INTEGER_RANGE`'));
  assert.ok(s1.includes('2^53 − 1'));
});

test('the unit of a text field\'s "≤ N chars" is documented, and is what the schema counts (UTF-16 code units)', () => {
  const s4 = doc.slice(doc.indexOf('## 4.'), doc.indexOf('## 5.'));
  assert.ok(s4.includes('"≤ N chars" counts **UTF-16 code units**'), 'section 4 names the unit');
  const failed = (message: string) => ({ ...records.receipt(), buyer: BUYER, provider: PROVIDER, status: 'failed' as const, outputHash: undefined, outputSize: undefined, failure: { code: 'EXEC_FAILED', message } });
  const emoji = '\u{1F600}';
  assert.doesNotThrow(() => seal(T.receipt, failed(emoji.repeat(512)), provider), '512 emoji are 1024 units');
  assertCode(() => seal(T.receipt, failed(emoji.repeat(513)), provider), 'RECORD_FIELD_INVALID', '513 emoji are 1026 units');
  assert.doesNotThrow(() => seal(T.receipt, failed('é'.repeat(1024)), provider), '1024 × é are 1024 units (2048 bytes)');
});
