import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { render } from '../../scripts/gen-protocol-docs.js';

const root = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', '..');

test('docs/protocol.md matches the record schemas (regenerate with gen-protocol-docs)', () => {
  assert.equal(readFileSync(join(root, 'docs', 'protocol.md'), 'utf8'), render(root));
});
