/**
 * Throwaway buyer keys do not take a provider's slots (docs/matching.md "No buyer takes every slot"). A buyer DID costs
 * nothing, so the per-buyer bound alone (4c119ea) let a silent buyer with a few keys — each posting a few orders
 * designated to a 2-slot provider, its node taking the claim streams and never answering — hold both slots: each key's
 * back-off ran on its own clock, the claimer works oldest first, and an honest order designated to the provider ended
 * ORDER_NOT_CLAIMED while its presence said 0 free slots. Now buyers this provider has no completed dealings with share
 * one buyer's bound, a claim unanswered for CLAIM_ANSWER_WINDOW_MS stops holding its slot, and buyers whose claims went
 * unanswered come after every other buyer.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { CLAIM_ANSWER_WINDOW_MS, claimsPerBuyer, type Claimer, type ClaimerDeps } from '../../../src/roles/provider/claimer.js';
import { claimerFor } from './claimer-rig.js';
import type { ClaimOutcome } from '../../../src/roles/claim-protocol.js';
import { seal, T } from '../../../src/records/index.js';
import type { LiveProvider } from '../../../src/matching/types.js';
import { NOW, P, advert, job } from '../market/fixtures.js';
import { SilentStreams } from './silent-streams.js';

const W = 'infer.llm';
const SLOTS = 2;
const VICTIM = P(1);
const HONEST = P(100);
const ad = advert(VICTIM, { prices: [{ workload: W, unit: 'job', price: { amount: '0.1', currency: 'USD' } }] });
const live = (t: number): LiveProvider[] => [{ did: VICTIM.did, presence: seal(T.presence, { workloads: [W], freeSlots: SLOTS, issuedAt: t - 1000, windowMs: 15000 }, VICTIM.signer), advert: ad, workloads: [W], freeSlots: SLOTS, liveUntil: t + 14000 }];
const turn = () => new Promise((r) => setImmediate(r));

/** `keys` silent buyers post `perKey` orders each designated to the victim; an honest buyer posts one `honestAfterMs` into the attack. */
async function attack(keys: number, perKey: number, honestAfterMs: number): Promise<{ claimedAfterMs: number | undefined; minFree: number; hostileClaims: number }> {
  let now = NOW;
  const hostile = Array.from({ length: keys }, (_, k) => P(900 + k));
  const silent = new Set(hostile.map((k) => k.did));
  const orders = new OpenOrders();
  let nonce = 0;
  for (const K of hostile) for (let i = 0; i < perKey; i++) orders.add(job(K, { nonce: new Uint8Array([++nonce, 1]), order: { designated: VICTIM.did }, announcedAt: NOW - 1000, deadline: NOW + 3_600_000 }), now);
  const hanging = new SilentStreams('NET_DEADLINE');
  let hostileClaims = 0;
  let honestAt: number | undefined;
  const claimer = victim(orders, () => now, {
    send: (j) => {
      if (silent.has(j.signer)) {
        hostileClaims++;
        return hanging.hang(now); // never answered: fails at the stream's 15 s deadline
      }
      honestAt ??= now;
      return new Promise<ClaimOutcome>(() => {});
    },
  });
  let minFree = SLOTS;
  const step = async () => {
    now += 500;
    hanging.expire(now);
    await turn();
    claimer.tick();
    await turn();
    if (honestAt === undefined) minFree = Math.min(minFree, SLOTS - claimer.pending);
  };
  while (now < NOW + honestAfterMs) await step();
  const honest = job(HONEST, { nonce: new Uint8Array([7]), order: { designated: VICTIM.did }, announcedAt: now, deadline: now + 120_000 });
  orders.add(honest, now);
  while (now < honest.record.deadline && honestAt === undefined) await step();
  claimer.stop();
  return { claimedAfterMs: honestAt === undefined ? undefined : honestAt - honest.record.announcedAt, minFree, hostileClaims };
}

describe('throwaway buyer keys', () => {
  for (const [keys, perKey, after] of [
    [4, 5, 1000],
    [12, 3, 1000],
    [12, 3, 300_000],
  ] as const) {
    it(`${keys} silent keys × ${perKey} orders: an honest designated order posted ${after / 1000} s in is claimed before its deadline, and they never hold every slot`, async () => {
      const r = await attack(keys, perKey, after);
      assert.notEqual(r.claimedAfterMs, undefined, `the honest order was never claimed (${r.hostileClaims} claims to silent keys)`);
      assert.ok(r.claimedAfterMs! < 120_000);
      assert.ok(r.minFree >= SLOTS - claimsPerBuyer(SLOTS), `silent buyers held ${SLOTS - r.minFree} slots of ${SLOTS}`);
    });
  }
});

