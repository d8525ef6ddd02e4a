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
import { ASSEMBLY_LIMITS, ChunkAssembler, MAX_MESSAGE_BYTES, assemblyLimits } from '../../../src/training/transport.js';

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

describe('ChunkAssembler: parts must fit the chunk they belong to (review s43 R4 F3)', () => {
  const M = MAX_MESSAGE_BYTES;
  const invalid = (fn: () => void, from: number, re: RegExp) => assert.throws(fn, (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_CHUNK_INVALID' && e.detail?.rank === from && re.test(e.message));

  it('takes a chunk of a known size only in the parts sendChunk makes of it', () => {
    const got: number[] = [];
    const bytes = 2 * M + 5;
    const a = new ChunkAssembler((_f, _t, d) => got.push(d.length), ASSEMBLY_LIMITS, Date.now, () => ({ bytes, exact: true }));
    // the hostile member's parts: 1 MiB each of 1 024 for a chunk of 3 parts
    invalid(() => a.put(2, part('x', 0, 1024), new Uint8Array(M)), 2, /1024 parts/);
    invalid(() => a.put(2, part('x', 0, 2), new Uint8Array(M)), 2, /2 parts/);
    invalid(() => a.put(2, { k: 'chunk', tag: 'x' } as never, new Uint8Array(5)), 2, /1 parts/);
    // a part short of 1 MiB before the last, a last part not the rest
    invalid(() => a.put(2, part('x', 0, 3), new Uint8Array(M - 1)), 2, /part 0 of 3 holds/);
    invalid(() => a.put(2, part('x', 2, 3), new Uint8Array(6)), 2, /part 2 of 3 holds 6 bytes, expected 5/);
    assert.equal(a.bytesHeld, 0, 'nothing refused is held');
    a.put(2, part('x', 0, 3), new Uint8Array(M));
    a.put(2, part('x', 2, 3), new Uint8Array(5));
    a.put(2, part('x', 1, 3), new Uint8Array(M));
    assert.deepEqual(got, [bytes]);
  });

  it('takes a chunk whose size is only bounded in at most the parts of the bound', () => {
    const a = new ChunkAssembler(() => undefined, ASSEMBLY_LIMITS, Date.now, () => ({ bytes: 524, exact: false }));
    invalid(() => a.put(1, part('y', 0, 2), new Uint8Array(M)), 1, /at most 1/);
    a.put(1, { k: 'chunk', tag: 'y' } as never, new Uint8Array(300));
  });

  it('takes a single-part chunk only at its size, or within its bound (review s43 R8 F3)', () => {
    const got: number[] = [];
    const exact = new ChunkAssembler((_f, _t, d) => got.push(d.length), ASSEMBLY_LIMITS, Date.now, () => ({ bytes: 24, exact: true }));
    invalid(() => exact.put(1, { k: 'chunk', tag: 'x' } as never, new Uint8Array(M)), 1, /part 0 of 1 holds 1048576 bytes, expected 24/);
    invalid(() => exact.put(1, { k: 'chunk', tag: 'x' } as never, new Uint8Array(23)), 1, /expected 24/);
    exact.put(1, { k: 'chunk', tag: 'x' } as never, new Uint8Array(24));
    const bound = new ChunkAssembler((_f, _t, d) => got.push(d.length), ASSEMBLY_LIMITS, Date.now, () => ({ bytes: 136, exact: false }));
    invalid(() => bound.put(1, { k: 'chunk', tag: 'y' } as never, new Uint8Array(M)), 1, /holds 1048576 bytes, expected at most 136/);
    invalid(() => bound.put(1, { k: 'chunk', tag: 'y' } as never, new Uint8Array(137)), 1, /expected at most 136/);
    bound.put(1, { k: 'chunk', tag: 'y' } as never, new Uint8Array(136));
    assert.deepEqual(got, [24, 136]);
  });

  it('bounds each sender by the model: one member filling its share leaves another member its chunk', () => {
    const maxChunk = 3 * M;
    const limits = assemblyLimits(maxChunk, 3);
    assert.equal(limits.bytesPerSender, 2 * maxChunk + M);
    assert.equal(limits.bytes, 3 * limits.bytesPerSender);
    const got: string[] = [];
    const a = new ChunkAssembler((from, tag) => got.push(`${from}:${tag}`), limits, Date.now, () => ({ bytes: maxChunk, exact: false }));
    // member 2 begins chunks it never finishes until its share is full
    let held = 0;
    assert.throws(() => {
      for (let t = 0; ; t++) {
        a.put(2, part(`h${t}`, 0, 3), new Uint8Array(M));
        held++;
      }
    }, (e: unknown) => e instanceof C0Error && e.code === 'TRAIN_BAD_MESSAGE');
    assert.ok(held * M <= limits.bytesPerSender, `${held} parts held`);
    assert.equal(a.bytesFrom(2), held * M);
    // member 0's whole chunk still goes through
    for (let k = 0; k < 3; k++) a.put(0, part('honest', k, 3), new Uint8Array(M));
    assert.deepEqual(got, ['0:honest']);
  });

  it('prune lets go of the partial chunks of a member no longer in the view', () => {
    const a = new ChunkAssembler(() => undefined);
    a.put(2, part('v0/s0/g/rs0', 0, 3), new Uint8Array(10));
    a.put(1, part('v0/s0/g/rs0', 0, 3), new Uint8Array(7));
    a.prune((from) => from !== 2);
    assert.equal(a.bytesHeld, 7);
    assert.equal(a.bytesFrom(2), 0);
    // its places are free again
    a.put(2, part('v0/s0/g/rs0', 0, 3), new Uint8Array(10));
  });
});
