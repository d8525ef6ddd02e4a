/**
 * The steward's proof of admission (docs/overlays.md "Providers run only admitted work"; pool/1 §1.1, §2.1): an
 * `admitted` answer carries the claim's signed `Admitted` ledger entry (`admission`), which a provider checks before it
 * runs the job (src/roles/provider/admission-proof.ts), and `admission` {job} gives it to a provider whose buyer sent
 * none — across a restart too, and not once the claim is released. A gang member job's proof comes from `admission`
 * only: the steward answers with the gang's entry for a job it bound to the open gang, and for no other job citing it.
 * The whole Steward over a real Ledger and LevelDB in a temp dir; the overlay's network is a stub.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job, Selection } from '../../../src/records/kinds.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { checkAdmission } from '../../../src/roles/provider/admission-proof.js';
import { citeParams } from '../../../src/roles/gang-cite.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { stringify } from 'yaml';
import { tempDir } from '../ledger/helpers.js';
import { stewardIdentity, stewardOnStub, stubBuyer } from './steward-stub.js';
import { NOW, P, byDid, job, offer, receipt } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;
const buyer = stubBuyer;
const provider = P(21);
const stewardDid = stewardIdentity.did;

const same = (a: unknown, b: unknown) => a instanceof Uint8Array && b instanceof Uint8Array && Buffer.from(a).equals(Buffer.from(b));

describe('the steward’s proof of admission', () => {
  it('an admitted answer carries the Admitted entry; `admission` gives it to a provider, after a restart too, and not once released', async () => {
    const t = tempDir('c0-admission-proof-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const records = new Map<string, Opened<Job>>();
    let db = await openDb(join(t.dir, 'db'));
    try {
      let st = await stewardOnStub(t.dir, db, records);
      const j = job(buyer, { nonce: new Uint8Array([7, 1]) });
      const [first] = await st.admit(j);
      assert.equal(first!.t, 'admitted');
      assert.ok(first!.admission instanceof Uint8Array, 'the answer carries the entry');
      checkAdmission(j, first!.admission as Uint8Array, stewardDid);
      // asked again (the first answer lost): the same proof
      const [again] = await st.admit(j);
      assert.ok(same(again!.admission, first!.admission));
      // a provider whose buyer sent no proof asks the steward (any key may: ledger entries are public)
      const [given] = await st.ask({ op: 'admission', job: j.address }, provider.did);
      assert.equal(given!.t, 'admission');
      assert.ok(same(given!.entry, first!.admission));
      await assert.rejects(st.ask({ op: 'admission', job: job(buyer, { nonce: new Uint8Array([7, 2]) }).address }, provider.did), (e: Error & { code?: string }) => e.code === 'STEWARD_NOT_ADMITTED');
      await st.s.stop();
      await closeDb(db);

      db = await openDb(join(t.dir, 'db'));
      st = await stewardOnStub(t.dir, db, records);
      // the open claim's entry is read back from the ledger at the start
      assert.ok(same((await st.ask({ op: 'admission', job: j.address }, provider.did))[0]!.entry, first!.admission));
      // released: no proof any more
      const o = offer(provider, j, 'sha256:' + '31'.repeat(32));
      records.set(o.address, o as never);
      const sel = { signer: buyer.did, record: { job: j.address, winner: o.address, considered: [{ provider: provider.did, offer: o.address }] } } as unknown as Opened<Selection>;
      await st.hear('selection', sel);
      await st.hear('receipt', receipt(provider, buyer, o, { energy: { uj: 4_000_000, grade: 'HwShunt' } }));
      assert.equal((await st.s.ledger.records(0)).filter((e) => e.event === 'Released').length, 1);
      await assert.rejects(st.ask({ op: 'admission', job: j.address }, provider.did), (e: Error & { code?: string }) => e.code === 'STEWARD_NOT_ADMITTED');
      await st.s.stop();
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });

  it('a gang member job: `admission` answers the gang’s entry only for a job the steward bound to the open gang; the buyer’s copy of it admits nothing', async () => {
    const t = tempDir('c0-admission-proof-gang-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const records = new Map<string, Opened<Job>>();
    const db = await openDb(join(t.dir, 'db'));
    try {
      const st = await stewardOnStub(t.dir, db, records);
      const members = byDid([P(31), P(32)]);
      const run = buildRun(stringify({ name: 'g', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: members.map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) }), buyer.signer, NOW).bundle.run;
      const [g] = await st.ask({ op: 'admit-gang', run: run.bytes, entitlement: 'ml', estimate: { uj: 20_000_000, grade: 'Estimator' }, devices_per_member: 1, deadline: NOW + 4_000_000 });
      assert.equal(g!.t, 'admitted');
      const gangEntry = g!.admission as Uint8Array;
      const member = (i: number, n: number) => job(buyer, { workload: 'train.member', params: citeParams({ claim: run.address, member: i }), nonce: new Uint8Array([i, n]) });
      const bound = member(0, 1);
      const [m] = await st.ask({ op: 'admit', job: bound.bytes, entitlement: 'ml', gang: { claim: run.address, member: 0 } });
      assert.equal(m!.t, 'admitted');
      assert.ok(same(m!.admission, gangEntry), 'the member’s answer carries the gang’s entry');
      // the buyer's copy in the exec header does not admit a member job (its params could cite any claim)
      assert.throws(() => checkAdmission(bound, gangEntry, stewardDid), (e: Error & { code?: string }) => e.code === 'EXEC_NOT_ADMITTED');
      // the steward's answer for the job it bound does
      const [given] = await st.ask({ op: 'admission', job: bound.address }, provider.did);
      assert.ok(same(given!.entry, gangEntry));
      checkAdmission(bound, given!.entry as Uint8Array, stewardDid, 'steward');
      // a job citing the open gang that the steward never bound: no answer
      await assert.rejects(st.ask({ op: 'admission', job: member(1, 2).address }, provider.did), (e: Error & { code?: string }) => e.code === 'STEWARD_NOT_ADMITTED');
      // the gang withdrawn (released): no answer for its bound member either
      await st.ask({ op: 'withdraw', job: run.address });
      assert.equal((await st.released()).length, 1);
      await assert.rejects(st.ask({ op: 'admission', job: bound.address }, provider.did), (e: Error & { code?: string }) => e.code === 'STEWARD_NOT_ADMITTED');
      await st.s.stop();
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });
});
