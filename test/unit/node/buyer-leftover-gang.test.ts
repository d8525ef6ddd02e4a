/**
 * A buyer killed mid-training (kill -9, a crash) and restarted: its member jobs' runs died with it, and the gang's
 * claim (`POST /v1/gang/admit`) held its team's reservation and devices at the steward until the gang's deadline (up
 * to 24 h), since the start's sweep withdrew each member job's address as if it were a claim, which the steward
 * answers `no`. Now the start withdraws the gang's claim once, with the receipts the node holds for its members
 * (src/roles/admission-client.ts leftoverClaims). The buyer's side is the real BuyerWiring; the steward's the real
 * gang machinery and `withdraw` handler over a real ledger and LevelDB (test/unit/roles/steward-rig.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { Registry } from 'prom-client';
import type { CborValue } from '../../../src/records/cbor.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Receipt } from '../../../src/records/kinds.js';
import { citeParams } from '../../../src/roles/gang-cite.js';
import { withdraw } from '../../../src/roles/steward-handlers.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { BuyerWiring } from '../../../src/node/buyer-wiring.js';
import type { OverlayNode } from '../../../src/node/overlay.js';
import { silentLogger } from '../../../src/util/log.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardRig } from '../roles/steward-rig.js';
import { NOW, P, acceptance, byDid, job, offer, receipt, type Party } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 3, over_quota_weight: 1, priority: 2 }
`;

const buyer = P(1);
const members = byDid([P(11), P(12), P(13)]);

const later = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  for (const t0 = Date.now(); !(await cond()); await later(20)) if (Date.now() - t0 > ms) assert.fail(`gave up waiting for ${what}`);
}

test("a buyer's restart withdraws its gang's claim once, with its members' receipts: the steward releases it summing them", async () => {
  const t = tempDir('c0-gang-leftover-');
  try {
    const s = await stewardRig(t.dir, TREE);
    const yaml = stringify({ name: 'g', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 2, epochs: 1, members: members.map((m) => ({ did: m.did, addr: '/ip4/127.0.0.1/tcp/1' })) });
    const run = buildRun(yaml, buyer.signer, NOW).bundle.run;
    const ctx = (who: Party) => ({ peer: peerIdFromDid(who.did), signal: new AbortController().signal, send: async () => {} });
    // the gang admitted as one claim, each member job bound to it (as POST /v1/gang/admit, then POST /v1/run per member)
    await s.gangs.admitGang({ op: 'admit-gang', run: run.bytes, entitlement: 'ml', estimate: { uj: 30_000_000, grade: 'Estimator' }, devices_per_member: 1, deadline: NOW + 4_000_000 }, ctx(buyer));
    const jobs = members.map((m, i) => job(buyer, { workload: 'train.member', params: citeParams({ claim: run.address, member: i }), nonce: new Uint8Array([i]), requirements: { allowlist: [m.did] } }));
    for (const [i, j] of jobs.entries()) await s.gangs.admitMember(j, 'ml', { claim: run.address, member: i }, ctx(buyer));
    assert.equal(s.ledger.length, 1);

    const memberReceipt = (i: number, uj: number, status: 'completed' | 'failed') =>
      receipt(members[i]!, buyer, offer(members[i]!, jobs[i]!, 'sha256:' + '33'.repeat(32)), { workload: 'train.member', status, energy: { uj, grade: status === 'completed' ? 'HwShunt' : 'ModelBased' } });
    // The buyer was killed mid-training: member 2 had completed (its receipt gossiped to the steward, and accepted);
    // member 0's provider ended its run EXEC_BUYER_GONE, a receipt the buyer holds but gossip never brought the steward;
    // member 1's receipt never came.
    const done2 = memberReceipt(2, 5_000_001, 'completed');
    await s.accounts.onReceipt(done2);
    const gone0 = memberReceipt(0, 123_456_789, 'failed');
    assert.equal(s.ledger.length, 1, 'the gang is still open: its claim holds the reservation and 3 devices');
    const held: Array<Opened<Receipt>> = [gone0, done2];
    const evidence = { receiptsOf: (j: string) => held.filter((r) => r.record.job === j), acceptancesOf: (r: string) => (r === done2.address ? [acceptance(buyer, done2, 'accepted')] : []) };

    // The restart: the node's live jobs are the gang's members; its network reaches the steward's withdraw handler.
    const asked: string[] = [];
    const overlay = {
      d: { config: { buyer: { collectWindowMs: 1000, enoughOffers: 0, policy: 'cheapest', offersWanted: 8, inviteAbove: 200 }, network: {}, overlays: [] }, identity: { signer: buyer.signer }, network: { steward: 'did:key:steward' } },
      did: buyer.did,
      name: 'lab',
      clock: () => NOW,
      log: silentLogger(),
      registry: new Registry(),
      market: { earlierJobs: jobs, evidence },
      records: { advertOf: () => undefined, get: async () => undefined },
      net: {
        request: async (_to: string, _protocol: string, frames: CborValue[]) => {
          const req = frames[0] as Record<string, unknown>;
          asked.push(String(req.job));
          const sent: CborValue[] = [];
          await withdraw(s.accounts, req, { peer: peerIdFromDid(buyer.did), send: async (f) => void sent.push(f) });
          return sent;
        },
      },
    } as unknown as OverlayNode;
    const wiring = new BuyerWiring(overlay);
    wiring.createBuyer();
    wiring.netStarted();
    try {
      await until('the gang released', () => s.ledger.length >= 2);
      await later(100);
    } finally {
      await wiring.stop();
    }
    // one withdraw, of the gang's claim; released with the sum of the receipt handed over and the one gossiped
    assert.deepEqual(asked, [run.address]);
    const rel = (await s.ledger.records(1))[0]!;
    assert.deepEqual([rel.event, rel.claim, rel.actual], ['Released', run.address, { uj: 128_456_790, grade: 'ModelBased' }]);
    assert.equal(s.accounts.get(run.address), undefined);
    await s.close();
  } finally {
    t.cleanup();
  }
});
