/**
 * A pool on a stewarded overlay (docs/pools.md "A pool on a stewarded overlay", docs/overlays.md "Only the providers a
 * selection named are charged"): the buyer's selection names the pool member that signed the winning offer (its
 * coordinator), while the pool's receipts name the pool's DID. The steward resolves the winning offer itself
 * (src/roles/steward-winners.ts): its signer runs the job, and when it cites a pool's advert the pool's receipts for
 * that offer, their chain proving a member, are charged. Before, every pooled receipt was held aside: a completed
 * pooled job held its reservation and device until the deadline and was released for {0, Estimator}, and preempting
 * it freed nothing. A selection naming a DID that did not sign its winning offer chooses nobody.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import '../../../src/pools/chain.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type Job, type Offer, type Receipt } from '../../../src/records/kinds.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { treeFromYaml } from '../../../src/pool/index.js';
import { Reclaimer } from '../../../src/roles/steward-reclaim.js';
import type { StewardConfig, StewardPorts } from '../../../src/roles/steward-ports.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub, stubBuyer } from './steward-stub.js';
import { stewardRig } from './steward-rig.js';
import { NOW, P, job, offer } from '../market/fixtures.js';
import { POOL, MEMBERS, keyOf, proof, roster, pooledAdvert } from '../pools/helpers.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;
const r1 = roster();
const [A, B] = [MEMBERS[0]!, MEMBERS[1]!];
const memberA = { did: A, signer: keyOf(A) };
/** Member A, the pool's elected coordinator: its pooled advert. */
const adA = seal(T.advert, pooledAdvert(proof(r1, keyOf(A))), keyOf(A));

/** The pool's receipt for `o`, signed by `by` (a member) with its pool proof. */
function pooledReceipt(j: Opened<Job>, o: Opened<Offer>, by: string, over: Partial<Receipt> = {}): Opened<Receipt> {
  return seal(T.receipt, {
    job: j.address, offer: o.address, buyer: j.signer, provider: POOL, workload: j.record.workload, status: 'completed',
    startedAt: NOW, completedAt: NOW + 500, inputHash: j.record.input.hash, outputHash: 'sha256:' + '22'.repeat(32), outputSize: 3,
    price: o.record.price, energy: { uj: 40_000_000, grade: 'HwShunt' }, pool: proof(r1, keyOf(by)), ...over,
  } as Receipt, keyOf(by));
}

const selectionOf = (j: Opened<Job>, o: Opened<Offer>, named: string) => ({ signer: j.signer, address: 'sha256:' + o.address.slice(-64, -2) + 'ee', record: { job: j.address, policy: 'cheapest', winner: o.address, considered: [{ provider: named, offer: o.address }] } });

async function onStub(prefix: string) {
  const t = tempDir(prefix);
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const db = await openDb(join(t.dir, 'db'));
  const records = new Map<string, Opened<Job>>();
  const st = await stewardOnStub(t.dir, db, records);
  // the steward holds A's pooled advert (offers come to it with the advert they cite)
  records.set(adA.address, adA as never);
  const close = async () => {
    await st.s.stop();
    await closeDb(db);
    t.cleanup();
  };
  return { ...st, records, close };
}

