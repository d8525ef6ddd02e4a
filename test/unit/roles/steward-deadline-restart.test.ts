/**
 * A steward restarted after an open claim's deadline (src/roles/steward-accounts.ts #armDeadline, #closeAtDeadline):
 * the job completed while it was down, its receipt gossiped to nobody. The claim is past its deadline at the start,
 * and is released no sooner than START_LOOK_MS after it (the network starts after the roles), after its buyer and
 * provider were asked for its receipts: charged the receipt's figure. Before, it was released at once, before any
 * catch-up round, charging {0, Estimator}. The whole Steward over a real Ledger and LevelDB in a temp dir; the
 * overlay's network is a stub whose records/1 `jobs` hands over what the named party holds, through the steward's
 * own gossip handlers.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job, Receipt, Selection } from '../../../src/records/kinds.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { fakeClock } from '../../../src/util/clock.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub, stubBuyer, until } from './steward-stub.js';
import { NOW, P, job, offer, receipt } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 1000000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 500000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;
const buyer = stubBuyer;
const provider = P(21);

it('a claim whose deadline passed while the steward was down, its completed receipt gossiped meanwhile, is charged that receipt at the start', async () => {
  const t = tempDir('c0-deadline-restart-');
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const records = new Map<string, Opened<Job>>();
  const j = job(buyer, { nonce: new Uint8Array([8, 1]), deadline: NOW + 60_000 });
  const o = offer(provider, j, 'sha256:' + '41'.repeat(32));
  records.set(o.address, o as never); // the steward holds the winning offer (it came to it)
  const sel = { signer: buyer.did, address: 'sha256:' + '42'.repeat(32), record: { job: j.address, winner: o.address, considered: [{ provider: provider.did, offer: o.address }] } } as unknown as Opened<Selection>;
  let db = await openDb(join(t.dir, 'db'));
  try {
    // admitted, its provider selected; then the steward goes down
    let st = await stewardOnStub(t.dir, db, records);
    await st.admit(j);
    await st.hear('selection', sel);
    assert.deepEqual(await st.released(), []);
    await st.s.stop();
    await closeDb(db);

    // while it is down the work completes (100 J, metered) and the receipt is gossiped to nobody; it is back 2 min later
    const done: Opened<Receipt> = receipt(provider, buyer, o, { energy: { uj: 100_177_001, grade: 'HwShunt' } });
    const asked: string[] = [];
    db = await openDb(join(t.dir, 'db'));
    st = await stewardOnStub(t.dir, db, records, {
      clock: fakeClock(NOW + 120_000),
      syncJobs: async (peer, kinds, jobs, hear) => {
        asked.push(peer);
        if (peer !== provider.did || !kinds.includes('receipt') || !jobs.includes(j.address)) return { accepted: 0, failed: {} };
        await hear('receipt', done);
        return { accepted: 1, failed: {} };
      },
    });
    await until(async () => (await st.released()).length === 1, 'the release');
    assert.deepEqual((await st.released())[0]!.actual, { uj: 100_177_001, grade: 'HwShunt' });
    assert.ok(asked.includes(provider.did) && asked.includes(buyer.did), `asked: ${asked.join(', ')}`);
    await st.s.stop();
  } finally {
    await closeDb(db);
    t.cleanup();
  }
});
