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
function tcpConn(socket: Socket): { conn: Connection; ma: { sendData: (d: Uint8Array[]) => { canSendMore: boolean } }; requests: () => number } {
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
  };
  return { conn: { maConn: ma } as unknown as Connection, ma, requests: () => requests };
}

const frame = (i: number): Uint8Array[] => [Uint8Array.of(0, 3), Uint8Array.of(i, i, i)];

test('the frames of one turn leave in one write request, in order', async () => {
  const p = await pair();
  try {
    const t = tcpConn(p.client);
    assert.equal(coalesceWrites(t.conn), true);
    assert.equal(coalesceWrites(t.conn), true, 'wrapping twice is once');
    for (let i = 0; i < 10; i++) t.ma.sendData(frame(i));
    assert.equal(t.requests(), 0, 'nothing leaves before the turn ends');
    await new Promise((r) => setImmediate(r));
    assert.equal(t.requests(), 1, '20 buffers, one request');
    // the next turn's frames are a request of their own
    for (let i = 10; i < 13; i++) t.ma.sendData(frame(i));
    await new Promise((r) => setImmediate(r));
    assert.equal(t.requests(), 2);
    const want = Buffer.concat(Array.from({ length: 13 }, (_, i) => Buffer.concat(frame(i))));
    const end = Date.now() + 2000;
    while (p.received().length < want.length && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(p.received(), want);
  } finally {
    p.close();
  }
});

test('without it, each buffer is a request of its own (what it saves)', async () => {
  const p = await pair();
  try {
    const t = tcpConn(p.client);
    for (let i = 0; i < 10; i++) t.ma.sendData(frame(i));
    await new Promise((r) => setImmediate(r));
    assert.ok(t.requests() >= 10, `${t.requests()} requests`);
  } finally {
    p.close();
  }
});

test('backpressure is the transport’s: false above the high-water mark, then drain', async () => {
  const p = await pair();
  try {
    const t = tcpConn(p.client);
    coalesceWrites(t.conn);
    const big = new Uint8Array(p.client.writableHighWaterMark + 1);
    assert.equal(t.ma.sendData([Uint8Array.of(1)]).canSendMore, true);
    assert.equal(t.ma.sendData([big]).canSendMore, false);
    await once(p.client, 'drain');
  } finally {
    p.close();
  }
});

test('a connection that is not TCP is left alone', () => {
  assert.equal(coalesceWrites({} as Connection), false);
  const ma = { socket: {}, sendData: () => undefined };
  assert.equal(coalesceWrites({ maConn: ma } as unknown as Connection), false);
  assert.equal(coalesceWrites({ maConn: { socket: new Socket() } } as unknown as Connection), false, 'no sendData');
});
