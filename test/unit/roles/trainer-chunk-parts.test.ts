/**
 * A training worker takes a chunk's parts only as its sender's place in the ring makes them (src/roles/trainer/worker.ts
 * #chunkSize, src/training/transport.ts ChunkAssembler; review s43 R4 F3). Before, any member could send 1 MiB parts
 * "of 1 024" under any expected tag, whatever the model: a hostile member made an honest one hold ~700 MB (a 524-byte
 * gradient), then the 512 MiB shared by all was full, an honest member's real chunk was refused and the honest
 * receiver was blamed. Now parts that do not fit the chunk are TRAIN_CHUNK_INVALID (nothing held, the sender at fault)
 * and the honest chunk of the same model goes through. A real worker, its network a stub that hands the test its
 * /c0mpute/train/1 handler.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chunkBounds } from '../../../src/training/allreduce.js';
import { MAX_MESSAGE_BYTES } from '../../../src/training/transport.js';
import { P } from '../market/fixtures.js';
import { handlerRig, refused } from './trainer-handler-rig.js';


describe('a training worker takes chunk parts only as the chunk makes them', () => {
  it('refuses parts a chunk of this model never has, holding none of them; takes the real chunk', async () => {
    const [A, B, H] = [P(530), P(531), P(532)];
    // 1 057 795 weights: the gradient's chunks in a ring of three are about 1.4 MB, two parts each
    const layers = [4, 1024, 1024, 3];
    const { w, run, send, cleanup } = await handlerRig('parts', layers, [A, B, H]);
    try {
      // the hostile member's parts (1 MiB of "1 024") under expected tags: refused, none held
      for (const tag of ['v0/s0/g/rs0', 'v0/s0/g/ag1', 'v0/s1/g/rs1', 'v0/s0/e/rs0', 'v1/s0/g/rs0']) {
        await assert.rejects(send(H.did, { k: 'chunk', tag, part: 0, parts: 1024 }, MAX_MESSAGE_BYTES), refused('TRAIN_CHUNK_INVALID', /1024 parts/), tag);
      }
      // H's real chunk v0/s0/g/rs0: its place in the ring of three (DID order) is the chunk it sends first
      const len = w.state.w.length;
      const r = run.record.members.indexOf(H.did);
      const [a, b] = chunkBounds(len, 3, r);
      const bytes = 4 * (b - a);
      assert.equal(Math.ceil(bytes / MAX_MESSAGE_BYTES), 2);
      // the right part count with a last part of the wrong length is refused too
      await assert.rejects(send(H.did, { k: 'chunk', tag: 'v0/s0/g/rs0', part: 1, parts: 2 }, bytes - MAX_MESSAGE_BYTES + 4), refused('TRAIN_CHUNK_INVALID', /part 1 of 2 holds/));
      await send(H.did, { k: 'chunk', tag: 'v0/s0/g/rs0', part: 0, parts: 2 }, MAX_MESSAGE_BYTES);
      await send(H.did, { k: 'chunk', tag: 'v0/s0/g/rs0', part: 1, parts: 2 }, bytes - MAX_MESSAGE_BYTES);
      assert.equal(w.box.bytesHeld, bytes + 64, 'the whole chunk waits in the mailbox');
      await w.stop();
    } finally {
      cleanup();
    }
  });
});
