/**
 * A refused all-reduce chunk is the refusing receiver's failure, not the
 * sender's (src/roles/trainer/worker.ts, src/training/transport.ts `wireRing`;
 * docs/training.md "Failure"): with `onFailure: continue` the sender names the
 * receiver (TRAIN_PEER_REFUSED) and the survivors go on without it. Before, any
 * code a receiver answered with (TRAIN_MAILBOX_FULL, or one a hostile member
 * made up) was rethrown and stopped the honest sender for good. And a member
 * cannot use up an honest receiver's Mailbox with empty messages
 * (src/training/allreduce.ts `Mailbox`): every message is charged at least
 * MESSAGE_OVERHEAD bytes and each sender holds at most `maxHeldPerSender`, so
 * an honest predecessor's chunk still finds room.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import { C0Error } from '../../../src/errors.js';
import type { CborValue } from '../../../src/records/cbor.js';
import type { ProtocolHandler } from '../../../src/net/protocols.js';
import { peerIdFromDid } from '../../../src/node/peer-id.js';
import { buildRun } from '../../../src/roles/trainer/run-file.js';
import { TrainerWorker } from '../../../src/roles/trainer/worker.js';
import { chunkBounds } from '../../../src/training/allreduce.js';
import { tensors } from '../../../src/training/model.js';
import { fakeClock } from '../../../src/util/clock.js';
import { tempDir } from '../ledger/helpers.js';
import { NOW, P } from '../market/fixtures.js';
import { fakeNet, hostileNet, makeRun, runAll } from './trainer-net.js';

const [A, B, H] = [P(500), P(501), P(502)];
const members = [A, B, H];

describe('a refused all-reduce chunk', () => {
  it('a member answering every chunk with an error is dropped; its predecessor does not stop', async () => {
    const net = fakeNet();
    hostileNet(net, H.did, (n) => ({
      handle: (protocol: string, h: ProtocolHandler) =>
        n.handle(protocol, async (frames, ctx) => {
          if ((frames[0] as { k?: string }).k === 'chunk') throw new C0Error('TRAIN_MAILBOX_FULL', 'hostile refusal');
          return h(frames, ctx);
        }),
    }));
    const { workers, res } = await runAll(members, makeRun(members, A), net);
    for (const [i, w] of workers.slice(0, 2).entries()) {
      assert.equal(res[i]!.status, 'fulfilled', String((res[i] as PromiseRejectedResult).reason));
      assert.equal(w.status, 'done');
      assert.deepEqual(w.members, [A.did, B.did].sort());
      assert.deepEqual(w.views.map((v) => v.dropped), [[H.did]]);
    }
    assert.ok(workers.slice(0, 2).some((w) => w.views[0]!.cause === 'TRAIN_PEER_REFUSED'), workers.map((w) => w.views[0]?.cause).join());
  });

  it('empty chunks from one member cannot fill a worker’s Mailbox: another member’s chunk is still held', async () => {
    const t = tempDir('c0-train-empty-');
    try {
      const yaml = stringify({ name: 'empty', model: { layers: [4, 8, 3] }, seed: 1, stepsPerEpoch: 600, epochs: 1, members: members.map((m, i) => ({ did: m.did, addr: `/ip4/127.0.0.1/tcp/${i + 1}` })) });
      const run = buildRun(yaml, A.signer, NOW).bundle.run;
      let handler: ProtocolHandler | undefined;
      const net = { did: A.did, handle: async (_p: string, h: ProtocolHandler) => void (handler = h), request: async () => [] };
      const w = new TrainerWorker({ signer: A.signer, did: A.did, run, addrs: {}, dir: t.dir, clock: fakeClock(NOW), net: net as never });
      await w.start();
      const send = (from: string, tag: string, bytes: number) =>
        handler!([{ k: 'chunk', tag } as CborValue, new Uint8Array(bytes)], { peer: peerIdFromDid(from), signal: new AbortController().signal, send: async () => {} } as never);
      let held = 0;
      let refused: unknown;
      outer: for (let s = 0; s < 600; s++)
        for (const q of ['e', 'g'])
          for (const p of ['rs', 'ag'])
            for (const k of [0, 1]) {
              try {
                await send(H.did, `v1/s${s}/${q}/${p}${k}`, 0);
                held++;
              } catch (e) {
                refused = e;
                break outer;
              }
            }
      assert.ok(refused instanceof C0Error && refused.code === 'TRAIN_MAILBOX_FULL', String(refused));
      assert.ok(held < 4096 / 2, `${held} empty chunks held from one member`);
      assert.ok(w.box.bytesHeld >= held * 64, 'each message is charged its overhead');
      // B's real exponent chunk: its place in the ring of three (a chunk of another size is TRAIN_CHUNK_INVALID)
      const [a, b] = chunkBounds(tensors({ layers: [4, 8, 3] }).length, 3, run.record.members.indexOf(B.did));
      await send(B.did, 'v0/s0/e/rs0', 4 * (b - a));
      await w.stop();
    } finally {
      t.cleanup();
    }
  });
});
