/**
 * Idle timers (docs/scale.md "Idle cost"; issue #16): the connectivity check
 * and the provider's claimer do no periodic work while nothing is to be done,
 * and still act at once when something changes (a lost peer, a new order).
 * Fakes: a host whose connections the test sets, a real OpenOrders.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Connectivity, type ConnectivityHost, type DialTarget } from '../../../src/net/connectivity.js';
import { OpenOrders } from '../../../src/matching/open-orders.js';
import { MATCH_LIVENESS_MS, type LiveProvider } from '../../../src/matching/types.js';
import { Claimer } from '../../../src/roles/provider/claimer.js';
import { seal, T, type Advert, type Claim, type Job, type Opened } from '../../../src/records/index.js';
import { NOW, P, advert, job } from '../market/fixtures.js';
import { silentLogger } from '../../../src/util/log.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function waitFor(cond: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await sleep(5);
  }
}

class Host implements ConnectivityHost {
  conns = new Set<string>();
  dials: string[] = [];
  passes = 0;
  isConnected(p: string) {
    return this.conns.has(p);
  }
  peerCount() {
    this.passes++;
    return this.conns.size;
  }
  async dial(t: DialTarget) {
    this.dials.push(t.peerId ?? '?');
    this.conns.add(t.peerId ?? '?');
    return t.peerId ?? '?';
  }
}

test('connectivity: no pass every tickMs while every target is connected; a lost peer is checked and redialled at once', async () => {
  const host = new Host();
  const c = new Connectivity({ host, bootstrap: ['/ip4/127.0.0.1/tcp/1/p2p/B'], log: silentLogger(), options: { minPeers: 0, tickMs: 10, idleTickMs: 60_000 } });
  c.start();
  try {
    await waitFor(() => host.isConnected('B'));
    await sleep(50); // the pass after the dial settles
    const before = host.passes;
    await sleep(300);
    assert.ok(host.passes - before <= 1, `${host.passes - before} passes in 300 ms with everything connected (tickMs 10)`);
    assert.equal(c.nextDelay(Date.now()), 60_000);

    host.conns.delete('B');
    c.wake();
    await waitFor(() => host.dials.length === 2, 2_000);
    assert.equal(c.nextDelay(Date.now()), 60_000, 'B is connected again: back to the idle tick');
  } finally {
    c.stop();
  }
});

test('connectivity: the next pass is at the earliest due target, within [tickMs, idleTickMs]', () => {
  const host = new Host();
  const now = 1_000_000;
  const c = new Connectivity({ host, bootstrap: ['/ip4/127.0.0.1/tcp/1/p2p/B'], monoClock: () => now, rand: () => 0.5, log: silentLogger(), options: { minPeers: 0, tickMs: 500, idleTickMs: 5_000 } });
  c.schedule.disconnected('B', now); // lost just now: due after 250 ms (no jitter)
  assert.equal(c.nextDelay(now), 500, 'never sooner than tickMs');
  c.schedule.failed('B', now);
  c.schedule.failed('B', now);
  c.schedule.failed('B', now); // 2 000 ms away
  assert.equal(c.nextDelay(now), 2_000);
  host.conns.add('B');
  assert.equal(c.nextDelay(now), 5_000, 'all connected: the safety tick');
});

const W = 'infer.llm';
const prices = [{ workload: W, unit: 'job', price: { amount: '0.5', currency: 'USD' } }];
const AD: Opened<Advert> = advert(P(1), { prices });

test('claimer: no lease recomputation while no order is open; a new order is claimed at once, then leases are followed every tickMs', async () => {
  const orders = new OpenOrders();
  let looks = 0;
  const open = orders.open.bind(orders);
  orders.open = (now: number) => {
    looks++;
    return open(now);
  };
  const view = (): LiveProvider[] => {
    const presence = seal(T.presence, { workloads: [W], freeSlots: 2, issuedAt: NOW - 1_000, windowMs: MATCH_LIVENESS_MS }, P(1).signer);
    return [{ did: P(1).did, presence, advert: AD, workloads: [W], freeSlots: 2, liveUntil: NOW - 1_000 + MATCH_LIVENESS_MS }];
  };
  const sent: Array<Opened<Claim>> = [];
  const cl = new Claimer({
    did: P(1).did,
    signer: P(1).signer,
    clock: () => NOW,
    log: silentLogger(),
    orders,
    advert: () => AD,
    freeSlots: () => 4,
    runs: () => false,
    live: view,
    canRun: () => true,
    send: async (_j, c) => {
      sent.push(c);
      return new Promise(() => {}); // never answered: the claim holds its slot
    },
    tickMs: 10,
    idleTickMs: 60_000,
  });
  cl.start();
  try {
    await sleep(200);
    assert.equal(looks, 0, 'no order open: the claimer did not look (tickMs 10)');
    assert.equal(cl.idle, true);

    const j: Opened<Job> = job(P(100), { nonce: new Uint8Array([7]), order: {} });
    orders.add(j, NOW);
    cl.changed();
    await waitFor(() => sent.length === 1, 2_000);
    assert.equal(sent[0]!.record.job, j.address);
    const after = looks;
    await sleep(200);
    assert.ok(looks - after >= 3, `an order open: leases followed every tickMs (${looks - after} looks in 200 ms)`);
  } finally {
    cl.stop();
  }
});
