/**
 * writeFileAtomic (src/util/atomic-file.ts), under `ledger fetch FILE`, every `--out FILE` and `run --output FILE`:
 * the temporary file a killed writer leaves beside the target is removed by the next write of that target, never one a
 * live writer is still filling.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, closeSync, lstatSync, openSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { STALE_TEMP_AGE_MS, machineOf, readMachineFacts, writeFileAtomic } from '../../../src/util/atomic-file.js';
import { procIsOwn, processStart } from '../../../src/node/daemon-info.js';

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

  it('tells a writer’s pid given again to a later process (a container’s pid 1 after a restart) from the writer itself', { skip: process.platform !== 'linux' || !procIsOwn() }, async () => {
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

/** Whether this system lets an unprivileged process make a user and PID namespace (`unshare -rpf`). */
function canUnshare(): boolean {
  if (process.platform !== 'linux') return false;
  const r = spawnSync('unshare', ['-rpf', '--kill-child', 'true'], { timeout: 10_000 });
  return r.status === 0;
}

describe('writeFileAtomic: which temporary files are this machine’s to judge', { skip: process.platform !== 'linux' }, () => {
  it('does not judge by its own process table a temporary file from another kernel with this host name and PID namespace (a cloned host on a shared directory)', async () => {
    await withDir((dir) => {
      // what a host with this name, in its initial PID namespace (the same inode on every Linux kernel), called its machine
      // before the boot was part of it: another host's live writer, by a pid that is free here
      const sameNameAndNs = createHash('sha256').update(`${hostname()}\0${readlinkSync('/proc/self/ns/pid')}`).digest('hex').slice(0, 8);
      let pid = 4_000_000;
      while (pid > 2) {
        try {
          process.kill(pid, 0);
          pid--;
        } catch {
          break;
        }
      }
      const remote = `.result.out.c0mpute-${sameNameAndNs}-${pid}-777-0badc0de.tmp`;
      writeFileSync(join(dir, remote), 'the first half of another host’s output');
      writeFileAtomic(join(dir, 'result.out'), 'this host’s output');
      assert.deepEqual(readdirSync(dir).sort(), [remote, 'result.out'], 'another kernel’s temporary file waits for the age rule');
    });
  });

  it('leaves a live writer’s temporary file in a PID namespace whose /proc is not its own (unshare without --mount-proc)', { skip: !canUnshare() }, async () => {
    await withDir((dir) => {
      const path = join(dir, 'result.out');
      const second = `import { readdirSync } from 'node:fs';
const { writeFileAtomic } = await import(${JSON.stringify(atomicUrl)});
const before = readdirSync(${JSON.stringify(dir)}).filter((f) => f.endsWith('.tmp'));
writeFileAtomic(${JSON.stringify(path)}, 'the second writer’s output');
console.log(JSON.stringify({ before, after: readdirSync(${JSON.stringify(dir)}).filter((f) => f.endsWith('.tmp')) }));`;
      // the writer hangs at its fsync, its temporary file filled; a second write of the target runs beside it
      const sh = `"$NODE" --input-type=module -e "$WRITER" > "$DIR/ready" & w=$!
i=0; until grep -q ready "$DIR/ready" 2>/dev/null; do i=$((i+1)); [ $i -gt 300 ] && exit 9; sleep 0.1; done
"$NODE" --input-type=module -e "$SECOND"; s=$?; kill -9 $w; exit $s`;
      const r = spawnSync('unshare', ['-rpf', '--kill-child', 'sh', '-c', sh], {
        encoding: 'utf8',
        timeout: 60_000,
        env: { ...process.env, NODE: process.execPath, WRITER: writerScript(path, 'hang'), SECOND: second, DIR: dir },
      });
      assert.equal(r.status, 0, r.stderr);
      const { before, after } = JSON.parse(r.stdout) as { before: string[]; after: string[] };
      assert.equal(before.length, 1, 'the writer’s temporary file, being filled');
      assert.deepEqual(after, before, 'the live writer’s temporary file is untouched');
    });
  });
});

