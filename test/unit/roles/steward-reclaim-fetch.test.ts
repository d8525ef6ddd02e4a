/**
 * A selection heard for a claim the steward reclaimed already (preempted or idle, src/roles/steward-reclaim.ts
 * onSelection) has the provider of its winning offer asked to stop too. Before, each such selection resolved its
 * winner with a records/1 fetch from the selection's signer and the named provider, one per selection and none
 * bounded: a buyer of a reclaimed claim sending many selections, each naming an offer nobody holds from a DID that
 * never answers, had the steward run as many fetches (and streams) at once. Now it resolves from what the steward
 * holds first, and a fetch goes through the accounts' background slots (src/roles/steward-accounts.ts
 * BackgroundFetches): one per claim and per buyer at a time, MAX_BACKGROUND_RESOLVES in all, backing off after a
 * miss, dropped when the reclaimed entry reaches its deadline or the steward stops. A failover whose provider's offer
 * the steward does not hold still has that provider asked to stop. The stop requests are bounded too (one in flight
 * per buyer, a few in all, in turns: steward-reclaim-stops.test.ts): before, a failover whose offer the steward held
 * had its stop sent at once, so a buyer's selections each naming a held offer of a provider that never answers (its
 * own throwaway keys', say) had the steward send that many stops at once. The
 * whole Steward over a real Ledger, its gossip through the node's Dispatcher, its records/1 and direct requests fakes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDb, closeDb, sub } from '../../../src/store/db.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T } from '../../../src/records/kinds.js';
import { Steward, STEWARD_PROTOCOL } from '../../../src/roles/steward.js';
import type { StewardPorts } from '../../../src/roles/steward-ports.js';
import { BackgroundFetches, MAX_BACKGROUND_RESOLVES, type FetchBackoff } from '../../../src/roles/steward-accounts.js';
import { Dispatcher } from '../../../src/net/dispatch.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardIdentity, until } from './steward-stub.js';
import { NOW, P, advert, job, offer, type Party } from '../market/fixtures.js';

// `hi` outranks `lo`; the operator declares one device, so admitting `hi` preempts `lo`.
const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: hi, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 2 }
  - { id: lo, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 0 }
`;
const [lowBuyer, highBuyer, provA, provB] = [P(1), P(2), P(3), P(4)];

const selectionOf = (buyer: Party, j: Opened, o: Opened, named: string) =>
  seal(T.selection, { job: j.address, buyer: buyer.did, decidedAt: NOW, policy: 'cheapest', winner: o.address, considered: [{ provider: named, offer: o.address }] }, buyer.signer);

type Frame = { op: string; job: string };

/**
 * A steward on a one-device overlay whose `lo` claim (lowBuyer's, run at provA) was reclaimed for a `hi` one: provA
 * answered the stop `barred`. records/1 is `serve` (per party and address: what it answers; undefined, the default, never
 * answers).
 */
