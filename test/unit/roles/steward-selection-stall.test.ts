/**
 * A selection whose winning offer the steward does not hold is resolved in the background
 * (src/roles/steward-accounts.ts onSelection): the node hands gossip to its handlers one record at a time
 * (src/net/dispatch.ts), so a records/1 fetch inside the selection handler, from the buyer or from a DID the buyer
 * wrote, held every record behind it for up to the protocol's deadline per party: one hostile buyer with an admitted
 * claim froze the steward's receipts, adverts and other teams' selections (second-round review of cdbaf6c). The
 * background fetches are bounded, one per claim and per buyer, so one buyer's unanswerable selections cannot hold the
 * slots another buyer's claim needs (third-round review of 6929ecd).
 */
import type { Party } from '../market/fixtures.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDb, closeDb, sub } from '../../../src/store/db.js';
import { seal, type Opened } from '../../../src/records/envelope.js';
import { T, type Job, type Offer } from '../../../src/records/kinds.js';
import { Steward, STEWARD_PROTOCOL } from '../../../src/roles/steward.js';
import type { StewardPorts } from '../../../src/roles/steward-ports.js';
import { Dispatcher } from '../../../src/net/dispatch.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardIdentity, stubBuyer, until } from './steward-stub.js';
import { NOW, P, job, offer } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 200000000, guarantee_devices: 16, over_quota_weight: 0, priority: 0 }
  - { id: ml, parent: lab, guarantee_uj: 100000000, guarantee_devices: 8, over_quota_weight: 0, priority: 1 }
