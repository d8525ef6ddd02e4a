/**
 * The steward's physical capacity (src/roles/steward-reclaim.ts capacity(), docs/overlays.md "Preemption"): the
 * devices of the providers it can vouch for. An advert counts only when its signer is allowed on the overlay (on
 * `network.allowlist` when there is one) and is connected to the steward now, and it adds at most
 * `steward.maxDevicesPerProvider` devices (default 64); `steward.capacity` declares the figure outright. So an advert
 * signed by a key that owns nothing (any member can relay one) cannot inflate capacity and switch preemption off.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pino from 'pino';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type Advert, type Job, type Selection } from '../../../src/records/kinds.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { CONNECTED_GRACE_MS, Reclaimer } from '../../../src/roles/steward-reclaim.js';
import type { StewardConfig, StewardPorts } from '../../../src/roles/steward-ports.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub, until } from './steward-stub.js';
import { stewardRig } from './steward-rig.js';
import { NOW, P, advert, job, offer } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: org, guarantee_uj: 2000000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: batch, parent: org, guarantee_uj: 600000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
  - { id: urgent, parent: org, guarantee_uj: 600000000, guarantee_devices: 2, over_quota_weight: 0, priority: 5 }
`;
const est = { uj: 10_000_000, grade: 'Estimator' };
const [batchBuyer, urgentBuyer, honest, ghost] = [P(2), P(3), P(30), P(31)];
/** The overlay's one real machine: CPU only, one device. */
const machine = () => advert(honest, { hardware: { gpus: undefined, cpuCores: 8, memoryMiB: 16384 } });
/** A key that owns nothing, declaring 1024 A100s. */
const bigClaim = () => advert(ghost, { hardware: { gpus: [{ model: 'A100', vramMiB: 81920, features: [], count: 1024 }], cpuCores: 1, memoryMiB: 1024 } });
const cfgOf = (c: Record<string, unknown>) => c as Partial<StewardConfig>;

