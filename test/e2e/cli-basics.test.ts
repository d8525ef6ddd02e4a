/**
 * The `c0mpute` command's own manners, as child processes (no network): a
 * closed standard output ends a command quietly; `init` says when it stores a
 * key unencrypted and takes the passphrase from a file or the environment,
 * and `start` reads it the same way; Ctrl-D or Ctrl-C at the passphrase prompt
 * (on a pseudo-terminal) ends it with `error KEY_PASSPHRASE_ABORTED`.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ed25519Signer } from '../../src/records/index.js';
import { sealEntries, writeLedgerFile } from '../../src/ledger/index.js';
import { admitted, tempDir } from '../unit/ledger/helpers.js';
import { BIN, spawnCli } from './node-helpers.js';

const t = tempDir('c0-cli-basics-');
after(() => t.cleanup());

/** The environment without any passphrase source, so that `init` has to decide on its own. */
function env(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, ...extra };
  if (!('C0MPUTE_PASSPHRASE' in extra)) delete e.C0MPUTE_PASSPHRASE;
  if (!('C0MPUTE_PASSPHRASE_FILE' in extra)) delete e.C0MPUTE_PASSPHRASE_FILE;
  return e;
}

/** The command as a child process; not waited for in turn, so that the independent ones of a case run side by side. */
async function c0(args: string[], extra: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  // stdin is a pipe, not a terminal (and at its end at once): nobody can be asked
  const r = await spawnCli(args, { env: env(extra) });
  return { ...r, code: r.code ?? -1 };
}

const kdf = (dir: string) => (JSON.parse(readFileSync(join(dir, 'identity.key'), 'utf8')) as { kdf: string }).kdf;

