/**
 * The real `c0mpute` command as child processes (node bin/c0mpute.js), with its
 * data directory in a temp dir: keys init/show, record sign → verify → tamper,
 * inspect, and the documented exit codes (0 ok, 1 negative answer, 2 usage,
 * 3 operator error) with one `error CODE: …` line and no stack trace.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadIdentity } from '../../src/node/identity.js';
import { hashHex } from '../../src/records/address.js';

// dist/test/e2e/ → project root
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'c0mpute.js');

interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
  out: string;
}

let tmp: string;

function run(args: string[], opts: { env?: Record<string, string>; input?: Uint8Array | string } = {}): Promise<Run> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('C0MPUTE_')) env[k] = v;
  env.HOME = join(tmp, 'home'); // never touch the real ~/.c0mpute
  Object.assign(env, opts.env ?? {});
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: tmp, env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code) => {
      const stdout = Buffer.concat(out);
      resolve({ code, stdout, stderr: Buffer.concat(err).toString('utf8'), out: stdout.toString('utf8') });
    });
    child.stdin.end(opts.input ?? '');
  });
}

/** An operator error: exit 3, exactly one stderr line `error CODE: …`, no stack trace. */
function assertOperatorError(r: Run, code: string): void {
  assert.equal(r.code, 3, `exit code (stderr: ${r.stderr})`);
  const lines = r.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, `one line, got: ${r.stderr}`);
  assert.match(lines[0]!, new RegExp(`^error ${code}: \\S`));
  assert.doesNotMatch(r.stderr + r.out, /\n\s+at |Error:|\.js:\d+/, 'no stack trace');
}

const NOW = 1_800_000_000_000;
const offerFields = {
  job: 'sha256:' + '1'.repeat(64),
  advert: 'sha256:' + '2'.repeat(64),
  price: { amount: '0.042', currency: 'USD' },
  durationMs: 60_000,
  issuedAt: NOW,
  startBy: NOW + 120_000,
  expiresAt: NOW + 60_000,
};

before(() => {
  tmp = mkdtempSync(join(tmpdir(), 'c0-cli-'));
  writeFileSync(join(tmp, 'offer.json'), JSON.stringify(offerFields));
  writeFileSync(join(tmp, 'bad-offer.json'), JSON.stringify({ ...offerFields, expiresAt: NOW + 200_000 }));
  writeFileSync(join(tmp, 'advert.json'), JSON.stringify({
    seq: 1,
    issuedAt: NOW,
    expiresAt: NOW + 3_600_000,
    workloads: ['infer.llm'],
    tier: 'standard',
    hardware: { cpuCores: 8, memoryMiB: 16_384 },
    boxKey: 'ab'.repeat(32),
  }));
  writeFileSync(join(tmp, 'not-json.json'), '{ nope');
});
after(() => {
  rmSync(tmp, { recursive: true, force: true });
});

