/** The real `c0mpute market` CLI as child processes on real record files. */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createIdentity } from '../../src/node/identity.js';
import { seal, T, type Opened, type Selection } from '../../src/records/index.js';
import { GiB, NOW, P, acceptance, advert, job, offer, receipt } from '../unit/market/fixtures.js';
import { spawnCli } from './node-helpers.js';

let root: string;
let records: string;
let dataDir: string;

/** The command as a child process (the cases run side by side: each writes files of its own, and none opens a store). */
async function c0(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const r = await spawnCli(['--data-dir', dataDir, ...args], { env: { ...process.env, C0MPUTE_LOG_LEVEL: 'silent' } });
  return { ...r, code: r.code ?? -1 };
}

function put(name: string, r: Opened | Uint8Array): string {
  const p = join(records, name);
  writeFileSync(p, r instanceof Uint8Array ? r : r.bytes);
  return p;
}

const BUYER = P(100);
const J = job(BUYER, { maxPrice: { amount: '0.5', currency: 'USD' } });
const BIG = job(BUYER, { requirements: { gpu: { count: 1, vramMiB: 96 * GiB }, regions: ['eu-west'] }, nonce: new Uint8Array([7]) });
const ADS = [P(1), P(2), P(3)].map((p, i) => advert(p, { tier: (['community', 'standard', 'verified'] as const)[i]!, ...(i === 2 ? { region: undefined } : {}) }));
const OFFERS = [offer(P(1), J, ADS[0]!, { amount: '0.042' }), offer(P(2), J, ADS[1]!, { amount: '0.050' }), offer(P(3), J, ADS[2]!, { amount: '0.9', durationMs: 20_000 }), offer(P(3), J, ADS[2]!, { amount: '0.95' })];

before(() => {
  root = mkdtempSync(join(tmpdir(), 'c0-market-cli-'));
  records = join(root, 'records');
  dataDir = join(root, 'data');
  mkdirSync(records);
  const seed = new Uint8Array(32);
  seed[0] = 100;
  seed[31] = 0x5a;
  createIdentity(dataDir, undefined, seed);
  put('job.cbor', J);
  put('big-job.cbor', BIG);
  ADS.forEach((a, i) => put(`advert-${i}.cbor`, a));
  OFFERS.forEach((o, i) => put(`offer-${i}.cbor`, o));
  // history: provider 2 finished a job, provider 1 had one disputed
  for (const [i, p] of [P(1), P(2)].entries()) {
    const hj = job(BUYER, { nonce: new Uint8Array([40 + i]) });
    const ho = offer(p, hj, ADS[i]!);
    const hr = receipt(p, BUYER, ho, { startedAt: NOW - 200_000, completedAt: NOW - 190_000 });
    put(`hist-job-${i}.cbor`, hj);
    put(`hist-offer-${i}.cbor`, ho);
    put(`hist-receipt-${i}.cbor`, hr);
    if (i === 0) put('hist-dispute.cbor', acceptance(BUYER, hr, 'disputed', { signedAt: NOW - 180_000 }));
  }
  // hostile: an advert tampered to claim more VRAM (signature no longer verifies)
  const a = advert(P(4), { hardware: { gpus: [{ model: 'x', vramMiB: 12 * GiB, count: 1 }] } });
  const hex = Buffer.from(a.bytes).toString('hex').replace('19300' + '0', '19c00' + '0');
  put('tampered-advert.cbor', new Uint8Array(Buffer.from(hex, 'hex')));
  put('junk.txt', new TextEncoder().encode('not a record'));
});

after(() => rmSync(root, { recursive: true, force: true }));

