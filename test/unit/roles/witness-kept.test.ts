/**
 * The witness role taken off an overlay while the node holds what it kept (src/roles/witness.ts WitnessConfig.mode
 * `kept`; docs/node.md "Changing roles"; QA witness pass, finding 5): status() and evidenceOf() read the store as the
 * role's did (`role: "off"`), the evidence is gossiped again as before (not on a display node), and nothing is heard,
 * fetched or cosigned. Before, the evidence was refused ROLE_NOT_ENABLED and its gossip stopped with the role.
 * Real LevelDB and signatures; the network is a fake.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Ed25519Signer, didFromPublicKey } from '../../../src/records/index.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { sealEntries } from '../../../src/ledger/index.js';
import { Witness } from '../../../src/ledger/witness.js';
import { holdsWitnessState, type WitnessConfig, type WitnessPorts, type WitnessRole } from '../../../src/roles/witness.js';
import { admitted } from '../ledger/helpers.js';
import { until, withWitness, type Db } from './witness-rig.js';

interface Net {
  subscribed: string[];
  requests: number;
  published: string[];
}

async function rig(fn: (r: { net: Net; db: Db; me: Ed25519Signer; start: (cfg: WitnessConfig) => Promise<WitnessRole> }) => Promise<void>): Promise<void> {
  const net: Net = { subscribed: [], requests: 0, published: [] };
  const ports: WitnessPorts = {
    name: 'labs',
    clock: fakeClock(1_000),
    log: silentLogger(),
    net: {
      subscribe: ((kind: string) => void net.subscribed.push(kind)) as never,
      publish: (async (kind: string) => (net.published.push(kind), { recipients: 1 })) as never,
      request: (async () => (net.requests++, [])) as never,
    },
  };
  await withWitness('c0-witness-kept-', ports, ({ db, me, start }) => fn({ net, db, me, start }));
}

/** Evidence about a steward kept in `db` by the witness `me` (two entries it signed at one seq). */
async function keepEvidence(db: Db, me: Ed25519Signer): Promise<string> {
  const s = Ed25519Signer.generate();
  const steward = didFromPublicKey(s.publicKey);
  const [a] = sealEntries([admitted('a')], s);
  const [b] = sealEntries([admitted('b')], s);
  const kept = await new Witness(db, me, { now: fakeClock(), stewards: [steward] }).keep(steward, a!.bytes, b!.bytes);
  assert.ok(kept, 'kept');
  return steward;
}

describe('a witness role taken off, with evidence kept', () => {
  it('the store says it holds witness state; an empty one does not', async () => {
    await rig(async ({ db, me }) => {
      assert.equal(await holdsWitnessState(db, me), undefined);
      const steward = await keepEvidence(db, me);
      const held = await holdsWitnessState(db, me);
      assert.deepEqual(held && [held.heads, [...held.evidence]], [0, [[steward, 1]]]);
    });
  });

  it('hands the evidence out and lists it (role off), gossips it again, and hears, fetches and cosigns nothing', async () => {
    await rig(async ({ net, db, me, start }) => {
      const steward = await keepEvidence(db, me);
      const role = await start({ mode: 'kept', stewards: [steward], startCatchUpMs: [0], evidenceGossipMs: [10, 60_000] });
      assert.equal((await role.evidenceOf(steward)).evidence.length, 1);
      const st = await role.status();
      assert.equal(st.role, 'off');
      assert.equal((st.stewards as Record<string, { evidence: number }>)[steward]?.evidence, 1);
      await until(() => net.published.includes('pool-evidence'), 'the evidence gossiped again');
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(net.subscribed, [], 'no head heard');
      assert.equal(net.requests, 0, 'no catch-up, no check of a held steward');
    });
  });

  it('on a display node (gossip none) nothing is published', async () => {
    await rig(async ({ net, db, me, start }) => {
      const steward = await keepEvidence(db, me);
      const role = await start({ mode: 'kept', gossip: 'none', evidenceGossipMs: [0, 10] });
      await new Promise((r) => setTimeout(r, 60));
      assert.deepEqual(net.published, []);
      assert.equal((await role.evidenceOf(steward)).evidence.length, 1);
    });
  });
});
