/**
 * Creating a key with the `c0mpute` command, as child processes (no network):
 * two creators racing on one data directory never both "create" a key (the
 * loser gets KEY_EXISTS and the key on disk is the winner's); a data
 * directory that is a file, or a key path that is a directory, is an operator
 * error with its code (exit 3), never an internal error or "key exists".
 */
import { describe, test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, readdirSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../unit/ledger/helpers.js';
import { runCli, type CliRun as Run } from './node-helpers.js';

const t = tempDir('c0-cli-keys-');
after(() => t.cleanup());

const c0 = (args: string[], extra: Record<string, string> = {}): Promise<Run> => runCli(args, t.dir, extra);

describe('two creators of one key', () => {
  test('racing `keys init` and `init`: one creates the key, the other gets KEY_EXISTS, and the key on disk is the one reported', async () => {
    for (let round = 0; round < 3; round++) {
      const dir = join(t.dir, `race-${round}`);
      // a passphrase makes each creator spend ~0.1 s in scrypt between its check and its write: the window of the race
      const runs = await Promise.all([
        c0(['--data-dir', dir, 'keys', 'init'], { C0MPUTE_PASSPHRASE: 'pw' }),
        c0(['--data-dir', dir, ...(round === 1 ? ['init'] : ['keys', 'init'])], { C0MPUTE_PASSPHRASE: 'pw' }),
      ]);
      const created = runs.map((r) => /created(?: key)? +(did:key:\S+)/.exec(r.out)?.[1]);
      const winners = created.filter((d) => d !== undefined);
      assert.equal(winners.length, 1, `round ${round}: exactly one creator reports a key (${runs.map((r) => `${r.code} ${r.out}${r.err}`).join(' | ')})`);
      const loser = runs[created.findIndex((d) => d === undefined)]!;
      // `init` on an existing key is no error: it goes on to the config; `keys init` is refused
      if (/^error /.test(loser.err) || loser.code !== 0) {
        assert.equal(loser.code, 3, loser.err);
        assert.match(loser.err, /^error KEY_EXISTS: /);
      } else assert.match(loser.out, /key exists/);
      const onDisk = (JSON.parse(readFileSync(join(dir, 'identity.key'), 'utf8')) as { did: string }).did;
      assert.equal(onDisk, winners[0], `round ${round}: the key on disk is the one reported created`);
      assert.deepEqual(readdirSync(dir).filter((f) => f.includes('.tmp')), [], 'no temporary file left');
    }
  });
});

/** Exit 3 and one stderr line `error CODE: …`. */
function operatorError(r: Run, code: string, what: string): void {
  assert.equal(r.code, 3, `${what}: exit code (stderr: ${r.err})`);
  assert.match(r.err, new RegExp(`^error ${code}: [^\\n]+\\n$`), what);
}

describe('where the key cannot go', () => {
  test('a data directory that is a file: DATA_DIR_INVALID from keys init and pool-provider init, as from init', async () => {
    const file = join(t.dir, 'a-file');
    writeFileSync(file, 'x');
    const [keys, pool, init] = await Promise.all([
      c0(['--data-dir', file, 'keys', 'init', '--no-passphrase']),
      c0(['pool-provider', 'init', '--pool-dir', file]),
      c0(['--data-dir', file, 'init', '--no-passphrase']),
    ]);
    operatorError(keys, 'DATA_DIR_INVALID', 'keys init');
    operatorError(pool, 'DATA_DIR_INVALID', 'pool-provider init');
    operatorError(init, 'DATA_DIR_INVALID', 'init');
  });

  test('an identity.key that is a directory: KEY_FILE_CORRUPT from init, keys init and keys show, not "key exists"', async () => {
    const dir = join(t.dir, 'key-is-dir');
    mkdirSync(join(dir, 'identity.key'), { recursive: true, mode: 0o755 });
    const runs = await Promise.all([['init', '--no-passphrase'], ['keys', 'init', '--no-passphrase'], ['keys', 'show']].map((a) => c0(['--data-dir', dir, ...a])));
    runs.forEach((r, i) => operatorError(r, 'KEY_FILE_CORRUPT', ['init', 'keys init', 'keys show'][i]!));
  });

  test('an identity.key linking to a file not there yet (a secret mount not filled): KEY_FILE_CORRUPT naming the target, the link left alone', async () => {
    const dir = join(t.dir, 'key-dangling');
    mkdirSync(dir, { recursive: true });
    const target = join(t.dir, 'secrets', 'identity.key');
    symlinkSync(target, join(dir, 'identity.key'));
    const runs = await Promise.all([['init', '--no-passphrase'], ['keys', 'init', '--no-passphrase'], ['keys', 'show']].map((a) => c0(['--data-dir', dir, ...a])));
    runs.forEach((r, i) => {
      operatorError(r, 'KEY_FILE_CORRUPT', ['init', 'keys init', 'keys show'][i]!);
      assert.ok(r.err.includes(target), r.err);
    });
    assert.equal(readlinkSync(join(dir, 'identity.key')), target);
  });
});
