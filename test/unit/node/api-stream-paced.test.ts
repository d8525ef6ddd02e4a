/**
 * A streamed answer of many events (`GET /v1/jobs/:job/records`, ApiStream.paced) waits while its client is behind and
 * stops once the client left: before, the route wrote every event whether or not anyone read, so a stalled
 * `market export` (or a token holder that never read) made the daemon buffer the whole export (four stalled clients
 * of a ~70 MB export: heap 93 → 442 MB), and the route ran to its end after the client had gone.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Registry } from 'prom-client';
import { API_CLIENT_GONE, splitHostPort, startApi, type Route } from '../../../src/node/api.js';
import { C0Error } from '../../../src/errors.js';
import { silentLogger } from '../../../src/util/log.js';

const TOKEN = 'test-token-0123456789';
const EVENTS = 100_000;
const PAD = 'x'.repeat(1024);

function open(base: string, path: string): Promise<{ req: ClientRequest; res: IncomingMessage }> {
  const { host, port } = splitHostPort(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host, port, path, headers: { authorization: `Bearer ${TOKEN}` } }, (res) => resolve({ req, res }));
    req.on('error', reject);
    req.end();
  });
}

const until = async (cond: () => boolean, what: string) => {
  for (let i = 0; i < 600 && !cond(); i++) await new Promise((ok) => setTimeout(ok, 50));
  assert.ok(cond(), what);
};

/** A route streaming EVENTS padded records with `paced`: how many went, how it ended, and whether it has. */
function bigRoute() {
  const run = { sent: 0, ended: undefined as unknown, settled: false };
  const route: Route = {
    method: 'GET',
    path: '/v1/big',
    handler: async (_req, res) => {
      const s = res.stream();
      try {
        for (let i = 0; i < EVENTS; i++) {
          await s.paced({ e: 'record', i, pad: PAD });
          run.sent++;
        }
        return { sent: run.sent };
      } catch (e) {
        run.ended = e;
        throw e;
      } finally {
        run.settled = true;
      }
    },
  };
  return { run, routes: [route] };
}

test('a client that stops reading holds the route, not the whole answer; once it leaves, the route stops with API_CLIENT_GONE', async () => {
  const { run, routes } = bigRoute();
  const s = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes, registry: new Registry(), log: silentLogger() });
  try {
    const { req, res } = await open(s.address, '/v1/big');
    assert.equal(res.statusCode, 200);
    res.pause();
    // the route writes until the socket's buffers are full, then waits: the count stops well short of the end
    await until(() => run.sent > 0, 'the route started');
    let last = -1;
    await until(() => {
      const still = run.sent === last;
      last = run.sent;
      return still;
    }, 'the route waits for the client');
    assert.ok(run.sent < EVENTS / 4, `sent ${run.sent} of ${EVENTS} (~${Math.round((run.sent * PAD.length) / 1e6)} MB) to a client that read nothing`);
    assert.equal(run.settled, false, 'the route is still waiting, not finished');
    const held = run.sent;
    req.destroy();
    await until(() => run.settled, 'the route ended once the client left');
    assert.ok(run.ended instanceof C0Error && run.ended.code === API_CLIENT_GONE, String(run.ended));
    assert.ok(run.sent <= held + 1, `nothing more was produced after the client left (${held} → ${run.sent})`);
  } finally {
    await s.close();
  }
});

test('a client that reads gets every event, then the result', async () => {
  const routes: Route[] = [
    {
      method: 'GET',
      path: '/v1/some',
      handler: async (_req, res) => {
        const s = res.stream();
        for (let i = 0; i < 5_000; i++) await s.paced({ e: 'record', i, pad: PAD });
        return { sent: 5_000 };
      },
    },
  ];
  const s = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes, registry: new Registry(), log: silentLogger() });
  try {
    const { res } = await open(s.address, '/v1/some');
    let text = '';
    res.setEncoding('utf8').on('data', (d: string) => (text += d));
    await new Promise((ok) => res.on('end', ok));
    const lines = text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { e: string; i?: number; result?: { sent: number } });
    assert.equal(lines.filter((l) => l.e === 'record').length, 5_000);
    assert.deepEqual(lines.at(-1), { e: 'result', result: { sent: 5_000 } });
  } finally {
    await s.close();
  }
});

test('a client that keeps its connection open and reads nothing is given up after the idle limit: API_CLIENT_GONE, its connection closed', async () => {
  const { run, routes } = bigRoute();
  const s = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes, registry: new Registry(), log: silentLogger(), streamReadIdleMs: 300 });
  try {
    const { res } = await open(s.address, '/v1/big');
    res.pause();
    await until(() => run.settled, 'the route gave the silent client up');
    assert.ok(run.ended instanceof C0Error && run.ended.code === API_CLIENT_GONE, String(run.ended));
  } finally {
    await s.close();
  }
});