async function reclaimedRig(serve?: (from: string, address: string) => Opened[] | undefined, o: { stopHangs?: (to: string) => boolean } = {}) {
  const t = tempDir('c0-reclaim-fetch-');
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const db = await openDb(join(t.dir, 'db'));
  const records = new Map<string, Opened>();
  const handlers = new Map<string, (...a: never[]) => Promise<void>>();
  const disp = new Dispatcher({ metrics: createNetMetrics(), log: silentLogger() });
  const clock = fakeClock(NOW);
  // the monotonic clock (durations the steward measures for itself: the fetches' backoff)
  const mono = fakeClock(0);
  const stops: Array<{ to: string; job: string }> = [];
  // stop requests in flight now, and the most ever (a stop `stopHangs` says hangs answers only at close)
  const stopping = { now: 0, max: 0 };
  // records/1: how many fetches are in flight now, the most ever, and every one asked
  const fetches = { now: 0, max: 0, all: [] as Array<{ from: string; address: string }> };
  let release!: () => void;
  const never = new Promise<void>((ok) => (release = ok));
  const ports = {
    name: 't',
    clock,
    monoClock: mono,
    log: silentLogger(),
    net: {
      handle: async (p: string, h: never) => void handlers.set(p, h),
      subscribe: (k: string, h: never) => disp.subscribe(k as never, h),
      publish: async () => ({ recipients: 1, address: '' }),
      request: async (to: string, _p: string, frames: Frame[]) => {
        if (frames[0]!.op !== 'stop') return [{ running: 'no' }];
        stops.push({ to, job: frames[0]!.job });
        stopping.now++;
        stopping.max = Math.max(stopping.max, stopping.now);
        try {
          if (o.stopHangs?.(to)) await never;
          return [{ stopped: 'no', barred: 'yes' }];
        } finally {
          stopping.now--;
        }
      },
      drained: () => disp.drained(),
      syncFrom: async () => ({ accepted: 0, failed: {} }),
      fetchRecords: async (from: string, addrs: string[]) => {
        fetches.all.push({ from, address: addrs[0]! });
        fetches.now++;
        fetches.max = Math.max(fetches.max, fetches.now);
        try {
          const r = serve?.(from, addrs[0]!);
          if (r) return r;
          await never;
          return [];
        } finally {
          fetches.now--;
        }
      },
    },
    records: { get: async (a: string) => records.get(a), put: async (r: Opened) => void records.set(r.address, r) },
    market: { decide: async () => ({}), signSelection: () => ({}), adverts: { latest: new Map() } },
    sub: (n: string) => sub(db, n),
  } as unknown as StewardPorts;
  const s = await Steward.start(ports, t.dir, { treeFile: join(t.dir, 'tree.yaml'), managed: false, requiredEvidence: 3, preempt: true, capacity: 1 }, stewardIdentity);
  const admit = async (j: Opened, buyer: Party, entitlement: string) => {
    const out: Array<{ t?: string }> = [];
    await handlers.get(STEWARD_PROTOCOL)!(...([[{ op: 'admit', job: j.bytes, entitlement, estimate: { uj: 10_000_000, grade: 'Estimator' } }], { peer: peerIdFromDid(buyer.did), signal: new AbortController().signal, send: async (f: { t?: string }) => void out.push(f) }] as never[]));
    return out[0]?.t;
  };
  const push = (rec: Opened, kind: string) => disp.push(rec, { kind, from: 'x', source: 'gossip', attachments: [] } as never);
  const released = async (claim: string) => (await s.ledger.records(0)).filter((e) => e.event === 'Released' && e.claim === claim);

  // lo: admitted, its selection at provA (offer held here)
  const low = job(lowBuyer, { workload: 'infer.echo', nonce: new Uint8Array([1]) });
  assert.equal(await admit(low, lowBuyer, 'lo'), 'admitted');
  const offerA = offer(provA, low, advert(provA));
  records.set(offerA.address, offerA);
  push(selectionOf(lowBuyer, low, offerA, provA.did), 'selection');
  await disp.drained();
  // hi needs the one device: lo is preempted (provA bars it) and released
  const high = job(highBuyer, { workload: 'infer.echo', nonce: new Uint8Array([2]) });
  assert.equal(await admit(high, highBuyer, 'hi'), 'admitted');
  assert.deepEqual(stops, [{ to: provA.did, job: low.address }]);
  assert.equal((await released(low.address)).length, 1, 'the reclaimed claim is released');

  /** Let the event loop run a little (background work starts). */
  const settle = async () => {
    await disp.drained();
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  };
  const close = async () => {
    release();
    await s.stop();
    await closeDb(db);
    t.cleanup();
  };
  return { s, clock, mono, records, push, settle, stops, stopping, fetches, low, close };
}

test('a hostile buyer’s selections for its reclaimed claim, each naming an unheld offer from a silent DID, run one fetch at a time', async () => {
  const r = await reclaimedRig();
  try {
    const N = 3 * MAX_BACKGROUND_RESOLVES;
    for (let i = 0; i < N; i++) {
      const o = offer(P(70 + i), r.low, 'sha256:' + '33'.repeat(32));
      r.push(selectionOf(lowBuyer, r.low, o, P(70 + i).did), 'selection');
    }
    await r.settle();
    assert.ok(r.fetches.all.length >= 1, 'the unheld offer is looked for');
    assert.equal(r.fetches.max, 1, `one fetch at a time for one reclaimed claim and buyer (at most ${MAX_BACKGROUND_RESOLVES} in all), not one per selection: ${r.fetches.max}`);
    // a catch-up round does not start another for the same claim while its fetch hangs
    await r.s.catchUp();
    await r.settle();
    assert.equal(r.fetches.max, 1);
    assert.equal(r.stops.length, 1, 'nobody else was asked to stop');
  } finally {
    await r.close();
  }
});

