/**
 * A buyer's claims waiting in the steward's line each hold their `/c0mpute/steward/1` stream, and the line takes up to
 * 256 of one buyer's (MAX_QUEUED_PER_BUYER): the protocol's streams per connection must cover them with room left
 * for the buyer's withdraws and other ops (net/protocols.ts STEWARD_STREAMS, steward-ports.ts stewardInboundStreams).
 * Before (review s43 R1 F2) libp2p's default of 32 inbound streams: with 32 asks waiting, a withdraw of the buyer's
 * admitted claim failed NET_STREAM_FAILED, so a dead claim held the overlay's capacity to its deadline. The whole
 * Steward over two real networks on 127.0.0.1 (the rest of its overlay a stub, as steward-stub.ts).
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createNetwork, type Network } from '../../../src/net/node.js';
import { Ed25519Signer } from '../../../src/records/index.js';
import type { Opened } from '../../../src/records/envelope.js';
import type { Job } from '../../../src/records/kinds.js';
import { openDb, closeDb, sub } from '../../../src/store/db.js';
import { Steward, STEWARD_PROTOCOL, type StewardPorts } from '../../../src/roles/steward.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';
import { tempDir } from '../ledger/helpers.js';
import { stewardIdentity, until } from './steward-stub.js';
import { NOW, P, job } from '../market/fixtures.js';

const TREE = `entitlements:
  - { id: lab, guarantee_uj: 100000000000, guarantee_devices: 1, over_quota_weight: 0, priority: 0 }
  - { id: one, parent: lab, guarantee_uj: 50000000000, guarantee_devices: 1, over_quota_weight: 0, priority: 1 }
`;
const buyer = P(1);
const WAITING = 70; // past the buyer's default outbound bound (libp2p: 64) too

async function node(signer: Ed25519Signer): Promise<Network> {
  const n = await createNetwork({ signer, listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, connectivity: { minPeers: 0 }, verifyThreads: 0, syncOnConnect: [], clock: () => NOW + 2_000 });
  await n.start();
  return n;
}

test(`with ${WAITING} of a buyer's claims waiting in line on their streams, its withdraw of an admitted claim is answered`, async () => {
  const t = tempDir('c0-stew-streams-');
  writeFileSync(join(t.dir, 'tree.yaml'), TREE);
  const db = await openDb(join(t.dir, 'db'));
  const stewardNet = await node(Ed25519Signer.generate());
  const buyerNet = await node(buyer.signer);
  const records = new Map<string, Opened<Job>>();
  const ports = {
    name: 't',
    clock: fakeClock(NOW),
    log: silentLogger(),
    net: {
      peers: () => [],
      handle: (p: string, h: never, limits: never) => stewardNet.handle(p, h, limits),
      subscribe: () => () => {},
      publish: async () => ({ recipients: 1, address: '' }),
      request: async () => [],
      libp2p: new EventTarget(),
    },
    records: { get: async (a: string) => records.get(a), put: async (j: Opened<Job>) => void records.set(j.address, j) },
    market: { decide: async () => ({}), signSelection: () => ({}), adverts: { latest: new Map() } },
    sub: (n: string) => sub(db, n),
  } as unknown as StewardPorts;
  const s = await Steward.start(ports, t.dir, { treeFile: join(t.dir, 'tree.yaml'), managed: false, requiredEvidence: 3, preempt: false }, stewardIdentity);
  const waiting = new AbortController();
  const asks: Array<Promise<unknown>> = [];
  try {
    await buyerNet.dial(stewardNet.addrs()[0]!);
    const ask = (j: Opened<Job>, onFrame: (f: { t?: string }) => void) =>
      buyerNet.request(stewardNet.peerId, STEWARD_PROTOCOL, [{ op: 'admit', job: j.bytes, entitlement: 'one', estimate: { uj: 1_000, grade: 'Estimator' } } as never], { onFrame: onFrame as never, signal: waiting.signal, limits: { deadlineMs: 120_000 } });
    const held = job(buyer, { nonce: new Uint8Array([1, 0, 9]) });
    const first: Array<{ t?: string }> = [];
    await ask(held, (f) => void first.push(f));
    assert.equal(first.at(-1)?.t, 'admitted');
    // the one device is held: each next claim waits in line, its stream open
    let queued = 0;
    let failed = 0;
    for (let i = 0; i < WAITING; i++) {
      const j = job(buyer, { nonce: new Uint8Array([2, i, 9]) });
      asks.push(ask(j, (f) => void (f.t === 'queued' && queued++)).catch(() => void failed++));
    }
    // (before, the asks past the 32nd failed NET_STREAM_FAILED at once)
    await until(() => queued + failed === WAITING, 'every claim queued or refused', 3000);
    // before: NET_STREAM_FAILED (the 33rd inbound stream of the protocol on the connection was refused)
    const out = await buyerNet.request(stewardNet.peerId, STEWARD_PROTOCOL, [{ op: 'withdraw', job: held.address } as never], { limits: { deadlineMs: 15_000 } });
    assert.equal((out[0] as { released?: unknown }).released, 'yes');
    assert.equal(queued, WAITING);
  } finally {
    waiting.abort(new Error('done'));
    await Promise.all(asks);
    await s.stop();
    await buyerNet.stop();
    await stewardNet.stop();
    await closeDb(db);
    t.cleanup();
  }
});
