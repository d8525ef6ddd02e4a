/**
 * The control API's share of the daemon's file handles (src/node/api.ts API_MAX_CONNECTIONS, API_HEADERS_TIMEOUT_MS;
 * docs/node.md "Control API"): at most maxConnections open at once, a further one closed at once and a warning logged,
 * and a client that does not finish its headers is closed after the headers timeout. Before, there was no bound and
 * Node's 60 s headers timeout: a local process holding 20,000 slow connections took every handle the daemon had, and
 * the API, the CLI and new libp2p peers were refused (review s40). Real HTTP server, real sockets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { request as httpRequest } from 'node:http';
import { Registry } from 'prom-client';
import { splitHostPort, startApi } from '../../../src/node/api.js';
import { silentLogger, type Logger } from '../../../src/util/log.js';

const TOKEN = 'test-token-0123456789';

function open(address: string): Promise<Socket> {
  const { host, port } = splitHostPort(address);
  return new Promise((resolve, reject) => {
    const s = connect({ host, port }, () => resolve(s));
    s.on('error', reject);
  });
}

/** Resolves when the server closes `s` (or its connection fails); the test's own give-up is node:test's timeout. */
const closed = (s: Socket): Promise<void> => new Promise((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));

/** One GET on a connection of its own: its status, or 0 when the connection was closed or reset. */
function status(address: string): Promise<number> {
  const { host, port } = splitHostPort(address);
  return new Promise((resolve) => {
    const r = httpRequest({ host, port, path: '/v1/nothing', headers: { authorization: `Bearer ${TOKEN}` }, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    r.on('error', () => resolve(0));
    r.end();
  });
}

test('connections past maxConnections are closed at once and warned of; the API answers again once they go', { timeout: 30_000 }, async () => {
  const warned: unknown[] = [];
  const log = { ...silentLogger(), warn: (o: unknown) => void warned.push(o) } as unknown as Logger;
  const s = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes: [], registry: new Registry(), log, maxConnections: 3, headersTimeoutMs: 60_000 });
  const held: Socket[] = [];
  try {
    for (let i = 0; i < 3; i++) held.push(await open(s.address));
    const extra = await open(s.address);
    await closed(extra);
    assert.equal(await status(s.address), 0, 'a request is refused while every connection is held');
    assert.equal((warned[0] as { code?: string } | undefined)?.code, 'API_CONNECTIONS_FULL');
    assert.equal(warned.length, 1, 'warned once, not per connection');
    for (const h of held) h.destroy();
    await Promise.all(held.map(closed));
    // the server hears the closes after this side: ask until it has room again
    let answered = 0;
    for (let i = 0; i < 100 && answered === 0; i++) {
      answered = await status(s.address);
      if (answered === 0) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(answered, 404, 'answered again (an unknown route)');
  } finally {
    for (const h of held) h.destroy();
    await s.close();
  }
});

test('a client that does not finish its headers is closed after the headers timeout', { timeout: 30_000 }, async () => {
  const s = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes: [], registry: new Registry(), log: silentLogger(), headersTimeoutMs: 300 });
  try {
    const slow = await open(s.address);
    slow.write('GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n'); // and never the blank line
    let answer = '';
    slow.on('data', (d: Buffer) => (answer += d.toString()));
    await closed(slow);
    assert.match(answer, /^HTTP\/1\.1 408/, 'closed with 408 Request Timeout');
  } finally {
    await s.close();
  }
});

test('a request without the token is answered and its connection closed; one with it keeps the connection open', { timeout: 30_000 }, async () => {
  const s = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes: [], registry: new Registry(), log: silentLogger() });
  const { host, port } = splitHostPort(s.address);
  const ask = (headers: Record<string, string>, path = '/v1/nothing'): Promise<{ status: number; connection: string | undefined; closed: Promise<void> }> =>
    new Promise((resolve, reject) => {
      const sock = connect({ host, port }, () => {
        sock.write(`GET ${path} HTTP/1.1\r\nHost: ${s.address}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`);
      });
      let text = '';
      sock.on('data', (d: Buffer) => {
        text += d.toString();
        const head = text.split('\r\n\r\n')[0]!;
        if (!text.includes('\r\n\r\n')) return;
        const status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0);
        const connection = /\r\nconnection: ([^\r]+)/i.exec(head)?.[1]?.toLowerCase();
        resolve({ status, connection, closed: closed(sock) });
      });
      sock.on('error', reject);
      setTimeout(() => sock.destroy(), 5_000).unref();
    });
  try {
    const refused = await ask({});
    assert.equal(refused.status, 401);
    assert.equal(refused.connection, 'close');
    await refused.closed; // the server closed it
    const metrics = await ask({}, '/metrics');
    assert.equal(metrics.status, 200, '/metrics is open on loopback without the token');
    assert.equal(metrics.connection, 'close', 'but its connection is not kept');
    const ok = await ask({ authorization: `Bearer ${TOKEN}` });
    assert.equal(ok.status, 404);
    assert.equal(ok.connection, 'keep-alive');
  } finally {
    await s.close();
  }
});
