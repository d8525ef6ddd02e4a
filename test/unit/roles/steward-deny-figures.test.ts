/**
 * A steward's Deny carries the figures it rests on (src/util/deny-text.ts; QA qaUp F4): the `denied` frame's `basis`
 * (settled, asked, guarantee, limit, share, devices; integers in µJ), which the buyer's admission client keeps and
 * `c0mpute run`, its last lines and the console narrate beside the code ("settled 43.5 J + asked 380.0 J = 423.5 J,
 * over the limit 400.0 J"). Before, the line was `✘ the steward denied: ENERGY_EXCEEDS_LIMIT` alone: the buyer holds
 * none of the settled figure (other buyers charge the same entitlement). The whole Steward over a real Ledger and
 * LevelDB, its overlay a stub; the buyer's side is the real admission client fed the steward's frames.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job } from '../../../src/records/kinds.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { Ledger } from '../../../src/ledger/index.js';
import { requestAdmission } from '../../../src/roles/admission-client.js';
import { renderEvent } from '../../../src/cli/render.js';
import { runFailureLines } from '../../../src/util/run-failure.js';
import { admissionText } from '../../../ui/narrate.js';
import { denyBasisOf, denyFiguresText } from '../../../src/util/deny-text.js';
import { tempDir, steward as stewardKey, admitted, released } from '../ledger/helpers.js';
import { stewardOnStub, stubBuyer } from './steward-stub.js';
import { NOW, job } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: acme, guarantee_uj: 2000000000, guarantee_devices: 2, over_quota_weight: 0, priority: 0 }
  - { id: team-b, parent: acme, guarantee_uj: 300000000, guarantee_devices: 1, over_quota_weight: 1, priority: 1, limit_uj: 400000000 }
  - { id: team-c, parent: acme, guarantee_uj: 200000000, guarantee_devices: 1, over_quota_weight: 0, priority: 0 }
`;

describe('a steward denial with its figures', () => {
  it('the denied frame carries them; the buyer keeps them; run prints them beside the code', async () => {
    const t = tempDir('c0-deny-figures-');
    const db = await openDb(join(t.dir, 'db'));
    try {
      const dir = join(t.dir, 'steward', 't');
      const l = await Ledger.open(join(dir, 'ledger'), { createdMark: join(dir, 'ledger.created'), signer: stewardKey });
      for (const ev of [admitted('b1', 'team-b', 50_000_000), released('b1', 43_518_501), admitted('c1', 'team-c', 60_000_000), released('c1', 156_101_425)]) await l.append(ev);
      await l.close();
      writeFileSync(join(t.dir, 'tree.yaml'), TREE);
      const st = await stewardOnStub(t.dir, db, new Map<string, Opened<Job>>());
      try {
        const ask = async (entitlement: string, uj: number, n: number) => {
          const frames = await st.ask({ op: 'admit', job: job(stubBuyer, { nonce: new Uint8Array([n]) }).bytes, entitlement, estimate: { uj, grade: 'ModelBased' } });
          // the buyer's side: the real admission client reading those frames
          const admission = await requestAdmission({ ask: async (onFrame) => frames.forEach(onFrame), deadline: NOW + 60_000, clock: () => NOW, onQueued: () => {} });
          return { frames, admission };
        };

        const limit = await ask('team-b', 380_000_000, 1);
        assert.deepEqual(limit.frames, [
          { t: 'denied', reason: 'ENERGY_EXCEEDS_LIMIT', reasons: ['ENERGY_EXCEEDS_LIMIT'], basis: { settled_uj: 43_518_501, estimate_uj: 380_000_000, guarantee_uj: 300_000_000, limit_uj: 400_000_000, share_uj: 200_000_000, devices: 1, guarantee_devices: 1 } },
        ]);
        assert.deepEqual(limit.admission.basis, (limit.frames[0] as { basis: unknown }).basis, 'the buyer keeps the figures');
        const printed: string[] = [];
        renderEvent({ e: 'admission', admission: limit.admission } as never, undefined, (s) => printed.push(s));
        assert.deepEqual(printed, ['✘ the steward denied: ENERGY_EXCEEDS_LIMIT (settled 43.5 J + asked 380.0 J = 423.5 J, over the limit 400.0 J; 356.5 J left under it)']);
        assert.match(runFailureLines({ status: 'denied', admission: limit.admission, attempts: [] }, { verdictSaid: false })[0]!, /denied the claim: ENERGY_EXCEEDS_LIMIT \(settled 43\.5 J \+ asked 380\.0 J = 423\.5 J, over the limit 400\.0 J/);
        assert.match(admissionText(limit.admission), /denied: ENERGY_EXCEEDS_LIMIT .*\(settled 43\.5 J \+ asked 380\.0 J = 423\.5 J, over the limit 400\.0 J/);

        const unobserved = await ask('team-c', 60_000_000, 2);
        assert.equal(unobserved.admission.reason, 'NO_WEIGHT_EXCEEDS_GUARANTEE');
        assert.equal(denyFiguresText(unobserved.admission.reason, unobserved.admission.basis), 'settled 156.1 J + asked 60.0 J = 216.1 J, over the guarantee 200.0 J (43.9 J left), and over_quota_weight 0 never borrows surplus');
        assert.equal(unobserved.admission.basis?.share_uj, undefined, 'weight 0: no share');
      } finally {
        await st.s.stop();
      }
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });

  it('figures from another node are numbers only, else none; a steward before them sends none and the line is as before', () => {
    assert.equal(denyBasisOf({ settled_uj: '1', estimate_uj: 2, guarantee_uj: 3, devices: 1, guarantee_devices: 1 }), undefined);
    assert.equal(denyBasisOf({ settled_uj: -1, estimate_uj: 2, guarantee_uj: 3, devices: 1, guarantee_devices: 1 }), undefined);
    assert.equal(denyBasisOf([1, 2]), undefined);
    assert.deepEqual(denyBasisOf({ settled_uj: 1, estimate_uj: 2, guarantee_uj: 3, devices: 1, guarantee_devices: 1, extra: 'x' }), { settled_uj: 1, estimate_uj: 2, guarantee_uj: 3, devices: 1, guarantee_devices: 1 });
    const printed: string[] = [];
    renderEvent({ e: 'admission', admission: { verdict: 'Deny', reason: 'UNOBSERVED_EXCEEDS_GUARANTEE', reasons: [] } } as never, undefined, (s) => printed.push(s));
    assert.deepEqual(printed, ['✘ the steward denied: UNOBSERVED_EXCEEDS_GUARANTEE']);
  });
});
