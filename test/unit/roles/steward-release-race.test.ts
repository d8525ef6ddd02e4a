/**
 * An admission decided while an overrun's `Released` is on its way to disk (src/roles/steward-reclaim.ts
 * appendAdmitted, src/ledger/store.ts append's precondition; pool/1 §3, §4.4): the book takes the release only after
 * its synced write, so a decision made meanwhile read the usage before the overrun, while its `Admitted` is sealed
 * after it. The append re-checks the decision on the book it lands on and, when that book says otherwise, nothing is
 * appended and the claim is decided again: here queued, since a guess may not borrow and the team has no weight (a
 * second claim, C, is still open, so B could yet fit once C is released for less: pending, not impossible).
 * The interleaving is made, not raced for: the decision is taken, or held, until the release is queued on the ledger.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job } from '../../../src/records/kinds.js';
import type { Claim } from '../../../src/pool/admission.js';
import type { Ledger } from '../../../src/ledger/index.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { appendAdmitted } from '../../../src/roles/steward-reclaim.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub, stubBuyer, until } from './steward-stub.js';
import { stewardRig } from './steward-rig.js';
import { P, job, offer, receipt } from '../market/fixtures.js';

// ml: guarantee 100 J, no weight (it never borrows); A and C are admitted at 10 J each and A's receipt charges 85 J
const TREE = `entitlements:
  - { id: lab, guarantee_uj: 1000000000, guarantee_devices: 8, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 1 }
`;
const buyer = stubBuyer;
const provider = P(21);
const guess = { uj: 10_000_000, grade: 'Estimator' as const };

describe('an admission decided while an overrun’s release is being written', () => {
  it('appendAdmitted: a decision taken before a queued release lands is decided again on the book it lands on', async () => {
    const t = tempDir('c0-release-race-');
    try {
      const r = await stewardRig(t.dir, TREE);
      await r.ledger.append({ event: 'Admitted', claim: 'a', entitlement: 'ml', reserved: guess, devices: 1, borrowed_uj: 0 });
      await r.ledger.append({ event: 'Admitted', claim: 'c', entitlement: 'ml', reserved: guess, devices: 1, borrowed_uj: 0 });
      const b: Claim = { id: 'b', entitlement: 'ml', gang_size: 1, devices_per_member: 1, estimate: guess };
      const decided = r.reclaim.decideNow(b);
      assert.equal(decided.v.verdict, 'Admit', 'decided on the book before the overrun');
      const rel = r.ledger.append({ event: 'Released', claim: 'a', actual: { uj: 85_000_000, grade: 'HwShunt' } });
      const o = await appendAdmitted({ reclaim: r.reclaim, append: r.append }, b, decided);
      await rel;
      assert.ok('v' in o, 'not appended');
      assert.deepEqual([o.v.verdict, o.v.reason], ['Queue', 'GUARANTEE_EXHAUSTED_UNOBSERVED']);
      assert.deepEqual((await r.ledger.records(0)).map((e) => e.event), ['Admitted', 'Admitted', 'Released']);
      assert.equal(r.ledger.book.usage('ml').usedUj, 95_000_000);
      await r.close();
    } finally {
      t.cleanup();
    }
  });

  it('the steward: a claim asked while the overrun’s release is being written is queued, not admitted past the guarantee', async () => {
    const t = tempDir('c0-release-race-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const db = await openDb(join(t.dir, 'db'));
    try {
      const records = new Map<string, Opened<Job>>();
      const a = job(buyer, { nonce: new Uint8Array([1]) });
      const b = job(buyer, { nonce: new Uint8Array([2]) });
      const c = job(buyer, { nonce: new Uint8Array([3]) });
      // B's decision waits (at its job's put, just before it is decided) until A's Released is queued on the ledger
      let queued!: () => void;
      const releaseQueued = new Promise<void>((res) => (queued = res));
      const { s, admit: admitOn, hear } = await stewardOnStub(t.dir, db, records, { request: async () => [{ running: 'no' }], beforePut: async (j) => {
          if (j.address === b.address) await releaseQueued;
        },
      });
      const ledgerAppend = s.ledger.append.bind(s.ledger);
      s.ledger.append = ((ev, opts) => {
        const p = ledgerAppend(ev, opts);
        if (ev.event === 'Released') queued();
        return p;
      }) as Ledger['append'];
      const frames = new Map<string, Array<Record<string, unknown>>>([[a.address, []], [b.address, []], [c.address, []]]);
      const admit = (j: Opened<Job>) => admitOn(j, frames.get(j.address), guess);
      await admit(a);
      assert.equal(frames.get(a.address)![0]!.t, 'admitted');
      await admit(c);
      assert.equal(frames.get(c.address)![0]!.t, 'admitted');
      const o = offer(provider, a, 'sha256:' + '12'.repeat(32));
      records.set(o.address, o as never);
      await hear('selection', { signer: buyer.did, record: { job: a.address, winner: o.address, considered: [{ provider: provider.did, offer: o.address }] } });
      const asked = admit(b);
      await hear('receipt', receipt(provider, buyer, o, { energy: { uj: 85_000_000, grade: 'HwShunt' } }));
      await until(() => frames.get(b.address)!.length > 0, 'B’s answer');
      assert.deepEqual([frames.get(b.address)![0]!.t, frames.get(b.address)![0]!.reason], ['queued', 'GUARANTEE_EXHAUSTED_UNOBSERVED']);
      assert.deepEqual((await s.ledger.records(0)).map((e) => e.event), ['Admitted', 'Admitted', 'Released']);
      assert.equal(s.ledger.book.usage('ml').usedUj, 95_000_000);
      await s.stop();
      await asked;
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });
});
