/**
 * A single job's receipts and chosen providers across a steward restart (src/roles/steward-accounts.ts ClaimStore,
 * src/roles/steward.ts #wire; pool/1 §6.1, §6.2): a failed attempt's receipt signed before the restart is still
 * charged at the release after it, a receipt from a provider no selection named is still not charged, the provider the
 * latest selection named is still the one the idle check asks, and a completed receipt heard before a crash (its
 * `Released` append failed) releases the claim at the next start with its actual figure, not {0, Estimator} at the
 * deadline. A receipt held aside (heard before the buyer's selection named its provider) is kept too: the selection
 * heard after the restart charges it, at most MAX_ASIDE_RECEIPTS of them are kept per claim, and none is left once the
 * claim is released. The whole Steward over a real Ledger and LevelDB in a temp dir, stopped and started again on it;
 * the overlay's network is a stub that records what the steward asks.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job, Selection } from '../../../src/records/kinds.js';
import { openDb, closeDb, sub, type Db } from '../../../src/store/db.js';
import { MAX_ASIDE_RECEIPTS } from '../../../src/roles/steward-accounts.js';
import type { StewardConfig } from '../../../src/roles/steward.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub, stubBuyer, until } from './steward-stub.js';
import { P, job, offer, receipt, type Party } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;
const buyer = stubBuyer;
const [p1, p2, stranger] = [P(21), P(22), P(23)];

/** A Steward on `dir` with a stub overlay that records what the steward asks and answers that nothing runs. */
async function start(dir: string, db: Db, records: Map<string, Opened<Job>>, cfg: Partial<StewardConfig> = {}) {
  const asked: Array<{ to: string; op: string }> = [];
  const st = await stewardOnStub(dir, db, records, {
    cfg,
    request: async (to, _p, frames) => {
      asked.push({ to, op: frames[0]!.op });
      return [{ running: 'no' }];
    },
  });
  const frames: Array<Record<string, unknown>> = [];
  return { ...st, admit: (j: Opened<Job>) => st.admit(j, frames), frames, asked };
}

/** The buyer's selection naming `winner` for `j` (only the fields the steward reads). */
const selection = (j: Opened<Job>, winner: Party, n: number) => {
  const o = offer(winner, j, 'sha256:' + String(n).repeat(64).slice(0, 64));
  return { sel: { signer: buyer.did, record: { job: j.address, winner: o.address, considered: [{ provider: winner.did, offer: o.address }] } } as unknown as Opened<Selection>, offer: o };
};

