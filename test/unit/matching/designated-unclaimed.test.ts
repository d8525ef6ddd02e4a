/**
 * A designated order its provider does not claim (docs/matching.md "Orders that are never claimed"): it counts against
 * the provider — its lease in heldByProvider(), and designatedOrders() — only during its first MATCH_FRONT_PERIODS
 * lease periods, as an order's age does. Before, a buyer that posted orders designated to a provider and never
 * answered the claims (far deadline, no selection ever published) made the idle provider look full to every node
 * until the deadline: NO_FREE_SLOT in every probe and candidates, no share in any batch plan.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { candidates, orderFromJob } from '../../../src/matching/candidates.js';
import { wireOrders } from '../../../src/node/orders-wiring.js';
import { batchPlan } from '../../../src/node/batch-route.js';
import { MATCH_FRONT_PERIODS, MATCH_LEASE_MS, type LiveProvider } from '../../../src/matching/types.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { seal, T, type Job, type Opened } from '../../../src/records/index.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const YEAR = 365 * 86_400_000;
const VICTIM = P(1);
const OTHER = P(2);
const HOSTILE = P(900);
const HONEST = P(100);
const ads = new Map<number, ReturnType<typeof advert>>();

function live(n: number, freeSlots: number, now: number, amount: string): LiveProvider {
  if (!ads.has(n)) ads.set(n, advert(P(n), { prices: [{ workload: W, unit: 'job', price: { amount, currency: 'USD' } }], expiresAt: NOW + 3_600_000 }));
  const presence = seal(T.presence, { workloads: [W], freeSlots, issuedAt: now - 1_000, windowMs: 15_000 }, P(n).signer);
  return { did: P(n).did, presence, advert: ads.get(n)!, workloads: [W], freeSlots, liveUntil: now + 14_000 };
}

test('orders designated to a provider and never answered stop counting against it after the front periods', async () => {
  let now = NOW;
  let view: LiveProvider[] = [];
  const subs = new Map<string, (rec: unknown) => void>();
  const o = {
    clock: () => now,
    d: { config: {}, network: {} },
    net: { subscribe: (k: string, f: (rec: unknown) => void) => subs.set(k, f) },
    liveProviders: () => view,
    market: { reputation: () => ({ scoreOf: () => 1 }) },
  } as unknown as OverlayNode;
  const { orders } = await wireOrders(o, { claimMode: 'leased', skewMs: 30_000 });
  const refresh = (): void => {
    view = [live(1, 2, now, '0.1'), live(2, 2, now, '0.5')];
  };
  refresh();
  // as many orders designated to the victim as it has free slots, a year's deadline; nobody ever decides them
  const hostile: Array<Opened<Job>> = [1, 2].map((i) => job(HOSTILE, { nonce: new Uint8Array([i]), order: { designated: VICTIM.did }, deadline: NOW + YEAR }));
  for (const j of hostile) subs.get('job')!(j);

  // while they are new they count, as any designated order does (the provider is about to claim them)
  assert.equal(o.heldByProvider().get(VICTIM.did), 2);
  assert.equal(o.designatedOrders(VICTIM.did), 2);

  // past the front periods (and five minutes on), still open everywhere — but no longer pinning the victim
  for (const at of [NOW + MATCH_FRONT_PERIODS * MATCH_LEASE_MS + 1, NOW + 300_000]) {
    now = at;
    refresh();
    assert.equal(orders.size, 2, 'the orders are still open');
    assert.equal(o.heldByProvider().get(VICTIM.did) ?? 0, 0, 'held');
    assert.equal(o.heldByProvider('open-bids').get(VICTIM.did) ?? 0, 0, 'held (open bids)');
    assert.equal(o.designatedOrders(VICTIM.did), 0, 'designated');
    const next = job(HONEST, { nonce: new Uint8Array([9]), announcedAt: now - 1_000, deadline: now + 60_000 });
    const r = candidates({ order: orderFromJob(next), live: view, held: o.heldByProvider(), now });
    assert.deepEqual(r.candidates.map((c) => c.provider), [VICTIM.did, OTHER.did], 'the idle cheapest provider is a candidate again');
    const batch = { windowMs: 10_000, workloads: [{ workload: W, lines: 2, units: {}, lineMs: 10_000, maxPrice: { amount: '1', currency: 'USD' } }] };
    assert.deepEqual(batchPlan(o, { batch, ceiling: 2 }).assignments.map((a) => [a.provider, a.lines]), [[VICTIM.did, 2]]);
  }

  // a new open bid is leased to the victim ahead of the old designated orders
  const bid = job(HONEST, { nonce: new Uint8Array([10]), order: {}, announcedAt: now - 1_000, deadline: now + 60_000 });
  subs.get('job')!(bid);
  assert.equal(orders.leases(now, view).byOrder.get(bid.address)?.provider, VICTIM.did);
});
