/**
 * A provider node's own entry in heldByProvider() (docs/matching.md "Held and designated"): its own presence — the one
 * it publishes and keeps in its own view — already subtracts the jobs it runs and the claims it has pending, so its
 * own hook adds only what that presence does not reflect yet. Before, it added every running job and pending claim on
 * top, and its own probe reported it NO_FREE_SLOT while a slot was idle.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { candidates, orderFromJob } from '../../../src/matching/candidates.js';
import { wireOrders } from '../../../src/node/orders-wiring.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { silentLogger } from '../../../src/util/log.js';
import { seal, T } from '../../../src/records/index.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const SELF = P(1);
const ad = advert(SELF, { prices: [{ workload: W, unit: 'job', price: { amount: '0.1', currency: 'USD' } }] });

function me(freeSlots: number): LiveProvider {
  const presence = seal(T.presence, { workloads: [W], freeSlots, issuedAt: NOW - 1_000, windowMs: 15_000 }, SELF.signer);
  return { did: SELF.did, presence, advert: ad, workloads: [W], freeSlots, liveUntil: NOW + 14_000 };
}

/** A provider node with `slots` slots and `running` jobs, whose view holds the presence `published` (free slots it announced). */
async function providerNode(slots: number, running: { n: number }, published: { free: number }): Promise<OverlayNode> {
  const o = {
    clock: () => NOW,
    did: SELF.did,
    name: 'public',
    log: silentLogger(),
    d: { config: { provider: { slots, workloads: { [W]: {} }, maxInputBytes: 1 << 20 } }, network: {}, identity: { signer: SELF.signer } },
    provider: { get running() { return running.n; }, runs: () => false, advert: ad },
    net: { subscribe: () => {} },
    liveProviders: () => [me(published.free)],
  } as unknown as OverlayNode;
  const w = await wireOrders(o, { claimMode: 'leased', skewMs: 30_000 });
  w.claimer?.stop();
  return o;
}

test('a provider with 2 slots and 1 running job counts itself with 1 free slot in its own probe', async () => {
  const o = await providerNode(2, { n: 1 }, { free: 1 });
  const held = o.heldByProvider();
  assert.equal(held.get(SELF.did) ?? 0, 0, 'its presence already says the running job');
  const r = candidates({ order: orderFromJob(job(P(100), {})), live: o.liveProviders(NOW), held, now: NOW });
  assert.deepEqual(r.candidates.map((c) => c.provider), [SELF.did]);
  assert.equal(r.candidates[0]!.freeSlots - (r.candidates[0]!.held ?? 0), 1);
});

test('a job started since its presence was signed is still counted, once', async () => {
  const running = { n: 1 };
  const published = { free: 2 }; // signed before the job started
  const o = await providerNode(2, running, published);
  assert.equal(o.heldByProvider().get(SELF.did), 1, 'the new job, which its presence does not say yet');
  published.free = 1; // the next presence says it
  assert.equal(o.heldByProvider().get(SELF.did) ?? 0, 0);
  running.n = 2;
  assert.equal(o.heldByProvider().get(SELF.did), 1);
});