describe('a closed standard output', () => {
  let file = '';
  before(() => {
    file = join(t.dir, 'big.cbor');
    const events = Array.from({ length: 1500 }, (_, i) => admitted(`c${i}`, 'a', 1));
    writeLedgerFile(file, { entries: sealEntries(events, Ed25519Signer.generate()).map((e) => e.bytes), receipts: [] });
  });

  it('ends the command quietly (`c0mpute ledger show … | head -1`): exit 0, no EPIPE trace', async () => {
    const child = spawn(process.execPath, [BIN, 'ledger', 'show', file], { stdio: ['ignore', 'pipe', 'pipe'], env: env() });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    // read the first chunk, then go away like `head -1`
    child.stdout.once('data', () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
    assert.equal(err, '', 'nothing on stderr');
    assert.equal(code, 0);
  });
});

// The cases work on data directories and files of their own: they run side by side.
describe('init and the key passphrase', { concurrency: true }, () => {
  it('without a terminal or a passphrase source, says on stderr that the key is stored unencrypted', async () => {
    const dir = join(t.dir, 'plain');
    const [r, chosen] = await Promise.all([c0(['--data-dir', dir, 'init']), c0(['--data-dir', join(t.dir, 'chosen'), 'init', '--no-passphrase'])]);
    assert.equal(r.code, 0, r.err);
    assert.equal(kdf(dir), 'none');
    assert.match(r.err, /^warning: the key .*identity\.key is stored UNENCRYPTED/);
    assert.match(r.out, /key file\s+.*identity\.key \(unencrypted\)/);
    // choosing it with --no-passphrase needs no warning, but stdout still says it
    assert.equal(chosen.err, '');
    assert.match(chosen.out, /\(unencrypted\)/);
  });

  it('takes the passphrase from --passphrase-file, and start reads it the same way', async () => {
    const dir = join(t.dir, 'filed');
    const pass = join(t.dir, 'pass.txt');
    writeFileSync(pass, 'correct horse\n');
    const wrong = join(t.dir, 'wrong.txt');
    writeFileSync(wrong, 'battery staple\n');
    // a missing passphrase file is an operator error naming it (asked while the key is made)
    const missingP = c0(['--data-dir', join(t.dir, 'nofile'), '--passphrase-file', join(t.dir, 'nope.txt'), 'init']);
    const r = await c0(['--data-dir', dir, '--passphrase-file', pass, 'init']);
    assert.equal(r.code, 0, r.err);
    assert.equal(r.err, '');
    assert.equal(kdf(dir), 'scrypt');
    assert.match(r.out, /\(encrypted\)/);
    // start without any source cannot open the key; with the wrong file it is refused; both before any networking
    const [none, w, wEnv] = await Promise.all([c0(['--data-dir', dir, 'start']), c0(['--data-dir', dir, '--passphrase-file', wrong, 'start']), c0(['--data-dir', dir, 'start'], { C0MPUTE_PASSPHRASE_FILE: wrong })]);
    assert.equal(none.code, 3);
    assert.match(none.err, /^error KEY_PASSPHRASE_REQUIRED: .*--passphrase-file/);
    assert.equal(w.code, 3);
    assert.match(w.err, /^error KEY_PASSPHRASE_WRONG:/);
    assert.match(wEnv.err, /^error KEY_PASSPHRASE_WRONG:/);
    const missing = await missingP;
    assert.equal(missing.code, 3);
    assert.match(missing.err, /^error INPUT_UNREADABLE: --passphrase-file /);
  });

  it('refuses an empty passphrase file (KEY_PASSPHRASE_FILE_INVALID) instead of storing the key in the clear', async () => {
    const empty = join(t.dir, 'empty.txt');
    writeFileSync(empty, '');
    const blank = join(t.dir, 'blank.txt');
    writeFileSync(blank, '\n');
    const runs = await Promise.all([
      c0(['--data-dir', join(t.dir, 'empty-flag'), '--passphrase-file', empty, 'init']),
      c0(['--data-dir', join(t.dir, 'empty-env'), 'keys', 'init'], { C0MPUTE_PASSPHRASE_FILE: blank }),
    ]);
    for (const r of runs) {
      assert.equal(r.code, 3, r.err);
      assert.match(r.err, /^error KEY_PASSPHRASE_FILE_INVALID: .*is empty.*--no-passphrase/);
    }
    assert.ok(!existsSync(join(t.dir, 'empty-flag', 'identity.key')), 'no key written');
    assert.ok(!existsSync(join(t.dir, 'empty-env', 'identity.key')), 'no key written');
  });

  it('takes it from C0MPUTE_PASSPHRASE_FILE and C0MPUTE_PASSPHRASE', async () => {
    const pass = join(t.dir, 'pass2.txt');
    writeFileSync(pass, 'tr0ub4dor');
    const [a, b] = await Promise.all([c0(['--data-dir', join(t.dir, 'envfile'), 'init'], { C0MPUTE_PASSPHRASE_FILE: pass }), c0(['--data-dir', join(t.dir, 'envvar'), 'keys', 'init'], { C0MPUTE_PASSPHRASE: 'tr0ub4dor' })]);
    assert.equal(a.err, '');
    assert.equal(kdf(join(t.dir, 'envfile')), 'scrypt');
    assert.equal(b.err, '');
    assert.equal(kdf(join(t.dir, 'envvar')), 'scrypt');
  });
});

describe("--data-dir with a literal ~ (a quoted argument, a systemd ExecStart= line)", () => {
  it('is the home directory, as in C0MPUTE_HOME; ~name is DATA_DIR_INVALID (exit 3); nothing is made in the current directory', async () => {
    const home = join(t.dir, 'tilde-home');
    const cwd = join(t.dir, 'tilde-cwd');
    mkdirSync(home);
    mkdirSync(cwd);
    const e = env({ HOME: home });
    delete e.C0MPUTE_HOME;
    const inCwd = async (args: string[], more: NodeJS.ProcessEnv = {}) => {
      const r = await spawnCli(args, { cwd, env: { ...e, ...more } });
      return { ...r, code: r.code ?? -1 };
    };
    const made = await inCwd(['--data-dir', '~/x', 'init', '--no-passphrase']);
    assert.equal(made.code, 0, made.err);
    assert.ok(existsSync(join(home, 'x', 'identity.key')), 'the key is under $HOME/x');
    assert.match(made.out, new RegExp(`key file\\s+${join(home, 'x', 'identity.key')}`));
    // the same directory either way
    const shown = await inCwd(['keys', 'show'], { C0MPUTE_HOME: '~/x' });
    assert.equal(shown.code, 0, shown.err);
    for (const dir of ['~nosuchuser', '~nosuchuser/x']) {
      const r = await inCwd(['--data-dir', dir, 'init', '--no-passphrase']);
      assert.equal(r.code, 3, `${dir}: ${r.out}${r.err}`);
      assert.equal(r.err, `error DATA_DIR_INVALID: --data-dir ${dir}: another user's home (~name) is not expanded; give the full path\n`);
    }
    assert.deepEqual(readdirSync(cwd), [], 'nothing made in the current directory');
    assert.deepEqual(readdirSync(home), ['x']);
  });
});

/** Drive the command on a pseudo-terminal (python3's pty): at the passphrase prompt, type the byte `key`. */
const PTY = `
import os, pty, sys, time, select
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:-1])
out = b''; sent = False; t0 = time.time()
while time.time() - t0 < 20:
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try: d = os.read(fd, 4096)
        except OSError: break
        if not d: break
        out += d
    if b'passphrase' in out and not sent:
        time.sleep(0.2); os.write(fd, bytes([int(sys.argv[-1], 16)])); sent = True
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors='replace'))
print('\\nEXIT', os.waitstatus_to_exitcode(st))
`;
const hasPty = spawnSync('python3', ['-c', 'import pty'], { stdio: 'ignore' }).status === 0;

function onTerminal(args: string[], key: 'ctrl-d' | 'ctrl-c'): Promise<{ code: number; screen: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-c', PTY, process.execPath, BIN, ...args, key === 'ctrl-d' ? '04' : '03'], { env: env(), timeout: 30_000, stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('error', reject);
    child.on('close', () => {
      const m = /\nEXIT (-?\d+)\s*$/.exec(out);
      resolve({ code: m ? Number(m[1]) : -1, screen: out });
    });
  });
}

describe('the passphrase prompt on a terminal', { skip: hasPty ? false : 'needs python3 for a pseudo-terminal' }, () => {
  it('Ctrl-D ends it with KEY_PASSPHRASE_ABORTED, exit 3; Ctrl-C the same, exit 130; no key is written', async () => {
    const d1 = join(t.dir, 'tty-d');
    const enc = join(t.dir, 'tty-enc');
    // opening an encrypted key: `start` asks, and Ctrl-C stops it before anything starts (on a directory of its own, beside the first)
    const [eof, intr] = await Promise.all([
      onTerminal(['--data-dir', d1, 'init'], 'ctrl-d'),
      c0(['--data-dir', enc, 'init'], { C0MPUTE_PASSPHRASE: 'pw' }).then((r) => {
        assert.equal(r.code, 0, r.err);
        return onTerminal(['--data-dir', enc, 'start'], 'ctrl-c');
      }),
    ]);
    assert.equal(eof.code, 3, eof.screen);
    assert.match(eof.screen, /error KEY_PASSPHRASE_ABORTED: /);
    assert.ok(!existsSync(join(d1, 'identity.key')));
    assert.equal(intr.code, 130, intr.screen);
    assert.match(intr.screen, /error KEY_PASSPHRASE_ABORTED: /);
  });
});
