/**
 * writeFileAtomic (src/util/atomic-file.ts), under `ledger fetch FILE`, every `--out FILE` and `run --output FILE`:
 * the temporary file a killed writer leaves beside the target is removed by the next write of that target, never one a
 * live writer is still filling.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STALE_TEMP_AGE_MS, writeFileAtomic } from '../../../src/util/atomic-file.js';
import { processStart } from '../../../src/node/daemon-info.js';

const atomicUrl = new URL('../../../src/util/atomic-file.js', import.meta.url).href;

async function withDir(fn: (dir: string) => Promise<void> | void): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'c0-atomic-file-'));
  try {
    await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A child that writes `path` with writeFileAtomic and, once the bytes are in its temporary file (at the fsync before the
 * rename), `then`: `kill` dies there by SIGKILL, as a crash or power cut would leave it; `hang` says `ready` and waits.
 */
function writerScript(path: string, then: 'kill' | 'hang'): string {
  const atFsync = then === 'kill' ? `process.kill(process.pid, 'SIGKILL')` : `console.log('ready'); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000)`;
  return `import fs from 'node:fs'; import { syncBuiltinESMExports } from 'node:module';
fs.fsyncSync = () => { ${atFsync}; };
syncBuiltinESMExports();
const { writeFileAtomic } = await import(${JSON.stringify(atomicUrl)});
writeFileAtomic(${JSON.stringify(path)}, Buffer.alloc(256 * 1024, 7));`;
}

const temps = (dir: string, name: string) => readdirSync(dir).filter((f) => f.startsWith(`.${name}.`));

describe('writeFileAtomic: temporary files left by a writer that died', { skip: process.platform === 'win32' }, () => {
  it('a write of the target removes the temporary file a SIGKILLed writer of that target left', async () => {
    await withDir((dir) => {
      const path = join(dir, 'out.bin');
      const crash = () => {
        const r = spawnSync(process.execPath, ['--input-type=module', '-e', writerScript(path, 'kill')], { encoding: 'utf8', timeout: 30_000 });
        assert.equal(r.signal, 'SIGKILL', r.stderr);
        return temps(dir, 'out.bin');
      };
      const [first] = crash();
      assert.ok(first, 'the killed writer left its temporary file');
      const second = crash();
      assert.equal(second.length, 1, 'crashes do not pile up: the next writer removed the first one’s');
      assert.notEqual(second[0], first);
      writeFileAtomic(join(dir, 'other.bin'), 'another target');
      assert.deepEqual(temps(dir, 'out.bin'), second, 'a write of another target leaves it');
      writeFileAtomic(path, 'new');
      assert.equal(readFileSync(path, 'utf8'), 'new');
      assert.deepEqual(readdirSync(dir).sort(), ['other.bin', 'out.bin'], 'the stale temporary file is gone');
    });
  });

  it('leaves the temporary file of a live writer of the same target, and removes it once that writer is gone', async () => {
    await withDir(async (dir) => {
      const path = join(dir, 'result.out');
      const child = spawn(process.execPath, ['--input-type=module', '-e', writerScript(path, 'hang')], { stdio: ['ignore', 'pipe', 'inherit'] });
      const exited = new Promise((r) => child.once('exit', r));
      try {
        await new Promise<void>((resolve, reject) => {
          child.stdout.on('data', (b: Buffer) => (b.toString().includes('ready') ? resolve() : undefined));
          child.once('exit', () => reject(new Error('the writer ended before it was ready')));
        });
        const live = temps(dir, 'result.out');
        assert.equal(live.length, 1);
        writeFileAtomic(path, 'mine');
        assert.equal(readFileSync(path, 'utf8'), 'mine');
        assert.deepEqual(temps(dir, 'result.out'), live, 'the live writer’s temporary file is untouched');
      } finally {
        child.kill('SIGKILL');
        await exited;
      }
      writeFileAtomic(path, 'again');
      assert.deepEqual(readdirSync(dir), ['result.out'], 'its writer gone, its temporary file is removed');
    });
  });

  it('tells a writer’s pid given again to a later process (a container’s pid 1 after a restart) from the writer itself', { skip: process.platform !== 'linux' }, async () => {
    await withDir((dir) => {
      const path = join(dir, 'out.bin');
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', writerScript(path, 'kill')], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.signal, 'SIGKILL', r.stderr);
      const [left] = temps(dir, 'out.bin');
      const m = /^\.out\.bin\.c0mpute-([0-9a-f]{8})-[0-9]+-[0-9]+-[0-9a-f]{8}\.tmp$/.exec(left ?? '');
      assert.ok(m, `the temporary file is named after its target and writer: ${left}`);
      const reused = `.out.bin.c0mpute-${m[1]}-${process.pid}-1-0123abcd.tmp`; // this live process, but not started then
      const live = `.out.bin.c0mpute-${m[1]}-${process.pid}-${processStart('self')}-4567abcd.tmp`; // this process: a writer in another thread
      writeFileSync(join(dir, reused), 'x');
      writeFileSync(join(dir, live), 'x');
      writeFileAtomic(path, 'new');
      assert.deepEqual(readdirSync(dir).sort(), [live, 'out.bin']);
    });
  });

  it('removes one from another machine, or named as earlier releases did, only once untouched for a day; other files never', async () => {
    await withDir((dir) => {
      const path = join(dir, 'ledger.c0l');
      const old = new Date(Date.now() - STALE_TEMP_AGE_MS - 60_000);
      const names = {
        foreignOld: '.ledger.c0l.c0mpute-ffffffff-12-345-89abcdef.tmp',
        foreignYoung: '.ledger.c0l.c0mpute-ffffffff-13-345-89abcdef.tmp',
        legacyOld: '.ledger.c0l.2147483-0badcafe.tmp',
        legacyYoung: '.ledger.c0l.2147484-0badcafe.tmp',
        otherTarget: '.ledger.c0l.bak.2147483-0badcafe.tmp',
        notATemp: '.ledger.c0l.2147483-0badcafe.tmp.keep',
        operators: '.ledger.c0l.swp',
      };
      for (const n of Object.values(names)) writeFileSync(join(dir, n), 'x');
      for (const n of [names.foreignOld, names.legacyOld, names.otherTarget, names.notATemp, names.operators]) utimesSync(join(dir, n), old, old);
      writeFileAtomic(path, 'new');
      const kept = Object.values(names).filter((n) => n !== names.foreignOld && n !== names.legacyOld);
      assert.deepEqual(readdirSync(dir).sort(), [...kept, 'ledger.c0l'].sort());
    });
  });

  it('writes a target whose name is near the longest a file system takes (its temporary file’s name is cut)', async () => {
    await withDir((dir) => {
      const name = 'é'.repeat(120) + '.out'; // 244 bytes
      writeFileAtomic(join(dir, name), 'long');
      assert.equal(readFileSync(join(dir, name), 'utf8'), 'long');
      assert.deepEqual(readdirSync(dir), [name]);
    });
  });
});

