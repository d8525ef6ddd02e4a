/**
 * A job the overlay's steward reclaimed before it ran at its provider (docs/overlays.md "Preemption"): the provider
 * refuses its exec with EXEC_PREEMPTED (or EXEC_IDLE_RECLAIMED). On an overlay with a steward that is the provider
 * doing what the steward asked: the buyer signs no non-delivery against it and does not fail over (the claim is
 * over); the job ends `preempted`. Without a steward nobody reclaims anything, so such a refusal is a refusal like
 * any other (a non-delivery, then the next provider).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Buyer, type BuyerDeps, type Decision, type JobSpec, type RankedCandidate } from '../../../src/roles/buyer.js';
import { seal, T, type Job, type Opened, type Selection } from '../../../src/records/index.js';
import { NOW, P, advert, offer } from '../market/fixtures.js';

const ME = P(760);
const [A, B] = [P(761), P(762)];

async function run(code: string, stewarded: boolean) {
  const noop = () => {};
  const log = { info: noop, warn: noop, debug: noop, error: noop, child: () => log };
  const published: string[] = [];
  const execs: string[] = [];
  const withdrawn: string[] = [];
  const cands = new Map<string, RankedCandidate>();
  const deps = {
    signer: ME.signer,
    did: ME.did,
    clock: () => NOW,
    log,
    collectWindowMs: 10,
    enoughOffers: 1,
    defaultPolicy: 'trusted',
    adverts: () => undefined,
    publish: async (kind: string) => void published.push(kind),
    store: async () => {},
    waitForOffers: async () => 2,
    market: {
      decide: async (job: Opened<Job>, _p: unknown, _now: number, excluded?: ReadonlySet<string>) => {
        for (const p of [A, B]) if (!cands.has(p.did)) cands.set(p.did, { provider: p.did, offer: offer(p, job, advert(p)), total: 1, scores: {} });
        return { ranked: [A, B].filter((p) => !excluded?.has(p.did)).map((p) => cands.get(p.did)!), result: {}, market: {} } as unknown as Decision;
      },
      offerCount: () => 2,
      signSelection: (job: Opened<Job>, _d: Decision, w: RankedCandidate, now: number) =>
        seal(T.selection, { job: job.address, buyer: ME.did, policy: 'trusted', winner: w.offer.address, considered: [{ provider: w.provider, offer: w.offer.address }], decidedAt: now }, ME.signer) as Opened<Selection>,
    },
    exec: async function* (did: string) {
      execs.push(did);
      yield { t: 'refused', code, message: 'reclaimed before it ran here' };
    },
    ...(stewarded
      ? {
          admission: async (job: Opened<Job>) => ({ verdict: 'Admit', claim: job.address }),
          withdraw: async (job: Opened<Job>) => void withdrawn.push(job.address),
        }
      : {}),
  } as unknown as BuyerDeps;
  const spec = { workload: 'infer.llm', maxPrice: { amount: '1', currency: 'USD' }, deadlineMs: 60_000, input: new Uint8Array(4), policy: 'trusted', entitlement: 'lo' } as unknown as JobSpec;
  const result = await new Buyer(deps).run(spec);
  return { result, execs, nondeliveries: published.filter((k) => k.startsWith('nondelivery')), withdrawn };
}

test('on an overlay with a steward, an exec refused EXEC_PREEMPTED: no non-delivery, no failover, the job ends preempted', async () => {
  for (const code of ['EXEC_PREEMPTED', 'EXEC_IDLE_RECLAIMED']) {
    const r = await run(code, true);
    assert.equal(r.result.status, 'preempted', code);
    assert.deepEqual(r.execs, [A.did], 'the next provider is not tried');
    assert.deepEqual(r.nondeliveries, []);
    assert.equal(r.result.attempts.length, 1);
    assert.equal(r.result.attempts[0]!.nondelivery, undefined);
    assert.equal(r.result.attempts[0]!.outcome, `refused: ${code}`);
    // the steward released the claim already: nothing to withdraw
    assert.deepEqual(r.withdrawn, []);
  }
});

test('without a steward an EXEC_PREEMPTED refusal is a refusal like any other: a non-delivery, then the next provider', async () => {
  const r = await run('EXEC_PREEMPTED', false);
  assert.equal(r.result.status, 'failed');
  assert.deepEqual(r.execs, [A.did, B.did]);
  assert.equal(r.nondeliveries.length, 2);
});

test('on an overlay with a steward, another refusal still signs a non-delivery and fails over', async () => {
  const r = await run('EXEC_BUSY', true);
  assert.equal(r.result.status, 'failed');
  assert.deepEqual(r.execs, [A.did, B.did]);
  assert.equal(r.nondeliveries.length, 2);
  assert.equal(r.withdrawn.length, 1);
});
