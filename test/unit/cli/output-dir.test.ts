/**
 * `outputDir` (src/cli/context.ts), which every `--out DIR` (`market export`, `batch run`, …) goes through: the missing
 * components are made one by one. Node's `mkdirSync(dir, { recursive: true })` retries forever where mkdir answers
 * ENOENT under a parent that exists (/proc): `market export --out /proc/c0export` hung at a third of a core. Now it is
 * OUTPUT_UNWRITABLE naming the path.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outputDir } from '../../../src/cli/context.js';
import { C0Error } from '../../../src/errors.js';

const contextUrl = new URL('../../../src/cli/context.js', import.meta.url).href;

function withDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'c0-output-dir-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const code = (fn: () => void): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (e) {
    assert.ok(e instanceof C0Error, String(e));
    return e.code;
  }
};

describe('outputDir', () => {
  it('makes a directory and its missing parents, and takes one that exists', () => {
    withDir((dir) => {
      const d = join(dir, 'a', 'b', 'c');
      outputDir(d);
      assert.ok(statSync(d).isDirectory());
      outputDir(d);
      outputDir(dir);
      outputDir(join(d, '..', 'c2', '.', 'd'));
      assert.ok(statSync(join(dir, 'a', 'b', 'c2', 'd')).isDirectory());
    });
  });

  it('a file in the way (itself or a parent) is OUTPUT_UNWRITABLE', () => {
    withDir((dir) => {
      writeFileSync(join(dir, 'f'), 'x');
      assert.equal(code(() => outputDir(join(dir, 'f'))), 'OUTPUT_UNWRITABLE');
      assert.equal(code(() => outputDir(join(dir, 'f', 'sub'))), 'OUTPUT_UNWRITABLE');
      assert.equal(existsSync(join(dir, 'f', 'sub')), false);
    });
  });

  // in a child, so the old endless loop fails the test (killed at the give-up timeout) rather than hanging the run
  it('a directory under /proc is OUTPUT_UNWRITABLE naming it, not an endless loop', { skip: !existsSync('/proc/self') }, () => {
    const script = `import(${JSON.stringify(contextUrl)}).then(({ outputDir }) => { try { outputDir('/proc/c0export/x'); console.log('made'); } catch (e) { console.log(e.code, e.message); } });`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.signal, null, 'the child ended by itself');
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^OUTPUT_UNWRITABLE .*\/proc\/c0export/);
  });
});
