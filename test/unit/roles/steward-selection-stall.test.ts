/**
 * A selection whose winning offer the steward does not hold is resolved in the background
 * (src/roles/steward-accounts.ts onSelection): the node hands gossip to its handlers one record at a time
 * (src/net/dispatch.ts), so a records/1 fetch inside the selection handler, from the buyer or from a DID the buyer
 * wrote, held every record behind it for up to the protocol's deadline per party: one hostile buyer with an admitted
 * claim froze the steward's receipts, adverts and other teams' selections (second-round review of cdbaf6c).
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
import { Dispatcher } from '../../../src/net/dispatch.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardIdentity, stubBuyer } from './steward-stub.js';
import { NOW, P, job, offer } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000, guarantee_devices: 4, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 50000000, guarantee_devices: 2, over_quota_weight: 0, priority: 1 }
`;

test('a selection whose winning offer must be fetched does not hold the steward’s other records behind it', async () => {
  const t = tempDir('c0-stew-stall-');
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const db = await openDb(join(t.dir, 'db'));
  const records = new Map<string, Opened>();
  const handlers = new Map<string, (...a: never[]) => Promise<void>>();
  const disp = new Dispatcher({ metrics: createNetMetrics(), log: silentLogger() });
  // records/1 from a party that never answers (until the test lets it): the hostile selection's offer
  let answer!: () => void;
  const hung = new Promise<void>((ok) => (answer = ok));
  const fetchedFrom: string[] = [];
  let stallOn = '';
  const ports = {
    name: 't',
    clock: fakeClock(NOW),
    log: silentLogger(),
    net: {
      handle: async (p: string, h: never) => void handlers.set(p, h),
      subscribe: (k: string, h: never) => disp.subscribe(k as never, h),
      publish: async () => ({ recipients: 1, address: '' }),
      request: async () => [],
      drained: () => disp.drained(),
      fetchRecords: async (from: string, addrs: string[]) => {
        fetchedFrom.push(from);
        if (addrs[0] === stallOn) await hung;
        return [];
      },
    },
    records: { get: async (a: string) => records.get(a), put: async (r: Opened) => void records.set(r.address, r) },
    market: { decide: async () => ({}), signSelection: () => ({}), adverts: { latest: new Map() } },
    sub: (n: string) => sub(db, n),
  } as unknown as StewardPorts;
  const s = await Steward.start(ports, t.dir, { treeFile: join(t.dir, 'tree.yaml'), managed: false, requiredEvidence: 3, preempt: false }, stewardIdentity);
  const admit = async (j: Opened) => {
    const out: Array<{ t?: string }> = [];
    await handlers.get(STEWARD_PROTOCOL)!(...([[{ op: 'admit', job: j.bytes, entitlement: 'ml', estimate: { uj: 10_000_000, grade: 'Estimator' } }], { peer: peerIdFromDid(stubBuyer.did), signal: new AbortController().signal, send: async (f: { t?: string }) => void out.push(f) }] as never[]));
    return out[0]?.t;
  };
  const meta = (kind: string) => ({ kind, from: 'x', source: 'gossip', attachments: [] }) as never;
  const released = async (claim: string) => (await s.ledger.records(0)).filter((e) => e.event === 'Released' && e.claim === claim);
  try {
    // a claim whose selection names an offer nobody here holds, "signed" by a DID that never answers
    const hj = job(stubBuyer, { workload: 'infer.echo', nonce: new Uint8Array([9, 9]) });
    assert.equal(await admit(hj), 'admitted');
    const unheld = offer(P(40), hj, 'sha256:' + '33'.repeat(32));
    stallOn = unheld.address;
    const hostile = seal(T.selection, { job: hj.address, buyer: stubBuyer.did, decidedAt: NOW, policy: 'cheapest', winner: unheld.address, considered: [{ provider: P(41).did, offer: unheld.address }] }, stubBuyer.signer);
    // an honest claim of the same team: its offer held here, its provider's completed receipt
    const j = job(stubBuyer, { workload: 'infer.echo', nonce: new Uint8Array([1, 2]) });
    assert.equal(await admit(j), 'admitted');
    const prov = P(21);
    const o = offer(prov, j, 'sha256:' + '11'.repeat(32));
    records.set(o.address, o);
    const sel = seal(T.selection, { job: j.address, buyer: stubBuyer.did, decidedAt: NOW, policy: 'cheapest', winner: o.address, considered: [{ provider: prov.did, offer: o.address }] }, stubBuyer.signer);
    const rec = seal(T.receipt, { job: j.address, offer: o.address, buyer: stubBuyer.did, provider: prov.did, workload: 'infer.echo', status: 'completed', startedAt: NOW, completedAt: NOW + 1, inputHash: j.record.input.hash, outputHash: 'sha256:' + '22'.repeat(32), outputSize: 1, price: o.record.price, energy: { uj: 8_000_000, grade: 'HwShunt' } }, prov.signer);
    disp.push(hostile, meta('selection'));
    disp.push(sel, meta('selection'));
    disp.push(rec, meta('receipt'));
    // the records behind the hostile selection are handled while its fetch still hangs
    await disp.drained();
    const r = await released(j.address);
    assert.equal(r.length, 1, 'the honest claim is released while the hostile selection’s fetch hangs');
    assert.deepEqual((r[0] as { actual?: unknown }).actual, { uj: 8_000_000, grade: 'HwShunt' });
    assert.ok(fetchedFrom.length >= 1, 'the unheld offer is fetched, in the background');
    assert.equal((await released(hj.address)).length, 0);
  } finally {
    answer();
    await s.stop();
    await closeDb(db);
    t.cleanup();
  }
});
