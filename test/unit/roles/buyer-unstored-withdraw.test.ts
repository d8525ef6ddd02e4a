/**
 * A job the steward admitted that this node then could not keep (its disk full: STORE_WRITE_FAILED) or announce: the
 * run fails with that error, and the claim is withdrawn, not left holding the entitlement's reservation and devices
 * until the job's deadline (found by the disk-full review: the team's next job queued DEVICES_HELD behind it).
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job } from '../../../src/records/kinds.js';
import { P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

for (const failing of ['store', 'publish'] as const) {
  it(`an admitted job whose ${failing} fails is withdrawn, and the run fails with the error`, async () => {
    const withdrawn: string[] = [];
    const f = buyerOnFakes(P(1), {
      providers: [P(2)],
      exec: async function* () {},
      deps: {
        admission: async (job: Opened<Job>) => ({ verdict: 'Admit', claim: job.address }),
        withdraw: async (job: Opened<Job>) => void withdrawn.push(job.address),
        [failing]: async () => {
          throw new C0Error('STORE_WRITE_FAILED', 'IO error: No space left on device');
        },
      },
    });
    await assert.rejects(f.buyer.run(fakeSpec({ entitlement: 'ml' })), (e: unknown) => (e as C0Error).code === 'STORE_WRITE_FAILED');
    assert.equal(withdrawn.length, 1);
    assert.deepEqual(f.execs, []);
  });
}
