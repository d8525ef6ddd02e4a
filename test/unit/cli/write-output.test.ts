/**
 * `writeOutput` (src/cli/context.ts), which `c0mpute ledger fetch FILE` and every `--out FILE` write through: the
 * operator's existing file is replaced only by a whole new one. A write that fails midway (here the file-size limit,
 * `ulimit -f`, which fails a write with EFBIG exactly as a full disk fails it with ENOSPC) leaves the old file as it
 * was and no temporary file behind, and the command fails with OUTPUT_UNWRITABLE.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, fstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkWritable, writeOutput } from '../../../src/cli/context.js';
import { C0Error } from '../../../src/errors.js';

const contextUrl = new URL('../../../src/cli/context.js', import.meta.url).href;

function withDir(fn: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'c0-write-output-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Run writeOutput(path, `bytes` bytes) in a child whose files may not grow past `limitKiB` KiB; its stdout. */
function writeUnderLimit(path: string, bytes: number, limitKiB: number): string {
  const script = `import(${JSON.stringify(contextUrl)}).then(({ writeOutput }) => { try { writeOutput(${JSON.stringify(path)}, Buffer.alloc(${bytes}, 7)); console.log('ok'); } catch (e) { console.log('error', e.code); } });`;
  const r = spawnSync('bash', ['-c', `ulimit -f ${limitKiB} && exec "${process.execPath}" --input-type=module -e "$0"`, script], { encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

function fdOpen(fd: number): boolean {
  try {
    fstatSync(fd);
    return true;
  } catch {
    return false;
  }
}

describe('writeOutput', () => {
  it('leaves the existing file untouched, and no temporary file, when the write fails midway', { skip: process.platform === 'win32' }, () => {
    withDir((dir) => {
      const path = join(dir, 'ledger.c0l');
      const old = Buffer.from('the operator’s previous ledger file\n');
      writeFileSync(path, old);
      assert.equal(writeUnderLimit(path, 512 * 1024, 64), 'error OUTPUT_UNWRITABLE');
      assert.deepEqual(readFileSync(path), old, 'the old file is as it was');
      assert.deepEqual(readdirSync(dir), ['ledger.c0l'], 'no temporary file is left');
    });
  });

  it('replaces the file whole on success, keeping its permissions', { skip: process.platform === 'win32' }, () => {
    withDir((dir) => {
      const path = join(dir, 'out.bin');
      writeFileSync(path, 'old, and longer than what replaces it');
      chmodSync(path, 0o600);
      writeOutput(path, 'new');
      assert.equal(readFileSync(path, 'utf8'), 'new');
      assert.equal(statSync(path).mode & 0o777, 0o600);
      writeOutput(join(dir, 'fresh.bin'), new Uint8Array([1, 2, 3]));
      assert.deepEqual([...readFileSync(join(dir, 'fresh.bin'))], [1, 2, 3]);
      assert.deepEqual(readdirSync(dir).sort(), ['fresh.bin', 'out.bin']);
    });
  });

  it('writes in place a file the caller may write in a directory it may not (no temporary file can go beside it)', { skip: process.platform === 'win32' }, () => {
    withDir((dir) => {
      const path = join(dir, 'result.out');
      writeFileSync(path, 'old');
      chmodSync(path, 0o666);
      if (process.getuid?.() === 0) {
        // root writes any directory: the write runs as `nobody` in a directory only root may write
        chmodSync(dir, 0o755);
        const script = `import(${JSON.stringify(contextUrl)}).then(({ writeOutput }) => { try { writeOutput(${JSON.stringify(path)}, 'new'); console.log('ok'); } catch (e) { console.log('error', e.code, e.message); } });`;
        const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000, uid: 65534, gid: 65534 });
        assert.equal(r.status, 0, r.stderr);
        assert.equal(r.stdout.trim(), 'ok');
      } else {
        chmodSync(dir, 0o555);
        try {
          writeOutput(path, 'new');
        } finally {
          chmodSync(dir, 0o755);
        }
      }
      assert.equal(readFileSync(path, 'utf8'), 'new');
      assert.deepEqual(readdirSync(dir), ['result.out']);
    });
  });

  it('writes in place another user’s file in a sticky directory, which a rename may not replace', { skip: process.platform === 'win32' || process.getuid?.() !== 0 }, () => {
    withDir((dir) => {
      chmodSync(dir, 0o1777); // like /tmp: anyone may create, only a file's owner may rename over it
      const path = join(dir, 'shared.out');
      writeFileSync(path, 'old');
      chmodSync(path, 0o666); // root's, writable by anyone
      const script = `import(${JSON.stringify(contextUrl)}).then(({ writeOutput }) => { try { writeOutput(${JSON.stringify(path)}, 'new'); console.log('ok'); } catch (e) { console.log('error', e.code, e.message); } });`;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000, uid: 65534, gid: 65534 });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout.trim(), 'ok');
      assert.equal(readFileSync(path, 'utf8'), 'new');
      assert.deepEqual(readdirSync(dir), ['shared.out'], 'no temporary file is left');
    });
  });

  it('refuses a loop of symbolic links with OUTPUT_UNWRITABLE, saying so', { skip: process.platform === 'win32' }, () => {
    withDir((dir) => {
      symlinkSync('loop-b', join(dir, 'loop-a'));
      symlinkSync('loop-a', join(dir, 'loop-b'));
      assert.throws(
        () => writeOutput(join(dir, 'loop-a'), 'x'),
        (e: unknown) => e instanceof C0Error && e.code === 'OUTPUT_UNWRITABLE' && /a loop of symbolic links/.test(e.message),
      );
    });
  });

  it('refuses /dev/fd/N for a descriptor that is not open, saying so, with OUTPUT_UNWRITABLE', { skip: process.platform === 'win32' }, () => {
    let fd = 900;
    while (fdOpen(fd)) fd++;
    assert.throws(
      () => writeOutput(`/dev/fd/${fd}`, 'x'),
      (e: unknown) => e instanceof C0Error && e.code === 'OUTPUT_UNWRITABLE' && /a descriptor that is not open for writing/.test(e.message),
    );
  });

  it('a dangling symbolic link into a missing directory is refused before the work, naming the link\'s target; one into a directory that is there is written through', { skip: process.platform === 'win32' }, () => {
    withDir((dir) => {
      const link = join(dir, 'latest.out');
      symlinkSync(join('gone', 'results.out'), link);
      const said = (e: unknown) => e instanceof C0Error && e.code === 'OUTPUT_UNWRITABLE' && e.message.includes(`it is a symbolic link to ${join('gone', 'results.out')}, whose directory does not exist`);
      assert.throws(() => checkWritable(link), said, 'before: passed, and the run paid for an output it could not write');
      assert.throws(() => writeOutput(link, 'x'), said, 'before: "the file system there takes no new file"');
      mkdirSync(join(dir, 'gone'));
      checkWritable(link);
      writeOutput(link, 'x');
      assert.equal(readFileSync(join(dir, 'gone', 'results.out'), 'utf8'), 'x');
      // a link read relative to a linked directory's real place, not as text (review s57): work/out -> sub/link,
      // sub -> real/deep, real/deep/link -> ../none/x: the file would go in real/none, which is not there, while
      // work/none is
      for (const d of ['work', 'work/none', 'real/deep']) mkdirSync(join(dir, d), { recursive: true });
      symlinkSync(join(dir, 'real', 'deep'), join(dir, 'work', 'sub'));
      symlinkSync(join('..', 'none', 'x'), join(dir, 'real', 'deep', 'link'));
      symlinkSync(join('sub', 'link'), join(dir, 'work', 'out'));
      assert.throws(() => checkWritable(join(dir, 'work', 'out')), (e: unknown) => e instanceof C0Error && /whose directory does not exist/.test(e.message));
    });
  });

  it('a path under /dev in a directory that is not there is refused before the work (review s57: passed, then "takes no new file")', { skip: process.platform !== 'linux' }, () => {
    assert.throws(() => checkWritable(`/dev/c0-none-${process.pid}/out`), (e: unknown) => e instanceof C0Error && e.code === 'OUTPUT_UNWRITABLE' && /its directory does not exist/.test(e.message));
    checkWritable('/dev/null');
  });

  it('a loop of symbolic links is refused before the work, as the write refuses it', { skip: process.platform === 'win32' }, () => {
    withDir((dir) => {
      symlinkSync('loop-b', join(dir, 'loop-a'));
      symlinkSync('loop-a', join(dir, 'loop-b'));
      assert.throws(() => checkWritable(join(dir, 'loop-a')), (e: unknown) => e instanceof C0Error && e.code === 'OUTPUT_UNWRITABLE' && /a loop of symbolic links/.test(e.message));
    });
  });

  it('refuses a missing directory with OUTPUT_UNWRITABLE', () => {
    withDir((dir) => {
      assert.throws(() => writeOutput(join(dir, 'nope', 'f'), 'x'), (e: unknown) => e instanceof C0Error && e.code === 'OUTPUT_UNWRITABLE');
    });
  });

  it('a directory that is there but takes no new file (/proc) is said as such, not as a missing directory (QA ffBuyerDay2)', { skip: process.platform !== 'linux' }, () => {
    const path = `/proc/c0-write-output-${process.pid}`;
    assert.throws(() => writeOutput(path, 'x'), (e: unknown) => e instanceof C0Error && e.code === 'OUTPUT_UNWRITABLE' && /the file system there takes no new file of that name \(ENOENT\)/.test(e.message) && !/its directory does not exist/.test(e.message));
  });
});
