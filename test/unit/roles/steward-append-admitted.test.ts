/**
 * Admitting with preemption (src/roles/steward-reclaim.ts appendAdmitted, pool/1 §4.4, §4.6, §5.2; docs/overlays.md
 * "decide, preempt if needed, decide again, append"): a claim decided `Admit` with victims is decided again after the
 * running claims are sampled and once more after the preemption, and an `Admitted` entry is appended only when that
 * last decision admits with no device still held (its figures, not the first decision's). A fresh verdict that is not
 * `Admit` is answered as it is; a preemption that freed nothing leaves the claim queued `DEVICES_HELD`, for a job in
 * line (fresh, or decided again in a pass) and for a gang. Fakes for the unit half; a real Ledger and LevelDB with the
 * admission line for the rest, the overlay's capacity one device.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import type { CborValue } from '../../../src/records/cbor.js';
import type { Claim, PoolState, Verdict } from '../../../src/pool/admission.js';
import { AdmissionLine } from '../../../src/roles/steward-admission.js';
import { appendAdmitted, type Decided, type Reclaimer } from '../../../src/roles/steward-reclaim.js';
import type { Ledger } from '../../../src/ledger/index.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { NOW, P, job } from '../market/fixtures.js';

const E = (uj: number) => ({ uj, grade: 'HwShunt' as const });
const claim: Claim = { id: 'c', entitlement: 'a', gang_size: 1, devices_per_member: 1, estimate: E(10) };
const admit = (borrowed: number): Verdict => ({ verdict: 'Admit', claim: 'c', entitlement: 'a', reserved: E(10), devices: 1, borrowed_uj: borrowed });
const queue: Verdict = { verdict: 'Queue', claim: 'c', entitlement: 'a', reason: 'SURPLUS_INSUFFICIENT', reasons: ['SURPLUS_INSUFFICIENT'], estimate: E(10), devices: 1 };

/** A reclaimer whose decisions are the test's, in turn; it records what was asked. */
function fakes(decisions: Decided[]) {
  const log: string[] = [];
  const reclaim = {
    sampleRunning: async () => void log.push('sample'),
    decideNow: () => {
      log.push('decide');
      return decisions.shift()!;
    },
    preempt: async (victims: string[]) => void log.push(`preempt ${victims.join(',')}`),
  } as unknown as Reclaimer;
  const appended: Array<Record<string, unknown>> = [];
  const append = (async (ev: Record<string, unknown>) => {
    appended.push(ev);
    log.push('append');
    return { seq: 7, address: 'x', bytes: new Uint8Array() };
  }) as unknown as Ledger['append'];
  return { d: { reclaim, append }, log, appended };
}

describe('appendAdmitted decides again before it appends', () => {
  it('a fresh decision that does not admit is answered as it is: no preemption, nothing appended', async () => {
    const f = fakes([{ v: queue, victims: [] }]);
    const o = await appendAdmitted(f.d, claim, { v: admit(5), victims: ['victim1'] });
    assert.ok('v' in o);
    assert.equal(o.v.verdict, 'Queue');
    assert.deepEqual(f.log, ['sample', 'decide']);
  });

  it('a preemption that freed nothing: the claim is queued DEVICES_HELD, nothing appended', async () => {
    const f = fakes([
      { v: admit(5), victims: ['victim1'] },
      { v: admit(5), victims: ['victim1'] },
    ]);
    const o = await appendAdmitted(f.d, claim, { v: admit(5), victims: ['victim1'] });
    assert.ok('v' in o);
    assert.deepEqual([o.v.verdict, o.v.reason], ['Queue', 'DEVICES_HELD']);
    assert.deepEqual(f.log, ['sample', 'decide', 'preempt victim1', 'decide']);
    assert.deepEqual(f.appended, []);
  });

  it('the decision after the preemption is the one appended, with its own borrowed figure', async () => {
    const f = fakes([
      { v: admit(5), victims: ['victim1'] },
      { v: admit(2), victims: [] },
    ]);
    const o = await appendAdmitted(f.d, claim, { v: admit(9), victims: ['victim1'] });
    assert.ok('admit' in o);
    assert.equal(o.admit.borrowed_uj, 2);
    assert.deepEqual(f.log, ['sample', 'decide', 'preempt victim1', 'decide', 'append']);
    assert.equal(f.appended[0]!.borrowed_uj, 2);
  });

  it('a decision after the preemption that no longer admits is answered as it is', async () => {
    const f = fakes([
      { v: admit(5), victims: ['victim1'] },
      { v: queue, victims: [] },
    ]);
    const o = await appendAdmitted(f.d, claim, { v: admit(5), victims: ['victim1'] });
    assert.ok('v' in o);
    assert.equal(o.v.reason, 'SURPLUS_INSUFFICIENT');
    assert.deepEqual(f.appended, []);
  });
});

// `hi` outranks `lo`; the overlay has one device.
const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: hi, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 2 }
  - { id: lo, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 0 }
