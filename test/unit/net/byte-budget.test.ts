/**
 * The direct protocols' byte budget (src/net/byte-budget.ts; docs/network.md
 * "Direct streams: limits and framing"): per stream, per connection, per peer
 * and in total, each refusing with NET_BUFFER_LIMIT and its scope, nothing
 * reserved by a refused request, everything released when a stream ends; a
 * frame reserves the bytes that arrived, not the length its prefix declares.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Stream } from '@libp2p/interface';
import { ByteBudget } from '../../../src/net/byte-budget.js';
import { FrameReader } from '../../../src/net/frame-reader.js';
import type { C0Error } from '../../../src/errors.js';

const refused = (scope: string) => (e: C0Error) => e.code === 'NET_BUFFER_LIMIT' && (e.detail as { scope?: string })?.scope === scope;

test('per stream, per connection and total bounds, each with its scope', () => {
  const b = new ByteBudget({ totalBytes: 100, perConnectionBytes: 60 });
  const s1 = b.open('c1', 'p1', 50);
  s1.reserve(40);
  assert.throws(() => s1.reserve(11), refused('stream'));
  const s2 = b.open('c1', 'p1', 50);
  assert.throws(() => s2.reserve(21), refused('connection'));
  s2.reserve(20);
  assert.equal(b.usedBy('c1'), 60);
  const s3 = b.open('c2', 'p2', 50);
  s3.reserve(40);
  assert.throws(() => b.open('c3', 'p3', 50).reserve(1), refused('total'));
  assert.equal(b.used, 100);
  // A stream that ends gives everything back; it cannot reserve again.
  s1.close();
  assert.equal(b.used, 60);
  assert.equal(b.usedBy('c1'), 20);
  assert.throws(() => s1.reserve(1), refused('stream'));
  s2.release(5);
  assert.equal(b.usedBy('c1'), 15);
  s2.close();
  s3.close();
  assert.equal(b.used, 0);
  assert.equal(b.usedBy('c1'), 0);
});

test('one peer holds at most perPeerBytes however many connections it opens; other peers are unaffected', () => {
  const b = new ByteBudget({ totalBytes: 800, perConnectionBytes: 100, perPeerBytes: 200 });
  const held: Array<ReturnType<ByteBudget['open']>> = [];
  for (let c = 0; c < 2; c++) {
    const s = b.open(`m${c}`, 'mallory', 100);
    s.reserve(100);
    held.push(s);
  }
  assert.throws(() => b.open('m2', 'mallory', 100).reserve(1), refused('peer'));
  assert.equal(b.usedByPeer('mallory'), 200);
  b.open('h0', 'honest', 100).reserve(100);
  held[0]!.close();
  b.open('m3', 'mallory', 100).reserve(100);
  assert.equal(b.usedByPeer('mallory'), 200);
});

test('by default a peer may hold what one connection may: the defaults and a partial budget both', () => {
  assert.equal(new ByteBudget().opts.perPeerBytes, new ByteBudget().opts.perConnectionBytes);
  assert.ok(new ByteBudget().opts.perPeerBytes <= new ByteBudget().opts.totalBytes / 4);
  assert.equal(new ByteBudget({ totalBytes: 1000, perConnectionBytes: 300 }).opts.perPeerBytes, 300);
});

/** A stream that delivers what the test pushes, as libp2p's does ('message' events), paused or not. */
class FakeStream extends EventTarget {
  readStatus = 'readable';
  remoteWriteStatus = 'writable';
  readBufferLength = 0;
  pause(): void {
    this.readStatus = 'paused';
  }
  resume(): void {
    this.readStatus = 'readable';
  }
  push(bytes: Uint8Array): void {
    this.dispatchEvent(Object.assign(new Event('message'), { data: { subarray: () => bytes } }));
  }
}

test('a frame reserves the bytes that arrived, not its declared length: a length prefix alone holds nothing', async () => {
  const b = new ByteBudget({ totalBytes: 100_000, perConnectionBytes: 100_000 });
  const stream = new FakeStream();
  const sb = b.open('c1', 'p1', 70_000);
  const reader = new FrameReader(stream as unknown as Stream, { maxFrameBytes: 100_000, budget: sb });
  const ac = new AbortController();
  const frame = reader.read(ac.signal);
  // a 65 536-byte frame declared (varint 0x80 0x80 0x04), then nothing
  stream.push(Uint8Array.from([0x80, 0x80, 0x04]));
  await new Promise((r) => setImmediate(r));
  assert.equal(b.used, 0, 'the prefix alone reserves nothing');
  stream.push(new Uint8Array(1000));
  await new Promise((r) => setImmediate(r));
  assert.equal(b.used, 1000, 'what arrived is held');
  stream.push(new Uint8Array(65_536 - 1000));
  const raw = await frame;
  assert.ok(raw);
  assert.equal(raw.bytes.length, 65_536);
  assert.equal(b.used, 65_536);
  raw.release();
  assert.equal(b.used, 0);
  // a declared length the stream's own bound cannot hold is still refused at the prefix, before any body byte
  const over = reader.read(ac.signal);
  stream.push(Uint8Array.from([0xc0, 0xff, 0x04]));
  await assert.rejects(over, refused('stream'));
  assert.equal(b.used, 0);
  reader.close();
});

test('a peer that stops mid-frame holds what it sent, and its deadline gives it back', async () => {
  const b = new ByteBudget({ totalBytes: 100_000, perConnectionBytes: 100_000 });
  const stream = new FakeStream();
  const reader = new FrameReader(stream as unknown as Stream, { maxFrameBytes: 65_600, budget: b.open('c1', 'p1', 70_000) });
  const ac = new AbortController();
  const frame = reader.read(ac.signal);
  stream.push(Uint8Array.from([0x80, 0x80, 0x04, 1, 2, 3]));
  await new Promise((r) => setImmediate(r));
  assert.equal(b.used, 3);
  ac.abort(new Error('deadline'));
  await assert.rejects(frame, /deadline/);
  assert.equal(b.used, 0);
  reader.close();
});