describe('writeFileAtomic: a target that is a symbolic link', { skip: process.platform === 'win32' }, () => {
  it('writes through a dangling link to where it points, as a plain write would, and the link stays a link', async () => {
    await withDir((dir) => {
      mkdirSync(join(dir, 'results'));
      symlinkSync('results/run.out', join(dir, 'latest')); // relative: to the link's own directory
      writeFileAtomic(join(dir, 'latest'), 'output');
      assert.ok(lstatSync(join(dir, 'latest')).isSymbolicLink(), 'the link is still a link');
      assert.equal(readlinkSync(join(dir, 'latest')), 'results/run.out');
      assert.equal(readFileSync(join(dir, 'results', 'run.out'), 'utf8'), 'output');
      assert.deepEqual(readdirSync(dir).sort(), ['latest', 'results']);
      assert.deepEqual(readdirSync(join(dir, 'results')), ['run.out'], 'the temporary file went beside the file written, and is gone');
    });
  });

  it('follows a chain of links, dangling at its end, each relative to its own directory', async () => {
    await withDir((dir) => {
      mkdirSync(join(dir, 'a'));
      mkdirSync(join(dir, 'b'));
      symlinkSync('../b/second', join(dir, 'a', 'first'));
      symlinkSync(join(dir, 'b', 'final.out'), join(dir, 'b', 'second'));
      writeFileAtomic(join(dir, 'a', 'first'), 'through two links');
      assert.ok(lstatSync(join(dir, 'a', 'first')).isSymbolicLink());
      assert.ok(lstatSync(join(dir, 'b', 'second')).isSymbolicLink());
      assert.equal(readFileSync(join(dir, 'b', 'final.out'), 'utf8'), 'through two links');
      assert.deepEqual(readdirSync(join(dir, 'b')).sort(), ['final.out', 'second']);
    });
  });

  it('replaces the file a link to an existing file points to, keeping its mode; the link stays a link', async () => {
    await withDir((dir) => {
      writeFileSync(join(dir, 'real.out'), 'old, and longer than what replaces it');
      chmodSync(join(dir, 'real.out'), 0o640);
      symlinkSync('real.out', join(dir, 'link'));
      writeFileAtomic(join(dir, 'link'), 'new');
      assert.ok(lstatSync(join(dir, 'link')).isSymbolicLink());
      assert.equal(readFileSync(join(dir, 'real.out'), 'utf8'), 'new');
      assert.equal(statSync(join(dir, 'real.out')).mode & 0o777, 0o640);
      assert.deepEqual(readdirSync(dir).sort(), ['link', 'real.out']);
    });
  });

  it('refuses a loop of links with ELOOP, at once, writing nothing', async () => {
    await withDir((dir) => {
      symlinkSync('b', join(dir, 'a'));
      symlinkSync('a', join(dir, 'b'));
      symlinkSync('self', join(dir, 'self'));
      for (const name of ['a', 'self']) {
        assert.throws(
          () => writeFileAtomic(join(dir, name), 'x'),
          (e: NodeJS.ErrnoException) => e.code === 'ELOOP' && typeof e.syscall === 'string',
        );
      }
      assert.deepEqual(readdirSync(dir).sort(), ['a', 'b', 'self']);
    });
  });
});
