/**
 * The offers' collection is timed from the job's publication, not from the start of the run (a QA pass, session 48):
 * on an overlay with a steward a claim queued for capacity (DEVICES_HELD) printed "collected 1 offer(s) in 6609 ms"
 * against a 3 s window, and an operator blamed the providers. The wait for admission is its own figure,
 * `timings.admissionMs`; the three add up to the run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BuyerEvent } from '../../../src/roles/buyer.js';
import { NOW, P } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(770);
const A = P(771);

test('a claim queued 6 s at the steward: the collection says its own 200 ms, the admission its 6 s', async () => {
  let now = NOW;
  const f = buyerOnFakes(ME, {
    providers: [A],
    clock: () => now,
    exec: async function* () {
      yield { t: 'accepted', startedAt: now };
      now += 1_000;
      throw new Error('gone');
    },
    deps: {
      admission: async (job: { address: string }) => {
        now += 6_000; // queued (DEVICES_HELD) until another claim released
        return { verdict: 'Admit', claim: job.address };
      },
      withdraw: async () => {},
      reclaimed: async () => 'no',
      waitForOffers: async () => {
        now += 200;
        return { offers: 1, ended: 'all-quoted' as const };
      },
    },
  });
  const events: BuyerEvent[] = [];
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000, entitlement: 'ml' }), (e) => events.push(e));
  const collected = events.find((e) => e.e === 'collected') as { waitedMs: number } | undefined;
  assert.equal(collected?.waitedMs, 200);
  assert.equal(result.timings.collectMs, 200);
  assert.equal(result.timings.admissionMs, 6_000);
  assert.equal(result.timings.admissionMs! + result.timings.collectMs + result.timings.restMs, now - NOW, 'they add up to the run');
});
