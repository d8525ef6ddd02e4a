/**
 * "Moving to the runner-up" and then nothing (finding day2-27 #5): after the winner failed, the buyer announced a
 * failover because the first decision had an untried provider, but that provider's offer had expired meanwhile, the
 * fresh decision ranked no one, and the loop ended without naming it: the job failed with one attempt and no reason.
 * Now each untried provider that dropped out is named: `offer lapsed` (its offer past its start-by time or expired),
 * `no longer eligible` otherwise.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BuyerEvent } from '../../../src/roles/buyer.js';
import { C0Error } from '../../../src/errors.js';
import { NOW, P, advert, offer } from '../market/fixtures.js';
import { buyerOnFakes, fakeSpec } from './buyer-fakes.js';

const ME = P(790);
const A = P(791);
const B = P(792);

/** A wins; its stream breaks once the clock moved 30 s on. B's offer expires at `bExpires`; the market drops expired offers, and every one when `dropAll`. */
async function run(bExpires: number, dropAll = false) {
  let now = NOW;
  const f = buyerOnFakes(ME, {
    providers: [A, B],
    clock: () => now,
    offerFor: (p, job) => offer(p, job, advert(p), p === B ? { expiresAt: bExpires, startBy: bExpires } : {}),
    rank: (all, at, excluded) => all.filter((c) => !excluded?.has(c.provider) && c.offer.record.expiresAt > at && !(dropAll && excluded?.size)),
    exec: async function* () {
      yield { t: 'accepted', startedAt: now };
      now += 30_000;
      throw new C0Error('NET_DEADLINE', 'no answer');
    },
  });
  const events: BuyerEvent[] = [];
  const result = await f.buyer.run(fakeSpec({ deadlineMs: 600_000 }), (e) => events.push(e));
  return { result, events };
}

test('the runner-up’s offer lapsed while the winner ran: the failover names it `offer lapsed`, not a silent end', async () => {
  const { result, events } = await run(NOW + 10_000);
  assert.equal(result.status, 'failed');
  assert.ok(events.some((e) => e.e === 'failover' && e.from === A.did), 'the failover was announced');
  assert.equal(events.filter((e) => e.e === 'selection').length, 1, 'no second selection');
  assert.deepEqual(
    result.attempts.map((a) => [a.provider, a.outcome]),
    [
      [A.did, 'provider unreachable or gone: NET_DEADLINE'],
      [B.did, 'offer lapsed'],
    ],
  );
});

test('an untried provider that dropped out of the decision for another reason is named `no longer eligible`', async () => {
  const { result } = await run(NOW + 300_000, true);
  assert.deepEqual(result.attempts.map((a) => a.outcome), ['provider unreachable or gone: NET_DEADLINE', 'no longer eligible']);
});
