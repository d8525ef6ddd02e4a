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
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bindDataDirIdentity, createIdentity, DID_FILE, KEY_FILE, readRecordedDid } from '../../../src/node/identity.js';
import { C0Error } from '../../../src/errors.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'c0-identity-binding-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function c0(dataDir: string, ...args: string[]): { code: number | null; stderr: string; stdout: string } {
  const { NODE_TEST_CONTEXT: _, ...parent } = process.env; // the child is the CLI, not a test runner
  const r = spawnSync(process.execPath, [bin, '--data-dir', dataDir, ...args], { encoding: 'utf8', env: { ...parent, C0MPUTE_HOME: join(dir, 'home'), C0MPUTE_PASSPHRASE: '' }, timeout: 60_000, killSignal: 'SIGKILL' });
  return { code: r.status, stderr: r.stderr, stdout: r.stdout };
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

  it('an identity.did that holds no valid DID (empty, blank, garbage) is IDENTITY_DID_CORRUPT naming --new-identity, not "none recorded" nor KEY_MISMATCH (QA qaOps F5)', () => {
    for (const [name, text] of [['empty', ''], ['blank', '  \n'], ['garbage', 'not a did\n']] as const) {
      const d = usedDir(`did-${name}`);
      createIdentity(d);
      writeFileSync(join(d, DID_FILE), text);
      const r = c0(d, 'start');
      assert.equal(r.code, 3, `${name}: ${r.stderr}`);
      assert.match(r.stderr, /^error IDENTITY_DID_CORRUPT: .*identity\.did .*damaged.*start --new-identity/m, name);
      assert.equal(readFileSync(join(d, DID_FILE), 'utf8'), text, `${name}: the file is kept as it was`);
      assert.throws(() => bindDataDirIdentity(d, createIdentity(join(dir, `did-${name}-other`)).did), (e: unknown) => e instanceof C0Error && e.code === 'IDENTITY_DID_CORRUPT');
    }
    // --new-identity records the key's DID over a damaged file
    const d = join(dir, 'did-adopt');
    mkdirSync(d, { recursive: true });
    const did = createIdentity(d).did;
    writeFileSync(join(d, DID_FILE), '');
    bindDataDirIdentity(d, did, true);
    assert.equal(readRecordedDid(d), did);
  });

  it('keys init (and init) on a data directory whose identity.did names a node is refused without --force, DATA_DIR_HAS_IDENTITY; --force makes the key and warns (QA qaOps F11)', () => {
    const d = usedDir('init-other');
    const old = createIdentity(join(dir, 'init-other-key')).did;
    writeFileSync(join(d, DID_FILE), old + '\n');
    for (const args of [['keys', 'init', '--no-passphrase'], ['init', '--no-passphrase']]) {
      const r = c0(d, ...args);
      assert.equal(r.code, 3, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`^error DATA_DIR_HAS_IDENTITY: .*${old}.*restore identity\\.key from your backup.*keys init --force`, 'm'));
      assert.equal(existsSync(join(d, KEY_FILE)), false, 'no key was made');
    }
    const forced = c0(d, 'keys', 'init', '--no-passphrase', '--force');
    assert.equal(forced.code, 0, forced.stderr);
    assert.match(forced.stdout, /^created did:key:/m);
    assert.match(forced.stderr, new RegExp(`warning DATA_DIR_HAS_IDENTITY: .*${old}.*start --new-identity`));
    assert.equal(readRecordedDid(d), old, 'identity.did is untouched');
  });

  it('keys show checks an unencrypted key as start does (KEY_FILE_CORRUPT), and says an encrypted one is unverified (QA qaOps F4)', () => {
    const d = join(dir, 'show');
    const did = createIdentity(d).did;
    const good = readFileSync(join(d, KEY_FILE), 'utf8');
    const ok = c0(d, 'keys', 'show', '--json');
    assert.equal(ok.code, 0, ok.stderr);
    assert.deepEqual(JSON.parse(ok.stdout), { ...(JSON.parse(ok.stdout) as object), did, encrypted: false, verified: true });
    const other = createIdentity(join(dir, 'show-other')).did;
    const k = JSON.parse(good) as Record<string, unknown>;
    for (const [name, tampered] of [['another DID', { ...k, did: other }], ['a 31-byte seed', { ...k, seed: '00'.repeat(31) }]] as const) {
      writeFileSync(join(d, KEY_FILE), JSON.stringify(tampered), { mode: 0o600 });
      const r = c0(d, 'keys', 'show');
      assert.equal(r.code, 3, `${name}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, /^error KEY_FILE_CORRUPT: /m, name);
      assert.equal(r.stdout, '', `${name}: no DID printed`);
    }
    const e = join(dir, 'show-encrypted');
    const edid = createIdentity(e, 'secret').did;
    const human = c0(e, 'keys', 'show');
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, new RegExp(`^did      ${edid}  \\(unverified: the key is encrypted`, 'm'));
    assert.equal((JSON.parse(c0(e, 'keys', 'show', '--json').stdout) as { verified: boolean }).verified, false);
  });
});
