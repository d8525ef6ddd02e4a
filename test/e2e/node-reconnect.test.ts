/**
 * Reconnection (docs/network.md "Reconnection and liveness"): a buyer that
 * bootstraps to a provider finds it again after the provider restarts (clean
 * and kill -9, short downtime) and after the buyer itself stalls (SIGSTOP
 * 10 s, then SIGCONT), and a job completes each time. A buyer whose bootstrap
 * entry names the wrong PeerId says so in `run` (NET_NO_PEERS with
 * NET_PEER_ID_MISMATCH), in the API and in the CLI's output.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { peerIdFromDid } from '../../src/node/peer-id.js';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, freePort, get, metricSum, metricsText, providerConfig, runJob, sleep, waitFor, waitForMarket, withLogs, type NodeProc } from './node-helpers.js';

const c = new Cluster('reconnect');
let prov: NodeProc;
let buyer: NodeProc;

const spec = (text: string) => ({ workload: 'builtin.sha256', params: '5', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 60_000, input: Buffer.from(text).toString('base64') });

async function peerDids(n: NodeProc): Promise<Set<string | undefined>> {
  return new Set((await get<{ peers: Array<{ did?: string }> }>(n, '/v1/peers')).peers.map((p) => p.did));
}

/** c0mpute_net_dials_total{kind="bootstrap",outcome="failed"} of a node. */
function failedBootstrapDials(m: string): number {
  return metricSum(m, 'c0mpute_net_dials_total', { kind: 'bootstrap', outcome: 'failed' });
}

async function jobCompletes(label: string): Promise<void> {
  await waitForMarket(buyer, 1, [prov]);
  const { result } = await runJob(buyer, spec(label));
  assert.equal(result.status, 'completed', `${label}: ${JSON.stringify(result.attempts)}`);
}

before(async () => {
  await withLogs(c, async () => {
    // A fixed port: the restarted provider listens where the buyer's bootstrap entry says.
    const port = await freePort();
    prov = await c.start('provider', providerConfig({ listen: `/ip4/127.0.0.1/tcp/${port}`, baseMs: 200 }));
    const bcfg = buyerConfig({ bootstrap: [bootstrapAddr(prov)], collectWindowMs: 3000, enoughOffers: 1 });
    // The restarted provider is redialled within about a second (network.reconnect.bootstrapMaxBackoffMs; default 4 s).
    (bcfg.network as Record<string, unknown>).reconnect = { bootstrapMaxBackoffMs: 1000 };
    buyer = await c.start('buyer', bcfg);
    await waitForMarket(buyer, 1, [prov]);
  });
});

after(async () => {
  await c.destroy();
});

// The stall first, on a mesh that formed once. After the provider restarts below, the two nodes were seen connected and
// subscribed both ways with no gossip mesh between them for over 45 s (two of four CI runs in session 45: "mesh []";
// jobs still went through, by job-push). That is an open problem of its own (docs/network.md "Reconnection and
// liveness"), not the stall's: checked after the restarts, this case measured it instead.
test('both sides reconnect after the buyer stalls for 10 s (SIGSTOP, SIGCONT)', async () => {
  await withLogs(c, async () => {
    buyer.child.kill('SIGSTOP');
    try {
      // 10 s: many gossip heartbeats and reconnection ticks missed. (It was 20 s: neither outlasts a liveness ping's
      // 30 s interval and 30 s timeout, LIVENESS in src/net/libp2p-host.ts; the daemons' logs show no close in either.)
      await sleep(10_000);
    } finally {
      buyer.child.kill('SIGCONT');
    }
    await waitFor('the buyer and the provider to see each other again', async () => (await peerDids(buyer)).has(prov.did) && (await peerDids(prov)).has(buyer.did), 30_000);
    await jobCompletes('after the stall');
  });
});