describe('c0mpute keys', { concurrency: 3 }, () => {
  test('keys init without a passphrase, keys show: DID, PeerId, key file; the seed is never printed', async () => {
    const dir = join(tmp, 'plain');
    const init = await run(['--data-dir', dir, 'keys', 'init']);
    assert.equal(init.code, 0, init.stderr);
    const did = /created (did:key:z\S+)/.exec(init.out)?.[1];
    assert.ok(did, init.out);
    const keyFile = join(dir, 'identity.key');
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    const file = JSON.parse(readFileSync(keyFile, 'utf8')) as { kdf: string; seed: string };
    assert.equal(file.kdf, 'none');
    const seedHex = file.seed;
    assert.match(seedHex, /^[0-9a-f]{64}$/);

    const show = await run(['--data-dir', dir, 'keys', 'show']);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.out, new RegExp(`did +${did}`));
    assert.match(show.out, /peer id +12D3KooW\S+/);
    assert.ok(show.out.includes(keyFile));
    const json = await run(['--data-dir', dir, 'keys', 'show', '--json']);
    assert.equal(json.code, 0, json.stderr);
    const info = JSON.parse(json.out) as Record<string, unknown>;
    assert.deepEqual(Object.keys(info).sort(), ['did', 'encrypted', 'keyFile', 'peerId', 'verified']);
    assert.equal(info.did, did);
    assert.equal(info.encrypted, false);
    // an unencrypted key's DID is derived from its seed, as `start` checks it (QA qaOps F4)
    assert.equal(info.verified, true);
    assert.equal(info.keyFile, keyFile);
    for (const r of [init, show, json]) {
      assert.ok(!(r.out + r.stderr).toLowerCase().includes(seedHex), 'seed printed');
      assert.ok(!(r.out + r.stderr).includes(Buffer.from(seedHex, 'hex').toString('base64')), 'seed printed as base64');
    }
  });

  test('keys init with C0MPUTE_PASSPHRASE: encrypted; the seed is in neither the file nor any output', async () => {
    const dir = join(tmp, 'enc');
    const env = { C0MPUTE_PASSPHRASE: 'correct horse battery' };
    const init = await run(['--data-dir', dir, 'keys', 'init'], { env });
    assert.equal(init.code, 0, init.stderr);
    assert.match(init.out, /\(encrypted\)/);
    const keyFile = join(dir, 'identity.key');
    assert.equal(statSync(keyFile).mode & 0o777, 0o600);
    const seedHex = Buffer.from(loadIdentity(dir, env.C0MPUTE_PASSPHRASE).signer.exportSeed()).toString('hex');
    assert.ok(!readFileSync(keyFile, 'utf8').includes(seedHex), 'seed in the encrypted key file');
    const show = await run(['--data-dir', dir, 'keys', 'show', '--json']);
    assert.equal(show.code, 0);
    assert.equal((JSON.parse(show.out) as { encrypted: boolean }).encrypted, true);
    for (const r of [init, show]) assert.ok(!(r.out + r.stderr).includes(seedHex), 'seed printed');
  });

  test('keys init --no-passphrase ignores C0MPUTE_PASSPHRASE; a second init refuses: KEY_EXISTS', async () => {
    const dir = join(tmp, 'nopass');
    const init = await run(['--data-dir', dir, 'keys', 'init', '--no-passphrase'], { env: { C0MPUTE_PASSPHRASE: 'x' } });
    assert.equal(init.code, 0, init.stderr);
    assert.match(init.out, /\(unencrypted\)/);
    assertOperatorError(await run(['--data-dir', dir, 'keys', 'init', '--no-passphrase']), 'KEY_EXISTS');
  });

  test('C0MPUTE_HOME is the default data directory; keys show without a key → KEY_MISSING (exit 3)', async () => {
    const home = join(tmp, 'home-env');
    assertOperatorError(await run(['keys', 'show'], { env: { C0MPUTE_HOME: home } }), 'KEY_MISSING');
    const init = await run(['keys', 'init'], { env: { C0MPUTE_HOME: home } });
    assert.equal(init.code, 0, init.stderr);
    assert.ok(init.out.includes(join(home, 'identity.key')));
  });
});

