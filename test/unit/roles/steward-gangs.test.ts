/**
 * A training gang as ONE pool/1 claim on the steward (src/roles/steward-gangs.ts
 * with src/roles/steward-accounts.ts; docs/training.md "A gang on a stewarded
 * overlay"): admitted or denied as a whole, member jobs bound once each by
 * their citation, released once with the exact sum of every member's receipt,
 * and the job → claim binding and receipts kept across a restart. A real
 * Ledger and LevelDB in a temp dir; the overlay's ports are stubs.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { C0Error } from '../../../src/errors.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { PoolState } from '../../../src/pool/index.js';
import { citeParams } from '../../../src/roles/gang-cite.js';
import type { Reclaimer } from '../../../src/roles/steward-reclaim.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from './steward-rig.js';
import { NOW, P, byDid, job, offer, receipt, type Party } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 3, over_quota_weight: 1, priority: 2 }
  - { id: small, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 1, priority: 1 }
`;

const buyer = P(1);
// in DID order, as the run lists them: members[i] is the run's member i (the only key whose receipt for job i is charged)
const members = byDid([P(11), P(12), P(13)]);

function runOf(by: Party, dids: string[], name = 'g') {
  const yaml = stringify({ name, model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: dids.map((did) => ({ did, addr: '/ip4/127.0.0.1/tcp/1' })) });
  return buildRun(yaml, by.signer, NOW).bundle.run;
}

async function rejects(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof C0Error && e.code === code);
}

/** A steward's gang machinery over a real ledger and store (reopened by calling again with the same dir). */
async function stewardAt(dir: string, reclaimOver?: (pool: PoolState) => Partial<Reclaimer>) {
  const { clock, ledger, accounts, gangs, close } = await stewardRig(dir, TREE, reclaimOver ? { reclaimOver } : {});
  const frames: Array<Record<string, unknown>> = [];
  const ctx = (who: Party) => ({ peer: peerIdFromDid(who.did), signal: new AbortController().signal, send: async (f: CborValue) => void frames.push(f as Record<string, unknown>) });
  return { clock, ledger, accounts, gangs, frames, ctx, close };
}

const gangReq = (run: ReturnType<typeof runOf>, entitlement: string, uj = 30_000_000) => ({ op: 'admit-gang' as const, run: run.bytes, entitlement, estimate: { uj, grade: 'Estimator' as const }, devices_per_member: 1, deadline: NOW + 4_000_000 });
const memberJob = (claim: string, member: number, params = citeParams({ claim, member })) => job(buyer, { workload: 'train.member', params, nonce: new Uint8Array([member, 7]) });
const memberReceipt = (p: Party, j: ReturnType<typeof job>, uj: number, status: 'completed' | 'failed' = 'completed') => receipt(p, buyer, offer(p, j, 'sha256:' + '33'.repeat(32)), { workload: 'train.member', status, energy: { uj, grade: status === 'completed' ? 'HwShunt' : 'ModelBased' } });