for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
  test(`the buyer finds its bootstrap peer again after the provider restarts (${signal})`, async () => {
    await withLogs(c, async () => {
      await c.stop(prov, signal);
      await waitFor('the buyer to lose the provider', async () => !(await peerDids(buyer)).has(prov.did));
      // Down until the buyer's redials have failed at least once (not a fixed pause: the bootstrap backoff is capped at 1 s here).
      const failedBefore = failedBootstrapDials(await metricsText(buyer));
      await waitFor('a bootstrap redial to fail while the provider is down', async () => failedBootstrapDials(await metricsText(buyer)) > failedBefore);
      prov = await c.start('provider', prov.config);
      await waitFor('the buyer to reconnect to the restarted provider', async () => (await peerDids(buyer)).has(prov.did), 30_000);
      await jobCompletes(`after ${signal}`);
      // The link metrics show it: bootstrap dials that failed while it was down, the disconnect, an open connection.
      const m = await metricsText(buyer);
      assert.match(m, /^c0mpute_net_dials_total\{(?=[^}]*kind="bootstrap")(?=[^}]*outcome="failed")[^}]*\} [1-9]/m);
      assert.match(m, /^c0mpute_net_connections\{[^}]*\} [1-9]/m, 'an open connection (either side may have redialled first)');
      assert.match(m, /^c0mpute_net_connection_events_total\{[^}]*event="close"[^}]*\} [1-9]/m);
      assert.match(m, /^c0mpute_gossip_peer_score\{[^}]*stat="min"[^}]*\} /m);
    });
  });
}

test('a buyer with a wrong PeerId in its bootstrap entry says so in run (API and CLI)', async () => {
  await withLogs(c, async () => {
    // The provider's address with another node's PeerId: the dial reaches a node whose key does not match.
    const other = c.dataDir('someone-else');
    const wrong = bootstrapAddr(prov).replace(/\/p2p\/.*$/, `/p2p/${peerIdFromDid(other.did).toString()}`);
    const lonely = await c.start('lonely', buyerConfig({ bootstrap: [wrong], collectWindowMs: 1000 }));
    const st = await waitFor('the bootstrap dial to fail', async () => {
      const s = await get<{ network: { code?: string; bootstrap: Array<{ code?: string }> } }>(lonely, '/v1/status');
      return s.network.bootstrap[0]?.code ? s.network : undefined;
    });
    assert.equal(st.code, 'NET_NO_PEERS');
    assert.equal(st.bootstrap[0]!.code, 'NET_PEER_ID_MISMATCH');

    const { result, events } = await runJob(lonely, spec('alone'));
    assert.equal(result.status, 'no-offers');
    const ev = events.find((e) => e.e === 'network');
    assert.equal(ev?.code, 'NET_NO_PEERS', 'run narrates the missing peers before publishing');
    assert.equal((result.network as { code: string }).code, 'NET_NO_PEERS', 'and says it beside "no offers"');

    const f = join(c.root, 'alone.yaml');
    writeFileSync(f, ['workload: builtin.sha256', 'params: 5', 'maxPrice: 0.01 USD', 'deadline: 30s', 'input: hello', ''].join('\n'));
    const r = await c0mpute(lonely.dir, ['run', f]);
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /NET_NO_PEERS/);
    assert.match(r.err, /another PeerId/);
    const st2 = await c0mpute(lonely.dir, ['status']);
    assert.equal(st2.code, 0, st2.err);
    assert.match(st2.out, /^network\s+⚠ this node has no peers: bootstrap .*another PeerId.*\[NET_NO_PEERS\]$/m);
    await c.stop(lonely);
  });
});

test('a bootstrap entry that keeps failing is said under an ok network line in status, while another keeps the node connected (QA qaNet F5)', async () => {
  await withLogs(c, async () => {
    const other = c.dataDir('someone-else');
    const wrong = bootstrapAddr(prov).replace(/\/p2p\/.*$/, `/p2p/${peerIdFromDid(other.did).toString()}`);
    const half = await c.start('half', buyerConfig({ bootstrap: [bootstrapAddr(prov), wrong] }));
    const st = await waitFor('an ok network with the wrong entry failing', async () => {
      const s = await get<{ network: { state: string; warnings?: Array<{ code: string; message: string }> } }>(half, '/v1/status');
      return s.network.state === 'ok' && s.network.warnings?.length ? s.network : undefined;
    });
    assert.deepEqual(st.warnings!.map((w) => w.code), ['NET_PEER_ID_MISMATCH']);
    // the human lines: before, only "network 1 peer, 1 live advert", the failing entry in --json alone
    const out = await c0mpute(half.dir, ['status']);
    assert.equal(out.code, 0, out.err);
    assert.match(out.out, /^network\s+\d+ peers?, 1 live advert$/m);
    assert.match(out.out, new RegExp(`^ {16}⚠ bootstrap ${wrong.replace(/[/.]/g, '\\$&')} is not connected: the peer at that address has another PeerId \\(check the /p2p/ part of network.bootstrap\\) \\(\\d+ dials? failed, still retrying\\) \\[NET_PEER_ID_MISMATCH\\]$`, 'm'));
    await c.stop(half);
  });
});
