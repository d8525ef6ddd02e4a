/**
 * A reclaimed claim's stops to its failovers' providers (src/roles/steward-reclaim.ts onSelection) are shared fairly
 * among the reclaimed claims and their buyers. Before, they went through the accounts' 4 background slots, a claim's
 * slot kept until its queue of up to 8 stops was empty, each stop held up to 30 s: 4 hostile buyers whose selections
 * named held offers of throwaway keys that never answer a stop held every slot, and an honest buyer's failover
 * provider was never asked to stop (it kept running the reclaimed job on the devices freed for the higher claim).
 * Now a claim sends one stop per turn and goes to the back of the line, one stop in flight per buyer, a few in all,
 * each bounded by a short deadline. The whole Steward over a real Ledger, its gossip through the node's Dispatcher.
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
import { MAX_RECLAIM_STOPS, RECLAIM_STOP_DEADLINE_MS } from '../../../src/roles/steward-reclaim.js';
import { Dispatcher } from '../../../src/net/dispatch.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardIdentity, until } from './steward-stub.js';
import { NOW, P, advert, job, offer, type Party } from '../market/fixtures.js';

const selectionOf = (buyer: Party, j: Opened, o: Opened, named: string) =>
  seal(T.selection, { job: j.address, buyer: buyer.did, decidedAt: NOW, policy: 'cheapest', winner: o.address, considered: [{ provider: named, offer: o.address }] }, buyer.signer);

type Frame = { op: string; job: string };

test('hostile buyers whose failovers never answer a stop cannot keep an honest buyer’s failover provider from being asked', async () => {
  const K = MAX_RECLAIM_STOPS + 1; // K low claims: K-1 hostile buyers, the last honest
  let tree = `entitlements:\n  - { id: lab, guarantee_uj: 1000000000, guarantee_devices: 20, over_quota_weight: 0, priority: 0 }\n  - { id: hi, parent: lab, guarantee_uj: 500000000, guarantee_devices: ${K}, over_quota_weight: 0, priority: 2 }\n`;
  for (let i = 0; i < K; i++) tree += `  - { id: lo${i}, parent: lab, guarantee_uj: 50000000, guarantee_devices: 1, over_quota_weight: 0, priority: 0 }\n`;
  const t = tempDir('c0-reclaim-stops-');
  writeFileSync(join(t.dir, 'tree.yaml'), tree);
  const db = await openDb(join(t.dir, 'db'));
  const records = new Map<string, Opened>();
  const handlers = new Map<string, (...a: never[]) => Promise<void>>();
  const disp = new Dispatcher({ metrics: createNetMetrics(), log: silentLogger() });
  const clock = fakeClock(NOW);
  const stops: Array<{ to: string; job: string; deadlineMs?: number }> = [];
  const hanging = new Set<string>(); // providers that take a stop and never answer
  // the stops in flight to them: rejected as the network layer would at the request's deadline (timeOut)
  const inFlight = new Set<(e: Error) => void>();
  const byBuyer = new Map<string, number>();
  let most = 0;
  let mostPerJob = 0;
  const timeOut = () => {
    for (const fail of [...inFlight]) fail(new Error('deadline exceeded'));
  };
  const ports = {
    name: 't',
    clock,
    log: silentLogger(),
    net: {
      handle: async (p: string, h: never) => void handlers.set(p, h),
      subscribe: (k: string, h: never) => disp.subscribe(k as never, h),
      publish: async () => ({ recipients: 1, address: '' }),
      request: async (to: string, _p: string, frames: Frame[], opts?: { limits?: { deadlineMs?: number } }) => {
        if (frames[0]!.op !== 'stop') return [{ running: 'no' }];
        stops.push({ to, job: frames[0]!.job, ...(opts?.limits?.deadlineMs === undefined ? {} : { deadlineMs: opts.limits.deadlineMs }) });
        if (!hanging.has(to)) return [{ stopped: 'no', barred: 'yes' }];
        const j = frames[0]!.job;
        byBuyer.set(j, (byBuyer.get(j) ?? 0) + 1);
        mostPerJob = Math.max(mostPerJob, byBuyer.get(j)!);
        let fail!: (e: Error) => void;
        const p = new Promise<never>((_, no) => (fail = no));
        inFlight.add(fail);
        most = Math.max(most, inFlight.size);
        try {
          return await p;
        } finally {
          inFlight.delete(fail);
          byBuyer.set(j, byBuyer.get(j)! - 1);
        }
      },
      drained: () => disp.drained(),
      syncFrom: async () => ({ accepted: 0, failed: {} }),
      fetchRecords: async () => new Promise<never>(() => {}),
    },
    records: { get: async (a: string) => records.get(a), put: async (r: Opened) => void records.set(r.address, r) },
    market: { decide: async () => ({}), signSelection: () => ({}), adverts: { latest: new Map() } },
    sub: (n: string) => sub(db, n),
  } as unknown as StewardPorts;
  const s = await Steward.start(ports, t.dir, { treeFile: join(t.dir, 'tree.yaml'), managed: false, requiredEvidence: 3, preempt: true, capacity: K }, stewardIdentity);
  const admit = async (j: Opened, buyer: Party, entitlement: string) => {
    const out: Array<{ t?: string }> = [];
    await handlers.get(STEWARD_PROTOCOL)!(...([[{ op: 'admit', job: j.bytes, entitlement, estimate: { uj: 10_000_000, grade: 'Estimator' } }], { peer: peerIdFromDid(buyer.did), signal: new AbortController().signal, send: async (f: { t?: string }) => void out.push(f) }] as never[]));
    return out[0]?.t;
  };
  const push = (rec: Opened) => disp.push(rec, { kind: 'selection', from: 'x', source: 'gossip', attachments: [] } as never);
  const settle = async () => {
    await disp.drained();
    for (let i = 0; i < 30; i++) await new Promise((r) => setImmediate(r));
  };
  try {
    // K low claims, each selected at its own provider (offers held), then K high-priority claims preempt them all
    const lows: Array<{ buyer: Party; j: ReturnType<typeof job> }> = [];
    for (let i = 0; i < K; i++) {
      const buyer = P(10 + i);
      const prov = P(30 + i);
      const j = job(buyer, { workload: 'infer.echo', nonce: new Uint8Array([i + 1]) });
      assert.equal(await admit(j, buyer, `lo${i}`), 'admitted');
      const o = offer(prov, j, advert(prov));
      records.set(o.address, o);
      push(selectionOf(buyer, j, o, prov.did));
      lows.push({ buyer, j });
    }
    await settle();
    for (let i = 0; i < K; i++) {
      const hb = P(50 + i);
      assert.equal(await admit(job(hb, { workload: 'infer.echo', nonce: new Uint8Array([100 + i]) }), hb, 'hi'), 'admitted');
    }
    await settle();
    assert.equal(stops.length, K, 'each low claim’s provider was asked to stop');

    // K-1 hostile buyers: each signs failover selections naming held offers of throwaway keys that never answer
    for (let i = 0; i < K - 1; i++) {
      const { buyer, j } = lows[i]!;
      for (let n = 0; n < 3; n++) {
        const junk = P(200 + i * 10 + n);
        hanging.add(junk.did);
        const o = offer(junk, j, advert(junk));
        records.set(o.address, o);
        push(selectionOf(buyer, j, o, junk.did));
      }
    }
    await settle();
    // the honest buyer fails over to provB, which answers at once
    const honest = lows[K - 1]!;
    const provB = P(250);
    const oB = offer(provB, honest.j, advert(provB));
    records.set(oB.address, oB);
    push(selectionOf(honest.buyer, honest.j, oB, provB.did));
    await settle();
    await until(() => inFlight.size === MAX_RECLAIM_STOPS, `the hostile stops in flight: ${inFlight.size}`);
    // the hostile stops reach their deadline (once): the honest failover's turn comes before any hostile claim's second stop
    timeOut();
    await settle();
    await until(() => stops.some((x) => x.to === provB.did), 'provB (running the honest buyer’s reclaimed job on the freed devices) asked to stop');
    const failoverStops = stops.filter((x) => hanging.has(x.to) || x.to === provB.did);
    assert.ok(
      failoverStops.every((x) => x.deadlineMs !== undefined && x.deadlineMs <= RECLAIM_STOP_DEADLINE_MS),
      'a failover’s stop is bounded by the short stop deadline',
    );
    assert.ok(most <= MAX_RECLAIM_STOPS, `at most ${MAX_RECLAIM_STOPS} stops in flight: ${most}`);
    assert.equal(mostPerJob, 1, 'one stop in flight per reclaimed claim');
    // every hostile stop still goes out in turn, a few at a time
    await until(() => {
      timeOut();
      return stops.filter((x) => hanging.has(x.to)).length >= 3 * (K - 1);
    }, 'every hostile failover asked in turn');
    await settle();
    assert.equal(stops.filter((x) => hanging.has(x.to)).length, 3 * (K - 1), 'each failover asked once');
    assert.ok(most <= MAX_RECLAIM_STOPS);
  } finally {
    timeOut();
    await s.stop();
    await closeDb(db);
    t.cleanup();
  }
});
