/**
 * File arguments of the `c0mpute` command, as child processes (no network, no
 * daemon): a missing or unreadable input, a members file that is not YAML or
 * not a members list, and an output in a missing directory or onto a
 * directory are operator errors — exit 3, one `error CODE: …` line
 * (INPUT_UNREADABLE, POOL_MEMBERS_FILE_INVALID, OUTPUT_UNWRITABLE) — never
 * `internal error` (exit 70). `pool-provider roster` and `join`, `record
 * sign --out`, `train start --out`, `run --output` (refused before anything
 * is bought) and `ledger export`.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ed25519Signer } from '../../src/records/index.js';
import { createIdentity, keyFilePath } from '../../src/node/identity.js';
import { sealEntries } from '../../src/ledger/index.js';
import { writeLedgerDir } from '../../src/ledger/store.js';
import { admitted, tempDir } from '../unit/ledger/helpers.js';
import { runCli, type CliRun as Run } from './node-helpers.js';

const t = tempDir('c0-cli-files-');
after(() => t.cleanup());

const c0 = (args: string[]): Promise<Run> => runCli(args, t.dir, { HOME: join(t.dir, 'home') });

/** Exit 3, exactly one stderr line `error CODE: …`, no stack trace and no "internal error". */
function operatorError(r: Run, code: string, what: string): void {
  assert.equal(r.code, 3, `${what}: exit code (stderr: ${r.err})`);
  const lines = r.err.trimEnd().split('\n');
  assert.equal(lines.length, 1, `${what}: one line, got: ${r.err}`);
  assert.match(lines[0]!, new RegExp(`^error ${code}: \\S`), what);
  assert.doesNotMatch(r.err, /internal error|\n\s+at /, what);
}

const p = (...s: string[]) => join(t.dir, ...s);

