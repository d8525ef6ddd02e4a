/**
 * The daemon's own files (src/node/data-files.ts): a data directory the node may not write is DATA_DIR_UNWRITABLE
 * with the OS reason (exit 3), before the network starts, not a bug (exit 70); the API token's write leaves no
 * temporary file behind. (A full disk: test/e2e/store-disk-full.test.ts.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { C0Error } from '../../../src/errors.js';
import { checkDataDirWritable } from '../../../src/node/data-files.js';
import { ensureToken } from '../../../src/node/api.js';

/** As root (whom no mode refuses): run `call` (over the module `m` at `mod`) as nobody in a child process; its error. */
function asOtherUser(mod: string, call: string): { code?: string; message?: string } {
  const url = new URL(mod, import.meta.url).href;
  const js = `import(${JSON.stringify(url)}).then((m) => { try { ${call}; console.log('{}'); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); } });`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', js], { uid: 65534, gid: 65534, encoding: 'utf8' });
  return JSON.parse(r.stdout.trim() || '{}') as { code?: string; message?: string };
}

function refused(fn: () => void): { code?: string; message?: string } {
  try {
    fn();
    return {};
  } catch (e) {
    if (!(e instanceof C0Error)) throw e;
    return { code: e.code, message: e.message };
  }
}

test('a data directory the node may not write: DATA_DIR_UNWRITABLE "permission denied" for the start check and the API token, no temporary file left', () => {
  const root = mkdtempSync(join(tmpdir(), 'c0-datadir-'));
  try {
    chmodSync(root, 0o755);
    const dir = join(root, 'node');
    mkdirSync(dir, { mode: 0o755 });
    const root0 = process.getuid?.() === 0;
    const check = root0 ? asOtherUser('../../../src/node/data-files.js', `m.checkDataDirWritable(${JSON.stringify(dir)})`) : (chmodSync(dir, 0o555), refused(() => checkDataDirWritable(dir)));
    const token = root0 ? asOtherUser('../../../src/node/api.js', `m.ensureToken(${JSON.stringify(dir)})`) : refused(() => ensureToken(dir));
    chmodSync(dir, 0o755);
    for (const r of [check, token]) {
      assert.equal(r.code, 'DATA_DIR_UNWRITABLE', r.message);
      assert.match(r.message!, /permission denied \(EACCES/);
    }
    assert.match(token.message!, /the API token/);
    assert.deepEqual(readdirSync(dir), [], 'nothing left behind');
    // a writable one passes, and leaves nothing either
    checkDataDirWritable(dir);
    assert.deepEqual(readdirSync(dir), []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
