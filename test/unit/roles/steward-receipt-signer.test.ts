/**
 * Who may sign a receipt the steward charges (src/roles/steward-accounts.ts onReceipt, src/roles/steward-gangs.ts
 * signedByMember; pool/1 §6.2, docs/overlays.md "A job on a stewarded overlay"): anyone on the overlay can sign a
 * receipt naming an admitted job and its buyer, so a single job's claim is charged only receipts from a provider a
 * selection for that job named — one heard before that selection is held aside (bounded, in memory and in the claims
 * store) and charged if the selection names its provider — and a gang's only receipts signed by the run member bound
 * to the job they name. A stranger can neither inflate a claim's charge nor release it early for 0 µJ, and a flood of
 * receipts from fresh keys keeps at most MAX_ASIDE_RECEIPTS, in memory and on disk, until the claim's release. A real
 * Ledger and LevelDB in a temp dir.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { CborValue } from '../../../src/records/cbor.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job, Selection } from '../../../src/records/kinds.js';
import { sub } from '../../../src/store/db.js';
import { MAX_ASIDE_RECEIPTS } from '../../../src/roles/steward-accounts.js';
import { citeParams } from '../../../src/roles/gang-cite.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { NOW, P, job, offer, receipt, type Party } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 3, over_quota_weight: 0, priority: 1 }
`;
const buyer = P(1);
const [real, stranger] = [P(21), P(66)];

/** The rig with the claims store, and a single job admitted (10 J) and tracked as the steward does. */
async function withJob(dir: string, n: number) {
  const r = await stewardRig(dir, TREE, { claimStore: true });
  const j = job(buyer, { nonce: new Uint8Array([n, 3]) });
  await r.ledger.append({ event: 'Admitted', claim: j.address, entitlement: 'ml', reserved: { uj: 10_000_000, grade: 'Estimator' }, devices: 1, borrowed_uj: 0 });
  r.accounts.track(j.address, 'ml', buyer.did, j.record.deadline);
  const released = async () => (await r.ledger.records(0)).filter((e) => e.event === 'Released');
  return { ...r, j, released };
}

/** The buyer's selection naming `winner` for `j` (the fields the steward reads), and the winning offer. */
function selection(j: Opened<Job>, winner: Party, n: number) {
  const o = offer(winner, j, 'sha256:' + String(n).repeat(64).slice(0, 64));
  return { sel: { signer: buyer.did, record: { job: j.address, winner: o.address, considered: [{ provider: winner.did, offer: o.address }] } } as unknown as Opened<Selection>, offer: o };
}

