/** The real `c0mpute market probe --records` as a child process on real record files (offline: no daemon). */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { seal, T, type Opened } from '../../src/records/index.js';
import { NOW, P, advert, type Party } from '../unit/market/fixtures.js';

const BIN = fileURLToPath(new URL('../../../bin/c0mpute.js', import.meta.url));
let root: string;
let records: string;

function c0(...args: string[]): { code: number; out: string; err: string } {
  const r = spawnSync(process.execPath, [BIN, '--data-dir', join(root, 'data'), ...args], { encoding: 'utf8', env: { ...process.env, C0MPUTE_LOG_LEVEL: 'silent' } });
  return { code: r.status ?? -1, out: r.stdout, err: r.stderr };
}

function put(name: string, r: Opened): void {
  writeFileSync(join(records, name), r.bytes);
}

function jobFile(name: string, maxPrice: string, extra = ''): string {
  const p = join(root, name);
  writeFileSync(p, `workload: infer.llm\nmaxPrice: "${maxPrice}"\ninput: hello\ntimeout: 30s\n${extra}`);
  return p;
}

const priced = (p: Party, amount: string, boxKey = true) => advert(p, { prices: [{ workload: 'infer.llm', unit: 'job', price: { amount, currency: 'USD' } }], ...(boxKey ? { boxKey: new Uint8Array(32).fill(1) } : {}) });
const presence = (p: Party, freeSlots = 1) => seal(T.presence, { workloads: ['infer.llm'], freeSlots, issuedAt: NOW - 2_000, windowMs: 15_000 }, p.signer);

before(() => {
  root = mkdtempSync(join(tmpdir(), 'c0-probe-cli-'));
  records = join(root, 'records');
  mkdirSync(records);
  put('a1.cbor', priced(P(1), '0.30'));
  put('a2.cbor', priced(P(2), '0.2'));
  put('a3.cbor', priced(P(3), '0.3', false));
  put('a4.cbor', priced(P(4), '0.1')); // no presence: not live
  for (const n of [1, 2, 3]) put(`p${n}.cbor`, presence(P(n)));
});

after(() => rmSync(root, { recursive: true, force: true }));

test('probe ranks the live candidates cheapest first, equal prices by DID; a provider with no presence is not one', () => {
  const r = c0('market', 'probe', jobFile('job.yaml', '0.5 USD'), '--records', records, '--at', String(NOW), '--json');
  assert.equal(r.code, 0, r.err + r.out);
  const j = JSON.parse(r.out);
  const eq = [P(1).did, P(3).did].sort();
  assert.deepEqual(j.candidates.map((c: { provider: string }) => c.provider), [P(2).did, ...eq]);
  assert.deepEqual(j.candidates.map((c: { cost: { amount: string } }) => c.cost.amount), ['0.2', '0.3', '0.3']);
  assert.deepEqual(j.rejected.map((x: { provider: string; reasons: Array<{ code: string }> }) => [x.provider, x.reasons.map((y) => y.code)]), [[P(4).did, ['NOT_LIVE']]]);
});

test('a sealed input drops the provider without a box key; --designated pins one', () => {
  const sealed = JSON.parse(c0('market', 'probe', jobFile('sealed.yaml', '0.5 USD', 'sealInput: true\n'), '--records', records, '--at', String(NOW), '--json').out);
  assert.ok(!sealed.candidates.some((c: { provider: string }) => c.provider === P(3).did));
  assert.deepEqual(sealed.rejected.find((x: { provider: string }) => x.provider === P(3).did).reasons.map((y: { code: string }) => y.code), ['NO_BOX_KEY']);
  const pinned = JSON.parse(c0('market', 'probe', jobFile('job.yaml', '0.5 USD'), '--records', records, '--at', String(NOW), '--designated', P(1).did, '--json').out);
  assert.deepEqual(pinned.candidates.map((c: { provider: string }) => c.provider), [P(1).did]);
});

test('an empty list exits 1 and says why, per provider', () => {
  const r = c0('market', 'probe', jobFile('cheap.yaml', '0.1 USD'), '--records', records, '--at', String(NOW));
  assert.equal(r.code, 1, r.err + r.out);
  const all = r.out + r.err;
  assert.match(all, /No candidate among 4 providers for/);
  assert.match(all, /ASK_ABOVE_PRICE/);
  assert.match(all, /NOT_LIVE/);
  // later than every presence window: nobody is live
  const late = c0('market', 'probe', jobFile('job.yaml', '0.5 USD'), '--records', records, '--at', String(NOW + 60_000), '--json');
  assert.equal(late.code, 1);
  assert.equal(JSON.parse(late.out).candidates.length, 0);
});