`;

type Fetch = (from: string, addrs: string[]) => Promise<Opened[]>;

/** A steward whose gossip goes through the node's Dispatcher (one record at a time), and records/1 is `fetch`. */
async function stewardWith(fetch: Fetch) {
  const t = tempDir('c0-stew-stall-');
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const db = await openDb(join(t.dir, 'db'));
  const records = new Map<string, Opened>();
  const handlers = new Map<string, (...a: never[]) => Promise<void>>();
  const disp = new Dispatcher({ metrics: createNetMetrics(), log: silentLogger() });
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
      fetchRecords: fetch,
    },
    records: { get: async (a: string) => records.get(a), put: async (r: Opened) => void records.set(r.address, r) },
    market: { decide: async () => ({}), signSelection: () => ({}), adverts: { latest: new Map() } },
    sub: (n: string) => sub(db, n),
  } as unknown as StewardPorts;
  const s = await Steward.start(ports, t.dir, { treeFile: join(t.dir, 'tree.yaml'), managed: false, requiredEvidence: 3, preempt: false }, stewardIdentity);
  const admit = async (j: Opened, buyer: Party) => {
    const out: Array<{ t?: string }> = [];
    await handlers.get(STEWARD_PROTOCOL)!(...([[{ op: 'admit', job: j.bytes, entitlement: 'ml', estimate: { uj: 10_000_000, grade: 'Estimator' } }], { peer: peerIdFromDid(buyer.did), signal: new AbortController().signal, send: async (f: { t?: string }) => void out.push(f) }] as never[]));
    return out[0]?.t;
  };
  const push = (rec: Opened, kind: string) => disp.push(rec, { kind, from: 'x', source: 'gossip', attachments: [] } as never);
  const released = async (claim: string) => (await s.ledger.records(0)).filter((e) => e.event === 'Released' && e.claim === claim);
  const close = async () => {
    await s.stop();
    await closeDb(db);
    t.cleanup();
  };
  return { s, records, admit, push, drained: () => disp.drained(), released, close };
}

/** A selection by `buyer` of `o` for `j`, naming `named` as the offer's provider. */
const selectionOf = (buyer: Party, j: Opened, o: Opened, named: string) =>
  seal(T.selection, { job: j.address, buyer: buyer.did, decidedAt: NOW, policy: 'cheapest', winner: o.address, considered: [{ provider: named, offer: o.address }] }, buyer.signer);

/** `prov`'s completed receipt for `o` (an offer for `j`, bought by `buyer`). */
const receiptOf = (buyer: Party, prov: Party, j: Opened<Job>, o: Opened<Offer>) =>
  seal(T.receipt, { job: j.address, offer: o.address, buyer: buyer.did, provider: prov.did, workload: 'infer.echo', status: 'completed', startedAt: NOW, completedAt: NOW + 1, inputHash: j.record.input.hash, outputHash: 'sha256:' + '22'.repeat(32), outputSize: 1, price: o.record.price, energy: { uj: 8_000_000, grade: 'HwShunt' } }, prov.signer);

test('a selection whose winning offer must be fetched does not hold the steward’s other records behind it', async () => {
  // records/1 from a party that never answers (until the test lets it): the hostile selection's offer
  let answer!: () => void;
  const hung = new Promise<void>((ok) => (answer = ok));
  const fetchedFrom: string[] = [];
  let stallOn = '';
  const st = await stewardWith(async (from, addrs) => {
    fetchedFrom.push(from);
    if (addrs[0] === stallOn) await hung;
    return [];
  });
  try {
    // a claim whose selection names an offer nobody here holds, "signed" by a DID that never answers
    const hj = job(stubBuyer, { workload: 'infer.echo', nonce: new Uint8Array([9, 9]) });
    assert.equal(await st.admit(hj, stubBuyer), 'admitted');
    const unheld = offer(P(40), hj, 'sha256:' + '33'.repeat(32));
    stallOn = unheld.address;
    // an honest claim of the same team: its offer held here, its provider's completed receipt
    const j = job(stubBuyer, { workload: 'infer.echo', nonce: new Uint8Array([1, 2]) });
    assert.equal(await st.admit(j, stubBuyer), 'admitted');
    const prov = P(21);
    const o = offer(prov, j, 'sha256:' + '11'.repeat(32));
    st.records.set(o.address, o);
    st.push(selectionOf(stubBuyer, hj, unheld, P(41).did), 'selection');
    st.push(selectionOf(stubBuyer, j, o, prov.did), 'selection');
    st.push(receiptOf(stubBuyer, prov, j, o), 'receipt');
    // the records behind the hostile selection are handled while its fetch still hangs
    await st.drained();
    const r = await st.released(j.address);
    assert.equal(r.length, 1, 'the honest claim is released while the hostile selection’s fetch hangs');
    assert.deepEqual((r[0] as { actual?: unknown }).actual, { uj: 8_000_000, grade: 'HwShunt' });
    assert.ok(fetchedFrom.length >= 1, 'the unheld offer is fetched, in the background');
    assert.equal((await st.released(hj.address)).length, 0);
  } finally {
    answer();
    await st.close();
  }
});

test('one buyer’s unanswerable selections hold one background fetch, not the ones another buyer’s claim needs', async () => {
  let answer!: () => void;
  const hung = new Promise<void>((ok) => (answer = ok));
  const served = new Map<string, Opened>(); // offers a party serves at once
  const unanswered = new Set<string>(); // offers whose parties never answer; anything else is answered "not held"
  const st = await stewardWith(async (_from, addrs) => {
    const r = served.get(addrs[0]!);
    if (r) return [r];
    if (unanswered.has(addrs[0]!)) await hung;
    return [];
  });
  const [mallory, alice, prov] = [P(60), P(61), P(62)];
  try {
    // mallory: more claims than there are background slots, each selection naming an offer nobody serves
    for (let i = 0; i < 6; i++) {
      const hj = job(mallory, { workload: 'infer.echo', nonce: new Uint8Array([9, i]) });
      assert.equal(await st.admit(hj, mallory), 'admitted');
      const o = offer(P(70 + i), hj, 'sha256:' + '33'.repeat(32));
      unanswered.add(o.address);
      st.push(selectionOf(mallory, hj, o, P(80 + i).did), 'selection');
    }
    await st.drained();
    // alice's claim: its winning offer did not reach the steward directly, her node serves it
    const j = job(alice, { workload: 'infer.echo', nonce: new Uint8Array([1]) });
    assert.equal(await st.admit(j, alice), 'admitted');
    const o = offer(prov, j, 'sha256:' + '11'.repeat(32));
    served.set(o.address, o);
    st.push(selectionOf(alice, j, o, prov.did), 'selection');
    st.push(receiptOf(alice, prov, j, o), 'receipt');
    await until(async () => (await st.released(j.address)).length === 1, 'alice’s claim released (its offer fetched beside mallory’s hung one)');
  } finally {
    answer();
    await st.close();
  }
});
