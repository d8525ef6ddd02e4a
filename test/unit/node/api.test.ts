/** The control API: a real HTTP server on 127.0.0.1:0 with bearer-token auth, /metrics, errors and NDJSON streams. */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Counter, Registry } from 'prom-client';
import { C0Error } from '../../../src/errors.js';
import { TOKEN_FILE, apiCall, apiStream, ensureToken, isLoopback, splitHostPort, startApi, type ApiServer, type Route } from '../../../src/node/api.js';
import { silentLogger, type Logger } from '../../../src/util/log.js';

const TOKEN = 'test-token-0123456789';

/** A real pino logger writing to a stream the test reads (level 40 is warn). */
function capturingLogger(): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) }) as unknown as Logger;
  return { log, lines };
}

async function rejectsCode(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof C0Error && e.code === code);
}

describe('control API', () => {
  let api: ApiServer;
  let base: string;
  const registry = new Registry();
  const counter = new Counter({ name: 'c0mpute_test_jobs_total', help: 'jobs by outcome', labelNames: ['outcome'], registers: [registry] });
  counter.inc({ outcome: 'completed' }, 3);
  const { log, lines } = capturingLogger();

  const routes: Route[] = [
    { method: 'GET', path: '/v1/status', handler: async () => ({ ok: true, peers: 2 }) },
    { method: 'GET', path: '/v1/offers/:job', handler: async (req) => ({ job: req.params.job, limit: req.query.get('limit') }) },
    { method: 'POST', path: '/v1/echo', handler: async (req) => ({ got: req.body }) },
    {
      method: 'GET',
      path: '/v1/fail/:code',
      handler: async (req) => {
        throw new C0Error(req.params.code!, 'refused', { field: 'x' });
      },
    },
    {
      method: 'GET',
      path: '/v1/crash',
      handler: async () => {
        throw new Error('bug');
      },
    },
    {
      method: 'POST',
      path: '/v1/run',
      handler: async (req, res) => {
        const s = res.stream();
        const n = (req.body as { n: number }).n;
        for (let i = 0; i < n; i++) s.send({ e: 'progress', i });
        return { done: n };
      },
    },
    {
      method: 'POST',
      path: '/v1/run-fail',
      handler: async (_req, res) => {
        res.stream().send({ e: 'progress', i: 0 });
        throw new C0Error('RUN_NO_ELIGIBLE', 'nobody');
      },
    },
  ];

  before(async () => {
    api = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes, registry, log });
    base = api.address;
  });
  after(async () => {
    await api.close();
  });

  test('binds to a free port on 127.0.0.1 and does not warn', () => {
    assert.match(base, /^127\.0\.0\.1:[0-9]+$/);
    assert.notEqual(splitHostPort(base).port, 0);
    assert.equal(
      lines.some((l) => l.level === 40),
      false,
    );
  });

  test('a missing or wrong token is 401 UNAUTHORIZED', async () => {
    const none = await fetch(`http://${base}/v1/status`);
    assert.equal(none.status, 401);
    assert.equal(((await none.json()) as { error: { code: string } }).error.code, 'UNAUTHORIZED');
    for (const auth of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}X`, TOKEN, `bearer ${TOKEN}`, 'Bearer ']) {
      const r = await fetch(`http://${base}/v1/status`, { headers: { authorization: auth } });
      assert.equal(r.status, 401, auth);
      await r.body?.cancel();
    }
    await rejectsCode(apiCall(base, 'wrong', 'GET', '/v1/status'), 'UNAUTHORIZED');
    // Unknown routes are behind the token too: no route discovery without it.
    assert.equal((await fetch(`http://${base}/v1/nope`)).status, 401);
  });

  test('the right token gets 200 JSON', async () => {
    const r = await fetch(`http://${base}/v1/status`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    assert.deepEqual(await r.json(), { ok: true, peers: 2 });
    assert.deepEqual(await apiCall(base, TOKEN, 'GET', '/v1/offers/sha256%3Aab?limit=5'), { job: 'sha256:ab', limit: '5' });
    assert.deepEqual(await apiCall(base, TOKEN, 'POST', '/v1/echo', { a: [1, 'two'] }), { got: { a: [1, 'two'] } });
  });

  test('unknown route is 404 NOT_FOUND; a body that is not JSON is 400 BODY_NOT_JSON', async () => {
    await rejectsCode(apiCall(base, TOKEN, 'GET', '/v1/nope'), 'NOT_FOUND');
    const r = await fetch(`http://${base}/v1/echo`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: '{not json' });
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'BODY_NOT_JSON');
  });

  test('a malformed percent-encoded path parameter is a 400, and the server keeps serving', async () => {
    const r = await fetch(`http://${base}/v1/offers/%E0%A4%A`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'PATH_MALFORMED');
    assert.deepEqual(await apiCall(base, TOKEN, 'GET', '/v1/status'), { ok: true, peers: 2 });
  });

  test('/metrics is served without a token, in Prometheus text format', async () => {
    const r = await fetch(`http://${base}/metrics`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await r.text();
    assert.match(text, /# TYPE c0mpute_test_jobs_total counter/);
    assert.match(text, /c0mpute_test_jobs_total\{outcome="completed"\} 3/);
  });

  test('a handler throwing a C0Error is a 400 with its code and field; *_NOT_FOUND is a 404; other errors are 500 INTERNAL', async () => {
    const r = await fetch(`http://${base}/v1/fail/JOB_INVALID`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(r.status, 400);
    const body = (await r.json()) as { error: { code: string; field?: string } };
    assert.equal(body.error.code, 'JOB_INVALID');
    assert.equal(body.error.field, 'x');
    assert.equal((await fetch(`http://${base}/v1/fail/RECORD_NOT_FOUND`, { headers: { authorization: `Bearer ${TOKEN}` } })).status, 404);
    await rejectsCode(apiCall(base, TOKEN, 'GET', '/v1/fail/JOB_INVALID'), 'JOB_INVALID');
    const crash = await fetch(`http://${base}/v1/crash`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(crash.status, 500);
    assert.equal(((await crash.json()) as { error: { code: string } }).error.code, 'INTERNAL');
  });

  test('an NDJSON streaming route works with apiStream: events, then the result', async () => {
    const events = [];
    for await (const ev of apiStream(base, TOKEN, '/v1/run', { n: 3 })) events.push(ev);
    assert.deepEqual(events, [{ e: 'progress', i: 0 }, { e: 'progress', i: 1 }, { e: 'progress', i: 2 }, { e: 'result', result: { done: 3 } }]);
  });

  test('an error after streaming started arrives as an error event', async () => {
    const events = [];
    for await (const ev of apiStream(base, TOKEN, '/v1/run-fail', {})) events.push(ev);
    assert.equal(events.length, 2);
    assert.deepEqual(events[0], { e: 'progress', i: 0 });
    assert.equal((events[1] as { e: string; error: { code: string } }).e, 'error');
    assert.equal((events[1] as { error: { code: string } }).error.code, 'RUN_NO_ELIGIBLE');
  });

  test('apiStream with a wrong token fails with UNAUTHORIZED; an unreachable daemon is DAEMON_UNREACHABLE', async () => {
    await rejectsCode(
      (async () => {
        for await (const _ of apiStream(base, 'nope', '/v1/run', { n: 1 })) void _;
      })(),
      'UNAUTHORIZED',
    );
    const tmp = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes: [], registry: new Registry(), log: silentLogger() });
    const gone = tmp.address;
    await tmp.close();
    await rejectsCode(apiCall(gone, TOKEN, 'GET', '/v1/status'), 'DAEMON_UNREACHABLE');
  });
});