describe('file arguments: missing, unreadable or unwritable → exit 3 with a stable code', () => {
  let memberDir = '';
  before(async () => {
    createIdentity(p('pool'));
    memberDir = p('member');
    const member = createIdentity(memberDir);
    writeFileSync(p('members.yaml'), `members:\n  - {did: ${member.did}, weight: 1, hardware: {cpuCores: 4, memoryMiB: 8192}}\n`);
    writeFileSync(p('not-yaml.yaml'), 'members: [\n');
    writeFileSync(p('not-members.yaml'), 'members:\n  - 5\n  - 6\n');
    writeFileSync(p('offer.json'), JSON.stringify({ job: 'sha256:' + '1'.repeat(64), advert: 'sha256:' + '2'.repeat(64), price: { amount: '0.042', currency: 'USD' }, durationMs: 60_000, issuedAt: 1_800_000_000_000, startBy: 1_800_000_120_000, expiresAt: 1_800_000_060_000 }));
    writeFileSync(p('run.yaml'), `name: t\nmodel: { layers: [4, 16, 3] }\nseed: 7\nmembers:\n  - { did: ${member.did}, addr: /ip4/127.0.0.1/tcp/4101 }\nbatch: 8\nstepsPerEpoch: 2\nepochs: 1\nlr: "0.3"\ntimeoutMs: 5000\n`);
    writeFileSync(p('job.yaml'), 'workload: builtin.sha256\ninput: offer.json\nmaxPrice: {amount: "0.01", currency: USD}\n');
    await writeLedgerDir(p('ledger'), { entries: sealEntries([admitted('c1')], Ed25519Signer.generate()).map((e) => e.bytes), receipts: [] });
    // The roster the member joins below.
    const r = await c0(['pool-provider', 'roster', '--pool-dir', p('pool'), '--members', p('members.yaml'), '--out', p('roster.cose')]);
    assert.equal(r.code, 0, r.err);
  });

  test('pool-provider roster and join', async () => {
    const roster = ['pool-provider', 'roster', '--pool-dir', p('pool')];
    const join_ = ['--data-dir', memberDir, 'pool-provider', 'join', '--no-push'];
    const cases: Array<[string[], string]> = [
      [[...roster, '--members', p('nonexist.yaml'), '--out', p('r2.cose')], 'INPUT_UNREADABLE'],
      [[...roster, '--members', p('not-yaml.yaml'), '--out', p('r2.cose')], 'POOL_MEMBERS_FILE_INVALID'],
      [[...roster, '--members', p('not-members.yaml'), '--out', p('r2.cose')], 'POOL_MEMBERS_FILE_INVALID'],
      [[...roster, '--members', p('members.yaml'), '--out', p('nodir', 'r2.cose')], 'OUTPUT_UNWRITABLE'],
      [[...roster, '--members', p('members.yaml'), '--out', t.dir], 'OUTPUT_UNWRITABLE'],
      [[...join_, '--roster', p('nope.cose'), '--out', p('m.cose')], 'INPUT_UNREADABLE'],
      [[...join_, '--roster', p('roster.cose'), '--out', p('nodir', 'm.cose')], 'OUTPUT_UNWRITABLE'],
      [['--data-dir', memberDir, 'pool-provider', 'leave', '--no-push', '--roster', p('roster.cose'), '--out', t.dir], 'OUTPUT_UNWRITABLE'],
    ];
    const runs = await Promise.all(cases.map(([args]) => c0(args)));
    runs.forEach((r, i) => operatorError(r, cases[i]![1], cases[i]![0].join(' ')));
    // A seq the pool already used (seq 1, at --out or signed from the key folder to another file) is refused, and
    // nothing is written; one that is not a number too.
    const before = readFileSync(p('roster.cose'));
    operatorError(await c0([...roster, '--members', p('members.yaml'), '--out', p('roster.cose'), '--seq', '1']), 'POOL_ROSTER_SEQ_NOT_NEWER', 'roster --seq 1 again, same --out');
    operatorError(await c0([...roster, '--members', p('members.yaml'), '--out', p('r3.cose'), '--seq', '1']), 'POOL_ROSTER_SEQ_NOT_NEWER', 'roster --seq 1 again, another --out');
    // a --seq that is no number is a bad option value: exit 2, as --epoch-ms abc is
    const two = await c0([...roster, '--members', p('members.yaml'), '--out', p('r3.cose'), '--seq', 'two']);
    assert.equal(two.code, 2, `roster --seq two: exit code (stderr: ${two.err})`);
    assert.match(two.err.trimEnd(), /^error POOL_ROSTER_SEQ_INVALID: --seq "two" is not a non-negative integer$/);
    assert.deepEqual(readFileSync(p('roster.cose')), before, 'the roster at --out is kept');
    assert.ok(!existsSync(p('r3.cose')), 'nothing written');
    const ok = await c0([...join_, '--roster', p('roster.cose'), '--out', p('m.cose')]);
    assert.equal(ok.code, 0, ok.err);
    assert.ok(existsSync(p('m.cose')));
  });

  test('record sign --out, train start --out, run --output, ledger export', async () => {
    const cases: Array<[string[], string]> = [
      [['--data-dir', memberDir, 'record', 'sign', '--type', 'c0mpute.offer/1', 'offer.json', '--out', p('nodir', 'o.cbor')], 'OUTPUT_UNWRITABLE'],
      [['--data-dir', memberDir, 'train', 'start', 'run.yaml', '--out', p('nodir', 'run.json')], 'OUTPUT_UNWRITABLE'],
      [['--data-dir', memberDir, 'run', 'job.yaml', '--output', p('nodir', 'out.bin')], 'OUTPUT_UNWRITABLE'],
      [['--data-dir', memberDir, 'run', 'job.yaml', '--output', t.dir], 'OUTPUT_UNWRITABLE'],
    ];
    const runs = await Promise.all(cases.map(([args]) => c0(args)));
    runs.forEach((r, i) => operatorError(r, cases[i]![1], cases[i]![0].join(' ')));
    // One at a time: each opens the ledger's LevelDB.
    operatorError(await c0(['ledger', 'export', p('ledger'), p('nodir', 'ledger.cbor')]), 'OUTPUT_UNWRITABLE', 'ledger export to a missing directory');
    operatorError(await c0(['ledger', 'export', p('ledger'), t.dir]), 'OUTPUT_UNWRITABLE', 'ledger export onto a directory');
    assert.deepEqual(readdirSync(t.dir).filter((f) => f.startsWith('.') && f.endsWith('.tmp')), [], 'no temporary file left');
    assert.ok(!existsSync(p('nodir')), 'nothing created');
  });

  test('init on a data directory that is a file; a key file that is JSON but not a key file', async () => {
    writeFileSync(p('afile'), 'x');
    operatorError(await c0(['init', '--data-dir', p('afile')]), 'DATA_DIR_INVALID', 'init onto a file');
    operatorError(await c0(['init', '--data-dir', p('afile', 'sub')]), 'DATA_DIR_INVALID', 'init under a file');
    const dir = p('nullkey');
    createIdentity(dir);
    writeFileSync(keyFilePath(dir), 'null', { mode: 0o600 });
    operatorError(await c0(['keys', 'show', '--data-dir', dir]), 'KEY_FILE_CORRUPT', 'a key file of null');
    // a --wait that is not a number: refused before anything is published (NaN meant no wait for the market)
    writeFileSync(p('wait-job.yaml'), 'workload: builtin.sha256\ninput: hello\nmaxPrice: "0.01 USD"\ndeadline: 60s\n');
    // (a bad option value: a wrong command line, exit 2)
    const wait = await c0(['run', p('wait-job.yaml'), '--wait', 'abc', '--data-dir', dir]);
    assert.equal(wait.code, 2, `run --wait abc: exit code (stderr: ${wait.err})`);
    assert.match(wait.err, /^error CLI_BAD_WAIT: \S/);
  });
});
