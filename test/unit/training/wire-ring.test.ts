/**
 * A ring send that fails on the sender's own side names the member it was for (src/training/transport.ts
 * sendFailedTo; review s43 R4, held up: "training step failed code=NET_DEADLINE err=stream passed its stream
 * deadline of 3000 ms" named nobody). The code is kept; a receiver's refusal is still TRAIN_PEER_REFUSED.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { Mailbox } from '../../../src/training/allreduce.js';
import { wireRing, type TrainWire } from '../../../src/training/transport.js';

const ring = (fail: () => never) => {
  const wire = { send: async () => fail() } as unknown as TrainWire;
  return wireRing(wire, new Mailbox({ timeoutMs: 1000, maxHeld: 8 }), ['did:key:a', 'did:key:b'], 'did:key:a', (d) => ['did:key:a', 'did:key:b'].indexOf(d), 1000);
};

describe('a ring send that fails names its receiver', () => {
  it('a local deadline keeps its code and names the member and the tag', async () => {
    const r = ring(() => {
      throw new C0Error('NET_DEADLINE', 'stream passed its stream deadline of 3000 ms');
    });
    await assert.rejects(r.send(1, 'v0/s0/g/rs0', new Uint8Array(4)), (e: unknown) => e instanceof C0Error && e.code === 'NET_DEADLINE' && e.detail?.member === 'did:key:b' && e.detail?.tag === 'v0/s0/g/rs0' && e.message.includes('did:key:b'));
  });

  it("the receiver's refusal is still TRAIN_PEER_REFUSED naming it", async () => {
    const r = ring(() => {
      throw new C0Error('TRAIN_BAD_MESSAGE', 'no', { detail: { remote: true } });
    });
    await assert.rejects(r.send(1, 'v0/s0/g/rs0', new Uint8Array(4)), (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_PEER_REFUSED' && e.detail?.member === 'did:key:b' && e.detail?.remoteCode === 'TRAIN_BAD_MESSAGE');
  });
});
