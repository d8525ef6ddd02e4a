/**
 * The stops a reclaimed claim's failovers' providers wait for (src/roles/steward-reclaim.ts: one stop in flight per
 * buyer, a few in all, in turns) survive a steward restart. Before, the providers found and not asked yet were held
 * in memory only: a steward restarted while they waited dropped them, and each such failover's provider went on
 * running the reclaimed job on the devices freed for the higher claim until the buyer happened to sign another
 * selection. Now the waiting providers are kept in the claim's reclaimed note (ClaimStore `x/`, `waiting`), written
 * when they start to wait, given back at the start and asked in turns as before; they go with the note at the
 * claim's deadline. So is the one whose stop was going out when the steward went down (`sending`: the stop may never
 * have reached it, and it is asked again; before, it was on disk as asked and never asked after the start, and ran the
 * reclaimed job on). A note written before `waiting` existed still loads. The whole Steward over a real Ledger and
 * LevelDB, stopped and started again on the same directory; its gossip through the node's Dispatcher, its records/1
 * and direct requests fakes.
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
import { ClaimStore, MAX_ASKED_PER_CLAIM } from '../../../src/roles/steward-accounts.js';
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
const [lowBuyer, highBuyer, provA] = [P(1), P(2), P(3)];
const failovers = [P(40), P(41), P(42)];

const selectionOf = (buyer: Party, j: Opened, o: Opened, named: string, n = 0) =>
  seal(T.selection, { job: j.address, buyer: buyer.did, decidedAt: NOW + n, policy: 'cheapest', winner: o.address, considered: [{ provider: named, offer: o.address }] }, buyer.signer);

type Frame = { op: string; job: string };
type Rig = Awaited<ReturnType<typeof makeRig>>;
type Started = Awaited<ReturnType<Rig['start']>>;

/**
 * A whole Steward on a real Ledger and LevelDB in a temp directory, started (and started again) on it: `request`
 * answers its direct requests; the `x/` puts of its `steward-claims` batches are counted, and how many were synced.
 */
async function makeRig(request: (to: string, frames: Frame[]) => Promise<unknown[]>) {
  const t = tempDir('c0-reclaim-restart-');
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const db = await openDb(join(t.dir, 'db'));
  const records = new Map<string, Opened>();
  const clock = fakeClock(NOW);
  const writes = { x: 0, xSynced: 0 };
  const counted = (n: string) => {
    const s = sub(db, n);
    if (n !== 'steward-claims') return s;
    return new Proxy(s, {
      get(o, k) {
        if (k === 'batch')
          return async (ops: Array<{ type: string; key: string }>, opts?: { sync?: boolean }) => {
            const xs = ops.filter((op) => op.type === 'put' && op.key.startsWith('x/')).length;
            writes.x += xs;
            if (opts?.sync) writes.xSynced += xs;
            return o.batch(ops as never, opts as never);
          };
        const v = (o as unknown as Record<string | symbol, unknown>)[k];
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(o) : v;
      },
    });
  };
  const start = async () => {
    const handlers = new Map<string, (...a: never[]) => Promise<void>>();
    const disp = new Dispatcher({ metrics: createNetMetrics(), log: silentLogger() });
    const ports = {
      name: 't',
      clock,
      log: silentLogger(),
      net: {
        handle: async (p: string, h: never) => void handlers.set(p, h),
        subscribe: (k: string, h: never) => disp.subscribe(k as never, h),
        publish: async () => ({ recipients: 1, address: '' }),
        request: async (to: string, _p: string, frames: Frame[]) => request(to, frames),
        drained: () => disp.drained(),
        syncFrom: async () => ({ accepted: 0, failed: {} }),
        fetchRecords: async () => [],
      },
      records: { get: async (a: string) => records.get(a), put: async (r: Opened) => void records.set(r.address, r) },
      market: { decide: async () => ({}), signSelection: () => ({}), adverts: { latest: new Map() } },
      sub: counted,
    } as unknown as StewardPorts;
    const s = await Steward.start(ports, t.dir, { treeFile: join(t.dir, 'tree.yaml'), managed: false, requiredEvidence: 3, preempt: true, capacity: 1 }, stewardIdentity);
    const ask = async (buyer: Party, frame: Record<string, unknown>) => {
      const out: Array<{ t?: string; reclaimed?: string }> = [];
      await handlers.get(STEWARD_PROTOCOL)!(...([[frame], { peer: peerIdFromDid(buyer.did), signal: new AbortController().signal, send: async (f: { t?: string }) => void out.push(f) }] as never[]));
      return out[0];
    };
    const admit = async (j: Opened, buyer: Party, entitlement: string) => (await ask(buyer, { op: 'admit', job: j.bytes, entitlement, estimate: { uj: 10_000_000, grade: 'Estimator' } }))?.t;
    /** The steward's answer to the buyer's `reclaimed` question naming `provider`. */
    const reclaimedFrom = async (j: Opened, provider: Party) => (await ask(lowBuyer, { op: 'reclaimed', job: j.address, provider: provider.did }))?.reclaimed;
    const push = (rec: Opened) => disp.push(rec, { kind: 'selection', from: 'x', source: 'gossip', attachments: [] } as never);
    const settle = async () => {
      await disp.drained();
      for (let i = 0; i < 30; i++) await new Promise((r) => setImmediate(r));
    };
    return { s, admit, reclaimedFrom, push, settle };
  };
  const note = async (claim: string) => (await new ClaimStore(sub(db, 'steward-claims')).load()).get(claim)?.reclaimed;
  const cleanup = async () => {
    await closeDb(db);
    t.cleanup();
  };
  return { records, clock, writes, start, note, cleanup };
}

