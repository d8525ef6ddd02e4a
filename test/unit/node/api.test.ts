/** The control API: a real HTTP server on 127.0.0.1:0 with bearer-token auth, Host/Origin checks, /metrics, errors and NDJSON streams. */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, readFileSync, writeFileSync } from 'node:fs';
import { rawGet } from '../../raw-http.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { Counter, Registry } from 'prom-client';
import { C0Error } from '../../../src/errors.js';
import { TOKEN_FILE, apiCall, apiStream, ensureToken, isLoopback, splitHostPort, startApi, type ApiServer, type Route } from '../../../src/node/api.js';
import { bearerMatches, checkBrowserHeaders, hostPolicy } from '../../../src/node/api-guard.js';
import { silentLogger, type Logger } from '../../../src/util/log.js';

const TOKEN = 'test-token-0123456789';

/** A real pino logger writing to a stream the test reads (level 40 is warn). */
function capturingLogger(): { log: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) }) as unknown as Logger;
  return { log, lines };
}

const errCode = (body: string): string | undefined => (JSON.parse(body) as { error?: { code?: string } }).error?.code;

async function rejectsCode(p: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(p, (e: unknown) => e instanceof C0Error && e.code === code);
}

describe('control API', () => {
  // /v1/run-quiet says nothing until the test lets it
  let releaseQuiet!: () => void;
  const quiet = new Promise<void>((r) => (releaseQuiet = r));
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
      path: '/v1/run-quiet',
      handler: async (_req, res) => {
        const s = res.stream();
        await quiet;
        s.send({ e: 'progress', i: 0 });
        return { done: 1 };
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
    for (const auth of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}X`, TOKEN, `Basic ${TOKEN}`, `Bearer${TOKEN}`, 'Bearer ', 'bearer']) {
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

  test('the Authorization scheme is case-insensitive (RFC 9110): bearer, BEARER, BeArEr', async () => {
    for (const scheme of ['bearer', 'BEARER', 'BeArEr', 'Bearer']) {
      const r = await fetch(`http://${base}/v1/status`, { headers: { authorization: `${scheme} ${TOKEN}` } });
      assert.equal(r.status, 200, scheme);
      await r.body?.cancel();
    }
  });

  test('a Host that does not name this API is 403 API_HOST_REFUSED, /metrics included (DNS rebinding)', async () => {
    const { port } = splitHostPort(base);
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const host of [`evil.example:${port}`, `evil.example`, `127.0.0.1:${port + 1}`, `localhost.evil.example:${port}`, `0.0.0.0:${port}`, `10.0.0.1:${port}`]) {
      for (const path of ['/v1/status', '/metrics']) {
        const r = await rawGet(base, path, { ...auth, host });
        assert.equal(r.status, 403, `${host} ${path}`);
        assert.equal(errCode(r.body), 'API_HOST_REFUSED', `${host} ${path}`);
      }
    }
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`]) {
      assert.equal((await rawGet(base, '/v1/status', { ...auth, host })).status, 200, host);
    }
  });

  test('a foreign Origin is 403 API_ORIGIN_REFUSED; the API’s own origin is served', async () => {
    const { port } = splitHostPort(base);
    const auth = { authorization: `Bearer ${TOKEN}` };
    for (const origin of ['http://evil.example', `http://evil.example:${port}`, 'null', `https://127.0.0.1:${port}`, `http://127.0.0.1:${port + 1}`, 'not a url']) {
      for (const path of ['/v1/status', '/metrics']) {
        const r = await rawGet(base, path, { ...auth, origin });
        assert.equal(r.status, 403, `${origin} ${path}`);
        assert.equal(errCode(r.body), 'API_ORIGIN_REFUSED', `${origin} ${path}`);
      }
    }
    for (const origin of [`http://127.0.0.1:${port}`, `http://localhost:${port}`]) assert.equal((await rawGet(base, '/v1/status', { ...auth, origin })).status, 200, origin);
  });

  test('unknown route is 404 NOT_FOUND; a body that is not JSON is 400 BODY_NOT_JSON', async () => {
    await rejectsCode(apiCall(base, TOKEN, 'GET', '/v1/nope'), 'NOT_FOUND');
    const r = await fetch(`http://${base}/v1/echo`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: '{not json' });
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'BODY_NOT_JSON');
  });

  test('a known path with another method is 405 METHOD_NOT_ALLOWED naming the methods in Allow; HEAD is GET without the body; `//v1/status` is that path', async () => {
    const auth = { authorization: `Bearer ${TOKEN}` };
    const post = await fetch(`http://${base}/v1/status`, { method: 'POST', headers: auth, body: '{}' });
    assert.equal(post.status, 405);
    assert.equal(post.headers.get('allow'), 'GET, HEAD');
    assert.equal(((await post.json()) as { error: { code: string } }).error.code, 'METHOD_NOT_ALLOWED');
    const get = await fetch(`http://${base}/v1/echo`, { headers: auth });
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    await get.body?.cancel();
    const del = await fetch(`http://${base}/v1/offers/j1`, { method: 'DELETE', headers: auth });
    assert.equal(del.status, 405);
    await del.body?.cancel();
    const head = await fetch(`http://${base}/v1/status`, { method: 'HEAD', headers: auth });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'application/json');
    assert.equal(await head.text(), '');
    // without the token, neither the method nor the route is told
    assert.equal((await fetch(`http://${base}/v1/status`, { method: 'POST', body: '{}' })).status, 401);
    const doubled = await rawGet(base, '//v1/status', auth);
    assert.equal(doubled.status, 404);
    assert.match(doubled.body, /no route GET \/\/v1\/status/);
  });

  test('a malformed percent-encoded path parameter is a 400, and the server keeps serving', async () => {
    const r = await fetch(`http://${base}/v1/offers/%E0%A4%A`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(r.status, 400);
    assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'PATH_MALFORMED');
    assert.deepEqual(await apiCall(base, TOKEN, 'GET', '/v1/status'), { ok: true, peers: 2 });
  });

  test('/metrics is served without a token on loopback, in Prometheus text format', async () => {
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

  test('a stream sends its headers as it starts, before its first event (the CLI waits only so long for them)', { timeout: 20_000 }, async () => {
    // headers held back until the first event would leave this fetch waiting for ever: the event comes only once it resolved
    const r = await fetch(`http://${base}/v1/run-quiet`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: '{}' });
    assert.equal(r.status, 200);
    assert.equal(r.headers.get('content-type'), 'application/x-ndjson');
    releaseQuiet();
    assert.deepEqual((await r.text()).trim().split('\n').map((l) => JSON.parse(l) as unknown), [{ e: 'progress', i: 0 }, { e: 'result', result: { done: 1 } }]);
  });

  test('a quiet stream sends an empty line every streamHeartbeatMs (a client times out a silent body: fetch after 300 s), and apiStream skips it', { timeout: 20_000 }, async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const quietApi = await startApi({
      listen: '127.0.0.1:0',
      token: TOKEN,
      registry,
      log: silentLogger(),
      streamHeartbeatMs: 20,
      routes: [{ method: 'POST', path: '/v1/run', handler: async (_req, res) => void (res.stream(), await held) }],
    });
    try {
      const r = await fetch(`http://${quietApi.address}/v1/run`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: '{}' });
      const reader = r.body!.getReader();
      let got = '';
      while ((got.match(/\n/g) ?? []).length < 3) got += new TextDecoder().decode((await reader.read()).value);
      assert.equal(got.trim(), '', 'only empty lines while nothing happens');
      await reader.cancel();
      const events = [];
      const s = apiStream(quietApi.address, TOKEN, '/v1/run', {});
      setTimeout(release, 100);
      for await (const ev of s) events.push(ev);
      assert.deepEqual(events, []);
    } finally {
      await quietApi.close();
    }
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

  test('a directory in the place of the token file is API_TOKEN_UNREADABLE whatever its mode, not API_TOKEN_PERMISSIONS nor EISDIR (QA qaOps F6)', () => {
    const d = mkdtempSync(join(tmpdir(), 'c0-api-'));
    try {
      mkdirSync(join(d, TOKEN_FILE), { mode: 0o700 });
      for (const mode of [0o755, 0o700]) {
        chmodSync(join(d, TOKEN_FILE), mode);
        assert.throws(() => ensureToken(d), (e: unknown) => e instanceof C0Error && e.code === 'API_TOKEN_UNREADABLE' && /not a regular file \(a directory\)/.test(e.message) && !/chmod/.test(e.message));
      }
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  test('a token file that group or others can read is refused: API_TOKEN_PERMISSIONS naming the file and chmod 600', () => {
    for (const mode of [0o644, 0o640, 0o604]) {
      const d = mkdtempSync(join(tmpdir(), 'c0-api-'));
      try {
        const p = join(d, TOKEN_FILE);
        writeFileSync(p, 'a-token-that-others-can-read\n');
        chmodSync(p, mode);
        assert.throws(
          () => ensureToken(d),
          (e: unknown) => e instanceof C0Error && e.code === 'API_TOKEN_PERMISSIONS' && e.message.includes(p) && e.message.includes('chmod 600'),
          mode.toString(8),
        );
        // nothing was changed: the file and its mode stay as they were
        assert.equal(statSync(p).mode & 0o777, mode);
        assert.equal(readFileSync(p, 'utf8'), 'a-token-that-others-can-read\n');
      } finally {
        rmSync(d, { recursive: true, force: true });
      }
    }
  });

  test('isLoopback and splitHostPort', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]']) assert.equal(isLoopback(h), true, h);
    for (const h of ['0.0.0.0', '10.0.0.1', '::', 'example.com', '128.0.0.1']) assert.equal(isLoopback(h), false, h);
    assert.deepEqual(splitHostPort('127.0.0.1:7070'), { host: '127.0.0.1', port: 7070 });
    assert.deepEqual(splitHostPort('[::1]:0'), { host: '::1', port: 0 });
  });

  test('a non-loopback listen address logs a warning saying /metrics needs the token; a loopback one does not', async () => {
    const wide = capturingLogger();
    const s = await startApi({ listen: '0.0.0.0:0', token: TOKEN, routes: [], registry: new Registry(), log: wide.log });
    await s.close();
    const warns = wide.lines.filter((l) => l.level === 40);
    assert.equal(warns.length, 1);
    assert.equal(warns[0]!.listen, '0.0.0.0:0');
    assert.match(String(warns[0]!.msg), /\/metrics/);

    const narrow = capturingLogger();
    const s2 = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes: [], registry: new Registry(), log: narrow.log });
    await s2.close();
    assert.equal(narrow.lines.filter((l) => l.level === 40).length, 0);
  });

  test('bound off loopback, /metrics needs the token; any IP literal with the port is a valid Host, a DNS name only when configured', async () => {
    const reg = new Registry();
    new Counter({ name: 'c0mpute_test_wide_total', help: 'x', registers: [reg] }).inc();
    const s = await startApi({ listen: '0.0.0.0:0', token: TOKEN, routes: [], registry: reg, log: silentLogger(), hosts: ['node.example.org'] });
    try {
      const port = splitHostPort(s.address).port;
      const local = `127.0.0.1:${port}`;
      const none = await rawGet(local, '/metrics', {});
      assert.equal(none.status, 401);
      assert.equal(errCode(none.body), 'UNAUTHORIZED');
      const ok = await rawGet(local, '/metrics', { authorization: `bearer ${TOKEN}` });
      assert.equal(ok.status, 200);
      assert.match(ok.body, /c0mpute_test_wide_total 1/);
      for (const host of [`10.1.2.3:${port}`, `[fe80::1]:${port}`, `node.example.org:${port}`, `NODE.example.org:${port}`]) {
        assert.equal((await rawGet(local, '/metrics', { host, authorization: `Bearer ${TOKEN}` })).status, 200, host);
      }
      for (const host of [`evil.example:${port}`, `10.1.2.3:${port + 1}`, `node.example.org:${port + 1}`]) {
        assert.equal(errCode((await rawGet(local, '/metrics', { host, authorization: `Bearer ${TOKEN}` })).body), 'API_HOST_REFUSED', host);
      }
    } finally {
      await s.close();
    }
  });

  test('hostPolicy, checkBrowserHeaders and bearerMatches (pure)', () => {
    const p = hostPolicy('127.0.0.1', 7070, ['box.lan', 'proxy.lan:8443']);
    assert.deepEqual([...p.names].sort(), ['127.0.0.1:7070', '[::1]:7070', 'box.lan:7070', 'localhost:7070', 'proxy.lan:8443']);
    assert.equal(p.anyIpPort, undefined);
    assert.equal(checkBrowserHeaders('box.lan:7070', undefined, p), undefined);
    assert.equal(checkBrowserHeaders(undefined, undefined, p)?.code, 'API_HOST_REFUSED');
    assert.equal(checkBrowserHeaders('127.0.0.1:7070', 'http://box.lan:7070', p), undefined);
    assert.equal(checkBrowserHeaders('127.0.0.1:7070', 'http://box.lan:7070/x', p)?.code, 'API_ORIGIN_REFUSED');
    assert.ok(hostPolicy('127.0.0.1', 80).names.has('localhost'), 'port 80 may be left out');
    assert.equal(hostPolicy('::', 9).anyIpPort, 9);
    assert.equal(bearerMatches(`bearer  ${TOKEN}`, TOKEN), true);
    assert.equal(bearerMatches(`Bearer ${TOKEN}`, ''), false);
    assert.equal(bearerMatches(undefined, TOKEN), false);
    assert.equal(bearerMatches(`Token ${TOKEN}`, TOKEN), false);
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
