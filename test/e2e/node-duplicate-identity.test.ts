/**
 * A provider's identity.key copied onto a second daemon (a buyer), as QA qaNet F1 ran it with real daemons: the
 * buyer's exec streams went to the copy, which does not serve exec/1, and each job signed the honest provider an
 * `unreachable` non-delivery (NET_DIAL_FAILED), with nothing on any node naming the cause. Now the buyer's jobs reach
 * the provider, and its `status` and `peers` name the key held by two processes (docs/network.md §11 "Two processes
 * with one key").
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, get, providerConfig, runJob, waitFor, waitForMarket, withLogs, type NodeProc } from './node-helpers.js';

const c = new Cluster('dupkey');
let p: NodeProc;
let b: NodeProc;

before(async () => {
  await withLogs(c, async () => {
    p = await c.start('p', providerConfig({ price: '0.002' }));
    b = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(p)], collectWindowMs: 1500 }));
    await waitForMarket(b, 1, [p]);
    // the copy: p's key in a data directory of its own, run as a buyer that bootstraps through b (QA's `run/z`)
    const z = join(c.root, 'z');
    mkdirSync(z, { recursive: true, mode: 0o700 });
    copyFileSync(join(p.dir, 'identity.key'), join(z, 'identity.key'));
    await c.start('z', buyerConfig({ bootstrap: [bootstrapAddr(b)] }));
  });
});

after(async () => {
  await c.destroy();
});

test('a provider key held by a second daemon: the buyer names it in status and peers, and its jobs reach the provider with no non-delivery', async () => {
  await withLogs(c, async () => {
    const s = await waitFor('the buyer to name the duplicate', async () => {
      const st = await get<{ network: { state: string; warnings?: Array<{ code: string; message: string }> } }>(b, '/v1/status');
      return st.network.warnings?.some((w) => w.code === 'NET_DUPLICATE_IDENTITY') ? st : undefined;
    });
    assert.equal(s.network.state, 'ok');
    const w = s.network.warnings!.find((x) => x.code === 'NET_DUPLICATE_IDENTITY')!;
    assert.match(w.message, new RegExp(`^${p.did} is connected from 2 processes holding its one key`));
    assert.match(w.message, /\(serves exec\/1: a provider\)/);

    for (let i = 0; i < 2; i++) {
      const { result, events } = await runJob(b, { workload: 'builtin.sha256', params: '1000', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 30_000, input: Buffer.from(`job ${i}`).toString('base64') });
      assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
      assert.deepEqual((result.attempts as Array<{ provider: string }>).map((a) => a.provider), [p.did], 'one attempt, by the provider');
      assert.equal(events.filter((e) => e.e === 'nondelivery' || e.e === 'failover').length, 0);
    }

    const st = await c0mpute(b.dir, ['status']);
    assert.equal(st.code, 0, st.err);
    assert.match(st.out, /^ {16}⚠ did:key:\S+ is connected from 2 processes holding its one key .* \[NET_DUPLICATE_IDENTITY\]$/m);
    const peers = await c0mpute(b.dir, ['peers']);
    assert.match(peers.out, new RegExp(`^${p.did} .*⚠ 2 processes hold this key \\[NET_DUPLICATE_IDENTITY\\]$`, 'm'));
  });
});
