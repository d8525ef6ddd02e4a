/**
 * HEAD on the console's GET routes is GET without the body, as on the API's /v1 routes (docs/node.md "Control API"),
 * and a 405 there carries `Allow` (before: HEAD /ui/ and /ui/app.js were 405, with no Allow). /ui/login and
 * /ui/logout act on a GET (spend a one-time code, end the session): HEAD there is 405 naming what they take.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { Registry } from 'prom-client';
import { ConsoleSessions } from '../../../src/node/console-session.js';
import { consoleGate } from '../../../src/node/console-routes.js';
import type { ConsoleHub } from '../../../src/node/console-hub.js';
import type { Daemon } from '../../../src/node/daemon.js';
import { allowedMethods, routedMethod, splitHostPort, startApi, type ApiServer } from '../../../src/node/api.js';
import { fakeClock } from '../../../src/util/clock.js';
import { silentLogger } from '../../../src/util/log.js';

type Answer = { status: number; body: string; headers: Record<string, string | string[] | undefined> };
function raw(base: string, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  const { host, port } = splitHostPort(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host, port, path, method, headers }, (res) => {
      let b = '';
      res.setEncoding('utf8').on('data', (d: string) => (b += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b, headers: res.headers }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the shared HEAD helpers', () => {
  test('HEAD routes as GET; Allow lists HEAD with GET, once', () => {
    assert.equal(routedMethod('HEAD'), 'GET');
    assert.equal(routedMethod('POST'), 'POST');
    assert.deepEqual(allowedMethods(['GET', 'POST', 'GET']), ['GET', 'POST', 'HEAD']);
    assert.deepEqual(allowedMethods(['GET', 'HEAD']), ['GET', 'HEAD']);
    assert.deepEqual(allowedMethods(['POST']), ['POST']);
  });
});

describe('HEAD and 405 on the console pages', () => {
  let api: ApiServer;
  let base: string;
  const clock = fakeClock();
  const sessions = new ConsoleSessions(clock);
  const hub = { listen: () => () => {} } as unknown as ConsoleHub;
  before(async () => {
    api = await startApi({ listen: '127.0.0.1:0', token: 'tok-0123456789', registry: new Registry(), log: silentLogger(), console: consoleGate({ clock } as unknown as Daemon, sessions, hub, 'tok-0123456789'), routes: [] });
    base = api.address;
  });
  after(() => api.close());

  const login = async () => {
    const r = await raw(base, 'GET', `/ui/login?code=${sessions.mintCode().code}`, { host: base });
    assert.equal(r.status, 303);
    return String(r.headers['set-cookie']).split(';')[0]!;
  };

  test('HEAD answers as GET does, without the body', async () => {
    const cookie = await login();
    for (const p of ['/ui', '/ui/', '/ui/app.js', '/ui/style.css', '/ui/nosuch']) {
      for (const h of [{ host: base, cookie }, { host: base }] as Array<Record<string, string>>) {
        const get = await raw(base, 'GET', p, h);
        const head = await raw(base, 'HEAD', p, h);
        assert.equal(head.status, get.status, `HEAD ${p} ${h.cookie !== undefined ? 'with' : 'without'} a session`);
        assert.equal(head.headers['content-type'], get.headers['content-type'], p);
        assert.equal(head.body, '', p);
      }
    }
  });

  test('HEAD on the event stream answers its headers and ends', async () => {
    const r = await raw(base, 'HEAD', '/v1/console/events', { host: base, authorization: 'Bearer tok-0123456789' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/event-stream');
    assert.equal((await raw(base, 'HEAD', '/v1/console/events', { host: base })).status, 401);
  });

  test('another method is 405 with Allow; HEAD does not spend a login code nor end a session', async () => {
    for (const [method, p, allow] of [
      ['POST', '/ui/', 'GET, HEAD'],
      ['PUT', '/ui/app.js', 'GET, HEAD'],
      ['DELETE', '/ui/logout', 'POST'],
      ['HEAD', '/ui/logout', 'POST'],
      ['GET', '/ui/logout', 'POST'],
      ['HEAD', '/ui/login', 'GET'],
    ] as const) {
      const r = await raw(base, method, p, { host: base });
      assert.equal(r.status, 405, `${method} ${p}`);
      assert.equal(r.headers.allow, allow, `${method} ${p}`);
    }
    const code = sessions.mintCode().code;
    assert.equal((await raw(base, 'HEAD', `/ui/login?code=${code}`, { host: base })).status, 405);
    assert.equal((await raw(base, 'GET', `/ui/login?code=${code}`, { host: base })).status, 303, 'the code still works');
  });
});
