/**
 * The control API's guards on a real daemon (`c0mpute start`, docs/node.md
 * "Control API"): a request whose Host is not the API's (a DNS-rebinding page)
 * and one from a foreign Origin are refused with 403 and a code, /metrics
 * included; a lower-case `bearer` scheme is accepted; the default metrics are
 * named `c0mpute_process_*` (not `c0mpute_process_process_*`); and a daemon
 * whose api.token others can read refuses to start (exit 3,
 * `error API_TOKEN_PERMISSIONS`).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync } from 'node:fs';
import { rawGet } from '../raw-http.js';
import { join } from 'node:path';
import { TOKEN_FILE, splitHostPort } from '../../src/node/api.js';
import { Cluster, buyerConfig, c0mpute, withLogs } from './node-helpers.js';

const c = new Cluster('api');

after(async () => {
  await c.destroy();
});

const code = (body: string) => (JSON.parse(body) as { error?: { code?: string } }).error?.code;

test('a running daemon refuses a foreign Host and Origin (403, coded), accepts `bearer`, and names its process metrics once; a world-readable token stops it from starting', async () => {
  const n = await c.start('node', buyerConfig());
  await withLogs(c, async () => {
    const { api, token } = n.api;
    const port = splitHostPort(api).port;

    const rebinding = await rawGet(api, '/v1/status', { host: `attacker.example:${port}`, authorization: `Bearer ${token}` });
    assert.equal(rebinding.status, 403);
    assert.equal(code(rebinding.body), 'API_HOST_REFUSED');
    const metricsRebinding = await rawGet(api, '/metrics', { host: `attacker.example:${port}` });
    assert.equal(metricsRebinding.status, 403);
    assert.equal(code(metricsRebinding.body), 'API_HOST_REFUSED');

    const evil = await rawGet(api, '/v1/status', { origin: 'http://evil.example', authorization: `Bearer ${token}` });
    assert.equal(evil.status, 403);
    assert.equal(code(evil.body), 'API_ORIGIN_REFUSED');
    assert.equal(code((await rawGet(api, '/metrics', { origin: 'http://evil.example' })).body), 'API_ORIGIN_REFUSED');

    const lower = await rawGet(api, '/v1/status', { authorization: `bearer ${token}` });
    assert.equal(lower.status, 200, lower.body);
    assert.equal((JSON.parse(lower.body) as { did: string }).did, n.did);

    const metrics = await rawGet(api, '/metrics', {});
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /^c0mpute_process_cpu_seconds_total /m);
    assert.doesNotMatch(metrics.body, /c0mpute_process_process_/);
  });

  await c.stop(n);
  const tokenFile = join(n.dir, TOKEN_FILE);
  chmodSync(tokenFile, 0o644);
  const r = await c0mpute(n.dir, ['start', '--config', n.configPath]);
  assert.equal(r.code, 3, r.out + r.err);
  assert.match(r.err, /error API_TOKEN_PERMISSIONS: .*api\.token.*chmod 600/);
});