describe('api token and listen address', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'c0-api-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('ensureToken writes a 0600 file and returns the same token on a second call', () => {
    const t1 = ensureToken(dir);
    assert.ok(t1.length >= 32);
    const p = join(dir, TOKEN_FILE);
    assert.equal(statSync(p).mode & 0o777, 0o600);
    assert.equal(readFileSync(p, 'utf8').trim(), t1);
    assert.equal(ensureToken(dir), t1);
    const other = mkdtempSync(join(tmpdir(), 'c0-api-'));
    try {
      assert.notEqual(ensureToken(other), t1);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });

  test('an empty token file is replaced by a fresh token (an empty token would let "Bearer " in)', () => {
    const d = mkdtempSync(join(tmpdir(), 'c0-api-'));
    try {
      writeFileSync(join(d, TOKEN_FILE), '\n', { mode: 0o600 });
      const t = ensureToken(d);
      assert.ok(t.length >= 32);
      assert.equal(ensureToken(d), t);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  test('isLoopback and splitHostPort', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]']) assert.equal(isLoopback(h), true, h);
    for (const h of ['0.0.0.0', '10.0.0.1', '::', 'example.com', '128.0.0.1']) assert.equal(isLoopback(h), false, h);
    assert.deepEqual(splitHostPort('127.0.0.1:7070'), { host: '127.0.0.1', port: 7070 });
    assert.deepEqual(splitHostPort('[::1]:0'), { host: '::1', port: 0 });
  });

  test('a non-loopback listen address logs a warning; a loopback one does not', async () => {
    const wide = capturingLogger();
    const s = await startApi({ listen: '0.0.0.0:0', token: TOKEN, routes: [], registry: new Registry(), log: wide.log });
    await s.close();
    const warns = wide.lines.filter((l) => l.level === 40);
    assert.equal(warns.length, 1);
    assert.equal(warns[0]!.listen, '0.0.0.0:0');

    const narrow = capturingLogger();
    const s2 = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes: [], registry: new Registry(), log: narrow.log });
    await s2.close();
    assert.equal(narrow.lines.filter((l) => l.level === 40).length, 0);
  });

  test('a port already in use is API_LISTEN_FAILED', async () => {
    const s = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes: [], registry: new Registry(), log: silentLogger() });
    try {
      await rejectsCode(startApi({ listen: s.address, token: TOKEN, routes: [], registry: new Registry(), log: silentLogger() }), 'API_LISTEN_FAILED');
    } finally {
      await s.close();
    }
  });
});
