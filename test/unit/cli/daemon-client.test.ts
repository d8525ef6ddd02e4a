/**
 * How the CLI finds the running daemon (src/cli/daemon-client.ts): a daemon.json naming a live process with an API
 * token that cannot be read is API_TOKEN_UNREADABLE (exit 3) naming the file, not "no daemon runs" (which sent
 * `status` to DAEMON_NOT_RUNNING and `jobs`/`run` to the offline path and STORE_LOCKED) nor an internal error (a
 * directory in its place: EISDIR, exit 70). The daemon's pid here is this test's own process: alive, and not the
 * CLI's (readDaemonInfo takes its own pid for a stale file).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { daemonClient, requireDaemon } from '../../../src/cli/daemon-client.js';
import { C0Error } from '../../../src/errors.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-daemon-client-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** A data directory whose daemon.json names a live process (`pid`), with an API nothing listens on. */
function dataDir(name: string, pid = process.pid): string {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'daemon.json'), JSON.stringify({ pid, did: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', api: '127.0.0.1:9', startedAt: 0 }));
  return d;
}

function code(f: () => unknown): string | undefined {
  try {
    f();
    return undefined;
  } catch (e) {
    assert.ok(e instanceof C0Error, String(e));
    return e.code;
  }
}

describe('daemonClient', () => {
  it('reads the token of a running daemon', () => {
    const d = dataDir('ok', process.ppid);
    writeFileSync(join(d, 'api.token'), 'tok\n', { mode: 0o600 });
    assert.deepEqual(daemonClient(d), { api: '127.0.0.1:9', token: 'tok' });
  });

  it('is undefined when no daemon.json is there (token or not)', () => {
    const d = join(root, 'none');
    mkdirSync(d);
    assert.equal(daemonClient(d), undefined);
    assert.equal(code(() => requireDaemon(d)), 'DAEMON_NOT_RUNNING');
  });

  it('a missing token file while the daemon runs is API_TOKEN_UNREADABLE naming the file', () => {
    const d = dataDir('missing', process.ppid);
    try {
      daemonClient(d);
      assert.fail('no error');
    } catch (e) {
      assert.equal((e as C0Error).code, 'API_TOKEN_UNREADABLE');
      assert.match((e as Error).message, new RegExp(`${join(d, 'api.token')} is missing`));
    }
    assert.equal(code(() => requireDaemon(d)), 'API_TOKEN_UNREADABLE');
  });

  it('an empty token file or a directory in its place is API_TOKEN_UNREADABLE', () => {
    const e = dataDir('empty', process.ppid);
    writeFileSync(join(e, 'api.token'), '\n', { mode: 0o600 });
    assert.equal(code(() => daemonClient(e)), 'API_TOKEN_UNREADABLE');
    const d = dataDir('dir', process.ppid);
    mkdirSync(join(d, 'api.token'));
    assert.equal(code(() => daemonClient(d)), 'API_TOKEN_UNREADABLE');
  });
});

describe('the CLI with a running daemon and no readable token exits 3', () => {
  const c0 = (d: string, ...args: string[]) => {
    const r = spawnSync(process.execPath, [bin, '--data-dir', d, ...args], { encoding: 'utf8', timeout: 60_000 });
    return { code: r.status ?? -1, stderr: r.stderr };
  };
  for (const [name, make] of [
    ['missing', () => undefined],
    ['a directory', (d: string) => mkdirSync(join(d, 'api.token'))],
  ] as const) {
    it(`token ${name}: status and jobs say API_TOKEN_UNREADABLE`, () => {
      const d = dataDir(`cli-${name.replace(/ /g, '-')}`);
      make(d);
      for (const args of [['status'], ['jobs']]) {
        const r = c0(d, ...args);
        assert.equal(r.code, 3, `${args.join(' ')}: ${r.stderr}`);
        assert.match(r.stderr, /^error API_TOKEN_UNREADABLE: .*api\.token/, r.stderr);
      }
    });
  }
});

describe("a copy of a running node's data directory (QA qaOps F7)", () => {
  it('is not that daemon: DAEMON_NOT_RUNNING naming the directory whose daemon.json it holds, from the CLI too (exit 3)', () => {
    const orig = dataDir('orig', process.ppid);
    const copy = join(root, 'copy');
    mkdirSync(copy);
    writeFileSync(join(copy, 'daemon.json'), JSON.stringify({ pid: process.ppid, did: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK', api: '127.0.0.1:9', startedAt: 0, dataDir: realpathSync(orig) }));
    writeFileSync(join(copy, 'api.token'), 'tok\n', { mode: 0o600 });
    assert.equal(daemonClient(copy), undefined);
    try {
      requireDaemon(copy);
      assert.fail('no error');
    } catch (e) {
      assert.equal((e as C0Error).code, 'DAEMON_NOT_RUNNING');
      assert.deepEqual((e as C0Error).detail, { daemonDataDir: realpathSync(orig), pid: process.ppid });
    }
    const { NODE_TEST_CONTEXT: _, ...env } = process.env;
    const r = spawnSync(process.execPath, [bin, '--data-dir', copy, 'status'], { encoding: 'utf8', timeout: 60_000, env });
    assert.equal(r.status, 3, r.stderr);
    assert.match(r.stderr, new RegExp(`^error DAEMON_NOT_RUNNING: no daemon is running on .*copy: .*written by the daemon \\(pid ${process.ppid}\\) of ${realpathSync(orig)}, not of this directory`, 'm'));
  });
});
