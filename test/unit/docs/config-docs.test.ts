/** docs/config.md documents every key of the config schema, once, with the schema's own default. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { configKeys, renderDefault } from '../../../src/node/config-keys.js';

const doc = readFileSync(fileURLToPath(new URL('../../../../docs/config.md', import.meta.url)), 'utf8');

/** `| \`key\` | default | meaning |` rows of the "Every key" table, by key. */
function rows(): Map<string, [string, string]> {
  const m = new Map<string, [string, string]>();
  const section = doc.slice(doc.indexOf('## Every key'));
  for (const line of section.split('\n')) {
    const r = /^\| `([^`]+)` \| (.*?) \| (.*) \|$/.exec(line);
    if (!r) continue;
    assert.ok(!m.has(r[1]!), `${r[1]} is listed twice`);
    m.set(r[1]!, [r[2]!, r[3]!]);
  }
  return m;
}

describe('docs/config.md', () => {
  it('lists every schema key with its default and a meaning, and no key the schema lacks', () => {
    const keys = configKeys();
    assert.ok(keys.length > 50, 'the walker reads the schema');
    const doc = rows();
    for (const k of keys) {
      const row = doc.get(k.path);
      assert.ok(row, `docs/config.md does not document \`${k.path}\``);
      assert.equal(row[0], renderDefault(k), `default of ${k.path}`);
      assert.ok(row[1].trim().length > 3, `meaning of ${k.path}`);
    }
    const known = new Set(keys.map((k) => k.path));
    for (const p of doc.keys()) assert.ok(known.has(p), `docs/config.md documents \`${p}\`, which the schema does not have`);
  });
  it('config/default.yaml points to it', () => {
    const yaml = readFileSync(fileURLToPath(new URL('../../../../config/default.yaml', import.meta.url)), 'utf8');
    assert.match(yaml, /docs\/config\.md/);
  });
});
