/**
 * A node's key and the data it holds stay together (review s40 F4): before, after identity.key was deleted, the advice
 * KEY_MISSING gave (`keys init`) made a new DID, and the node started on the old data directory with no warning,
 * listing none of the jobs it held. Now KEY_MISSING on a used data directory says to restore the key from a backup,
 * the first start records the DID (identity.did), and a start with another key is KEY_MISMATCH (exit 3) unless
 * `start --new-identity`. Runs the real CLI for the refusals, each ending before any node or network starts.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bindDataDirIdentity, createIdentity, DID_FILE, readRecordedDid } from '../../../src/node/identity.js';
import { C0Error } from '../../../src/errors.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'c0-identity-binding-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function c0(dataDir: string, ...args: string[]): { code: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [bin, '--data-dir', dataDir, ...args], { encoding: 'utf8', env: { ...process.env, C0MPUTE_HOME: join(dir, 'home'), C0MPUTE_PASSPHRASE: '' }, timeout: 60_000, killSignal: 'SIGKILL' });
  return { code: r.status, stderr: r.stderr };
}

/** A data directory a node has used: db/ and a config that would start on loopback only. */
function usedDir(name: string): string {
  const d = join(dir, name);
  mkdirSync(join(d, 'db'), { recursive: true, mode: 0o700 });
  writeFileSync(join(d, 'config.yaml'), 'roles: [buyer]\nnetwork:\n  listen: ["/ip4/127.0.0.1/tcp/0"]\napi:\n  listen: 127.0.0.1:0\n');
  return d;
}

describe('the data directory keeps its node’s identity', () => {
  it('KEY_MISSING on a used data directory says to restore the key, and that keys init makes a new identity', () => {
    const d = usedDir('lost-key');
    const r = c0(d, 'start');
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /^error KEY_MISSING: .*restore identity\.key from your backup.*keys init.* a NEW identity/m);
  });

  it('a fresh data directory still gets the keys init advice', () => {
    const d = join(dir, 'fresh');
    mkdirSync(d, { recursive: true });
    const r = c0(d, 'start');
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /^error KEY_MISSING: no key file at .*; run `c0mpute keys init`/m);
  });

  it('a start with another key than the recorded one is KEY_MISMATCH (exit 3), naming both DIDs and --new-identity', () => {
    const d = usedDir('other-key');
    const old = createIdentity(join(dir, 'old-key-home')).did;
    writeFileSync(join(d, DID_FILE), old + '\n');
    const now = createIdentity(d).did;
    const r = c0(d, 'start');
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /^error KEY_MISMATCH: /m);
    assert.ok(r.stderr.includes(old) && r.stderr.includes(now), r.stderr);
    assert.match(r.stderr, /start --new-identity/);
    assert.equal(readFileSync(join(d, DID_FILE), 'utf8').trim(), old, 'the record is kept');
    // run's own node and the offline jobs listing refuse it too
    assert.match(c0(d, 'jobs').stderr, /^error KEY_MISMATCH: /m);
  });

  it('the first start records the DID; the same key passes; another is refused unless adopted', () => {
    const d = join(dir, 'bind');
    mkdirSync(d, { recursive: true });
    const a = createIdentity(d).did;
    const b = createIdentity(join(dir, 'bind-b')).did;
    bindDataDirIdentity(d, a);
    assert.equal(readFileSync(join(d, DID_FILE), 'utf8'), a + '\n');
    bindDataDirIdentity(d, a);
    assert.throws(() => bindDataDirIdentity(d, b), (e: unknown) => e instanceof C0Error && e.code === 'KEY_MISMATCH');
    bindDataDirIdentity(d, b, true);
    assert.equal(readFileSync(join(d, DID_FILE), 'utf8'), b + '\n');
  });

  it('an identity.did the node may not read is KEY_FILE_UNREADABLE naming owner, mode and uid, not KEY_MISMATCH (review s43 R6 F4)', () => {
    // a start as root left identity.did root's 0600; the node then runs as nobody. As root the read runs as nobody in a
    // child process; as anyone else, here, on a file of mode 000
    const asRoot = process.getuid?.() === 0;
    const d = join(dir, 'unreadable-did');
    mkdirSync(d, { recursive: true });
    const did = createIdentity(join(dir, 'unreadable-did-key')).did;
    bindDataDirIdentity(d, did);
    chmodSync(dir, 0o755);
    chmodSync(d, 0o755);
    if (!asRoot) chmodSync(join(d, DID_FILE), 0o000);
    let r: { code?: string; message?: string };
    if (asRoot) {
      const mod = new URL('../../../src/node/identity.js', import.meta.url).href;
      const js = `import(${JSON.stringify(mod)}).then((m) => { try { m.readRecordedDid(${JSON.stringify(d)}); console.log('{}'); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); } });`;
      const p = spawnSync(process.execPath, ['--input-type=module', '-e', js], { uid: 65534, gid: 65534, encoding: 'utf8' });
      r = JSON.parse(p.stdout.trim() || '{}') as typeof r;
    } else {
      try {
        readRecordedDid(d);
        r = {};
      } catch (e) {
        r = { code: (e as C0Error).code, message: (e as Error).message };
      }
    }
    chmodSync(join(d, DID_FILE), 0o600);
    chmodSync(dir, 0o700);
    assert.equal(r.code, 'KEY_FILE_UNREADABLE', r.message);
    assert.match(r.message!, new RegExp(`${DID_FILE}.*permission denied \\(EACCES\\); .* is owned by uid ${asRoot ? 0 : process.getuid?.()} with mode ${asRoot ? 600 : 0}.*the node runs as uid ${asRoot ? 65534 : process.getuid?.()}`));
    assert.equal(readRecordedDid(d), did, 'identity.did itself is untouched');
  });
});