describe('a pool on a stewarded overlay', () => {
  it('the pool’s completed receipt for its coordinator’s winning offer releases the claim charging its energy', async () => {
    const st = await onStub('c0-steward-pooled-');
    try {
      const j = job(stubBuyer, { workload: 'infer.echo', nonce: new Uint8Array([7, 7]) });
      const frames: Array<Record<string, unknown>> = [];
      await st.admit(j, frames, { uj: 30_000_000, grade: 'Estimator' });
      assert.equal(frames[0]!.t, 'admitted');
      const o = offer(memberA, j, adA);
      st.records.set(o.address, o as never);
      await st.hear('selection', selectionOf(j, o, A));
      // a pooled receipt for another offer (one the buyer did not select) is not the pool's work for this job
      const other = offer(memberA, j, adA, { amount: '0.9' });
      await st.hear('receipt', pooledReceipt(j, other, A, { energy: { uj: 999_000_000, grade: 'HwShunt' } }));
      assert.equal((await st.released()).length, 0);
      // the pool's receipt (signed by member B: any member the chain proves) for the winning offer
      await st.hear('receipt', pooledReceipt(j, o, B));
      const rel = await st.released();
      assert.equal(rel.length, 1, 'released on the completed pooled receipt, not at the deadline');
      assert.deepEqual(rel[0]!.actual, { uj: 40_000_000, grade: 'HwShunt' });
      const team = ((await st.s.status()).teams as Array<{ id: string; spent_uj: number; open_claims: number }>).find((x) => x.id === 'ml')!;
      assert.deepEqual([team.spent_uj, team.open_claims], [40_000_000, 0]);
    } finally {
      await st.close();
    }
  });

  it('a pooled receipt heard before the selection is held aside, then charged; the winner survives a restart', async () => {
    const t = tempDir('c0-steward-pooled-restart-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const records = new Map<string, Opened<Job>>();
    records.set(adA.address, adA as never);
    let db = await openDb(join(t.dir, 'db'));
    try {
      let st = await stewardOnStub(t.dir, db, records);
      const j = job(stubBuyer, { workload: 'infer.echo', nonce: new Uint8Array([7, 8]) });
      await st.admit(j, [], { uj: 30_000_000, grade: 'Estimator' });
      const o = offer(memberA, j, adA);
      records.set(o.address, o as never);
      // a failed attempt (5 J) reaches the steward before the selection: held aside
      await st.hear('receipt', pooledReceipt(j, o, A, { status: 'failed', outputHash: undefined, outputSize: undefined, energy: { uj: 5_000_000, grade: 'HwShunt' }, failure: { code: 'POOL_MEMBER_BUSY', message: 'busy' } }));
      await st.hear('selection', selectionOf(j, o, A));
      await st.s.stop();
      await closeDb(db);
      // after a restart, with neither the offer nor the advert held any more, the completed receipt is charged too
      records.delete(o.address);
      records.delete(adA.address);
      db = await openDb(join(t.dir, 'db'));
      st = await stewardOnStub(t.dir, db, records);
      await st.hear('receipt', pooledReceipt(j, o, A));
      const rel = await st.released();
      assert.equal(rel.length, 1);
      assert.deepEqual(rel[0]!.actual, { uj: 45_000_000, grade: 'HwShunt' });
      await st.s.stop();
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });

  it('a selection naming a provider that did not sign its winning offer chooses nobody', async () => {
    const st = await onStub('c0-steward-pooled-named-');
    try {
      const j = job(stubBuyer, { workload: 'infer.echo', nonce: new Uint8Array([7, 9]) });
      await st.admit(j);
      const real = P(21);
      const o = offer(real, j, 'sha256:' + '11'.repeat(32));
      st.records.set(o.address, o as never);
      // the buyer names another DID for the real provider's offer
      const decoy = P(22);
      await st.hear('selection', selectionOf(j, o, decoy.did));
      await st.hear('receipt', seal(T.receipt, { job: j.address, offer: o.address, buyer: stubBuyer.did, provider: decoy.did, workload: 'infer.echo', status: 'completed', startedAt: NOW, completedAt: NOW + 1, inputHash: j.record.input.hash, outputHash: 'sha256:' + '22'.repeat(32), outputSize: 1, price: o.record.price, energy: { uj: 1, grade: 'HwShunt' } } as Receipt, decoy.signer));
      assert.equal((await st.released()).length, 0, 'the decoy’s receipt is not charged');
      // the buyer's honest selection of the same offer: the real provider's receipt is charged
      await st.hear('selection', { ...selectionOf(j, o, real.did), address: 'sha256:' + 'ab'.repeat(32) });
      await st.hear('receipt', seal(T.receipt, { job: j.address, offer: o.address, buyer: stubBuyer.did, provider: real.did, workload: 'infer.echo', status: 'completed', startedAt: NOW, completedAt: NOW + 1, inputHash: j.record.input.hash, outputHash: 'sha256:' + '22'.repeat(32), outputSize: 1, price: o.record.price, energy: { uj: 8_000_000, grade: 'HwShunt' } } as Receipt, real.signer));
      assert.deepEqual((await st.released()).map((e) => e.actual), [{ uj: 8_000_000, grade: 'HwShunt' }]);
    } finally {
      await st.close();
    }
  });

  it('preempting a pooled claim asks its coordinator to stop; the pool’s EXEC_PREEMPTED receipt releases it', async () => {
    const TREE2 = `entitlements:
  - { id: org, guarantee_uj: 2000000000, guarantee_devices: 2, over_quota_weight: 0, priority: 0 }
  - { id: batch, parent: org, guarantee_uj: 600000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
  - { id: urgent, parent: org, guarantee_uj: 600000000, guarantee_devices: 1, over_quota_weight: 0, priority: 5 }
`;
    const t = tempDir('c0-steward-pooled-preempt-');
    const rig = await stewardRig(t.dir, TREE2);
    try {
      const buyer = P(2);
      const lo = job(buyer, { workload: 'infer.echo', nonce: new Uint8Array([1]) });
      const o = offer(memberA, lo, adA);
      rig.offers.set(o.address, o);
      rig.adverts.set(adA.address, adA);
      const asked: Array<{ to: string; op: string }> = [];
      const net = {
        // the coordinator is connected to the steward: its pooled advert counts in the overlay's capacity
        peers: () => [{ did: A }],
        request: async (to: string, _p: string, frames: Array<{ op: string }>) => {
          asked.push({ to, op: frames[0]!.op });
          if (frames[0]!.op !== 'stop') return [{ running: 'yes' }];
          const rec = pooledReceipt(lo, o, A, { status: 'failed', outputHash: undefined, outputSize: undefined, energy: { uj: 5_000_000, grade: 'HwShunt' }, failure: { code: 'EXEC_PREEMPTED', message: 'preempted' } });
          return [{ stopped: 'yes', receipt: rec.bytes }];
        },
      };
      const ports = { ...rig.ports, market: { adverts: { latest: new Map([[A, adA]]) } }, net } as unknown as StewardPorts;
      const reclaim = new Reclaimer({ ports, ledger: rig.ledger, tree: treeFromYaml(TREE2, 't'), pool: rig.pool, cfg: { preempt: true, requiredEvidence: 3 } as StewardConfig, did: 'did:key:steward', accounts: rig.accounts, stopped: () => false });
      // the accounts ask it whom it asked to stop: only that coordinator's EXEC_PREEMPTED is a reclaim
      rig.useReclaimer(reclaim);
      await rig.ledger.append({ event: 'Admitted', claim: lo.address, entitlement: 'batch', reserved: { uj: 10_000_000, grade: 'ModelBased' }, devices: 1, borrowed_uj: 0 });
      rig.accounts.track(lo.address, 'batch', buyer.did, NOW + 3_600_000);
      await rig.accounts.onSelection(selectionOf(lo, o, A) as never);
      const urgent = { id: 'sha256:' + 'bb'.repeat(32), entitlement: 'urgent', gang_size: 1, devices_per_member: 1, estimate: { uj: 10_000_000, grade: 'ModelBased' as const } };
      const d = reclaim.decideNow(urgent);
      assert.deepEqual([d.v.verdict, d.victims], ['Admit', [lo.address]]);
      await reclaim.preempt(d.victims, urgent.id);
      assert.deepEqual(asked, [{ to: A, op: 'stop' }], 'the coordinator that signed the winning offer is asked');
      assert.equal(rig.ledger.book.open.has(lo.address), false, 'the pool’s EXEC_PREEMPTED receipt released the victim');
      const rel = (await rig.ledger.records(0)).filter((e) => e.event === 'Released');
      assert.deepEqual(rel.map((e) => (e as { actual: unknown }).actual), [{ uj: 5_000_000, grade: 'HwShunt' }]);
      const again = reclaim.decideNow(urgent);
      assert.deepEqual([again.v.verdict, again.victims], ['Admit', []]);
    } finally {
      await rig.close();
      t.cleanup();
    }
  });
});
