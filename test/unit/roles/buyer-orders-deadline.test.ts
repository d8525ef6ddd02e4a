/**
 * An open order's wait for claims is bounded by the job's deadline (src/roles/buyer-orders.ts runOrder). A deadline
 * past 24.8 days is a chain of timers (src/util/timers.ts); when a winner comes early the run clears it, rather than
 * leaving it (unref'd, but alive) until the deadline. Timers are counted by wrapping the global setTimeout and
 * clearTimeout the chain calls.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runOrder, type ArrivedClaim, type OrderPorts } from '../../../src/roles/buyer-orders.js';
import type { BuyerDeps, JobSpec } from '../../../src/roles/buyer.js';
import { MAX_TIMER_MS } from '../../../src/util/timers.js';
import { seal, T } from '../../../src/records/index.js';
import { silentLogger } from '../../../src/util/log.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const MONTH = 30 * 24 * 3600_000;
const BUYER = P(200);

test('a winner weeks before the deadline: the deadline’s timers are cleared when the run ends', async () => {
  const J = job(BUYER, { order: {}, deadline: NOW + MONTH });
  const win = seal(T.claim, { job: J.address, advert: advert(P(202)).address, price: { amount: '1', currency: 'USD' }, issuedAt: NOW }, P(202).signer);
  const queue: ArrivedClaim[] = [{ seq: 1, receivedAt: NOW, claim: win.bytes, opened: win, from: '', answer: () => {} }];
  const ports: OrderPorts = { inbox: () => ({ next: async () => queue.shift(), close: () => {} }) };
  const deps = {
    signer: BUYER.signer,
    did: BUYER.did,
    clock: () => NOW,
    log: silentLogger(),
    adverts: (did: string) => (did === P(202).did ? advert(P(202)) : undefined),
    store: async () => {},
    publish: async () => {},
  } as unknown as BuyerDeps;

  // the long timers set while the run is on, until they fire or are cleared
  const pending = new Set<unknown>();
  const [realSet, realClear] = [globalThis.setTimeout, globalThis.clearTimeout];
  globalThis.setTimeout = ((fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    const h = realSet(
      (...a: unknown[]) => {
        pending.delete(h);
        fn(...a);
      },
      ms,
      ...args,
    );
    if ((ms ?? 0) >= MAX_TIMER_MS) pending.add(h);
    return h;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((h: Parameters<typeof clearTimeout>[0]) => {
    pending.delete(h);
    realClear(h);
  }) as typeof clearTimeout;
  let seen = 0;
  try {
    const result = await runOrder(deps, ports, J, { workload: 'infer.llm', order: {} } as unknown as JobSpec, () => {}, async () => {
      seen = pending.size;
      return { outcome: 'failed' };
    });
    assert.equal(result.selection!.record.winner, win.address);
    assert.equal(seen, 1, 'the deadline was a chain of timers while the claims were awaited');
    assert.equal(pending.size, 0, 'no timer of the deadline is left once the run is over');
  } finally {
    globalThis.setTimeout = realSet;
    globalThis.clearTimeout = realClear;
    for (const h of pending) realClear(h as Parameters<typeof clearTimeout>[0]);
  }
});
