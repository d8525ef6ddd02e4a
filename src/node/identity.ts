/**
 * The node's identity key at rest: `<dataDir>/identity.key`, mode 0600, JSON.
 * With a passphrase the 32-byte Ed25519 seed is sealed with AES-256-GCM under a
 * scrypt-derived key; without one it is stored in the clear (still 0600).
 * Loading refuses a key file that group or others can read. The seed is never
 * printed or logged (the signer's toJSON shows only the public key).
 */
import { chmodSync, existsSync, readFileSync, statSync, lstatSync, readlinkSync, writeFileSync, renameSync, openSync, fsyncSync, closeSync, linkSync, rmSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createCipheriv, createDecipheriv, randomBytes, scryptSync } from 'node:crypto';
import { C0Error } from '../errors.js';
import { Ed25519Signer } from '../records/ed25519.js';
import { didFromPublicKey, isDid } from '../records/did.js';
import { syncDir } from '../util/atomic-file.js';
import { osWords } from '../util/os-reason.js';
import { makeDirs } from '../util/make-dirs.js';

export const KEY_FILE = 'identity.key';
const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

interface KeyFileV1 {
  version: 1;
  did: string;
  kdf: 'none' | 'scrypt';
  seed?: string;
  scrypt?: { salt: string; N: number; r: number; p: number };
  cipher?: { alg: 'aes-256-gcm'; iv: string; tag: string; data: string };
}

export interface Identity {
  did: string;
  signer: Ed25519Signer;
  keyFile: string;
}

export function keyFilePath(dataDir: string): string {
  return join(dataDir, KEY_FILE);
}

/** Write a file atomically with mode 0600 (temp file, fsync, rename). Replaces what is there: for files that may be replaced (the API token). */
export function writeSecretFile(path: string, data: string | Uint8Array): void {
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, data, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    const fd = openSync(tmp, 'r');
    fsyncSync(fd);
    closeSync(fd);
    renameSync(tmp, path);
  } catch (e) {
    // a full disk: no temporary file is left behind (a later start would never remove it)
    rmSync(tmp, { force: true });
    throw e;
  }
}

/** A read or stat refused for want of permission. */
const PERMISSION = new Set(['EACCES', 'EPERM']);

/** Filesystems without hard links answer link(2) with one of these; there the file is created exclusively in place. */
const NO_LINKS = new Set(['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS', 'EXDEV']);

/**
 * Publish a new file with mode 0600 at `path`, never replacing one: written whole and synced under a temporary name,
 * then hard-linked to `path`, which fails with EEXIST when anything is there already (another process that created
 * it since we looked). So a reader sees no file or the whole file, and of two creators exactly one succeeds; the other
 * gets `false`. The directory is synced after, so the new name survives a crash.
 */
export function publishSecretFile(path: string, data: string | Uint8Array): boolean {
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    const fd = openSync(tmp, 'wx', 0o600);
    try {
      writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    try {
      linkSync(tmp, path);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return false;
      if (!code || !NO_LINKS.has(code)) throw e;
      if (!writeExclusive(path, data)) return false;
    }
  } finally {
    rmSync(tmp, { force: true });
  }
  syncDir(dirname(path));
  return true;
}

/** Create `path` exclusively (O_EXCL) and write it; `false` when it exists. A crash mid-write leaves a short file, not a replaced one. */
function writeExclusive(path: string, data: string | Uint8Array): boolean {
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
  try {
    writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    rmSync(path, { force: true });
    throw e;
  }
  closeSync(fd);
  return true;
}


/**
 * Whether the data directory holds a key file. Something else at its path (a directory, a device) is no key and no
 * room for one: KEY_FILE_CORRUPT, not "the key exists".
 */
export function hasKeyFile(dataDir: string): boolean {
  const path = keyFilePath(dataDir);
  if (!existsSync(path)) {
    // a link to a file not there yet (a secret mount not filled): not a key, and nothing may be written in its place
    let link: string | undefined;
    try {
      if (lstatSync(path).isSymbolicLink()) link = readlinkSync(path);
    } catch (e) {
      // a directory the node may not enter: whether a key is there is unknown, and none may be created in its place
      if (PERMISSION.has((e as NodeJS.ErrnoException).code ?? '')) throw keyUnreadable(path, e);
      return false;
    }
    if (link === undefined) return false;
    throw new C0Error('KEY_FILE_CORRUPT', `${path} is a link to ${link}, which does not exist: put the key file there, or remove the link to create a key here`);
  }
  checkIsFile(path);
  return true;
}

function checkIsFile(path: string): void {
  const st = statSync(path);
  if (!st.isFile()) throw new C0Error('KEY_FILE_CORRUPT', `${path} is ${st.isDirectory() ? 'a directory' : 'not a regular file'}, not a key file; move it away`);
}