describe('a single job’s receipts and chosen providers survive a steward restart', () => {
  it('charges the failed attempt signed before the restart, not a stranger’s receipt, and asks the selected provider', async () => {
    const t = tempDir('c0-claims-restart-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const records = new Map<string, Opened<Job>>();
    let db = await openDb(join(t.dir, 'db'));
    try {
      let st = await start(t.dir, db, records);
      const j = job(buyer, { nonce: new Uint8Array([1, 9]) });
      await st.admit(j);
      assert.equal(st.frames[0]!.t, 'admitted');
      // attempt 1 on p1 fails (3 J); the buyer fails over to p2
      const a = selection(j, p1, 1);
      records.set(a.offer.address, a.offer as never);
      await st.hear('selection', a.sel);
      await st.hear('receipt', receipt(p1, buyer, a.offer, { status: 'failed', energy: { uj: 3_000_001, grade: 'HwShunt' } }));
      const b = selection(j, p2, 2);
      records.set(b.offer.address, b.offer as never);
      await st.hear('selection', b.sel);
      assert.deepEqual(await st.released(), []);
      await st.s.stop();
      await closeDb(db);

      db = await openDb(join(t.dir, 'db'));
      st = await start(t.dir, db, records, { idle: { windowMs: 60_000, idleBelowMicrowatts: 1, sampleMs: 20 } });
      // the idle check asks the provider the latest selection named
      await until(() => st.asked.some((q) => q.op === 'usage'), 'a usage request');
      assert.deepEqual([...new Set(st.asked.map((q) => q.to))], [p2.did]);
      // a receipt from a provider no selection named is still not charged
      await st.hear('receipt', receipt(stranger, buyer, offer(stranger, j, 'sha256:' + '77'.repeat(32)), { energy: { uj: 999, grade: 'HwShunt' } }));
      assert.deepEqual(await st.released(), []);
      await st.hear('receipt', receipt(p2, buyer, b.offer, { energy: { uj: 5_000_000, grade: 'ModelBased' } }));
      const rel = await st.released();
      assert.equal(rel.length, 1);
      assert.deepEqual(rel[0]!.actual, { uj: 8_000_001, grade: 'ModelBased' });
      await st.s.stop();
      // nothing is kept of a released claim
      const left: string[] = [];
      for await (const k of sub(db, 'steward-claims').keys()) left.push(k);
      assert.deepEqual(left, []);
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });

  it('a completed receipt heard before a crash (its release not appended) releases the claim at the next start with its actual figure', async () => {
    const t = tempDir('c0-claims-restart-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const records = new Map<string, Opened<Job>>();
    let db = await openDb(join(t.dir, 'db'));
    try {
      let st = await start(t.dir, db, records);
      const j = job(buyer, { nonce: new Uint8Array([2, 9]) });
      await st.admit(j);
      const a = selection(j, p1, 1);
      records.set(a.offer.address, a.offer as never);
      await st.hear('selection', a.sel);
      // the store fails as the completed receipt's release is appended; then the process dies
      const append = st.s.ledger.append.bind(st.s.ledger);
      st.s.ledger.append = async () => {
        throw new Error('IO error: No space left on device');
      };
      await assert.rejects(async () => st.hear('receipt', receipt(p1, buyer, a.offer, { energy: { uj: 7_000_000, grade: 'HwShunt' } })), /No space left/);
      st.s.ledger.append = append;
      assert.deepEqual(await st.released(), []);
      await st.s.stop();
      await closeDb(db);

      db = await openDb(join(t.dir, 'db'));
      st = await start(t.dir, db, records);
      const rel = await st.released();
      assert.equal(rel.length, 1, 'released at the start, not at the deadline');
      assert.deepEqual(rel[0]!.actual, { uj: 7_000_000, grade: 'HwShunt' });
      await st.s.stop();
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });

  it('a receipt held aside before a restart (its selection not heard yet) is charged when the selection comes after it', async () => {
    const t = tempDir('c0-claims-restart-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const records = new Map<string, Opened<Job>>();
    let db = await openDb(join(t.dir, 'db'));
    const kept = async (pre: string) => {
      const ks: string[] = [];
      for await (const k of sub(db, 'steward-claims').keys({ gt: pre, lt: pre + '~' })) ks.push(k);
      return ks;
    };
    try {
      let st = await start(t.dir, db, records);
      const j = job(buyer, { nonce: new Uint8Array([3, 9]) });
      await st.admit(j);
      assert.equal(st.frames[0]!.t, 'admitted');
      // the chosen provider's completed receipt (7 J) reaches the steward before the buyer's selection does
      const a = selection(j, p1, 1);
      records.set(a.offer.address, a.offer as never);
      await st.hear('receipt', receipt(p1, buyer, a.offer, { energy: { uj: 7_000_000, grade: 'HwShunt' } }));
      // and a flood of receipts from keys no selection will name: held aside as well, bounded
      for (let i = 0; i < MAX_ASIDE_RECEIPTS + 3; i++) {
        const o = offer(stranger, j, 'sha256:' + (i + 10).toString(16).padStart(2, '0').repeat(32));
        await st.hear('receipt', receipt(stranger, buyer, o, { energy: { uj: 1_000 + i, grade: 'HwShunt' } }));
      }
      assert.deepEqual(await st.released(), []);
      assert.equal((await kept('a/')).length, MAX_ASIDE_RECEIPTS, 'as many held aside on disk as in memory, no more');
      // the steward is killed before the selection comes
      await st.s.stop();
      await closeDb(db);

      db = await openDb(join(t.dir, 'db'));
      st = await start(t.dir, db, records);
      assert.deepEqual(await st.released(), [], 'nothing is charged for a receipt no selection named');
      await st.hear('selection', a.sel);
      const rel = await st.released();
      assert.equal(rel.length, 1, 'the completed receipt held aside before the restart releases the claim');
      assert.deepEqual(rel[0]!.actual, { uj: 7_000_000, grade: 'HwShunt' });
      await st.s.stop();
      // nothing is kept of a released claim, the receipts still held aside with it
      assert.deepEqual(await kept(''), []);
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });
});
