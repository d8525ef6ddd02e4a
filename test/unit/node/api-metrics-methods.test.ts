/**
 * /metrics answers HEAD as every GET route does (docs/node.md "Control API"), and another method 405 with Allow:
 * before, HEAD /metrics was 401 without the token (GET 200) and 404 with it, POST 401 or 404.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { Counter, Registry } from 'prom-client';
import { splitHostPort, startApi } from '../../../src/node/api.js';
import { silentLogger } from '../../../src/util/log.js';

const TOKEN = 'test-token-0123456789';

function call(base: string, method: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const { host, port } = splitHostPort(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host, port, path, method, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
const code = (body: string) => (JSON.parse(body) as { error?: { code?: string } }).error?.code;

test('on loopback: HEAD /metrics is 200 with GET’s content type and no body, with or without the token; POST is 405 Allow: GET, HEAD', async () => {
  const reg = new Registry();
  new Counter({ name: 'c0mpute_test_head_total', help: 'x', registers: [reg] }).inc();
  const s = await startApi({ listen: '127.0.0.1:0', token: TOKEN, routes: [], registry: reg, log: silentLogger() });
  try {
    const get = await call(s.address, 'GET', '/metrics');
    assert.equal(get.status, 200);
    for (const headers of [{}, { authorization: `Bearer ${TOKEN}` }] as Array<Record<string, string>>) {
      const head = await call(s.address, 'HEAD', '/metrics', headers);
      assert.equal(head.status, 200, JSON.stringify(headers));
      assert.equal(head.headers['content-type'], get.headers['content-type']);
      assert.equal(head.body, '');
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const r = await call(s.address, method, '/metrics', headers);
        assert.equal(r.status, 405, `${method} ${JSON.stringify(headers)}`);
        assert.equal(r.headers.allow, 'GET, HEAD');
        assert.equal(code(r.body), 'METHOD_NOT_ALLOWED');
      }
    }
  } finally {
    await s.close();
  }
});

test('off loopback: HEAD /metrics needs the token as GET does (401 without, 200 with); POST with it is 405', async () => {
  const reg = new Registry();
  const s = await startApi({ listen: '0.0.0.0:0', token: TOKEN, routes: [], registry: reg, log: silentLogger() });
  try {
    const local = `127.0.0.1:${splitHostPort(s.address).port}`;
    assert.equal((await call(local, 'HEAD', '/metrics')).status, 401);
    assert.equal((await call(local, 'HEAD', '/metrics', { authorization: `Bearer ${TOKEN}` })).status, 200);
    const post = await call(local, 'POST', '/metrics', { authorization: `Bearer ${TOKEN}` });
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
    assert.equal((await call(local, 'POST', '/metrics')).status, 401);
  } finally {
    await s.close();
  }
});