describe('the steward’s physical capacity', () => {
  it('an advert from a key not connected to the steward adds nothing: the higher-priority claim still preempts', async () => {
    const t = tempDir('c0-capacity-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const records = new Map<string, Opened<Job>>();
    const db = await openDb(join(t.dir, 'db'));
    const asked: Array<{ to: string; op: string; job: string }> = [];
    const adverts = new Map<string, Opened<Advert>>([
      [honest.did, machine()],
      [ghost.did, bigClaim()],
    ]);
    try {
      const st = await stewardOnStub(t.dir, db, records, {
        cfg: { preempt: true },
        adverts,
        peers: () => [honest.did, batchBuyer.did, urgentBuyer.did],
        // the batch job is not running at the machine yet: it bars it, which frees its device
        request: async (to, _p, frames) => {
          const f = frames[0] as { op: string; job: string };
          asked.push({ to, op: f.op, job: f.job });
          return [f.op === 'stop' ? { stopped: 'no', barred: 'yes' } : { running: 'no' }];
        },
      });
      assert.equal(st.s.capacity(), 1, 'the ghost’s 1024 GPUs are not counted');
      const low = job(batchBuyer, { nonce: new Uint8Array([1]) });
      assert.equal((await st.ask({ op: 'admit', job: low.bytes, entitlement: 'batch', estimate: est }, batchBuyer.did))[0]!.t, 'admitted');
      const o = offer(honest, low, machine());
      records.set(o.address, o as never); // the steward holds the winning offer (it resolves who runs the job from it)
      const sel: Selection = { job: low.address, buyer: batchBuyer.did, policy: 'balanced', winner: o.address, considered: [{ provider: honest.did, offer: o.address }], decidedAt: NOW };
      await st.hear('selection', seal(T.selection, sel, batchBuyer.signer));
      const high = job(urgentBuyer, { nonce: new Uint8Array([2]) });
      const [a] = await st.ask({ op: 'admit', job: high.bytes, entitlement: 'urgent', estimate: est }, urgentBuyer.did);
      assert.equal(a!.t, 'admitted');
      assert.deepEqual(asked.filter((x) => x.op === 'stop').map((x) => [x.to, x.job]), [[honest.did, low.address]], 'the batch job was preempted for the urgent claim');
      await until(async () => (await st.released()).length === 1, 'the victim released');
      await st.s.stop();
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });

  it('counts only allowed, connected providers, each capped by steward.maxDevicesPerProvider; steward.capacity overrides; each left out or capped is logged once', async () => {
    const t = tempDir('c0-capacity-rules-');
    const r = await stewardRig(t.dir, TREE);
    try {
      const lines: Array<Record<string, unknown>> = [];
      const log = pino({ level: 'debug' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
      let connected = [honest.did];
      const latest = new Map<string, Opened<Advert>>([
        [honest.did, machine()],
        [ghost.did, bigClaim()],
      ]);
      const capacity = (cfg: Record<string, unknown>) => {
        const ports = { ...r.ports, log, net: { peers: () => connected.map((did) => ({ peerId: '', did, addrs: [] })) }, market: { adverts: { latest } } } as unknown as StewardPorts;
        return new Reclaimer({ ports, ledger: r.ledger, tree: r.pool.tree, pool: r.pool, cfg: cfgOf({ preempt: true, ...cfg }) as StewardConfig, did: 'did:key:steward', accounts: r.accounts, stopped: () => false }).capacity();
      };
      assert.equal(capacity({}), 1, 'not connected: left out');
      connected = [honest.did, ghost.did];
      assert.equal(capacity({}), 1 + 64, 'connected: capped at the default 64');
      assert.equal(capacity({ maxDevicesPerProvider: 8 }), 1 + 8);
      assert.equal(capacity({ allowlist: [honest.did] }), 1, 'off the overlay’s allowlist: left out');
      assert.equal(capacity({ allowlist: [honest.did, ghost.did], maxDevicesPerProvider: 2048 }), 1025);
      assert.equal(capacity({ capacity: 3 }), 3, 'declared: adverts are not counted');
      connected = [];
      assert.equal(capacity({ capacity: 3 }), 3);

      const r1 = new Reclaimer({ ports: { ...r.ports, log, net: { peers: () => [{ peerId: '', did: ghost.did, addrs: [] }] }, market: { adverts: { latest } } } as unknown as StewardPorts, ledger: r.ledger, tree: r.pool.tree, pool: r.pool, cfg: cfgOf({ preempt: true }) as StewardConfig, did: 'did:key:steward', accounts: r.accounts, stopped: () => false });
      lines.length = 0;
      for (let i = 0; i < 5; i++) r1.capacity();
      const about = (did: string) => lines.filter((l) => l.provider === did);
      assert.equal(about(ghost.did).length, 1, `the capped advert is logged once: ${JSON.stringify(lines)}`);
      assert.equal(about(honest.did).length, 1, 'the advert left out is logged once');
    } finally {
      await r.close();
      t.cleanup();
    }
  });

  it('the steward’s own provider (roles [steward, provider]) counts, connected to nobody, capped like any other', async () => {
    const t = tempDir('c0-capacity-own-');
    const r = await stewardRig(t.dir, TREE);
    try {
      const me = P(32);
      const latest = new Map<string, Opened<Advert>>([[me.did, advert(me, { hardware: { gpus: undefined, cpuCores: 8, memoryMiB: 16384 } })]]);
      const capacity = (connected: string[], cfg: Record<string, unknown> = {}, roles = ['steward', 'provider']) => {
        const ports = { ...r.ports, roles, log: pino({ level: 'silent' }), net: { peers: () => connected.map((did) => ({ peerId: '', did, addrs: [] })) }, market: { adverts: { latest } } } as unknown as StewardPorts;
        return new Reclaimer({ ports, ledger: r.ledger, tree: r.pool.tree, pool: r.pool, cfg: cfgOf({ preempt: true, ...cfg }) as StewardConfig, did: me.did, accounts: r.accounts, stopped: () => false }).capacity();
      };
      assert.equal(capacity([]), 1, 'its own machine: one slot, though a node is never connected to itself');
      // restarted with roles [steward] alone: its advert from the run before, not expired yet, stands for nothing running
      assert.equal(capacity([], {}, ['steward']), 0, 'its own advert is not counted once it runs no provider');
      latest.set(honest.did, machine());
      assert.equal(capacity([honest.did]), 2, 'its own machine and the connected provider');
      latest.set(me.did, advert(me, { hardware: { gpus: [{ model: 'A100', vramMiB: 81920, features: [], count: 100 }], cpuCores: 8, memoryMiB: 16384 } }));
      assert.equal(capacity([honest.did], { maxDevicesPerProvider: 4 }), 4 + 1, 'capped by steward.maxDevicesPerProvider like any advert');
    } finally {
      await r.close();
      t.cleanup();
    }
  });

  it('a pool member counts its own devices, from its roster entry, not the pool’s hardware its advert declares (review s55)', async () => {
    const { proof, pooledAdvert, roster, keyOf, MEMBERS } = await import('../pools/helpers.js');
    const t = tempDir('c0-capacity-pool-');
    const r = await stewardRig(t.dir, TREE);
    try {
      // the roster's members have no GPU; their adverts declare the pool's 8
      const ros = roster();
      const pooled = (key: ReturnType<typeof keyOf>) => seal(T.advert, pooledAdvert(proof(ros, key), { gpus: [{ model: 'A100', vramMiB: 81920, features: [], count: 8 }], cpuCores: 12, memoryMiB: 24576 } as never), key) as Opened<Advert>;
      const [m1, m2] = [keyOf(MEMBERS[0]!), keyOf(MEMBERS[1]!)];
      const latest = new Map<string, Opened<Advert>>([
        [MEMBERS[0]!, pooled(m1)],
        [MEMBERS[1]!, pooled(m2)],
      ]);
      const ports = { ...r.ports, log: pino({ level: 'silent' }), net: { peers: () => [MEMBERS[0]!, MEMBERS[1]!].map((did) => ({ peerId: '', did, addrs: [] })) }, market: { adverts: { latest } } } as unknown as StewardPorts;
      const cap = new Reclaimer({ ports, ledger: r.ledger, tree: r.pool.tree, pool: r.pool, cfg: cfgOf({ preempt: true }) as StewardConfig, did: P(33).did, accounts: r.accounts, stopped: () => false }).capacity();
      assert.equal(cap, 2, 'two machines of one slot each, not 16 GPUs');
    } finally {
      await r.close();
      t.cleanup();
    }
  });

  it('a provider seen connected still counts for CONNECTED_GRACE_MS after its connection drops (a redial, a steward with more members than connections)', async () => {
    const t = tempDir('c0-capacity-grace-');
    const r = await stewardRig(t.dir, TREE);
    try {
      let now = NOW;
      let connected = [honest.did];
      const latest = new Map<string, Opened<Advert>>([[honest.did, machine()]]); // lives an hour
      const ports = { ...r.ports, clock: () => now, monoClock: () => now, log: pino({ level: 'silent' }), net: { peers: () => connected.map((did) => ({ peerId: '', did, addrs: [] })) }, market: { adverts: { latest } } } as unknown as StewardPorts;
      const rc = new Reclaimer({ ports, ledger: r.ledger, tree: r.pool.tree, pool: r.pool, cfg: cfgOf({ preempt: true }) as StewardConfig, did: 'did:key:steward', accounts: r.accounts, stopped: () => false });
      assert.equal(rc.capacity(), 1);
      connected = [];
      now += CONNECTED_GRACE_MS - 1;
      assert.equal(rc.capacity(), 1, 'dropped a moment ago: still counted');
      now += 2;
      assert.equal(rc.capacity(), 0, 'past the grace: left out');
      connected = [honest.did];
      rc.noteConnected(); // an advert arrived: who is connected is sampled
      connected = [];
      assert.equal(rc.capacity(), 1, 'seen connected again');
    } finally {
      await r.close();
      t.cleanup();
    }
  });

  it('the grace is measured on the monotonic clock: a wall clock stepped back or forward neither keeps a gone provider counted nor drops one seen a moment ago', async () => {
    const t = tempDir('c0-capacity-grace-mono-');
    const r = await stewardRig(t.dir, TREE);
    try {
      let now = NOW;
      let mono = 5_000;
      let connected = [honest.did];
      const latest = new Map<string, Opened<Advert>>([[honest.did, machine()]]); // lives an hour
      const ports = { ...r.ports, clock: () => now, monoClock: () => mono, log: pino({ level: 'silent' }), net: { peers: () => connected.map((did) => ({ peerId: '', did, addrs: [] })) }, market: { adverts: { latest } } } as unknown as StewardPorts;
      const rc = new Reclaimer({ ports, ledger: r.ledger, tree: r.pool.tree, pool: r.pool, cfg: cfgOf({ preempt: true }) as StewardConfig, did: 'did:key:steward', accounts: r.accounts, stopped: () => false });
      assert.equal(rc.capacity(), 1);
      connected = [];
      // NTP steps the wall clock forward 20 minutes; only a second has passed
      now += 20 * 60_000;
      mono += 1_000;
      assert.equal(rc.capacity(), 1, 'dropped a second ago: still counted, whatever the wall clock says');
      // the wall clock is stepped back an hour (the advert still lives); the grace has passed meanwhile
      now -= 60 * 60_000;
      mono += CONNECTED_GRACE_MS;
      assert.equal(rc.capacity(), 0, 'past the grace on the monotonic clock: left out, though the wall clock went back');
    } finally {
      await r.close();
      t.cleanup();
    }
  });
});
