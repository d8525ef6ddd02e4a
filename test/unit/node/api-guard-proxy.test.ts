/**
 * `api.hosts` behind a reverse proxy (src/node/api-guard.ts; docs/node.md "API security" and "Behind a reverse
 * proxy"): a name configured with :443 (or :80) is accepted in `Host` without its port, as a browser sends it and
 * Caddy or nginx's `$host` pass it on, and a page on `https://` a configured name may post; every name and origin not
 * configured is still refused (the DNS-rebinding and CSRF defence).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { Registry } from 'prom-client';
import { rawGet } from '../../raw-http.js';
import { splitHostPort, startApi } from '../../../src/node/api.js';
import { checkBrowserHeaders, hostPolicy } from '../../../src/node/api-guard.js';
import { silentLogger } from '../../../src/util/log.js';

const code = (host: string | undefined, origin?: string, p = hostPolicy('127.0.0.1', 7070, ['node.example', 'proxy.example:443', 'plain.example:80', 'alt.example:8443'])) => checkBrowserHeaders(host, origin, p)?.code ?? 'ok';

test('a name configured with :443 is accepted without its port, and a page on https:// that name may post', () => {
  // the reviewer's table: hosts [node.example, proxy.example:443]
  assert.equal(code('proxy.example'), 'ok', 'the portless Host a TLS proxy on 443 passes on');
  assert.equal(code('PROXY.example'), 'ok');
  assert.equal(code('proxy.example:443'), 'ok');
  assert.equal(code('proxy.example:443', 'https://proxy.example'), 'ok');
  assert.equal(code('proxy.example', 'https://proxy.example'), 'ok', 'a console POST behind TLS');
  assert.equal(code('proxy.example', 'https://proxy.example:443'), 'ok');
  // a name configured with :80 likewise over http; another port only as written, over either scheme
  assert.equal(code('plain.example'), 'ok');
  assert.equal(code('plain.example', 'http://plain.example'), 'ok');
  assert.equal(code('alt.example:8443', 'https://alt.example:8443'), 'ok');
  // a bare name takes the bound port, and its page may be behind TLS on that port
  assert.equal(code('node.example:7070', 'https://node.example:7070'), 'ok');
  assert.equal(code('node.example:7070', 'http://node.example:7070'), 'ok');
});

test('what is not configured is still refused (DNS rebinding, CSRF)', () => {
  for (const host of ['evil.example', 'evil.example:443', 'node.example', 'node.example:443', 'alt.example', 'alt.example:443', 'localhost', 'localhost:443', '127.0.0.1', 'proxy.example:8443', 'proxy.example.evil', 'xproxy.example', '']) {
    assert.equal(code(host), 'API_HOST_REFUSED', host);
  }
  for (const origin of [
    'https://evil.example', // a foreign page
    'https://localhost:7070', // https only for a configured name (the API itself speaks http)
    'https://127.0.0.1:7070',
    'http://proxy.example', // a name configured with :443 comes without its port over https only
    'https://plain.example', // and one with :80 over http only
    'https://node.example', // a bare name takes the bound port
    'https://alt.example',
    'https://proxy.example:8443',
    'https://proxy.example/x',
    'https://proxy.example?x',
    'https://user@proxy.example',
    'null',
    'file://proxy.example',
    'ws://proxy.example',
  ]) {
    assert.equal(code('proxy.example', origin), 'API_ORIGIN_REFUSED', origin);
  }
  // no names configured: no https origin at all
  const bare = hostPolicy('127.0.0.1', 7070);
  assert.equal(checkBrowserHeaders('localhost:7070', 'https://localhost:7070', bare)?.code, 'API_ORIGIN_REFUSED');
  assert.equal(checkBrowserHeaders('localhost:7070', 'http://localhost:7070', bare), undefined);
  assert.equal(checkBrowserHeaders('localhost:7070', 'http://localhost', bare)?.code, 'API_ORIGIN_REFUSED');
});

test('a wildcard-bound API: an IP literal over http with the bound port, never over https; without a port only when bound to 80', () => {
  const w = hostPolicy('0.0.0.0', 7070, ['proxy.example:443']);
  assert.equal(checkBrowserHeaders('10.0.0.5:7070', 'http://10.0.0.5:7070', w), undefined);
  assert.equal(checkBrowserHeaders('10.0.0.5:7070', 'https://10.0.0.5:7070', w)?.code, 'API_ORIGIN_REFUSED');
  assert.equal(checkBrowserHeaders('10.0.0.5', undefined, w)?.code, 'API_HOST_REFUSED');
  assert.equal(checkBrowserHeaders('proxy.example', 'https://proxy.example', w), undefined);
  const w80 = hostPolicy('0.0.0.0', 80);
  assert.equal(checkBrowserHeaders('10.0.0.5', 'http://10.0.0.5', w80), undefined);
  assert.equal(checkBrowserHeaders('[fe80::1]', 'http://[fe80::1]', w80), undefined);
});

test('through the API: a TLS proxy passing the browser\'s Host and Origin on reaches it', async () => {
  const s = await startApi({ listen: '127.0.0.1:0', token: 'tok', routes: [], registry: new Registry(), log: silentLogger(), hosts: ['node.example', 'proxy.example:443'] });
  try {
    const port = splitHostPort(s.address).port;
    const local = `127.0.0.1:${port}`;
    const get = (h: Record<string, string>) => rawGet(local, '/metrics', { authorization: 'Bearer tok', ...h });
    assert.equal((await get({ host: 'proxy.example' })).status, 200);
    assert.equal((await get({ host: 'proxy.example:443' })).status, 200);
    assert.equal((await get({ host: 'proxy.example:443', origin: 'https://proxy.example' })).status, 200);
    assert.equal((await get({ host: 'proxy.example', origin: 'https://proxy.example' })).status, 200);
    assert.equal((await get({ host: 'evil.example' })).status, 403);
    assert.equal((await get({ host: 'proxy.example', origin: 'https://evil.example' })).status, 403);
  } finally {
    await s.close();
  }
});

test('behind a proxy /metrics needs the token, and a path not in normal form is refused (a proxy and the API would read different paths)', async () => {
  const s = await startApi({ listen: '127.0.0.1:0', token: 'tok', routes: [], registry: new Registry(), log: silentLogger(), hosts: ['proxy.example:443'] });
  try {
    const port = splitHostPort(s.address).port;
    const local = `127.0.0.1:${port}`;
    const get = (path: string, h: Record<string, string>) => rawGet(local, path, h);
    // on loopback by its own address: open, as before (a Prometheus on the same host)
    assert.equal((await get('/metrics', { host: local })).status, 200);
    assert.equal((await get('/metrics', { host: `localhost:${port}` })).status, 200);
    // by a name of api.hosts: through a proxy, from loopback all the same: the token is needed
    assert.equal((await get('/metrics', { host: 'proxy.example' })).status, 401);
    assert.equal((await get('/metrics', { host: 'proxy.example', authorization: 'Bearer tok' })).status, 200);
    // the reviewer's bypass of nginx's `location = /metrics`: the URL parser reads `\` as `/` and resolves `..`
    for (const path of ['/x/..\\metrics', '/x\\..\\metrics', '/v1\\..\\metrics', '/x/%2e%2e/metrics', '/x/%2E%2E\\metrics', '/./metrics', '/x/../metrics']) {
      const r = await get(path, { host: local });
      assert.equal(r.status, 400, path);
      assert.match(r.body, /PATH_MALFORMED/, path);
    }
    assert.equal((await get('/metrics?x=1', { host: local })).status, 200, 'a query is no part of the path');
  } finally {
    await s.close();
  }
});

test('a request with two Host (or two Authorization) headers is refused 400 HEADER_REPEATED: Node keeps the first, a proxy may read the other', async () => {
  const s = await startApi({ listen: '127.0.0.1:0', token: 'tok', routes: [], registry: new Registry(), log: silentLogger() });
  try {
    const port = splitHostPort(s.address).port;
    const local = `127.0.0.1:${port}`;
    const raw = (headers: string[]): Promise<string> =>
      new Promise((resolve, reject) => {
        const c = connect(port, '127.0.0.1');
        let got = '';
        c.setEncoding('utf8').on('data', (d: string) => (got += d));
        c.on('end', () => resolve(got));
        c.on('error', reject);
        c.write(`GET /metrics HTTP/1.1\r\n${headers.map((h) => `${h}\r\n`).join('')}Connection: close\r\n\r\n`);
      });
    for (const headers of [[`Host: ${local}`, 'Host: evil.example'], [`Host: ${local}`, 'host: evil.example'], [`Host: ${local}`, 'Authorization: Bearer tok', 'Authorization: Bearer other']]) {
      const r = await raw(headers);
      assert.match(r, /^HTTP\/1\.1 400 /, headers.join(' | '));
      assert.match(r, /HEADER_REPEATED/);
    }
    assert.match(await raw([`Host: ${local}`, 'Authorization: Bearer tok']), /^HTTP\/1\.1 200 /, 'one of each is served');
  } finally {
    await s.close();
  }
});
