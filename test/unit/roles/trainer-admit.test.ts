/**
 * Keys outside a run cannot have an honest member dropped by filling its node
 * (review s40 A F1; src/training/transport.ts TrainWire, src/roles/trainer/worker.ts).
 * Before, train/1 read a whole request (up to 128 MiB, a 60 s request phase)
 * before checking the sender was a member, so a few strangers filled the node's
 * request byte budget; a member's chunk was then refused NET_BUFFER_LIMIT and
 * the sender counted that as the receiver's refusal (TRAIN_PEER_REFUSED) and
 * dropped it. Now (a) any key outside the run is refused TRAIN_NOT_MEMBER before
 * a byte of its request is read, and (b) a refusal by the receiver's node (a
 * NET_* code it answers) is tried again within the timeout, then is
 * TRAIN_PEER_BUSY, nobody's fault.
 */
import '../../../src/polyfill.js';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { createNetwork, type Network } from '../../../src/net/node.js';
import { Ed25519Signer } from '../../../src/records/index.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { BUSY_SMALL_BYTES, BUSY_TRIES_LARGE, TRAIN_PROTOCOL, TrainWire } from '../../../src/training/transport.js';
import { tempDir } from '../ledger/helpers.js';
import { P } from '../market/fixtures.js';
import { fakeNet, hostileNet, makeRun, runAll } from './trainer-net.js';

const remote = (code: string) => new C0Error(code, 'peer answered', { detail: { remote: true } });

describe('train/1 and keys outside the run', () => {
  it('a stranger is refused TRAIN_NOT_MEMBER mid-request, before its request is read; a member is served', async () => {
    const [A, B] = [P(520), P(521)];
    const base = { listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, connectivity: { minPeers: 0 }, verifyThreads: 0 };
    const netA = await createNetwork({ ...base, signer: A.signer });
    const netB = await createNetwork({ ...base, signer: B.signer });
    const netS = await createNetwork({ ...base, signer: Ed25519Signer.generate() });
    const nets: Network[] = [netA, netB, netS];
    const t = tempDir('c0-train-admit-');
    const w = new TrainerWorker({ signer: A.signer, did: A.did, run: makeRun([A, B], A), addrs: {}, dir: t.dir, clock: () => Date.now(), net: netA });
    try {
      for (const n of nets) await n.start();
      await w.start();
      await netB.dial(netA.addrs()[0]!);
      await netS.dial(netA.addrs()[0]!);
      const [pong] = await netB.request(netA.peerId, TRAIN_PROTOCOL, [{ k: 'ping' }]);
      assert.equal((pong as { view?: number }).view, 0, 'a member is answered');
      // 1 MiB of a chunk and never its end: before, held for the 60 s request phase (this stream's own deadline, 20 s, would end it first)
      const s = await netS.openStream(netA.peerId, TRAIN_PROTOCOL, { limits: { deadlineMs: 20_000, maxFrameBytes: 2 * 1024 * 1024 } });
      await s.send({ k: 'chunk', tag: 'v0/s0/e/rs0' }).catch(() => undefined);
      await s.send(new Uint8Array(1024 * 1024)).catch(() => undefined);
      await assert.rejects(s.next(), (e: C0Error) => e.code === 'TRAIN_NOT_MEMBER' && (e.detail as { remote?: boolean }).remote === true);
      await s.close().catch(() => undefined);
      // a stranger's step commitment is refused the same way: never opened, never shown as ignored
      await assert.rejects(netS.request(netA.peerId, TRAIN_PROTOCOL, [{ k: 'commit' }, new Uint8Array(100)]), (e: C0Error) => e.code === 'TRAIN_NOT_MEMBER');
      assert.equal(w.ignoredCount, 0);
    } finally {
      await w.stop();
      for (const n of nets) await n.stop();
      t.cleanup();
    }
  });

  it('a chunk the receiver’s node refuses for its byte budget is sent again: no member is dropped', async () => {
    const members = [P(530), P(531), P(532)];
    const [A, B] = members;
    let refused = 0;
    const net = hostileNet(fakeNet(), A!.did, (n) => ({
      // A's first two chunks to B meet B's node full (others filling its request budget)
      request: async (to, protocol, frames, o) => {
        if (to === B!.did && (frames[0] as { k?: string }).k === 'chunk' && refused < 2) {
          refused++;
          throw remote('NET_BUFFER_LIMIT');
        }
        return n.request(to, protocol, frames, o);
      },
    }));
    const { workers, res } = await runAll(members, makeRun(members, A!, { timeoutMs: 5_000 }), net);
    assert.equal(refused, 2);
    for (const [i, w] of workers.entries()) {
      assert.equal(res[i]!.status, 'fulfilled', String((res[i] as PromiseRejectedResult).reason));
      assert.equal(w.status, 'done');
      assert.deepEqual(w.views, [], 'no view change: nobody dropped');
    }
  });

  it('a receiver’s node that refuses until the deadline is TRAIN_PEER_BUSY, not the receiver’s refusal', async () => {
    let tries = 0;
    const net = {
      did: P(540).did,
      handle: async () => {},
      request: async () => {
        tries++;
        throw remote('NET_BUFFER_LIMIT');
      },
    };
    const wire = new TrainWire(net as never, () => undefined);
    await assert.rejects(wire.send(P(541).did, { k: 'chunk', tag: 'v0/s0/e/rs0' }, new Uint8Array(8), 400), (e: C0Error) => {
      assert.equal(e.code, 'TRAIN_PEER_BUSY');
      assert.equal(e.detail?.member, P(541).did);
      assert.equal(e.detail?.remoteCode, 'NET_BUFFER_LIMIT');
      assert.equal(e.detail?.remote, undefined);
      return true;
    });
    assert.ok(tries >= 2, `${tries} tries`);
  });

  it('a large message is uploaded at most BUSY_TRIES_LARGE times; a refusal that cannot pass is not retried', async () => {
    // second-round review: a receiver that kept answering NET_BUFFER_LIMIT made its sender upload a 16 MiB chunk ~33
    // times within the 30 s timeout; and NET_FRAME_TOO_LARGE (another version's limits) was retried the same way
    let tries = 0;
    let code = 'NET_BUFFER_LIMIT';
    const net = {
      did: P(540).did,
      handle: async () => {},
      request: async () => {
        tries++;
        throw remote(code);
      },
    };
    const wire = new TrainWire(net as never, () => undefined);
    await assert.rejects(wire.send(P(541).did, { k: 'chunk', tag: 'v0/s0/e/rs0' }, new Uint8Array(BUSY_SMALL_BYTES + 1), 60_000), { code: 'TRAIN_PEER_BUSY' });
    assert.equal(tries, BUSY_TRIES_LARGE, 'given up after its tries, long before the 60 s timeout');
    tries = 0;
    code = 'NET_FRAME_TOO_LARGE';
    await assert.rejects(wire.send(P(541).did, { k: 'chunk', tag: 'v0/s0/e/rs1' }, new Uint8Array(8), 60_000), { code: 'NET_FRAME_TOO_LARGE' });
    assert.equal(tries, 1, 'not tried again');
  });
});
