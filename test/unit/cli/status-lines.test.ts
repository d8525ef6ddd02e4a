/**
 * `c0mpute status` in its human form (src/cli/status-lines.ts): roles, addrs, gossip and provider were raw JSON
 * (QA qaOps F12); now lists and mappings are said for people, and `--json` is the daemon's answer unchanged. The CLI
 * runs against a fake daemon (daemon.json naming a local HTTP server that answers /v1/status).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { daemonBuildLine, inline, statusLines } from '../../../src/cli/status-lines.js';
import { buildText } from '../../../src/util/build-id.js';
import { runNode } from './cli-run.js';

const STATUS = {
  did: 'did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK',
  overlay: 'public',
  roles: ['buyer', 'provider'],
  addrs: ['/ip4/127.0.0.1/tcp/47202/p2p/12D3KooWAbcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH', '/ip4/10.0.0.5/tcp/47202/p2p/12D3KooWAbcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH'],
  peers: 0,
  network: { state: 'alone', message: 'this node has no peers', code: 'NET_NO_PEERS' },
  gossip: { advert: { peers: 0, mesh: 0 }, job: { peers: 1, mesh: 1 } },
  provider: { advert: 'sha256:33b48d', running: 0 },
  evidence: 99,
  overlays: { acme: { peers: 2, evidence: 7 } },
  uptimeMs: 1234,
};

test('lists and mappings are said for people, never as JSON', () => {
  assert.deepEqual(statusLines('roles', ['buyer']), ['roles           buyer']);
  assert.deepEqual(statusLines('roles', []), ['roles           none']);
  assert.deepEqual(statusLines('provider', { advert: 'sha256:33b48d', running: 0 }), ['provider        advert sha256:33b48d, running 0']);
  assert.deepEqual(statusLines('gossip', STATUS.gossip), ['gossip          advert  peers 0, mesh 0', '                job     peers 1, mesh 1']);
  assert.deepEqual(statusLines('addrs', STATUS.addrs), [`addrs           ${STATUS.addrs[0]}`, `                ${STATUS.addrs[1]}`]);
  assert.equal(inline({ a: { b: 1 }, c: [1, 2] }), 'a (b 1), c 1, 2');
  // the reputation records' count is not said "evidence", the word a witness's equivocation pairs are said with (QA qaUp F7)
  assert.deepEqual(statusLines('evidence', 99), ['outcomes held   99']);
  assert.deepEqual(statusLines('overlays', STATUS.overlays), ['overlays        acme  peers 2, outcomes held 7']);
});

const root = mkdtempSync(join(tmpdir(), 'c0-status-lines-'));
const server = createServer((req, res) => {
  res.writeHead(req.url === '/v1/status' ? 200 : 404, { 'content-type': 'application/json' });
  res.end(JSON.stringify(req.url === '/v1/status' ? STATUS : { error: { code: 'NOT_FOUND', message: 'no' } }));
});
after(() => {
  server.close();
  rmSync(root, { recursive: true, force: true });
});

test('the status command prints them so; --json is the answer as it is', async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const d = join(root, 'data');
  mkdirSync(d);
  writeFileSync(join(d, 'daemon.json'), JSON.stringify({ pid: process.pid, did: STATUS.did, api: `127.0.0.1:${(server.address() as AddressInfo).port}`, startedAt: 0 }));
  writeFileSync(join(d, 'api.token'), 'tok\n', { mode: 0o600 });
  const bin = fileURLToPath(new URL('../../../../bin/c0mpute.js', import.meta.url));
  const { NODE_TEST_CONTEXT: _, ...env } = process.env;
  const human = await runNode([bin, '--data-dir', d, 'status'], { env });
  assert.equal(human.status, 0, human.stderr);
  assert.match(human.stdout, /^roles\s+buyer, provider$/m);
  assert.match(human.stdout, /^gossip\s+advert\s+peers 0, mesh 0$/m);
  assert.match(human.stdout, /^provider\s+advert sha256:33b48d, running 0$/m);
  assert.doesNotMatch(human.stdout, /[[{]"/, 'no JSON');
  assert.match(human.stdout, /^outcomes held\s+99$/m);
  assert.doesNotMatch(human.stdout, /^evidence\b/m);
  // a daemon from before build ids (this one reports none): said under its DID, not left out
  assert.match(human.stdout, /^did .*\nbuild\s+\(not reported: the daemon runs a build from before build ids, not this command's 0\.1\.0 \(build /m);
  const json = await runNode([bin, '--data-dir', d, 'status', '--json'], { env });
  assert.equal(json.status, 0, json.stderr);
  assert.deepEqual(JSON.parse(json.stdout), STATUS);
});

test('the build line says when the daemon is not this command’s build, and names one from before build ids', () => {
  const mine = '0.1.0 (build bbbbbbbbbbbb)';
  assert.equal(daemonBuildLine(mine, mine), `build           ${mine}`);
  // a daemon started before the upgrade: it runs the earlier build until it is restarted
  assert.equal(daemonBuildLine('0.1.0 (build aaaaaaaaaaaa)', mine), `build           0.1.0 (build aaaaaaaaaaaa) (not this command's ${mine}: the daemon runs the build it was started with; restart it to run this one)`);
  // before, a daemon that reports no build had no build line at all
  assert.match(daemonBuildLine(undefined, mine), /^build {11}\(not reported: the daemon runs a build from before build ids, not this command's 0\.1\.0 \(build bbbbbbbbbbbb\); restart it to run this build\)$/);
  // an id unknown on both sides (compiled after the last bundle): the same text is no match (review s57)
  const unknown = buildText({ version: '0.1.0' });
  assert.match(daemonBuildLine(unknown, unknown), /cannot be told: a build id is unknown/);
});