test('a reclaimed claim whose fetch found nothing backs off; its pending selections go at its deadline', async () => {
  // every party answers at once, with nothing
  const r = await reclaimedRig(() => []);
  try {
    const unheld = (i: number) => offer(P(70 + i), r.low, 'sha256:' + '33'.repeat(32));
    r.push(selectionOf(lowBuyer, r.low, unheld(0), P(70).did), 'selection');
    await r.settle();
    const first = r.fetches.all.length;
    assert.ok(first >= 1 && first <= 2, `the signer, then the named provider: ${first}`);
    // within the backoff, neither a new selection nor a catch-up round fetches again
    r.push(selectionOf(lowBuyer, r.low, unheld(1), P(71).did), 'selection');
    await r.s.catchUp();
    await r.settle();
    assert.equal(r.fetches.all.length, first, 'backing off after a miss');
    // after it, a catch-up round tries the pending selections again
    r.clock.advance(1_500);
    r.mono.advance(1_500);
    await r.s.catchUp();
    await r.settle();
    assert.ok(r.fetches.all.length > first, 'tried again after the backoff');
    // past the claim's deadline the reclaimed entry and what it kept pending are gone: nothing more is fetched
    const atDeadline = r.fetches.all.length;
    r.clock.set(r.low.record.deadline + 1);
    await r.s.catchUp();
    r.push(selectionOf(lowBuyer, r.low, unheld(2), P(72).did), 'selection');
    await r.settle();
    assert.equal(r.fetches.all.length, atDeadline, 'nothing fetched for a reclaimed claim past its deadline');
  } finally {
    await r.close();
  }
});

test('the fetches’ backoff is on the monotonic clock: a wall clock stepped back or forward 10 min neither holds it nor cuts it short', async () => {
  // Before, it read the wall clock: stepped back 10 min, a reclaimed claim's failovers were not looked for again for
  // 10 min; stepped forward, the backoff after a miss was skipped.
  const r = await reclaimedRig(() => []);
  try {
    const unheld = (i: number) => offer(P(70 + i), r.low, 'sha256:' + '33'.repeat(32));
    r.push(selectionOf(lowBuyer, r.low, unheld(0), P(70).did), 'selection');
    await r.settle();
    const first = r.fetches.all.length;
    assert.ok(first >= 1, 'looked for, and not found: backing off 1 s');
    // the wall clock steps back 10 min; 1.5 s pass: the backoff is over
    r.clock.advance(-10 * 60_000);
    r.mono.advance(1_500);
    await r.s.catchUp();
    await r.settle();
    const second = r.fetches.all.length;
    assert.ok(second > first, 'tried again after the backoff, whatever the wall clock did');
    // a second miss: 2 s now. The wall clock steps forward 10 min, 0.5 s pass: still backing off
    r.clock.advance(20 * 60_000);
    r.mono.advance(500);
    await r.s.catchUp();
    await r.settle();
    assert.equal(r.fetches.all.length, second, 'still backing off');
    r.mono.advance(2_000);
    await r.s.catchUp();
    await r.settle();
    assert.ok(r.fetches.all.length > second, 'tried again once the backoff is over');
  } finally {
    await r.close();
  }
});

test('the background slots’ own backoff (an open claim’s fetches) is timed on the monotonic clock they are given', async () => {
  const mono = fakeClock(0);
  const slots = new BackgroundFetches({ mono, log: silentLogger(), stopped: () => false });
  const backoff: FetchBackoff = {};
  const miss = async () => {
    let done!: () => void;
    const finished = new Promise<void>((ok) => (done = ok));
    const started = slots.run('claim', 'buyer', backoff, 'test', async () => {
      setImmediate(done);
      return false;
    });
    if (started) await finished;
    await new Promise((r) => setImmediate(r));
    return started;
  };
  assert.equal(await miss(), true);
  assert.equal(await miss(), false, 'backing off 1 s after a miss');
  mono.advance(1_500);
  assert.equal(await miss(), true, 'the 1 s backoff is over after 1.5 s');
  mono.advance(500);
  assert.equal(await miss(), false, 'the 2 s backoff holds after 0.5 s');
  mono.advance(1_600);
  assert.equal(await miss(), true, 'and is over after 2.1 s');
});

