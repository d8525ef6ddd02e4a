/**
 * Write coalescing (write-coalesce.ts) on a real TCP socket pair: the frames a
 * turn sends leave in one write request, in order, before the next turn; the
 * return value (backpressure) is the transport's own; a connection that is
 * not TCP is left alone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, Socket, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import type { Connection } from '@libp2p/interface';
import { coalesceWrites } from '../../../src/net/write-coalesce.js';

/** A connected pair on 127.0.0.1, and everything the server side receives. */
async function pair(): Promise<{ client: Socket; received: () => Buffer; close: () => void }> {
  const chunks: Buffer[] = [];
  const server = createServer((s) => s.on('data', (d: Buffer) => chunks.push(d)));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const client = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await once(client, 'connect');
  return {
    client,
    received: () => Buffer.concat(chunks),
    close: () => {
      client.destroy();
      server.close();
    },
  };
}

/** What @libp2p/tcp's connection does: one socket.write per buffer of the frame. Counts the socket's write requests. */
function tcpConn(socket: Socket): { conn: Connection; ma: { sendData: (d: Uint8Array[]) => { canSendMore: boolean }; sendReset: (e?: Error) => void }; requests: () => number; resets: Array<{ corked: number; pending: number }> } {
  const resets: Array<{ corked: number; pending: number }> = [];
  let requests = 0;
  const s = socket as unknown as { _writeGeneric: (...a: unknown[]) => unknown };
  const generic = s._writeGeneric.bind(socket);
  s._writeGeneric = (...a: unknown[]) => {
    requests++;
    return generic(...a);
  };
  const ma = {
    socket,
    sendData(data: Uint8Array[]) {
      let canSendMore = true;
      for (const b of data) canSendMore = socket.write(b);
      return { canSendMore };
    },
    sendReset() {
      resets.push({ corked: socket.writableCorked, pending: requests });
      socket.resetAndDestroy();
    },
  };
  return { conn: { maConn: ma } as unknown as Connection, ma, requests: () => requests, resets };
}

const frame = (i: number): Uint8Array[] => [Uint8Array.of(0, 3), Uint8Array.of(i, i, i)];
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A socket pair and its client wrapped as @libp2p/tcp's connection (coalescing or not), closed after `fn`. */
async function withPair(coalesce: boolean, fn: (t: ReturnType<typeof tcpConn>, p: Awaited<ReturnType<typeof pair>>) => Promise<void>): Promise<void> {
  const p = await pair();
  try {
    const t = tcpConn(p.client);
    if (coalesce) assert.equal(coalesceWrites(t.conn), true);
    await fn(t, p);
  } finally {
    p.close();
  }
}

/** Wait (up to 2 s) until the server has as many bytes as `want`, then compare. */
async function receivedAll(p: Awaited<ReturnType<typeof pair>>, want: Buffer): Promise<void> {
  const end = Date.now() + 2000;
  while (p.received().length < want.length && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(p.received(), want);
}

test('the frames of one turn leave in one write request, in order', () =>
  withPair(true, async (t, p) => {
    assert.equal(coalesceWrites(t.conn), true, 'wrapping twice is once');
    for (let i = 0; i < 10; i++) t.ma.sendData(frame(i));
    assert.equal(t.requests(), 0, 'nothing leaves before the turn ends');
    await turn();
    assert.equal(t.requests(), 1, '20 buffers, one request');
    // the next turn's frames are a request of their own
    for (let i = 10; i < 13; i++) t.ma.sendData(frame(i));
    await turn();
    assert.equal(t.requests(), 2);
    await receivedAll(p, Buffer.concat(Array.from({ length: 13 }, (_, i) => Buffer.concat(frame(i)))));
  }));

test('without it, each buffer is a request of its own (what it saves)', () =>
  withPair(false, async (t) => {
    for (let i = 0; i < 10; i++) t.ma.sendData(frame(i));
    await turn();
    assert.ok(t.requests() >= 10, `${t.requests()} requests`);
  }));

test('backpressure is the transport’s: false above the high-water mark, then drain', () =>
  withPair(true, async (t, p) => {
    assert.equal(t.ma.sendData([Uint8Array.of(1)]).canSendMore, true);
    assert.equal(t.ma.sendData([new Uint8Array(p.client.writableHighWaterMark + 1)]).canSendMore, false);
    await once(p.client, 'drain');
  }));

test('many small frames in one pass count together against the high-water mark; all arrive, in order, after drain', () =>
  withPair(true, async (t, p) => {
    const n = Math.ceil(p.client.writableHighWaterMark / 500) + 4;
    const chunk = (i: number) => [Uint8Array.of(0, i & 255), new Uint8Array(498).fill(i & 255)];
    const answers = Array.from({ length: n }, (_, i) => t.ma.sendData(chunk(i)).canSendMore);
    assert.equal(answers[0], true);
    assert.equal(answers.at(-1), false, 'above the mark the transport says wait');
    await once(p.client, 'drain');
    await receivedAll(p, Buffer.concat(Array.from({ length: n }, (_, i) => Buffer.concat(chunk(i)))));
  }));

test('a reset uncorks first, so what the turn wrote (a GoAway) is handed to the kernel before the socket is destroyed', () =>
  withPair(true, async (t, p) => {
    t.ma.sendData(frame(1));
    assert.equal(p.client.writableCorked, 1);
    t.ma.sendReset(new Error('protocol error'));
    assert.deepEqual(t.resets, [{ corked: 0, pending: 1 }]);
    await turn();
  }));

test('a connection that is not TCP is left alone', () => {
  assert.equal(coalesceWrites({} as Connection), false);
  const ma = { socket: {}, sendData: () => undefined };
  assert.equal(coalesceWrites({ maConn: ma } as unknown as Connection), false);
  assert.equal(coalesceWrites({ maConn: { socket: new Socket() } } as unknown as Connection), false, 'no sendData');
});