describe('only receipts from who did the work are charged (steward)', () => {
  it('a stranger’s receipt heard before any selection neither inflates the charge nor releases the claim', async () => {
    const t = tempDir('c0-receipt-signer-');
    try {
      const r = await withJob(t.dir, 1);
      // ~2^53 µJ "failed", then 0 µJ "completed": signed by a key no selection named
      await r.accounts.onReceipt(receipt(stranger, buyer, offer(stranger, r.j, 'sha256:' + '99'.repeat(32)), { status: 'failed', energy: { uj: 2 ** 53 - 1, grade: 'HwShunt' } }));
      await r.accounts.onReceipt(receipt(stranger, buyer, offer(stranger, r.j, 'sha256:' + '98'.repeat(32)), { energy: { uj: 0, grade: 'HwShunt' } }));
      assert.deepEqual(await r.released(), [], 'not released by a stranger’s completed receipt');
      assert.ok(r.ledger.book.open.has(r.j.address));
      // the buyer's selection names the real provider; its receipt releases the claim with its figure alone
      const s = selection(r.j, real, 1);
      r.offers.set(s.offer.address, s.offer);
      await r.accounts.onSelection(s.sel);
      await r.accounts.onReceipt(receipt(real, buyer, s.offer, { energy: { uj: 9_000_000, grade: 'HwShunt' } }));
      const rel = await r.released();
      assert.equal(rel.length, 1);
      assert.deepEqual(rel[0]!.actual, { uj: 9_000_000, grade: 'HwShunt' });
      assert.equal(r.ledger.book.usage('ml').usedUj, 9_000_000);
      await r.close();
    } finally {
      t.cleanup();
    }
  });

  it('a receipt heard before the selection naming its provider is held aside and charged once the selection is heard', async () => {
    const t = tempDir('c0-receipt-signer-');
    try {
      const r = await withJob(t.dir, 2);
      const s = selection(r.j, real, 2);
      r.offers.set(s.offer.address, s.offer);
      await r.accounts.onReceipt(receipt(real, buyer, s.offer, { energy: { uj: 7_000_000, grade: 'ModelBased' } }));
      assert.deepEqual(await r.released(), []);
      await r.accounts.onSelection(s.sel);
      const rel = await r.released();
      assert.equal(rel.length, 1, 'released when the selection names the receipt’s provider');
      assert.deepEqual(rel[0]!.actual, { uj: 7_000_000, grade: 'ModelBased' });
      await r.close();
    } finally {
      t.cleanup();
    }
  });

  it('a flood of receipts from fresh keys keeps at most MAX_ASIDE_RECEIPTS, in memory and on disk, until the release', async () => {
    const t = tempDir('c0-receipt-signer-');
    try {
      const r = await withJob(t.dir, 3);
      for (let i = 0; i < 200; i++) {
        const p = P(1000 + i);
        await r.accounts.onReceipt(receipt(p, buyer, offer(p, r.j, 'sha256:' + '97'.repeat(32)), { status: 'failed', energy: { uj: 1, grade: 'HwShunt' } }));
      }
      const kept = async () => {
        const keys: string[] = [];
        for await (const k of sub(r.db, 'steward-claims').keys()) keys.push(k);
        return keys;
      };
      const oj = r.accounts.get(r.j.address)!;
      assert.equal(oj.receipts.size, 0);
      assert.equal(oj.aside?.size, MAX_ASIDE_RECEIPTS);
      assert.deepEqual((await kept()).sort(), [...oj.aside!.keys()].map((a) => `a/${r.j.address}/${a}`).sort(), 'on disk: exactly those held aside');
      // none charged; and none kept once the claim is released
      await r.accounts.release(oj, 'withdrawn');
      assert.deepEqual((await r.released()).map((e) => e.actual), [{ uj: 0, grade: 'Estimator' }]);
      assert.deepEqual(await kept(), []);
      await r.close();
    } finally {
      t.cleanup();
    }
  });

  it('a gang is charged only receipts signed by the run member bound to the job they name', async () => {
    const t = tempDir('c0-receipt-signer-');
    try {
      const r = await stewardRig(t.dir, TREE);
      const members = [P(11), P(12), P(13)];
      const run = buildRun(stringify({ name: 'g', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: members.map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) }), buyer.signer, NOW).bundle.run;
      const dids = run.record.members;
      const frames: CborValue[] = [];
      const ctx = { peer: peerIdFromDid(buyer.did), signal: new AbortController().signal, send: async (f: CborValue) => void frames.push(f) };
      await r.gangs.admitGang({ op: 'admit-gang', run: run.bytes, entitlement: 'ml', estimate: { uj: 30_000_000, grade: 'Estimator' }, devices_per_member: 1, deadline: NOW + 4_000_000 }, ctx);
      const jobs = [0, 1, 2].map((i) => job(buyer, { workload: 'train.member', params: citeParams({ claim: run.address, member: i }), nonce: new Uint8Array([i, 7]) }));
      for (const [i, j] of jobs.entries()) await r.gangs.admitMember(j, 'ml', { claim: run.address, member: i }, ctx);
      const signedBy = (p: Party, j: Opened<Job>, uj: number, status: 'completed' | 'failed') => receipt(p, buyer, offer(p, j, 'sha256:' + '55'.repeat(32)), { workload: 'train.member', status, energy: { uj, grade: 'HwShunt' } });
      const member = (i: number) => members.find((m) => m.did === dids[i])!;
      // a stranger's final receipts for every member job: nothing charged, the gang stays open
      for (const j of jobs) await r.accounts.onReceipt(signedBy(stranger, j, 0, 'failed'));
      // a run member signing for another member's job: not charged either
      await r.accounts.onReceipt(signedBy(member(1), jobs[0]!, 2 ** 52, 'completed'));
      assert.equal(r.ledger.length, 1, 'no Released');
      assert.equal(r.accounts.get(run.address)?.receipts.size, 0);
      // each member's own receipt: the gang ends, charged their sum
      for (const [i, j] of jobs.entries()) await r.accounts.onReceipt(signedBy(member(i), j, 1_000_000 * (i + 1), 'completed'));
      const rel = (await r.ledger.records(0)).filter((e) => e.event === 'Released');
      assert.deepEqual(rel.map((e) => e.actual), [{ uj: 6_000_000, grade: 'HwShunt' }]);
      await r.close();
    } finally {
      t.cleanup();
    }
  });
});
