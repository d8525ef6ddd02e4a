/**
 * The control API's guards on a real daemon (`c0mpute start`, docs/node.md
 * "Control API"): a request whose Host is not the API's (a DNS-rebinding page)
 * and one from a foreign Origin are refused with 403 and a code, /metrics
 * included; a lower-case `bearer` scheme is accepted; the default metrics are
 * named `c0mpute_process_*` (not `c0mpute_process_process_*`); and a daemon
 * whose api.token others can read refuses to start (exit 3,
 * `error API_TOKEN_PERMISSIONS`). Bad input to /v1/run is a 400 naming the
 * field before any job is made; a path parameter that must be a DID is one.
 * Started without a terminal (as a service, its output in a log), the banner
 * points at the console but carries no login code.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, readFileSync } from 'node:fs';
import { rawGet } from '../raw-http.js';
import { join } from 'node:path';
import { TOKEN_FILE, splitHostPort } from '../../src/node/api.js';
import { Cluster, buyerConfig, c0mpute, waitFor, withLogs } from './node-helpers.js';

const c = new Cluster('api');

after(async () => {
  await c.destroy();
});

const code = (body: string) => (JSON.parse(body) as { error?: { code?: string } }).error?.code;

test('a running daemon refuses a foreign Host and Origin (403, coded), accepts `bearer`, and names its process metrics once; a world-readable token stops it from starting', async () => {
  // an announced address (behind NAT: the one peers should dial) is what the node gives out as its own
  const cfg = buyerConfig();
  const announced = '/ip4/203.0.113.7/tcp/4001';
  // api.hosts: a name a reverse proxy or the machine's DNS name puts in Host
  const n = await c.start('node', { ...cfg, network: { ...(cfg.network as object), announce: [announced] }, api: { ...(cfg.api as object), hosts: ['c0.example'] } });
  await withLogs(c, async () => {
    const { api, token } = n.api;
    const port = splitHostPort(api).port;

    const rebinding = await rawGet(api, '/v1/status', { host: `attacker.example:${port}`, authorization: `Bearer ${token}` });
    assert.equal(rebinding.status, 403);
    assert.equal(code(rebinding.body), 'API_HOST_REFUSED');
    const metricsRebinding = await rawGet(api, '/metrics', { host: `attacker.example:${port}` });
    assert.equal(metricsRebinding.status, 403);
    assert.equal(code(metricsRebinding.body), 'API_HOST_REFUSED');

    const named = await rawGet(api, '/v1/status', { host: `c0.example:${port}`, origin: `http://c0.example:${port}`, authorization: `Bearer ${token}` });
    assert.equal(named.status, 200, `a name in api.hosts is this API's: ${named.body}`);

    const evil = await rawGet(api, '/v1/status', { origin: 'http://evil.example', authorization: `Bearer ${token}` });
    assert.equal(evil.status, 403);
    assert.equal(code(evil.body), 'API_ORIGIN_REFUSED');
    assert.equal(code((await rawGet(api, '/metrics', { origin: 'http://evil.example' })).body), 'API_ORIGIN_REFUSED');

    const lower = await rawGet(api, '/v1/status', { authorization: `bearer ${token}` });
    assert.equal(lower.status, 200, lower.body);
    const st = JSON.parse(lower.body) as { did: string; addrs: string[] };
    assert.equal(st.did, n.did);
    assert.ok(st.addrs.some((a) => a.startsWith(announced)), `network.announce is the address given out: ${st.addrs.join(' ')}`);

    const metrics = await rawGet(api, '/metrics', {});
    assert.equal(metrics.status, 200);
    assert.match(metrics.body, /^c0mpute_process_cpu_seconds_total /m);
    assert.doesNotMatch(metrics.body, /c0mpute_process_process_/);

    // Bad input to /v1/run is an HTTP error naming the field, before anything is signed, published or stored.
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const jobsHeld = async () => ((await (await fetch(`http://${api}/v1/jobs`, { headers })).json()) as { jobs: unknown[] }).jobs.length;
    const before = await jobsHeld();
    const spec = { workload: 'builtin.sha256', maxPrice: '0.01 USD', deadlineMs: 20_000, input: Buffer.from('x').toString('base64') };
    const bad: Array<[Record<string, unknown>, string, string]> = [
      [{ ...spec, policy: 'nonsense' }, 'JOB_SPEC_INVALID', 'policy'],
      [{ ...spec, input: '!!!not base64$$$' }, 'JOB_SPEC_INVALID', 'input'],
      [{ ...spec, params: 5 }, 'JOB_SPEC_INVALID', 'params'],
      [{ ...spec, deadlineMs: 1.5 }, 'JOB_SPEC_INVALID', 'deadlineMs'],
      [{ ...spec, energy: { uj: 'x', grade: 'Estimator' } }, 'JOB_SPEC_INVALID', 'energy.uj'],
      [{ ...spec, deadline: '60s' }, 'JOB_SPEC_INVALID', ''],
      [{ ...spec, policy: 'private' }, 'POLICY_PRIVATE_NEEDS_ALLOWLIST', ''],
    ];
    for (const [body, want, field] of bad) {
      const r = await fetch(`http://${api}/v1/run`, { method: 'POST', headers, body: JSON.stringify(body) });
      const e = ((await r.json()) as { error?: { code: string; field?: string } }).error;
      assert.deepEqual([r.status, e?.code, e?.field ?? ''], [400, want, field], JSON.stringify(body));
    }
    assert.equal(await jobsHeld(), before, 'no job was made from bad input');
    // A role this node does not run, and an overlay it is not on, are named.
    for (const path of ['/v1/steward', '/v1/witness', '/v1/pool']) {
      const r = await rawGet(api, path, { authorization: `Bearer ${token}` });
      assert.deepEqual([r.status, code(r.body)], [400, 'ROLE_NOT_ENABLED'], path);
    }
    const nowhere = await rawGet(api, '/v1/market?overlay=nosuch', { authorization: `Bearer ${token}` });
    assert.deepEqual([nowhere.status, code(nowhere.body)], [404, 'OVERLAY_NOT_FOUND']);
    const steward = await c0mpute(n.dir, ['steward', 'status']);
    assert.equal(steward.code, 3, steward.out + steward.err);
    assert.match(steward.err, /^error ROLE_NOT_ENABLED: /m);
    // A path parameter that must be a DID is checked as one.
    for (const path of ['/v1/reputation/not-a-did', '/v1/ledger/%2Ffoo', '/v1/console/evidence/x']) {
      const r = await rawGet(api, path, { authorization: `Bearer ${token}` });
      assert.deepEqual([r.status, code(r.body)], [400, 'DID_MALFORMED'], path);
    }
  });

  await c.stop(n);
  const tokenFile = join(n.dir, TOKEN_FILE);
  chmodSync(tokenFile, 0o644);
  const r = await c0mpute(n.dir, ['start', '--config', n.configPath]);
  assert.equal(r.code, 3, r.out + r.err);
  assert.match(r.err, /error API_TOKEN_PERMISSIONS: .*api\.token.*chmod 600/);
});

test('started without a terminal (a service, its output in a log), the banner names the console and mints no login code', async () => {
  // the cluster's nodes write stdout to a file, as under systemd or in a container
  const n = await c.start('service', buyerConfig());
  await withLogs(c, async () => {
    const line = await waitFor('the console line in the log', () => readFileSync(n.log, 'utf8').split('\n').find((l) => l.startsWith('  console  ')), 30_000);
    assert.equal(line, `  console  http://${n.api.api}/ui/  (run \`c0mpute console\` for a login link)`);
    assert.doesNotMatch(readFileSync(n.log, 'utf8'), /code=/, 'no login code in the log');
    // `c0mpute console` still gives the operator one
    const cli = await c0mpute(n.dir, ['console']);
    assert.equal(cli.code, 0, cli.err);
    assert.match(cli.out.trim(), /\/ui\/login\?code=[A-Za-z0-9_-]{43}$/);
  });
});
