/**
 * What a member can make another training worker hold (src/roles/trainer/worker.ts,
 * src/training/allreduce.ts `Mailbox`, src/training/transport.ts
 * `ChunkAssembler`; docs/training.md "Wire"): a single-part chunk over
 * MAX_MESSAGE_BYTES, or a chunk, view or final under a tag the worker will never
 * take, is TRAIN_BAD_MESSAGE; waiting messages are bounded in bytes in all and
 * per sender (TRAIN_MAILBOX_FULL naming the sender); what a done step left is
 * dropped. Before, 96 single-part 8 MiB chunks under unused tags were all held
 * (768 MiB) until the worker stopped. A real worker, its network a stub that
 * hands the test its /c0mpute/train/1 handler.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Mailbox, chunkBounds } from '../../../src/training/allreduce.js';
import { MAX_MESSAGE_BYTES } from '../../../src/training/transport.js';
import { P } from '../market/fixtures.js';
import { handlerRig, refused } from './trainer-handler-rig.js';


describe('Mailbox byte bounds', () => {
  it('refuses a message past the bytes in all or from its sender, naming the sender; take, forget and prune free them', async () => {
    // each waiting message is charged its length + MESSAGE_OVERHEAD (64)
    const box = new Mailbox({ timeoutMs: 1000, maxHeld: 100, maxBytes: 138, maxBytesPerSender: 70, name: (r) => `member-${r}` });
    box.put(1, 'a', new Uint8Array(4));
    assert.throws(() => box.put(1, 'b', new Uint8Array(0)), refused('TRAIN_MAILBOX_FULL', /member-1 would hold over 70 bytes/));
    box.put(2, 'a', new Uint8Array(6));
    assert.throws(() => box.put(3, 'a', new Uint8Array(0)), refused('TRAIN_MAILBOX_FULL', /from member-3.*over 138 bytes/));
    assert.equal(box.bytesHeld, 138);
    assert.equal((await box.take(1, 'a')).length, 4);
    assert.equal(box.bytesHeld, 70);
    box.put(1, 'v0/s1/x', new Uint8Array(2));
    box.forget('v0/s1/');
    assert.equal(box.bytesHeld, 70);
    box.prune((tag) => tag !== 'a');
    assert.equal(box.bytesHeld, 0);
    box.put(3, 'a', new Uint8Array(6));
    // a message a receive is waiting for is handed over, not held
    const waiting = box.take(4, 'w');
    box.put(4, 'w', new Uint8Array(9));
    assert.equal((await waiting).length, 9);
    assert.equal(box.bytesHeld, 70);
    box.close(new Error('stopped'));
    assert.equal(box.bytesHeld, 0);
  });

  it('bounds the messages waiting from one sender, so another sender keeps its room', () => {
    const box = new Mailbox({ timeoutMs: 1000, maxHeld: 8, maxHeldPerSender: 4, name: (r) => `member-${r}` });
    for (let i = 0; i < 4; i++) box.put(1, `t${i}`, new Uint8Array(0));
    assert.throws(() => box.put(1, 't4', new Uint8Array(0)), refused('TRAIN_MAILBOX_FULL', /more than 4 messages waiting from member-1/));
    for (let i = 0; i < 4; i++) box.put(2, `t${i}`, new Uint8Array(0));
    assert.equal(box.bytesHeld, 8 * 64);
  });
});

describe('a training worker holds a bounded amount from a member', () => {
  it('refuses oversized messages and unexpected tags, and bounds what waits per sender', async () => {
    const [A, B, H] = [P(500), P(501), P(502)];
    const { w, run, send, cleanup } = await handlerRig('box', [4, 8, 3], [A, B, H]);
    try {
      // one message over MAX_MESSAGE_BYTES (a real one may carry 100 MiB): refused whole
      await assert.rejects(send(H.did, { k: 'chunk', tag: 'v0/s0/g/rs0' }, 8 * 1024 * 1024), refused('TRAIN_BAD_MESSAGE', /at most/));
      await assert.rejects(send(H.did, { k: 'view', tag: 'view/v1' }, MAX_MESSAGE_BYTES + 1), refused('TRAIN_BAD_MESSAGE'));
      // tags the worker will never take
      for (const [k, tag] of [
        ['chunk', 'junk/0'],
        ['chunk', 'v0/s7/g/rs0'], // a step far ahead
        ['chunk', 'v0/s0/g/rs5'], // past the ring's steps
        ['chunk', 'v3/s0/g/rs0'], // a view far ahead
        ['chunk', 'v00/s0/g/rs0'],
        ['view', 'view/v9'],
        ['view', 'junk'],
        ['final', 'final/v0/e1'],
      ]) {
        await assert.rejects(send(H.did, { k: k!, tag: tag! }, 10), refused('TRAIN_BAD_MESSAGE', / not expected /), tag);
      }
      assert.equal(w.box.bytesHeld, 0);
      // expected tags: held, but only so many bytes from one member (8 × the 268-byte gradient + 2 MiB): two 1 MiB proposals fit, a result does not
      await send(H.did, { k: 'view', tag: 'view/v1' }, MAX_MESSAGE_BYTES);
      await send(H.did, { k: 'view', tag: 'view/v2' }, MAX_MESSAGE_BYTES);
      await assert.rejects(send(H.did, { k: 'final', tag: 'final/v0/e0' }, MAX_MESSAGE_BYTES), refused('TRAIN_MAILBOX_FULL', new RegExp(H.did)));
      const cap = w.box.bytesHeld;
      assert.equal(cap, 2 * (MAX_MESSAGE_BYTES + 64));
      // a single-part chunk larger than its place in the ring makes it is refused before it is held (review s43 R8 F3)
      await assert.rejects(send(H.did, { k: 'chunk', tag: 'v0/s0/g/rs0' }, MAX_MESSAGE_BYTES), refused('TRAIN_CHUNK_INVALID'));
      await assert.rejects(send(H.did, { k: 'chunk', tag: 'v1/s0/g/rs0' }, MAX_MESSAGE_BYTES), refused('TRAIN_CHUNK_INVALID'));
      // parts of a chunk this model never sends in parts are refused before they are held (trainer-chunk-parts.test.ts)
      await assert.rejects(send(H.did, { k: 'chunk', tag: 'v0/s0/g/ag0', part: 0, parts: 2 }, MAX_MESSAGE_BYTES), refused('TRAIN_CHUNK_INVALID'));
      // another member still has its own room: its real chunk (its place in the ring of three)
      const [a, b] = chunkBounds(w.state.w.length, 3, run.record.members.indexOf(B.did));
      await send(B.did, { k: 'chunk', tag: 'v0/s0/g/rs0' }, 4 * (b - a));
      await send(B.did, { k: 'view', tag: 'view/v1' }, 100);
      assert.equal(w.box.bytesHeld, cap + 4 * (b - a) + 100 + 2 * 64, 'each charged its length and 64 bytes');
      await w.stop();
      assert.equal(w.box.bytesHeld, 0, 'stopping drops what waits');
    } finally {
      cleanup();
    }
  });

  it('holds every member\'s share at once: colluders filling theirs leave an honest member its chunk (review s43 R8 F3)', async () => {
    // 11 members of [4,8,3]: each share is 8 × 268 + 2 MiB; before, the total (16 × 268 + 16 MiB) was under 9 members' shares
    const [A, B] = [P(600), P(601)];
    const H = Array.from({ length: 9 }, (_, i) => P(610 + i));
    const all = [A, B, ...H];
    const { w, run, send, cleanup } = await handlerRig('box', [4, 8, 3], all);
    try {
      // each colluder fills its share with two 1 MiB proposals: all held
      for (const h of H) {
        await send(h.did, { k: 'view', tag: 'view/v1' }, MAX_MESSAGE_BYTES);
        await send(h.did, { k: 'view', tag: 'view/v2' }, MAX_MESSAGE_BYTES);
      }
      assert.equal(w.box.bytesHeld, 9 * 2 * (MAX_MESSAGE_BYTES + 64));
      // the honest member's real chunk is taken
      const [a, b] = chunkBounds(w.state.w.length, all.length, run.record.members.indexOf(B.did));
      await send(B.did, { k: 'chunk', tag: 'v0/s0/g/rs0' }, 4 * (b - a));
      await w.stop();
    } finally {
      cleanup();
    }
  });
});