test('a failover whose provider’s offer the steward does not hold still has that provider asked to stop', async () => {
  // the buyer's node serves the failover's winning offer (records/1); nobody else answers
  let offerB: Opened | undefined;
  const r = await reclaimedRig((from, address) => (from === lowBuyer.did && address === offerB?.address ? [offerB] : []));
  try {
    offerB = offer(provB, r.low, advert(provB));
    r.push(selectionOf(lowBuyer, r.low, offerB, provB.did), 'selection');
    await until(() => r.stops.some((x) => x.to === provB.did), 'provB asked to stop the reclaimed job');
    assert.deepEqual(
      r.stops.filter((x) => x.to === provB.did),
      [{ to: provB.did, job: r.low.address }],
    );
    // the same failover heard again asks nobody again, and fetches nothing more
    const fetched = r.fetches.all.length;
    r.push(selectionOf(lowBuyer, r.low, offerB, provB.did), 'selection');
    await r.settle();
    assert.equal(r.stops.filter((x) => x.to === provB.did).length, 1);
    assert.equal(r.fetches.all.length, fetched);
  } finally {
    await r.close();
  }
});

test('a hostile buyer’s selections for its reclaimed claim, each naming a held offer of a provider that never answers, send one stop at a time', async () => {
  // every failover's provider (not provA) takes the stop and never answers
  const r = await reclaimedRig(undefined, { stopHangs: (to) => to !== provA.did });
  try {
    const N = 3 * MAX_BACKGROUND_RESOLVES;
    for (let i = 0; i < N; i++) {
      const o = offer(P(70 + i), r.low, advert(P(70 + i)));
      r.records.set(o.address, o);
      r.push(selectionOf(lowBuyer, r.low, o, P(70 + i).did), 'selection');
    }
    // the first failover's provider is asked (once its note is on disk), and never answers
    await until(() => r.stops.some((x) => x.to !== provA.did), 'a failover’s provider asked to stop');
    await r.settle();
    await r.s.catchUp();
    await r.settle();
    const toFailovers = r.stops.filter((x) => x.to !== provA.did);
    assert.equal(r.stopping.max, 1, `one stop at a time for one reclaimed claim and buyer (at most ${MAX_BACKGROUND_RESOLVES} in all), not one per selection: ${r.stopping.max}`);
    assert.equal(toFailovers.length, 1, 'the others wait for the slot');
    assert.equal(r.fetches.all.length, 0, 'held offers fetch nothing');
  } finally {
    await r.close();
  }
});

test('failovers whose held offers name providers that answer are each asked to stop, one after the other, the newest first', async () => {
  const r = await reclaimedRig();
  try {
    const parties = [P(80), P(81), P(82)];
    for (const p of parties) {
      const o = offer(p, r.low, advert(p));
      r.records.set(o.address, o);
      r.push(selectionOf(lowBuyer, r.low, o, p.did), 'selection');
    }
    await until(() => parties.every((p) => r.stops.some((x) => x.to === p.did)), 'every failover’s provider asked to stop');
    assert.equal(r.stopping.max, 1);
    assert.deepEqual(
      r.stops.filter((x) => x.to !== provA.did).map((x) => x.to).sort(),
      parties.map((p) => p.did).sort(),
      'each once',
    );
  } finally {
    await r.close();
  }
});

test('a failover whose offer the steward holds is asked to stop while the claim backs off after a fetch that found nothing', async () => {
  // every party answers at once, with nothing
  const r = await reclaimedRig(() => []);
  try {
    r.push(selectionOf(lowBuyer, r.low, offer(P(70), r.low, 'sha256:' + '33'.repeat(32)), P(70).did), 'selection');
    await r.settle();
    assert.ok(r.fetches.all.length >= 1, 'the unheld offer was looked for, and not found');
    // within the backoff: a failover whose offer is held is not held back by it
    const offerB = offer(provB, r.low, advert(provB));
    r.records.set(offerB.address, offerB);
    r.push(selectionOf(lowBuyer, r.low, offerB, provB.did), 'selection');
    await until(() => r.stops.some((x) => x.to === provB.did), 'provB asked to stop at once');
  } finally {
    await r.close();
  }
});
