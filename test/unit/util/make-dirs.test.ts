/**
 * makeDirs (src/util/make-dirs.ts), which every directory the node, the CLI and the devnet make with its parents goes
 * through. Node's `mkdirSync(dir, { recursive: true })` never returns where mkdir answers ENOENT under a parent that
 * exists (/proc): `--data-dir /proc/1/x init`, `overlay create --out /proc/1/x/k`, `devnet --dir /proc/1/x` spun at
 * most of a core forever. Now each is the caller's code naming the path; a file in the path says so.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { makeDirs } from '../../../src/util/make-dirs.js';
import { C0Error } from '../../../src/errors.js';

const helperUrl = new URL('../../../src/util/make-dirs.js', import.meta.url).href;
const o = { code: 'SOME_DIR_BAD', field: 'someDir', what: 'cannot use it' };

function withDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'c0-make-dirs-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const thrown = (fn: () => void): C0Error => {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof C0Error, String(e));
    return e;
  }
  assert.fail('no error');
};

describe('makeDirs', () => {
  it('makes a directory and its missing parents with the mode given, saying which, and takes one that exists', () => {
    withDir((dir) => {
      const d = join(dir, 'a', 'b', 'c');
      const made = makeDirs(d, { ...o, mode: 0o700 });
      assert.deepEqual(made, [join(dir, 'a'), join(dir, 'a', 'b'), d], 'the directories made, parents first');
      for (const p of made) assert.equal(statSync(p).mode & 0o777, 0o700, p);
      assert.deepEqual(makeDirs(d, o), []);
      assert.deepEqual(makeDirs(dir, o), []);
      assert.deepEqual(makeDirs(join(d, '..', 'c2', '.', 'd'), o), [join(dir, 'a', 'b', 'c2'), join(dir, 'a', 'b', 'c2', 'd')]);
      assert.ok(statSync(join(dir, 'a', 'b', 'c2', 'd')).isDirectory());
    });
  });

  it('a file in the way (itself or a parent) is the caller’s code and field, saying which is not a directory', () => {
    withDir((dir) => {
      const f = join(dir, 'f');
      writeFileSync(f, 'x');
      for (const d of [f, join(f, 'sub'), join(f, 'sub', 'deeper')]) {
        const e = thrown(() => makeDirs(d, o));
        assert.equal(e.code, 'SOME_DIR_BAD');
        assert.equal(e.field, 'someDir');
        assert.equal(e.message, `cannot use it: ${f} is a file, not a directory`);
      }
      assert.equal(existsSync(join(f, 'sub')), false);
    });
  });

  // in a child, so a return of the endless loop fails the test (killed at the timeout) rather than hanging the run
  it('a directory under /proc is the caller’s code naming it, promptly, not an endless loop', { skip: !existsSync('/proc/self') }, () => {
    const script = `import(${JSON.stringify(helperUrl)}).then(({ makeDirs }) => { try { makeDirs('/proc/1/x/y', { code: 'SOME_DIR_BAD', what: 'cannot use it' }); console.log('made'); } catch (e) { console.log(e.code, e.message); } });`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.signal, null, 'the child ended by itself');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'SOME_DIR_BAD cannot use it: cannot make /proc/1/x (its file system takes no new directories)');
  });

  it('a directory it may not write in is the caller’s code with the reason', { skip: process.getuid?.() === 0 }, () => {
    withDir((dir) => {
      const ro = join(dir, 'ro');
      makeDirs(ro, { ...o, mode: 0o500 });
      const e = thrown(() => makeDirs(join(ro, 'x'), o));
      assert.equal(e.code, 'SOME_DIR_BAD');
      assert.equal(e.message, `cannot use it: cannot make ${join(ro, 'x')}: permission denied`);
    });
  });
});
