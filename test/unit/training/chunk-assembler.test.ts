/**
 * Chunk reassembly on a training member (src/training/transport.ts): parts of
 * chunks not yet whole are bounded per sender, in all and in bytes, and a chunk
 * left unfinished is dropped after its time-to-live, so a member of the run
 * cannot make another hold parts without end (up to 64 chunks of 1,023 MiB
 * before) or block the rest with stuck ones.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { C0Error } from '../../../src/errors.js';
import { ASSEMBLY_LIMITS, ChunkAssembler, MAX_MESSAGE_BYTES } from '../../../src/training/transport.js';

const part = (tag: string, k: number, parts: number) => ({ k: 'chunk', tag, part: k, parts }) as never;
const refused = (fn: () => void, re: RegExp) => assert.throws(fn, (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_BAD_MESSAGE' && re.test(e.message));

describe('ChunkAssembler bounds', () => {
  it('delivers a chunk once its parts are in, and holds nothing after', () => {
    const got: string[] = [];
    const a = new ChunkAssembler((from, tag, data) => got.push(`${from}:${tag}:${data.length}`));
    a.put(1, part('w', 1, 2), new Uint8Array(3));
    assert.equal(a.bytesHeld, 3);
    a.put(1, part('w', 0, 2), new Uint8Array(4));
    assert.deepEqual(got, ['1:w:7']);
    assert.equal(a.bytesHeld, 0);
  });

  it('refuses a sender past its chunks in assembly, leaving the others theirs', () => {
    const a = new ChunkAssembler(() => undefined, { ...ASSEMBLY_LIMITS, chunksPerSender: 2 });
    a.put(1, part('a', 0, 2), new Uint8Array(1));
    a.put(1, part('b', 0, 2), new Uint8Array(1));
    refused(() => a.put(1, part('c', 0, 2), new Uint8Array(1)), /from member 1/);
    a.put(2, part('a', 0, 2), new Uint8Array(1));
  });

  it('refuses a part that would pass the byte budget', () => {
    const a = new ChunkAssembler(() => undefined, { ...ASSEMBLY_LIMITS, bytes: 10 });
    a.put(1, part('a', 0, 3), new Uint8Array(6));
    refused(() => a.put(2, part('b', 0, 3), new Uint8Array(6)), /over 10 bytes/);
    assert.equal(a.bytesHeld, 6);
    // the refused part began no chunk: member 2 still has its places once the bytes are free
    const b = new ChunkAssembler(() => undefined, { ...ASSEMBLY_LIMITS, bytes: 10, chunksPerSender: 1 });
    refused(() => b.put(2, part('big', 0, 2), new Uint8Array(11)), /over 10 bytes/);
    b.put(2, part('small', 0, 2), new Uint8Array(1));
  });

  it('drops a chunk left unfinished past its time-to-live, which frees its sender and its bytes', () => {
    let now = 0;
    const a = new ChunkAssembler(() => undefined, { ...ASSEMBLY_LIMITS, chunksPerSender: 1, ttlMs: 1_000 }, () => now);
    a.put(1, part('stuck', 0, 2), new Uint8Array(5));
    refused(() => a.put(1, part('next', 0, 2), new Uint8Array(1)), /from member 1/);
    now = 1_000;
    a.put(1, part('next', 0, 2), new Uint8Array(1));
    assert.equal(a.bytesHeld, 1, 'the stuck chunk\'s parts are gone');
  });

  it('refuses a message over MAX_MESSAGE_BYTES, a single-part chunk too (it would go straight to the Mailbox)', () => {
    const got: number[] = [];
    const a = new ChunkAssembler((_f, _t, d) => got.push(d.length));
    refused(() => a.put(1, { k: 'chunk', tag: 'one' } as never, new Uint8Array(MAX_MESSAGE_BYTES + 1)), /at most/);
    refused(() => a.put(1, part('two', 0, 2), new Uint8Array(MAX_MESSAGE_BYTES + 1)), /at most/);
    a.put(1, { k: 'chunk', tag: 'one' } as never, new Uint8Array(MAX_MESSAGE_BYTES));
    assert.deepEqual(got, [MAX_MESSAGE_BYTES]);
    assert.equal(a.bytesHeld, 0);
  });
});