`;
const CAPACITY = 1;
const buyer = P(1);
const est = { uj: 10_000_000, grade: 'Estimator' as const };
const jobN = (n: number) => job(buyer, { nonce: new Uint8Array([n, 43]) });
const admitReq = (j: ReturnType<typeof job>, entitlement: string) => ({ op: 'admit' as const, job: j.bytes, entitlement, estimate: est });

async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1000 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), `timed out waiting for ${what}`);
}

/** The steward's admission over a real ledger, with a one-device overlay whose victims never stop (their providers do not answer). */
async function stewardAt(dir: string) {
  const preempted: string[] = [];
  const ref: { line?: AdmissionLine } = {};
  const reclaimOver = (pool: PoolState) => ({
    decideNow: (c: Claim): Decided => {
      const v = pool.decide(c);
      if (v.verdict !== 'Admit') return { v, victims: [] };
      const open = [...pool.book.open.values()];
      const over = open.reduce((s, o) => s + o.devices, 0) + v.devices - CAPACITY;
      if (over <= 0) return { v, victims: [] };
      const victims = open.filter((o) => o.entitlement === 'lo' && c.entitlement === 'hi').map((o) => o.claim);
      if (victims.length) return { v, victims };
      return { v: { verdict: 'Queue', claim: c.id, entitlement: c.entitlement, reason: 'DEVICES_HELD', reasons: ['DEVICES_HELD'], estimate: c.estimate, devices: v.devices }, victims: [] };
    },
    preempt: async (victims: string[]) => void preempted.push(...victims),
  });
  const r = await stewardRig(dir, TREE, { reclaimOver, line: () => ref.line!.serve() });
  const line = (ref.line = new AdmissionLine({ ports: r.ports, ledger: r.ledger, cfg: r.cfg, accounts: r.accounts, reclaim: r.reclaim, tree: r.tree, stopped: () => false, append: r.append, serial: r.serial, gangs: r.gangs }));
  const stream = () => {
    const frames: Array<Record<string, unknown>> = [];
    return { frames, ctx: { peer: peerIdFromDid(buyer.did), signal: new AbortController().signal, send: async (f: CborValue) => void frames.push(f as Record<string, unknown>) } };
  };
  const admitted = async () => (await r.ledger.records(0)).filter((e) => e.event === 'Admitted').map((e) => e.claim);
  const close = async () => {
    line.stop();
    await r.close();
  };
  return { ...r, line, stream, admitted, preempted, close };
}

describe('a preemption that freed nothing admits nothing', () => {
  it('a fresh job: queued DEVICES_HELD, not admitted over the device; admitted once the victim is released', async () => {
    const t = tempDir('c0-append-admitted-');
    try {
      const s = await stewardAt(t.dir);
      const [a, b] = [s.stream(), s.stream()];
      const [low, high] = [jobN(1), jobN(2)];
      await s.line.admit(admitReq(low, 'lo'), a.ctx);
      const waitHigh = s.line.admit(admitReq(high, 'hi'), b.ctx);
      await until(() => b.frames.length > 0, 'the high-priority job answered');
      assert.deepEqual([b.frames[0]!.t, b.frames[0]!.reason], ['queued', 'DEVICES_HELD']);
      assert.deepEqual(s.preempted, [low.address]);
      assert.deepEqual(await s.admitted(), [low.address], 'nothing admitted over the held device');
      // A pass over the line while the victim still runs: preempted once more, still in line, the pass ends.
      await s.line.retry();
      await s.serial.run(() => {});
      assert.deepEqual(s.preempted, [low.address, low.address]);
      assert.equal(b.frames.length, 1);
      assert.deepEqual(s.line.queued(NOW).map((q) => [q.claim, q.reason]), [[high.address, 'DEVICES_HELD']]);
      // The victim's claim ends: the next pass admits the waiting job.
      await s.accounts.release(s.accounts.get(low.address)!, 'test');
      await s.line.retry();
      await until(() => b.frames.length > 1, 'the high-priority job admitted');
      assert.equal(b.frames[1]!.t, 'admitted');
      assert.deepEqual(await s.admitted(), [low.address, high.address]);
      await waitHigh;
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('a gang: told queued then expired, its record dropped, nothing appended', async () => {
    const t = tempDir('c0-append-admitted-');
    try {
      const s = await stewardAt(t.dir);
      const [a, g] = [s.stream(), s.stream()];
      const low = jobN(3);
      await s.line.admit(admitReq(low, 'lo'), a.ctx);
      const runYaml = stringify({ name: 'g', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: [P(11)].map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) });
      const run = buildRun(runYaml, buyer.signer, NOW).bundle.run;
      await s.gangs.admitGang({ op: 'admit-gang', run: run.bytes, entitlement: 'hi', estimate: est, devices_per_member: 1, deadline: NOW + 4_000_000 }, g.ctx);
      assert.deepEqual(g.frames.map((f) => [f.t, f.reason]), [
        ['queued', 'DEVICES_HELD'],
        ['expired', 'DEVICES_HELD'],
      ]);
      assert.deepEqual(s.preempted, [low.address]);
      assert.deepEqual(await s.admitted(), [low.address]);
      assert.equal(s.gangs.get(run.address), undefined);
      assert.deepEqual((await s.gangs.store.load()).gangs, []);
      await s.close();
    } finally {
      t.cleanup();
    }
  });
});
