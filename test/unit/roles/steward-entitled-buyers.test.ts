/**
 * Who may claim under an entitlement (docs/overlays.md "Who may claim under an entitlement", docs/pool.md): a tree
 * entry's `buyers` lists the DIDs allowed to claim under it, inherited by the entries below it that list none. The
 * steward refuses an `admit`, an `admit-gang` or a managed `select` by any other key STEWARD_NOT_ENTITLED, naming the
 * entitlement and the DID: nothing queued, nothing appended. An entitlement with no list on its path stays open to
 * every overlay member, as before. The whole Steward over a real Ledger and LevelDB; the overlay is a stub.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job } from '../../../src/records/kinds.js';
import { openDb, closeDb } from '../../../src/store/db.js';
import { treeFromYaml } from '../../../src/pool/yaml.js';
import { buyersOf, openEntitlements } from '../../../src/pool/tree.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardOnStub } from './steward-stub.js';
import { NOW, P, job } from '../market/fixtures.js';

const [alice, bob, mallory] = [P(1), P(2), P(9)];
const tree = (teamA: string) => `entitlements:
  - { id: acme, guarantee_uj: 2000000000, guarantee_devices: 8, over_quota_weight: 0, priority: 0 }
  - { id: team-a, parent: acme, guarantee_uj: 600000000, guarantee_devices: 2, over_quota_weight: 0, priority: 2${teamA} }
  - { id: team-a-nightly, parent: team-a, guarantee_uj: 100000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
  - { id: team-b, parent: acme, guarantee_uj: 300000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1, buyers: [${bob.did}] }
  - { id: scratch, parent: acme, guarantee_uj: 100000000, guarantee_devices: 1, over_quota_weight: 0, priority: 0 }
`;
const TREE = tree(`, buyers: [${alice.did}]`);
const est = { uj: 10_000_000, grade: 'Estimator' };
type Coded = Error & { code?: string; detail?: Record<string, unknown> };
const notEntitled = (entitlement: string, did: string) => (e: Coded) => {
  assert.equal(e.code, 'STEWARD_NOT_ENTITLED', e.message);
  assert.match(e.message, new RegExp(entitlement));
  assert.ok(e.message.includes(did), `names the DID: ${e.message}`);
  return true;
};

describe('who may claim under an entitlement', () => {
  it('the tree lists each entitlement’s buyers, inherited by the entries below; no list on the path: open', () => {
    const t = treeFromYaml(TREE, 'tree.yaml');
    assert.deepEqual([...(buyersOf(t, 'team-a') ?? [])], [alice.did]);
    assert.deepEqual([...(buyersOf(t, 'team-a-nightly') ?? [])], [alice.did], 'inherited from team-a');
    assert.deepEqual([...(buyersOf(t, 'team-b') ?? [])], [bob.did]);
    assert.equal(buyersOf(t, 'scratch'), undefined);
    assert.deepEqual(openEntitlements(t), ['acme', 'scratch']);
    // an empty list closes an entitlement (and those below it that list none) to every key
    assert.equal(buyersOf(treeFromYaml(tree(', buyers: []')), 'team-a-nightly')?.size, 0);
  });

  it('a malformed DID in a list is refused at load, naming the field', () => {
    for (const bad of ['alice', 'did:key:zNotAKey', 42]) {
      assert.throws(
        () => treeFromYaml(tree(`, buyers: [${alice.did}, ${JSON.stringify(bad)}]`), 'tree.yaml'),
        (e: Coded & { field?: string }) => e.code === 'POOL_TREE_BAD_DID' && e.field === 'entitlements[1].buyers[1]',
      );
    }
    assert.throws(() => treeFromYaml(tree(`, buyers: ${alice.did}`)), (e: Coded) => e.code === 'POOL_TREE_INVALID');
  });

  it('admit and admit-gang by a key not listed are refused STEWARD_NOT_ENTITLED: nothing queued, nothing appended', async () => {
    const t = tempDir('c0-entitled-');
    writeFileSync(join(t.dir, 'tree.yaml'), TREE);
    const records = new Map<string, Opened<Job>>();
    const db = await openDb(join(t.dir, 'db'));
    try {
      const st = await stewardOnStub(t.dir, db, records);
      const admit = (who: typeof alice, entitlement: string, n: number) => st.ask({ op: 'admit', job: job(who, { nonce: new Uint8Array([n]) }).bytes, entitlement, estimate: est }, who.did);
      await assert.rejects(admit(mallory, 'team-a', 1), notEntitled('team-a', mallory.did));
      await assert.rejects(admit(bob, 'team-a', 2), notEntitled('team-a', bob.did));
      await assert.rejects(admit(mallory, 'team-a-nightly', 3), notEntitled('team-a-nightly', mallory.did));
      const run = buildRun(stringify({ name: 'g', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: [P(30), P(31)].map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) }), mallory.signer, NOW).bundle.run;
      await assert.rejects(st.ask({ op: 'admit-gang', run: run.bytes, entitlement: 'team-a', estimate: est, devices_per_member: 1, deadline: NOW + 600_000 }, mallory.did), notEntitled('team-a', mallory.did));
      assert.equal(st.s.ledger.head().length, 0, 'nothing appended');
      assert.deepEqual((await st.s.status()).queued, [], 'nothing queued');
      assert.equal(records.size, 0, 'the refused jobs are not even stored');

      assert.equal((await admit(alice, 'team-a', 4))[0]!.t, 'admitted');
      assert.equal((await admit(alice, 'team-a-nightly', 5))[0]!.t, 'admitted', 'the list is inherited');
      assert.equal((await admit(bob, 'team-b', 6))[0]!.t, 'admitted');
      assert.equal((await admit(mallory, 'scratch', 7))[0]!.t, 'admitted', 'no list on the path: open to every member');
      await st.s.stop();
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });

  it('a managed select for a claim whose entitlement no longer lists its buyer (the tree changed) is refused', async () => {
    const t = tempDir('c0-entitled-select-');
    writeFileSync(join(t.dir, 'tree.yaml'), tree(''));
    const records = new Map<string, Opened<Job>>();
    let db = await openDb(join(t.dir, 'db'));
    try {
      let st = await stewardOnStub(t.dir, db, records, { cfg: { managed: true } });
      const j = job(alice, { nonce: new Uint8Array([1]) });
      assert.equal((await st.ask({ op: 'admit', job: j.bytes, entitlement: 'team-a', estimate: est }, alice.did))[0]!.t, 'admitted');
      await st.s.stop();
      await closeDb(db);
      writeFileSync(join(t.dir, 'tree.yaml'), tree(`, buyers: [${bob.did}]`));
      db = await openDb(join(t.dir, 'db'));
      st = await stewardOnStub(t.dir, db, records, { cfg: { managed: true } });
      await assert.rejects(st.ask({ op: 'select', job: j.address }, alice.did), notEntitled('team-a', alice.did));
      await st.s.stop();
    } finally {
      await closeDb(db);
      t.cleanup();
    }
  });
});