/** `lo` admitted and selected at provA; `hi` needs the one device: `lo` is preempted (provA bars it) and released. */
async function reclaimLow(rig: Rig, a: Started): Promise<ReturnType<typeof job>> {
  const low = job(lowBuyer, { workload: 'infer.echo', nonce: new Uint8Array([1]) });
  assert.equal(await a.admit(low, lowBuyer, 'lo'), 'admitted');
  const offerA = offer(provA, low, advert(provA));
  rig.records.set(offerA.address, offerA);
  a.push(selectionOf(lowBuyer, low, offerA, provA.did));
  await a.settle();
  assert.equal(await a.admit(job(highBuyer, { workload: 'infer.echo', nonce: new Uint8Array([2]) }), highBuyer, 'hi'), 'admitted');
  return low;
}

/** The low buyer signs a selection failing over to `f` (its offer held by the steward). */
async function failOver(rig: Rig, a: Started, low: ReturnType<typeof job>, f: Party, n = 0): Promise<void> {
  const o = offer(f, low, advert(f));
  rig.records.set(o.address, o);
  a.push(selectionOf(lowBuyer, low, o, f.did, n));
  await a.settle();
}

test('failovers’ providers waiting to be asked to stop when the steward restarts, and the one whose stop was in flight, are asked after the start', async () => {
  const stops: Array<{ to: string; job: string }> = [];
  // the first steward's stops to failovers never answer (until the test ends): the others wait behind the one in flight
  let hang = true;
  let release!: () => void;
  const never = new Promise<void>((ok) => (release = ok));
  const rig = await makeRig(async (to, frames) => {
    if (frames[0]!.op !== 'stop') return [{ running: 'no' }];
    stops.push({ to, job: frames[0]!.job });
    if (hang && to !== provA.did) await never;
    return [{ stopped: 'no', barred: 'yes' }];
  });
  const asked = (p: Party) => stops.filter((x) => x.to === p.did).length;
  let s: Steward | undefined;
  try {
    const a = await rig.start();
    s = a.s;
    const low = await reclaimLow(rig, a);
    assert.deepEqual(stops, [{ to: provA.did, job: low.address }]);

    // the low buyer fails over three times (held offers): one stop goes out and hangs, the other two wait their turn
    for (const f of failovers) await failOver(rig, a, low, f);
    await until(() => stops.length === 2, 'the first failover asked to stop');
    await a.settle();
    const first = failovers.find((f) => asked(f) === 1)!;
    const waiting = failovers.filter((f) => f !== first);
    assert.deepEqual(
      waiting.map((f) => asked(f)),
      [0, 0],
      'the others wait (one stop in flight per buyer)',
    );
    await until(async () => (await rig.note(low.address))?.waiting?.length === 2, 'the waiting providers kept in the reclaimed note');
    const before = (await rig.note(low.address))!;
    assert.deepEqual(new Set(before.waiting), new Set(waiting.map((f) => f.did)));
    // the one in flight: asked (its receipt, and the buyer's question naming it, are the reclaim's), and still to be asked
    assert.ok(before.asked.includes(first.did));
    assert.deepEqual(before.sending, first.did, 'the stop in flight is on disk as not settled');
    assert.equal(await a.reclaimedFrom(low, first), 'priority');

    // the steward restarts (the stop in flight never answered: the provider may never have had it); the next one's stops are answered
    await s.stop();
    s = undefined;
    hang = false;
    const b = await rig.start();
    s = b.s;
    assert.equal(await b.reclaimedFrom(low, first), 'priority', 'the provider whose stop was in flight still counts as asked after the start');
    await until(() => failovers.every((f) => asked(f) === (f === first ? 2 : 1)), 'every failover asked after the restart, the one in flight again');
    await b.settle();
    assert.equal(asked(provA), 1);
    for (const f of failovers) assert.equal(await b.reclaimedFrom(low, f), 'priority');
    await until(async () => {
      const n = await rig.note(low.address);
      return n !== undefined && (n.waiting ?? []).length === 0 && n.sending === undefined && n.asked.length === 4;
    }, 'the note has every provider asked, none waiting, none in flight');

    // a third start asks nobody again: every stop settled
    await s.stop();
    s = undefined;
    const n = stops.length;
    const c = await rig.start();
    s = c.s;
    await c.settle();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(stops.length, n, 'no stop sent again once settled');

    // past the claim's deadline, a start drops the note with what it kept
    await s.stop();
    s = undefined;
    rig.clock.set(low.record.deadline + 1);
    s = (await rig.start()).s;
    assert.equal(await rig.note(low.address), undefined, 'the note went at the deadline');
  } finally {
    release();
    await s?.stop();
    await rig.cleanup();
  }
});

