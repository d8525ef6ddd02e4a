/**
 * A job starting (or ending) wakes the claimer (docs/matching.md "No buyer takes every slot"). With the per-buyer
 * bound one buyer holds at most half the slots in claims not yet started, so its next order waits for a claimed job's
 * exec to start; the provider's slot change woke only the presence publisher, and the claimer looked again on its
 * 500 ms tick, so one buyer's batch of short lines on a 2-slot provider ran about half as fast as without the bound.
 * Now the slot change wakes the claimer too: it claims the next order on the start event, the clock not moved.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { claimsPerBuyer } from '../../../src/roles/provider/claimer.js';
import { claimerFor } from './claimer-rig.js';
import type { ClaimOutcome } from '../../../src/roles/claim-protocol.js';
import type { OrdersWiring } from '../../../src/node/orders-wiring.js';
import type { PresencePublisher } from '../../../src/roles/provider/presence-publisher.js';
import { slotsChanged } from '../../../src/node/provider-wiring.js';
import { seal, T } from '../../../src/records/index.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { NOW, P, advert, job } from '../market/fixtures.js';

const W = 'infer.llm';
const ME = P(1);
const BUYER = P(100);
const ad = advert(ME, { prices: [{ workload: W, unit: 'job', price: { amount: '0.1', currency: 'USD' } }] });
const live = (t: number): LiveProvider[] => [{ did: ME.did, presence: seal(T.presence, { workloads: [W], freeSlots: 2, issuedAt: t - 1000, windowMs: 15000 }, ME.signer), advert: ad, workloads: [W], freeSlots: 2, liveUntil: t + 14000 }];
const turn = () => new Promise((r) => setImmediate(r));

test('a claimed job starting wakes the claimer, which claims the buyer’s next order then', async () => {
  const now = NOW; // never moves: no tick can be what claims the second order
  const orders = new OpenOrders();
  const lines = [1, 2, 3].map((n) => job(BUYER, { nonce: new Uint8Array([n]), order: { designated: ME.did }, announcedAt: NOW - 1000 + n }));
  for (const l of lines) orders.add(l, now);
  const running = new Set<string>();
  const sent: string[] = [];
  const claimer = claimerFor(ME, ad, orders, {
    clock: () => now,
    freeSlots: () => 2 - running.size,
    runs: (j) => running.has(j),
    live,
    maxPerBuyer: claimsPerBuyer(2),
    knownBuyer: () => true,
    send: async (j) => {
      sent.push(j.address);
      return { won: true, selection: { address: 'sel' } } as unknown as ClaimOutcome;
    },
  });
  let presence = 0;
  const node = { presencePublisher: { changed: () => void presence++ } as unknown as PresencePublisher, orders: { claimer } as unknown as OrdersWiring };
  claimer.tick(); // the timer is never started: only a wake-up can claim more
  for (let i = 0; i < 5; i++) await turn();
  assert.deepEqual(sent, [lines[0]!.address], 'one claim of the buyer’s not yet started at a time');

  running.add(lines[0]!.address); // the buyer's exec of the first line starts here
  slotsChanged(node);
  for (let i = 0; i < 5; i++) await turn();
  assert.equal(presence, 1, 'the presence publisher is told, as before');
  assert.deepEqual(sent, [lines[0]!.address, lines[1]!.address], 'and the claimer claims the next line on the start event');
  claimer.stop();
});