export function createIdentity(dataDir: string, passphrase?: string, seed?: Uint8Array): Identity {
  // not mkdirSync's recursive form, which never returns under /proc (src/util/make-dirs.ts)
  makeDirs(dataDir, { code: 'DATA_DIR_INVALID', field: 'dataDir', what: `cannot use ${dataDir} as the key's directory`, mode: 0o700 });
  const path = keyFilePath(dataDir);
  if (hasKeyFile(dataDir)) throw keyExists(path);
  const signer = seed ? new Ed25519Signer(seed) : Ed25519Signer.generate();
  const did = didFromPublicKey(signer.publicKey);
  const raw = signer.exportSeed();
  let file: KeyFileV1;
  if (passphrase) {
    const salt = randomBytes(16);
    const key = scryptSync(passphrase, salt, 32, SCRYPT);
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', key, iv);
    c.setAAD(Buffer.from(did));
    const data = Buffer.concat([c.update(raw), c.final()]);
    file = {
      version: 1,
      did,
      kdf: 'scrypt',
      scrypt: { salt: salt.toString('hex'), N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p },
      cipher: { alg: 'aes-256-gcm', iv: iv.toString('hex'), tag: c.getAuthTag().toString('hex'), data: data.toString('hex') },
    };
  } else {
    file = { version: 1, did, kdf: 'none', seed: Buffer.from(raw).toString('hex') };
  }
  raw.fill(0);
  // Another creator may have written a key since the check above (two `init`s on one volume): never replace it.
  let published: boolean;
  try {
    published = publishSecretFile(path, JSON.stringify(file, null, 2) + '\n');
  } catch (e) {
    throw new C0Error('KEY_FILE_UNWRITABLE', `cannot write the key file ${path}: ${(e as Error).message}`, { field: 'dataDir' });
  }
  if (!published) {
    checkIsFile(path);
    throw keyExists(path);
  }
  return { did, signer, keyFile: path };
}

function keyExists(path: string): C0Error {
  return new C0Error('KEY_EXISTS', `a key file already exists at ${path}; refusing to overwrite it`);
}

/** identity.did's DID for a message about something else (KEY_MISSING): never throws. */
function recordedDidWords(dataDir: string): string {
  try {
    const r = readRecordedDidState(dataDir);
    return r.state === 'did' ? r.did : r.state === 'damaged' ? 'damaged' : '?';
  } catch {
    return 'unreadable';
  }
}

/** Read the DID without the passphrase (for `keys show` and the daemon lock). */
export function readKeyFileDid(dataDir: string): string {
  return parseKeyFile(keyFilePath(dataDir)).did;
}

/**
 * A key file (or identity.did, `what`) this process may not read (or whose directory it may not enter): not a corrupt
 * key, nor another one. Says who owns it and who the node runs as, so the fix (chown, or run as its owner) is plain.
 */
function keyUnreadable(path: string, e: unknown, what = `key file ${path}`): C0Error {
  const code = (e as NodeJS.ErrnoException).code ?? 'EIO';
  const why = osWords(code) ?? (e as Error).message;
  const owner = (p: string) => {
    try {
      const st = statSync(p);
      return `${p} is owned by uid ${st.uid} with mode ${(st.mode & 0o777).toString(8)}`;
    } catch {
      return undefined;
    }
  };
  const who = owner(path) ?? owner(dirname(path));
  const uid = process.getuid?.();
  const hint = PERMISSION.has(code) ? `; the node runs as uid ${uid ?? '?'}: run it as the key's owner, or \`chown\` the data directory and key to that user (keep the key 0600)` : '';
  return new C0Error('KEY_FILE_UNREADABLE', `${what} cannot be read: ${why} (${code})${who ? `; ${who}` : ''}${hint}`, { cause: e });
}