// The cases read the same record files and each writes files of its own: they run side by side.
describe('c0mpute market', { concurrency: 4 }, () => {
  it('select prints the ranked table, the winner and why; refused files are listed with their codes', async () => {
    const r = await c0('market', 'select', '--job', join(records, 'job.cbor'), '--records', records, '--at', String(NOW));
    assert.equal(r.code, 0, r.err + r.out);
    assert.match(r.out, /policy\s+balanced/);
    assert.match(r.out, /^winner\s+sha256:[0-9a-f]{64} from did:key:/m);
    assert.match(r.out, /^why\s+.* wins under balanced/m);
    assert.match(r.out, /refused\s+tampered-advert\.cbor: ENVELOPE_BAD_SIGNATURE/);
    assert.match(r.out, /refused\s+junk\.txt: ENVELOPE_MALFORMED/);
    assert.match(r.out, /OFFER_OVER_MAX_PRICE/);
  });

  it('select --json: policies pick differently; the job may be given by address', async () => {
    const cheapest = JSON.parse((await c0('market', 'select', '--job', J.address, '--records', records, '--at', String(NOW), '--policy', 'cheapest', '--json')).out);
    assert.equal(cheapest.ok, true);
    assert.equal(cheapest.winner.offer, OFFERS[0]!.address);
    assert.equal(cheapest.ranked.length, 2);
    const d = cheapest.ranked.find((x: { provider: string }) => x.provider === P(2).did);
    assert.ok(Math.abs(d.scores.price - 0.84) < 1e-12); // proportional: 0.042 / 0.050
    assert.deepEqual(cheapest.ineligible.map((v: { failures: Array<{ code: string }> }) => v.failures.map((f) => f.code)), [['OFFER_OVER_MAX_PRICE']]);
    const balanced = JSON.parse((await c0('market', 'select', '--job', J.address, '--records', records, '--at', String(NOW), '--json')).out);
    assert.equal(balanced.winner.provider, P(2).did); // P(1) is cheaper but carries a dispute
  });

  it('select on an empty market explains it and exits 1', async () => {
    const r = await c0('market', 'select', '--job', join(records, 'big-job.cbor'), '--records', records, '--at', String(NOW));
    assert.equal(r.code, 1, r.err);
    assert.match(r.out, /summary\s+No provider is eligible among 3 known: no provider has 96 GiB of VRAM on one card/);
    const j = await c0('market', 'select', '--job', join(records, 'big-job.cbor'), '--records', records, '--at', String(NOW), '--json');
    assert.equal(j.code, 1);
    assert.equal(JSON.parse(j.out).explanation.known, 3);
  });

  it('explain lists every provider with every failed requirement', async () => {
    const r = await c0('market', 'explain', '--job', join(records, 'big-job.cbor'), '--records', records, '--at', String(NOW));
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /known\s+3 provider\(s\), 0 eligible/);
    assert.match(r.out, /GPU_VRAM_TOO_SMALL/);
    assert.match(r.out, /REGION_UNDISCLOSED/);
    assert.match(r.out, /OFFER_MISSING/);
    const j = JSON.parse((await c0('market', 'explain', '--job', join(records, 'big-job.cbor'), '--records', records, '--at', String(NOW), '--json')).out);
    assert.equal(j.providers.length, 3);
  });

  it('select --out signs a selection with the node key; audit reproduces it (exit 0)', async () => {
    const out = join(root, 'selection.cbor');
    const r = await c0('market', 'select', '--job', J.address, '--records', records, '--at', String(NOW), '--out', out);
    assert.equal(r.code, 0, r.err);
    assert.ok(existsSync(out));
    const a = await c0('market', 'audit', '--selection', out, '--records', records);
    assert.equal(a.code, 0, a.err + a.out);
    assert.match(a.out, /result\s+reproduces/);
    assert.match(a.out, /\(buyer\)/);
  });

  it('audit of a selection naming offers that do not exist exits 1 with the difference', async () => {
    const fake = 'sha256:' + 'ab'.repeat(32);
    const considered = [
      { provider: P(1).did, offer: OFFERS[0]!.address },
      { provider: P(2).did, offer: fake },
    ].sort((x, y) => (x.provider < y.provider ? -1 : 1));
    const s = seal(T.selection, { job: J.address, buyer: BUYER.did, policy: 'balanced', winner: fake, considered, decidedAt: NOW } as Selection, BUYER.signer);
    const f = join(root, 'bad-selection.cbor');
    writeFileSync(f, s.bytes);
    const a = await c0('market', 'audit', '--selection', f, '--records', records);
    assert.equal(a.code, 1, a.err);
    assert.match(a.out, /result\s+does not reproduce/);
    assert.match(a.out, /AUDIT_MISSING_RECORD/);
    const j = await c0('market', 'audit', '--selection', f, '--records', records, '--json');
    assert.equal(j.code, 1);
    assert.equal(JSON.parse(j.out).reproduces, false);
    // a selection signed by someone who may not decide
    const other = seal(T.selection, { job: J.address, buyer: BUYER.did, policy: 'balanced', winner: OFFERS[0]!.address, considered: [{ provider: P(1).did, offer: OFFERS[0]!.address }], decidedAt: NOW } as Selection, P(300).signer);
    const g = join(root, 'other-selection.cbor');
    writeFileSync(g, other.bytes);
    const b = await c0('market', 'audit', '--selection', g, '--records', records);
    assert.equal(b.code, 1);
    assert.match(b.out, /DECIDER_NOT_AUTHORIZED/);
  });

  it('operator errors exit 3 with a code: private without an allowlist, missing job, bad directory; an unknown --policy is a wrong command line (2)', async () => {
    const p = await c0('market', 'select', '--job', J.address, '--records', records, '--policy', 'greedy');
    assert.equal(p.code, 2);
    assert.match(p.err, /error POLICY_UNKNOWN/);
    const q = await c0('market', 'select', '--job', J.address, '--records', records, '--policy', 'private', '--at', String(NOW));
    assert.equal(q.code, 3);
    assert.match(q.err, /error POLICY_PRIVATE_NEEDS_ALLOWLIST/);
    const m = await c0('market', 'select', '--job', 'sha256:' + '00'.repeat(32), '--records', records);
    assert.equal(m.code, 3);
    assert.match(m.err, /error MARKET_RECORD_NOT_FOUND/);
    const d = await c0('market', 'explain', '--job', J.address, '--records', join(root, 'nope'));
    assert.equal(d.code, 3);
    assert.match(d.err, /error RECORDS_UNREADABLE/);
    const t = await c0('market', 'audit', '--selection', join(records, 'job.cbor'), '--records', records);
    assert.equal(t.code, 3);
    assert.match(t.err, /error RECORD_WRONG_TYPE/);
    assert.ok(readFileSync(join(records, 'job.cbor')).length > 0);
  });

  it('audit of a selection with a flipped byte is a negative answer (exit 1), not an operator error', async () => {
    const out = join(root, 'selection-flip.cbor');
    assert.equal((await c0('market', 'select', '--job', J.address, '--records', records, '--at', String(NOW), '--out', out)).code, 0);
    const bytes = new Uint8Array(readFileSync(out));
    bytes[bytes.length - 10]! ^= 0x01; // inside the signature
    const f = join(root, 'selection-flipped.cbor');
    writeFileSync(f, bytes);
    const a = await c0('market', 'audit', '--selection', f, '--records', records);
    assert.equal(a.code, 1, a.err + a.out);
    assert.match(a.out, /invalid\s+selection .*ENVELOPE_BAD_SIGNATURE/);
    const j = await c0('market', 'audit', '--selection', f, '--records', records, '--json');
    assert.equal(j.code, 1);
    assert.equal(JSON.parse(j.out).invalid.code, 'ENVELOPE_BAD_SIGNATURE');
  });

  it("audit takes the buyer's trust sources (--trusted-buyers, --second-hand-weight, --dealt-with), as select does", async () => {
    // a friend of the buyer disputed X's work: trusting it, the buyer picks Y; first-hand only, X (a tie, lower DID)
    const tr = join(root, 'trust-records');
    mkdirSync(tr);
    const FRIEND = P(120);
    let [X, Y] = [P(121), P(122)];
    if (X.did > Y.did) [X, Y] = [Y, X];
    const JT = job(BUYER, { nonce: new Uint8Array([77]) });
    const [adX, adY] = [advert(X), advert(Y)];
    const j0 = job(FRIEND, { announcedAt: NOW - 200_000, nonce: new Uint8Array([78]) });
    const o0 = offer(X, j0, adX, { issuedAt: NOW - 190_000, expiresAt: NOW - 150_000, startBy: NOW - 150_000 });
    const r0 = receipt(X, FRIEND, o0, { startedAt: NOW - 140_000, completedAt: NOW - 100_000 });
    const all = [JT, adX, adY, offer(X, JT, adX), offer(Y, JT, adY), j0, o0, r0, acceptance(FRIEND, r0, 'disputed', { signedAt: NOW - 90_000 })];
    all.forEach((r, i) => writeFileSync(join(tr, `${i}.cbor`), r.bytes));
    const out = join(root, 'trust-selection.cbor');
    const s = await c0('market', 'select', '--job', JT.address, '--records', tr, '--at', String(NOW), '--trusted-buyers', FRIEND.did, '--second-hand-weight', '0.8', '--dealt-with', '--out', out);
    assert.equal(s.code, 0, s.err + s.out);
    assert.match(s.out, new RegExp(`^winner\\s+sha256:[0-9a-f]{64} from ${Y.did}`, 'm'));
    const plain = await c0('market', 'audit', '--selection', out, '--records', tr);
    assert.equal(plain.code, 1, 'first-hand only, the recomputation picks X');
    assert.match(plain.out, /AUDIT_DIFFERENT_WINNER/);
    const a = await c0('market', 'audit', '--selection', out, '--records', tr, '--trusted-buyers', FRIEND.did, '--second-hand-weight', '0.8', '--dealt-with');
    assert.equal(a.code, 0, a.err + a.out);
    assert.match(a.out, /result\s+reproduces/);
    for (const [flag, value, code] of [
      ['--second-hand-weight', '0', 'MARKET_BAD_WEIGHT'],
      ['--second-hand-weight', 'lots', 'MARKET_BAD_WEIGHT'],
      ['--trusted-buyers', 'not-a-did', 'DID_MALFORMED'],
      ['--steward', 'not-a-did', 'DID_MALFORMED'],
    ] as const) {
      const e = await c0('market', 'audit', '--selection', out, '--records', tr, flag, value);
      assert.equal(e.code, 2, `${flag} ${value}: ${e.err}`);
      assert.match(e.err, new RegExp(`error ${code}`));
    }
  });

  it('select, explain and audit take the deciding node’s clock-skew window (--skew-ms)', async () => {
    // the provider's clock runs 45 s ahead; the buyer's network.clockSkewMs is 60 s, so it took the offer and decided
    const sk = join(root, 'skew-records');
    mkdirSync(sk);
    const A = P(131);
    const JS = job(BUYER, { nonce: new Uint8Array([79]) });
    const adA = advert(A, { issuedAt: NOW - 3_600_000, expiresAt: NOW + 3_600_000 });
    [JS, adA, offer(A, JS, adA, { issuedAt: NOW + 45_000 })].forEach((r, i) => writeFileSync(join(sk, `${i}.cbor`), r.bytes));
    const out = join(root, 'skew-selection.cbor');
    const bare = await c0('market', 'select', '--job', JS.address, '--records', sk, '--at', String(NOW), '--out', out);
    assert.equal(bare.code, 3, 'with the default 30 s the offer is issued after the decision');
    assert.match(bare.err, /error SELECTION_OFFER_AFTER_DECISION/);
    assert.equal((await c0('market', 'explain', '--job', JS.address, '--records', sk, '--at', String(NOW), '--skew-ms', '60000', '--json')).code, 0);
    const s = await c0('market', 'select', '--job', JS.address, '--records', sk, '--at', String(NOW), '--skew-ms', '60000', '--out', out);
    assert.equal(s.code, 0, s.err + s.out);
    const plain = await c0('market', 'audit', '--selection', out, '--records', sk);
    assert.equal(plain.code, 1);
    assert.match(plain.out, /AUDIT_OFFER_AFTER_DECISION/);
    const a = await c0('market', 'audit', '--selection', out, '--records', sk, '--skew-ms', '60000');
    assert.equal(a.code, 0, a.err + a.out);
    for (const v of ['-1', '1.5', 'soon', '']) {
      const e = await c0('market', 'audit', '--selection', out, '--records', sk, '--skew-ms', v);
      assert.equal(e.code, 2, `--skew-ms "${v}": ${e.err}`);
      assert.match(e.err, /error MARKET_BAD_SKEW/);
    }
  });
});
