/**
 * A steward catches up on the selections and receipts it did not hear (src/roles/steward.ts catchUp; pool/1 §6.1,
 * §6.2): one published while it was down is asked of the open claim's buyer after the restart, and the claim is
 * released with the receipt's actual figure at once, not at its deadline charging {0, Estimator}. The whole Steward
 * over a real Ledger and LevelDB in a temp dir; the overlay's network is a stub whose records/1 sync hands over what
 * the named peer holds, through the steward's own gossip handlers.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job, Selection } from '../../../src/records/kinds.js';
import { openDb, closeDb, type Db } from '../../../src/store/db.js';
import type { StewardConfig } from '../../../src/roles/steward.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub, stubBuyer, until } from './steward-stub.js';
import { P, job, offer, receipt } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;
const buyer = stubBuyer;
const provider = P(21);

/** What each peer would answer a records/1 sync with, by kind. */
type Held = Map<string, Partial<Record<'selection' | 'receipt', unknown[]>>>;

/** A Steward on `dir` whose stub records/1 sync hands over what the named peer holds, through its gossip handlers. */
async function start(dir: string, db: Db, records: Map<string, Opened<Job>>, held: Held, cfg: Partial<StewardConfig> = {}) {
  const synced: Array<{ peer: string; kinds: string[] }> = [];
  const st = await stewardOnStub(dir, db, records, {
    cfg,
    syncFrom: async (peer, kinds, hear) => {
      synced.push({ peer, kinds });
      let accepted = 0;
      for (const k of kinds as Array<'selection' | 'receipt'>) {
        for (const rec of held.get(peer)?.[k] ?? []) {
          await hear(k, rec);
          accepted++;
        }
      }
      return { accepted };
    },
  });
  return { ...st, admit: (j: Opened<Job>) => st.admit(j), synced };
}

describe('a steward catches up on what it did not hear', () => {
  it('a selection and receipt published while it was down are asked of the buyer after the restart: released with the actual figure', async () => {
    const t = tempDir('c0-catch-up-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const records = new Map<string, Opened<Job>>();
    const held: Held = new Map();
    let db = await openDb(join(t.dir, 'db'));
    try {
      let st = await start(t.dir, db, records, held);
      const j = job(buyer, { nonce: new Uint8Array([5, 3]) });
      await st.admit(j);
      await st.s.stop();
      await closeDb(db);

      // while the steward is down: the buyer selects the provider, the work completes, both are gossiped to nobody
      const o = offer(provider, j, 'sha256:' + '41'.repeat(32));
      const sel = { signer: buyer.did, address: 'sha256:' + '42'.repeat(32), record: { job: j.address, winner: o.address, considered: [{ provider: provider.did, offer: o.address }] } } as unknown as Opened<Selection>;
      held.set(buyer.did, { selection: [sel], receipt: [receipt(provider, buyer, o, { energy: { uj: 43_890_519, grade: 'HwShunt' } })] });

      db = await openDb(join(t.dir, 'db'));
      st = await start(t.dir, db, records, held, { catchUpMs: 60_000 });
      // the first round comes min(2 s, catchUpMs) after the start, not at the deadline (60 s away)
      await until(async () => (await st.released()).length === 1, 'the release');
      assert.deepEqual((await st.released())[0]!.actual, { uj: 43_890_519, grade: 'HwShunt' });
      assert.deepEqual(st.synced, [{ peer: buyer.did, kinds: ['selection', 'receipt'] }]);
      // nothing open: a round asks nobody
      await st.s.catchUp();
      assert.equal(st.synced.length, 1);
      await st.s.stop();
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });
});