describe('c0mpute record', { concurrency: 3 }, () => {
  const dir = () => join(tmp, 'signer');
  const env = { C0MPUTE_PASSPHRASE: 'pw for the signer' };
  let did = '';

  before(async () => {
    const init = await run(['--data-dir', dir(), 'keys', 'init'], { env });
    assert.equal(init.code, 0, init.stderr);
    did = /created (did:key:z\S+)/.exec(init.out)![1]!;
  });

  test('sign → verify (exit 0) → tamper one byte → verify exits 1 with the code', async () => {
    const envFile = join(tmp, 'offer.cbor');
    const sign = await run(['--data-dir', dir(), 'record', 'sign', '--type', 'c0mpute.offer/1', 'offer.json', '-o', envFile], { env });
    assert.equal(sign.code, 0, sign.stderr);
    const bytes = readFileSync(envFile);
    assert.equal(sign.stderr.trim(), hashHex(bytes), 'prints the content address');

    const ok = await run(['record', 'verify', envFile]);
    assert.equal(ok.code, 0, ok.out + ok.stderr);
    assert.equal(ok.out.trim(), `valid c0mpute.offer/1 signed by ${did} ${hashHex(bytes)}`);
    const typed = await run(['record', 'verify', envFile, '--type', 'c0mpute.offer/1']);
    assert.equal(typed.code, 0);

    const tampered = Buffer.from(bytes);
    tampered[tampered.length - 1] = tampered[tampered.length - 1]! ^ 0x01;
    writeFileSync(join(tmp, 'tampered.cbor'), tampered);
    const bad = await run(['record', 'verify', 'tampered.cbor']);
    assert.equal(bad.code, 1);
    assert.match(bad.out, /^invalid ENVELOPE_BAD_SIGNATURE: /);
    assert.equal(bad.stderr, '');

    // A tampered payload byte (the price "0.042" → "0.043"): still a bad signature.
    const i = bytes.indexOf(Buffer.from('0.042'));
    assert.ok(i > 0);
    const cheaper = Buffer.from(bytes);
    cheaper[i + 4] = '3'.charCodeAt(0);
    const r2 = await run(['record', 'verify', '-'], { input: cheaper });
    assert.equal(r2.code, 1);
    assert.match(r2.out, /^invalid ENVELOPE_BAD_SIGNATURE: /);
  });

  test('verify --type of another kind exits 1 with RECORD_WRONG_TYPE', async () => {
    const sign = await run(['--data-dir', dir(), 'record', 'sign', '--type', 'c0mpute.offer/1', 'offer.json'], { env });
    assert.equal(sign.code, 0, sign.stderr);
    const r = await run(['record', 'verify', '-', '--type', 'c0mpute.job/1'], { input: sign.stdout });
    assert.equal(r.code, 1);
    assert.match(r.out, /^invalid RECORD_WRONG_TYPE: /);
  });

  test('verify --type naming no kind is the command line’s fault, not the record’s: RECORD_UNKNOWN_TYPE, exit 3 (as sign), before the record is read', async () => {
    const sign = await run(['--data-dir', dir(), 'record', 'sign', '--type', 'c0mpute.offer/1', 'offer.json'], { env });
    assert.equal(sign.code, 0, sign.stderr);
    const file = join(tmp, 'unknown-type-offer.cbor');
    writeFileSync(file, sign.stdout);
    for (const args of [[file], ['-'], [join(tmp, 'no-such-record.cbor')]]) {
      const r = await run(['record', 'verify', ...args, '--type', 'nosuch'], { input: sign.stdout });
      assertOperatorError(r, 'RECORD_UNKNOWN_TYPE');
      assert.equal(r.out, '', 'no verdict on the record');
    }
    const blank = await run(['record', 'verify', file, '--type', ' ']);
    assert.equal(blank.code, 2, blank.stderr);
    assert.match(blank.stderr, /^error USAGE_EMPTY_VALUE: --type takes a content type/);
  });

  test('inspect --json: type, signer, address, validity, fields; and the error code of an invalid record', async () => {
    const sign = await run(['--data-dir', dir(), 'record', 'sign', '--type', 'c0mpute.advert/1', 'advert.json'], { env });
    assert.equal(sign.code, 0, sign.stderr);
    const r = await run(['record', 'inspect', '--json', '-'], { input: sign.stdout });
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.out) as { type: string; signer: string; address: string; valid: boolean; error: unknown; fields: Record<string, unknown> };
    assert.equal(j.type, 'c0mpute.advert/1');
    assert.equal(j.signer, did);
    assert.equal(j.address, hashHex(sign.stdout));
    assert.equal(j.valid, true);
    assert.equal(j.error, null);
    assert.deepEqual(j.fields.workloads, ['infer.llm']);
    assert.equal(j.fields.boxKey, 'ab'.repeat(32), 'bytes shown as hex');
    assert.equal(j.fields.expiresAt, NOW + 3_600_000);

    const bad = Buffer.from(sign.stdout);
    bad[bad.length - 1] = bad[bad.length - 1]! ^ 0x80;
    const r2 = await run(['record', 'inspect', '--json', '-'], { input: bad });
    assert.equal(r2.code, 0, 'inspect reports, it does not judge');
    const j2 = JSON.parse(r2.out) as { valid: boolean; error: { code: string }; type: string };
    assert.equal(j2.valid, false);
    assert.equal(j2.error.code, 'ENVELOPE_BAD_SIGNATURE');
    assert.equal(j2.type, 'c0mpute.advert/1');

    const human = await run(['record', 'inspect', '-'], { input: sign.stdout });
    assert.equal(human.code, 0);
    assert.match(human.out, /^type +c0mpute\.advert\/1$/m);
    assert.match(human.out, /^valid +yes$/m);
  });

  test('an invalid record cannot be signed: exit 3 with its code', async () => {
    const r = await run(['--data-dir', dir(), 'record', 'sign', '--type', 'c0mpute.offer/1', 'bad-offer.json'], { env });
    assertOperatorError(r, 'OFFER_EXPIRES_AFTER_START');
    assert.equal(r.stdout.length, 0, 'nothing written');
    assertOperatorError(await run(['--data-dir', dir(), 'record', 'sign', '--type', 'c0mpute.nope/1', 'offer.json'], { env }), 'RECORD_UNKNOWN_TYPE');
    assertOperatorError(await run(['--data-dir', dir(), 'record', 'sign', '--type', 'c0mpute.offer/1', 'not-json.json'], { env }), 'INPUT_NOT_JSON');
  });

  test('an encrypted key needs its passphrase: missing → KEY_PASSPHRASE_REQUIRED, wrong → KEY_PASSPHRASE_WRONG', async () => {
    assertOperatorError(await run(['--data-dir', dir(), 'record', 'sign', '--type', 'c0mpute.offer/1', 'offer.json']), 'KEY_PASSPHRASE_REQUIRED');
    assertOperatorError(await run(['--data-dir', dir(), 'record', 'sign', '--type', 'c0mpute.offer/1', 'offer.json'], { env: { C0MPUTE_PASSPHRASE: 'wrong' } }), 'KEY_PASSPHRASE_WRONG');
  });

  test('a missing file → exit 3, one `error INPUT_UNREADABLE:` line, no stack trace', async () => {
    assertOperatorError(await run(['record', 'verify', join(tmp, 'does-not-exist.cbor')]), 'INPUT_UNREADABLE');
    assertOperatorError(await run(['record', 'inspect', join(tmp, 'does-not-exist.cbor')]), 'INPUT_UNREADABLE');
  });

  test('junk bytes: verify exits 1 with ENVELOPE_MALFORMED', async () => {
    const r = await run(['record', 'verify', '-'], { input: 'hello' });
    assert.equal(r.code, 1);
    assert.match(r.out, /^invalid ENVELOPE_MALFORMED: /);
  });

  test('usage errors exit 2 with one `error USAGE_…:` line: unknown flag, missing argument, unknown command', async () => {
    const cases: [string[], string][] = [
      [['record', 'verify', 'x.cbor', '--bogus'], 'USAGE_UNKNOWN_OPTION'],
      [['--bogus'], 'USAGE_UNKNOWN_OPTION'],
      [['record', 'verify'], 'USAGE_MISSING_ARGUMENT'],
      [['record', 'sign', 'offer.json'], 'USAGE_MISSING_MANDATORY_OPTION_VALUE'],
      [['market', '--limit'], 'USAGE_OPTION_MISSING_ARGUMENT'],
      [['reputation', 'a', 'b'], 'USAGE_EXCESS_ARGUMENTS'],
      [['nonsense'], 'USAGE_UNKNOWN_COMMAND'],
    ];
    const runs = await Promise.all(cases.map(([args]) => run(args)));
    runs.forEach((r, i) => {
      const [args, code] = cases[i]!;
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`^error ${code}: \\S.*\\n\\(run with --help for usage\\)\\n$`), args.join(' '));
    });
  });
});
