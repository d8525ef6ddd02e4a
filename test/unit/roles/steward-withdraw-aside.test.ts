/**
 * A withdraw of a single job whose receipts are held aside (signed by a provider no selection heard by the steward
 * named: the selection was gossiped while it was down) asks the buyer for the job's selections first (records/1
 * `jobs`, src/roles/steward.ts #selectionsOf), so the release charges the receipt a selection names instead of
 * releasing for 0 µJ (pool/1 §6.2). A buyer that cannot be reached leaves it uncharged (docs/overlays.md). The whole
 * Steward over a real Ledger and LevelDB in a temp dir; the overlay's network is a stub.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job, Selection } from '../../../src/records/kinds.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub, stubBuyer } from './steward-stub.js';
import { P, job, offer, receipt } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 3, over_quota_weight: 0, priority: 1 }
`;
const buyer = stubBuyer;
const provider = P(21);

describe('a withdraw with receipts held aside', () => {
  for (const reachable of [true, false]) {
    it(reachable ? 'asks the buyer for the job’s selections and charges the receipt one names' : 'a buyer that cannot be reached: released with what is charged (the receipt held aside is not)', async () => {
      const t = tempDir('c0-withdraw-aside-');
      writeFileSync(join(t.dir, 'tree.yaml'), TREE);
      const records = new Map<string, Opened<Job>>();
      const db = await openDb(join(t.dir, 'db'));
      const asked: Array<{ peer: string; kinds: string[]; jobs: string[] }> = [];
      let sel: Opened<Selection> | undefined;
      try {
        const st = await stewardOnStub(t.dir, db, records, {
          syncJobs: async (peer, kinds, jobs, hear) => {
            asked.push({ peer, kinds, jobs });
            if (!reachable) throw new Error('dial failed');
            if (sel && jobs.includes(sel.record.job) && kinds.includes('selection')) await hear('selection', sel);
            return { accepted: sel ? 1 : 0, failed: {} };
          },
        });
        const j = job(buyer, { nonce: new Uint8Array([7, 3]) });
        assert.equal((await st.admit(j))[0]!.t, 'admitted');
        // the selected provider's failed receipt (40 J spent) reaches the steward; the buyer's selection did not
        const o = offer(provider, j, 'sha256:' + '77'.repeat(32));
        records.set(o.address, o as never); // the steward holds the winning offer (it came to it)
        sel = { signer: buyer.did, address: 'sha256:' + '78'.repeat(32), record: { job: j.address, winner: o.address, considered: [{ provider: provider.did, offer: o.address }] } } as unknown as Opened<Selection>;
        await st.hear('receipt', receipt(provider, buyer, o, { status: 'failed', energy: { uj: 40_000_000, grade: 'HwShunt' }, failure: { code: 'EXEC_CRASHED', message: 'x' } }));
        assert.equal((await st.released()).length, 0);
        // every attempt failed: the buyer withdraws ({op: 'withdraw', job} only, as buyer-wiring sends it)
        const [answer] = await st.ask({ op: 'withdraw', job: j.address });
        assert.deepEqual(answer, { t: 'withdrawn', released: 'yes' });
        assert.deepEqual(asked, [{ peer: buyer.did, kinds: ['selection'], jobs: [j.address] }]);
        const rel = await st.released();
        assert.equal(rel.length, 1);
        assert.deepEqual(rel[0]!.actual, reachable ? { uj: 40_000_000, grade: 'HwShunt' } : { uj: 0, grade: 'Estimator' });
        // a withdraw with nothing held aside asks nobody
        const j2 = job(buyer, { nonce: new Uint8Array([7, 4]) });
        await st.admit(j2);
        await st.ask({ op: 'withdraw', job: j2.address });
        assert.equal(asked.length, 1);
        assert.equal((await st.released()).length, 2);
        await st.s.stop();
      } finally {
        await closeDb(db);
        t.cleanup();
      }
    });
  }
});