test('a buyer failing over to throwaway providers one after another: the reclaimed note stays bounded, written synced once per failover', async () => {
  let answered = 0;
  const rig = await makeRig(async (_to, frames) => {
    if (frames[0]!.op !== 'stop') return [{ running: 'no' }];
    answered++;
    return [{ stopped: 'no', barred: 'yes' }];
  });
  let s: Steward | undefined;
  try {
    const a = await rig.start();
    s = a.s;
    const low = await reclaimLow(rig, a);
    const n0 = { ...rig.writes };
    const N = MAX_ASKED_PER_CLAIM + 8;
    const throwaways = Array.from({ length: N }, (_, i) => P(1000 + i));
    for (const [i, f] of throwaways.entries()) {
      await failOver(rig, a, low, f, i);
      await until(() => answered >= i + 2, 'the failover asked');
    }
    await a.settle();
    const synced = rig.writes.xSynced - n0.xSynced;
    assert.ok(synced <= N, `at most one synced note write per failover asked at once: ${synced} for ${N}`);
    const n = (await rig.note(low.address))!;
    assert.equal(n.asked.length, MAX_ASKED_PER_CLAIM, 'the providers asked are capped');
    assert.equal(n.asked[0], provA.did, 'the provider the claim was reclaimed from is kept');
    assert.deepEqual(n.asked.slice(1), throwaways.slice(-(MAX_ASKED_PER_CLAIM - 1)).map((f) => f.did), 'then the newest asked');
    // the newest still count as asked (the buyer's question after their refusals); one pushed out is answered `no`
    assert.equal(await a.reclaimedFrom(low, throwaways.at(-1)!), 'priority');
    assert.equal(await a.reclaimedFrom(low, provA), 'priority');
    assert.equal(await a.reclaimedFrom(low, throwaways[0]!), 'no');
  } finally {
    await s?.stop();
    await rig.cleanup();
  }
});

test('a reclaimed note written before the waiting list existed still loads; one with a waiting list (and a stop going out) loads it', async () => {
  const t = tempDir('c0-reclaim-note-');
  const db = await openDb(join(t.dir, 'db'));
  try {
    const s = sub(db, 'steward-claims');
    const utf8 = new TextEncoder();
    await s.batch([
      { type: 'put', key: 'x/old', value: utf8.encode(JSON.stringify({ reason: 'priority', buyer: lowBuyer.did, deadline: NOW + 60_000, asked: [provA.did] })) },
      { type: 'put', key: 'x/new', value: utf8.encode(JSON.stringify({ reason: 'idle', buyer: lowBuyer.did, deadline: NOW + 60_000, asked: [provA.did, failovers[2]!.did], waiting: [failovers[0]!.did, failovers[1]!.did], sending: failovers[2]!.did })) },
      // a waiting list (or a stop going out) that does not read: the note still loads (who was asked, and why), without it
      { type: 'put', key: 'x/bad', value: utf8.encode(JSON.stringify({ reason: 'idle', buyer: lowBuyer.did, deadline: NOW + 60_000, asked: [provA.did], waiting: [7, ''], sending: 5 })) },
    ] as never);
    const loaded = await new ClaimStore(s).load();
    assert.deepEqual(loaded.get('old')?.reclaimed, { reason: 'priority', buyer: lowBuyer.did, deadline: NOW + 60_000, asked: [provA.did] });
    assert.deepEqual(loaded.get('new')?.reclaimed, { reason: 'idle', buyer: lowBuyer.did, deadline: NOW + 60_000, asked: [provA.did, failovers[2]!.did], waiting: [failovers[0]!.did, failovers[1]!.did], sending: failovers[2]!.did });
    assert.deepEqual(loaded.get('bad')?.reclaimed, { reason: 'idle', buyer: lowBuyer.did, deadline: NOW + 60_000, asked: [provA.did] });
  } finally {
    await closeDb(db);
    t.cleanup();
  }
});

test('a reclaimed note with more providers asked than the cap loads the first and the newest', async () => {
  const t = tempDir('c0-reclaim-note-');
  const db = await openDb(join(t.dir, 'db'));
  try {
    const s = sub(db, 'steward-claims');
    const many = Array.from({ length: MAX_ASKED_PER_CLAIM + 5 }, (_, i) => P(2000 + i).did);
    await s.batch([{ type: 'put', key: 'x/big', value: new TextEncoder().encode(JSON.stringify({ reason: 'priority', buyer: lowBuyer.did, deadline: NOW + 60_000, asked: many })) }] as never);
    const loaded = (await new ClaimStore(s).load()).get('big')?.reclaimed;
    assert.deepEqual(loaded?.asked, [many[0], ...many.slice(-(MAX_ASKED_PER_CLAIM - 1))]);
  } finally {
    await closeDb(db);
    t.cleanup();
  }
});
