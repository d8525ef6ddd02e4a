/**
 * `pool-provider roster` input checks, through the real CLI (bin/c0mpute.js): a members file with a key the roster
 * has no place for (a typo: `wieght`, `membrs`) is POOL_MEMBERS_FILE_INVALID naming the key's path, exit 3, nothing
 * written (before, the key was ignored: weight 1, or no members at all, and exit 0).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';
import { runNode } from './cli-run.js';

const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'c0-pool-roster-input-'));
after(() => rmSync(root, { recursive: true, force: true }));
const env: NodeJS.ProcessEnv = { ...process.env, C0MPUTE_HOME: join(root, 'home'), C0MPUTE_PASSPHRASE: '' };
delete env.NODE_TEST_CONTEXT;
const c0 = async (...args: string[]) => {
  const r = await runNode([bin, ...args], { env, timeout: 60_000 });
  return { code: r.status, out: r.stdout, err: r.stderr };
};
const poolDir = join(root, 'poolkey');
let did = '';

async function setup(): Promise<void> {
  if (did) return;
  const r = await c0('pool-provider', 'init', '--pool-dir', poolDir);
  assert.equal(r.code, 0, r.err);
  const k = await c0('--data-dir', join(root, 'm1'), 'keys', 'init', '--no-passphrase');
  assert.equal(k.code, 0, k.err);
  did = /did:key:\w+/.exec(k.out + k.err)![0];
}

const members = (name: string, text: string) => {
  const p = join(root, name);
  writeFileSync(p, text);
  return p;
};

test('a members file with an unknown key is refused naming it; nothing is written', async () => {
  await setup();
  const hw = '{ cpuCores: 4, memoryMiB: 8192 }';
  const cases: Array<[string, string, string]> = [
    ['typo-weight.yaml', `members:\n  - { did: ${did}, wieght: 5, hardware: ${hw} }\n`, 'members[0].wieght'],
    ['typo-top.yaml', `members:\n  - { did: ${did}, weight: 5, hardware: ${hw} }\nmembrs: []\n`, 'membrs'],
    ['typo-hw.yaml', `members:\n  - { did: ${did}, weight: 5, hardware: { cpuCores: 4, memoryMib: 8192 } }\n`, 'members[0].hardware.memoryMib'],
  ];
  for (const [name, text, key] of cases) {
    const out = join(root, `${name}.cose`);
    const r = await c0('pool-provider', 'roster', '--pool-dir', poolDir, '--members', members(name, text), '--out', out);
    assert.equal(r.code, 3, `${name}: ${r.out}${r.err}`);
    assert.match(r.err, /POOL_MEMBERS_FILE_INVALID/);
    assert.ok(r.err.includes(`unknown key ${key}`), `${name}: ${r.err}`);
    assert.equal(existsSync(out), false, `${name}: nothing written`);
  }
  const ok = await c0('pool-provider', 'roster', '--pool-dir', poolDir, '--members', members('ok.yaml', `members:\n  - { did: ${did}, weight: 5, hardware: ${hw} }\n`), '--out', join(root, 'ok.cose'));
  assert.equal(ok.code, 0, ok.err);
});

test('--epoch-ms and --lifetime-days that are not values a roster takes: a usage error naming the option (exit 2), nothing written', async () => {
  await setup();
  const file = members('opts.yaml', `members:\n  - { did: ${did}, weight: 1, hardware: { cpuCores: 4, memoryMiB: 8192 } }\n`);
  const cases: Array<[string[], string, RegExp]> = [
    [['--epoch-ms', 'abc'], 'POOL_ROSTER_EPOCH_INVALID', /--epoch-ms "abc"/],
    [['--epoch-ms', '500'], 'POOL_ROSTER_EPOCH_INVALID', /--epoch-ms "500"/],
    [['--epoch-ms', '1.5e3'], 'POOL_ROSTER_EPOCH_INVALID', /--epoch-ms/],
    [['--lifetime-days', 'abc'], 'POOL_ROSTER_LIFETIME_INVALID', /--lifetime-days "abc"/],
    [['--lifetime-days', '0'], 'POOL_ROSTER_LIFETIME_INVALID', /--lifetime-days "0"/],
    [['--lifetime-days', '91'], 'POOL_ROSTER_LIFETIME_INVALID', /at most 90/],
  ];
  for (const [opts, code, says] of cases) {
    const out = join(root, `opt-${opts.join('')}.cose`);
    const r = await c0('pool-provider', 'roster', '--pool-dir', poolDir, '--members', file, '--out', out, ...opts);
    assert.equal(r.code, 2, `${opts.join(' ')}: ${r.out}${r.err}`);
    assert.match(r.err, new RegExp(code));
    assert.match(r.err, says);
    assert.equal(existsSync(out), false);
  }
  const ok = await c0('pool-provider', 'roster', '--pool-dir', poolDir, '--members', file, '--out', join(root, 'opt-ok.cose'), '--epoch-ms', '2000', '--lifetime-days', '0.3');
  assert.equal(ok.code, 0, ok.err);
});

test('--pool-dir without a pool key: KEY_MISSING says to run pool-provider init, not keys init', async () => {
  await setup();
  const missing = join(root, 'no-such-poolkey');
  const file = members('nokey.yaml', `members:\n  - { did: ${did}, weight: 1, hardware: { cpuCores: 4, memoryMiB: 8192 } }\n`);
  const r = await c0('pool-provider', 'roster', '--pool-dir', missing, '--members', file, '--out', join(root, 'nokey.cose'));
  assert.equal(r.code, 3, r.err);
  assert.match(r.err, /KEY_MISSING/);
  assert.ok(r.err.includes(`pool-provider init --pool-dir ${missing}`), r.err);
  assert.doesNotMatch(r.err, /keys init/);
});
