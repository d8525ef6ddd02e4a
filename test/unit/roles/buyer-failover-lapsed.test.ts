/**
 * "Moving to the runner-up" and then nothing (finding day2-27 #5): after the winner failed, the buyer announced a
 * failover because the first decision had an untried provider, but that provider's offer had expired meanwhile, the
 * fresh decision ranked no one, and the loop ended without naming it: the job failed with one attempt and no reason.
 * Now each untried provider that dropped out is named: `offer lapsed` (its offer past its start-by time or expired),
 * `no longer eligible` otherwise.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buyer, type BuyerDeps, type BuyerEvent, type Decision, type JobSpec, type RankedCandidate } from '../../../src/roles/buyer.js';
import { C0Error } from '../../../src/errors.js';
import { seal, T, type Job, type Opened, type Selection } from '../../../src/records/index.js';
import { NOW, P, advert, offer } from '../market/fixtures.js';

const ME = P(790);
const A = P(791);
const B = P(792);

/** A wins; its stream breaks once the clock moved 30 s on. B's offer expires at `bExpires`; the market drops expired offers, and every one when `dropAll`. */
async function run(bExpires: number, dropAll = false) {
  const noop = () => {};
  const log = { info: noop, warn: noop, debug: noop, error: noop, child: () => log };
  let now = NOW;
  const cands = new Map<string, RankedCandidate>();
  const cand = (job: Opened<Job>, p: ReturnType<typeof P>, over = {}) => {
    if (!cands.has(p.did)) cands.set(p.did, { provider: p.did, offer: offer(p, job, advert(p), over), total: 1, scores: {} });
    return cands.get(p.did)!;
  };
  const deps = {
    signer: ME.signer,
    did: ME.did,
    clock: () => now,
    log,
    collectWindowMs: 10,
    enoughOffers: 1,
    defaultPolicy: 'trusted',
    adverts: () => undefined,
    publish: async () => {},
    store: async () => {},
    waitForOffers: async () => 2,
    market: {
      decide: async (job: Opened<Job>, _p: unknown, at: number, excluded?: ReadonlySet<string>) => {
        const all = [cand(job, A), cand(job, B, { expiresAt: bExpires, startBy: bExpires })];
        const ranked = all.filter((c) => !excluded?.has(c.provider) && c.offer.record.expiresAt > at && !(dropAll && excluded?.size));
        return { ranked, result: {}, market: {} } as unknown as Decision;
      },
      offerCount: () => 2,
      signSelection: (job: Opened<Job>, _d: Decision, w: RankedCandidate, at: number) =>
        seal(T.selection, { job: job.address, buyer: ME.did, policy: 'trusted', winner: w.offer.address, considered: [{ provider: w.provider, offer: w.offer.address }], decidedAt: at }, ME.signer) as Opened<Selection>,
    },
    exec: async function* () {
      yield { t: 'accepted', startedAt: now };
      now += 30_000;
      throw new C0Error('NET_DEADLINE', 'no answer');
    },
  } as unknown as BuyerDeps;
  const spec = { workload: 'infer.llm', maxPrice: { amount: '1', currency: 'USD' }, deadlineMs: 600_000, input: new Uint8Array(4), policy: 'trusted' } as unknown as JobSpec;
  const events: BuyerEvent[] = [];
  const result = await new Buyer(deps).run(spec, (e) => events.push(e));
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
