/**
 * The CLI's side of the control API: an answer that is not the daemon's JSON (another server on its port) is
 * DAEMON_BAD_ANSWER, and a stream that breaks while the daemon answers (it stopped mid-run) is DAEMON_STREAM_LOST,
 * both operator errors (exit 3), never a bug (exit 70).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { apiCall, apiStream } from '../../../src/node/api-client.js';

async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ server: Server; base: string }> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, base: `127.0.0.1:${(server.address() as AddressInfo).port}` };
}

test('another server on the daemon’s port: DAEMON_BAD_ANSWER, for a call and for a stream', async () => {
  const { server, base } = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>Directory listing</title>');
  });
  try {
    await assert.rejects(apiCall(base, 't', 'GET', '/v1/status'), { code: 'DAEMON_BAD_ANSWER' });
    await assert.rejects(async () => {
      for await (const _ of apiStream(base, 't', '/v1/jobs', {})) void _;
    }, { code: 'DAEMON_BAD_ANSWER' });
  } finally {
    server.close();
  }
});

test('a daemon that stops while it streams: the events so far, then DAEMON_STREAM_LOST', async () => {
  const { server, base } = await serve((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write('{"e":"published"}\n');
    setTimeout(() => res.socket?.destroy(), 50);
  });
  try {
    const seen: unknown[] = [];
    await assert.rejects(async () => {
      for await (const ev of apiStream(base, 't', '/v1/jobs', {})) seen.push(ev);
    }, { code: 'DAEMON_STREAM_LOST' });
    assert.deepEqual(seen, [{ e: 'published' }]);
  } finally {
    server.close();
  }
});

test('a caller that stops reading early closes the answer: the daemon sees it leave', async () => {
  let left = false;
  const { server, base } = await serve((req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    const t = setInterval(() => res.write('{"e":"progress"}\n'), 20);
    res.on('close', () => {
      left = true;
      clearInterval(t);
    });
    void req;
  });
  try {
    for await (const ev of apiStream(base, 't', '/v1/jobs', {})) {
      assert.deepEqual(ev, { e: 'progress' });
      break;
    }
    const end = Date.now() + 5_000;
    while (!left && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    assert.ok(left, 'the server saw the client leave');
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