describe('writeFileAtomic: the machine a temporary file names', () => {
  it('hashes the host name, the PID namespace and the kernel’s boot: two kernels with one host name and namespace differ', () => {
    const facts = { hostname: 'vm', pidNamespace: 'pid:[4026531836]', bootId: '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0' };
    const a = machineOf(facts);
    assert.match(a, /^[0-9a-f]{8}$/);
    assert.equal(machineOf({ ...facts }), a, 'the same facts, the same machine');
    assert.notEqual(machineOf({ ...facts, bootId: '11111111-2222-3333-4444-555555555555' }), a, 'another boot: another machine');
    assert.notEqual(machineOf({ ...facts, pidNamespace: 'pid:[4026532000]' }), a, 'another PID namespace');
    assert.notEqual(machineOf({ ...facts, hostname: 'vm2' }), a, 'another host name');
  });

  it('names this process’s temporary files after this machine’s facts, the boot id among them', { skip: process.platform !== 'linux' }, async () => {
    const facts = readMachineFacts();
    assert.equal(facts.bootId, readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
    assert.equal(facts.pidNamespace, readlinkSync('/proc/self/ns/pid'));
    await withDir((dir) => {
      const path = join(dir, 'out.bin');
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', writerScript(path, 'kill')], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.signal, 'SIGKILL', r.stderr);
      const [left] = temps(dir, 'out.bin');
      assert.equal(/^\.out\.bin\.c0mpute-([0-9a-f]{8})-/.exec(left ?? '')?.[1], machineOf(facts));
    });
  });

  it('trusts /proc/<pid> only when /proc/self/stat gives this process’s own pid (a /proc of this PID namespace)', () => {
    assert.equal(procIsOwn(() => '4242 (node) S 1 4242 4242 0 -1', 4242), true);
    assert.equal(procIsOwn(() => '2508229 (node) S 2508200 2508229 1 0 -1', 2), false, 'the outer namespace’s /proc: this process by its outer pid');
    assert.equal(procIsOwn(() => undefined, 2), false, 'no /proc, or /proc/self not there (this process not in that /proc)');
    assert.equal(procIsOwn(() => 'garbage', 1), false);
  });
});

describe('writeFileAtomic: a target that names an open descriptor (/dev/stdout, /dev/fd/N, /proc/self/fd/N)', { skip: process.platform === 'win32' }, () => {
  /** A child printing `before`, writing `OUTPUT` to `target` with writeFileAtomic, then printing `after`, its stdout being `log` opened with `flags`. */
  function printTo(target: string, log: string, flags: 'a' | 'w'): void {
    const script = `const { writeFileAtomic } = await import(${JSON.stringify(atomicUrl)});
console.log('before'); writeFileAtomic(${JSON.stringify(target)}, 'OUTPUT\\n'); console.log('after');`;
    const fd = openSync(log, flags);
    try {
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', fd, 'pipe'], encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.status, 0, r.stderr);
    } finally {
      closeSync(fd);
    }
  }

  const targets = ['/dev/stdout', '/dev/fd/1', ...(process.platform === 'linux' ? ['/proc/self/fd/1'] : [])];
  for (const target of targets) {
    it(`${target} redirected to a file in append mode (>> log): the earlier content stays, the output follows it, and later output too`, async () => {
      await withDir((dir) => {
        const log = join(dir, 'log.txt');
        writeFileSync(log, 'line 1 from earlier runs\nline 2\n');
        const ino = statSync(log).ino;
        printTo(target, log, 'a');
        assert.equal(readFileSync(log, 'utf8'), 'line 1 from earlier runs\nline 2\nbefore\nOUTPUT\nafter\n');
        assert.equal(statSync(log).ino, ino, 'the same file, not one renamed over it');
        assert.deepEqual(readdirSync(dir), ['log.txt']);
      });
    });
  }

  it('/dev/stdout that is a socket (a Node parent’s pipe, systemd’s journal), which /proc/self/fd does not open: written in order with what the process prints', () => {
    const script = `const { writeFileAtomic } = await import(${JSON.stringify(atomicUrl)});
console.log('before'); writeFileAtomic('/dev/stdout', 'OUTPUT\\n'); console.log('after');`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, 'before\nOUTPUT\nafter\n');
  });

  it('/dev/stdout redirected to a file (> log): the output goes where stdout is, between what the process printed', async () => {
    await withDir((dir) => {
      const log = join(dir, 'log.txt');
      printTo('/dev/stdout', log, 'w');
      assert.equal(readFileSync(log, 'utf8'), 'before\nOUTPUT\nafter\n');
    });
  });
});
