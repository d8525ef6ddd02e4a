/**
 * The outcomes a buyer is still sending when its node stops (src/node/buyer-wiring.ts BuyerWiring.stop; review s38
 * r5, day2-inprocess-acceptance.sh): `c0mpute run` without a daemon stops its in-process node right after the job
 * ended, and the acceptance's send (not awaited) and its 5 s retry were dropped with the network, so the provider never
 * got its own evidence. Now the overlay's stop, before its network stops, waits for the sends in flight and makes an
 * acceptance's retry at once, all within OUTCOME_DRAIN_MS, and a send that never answers does not hold the stop.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import { Ed25519Signer, didFromPublicKey, seal, T, type Job, type Offer, type Opened, type Receipt } from '../../../src/records/index.js';
import { hashHex } from '../../../src/records/address.js';
import * as wiringModule from '../../../src/node/buyer-wiring.js';
import type { BuyerDeps } from '../../../src/roles/buyer.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { silentLogger } from '../../../src/util/log.js';

const now = Date.now();
const buyerKey = Ed25519Signer.generate();
const buyer = didFromPublicKey(buyerKey.publicKey);
const providerKey = Ed25519Signer.generate();
const provider = didFromPublicKey(providerKey.publicKey);

function acceptanceCase() {
  const input = randomBytes(8);
  const j = seal(T.job, { workload: 'builtin.sha256', requirements: {}, maxPrice: { amount: '0.01', currency: 'USD' }, announcedAt: now, deadline: now + 60_000, timeoutMs: 30_000, input: { hash: hashHex(input), size: 8 }, inputSealed: 'no' }, buyerKey) as Opened<Job>;
  const o = seal(T.offer, { job: j.address, advert: 'sha256:' + 'ab'.repeat(32), price: { amount: '0.002', currency: 'USD' }, durationMs: 1000, issuedAt: now, startBy: now + 30_000, expiresAt: now + 30_000 }, providerKey) as Opened<Offer>;
  const receipt = seal(T.receipt, { job: j.address, offer: o.address, buyer, provider, workload: 'builtin.sha256', status: 'completed', startedAt: now, completedAt: now + 10, inputHash: j.record.input.hash, outputHash: hashHex(randomBytes(4)), price: o.record.price, energy: { uj: 1, grade: 'Estimator' } }, providerKey) as Opened<Receipt>;
  const acceptance = seal(T.acceptance, { receipt: receipt.address, verdict: 'accepted', signedAt: now + 20 }, buyerKey);
  return { j, o, receipt, acceptance };
}

/** A fake overlay whose outcome/1 sends answer through `answer` (call number from 0), and whose network can go down. */
function setup(answer: (call: number) => Promise<'accepted' | 'unreachable'>) {
  const { j, o, receipt, acceptance } = acceptanceCase();
  const net = { up: true, calls: 0, delivered: [] as Array<{ outcome: string; up: boolean }> };
  const overlay = {
    d: { config: { buyer: { collectWindowMs: 1000, enoughOffers: 0, policy: 'cheapest', offersWanted: 8, inviteAbove: 200 }, network: {}, overlays: [] }, identity: { signer: buyerKey }, network: {} },
    did: buyer,
    name: 'public',
    clock: () => now,
    log: silentLogger(),
    registry: new Registry(),
    market: {
      ownJob: (addr: string) => (addr === j.address ? j : undefined),
      book: { candidates: () => [o] },
      evidence: { receipts: new Map([[receipt.address, receipt]]) },
      addOffer: async () => {},
    },
    records: { advertOf: () => undefined, get: async () => undefined },
    net: {
      sendOutcome: async (_kind: string, to: string[]) => {
        const outcome = await answer(net.calls++);
        // what a provider gets once the network stopped is lost
        net.delivered.push({ outcome: net.up ? outcome : 'unreachable', up: net.up });
        return { outcomes: Object.fromEntries(to.map((d) => [d, net.up ? outcome : 'unreachable'])), address: acceptance.address };
      },
      publish: async () => ({ recipients: 0, address: '' }),
    },
  } as unknown as OverlayNode;
  const wiring = new wiringModule.BuyerWiring(overlay);
  const deps = (wiring.createBuyer() as unknown as { d: BuyerDeps }).d;
  /** The overlay's stop: the buyer side, then the network. */
  const stop = async () => {
    await (wiring.stop() as unknown);
    net.up = false;
  };
  const selection = seal(T.selection, { job: j.address, buyer, policy: 'cheapest', winner: o.address, considered: [{ provider, offer: o.address }], decidedAt: now }, buyerKey);
  return { net, stop, publishAcceptance: () => deps.publish('acceptance', acceptance), publishSelection: () => deps.publish('selection', selection) };
}

const later = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

test('the stop waits for an acceptance still being sent, before the network goes down', async () => {
  const s = setup(async () => {
    await later(50);
    return 'accepted';
  });
  await s.publishAcceptance();
  await s.stop();
  await later(100);
  assert.deepEqual(s.net.delivered, [{ outcome: 'accepted', up: true }]);
});

test('an acceptance not delivered gets its second try at the stop, at once, and it is waited for', async () => {
  const s = setup(async (call) => {
    await later(20);
    return call === 0 ? 'unreachable' : 'accepted';
  });
  await s.publishAcceptance();
  await later(40);
  assert.equal(s.net.calls, 1, 'the first try failed; the second is due 5 s later');
  await s.stop();
  assert.deepEqual(s.net.delivered, [
    { outcome: 'unreachable', up: true },
    { outcome: 'accepted', up: true },
  ]);
});

test('a send that never answers does not hold the stop past OUTCOME_DRAIN_MS', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const s = setup(() => new Promise(() => {}));
  await s.publishAcceptance();
  let stopped = false;
  const stopping = s.stop().then(() => (stopped = true));
  const drainMs = (wiringModule as { OUTCOME_DRAIN_MS?: number }).OUTCOME_DRAIN_MS ?? 5_000;
  for (let i = 0; i < 10 && !stopped; i++) {
    t.mock.timers.tick(drainMs);
    await new Promise((r) => setImmediate(r));
  }
  await stopping;
  assert.ok(stopped);
});

test('a selection still being sent does not hold the stop: only an acceptance is the provider’s own evidence (second-round review: a losing quoter that never answered held every stop 5 s)', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const s = setup(() => new Promise(() => {}));
  await s.publishSelection();
  assert.equal(s.net.calls, 1, 'the selection went out over outcome/1');
  let stopped = false;
  const stopping = s.stop().then(() => (stopped = true));
  // no timer ticked: a stop that waited for the selection would still be waiting on the drain's timeout
  for (let i = 0; i < 10 && !stopped; i++) await new Promise((r) => setImmediate(r));
  assert.ok(stopped, 'stopped without waiting for the selection');
  await stopping;
});
