/**
 * The default data directory never becomes relative: with `HOME=` set but empty (or relative) os.homedir() gives
 * that, and `.c0mpute` landed under whichever directory the command ran in. The home then comes from the password
 * database; with none there either it is DATA_DIR_INVALID saying to set HOME, C0MPUTE_HOME or --data-dir.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { defaultDataDir, homeDirectory } from '../../../src/cli/context.js';
import { C0Error } from '../../../src/errors.js';

describe('homeDirectory', () => {
  it('is $HOME when it is an absolute path', () => {
    assert.equal(homeDirectory(() => '/home/op', () => '/home/other'), '/home/op');
  });

  it("is the password database's home when $HOME is empty or relative", () => {
    assert.equal(homeDirectory(() => '', () => '/home/op'), '/home/op');
    assert.equal(homeDirectory(() => 'op', () => '/home/op'), '/home/op');
  });

  it('is DATA_DIR_INVALID when neither is absolute (or the user has no entry)', () => {
    for (const user of [() => '', () => 'rel', () => { throw new Error('ENOENT: no such file or directory, uv_os_get_passwd'); }]) {
      assert.throws(() => homeDirectory(() => '', user), (e: unknown) => e instanceof C0Error && e.code === 'DATA_DIR_INVALID' && /HOME is empty/.test(e.message) && /C0MPUTE_HOME or --data-dir/.test(e.message));
    }
  });

  it('defaultDataDir takes the home from it, for ~ in C0MPUTE_HOME too', () => {
    const home = () => homeDirectory(() => '', () => '/home/op');
    assert.equal(defaultDataDir({}, home), '/home/op/.c0mpute');
    assert.equal(defaultDataDir({ C0MPUTE_HOME: '~/x' }, home), '/home/op/x');
    assert.equal(defaultDataDir({ C0MPUTE_HOME: '/srv/c0' }, () => assert.fail('no home needed')), '/srv/c0');
  });

  it('HOME= in a real process: the default data dir is absolute, not ./.c0mpute', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'c0-home-'));
    try {
      const ctx = pathToFileURL(new URL('../../../src/cli/context.js', import.meta.url).pathname).href;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', `import { defaultDataDir } from '${ctx}'; try { console.log(defaultDataDir({})); } catch (e) { console.log(e.code); }`], {
        cwd,
        encoding: 'utf8',
        env: { ...process.env, HOME: '' },
      });
      const got = r.stdout.trim();
      const u = userInfo().homedir;
      assert.equal(got, isAbsolute(u) ? join(u, '.c0mpute') : 'DATA_DIR_INVALID', r.stderr);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