describe('a training gang as one pool/1 claim (steward)', () => {
  it('admits the gang as one claim, binds each member once, refuses an extra member, and releases once with the exact sum', async () => {
    const t = tempDir('c0-gang-');
    try {
      const s = await stewardAt(t.dir);
      const run = runOf(buyer, members.map((m) => m.did));
      await s.gangs.admitGang(gangReq(run, 'ml'), s.ctx(buyer));
      assert.equal(s.frames.at(-1)!.t, 'admitted');
      assert.equal(s.ledger.length, 1);
      const adm = (await s.ledger.records(0))[0]!;
      assert.deepEqual([adm.event, adm.claim, adm.devices, adm.reserved?.uj], ['Admitted', run.address, 3, 30_000_000]);
      // Only the run's signer may ask.
      await rejects(s.gangs.admitGang(gangReq(run, 'ml'), s.ctx(P(2))), 'STEWARD_NOT_BUYER');

      const jobs = [0, 1, 2].map((i) => memberJob(run.address, i));
      for (const [i, j] of jobs.entries()) await s.gangs.admitMember(j, 'ml', { claim: run.address, member: i }, s.ctx(buyer));
      assert.deepEqual(s.frames.slice(-3).map((f) => [f.t, f.member]), [['admitted', 0], ['admitted', 1], ['admitted', 2]]);
      // A member's selection names no provider for the gang: it is never a preemption or idle victim.
      s.accounts.onSelection({ signer: buyer.did, record: { job: jobs[0]!.address, winner: 'o1', considered: [{ provider: members[0]!.did, offer: 'o1' }] } } as never);
      assert.equal(s.accounts.providerOf(run.address), undefined);
      // The same job asked again: the same answer, nothing new bound.
      await s.gangs.admitMember(jobs[1]!, 'ml', { claim: run.address, member: 1 }, s.ctx(buyer));
      // An (N+1)-th member, and a second job for a bound member: STEWARD_GANG_FULL.
      await rejects(s.gangs.admitMember(memberJob(run.address, 3), 'ml', { claim: run.address, member: 3 }, s.ctx(buyer)), 'STEWARD_GANG_FULL');
      const again = job(buyer, { workload: 'train.member', params: citeParams({ claim: run.address, member: 1 }), nonce: new Uint8Array([9]) });
      await rejects(s.gangs.admitMember(again, 'ml', { claim: run.address, member: 1 }, s.ctx(buyer)), 'STEWARD_GANG_FULL');
      // The job's signed params must cite what the request says; the entitlement must be the gang's; the claim must exist.
      await rejects(s.gangs.admitMember(memberJob(run.address, 2), 'ml', { claim: run.address, member: 1 }, s.ctx(buyer)), 'STEWARD_GANG_CITE');
      await rejects(s.gangs.admitMember(memberJob(run.address, 0), 'small', { claim: run.address, member: 0 }, s.ctx(buyer)), 'STEWARD_CLAIM_MISMATCH');
      await rejects(s.gangs.admitMember(memberJob('sha256:' + '44'.repeat(32), 0), 'ml', { claim: 'sha256:' + '44'.repeat(32), member: 0 }, s.ctx(buyer)), 'STEWARD_GANG_UNKNOWN');
      assert.equal(s.ledger.length, 1);

      // Two members' receipts: still open. The third (failed) ends the gang: one Released with the exact sum, the worst grade.
      const uj = [123_456_789, 987_654_321, 5_000_001];
      await s.accounts.onReceipt(memberReceipt(members[0]!, jobs[0]!, uj[0]!));
      await s.accounts.onReceipt(memberReceipt(members[1]!, jobs[1]!, uj[1]!));
      assert.equal(s.ledger.length, 1);
      await s.accounts.onReceipt(memberReceipt(members[2]!, jobs[2]!, uj[2]!, 'failed'));
      assert.equal(s.ledger.length, 2);
      const rel = (await s.ledger.records(1))[0]!;
      assert.deepEqual([rel.event, rel.claim, rel.actual], ['Released', run.address, { uj: 1_116_111_111, grade: 'ModelBased' }]);
      // Released once: a late receipt or the buyer's withdraw changes nothing; a member asking now is told it was released.
      await s.accounts.onReceipt(memberReceipt(members[0]!, jobs[0]!, 1));
      assert.equal(s.accounts.get(run.address), undefined);
      assert.equal(s.ledger.length, 2);
      await rejects(s.gangs.admitMember(jobs[0]!, 'ml', { claim: run.address, member: 0 }, s.ctx(buyer)), 'STEWARD_ALREADY_RELEASED');
      await rejects(s.gangs.admitGang(gangReq(run, 'ml'), s.ctx(buyer)), 'STEWARD_ALREADY_RELEASED');
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('denies a gang past the entitlement’s devices as a whole, recording and storing nothing', async () => {
    const t = tempDir('c0-gang-');
    try {
      const s = await stewardAt(t.dir);
      const run = runOf(buyer, members.map((m) => m.did));
      await s.gangs.admitGang(gangReq(run, 'small'), s.ctx(buyer));
      assert.deepEqual([s.frames.at(-1)!.t, s.frames.at(-1)!.reason], ['denied', 'DEVICES_EXCEED_GUARANTEE']);
      assert.equal(s.ledger.length, 0);
      assert.equal(s.gangs.get(run.address), undefined);
      await rejects(s.gangs.admitMember(memberJob(run.address, 0), 'small', { claim: run.address, member: 0 }, s.ctx(buyer)), 'STEWARD_GANG_UNKNOWN');
      // A gang past the energy guarantee with a guess cannot borrow (§4.4): not admitted, nothing recorded.
      await s.gangs.admitGang(gangReq(runOf(buyer, members.map((m) => m.did), 'g2'), 'ml', 80_000_000), s.ctx(buyer));
      assert.notEqual(s.frames.at(-1)!.t, 'admitted');
      assert.equal(s.ledger.length, 0);
      // A deadline past the bound is refused.
      await rejects(s.gangs.admitGang({ ...gangReq(run, 'ml'), deadline: NOW + 25 * 3600_000 }, s.ctx(buyer)), 'STEWARD_BAD_REQUEST');
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('preempts the victims the §5.2 order names before appending the gang’s one Admitted entry', async () => {
    const t = tempDir('c0-gang-');
    try {
      const calls: string[] = [];
      // the victim holds the devices until it is preempted (its stop frees them)
      let stopped = false;
      const s = await stewardAt(t.dir, (pool) => ({
        decideNow: ((c: never) => {
          calls.push('decide');
          return { v: pool.decide(c), victims: stopped ? [] : ['sha256:' + '55'.repeat(32)] };
        }) as never,
        sampleRunning: async () => void calls.push('sample'),
        preempt: (async (victims: string[], forClaim: string) => {
          calls.push(`preempt ${victims.length} for ${forClaim}`);
          stopped = true;
        }) as never,
      }));
      const run = runOf(buyer, members.map((m) => m.did));
      await s.gangs.admitGang(gangReq(run, 'ml'), s.ctx(buyer));
      // decided once more after the preemption, and appended on that decision
      assert.deepEqual(calls, ['decide', 'sample', 'decide', `preempt 1 for ${run.address}`, 'decide']);
      assert.equal(s.frames.at(-1)!.t, 'admitted');
      assert.equal(s.ledger.length, 1);
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('keeps the job → claim binding and the receipts seen across a restart: the release still sums every member', async () => {
    const t = tempDir('c0-gang-');
    try {
      let s = await stewardAt(t.dir);
      const run = runOf(buyer, members.map((m) => m.did));
      await s.gangs.admitGang(gangReq(run, 'ml'), s.ctx(buyer));
      const jobs = [0, 1, 2].map((i) => memberJob(run.address, i));
      for (const [i, j] of jobs.entries()) await s.gangs.admitMember(j, 'ml', { claim: run.address, member: i }, s.ctx(buyer));
      await s.accounts.onReceipt(memberReceipt(members[0]!, jobs[0]!, 1_000_003));
      await s.close();

      s = await stewardAt(t.dir);
      assert.deepEqual([...(await s.gangs.restore())], [run.address]);
      assert.equal(s.gangs.claimOf(jobs[2]!.address), run.address);
      assert.equal(s.accounts.get(run.address)?.receipts.size, 1);
      // The bindings survived: the member slots are still taken.
      await rejects(s.gangs.admitMember(memberJob(run.address, 3), 'ml', { claim: run.address, member: 3 }, s.ctx(buyer)), 'STEWARD_GANG_FULL');
      await s.accounts.onReceipt(memberReceipt(members[1]!, jobs[1]!, 2_000_005));
      await s.accounts.onReceipt(memberReceipt(members[2]!, jobs[2]!, 3_000_007));
      const rel = (await s.ledger.records(1))[0]!;
      assert.deepEqual([rel.event, rel.claim, rel.actual?.uj], ['Released', run.address, 6_000_015]);
      await s.close();

      // After the release the store holds nothing of the gang.
      s = await stewardAt(t.dir);
      assert.equal((await s.gangs.restore()).size, 0);
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('releases a gang whose buyer withdraws it (a member never reported), with the receipts the buyer hands over', async () => {
    const t = tempDir('c0-gang-');
    try {
      const s = await stewardAt(t.dir);
      const run = runOf(buyer, members.map((m) => m.did));
      await s.gangs.admitGang(gangReq(run, 'ml'), s.ctx(buyer));
      const jobs = [0, 1].map((i) => memberJob(run.address, i));
      for (const [i, j] of jobs.entries()) await s.gangs.admitMember(j, 'ml', { claim: run.address, member: i }, s.ctx(buyer));
      const { withdraw } = await import('../../../src/roles/steward-handlers.js');
      const sent: unknown[] = [];
      await withdraw(s.accounts, { job: run.address, receipts: [memberReceipt(members[0]!, jobs[0]!, 40).bytes, memberReceipt(members[1]!, jobs[1]!, 2, 'failed').bytes] }, { peer: peerIdFromDid(buyer.did), send: async (f) => void sent.push(f) });
      assert.deepEqual(sent, [{ t: 'withdrawn', released: 'yes' }]);
      const rel = (await s.ledger.records(1))[0]!;
      assert.deepEqual([rel.event, rel.actual], ['Released', { uj: 42, grade: 'ModelBased' }]);
      await s.close();
    } finally {
      t.cleanup();
    }
  });

  it('refuses a member job asking more GPUs than the gang’s devices per member (STEWARD_GANG_DEVICES), also after a restart', async () => {
    const t = tempDir('c0-gang-');
    try {
      let s = await stewardAt(t.dir);
      const run = runOf(buyer, members.map((m) => m.did));
      // admitted for 1 device per member: 3 devices held
      await s.gangs.admitGang(gangReq(run, 'ml'), s.ctx(buyer));
      assert.equal((await s.ledger.records(0))[0]!.devices, 3);
      const gpus = (i: number, count: number) => job(buyer, { workload: 'train.member', params: citeParams({ claim: run.address, member: i }), nonce: new Uint8Array([i, count]), requirements: { gpu: { count, vramMiB: 1024, features: [] } } });
      await rejects(s.gangs.admitMember(gpus(0, 8), 'ml', { claim: run.address, member: 0 }, s.ctx(buyer)), 'STEWARD_GANG_DEVICES');
      assert.equal(s.gangs.get(run.address)!.members[0], undefined, 'nothing bound');
      // one GPU, or none (one machine slot), fits
      await s.gangs.admitMember(gpus(0, 1), 'ml', { claim: run.address, member: 0 }, s.ctx(buyer));
      await s.gangs.admitMember(memberJob(run.address, 1), 'ml', { claim: run.address, member: 1 }, s.ctx(buyer));
      assert.deepEqual(s.frames.slice(-2).map((f) => [f.t, f.member]), [['admitted', 0], ['admitted', 1]]);
      await s.close();

      s = await stewardAt(t.dir);
      await s.gangs.restore();
      await rejects(s.gangs.admitMember(gpus(2, 2), 'ml', { claim: run.address, member: 2 }, s.ctx(buyer)), 'STEWARD_GANG_DEVICES');
      // a record without the figure (an earlier version's) is bounded by the Admitted devices over the gang's size
      assert.equal(s.gangs.devicesPerMember({ ...s.gangs.get(run.address)!, dpm: undefined } as never, { devices: 3 }), 1);
      await s.close();
    } finally {
      t.cleanup();
    }
  });
});