function parseKeyFile(path: string): KeyFileV1 {
  try {
    statSync(path);
  } catch (e) {
    // a directory the node may not enter hides the key: that is no missing key
    if (PERMISSION.has((e as NodeJS.ErrnoException).code ?? '')) throw keyUnreadable(path, e);
  }
  if (!existsSync(path)) {
    hasKeyFile(dirname(path)); // a link to a missing file says so (KEY_FILE_CORRUPT)
    // a data directory a node has used: a new key would be another node, which holds none of this one's jobs
    if (existsSync(join(dirname(path), 'db'))) {
      throw new C0Error(
        'KEY_MISSING',
        `no key file at ${path}, but ${dirname(path)} holds a node's data (db/${existsSync(didFilePath(dirname(path))) ? `, ${DID_FILE}: ${recordedDidWords(dirname(path))}` : ''}): restore ${KEY_FILE} from your backup. \`c0mpute keys init\` would make a NEW identity (another DID), which is not the node this data is from: its jobs, receipts and reputation stay with the old DID`,
      );
    }
    throw new C0Error('KEY_MISSING', `no key file at ${path}; run \`c0mpute keys init\` (or \`c0mpute init\`) first`);
  }
  checkIsFile(path);
  const st = statSync(path);
  if ((st.mode & 0o077) !== 0) {
    throw new C0Error('KEY_FILE_PERMISSIONS', `key file ${path} is readable by others (mode ${(st.mode & 0o777).toString(8)}); run \`chmod 600 ${path}\``);
  }
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw keyUnreadable(path, e);
  }
  let f: KeyFileV1;
  try {
    f = JSON.parse(text) as KeyFileV1;
  } catch {
    throw new C0Error('KEY_FILE_CORRUPT', `key file ${path} is not valid JSON`);
  }
  if (typeof f !== 'object' || f === null || Array.isArray(f) || f.version !== 1 || typeof f.did !== 'string' || (f.kdf !== 'none' && f.kdf !== 'scrypt')) {
    throw new C0Error('KEY_FILE_CORRUPT', `key file ${path} has an unknown format`);
  }
  return f;
}

export function isKeyEncrypted(dataDir: string): boolean {
  return parseKeyFile(keyFilePath(dataDir)).kdf === 'scrypt';
}

export function loadIdentity(dataDir: string, passphrase?: string): Identity {
  const path = keyFilePath(dataDir);
  const f = parseKeyFile(path);
  let seed: Buffer;
  if (f.kdf === 'none') {
    if (!f.seed || !/^[0-9a-f]{64}$/.test(f.seed)) throw new C0Error('KEY_FILE_CORRUPT', `key file ${path} has no valid seed`);
    seed = Buffer.from(f.seed, 'hex');
  } else {
    if (!passphrase) throw new C0Error('KEY_PASSPHRASE_REQUIRED', `key file ${path} is encrypted; pass --passphrase-file, set C0MPUTE_PASSPHRASE (or C0MPUTE_PASSPHRASE_FILE), or run in a terminal to be asked`);
    if (!f.scrypt || !f.cipher) throw new C0Error('KEY_FILE_CORRUPT', `key file ${path} lacks its scrypt or cipher parameters`);
    let key: Buffer;
    try {
      key = scryptSync(passphrase, Buffer.from(String(f.scrypt.salt), 'hex'), 32, { N: f.scrypt.N, r: f.scrypt.r, p: f.scrypt.p, maxmem: 256 * 1024 * 1024 });
    } catch (e) {
      throw new C0Error('KEY_FILE_CORRUPT', `key file ${path} has scrypt parameters that do not work: ${(e as Error).message}`);
    }
    try {
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(f.cipher.iv, 'hex'));
      d.setAAD(Buffer.from(f.did));
      d.setAuthTag(Buffer.from(f.cipher.tag, 'hex'));
      seed = Buffer.concat([d.update(Buffer.from(f.cipher.data, 'hex')), d.final()]);
    } catch {
      throw new C0Error('KEY_PASSPHRASE_WRONG', `the passphrase does not open ${path}`);
    }
  }
  const signer = new Ed25519Signer(seed);
  seed.fill(0);
  const did = didFromPublicKey(signer.publicKey);
  if (did !== f.did) throw new C0Error('KEY_FILE_CORRUPT', `key file ${path} names ${f.did} but its key is ${did}`);
  return { did, signer, keyFile: path };
}

/** `<dataDir>/identity.did`: the DID of the node whose data the directory holds, written at its first start. */
export const DID_FILE = 'identity.did';

export function didFilePath(dataDir: string): string {
  return join(dataDir, DID_FILE);
}

/**
 * What `<dataDir>/identity.did` says: no file (`none`: a data directory from before the file, or never started), a
 * DID (`did`), or a file that holds no valid DID (`damaged`: empty, whitespace, a truncated write, another file
 * restored over it; `text` is what it holds, cut short). A file this process may not read is KEY_FILE_UNREADABLE.
 */
export type RecordedDid = { state: 'none' } | { state: 'did'; did: string } | { state: 'damaged'; text: string };

