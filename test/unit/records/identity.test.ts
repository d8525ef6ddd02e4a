/** The key file (src/node/identity.ts): mode 0600, passphrase encryption, refusals, and the seed never shown. */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { spawnSync } from 'node:child_process';
import { createIdentity, isKeyEncrypted, keyFilePath, loadIdentity, publishSecretFile, readKeyFileDid } from '../../../src/node/identity.js';
import { didFromPublicKey } from '../../../src/records/did.js';
import { Ed25519Signer } from '../../../src/records/ed25519.js';
import { assertCode, hex } from './fixtures.js';

const SEED = Uint8Array.from({ length: 32 }, (_, i) => 0xa0 + (i % 16));
const SEED_HEX = hex(SEED);
const SEED_B64 = Buffer.from(SEED).toString('base64');
const DID = didFromPublicKey(new Ed25519Signer(SEED).publicKey);

let root: string;
let n = 0;
const freshDir = () => join(root, `node-${n++}`);

before(() => {
  root = mkdtempSync(join(tmpdir(), 'c0-identity-'));
});
after(() => {
  rmSync(root, { recursive: true, force: true });
});

describe('key file', () => {
  test('created with mode 0600 in a directory only its owner can enter', () => {
    const dir = freshDir();
    const id = createIdentity(dir, undefined, SEED);
    assert.equal(id.did, DID);
    assert.equal(id.keyFile, keyFilePath(dir));
    assert.equal(statSync(id.keyFile).mode & 0o777, 0o600);
    assert.equal(statSync(dir).mode & 0o077, 0);
    assert.equal(readKeyFileDid(dir), DID);
    assert.equal(isKeyEncrypted(dir), false);
    assert.equal(loadIdentity(dir).did, DID);
  });

  test('encrypted with a passphrase: the seed is not in the file; the right passphrase opens it', () => {
    const dir = freshDir();
    const id = createIdentity(dir, 'correct horse', SEED);
    assert.equal(statSync(id.keyFile).mode & 0o777, 0o600);
    const text = readFileSync(id.keyFile, 'utf8');
    assert.ok(!text.toLowerCase().includes(SEED_HEX), 'seed hex in the key file');
    assert.ok(!text.includes(SEED_B64), 'seed base64 in the key file');
    assert.ok(!readFileSync(id.keyFile).includes(Buffer.from(SEED)), 'raw seed in the key file');
    assert.equal(JSON.parse(text).kdf, 'scrypt');
    assert.equal(isKeyEncrypted(dir), true);
    assert.equal(readKeyFileDid(dir), DID, 'the DID is readable without the passphrase');
    const loaded = loadIdentity(dir, 'correct horse');
    assert.equal(loaded.did, DID);
    assert.equal(hex(loaded.signer.sign(new Uint8Array([1]))), hex(new Ed25519Signer(SEED).sign(new Uint8Array([1]))));
  });

  test('wrong passphrase → KEY_PASSPHRASE_WRONG; missing → KEY_PASSPHRASE_REQUIRED', () => {
    const dir = freshDir();
    createIdentity(dir, 'correct horse', SEED);
    assertCode(() => loadIdentity(dir, 'battery staple'), 'KEY_PASSPHRASE_WRONG');
    assertCode(() => loadIdentity(dir), 'KEY_PASSPHRASE_REQUIRED');
    assertCode(() => loadIdentity(dir, ''), 'KEY_PASSPHRASE_REQUIRED');
  });

  test('a key file others can read is refused: KEY_FILE_PERMISSIONS (0644, 0640, 0604)', () => {
    const dir = freshDir();
    const id = createIdentity(dir, undefined, SEED);
    for (const mode of [0o644, 0o640, 0o604]) {
      chmodSync(id.keyFile, mode);
      assertCode(() => loadIdentity(dir), 'KEY_FILE_PERMISSIONS', mode.toString(8));
      assertCode(() => readKeyFileDid(dir), 'KEY_FILE_PERMISSIONS', mode.toString(8));
    }
    chmodSync(id.keyFile, 0o400); // owner-only read is fine
    assert.equal(loadIdentity(dir).did, DID);
  });

  test('never overwritten: KEY_EXISTS; absent: KEY_MISSING', () => {
    const dir = freshDir();
    assertCode(() => loadIdentity(dir), 'KEY_MISSING');
    createIdentity(dir, undefined, SEED);
    const before = readFileSync(keyFilePath(dir), 'utf8');
    assertCode(() => createIdentity(dir, undefined, new Uint8Array(32)), 'KEY_EXISTS');
    assert.equal(readFileSync(keyFilePath(dir), 'utf8'), before);
  });

  test('publishing a key never replaces a file that appeared after the check (another creator): false, nothing left behind', () => {
    const dir = freshDir();
    mkdirSync(dir);
    const path = join(dir, 'k');
    assert.equal(publishSecretFile(path, 'first'), true);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(publishSecretFile(path, 'second'), false);
    assert.equal(readFileSync(path, 'utf8'), 'first');
    assert.deepEqual(readdirSync(dir), ['k']);
  });

  test('a key file the node may not read (its own mode, or a directory it cannot enter) → KEY_FILE_UNREADABLE naming the permission problem, not KEY_FILE_CORRUPT', () => {
    // root reads any file: as root the reads run as nobody in a child process; as anyone else, here (mode 000)
    const asRoot = process.getuid?.() === 0;
    const readAs = (dir: string): { code?: string; message?: string } => {
      if (!asRoot) {
        try {
          readKeyFileDid(dir);
          return {};
        } catch (e) {
          return { code: (e as { code?: string }).code, message: (e as Error).message };
        }
      }
      const mod = new URL('../../../src/node/identity.js', import.meta.url).href;
      const js = `import(${JSON.stringify(mod)}).then((m) => { try { m.readKeyFileDid(${JSON.stringify(dir)}); console.log('{}'); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); } });`;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', js], { uid: 65534, gid: 65534, encoding: 'utf8' });
      return JSON.parse(r.stdout.trim() || '{}') as { code?: string; message?: string };
    };
    chmodSync(root, 0o755);
    const dir = freshDir();
    createIdentity(dir, undefined, SEED);
    // the key file: root's 0600 (as root) or 000 (otherwise)
    chmodSync(dir, 0o755);
    if (!asRoot) chmodSync(keyFilePath(dir), 0o000);
    let r = readAs(dir);
    assert.equal(r.code, 'KEY_FILE_UNREADABLE', r.message);
    assert.match(r.message!, /permission denied/);
    assert.match(r.message!, /uid/);
    chmodSync(keyFilePath(dir), 0o600);
    // its directory, not searchable
    chmodSync(dir, asRoot ? 0o700 : 0o000);
    r = readAs(dir);
    assert.equal(r.code, 'KEY_FILE_UNREADABLE', r.message);
    assert.match(r.message!, /permission denied/);
    chmodSync(dir, 0o700);
    chmodSync(root, 0o700);
    assert.equal(readKeyFileDid(dir), DID, 'the key itself was intact');
  });

  test('a corrupt or inconsistent key file → KEY_FILE_CORRUPT', () => {
    const dir = freshDir();
    const id = createIdentity(dir, undefined, SEED);
    const good = JSON.parse(readFileSync(id.keyFile, 'utf8')) as Record<string, unknown>;
    const write = (s: string) => writeFileSync(id.keyFile, s, { mode: 0o600 });
    write('not json');
    assertCode(() => loadIdentity(dir), 'KEY_FILE_CORRUPT', 'not JSON');
    write(JSON.stringify({ ...good, version: 2 }));
    assertCode(() => loadIdentity(dir), 'KEY_FILE_CORRUPT', 'version');
    write(JSON.stringify({ ...good, seed: 'zz' }));
    assertCode(() => loadIdentity(dir), 'KEY_FILE_CORRUPT', 'seed');
    write(JSON.stringify({ ...good, did: didFromPublicKey(new Ed25519Signer(new Uint8Array(32)).publicKey) }));
    assertCode(() => loadIdentity(dir), 'KEY_FILE_CORRUPT', 'DID does not match the key');
    // JSON that is not an object (a TypeError before)
    for (const v of ['null', '[]', '7']) {
      write(v);
      assertCode(() => loadIdentity(dir), 'KEY_FILE_CORRUPT', v);
    }
  });

  test('an encrypted key file whose scrypt parameters do not work → KEY_FILE_CORRUPT (scrypt threw before)', () => {
    const dir = freshDir();
    const id = createIdentity(dir, 'pw', SEED);
    const good = JSON.parse(readFileSync(id.keyFile, 'utf8')) as { scrypt: Record<string, unknown> };
    writeFileSync(id.keyFile, JSON.stringify({ ...good, scrypt: { ...good.scrypt, N: 3 } }), { mode: 0o600 });
    assertCode(() => loadIdentity(dir, 'pw'), 'KEY_FILE_CORRUPT', 'N = 3');
  });

  test('the seed never appears in JSON.stringify, String or util.inspect of the signer', () => {
    const dir = freshDir();
    const { signer } = createIdentity(dir, 'pw', SEED);
    for (const s of [JSON.stringify(signer), JSON.stringify({ signer }), String(signer), inspect(signer, { showHidden: true, depth: 5 })]) {
      assert.ok(!s.toLowerCase().includes(SEED_HEX), s);
      assert.ok(!s.includes(SEED_B64), s);
      assert.ok(!s.includes(Array.from(SEED).join(',')), s);
    }
    assert.deepEqual(JSON.parse(JSON.stringify(signer)), { publicKey: hex(signer.publicKey) });
    // The loaded signer behaves the same.
    const loaded = loadIdentity(dir, 'pw').signer;
    assert.ok(!JSON.stringify(loaded).includes(SEED_HEX));
  });
});
