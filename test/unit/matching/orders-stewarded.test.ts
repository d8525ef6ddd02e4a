/**
 * Open orders on an overlay with a steward (docs/matching.md "On the network: posting, claiming, answering"): the
 * steward admits every job before it is announced, so an order (open, designated, or a batch line) can never run
 * there. `batch plan`/`batch run` are refused at once with the real reason (ORDERS_NOT_SUPPORTED), not
 * BATCH_EXCEEDS_CAPACITY; a provider runs no Claimer there, and a node keeps no order heard there (a hostile
 * member's orders neither hold a provider's claim slots nor count as leases against it).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { batchPlan } from '../../../src/node/batch-route.js';
import { wireOrders } from '../../../src/node/orders-wiring.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import type { C0Error } from '../../../src/errors.js';
import { silentLogger } from '../../../src/util/log.js';
import { seal, T } from '../../../src/records/index.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const STEWARD = P(870);
const PROV = P(871);
const HOSTILE = P(872);
const ad = advert(PROV, { prices: [{ workload: W, unit: 'job', price: { amount: '0.1', currency: 'USD' } }] });
const presence = seal(T.presence, { workloads: [W], freeSlots: 4, issuedAt: NOW - 1_000, windowMs: 15_000 }, PROV.signer);
const LIVE: LiveProvider = { did: PROV.did, presence, advert: ad, workloads: [W], freeSlots: 4, liveUntil: NOW + 14_000 };

test('batch plan on an overlay with a steward: ORDERS_NOT_SUPPORTED at once, though a provider has free slots', () => {
  const node = {
    name: 'acme',
    clock: () => NOW,
    d: { network: { steward: STEWARD.did } },
    market: { reputation: () => ({ scoreOf: () => 1 }) },
    liveProviders: () => [LIVE],
    heldByProvider: () => new Map(),
    designatedOrders: () => 0,
  } as unknown as OverlayNode;
  const batch = { windowMs: 10_000, workloads: [{ workload: W, lines: 4, units: {}, lineMs: 10_000, maxPrice: { amount: '1', currency: 'USD' } }] };
  assert.throws(() => batchPlan(node, { batch }), (e: C0Error) => {
    assert.equal(e.code, 'ORDERS_NOT_SUPPORTED');
    assert.match(e.message, /overlay acme has a steward/);
    assert.match(e.message, /c0mpute run/);
    return true;
  });
  // the same overlay without a steward plans it
  const open = { ...node, d: { network: {} } } as unknown as OverlayNode;
  assert.equal(batchPlan(open, { batch }).assignments[0]!.lines, 4);
});

async function providerOn(network: { steward?: string }) {
  const subs = new Map<string, (rec: unknown) => void>();
  const handled: string[] = [];
  const o = {
    clock: () => NOW,
    did: PROV.did,
    name: 'acme',
    log: silentLogger(),
    d: { config: { provider: { slots: 4, workloads: { [W]: {} }, maxInputBytes: 1 << 20 } }, network, identity: { signer: PROV.signer } },
    provider: { running: 0, runs: () => false, advert: ad },
    buyer: {},
    abuseReports: { report() {} },
    net: { subscribe: (k: string, f: (rec: unknown) => void) => subs.set(k, f), handle: async (p: string) => void handled.push(p) },
    liveProviders: () => [LIVE],
  } as unknown as OverlayNode;
  const w = await wireOrders(o, { claimMode: 'leased', skewMs: 30_000 });
  w.claimer?.stop();
  return { o, w, handled, heard: (rec: unknown) => subs.get('job')?.(rec) };
}

test('a provider on an overlay with a steward runs no Claimer and keeps no order a member posts there', async () => {
  const { o, w, handled, heard } = await providerOn({ steward: STEWARD.did });
  assert.equal(w.claimer, undefined, 'no Claimer: an order there can never be admitted, so it is never claimed');
  assert.equal(w.desk, undefined, 'no claim desk: this node posts no order there');
  assert.deepEqual(handled, []);
  heard(job(HOSTILE, { workload: W, order: { designated: PROV.did } }));
  heard(job(HOSTILE, { workload: W, order: {} }));
  assert.equal(w.orders.size, 0);
  assert.equal(o.designatedOrders(PROV.did), 0);
  assert.equal(o.heldByProvider().get(PROV.did) ?? 0, 0);
  // on an overlay without a steward the same node claims as before
  const plain = await providerOn({});
  assert.notEqual(plain.w.claimer, undefined);
  plain.heard(job(HOSTILE, { workload: W, order: { designated: PROV.did } }));
  assert.equal(plain.w.orders.size, 1);
});