export function readRecordedDidState(dataDir: string): RecordedDid {
  let text: string;
  try {
    text = readFileSync(didFilePath(dataDir), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { state: 'none' };
    // not another key: a file this process may not read (review s43 R6 F4: a start as root left it root's 0600), said as the key's own is
    throw keyUnreadable(didFilePath(dataDir), e, `${didFilePath(dataDir)} (the DID of the node this data directory belongs to)`);
  }
  const did = text.trim();
  const valid: boolean = isDid(did);
  return valid ? { state: 'did', did } : { state: 'damaged', text: did.slice(0, 80) };
}

/**
 * The data directory's identity.did holds no valid DID: IDENTITY_DID_CORRUPT, with `c0mpute start --new-identity` (which
 * records the key's DID) as the way forward when the key is this node's. Before (QA qaOps F5) an empty file read as "no
 * DID recorded", so the next start adopted whatever key it found without a word, and garbage was a KEY_MISMATCH against
 * "the node not a did".
 */
export function recordedDidCorrupt(dataDir: string, text: string): C0Error {
  const what = text === '' ? 'is empty' : `holds no valid DID ("${text}")`;
  return new C0Error(
    'IDENTITY_DID_CORRUPT',
    `${didFilePath(dataDir)} (the DID of the node this data directory belongs to) ${what}: it is damaged (a truncated write, a bad restore), so which node the data in ${dataDir} is from is unknown. Restore ${DID_FILE} from your backup (one line: the node's DID); if ${KEY_FILE} is that node's key (\`c0mpute keys show\` prints its DID), start once with \`c0mpute start --new-identity\`, which records the key's DID`,
    { field: DID_FILE },
  );
}

/**
 * The DID recorded in the data directory, or undefined when none is (a data directory from before, or never started);
 * IDENTITY_DID_CORRUPT when the file is there but holds no valid DID (recordedDidCorrupt).
 */
export function readRecordedDid(dataDir: string): string | undefined {
  const r = readRecordedDidState(dataDir);
  if (r.state === 'damaged') throw recordedDidCorrupt(dataDir, r.text);
  return r.state === 'did' ? r.did : undefined;
}

/**
 * A new key (`keys init`, `init`) for a data directory whose identity.did names a node: that directory's data is
 * that DID's, and a new key is another node (KEY_MISMATCH at its start). Refused, DATA_DIR_HAS_IDENTITY (exit 3), unless
 * `force` (`keys init --force`): the way forward is the key's backup. Before (QA qaOps F11) `keys init` there said
 * `created …` with no word, and restoring the backup then failed KEY_EXISTS until the new key was deleted. Returns the
 * DID recorded (for `force`'s warning), or undefined (none, or a damaged file: start says IDENTITY_DID_CORRUPT).
 */
export function checkNewKeyFits(dataDir: string, force = false): string | undefined {
  // no directory there (none yet, or a file in its place): nothing recorded; making it says what is wrong (DATA_DIR_INVALID)
  try {
    if (!statSync(dataDir).isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  if (hasKeyFile(dataDir)) return undefined; // KEY_EXISTS says it
  const r = readRecordedDidState(dataDir);
  if (r.state !== 'did') return undefined;
  if (!force) {
    throw new C0Error(
      'DATA_DIR_HAS_IDENTITY',
      `${dataDir} holds the data of the node ${r.did} (${DID_FILE}), whose key is not there: restore ${KEY_FILE} from your backup. A new key would be another node (its jobs, receipts and reputation stay with ${r.did}); to make one anyway, run \`c0mpute keys init --force\`, then start once with \`c0mpute start --new-identity\``,
      { field: DID_FILE, detail: { did: r.did } },
    );
  }
  return r.did;
}

/**
 * The key a node starts with must be the one its data directory's data is from (review s40 F4: after identity.key was
 * lost, `keys init` made a new DID and the node started on the old data with no warning, listing none of its jobs).
 * The first start records the DID in identity.did; a later start with another key is KEY_MISMATCH (exit 3), unless
 * `adopt` (`c0mpute start --new-identity`), which records the new DID. A data directory from before this file (none
 * recorded) takes the key it starts with.
 */
export function bindDataDirIdentity(dataDir: string, did: string, adopt = false): void {
  // --new-identity replaces a damaged identity.did too (recordedDidCorrupt names it as the way forward)
  const r = readRecordedDidState(dataDir);
  if (r.state === 'damaged' && !adopt) throw recordedDidCorrupt(dataDir, r.text);
  const recorded = r.state === 'did' ? r.did : undefined;
  if (recorded === did) return;
  if (recorded !== undefined && !adopt) {
    throw new C0Error(
      'KEY_MISMATCH',
      `${keyFilePath(dataDir)} is ${did}, but the data in ${dataDir} is the node ${recorded} (${DID_FILE}): its jobs, receipts and reputation are that DID's. Restore that node's ${KEY_FILE} from your backup; to go on as the new identity with this data directory deliberately, start once with \`c0mpute start --new-identity\``,
    );
  }
  writeSecretFile(didFilePath(dataDir), did + '\n');
}
