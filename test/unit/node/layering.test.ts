/**
 * Module layering: the daemon and its libraries never depend on the CLI (only the CLI reads argv, env, files):
 * no source file outside src/cli imports from src/cli. The console's job-file parsing, once
 * imported from src/cli/jobfile.ts, lives in src/node/jobfile.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

// compiled to dist/test/unit/node/: the sources are four levels up, under src/
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

test('no module outside src/cli imports from src/cli', () => {
  const cli = join(SRC, 'cli') + sep;
  const offenders: string[] = [];
  for (const f of sources(SRC)) {
    if (f.startsWith(cli)) continue;
    for (const m of readFileSync(f, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'(\.[^']+)'/g)) {
      if (resolve(dirname(f), m[1]!).startsWith(cli)) offenders.push(`${relative(SRC, f)} → ${m[1]}`);
    }
  }
  assert.ok(sources(SRC).length > 100, 'the sources were found');
  assert.deepEqual(offenders, []);
});
