/**
 * The console's login model (src/node/console-session.ts, console-routes.ts;
 * docs/console.md "Logging in"): one-time codes, session expiry with a fake
 * clock, and, on a real HTTP server, the cookie as a credential only together
 * with the session's key in the console header (a replayed cookie alone opens
 * nothing), the login page for anyone without a session, and the Origin check
 * still in front of it all.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { Registry } from 'prom-client';
import { ConsoleSessions, cookieValues, SESSION_DEFAULTS } from '../../../src/node/console-session.js';
import { consoleGate } from '../../../src/node/console-routes.js';
import type { ConsoleHub } from '../../../src/node/console-hub.js';
import type { Daemon } from '../../../src/node/daemon.js';
import { splitHostPort, startApi, type ApiServer } from '../../../src/node/api.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';

describe('console sessions (pure)', () => {
  test('a code works once, and not after it expires', () => {
    const clock = fakeClock();
    const s = new ConsoleSessions(clock);
    const a = s.mintCode();
    assert.equal(a.expiresAt, clock() + SESSION_DEFAULTS.codeTtlMs);
    const got = s.redeem(a.code);
    assert.ok(got && s.valid(got.session));
    assert.ok(s.check(got.session, got.key), 'the session with its key');
    assert.equal(s.check(got.session, undefined), false);
    assert.equal(s.check(got.session, got.session), false, 'the session id is not its key');
    assert.equal(s.check(got.session, '1'), false);
    assert.equal(s.redeem(a.code), undefined, 'a code is single-use');
    const b = s.mintCode();
    clock.advance(SESSION_DEFAULTS.codeTtlMs);
    assert.equal(s.redeem(b.code), undefined, 'an expired code opens nothing');
    assert.equal(s.redeem('not-a-code'), undefined);
    assert.equal(s.redeem(null), undefined);
  });

  test('a session ends at its expiry and on logout', () => {
    const clock = fakeClock();
    const s = new ConsoleSessions(clock, { sessionTtlMs: 1000 });
    const one = s.redeem(s.mintCode().code)!;
    const two = s.redeem(s.mintCode().code)!;
    clock.advance(999);
    assert.ok(s.valid(one.session));
    s.end(two.session);
    assert.equal(s.valid(two.session), false);
    clock.advance(1);
    assert.equal(s.valid(one.session), false);
    assert.equal(s.valid(undefined), false);
    assert.equal(s.valid('x'.repeat(43)), false);
  });

  test('why a session is none: minted by an earlier process (a restart), expired here, or unknown', () => {
    const clock = fakeClock();
    const before = new ConsoleSessions(clock, { sessionTtlMs: 1000 });
    const old = before.redeem(before.mintCode().code)!;
    // the daemon restarted: a new process, its sessions in a new memory
    const s = new ConsoleSessions(clock, { sessionTtlMs: 1000 });
    assert.equal(s.valid(old.session), false);
    assert.equal(s.whyNot(old.session), 'restarted');
    const mine = s.redeem(s.mintCode().code)!;
    clock.advance(1000);
    assert.equal(s.valid(mine.session), false);
    assert.equal(s.whyNot(mine.session), 'expired');
    const ended = s.redeem(s.mintCode().code)!;
    s.end(ended.session);
    assert.equal(s.whyNot(ended.session), 'unknown', 'a logout is no restart');
    assert.equal(s.whyNot('not-a-session'), 'unknown');
  });

  test('codes and sessions are bounded: the oldest go first', () => {
    const s = new ConsoleSessions(fakeClock(), { max: 2 });
    const first = s.mintCode();
    s.mintCode();
    s.mintCode();
    assert.equal(s.redeem(first.code), undefined);
  });

  test('cookieValues reads every value of one cookie among several, in the order sent', () => {
    assert.deepEqual(cookieValues('a=1; c0_console_80=xyz; b=2', 'c0_console_80'), ['xyz']);
    assert.deepEqual(cookieValues('c0_console_80=x; a=1; c0_console_80=xyz', 'c0_console_80'), ['x', 'xyz']);
    assert.deepEqual(cookieValues('a=1', 'c0_console_80'), []);
    assert.deepEqual(cookieValues(undefined, 'a'), []);
  });
});

function raw(base: string, method: string, path: string, headers: Record<string, string>, body?: string): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  const { host, port } = splitHostPort(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host, port, path, method, headers }, (res) => {
      let b = '';
      res.setEncoding('utf8').on('data', (d: string) => (b += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('console gate on the control API', () => {
  let api: ApiServer;
  let base: string;
  let host: string;
  let cookieName: string;
  const clock = fakeClock();
  const sessions = new ConsoleSessions(clock);
  const hub = { listen: () => () => {} } as unknown as ConsoleHub;
  before(async () => {
    api = await startApi({
      listen: '127.0.0.1:0',
      token: 'tok-0123456789',
      registry: new Registry(),
      log: silentLogger(),
      console: consoleGate({ clock } as unknown as Daemon, sessions, hub, 'tok-0123456789'),
      routes: [
        { method: 'GET', path: '/v1/status', handler: async () => ({ ok: true }) },
        { method: 'POST', path: '/v1/echo', handler: async (r) => ({ got: r.body }) },
        { method: 'POST', path: '/v1/console/login', handler: async () => ({ path: '/ui/login?code=x' }) },
      ],
    });
    base = api.address;
    host = base;
    cookieName = `c0_console_${splitHostPort(base).port}`;
  });
  after(() => api.close());

  /** Log in with a fresh code: the cookie, and the key the redirect's fragment hands the page. */
  const loginKeyed = async () => {
    const r = await raw(base, 'GET', `/ui/login?code=${sessions.mintCode().code}`, { host });
    assert.equal(r.status, 303);
    const set = String(r.headers['set-cookie']);
    assert.match(set, /HttpOnly/);
    assert.match(set, /SameSite=Strict/);
    const key = /^\/ui\/#k=([A-Za-z0-9_-]{43})$/.exec(String(r.headers.location))?.[1];
    assert.ok(key, `the redirect carries the key in its fragment: ${r.headers.location}`);
    return { cookie: set.split(';')[0]!, key };
  };
  const login = async () => (await loginKeyed()).cookie;

  test('without a session: the login page (401), never the console', async () => {
    for (const p of ['/ui', '/ui/', '/ui/app.js', '/ui/login', '/ui/login?code=wrong']) {
      const r = await raw(base, 'GET', p, { host });
      assert.equal(r.status, 401, p);
      assert.match(r.body, /id="login"/, p);
    }
    assert.equal((await raw(base, 'GET', '/v1/status', { host })).status, 401);
    assert.equal((await raw(base, 'GET', '/v1/console/events', { host })).status, 401);
  });

  test("a page open across a daemon restart lands on the login page saying the daemon restarted, not that its session expired", async () => {
    // a session an earlier process of the daemon minted: same cookie name, well formed, unknown here
    const earlier = new ConsoleSessions(clock);
    const old = earlier.redeem(earlier.mintCode().code)!;
    const cookie = `${cookieName}=${old.session}`;
    for (const p of ['/ui/', '/ui/login']) {
      const r = await raw(base, 'GET', p, { host, cookie });
      assert.equal(r.status, 401, p);
      assert.match(r.body, /The node’s daemon restarted since this browser logged in: sessions live in its memory and end with it\./, p);
    }
    // a made-up value is not said to be a restart's
    assert.match((await raw(base, 'GET', '/ui/', { host, cookie: `${cookieName}=nonsense` })).body, /Your session has expired or is not valid here\./);
    assert.match((await raw(base, 'GET', '/ui/', { host })).body, /You are not logged in\./);
  });

  test('a code logs in once; the cookie with its key in the console header then reads and writes the API', async () => {
    const code = sessions.mintCode().code;
    const first = await raw(base, 'GET', `/ui/login?code=${code}`, { host });
    assert.equal(first.status, 303);
    assert.equal((await raw(base, 'GET', `/ui/login?code=${code}`, { host })).status, 401, 'the same code again');
    const cookie = String(first.headers['set-cookie']).split(';')[0]!;
    const key = String(first.headers.location).replace('/ui/#k=', '');
    assert.ok(cookie.startsWith(`${cookieName}=`));
    const keyed = { host, cookie, 'x-c0mpute-console': key };
    assert.equal((await raw(base, 'GET', '/v1/status', keyed)).status, 200);
    assert.equal((await raw(base, 'HEAD', '/v1/status', keyed)).status, 200);
    const body = JSON.stringify({ a: 1 });
    assert.equal((await raw(base, 'POST', '/v1/echo', { ...keyed, 'content-type': 'application/json' }, body)).status, 200);
    assert.equal((await raw(base, 'POST', '/v1/console/login', keyed, '{}')).status, 401, 'a session cannot mint login codes');
    // nor by a target the router would read as that path: a target not in normal form is refused first (400 PATH_MALFORMED)
    for (const path of ['/v1/./console/login', '/v1/console/../console/login', '/v1/x/../console/login'])
      assert.equal((await raw(base, 'POST', path, keyed, '{}')).status, 400, `a session cannot mint login codes at ${path}`);
    assert.equal((await raw(base, 'POST', '/v1/console/login', { host, authorization: 'Bearer tok-0123456789' }, '{}')).status, 200);
    assert.equal((await raw(base, 'GET', '/v1/status', { ...keyed, cookie: `${cookieName}=${'A'.repeat(43)}` })).status, 401, 'a made-up session');
    assert.equal((await raw(base, 'GET', '/v1/status', { ...keyed, cookie: cookie.replace(cookieName, 'c0_console_1') })).status, 401, "another port's cookie name");
  });

  test('a replayed session cookie alone opens nothing: every request needs the key only the page holds (401 CONSOLE_KEY_REFUSED)', async () => {
    // what another server on this host gets from the browser: the cookie, never the key (it is in the page's sessionStorage)
    const { cookie, key } = await loginKeyed();
    const other = await loginKeyed();
    const body = JSON.stringify({ a: 1 });
    for (const [method, path, headers] of [
      ['GET', '/v1/status', { host, cookie }],
      ['HEAD', '/v1/status', { host, cookie }],
      ['GET', '/v1/console/events', { host, cookie }],
      ['POST', '/v1/echo', { host, cookie, 'content-type': 'application/json' }],
      ['POST', '/v1/echo', { host, cookie, 'content-type': 'application/json', 'x-c0mpute-console': '1' }],
      ['GET', '/v1/status', { host, cookie, 'x-c0mpute-console': '1' }],
      ['GET', '/v1/status', { host, cookie, 'x-c0mpute-console': other.key }],
      ['GET', '/v1/status', { host, cookie, 'x-c0mpute-console': cookie.split('=')[1]! }],
      ['GET', '/v1/console/events', { host, cookie, 'x-c0mpute-console': other.key }],
    ] as const) {
      const r = await raw(base, method, path, headers, method === 'POST' ? body : undefined);
      assert.equal(r.status, 401, `${method} ${path} ${JSON.stringify(headers)}`);
      if (method !== 'HEAD') assert.equal(JSON.parse(r.body).error.code, 'CONSOLE_KEY_REFUSED', `${method} ${path}`);
    }
    // the key alone is nothing either
    assert.equal(JSON.parse((await raw(base, 'GET', '/v1/status', { host, 'x-c0mpute-console': key })).body).error.code, 'UNAUTHORIZED');
    // the pair opens the API and the stream
    assert.equal((await raw(base, 'GET', '/v1/status', { host, cookie, 'x-c0mpute-console': key })).status, 200);
    const stream = await new Promise<number>((resolve, reject) => {
      const { host: h, port } = splitHostPort(base);
      const req = httpRequest({ host: h, port, path: '/v1/console/events', headers: { host, cookie, 'x-c0mpute-console': key } }, (res) => {
        resolve(res.statusCode ?? 0);
        res.destroy();
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(stream, 200);
    // the page itself is served on the cookie (it holds no secret); in a tab without the key, /ui/login says so
    assert.equal((await raw(base, 'GET', '/ui/', { host, cookie })).status, 200);
    const tab = await raw(base, 'GET', '/ui/login', { host, cookie });
    assert.equal(tab.status, 401);
    assert.match(tab.body, /does not hold the key/);
  });

  test('a cookie planted under the same name (by a page on another port, with a narrower path, so sent first) locks nobody out', async () => {
    const { cookie, key } = await loginKeyed();
    const value = cookie.split('=')[1]!;
    // what the browser sends once another port of 127.0.0.1 wrote c0_console_<port>=x with Path=/ui/ and Path=/v1/
    const planted = `${cookieName}=x; ${cookieName}=${'B'.repeat(43)}; ${cookie}`;
    assert.equal((await raw(base, 'GET', '/ui/', { host, cookie: planted })).status, 200, 'the console page');
    assert.notEqual((await raw(base, 'GET', '/ui/app.js', { host, cookie: planted })).status, 401, 'its script');
    assert.equal((await raw(base, 'GET', '/v1/status', { host, cookie: planted, 'x-c0mpute-console': key })).status, 200, 'the API');
    assert.equal((await raw(base, 'GET', '/v1/status', { host, cookie: `${cookie}; ${cookieName}=x`, 'x-c0mpute-console': key })).status, 200, 'in either order');
    // a planted value is still no session, and the real one still needs its key
    assert.equal(JSON.parse((await raw(base, 'GET', '/v1/status', { host, cookie: planted })).body).error.code, 'CONSOLE_KEY_REFUSED');
    assert.equal((await raw(base, 'GET', '/ui/', { host, cookie: `${cookieName}=x; ${cookieName}=${'B'.repeat(43)}` })).status, 401);
    // logout ends the live one among them
    assert.equal((await raw(base, 'POST', '/ui/logout', { host, cookie: planted })).status, 303);
    assert.equal((await raw(base, 'GET', '/v1/status', { host, cookie: `${cookieName}=${value}`, 'x-c0mpute-console': key })).status, 401);
  });

  test('the Origin and Host checks still run first', async () => {
    const { cookie, key } = await loginKeyed();
    assert.equal((await raw(base, 'GET', '/v1/status', { host, cookie, 'x-c0mpute-console': key, origin: 'http://evil.example' })).status, 403);
    assert.equal((await raw(base, 'GET', '/ui/', { host: 'evil.example:80', cookie })).status, 403);
    assert.equal((await raw(base, 'GET', '/v1/status', { host, cookie, 'x-c0mpute-console': key, origin: `http://${base}` })).status, 200);
  });

  test('only the console itself logs out: a GET (an <img> on another port of this host) or a post from another site ends nothing', async () => {
    const { cookie, key } = await loginKeyed();
    const live = async () => (await raw(base, 'GET', '/v1/status', { host, cookie, 'x-c0mpute-console': key })).status;
    // what <img src="http://127.0.0.1:<port>/ui/logout"> on a page at 127.0.0.1:<other port> sends: same-site, so the cookie, and no Origin
    const img = await raw(base, 'GET', '/ui/logout', { host, cookie, 'sec-fetch-site': 'same-site', 'sec-fetch-dest': 'image' });
    assert.equal(img.status, 405);
    assert.equal(img.headers.allow, 'POST');
    assert.equal(await live(), 200, 'the session outlives the image');
    // a post that names a foreign origin (the Origin check), or that the browser says came from another site
    assert.equal((await raw(base, 'POST', '/ui/logout', { host, cookie, origin: 'http://127.0.0.1:1' })).status, 403);
    assert.equal((await raw(base, 'POST', '/ui/logout', { host, cookie, 'sec-fetch-site': 'same-site' })).status, 403);
    assert.equal((await raw(base, 'POST', '/ui/logout', { host, cookie, 'sec-fetch-site': 'cross-site' })).status, 403);
    assert.equal(await live(), 200, 'the session outlives the foreign posts');
    // the console's own form: same-origin
    const out = await raw(base, 'POST', '/ui/logout', { host, cookie, origin: `http://${base}`, 'sec-fetch-site': 'same-origin' });
    assert.equal(out.status, 303);
    assert.equal(await live(), 401);
  });

  test('a session expires; logout ends it', async () => {
    const cookie = await login();
    clock.advance(SESSION_DEFAULTS.sessionTtlMs);
    const r = await raw(base, 'GET', '/ui/', { host, cookie });
    assert.equal(r.status, 401);
    assert.match(r.body, /expired/);
    const c2 = await loginKeyed();
    assert.equal((await raw(base, 'GET', '/v1/status', { host, cookie: c2.cookie, 'x-c0mpute-console': c2.key })).status, 200);
    const out = await raw(base, 'POST', '/ui/logout', { host, cookie: c2.cookie });
    assert.equal(out.status, 303);
    assert.equal((await raw(base, 'GET', '/v1/status', { host, cookie: c2.cookie, 'x-c0mpute-console': c2.key })).status, 401);
  });
});

describe('the console event stream', () => {
  test("opens with a hello naming its ping interval, then pings at it (the page takes a stream silent for twice that as stale)", async () => {
    const clock = fakeClock();
    const hub = { listen: () => () => {} } as unknown as ConsoleHub;
    const api = await startApi({ listen: '127.0.0.1:0', token: 'tok-0123456789', registry: new Registry(), log: silentLogger(), console: consoleGate({ clock } as unknown as Daemon, new ConsoleSessions(clock), hub, 'tok-0123456789', { pingMs: 30 }), routes: [] });
    try {
      const { host, port } = splitHostPort(api.address);
      const text = await new Promise<string>((resolve, reject) => {
        const req = httpRequest({ host, port, path: '/v1/console/events', headers: { host: api.address, authorization: 'Bearer tok-0123456789' } }, (res) => {
          let got = '';
          res.setEncoding('utf8').on('data', (d: string) => {
            got += d;
            if (got.split(': ping\n\n').length > 2) {
              res.destroy();
              resolve(got);
            }
          });
        });
        req.on('error', reject);
        req.end();
      });
      assert.ok(text.startsWith('retry: 2000\n\nevent: hello\ndata: {"pingMs":30}\n\n'), text);
    } finally {
      await api.close();
    }
  });
});