/** A claimer for the victim with 2 slots and the daemon's bound; `over` replaces deps. */
function victim(orders: OpenOrders, clock: () => number, over: Partial<ClaimerDeps>): Claimer {
  return claimerFor(VICTIM, ad, orders, { clock, monoClock: clock, freeSlots: () => SLOTS, live, maxPerBuyer: claimsPerBuyer(SLOTS), ...over });
}
const won = { won: true, selection: { address: 'sel' } } as unknown as ClaimOutcome;

describe('buyers with and without dealings', () => {
  it('a buyer this provider has worked for keeps its own bound: claimed at once while a new silent buyer holds the shared one', async () => {
    const now = NOW;
    const orders = new OpenOrders();
    const SILENT = P(950);
    orders.add(job(SILENT, { nonce: new Uint8Array([1]), order: { designated: VICTIM.did }, announcedAt: NOW - 5000 }), now);
    orders.add(job(SILENT, { nonce: new Uint8Array([2]), order: { designated: VICTIM.did }, announcedAt: NOW - 5000 }), now);
    orders.add(job(P(951), { nonce: new Uint8Array([3]), order: { designated: VICTIM.did }, announcedAt: NOW - 4000 }), now);
    orders.add(job(HONEST, { nonce: new Uint8Array([4]), order: { designated: VICTIM.did }, announcedAt: NOW - 1000 }), now);
    const sent: string[] = [];
    const claimer = victim(orders, () => now, {
      knownBuyer: (did) => did === HONEST.did,
      send: (j) => {
        sent.push(j.signer);
        return new Promise<ClaimOutcome>(() => {});
      },
    });
    claimer.tick();
    await turn();
    claimer.stop();
    assert.deepEqual(sent, [SILENT.did, HONEST.did], 'one claim for all the new buyers together, and the known buyer’s at once');
  });

  it('an unanswered claim frees its slot after the answer window, its buyer is backed off, and a late win takes a slot again', async () => {
    let now = NOW;
    const orders = new OpenOrders();
    const SLOW = P(960);
    for (const n of [1, 2]) orders.add(job(SLOW, { nonce: new Uint8Array([n]), order: { designated: VICTIM.did }, announcedAt: NOW - 5000 }), now);
    const answers = new Map<string, (o: ClaimOutcome) => void>();
    const claimer = victim(orders, () => now, { send: (j) => new Promise<ClaimOutcome>((res) => answers.set(j.address, res)) });
    claimer.tick();
    await turn();
    assert.equal(claimer.pending, 1);
    now += CLAIM_ANSWER_WINDOW_MS - 1;
    claimer.tick();
    assert.equal(claimer.pending, 1, 'within the window the claim holds its slot');
    assert.equal(answers.size, 1);
    now += 1;
    assert.equal(claimer.pending, 0, 'past the window it holds none');
    assert.equal(claimer.backedOff(SLOW.did), true, 'and its buyer counts as not answering');
    claimer.tick();
    await turn();
    assert.equal(answers.size, 1, 'its other order waits out the back-off');
    [...answers.values()][0]!(won);
    await turn();
    assert.equal(claimer.pending, 1, 'a late win holds a slot until its exec starts');
    assert.equal(claimer.backedOff(SLOW.did), false, 'a late answer is an answer');
    claimer.stop();
  });

  it('a won claim whose exec never starts frees its slot after its grace and backs its buyer off', async () => {
    let now = NOW;
    const orders = new OpenOrders();
    const a = job(HONEST, { nonce: new Uint8Array([1]), order: { designated: VICTIM.did }, announcedAt: NOW - 5000 });
    orders.add(a, now);
    const claimer = victim(orders, () => now, { send: async () => won });
    claimer.tick();
    await turn();
    assert.equal(claimer.pending, 1);
    now += 30_000;
    assert.equal(claimer.pending, 0);
    assert.equal(claimer.backedOff(HONEST.did), true);
    claimer.stop();
  });
});
