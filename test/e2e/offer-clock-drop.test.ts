/**
 * A provider whose clock runs ahead, across processes (docs/market.md "An offer dropped for its date"): the buyer's
 * job reaches it and it quotes, but the buyer drops the offer as dated from the future. The run's explanation says so
 * instead of a bare "no offers": the buyer noted the drop because the job is its own (the one it
 * announced; offers for jobs made up by a peer are never noted, src/net/clock-drops.ts). The provider runs with its
 * `Date` shifted by a preload (no product hook), the buyer on the machine's clock.
 */
import '../../src/polyfill.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster, bootstrapAddr, buyerConfig, c0mpute, get, providerConfig, waitFor, withLogs } from './node-helpers.js';

const c = new Cluster('offer-clock-drop');
after(async () => {
  await c.destroy();
});

const SKEW = 45_000;

test('a provider 45 s ahead quotes, its offer is dropped, and the run says why with the offer’s offset', async () => {
  await withLogs(c, async () => {
    const skew = join(c.root, 'skew.mjs');
    writeFileSync(skew, `const off = ${SKEW}; const R = Date; const now = R.now.bind(R);\nclass D extends R { constructor(...a) { if (a.length === 0) super(now() + off); else super(...a); } static now() { return now() + off; } }\nglobalThis.Date = D;\n`);
    // no periodic re-sync: 15 s after it was issued the provider's first advert would come into the window from one
    // (the provider is the buyer's only peer), and the buyer would hear a market on a slow run
    const base = buyerConfig({ collectWindowMs: 2500 }) as { network: Record<string, unknown> };
    const buyer = await c.start('buyer', { ...base, network: { ...base.network, resyncMs: 0 } });
    const ahead = await c.start('ahead', providerConfig({ bootstrap: [bootstrapAddr(buyer)] }), { NODE_OPTIONS: `--import ${skew}` });
    await waitFor('the provider to be connected to the buyer', async () => (await get<{ peers: Array<{ did?: string }> }>(buyer, '/v1/peers')).peers.some((p) => p.did === ahead.did));
    const f = join(c.root, 'job.yaml');
    writeFileSync(f, ['workload: builtin.sha256', 'params: 5', 'maxPrice: 0.01 USD', 'deadline: 60s', 'input: hello', ''].join('\n'));
    const r = await c0mpute(buyer.dir, ['run', f]);
    assert.notEqual(r.code, 0, r.out);
    // its adverts are dated ahead too, so the buyer knows nothing else of it: the summary says it (docs/market.md)
    assert.match(r.out + r.err, /1 provider not known here sent an offer dropped for its dates \(RECORD_FROM_FUTURE\): a clock is wrong/);
    // and the network's health says why this node hears no market: that provider's adverts came dated ahead too
    const ahead4x = /hears no market: no live provider advert \(provider \S+'s adverts came dated \d+ s ahead of this node's clock, past the 30 s clock-skew window, and were dropped \(RECORD_FROM_FUTURE\)/;
    assert.match(r.out + r.err, ahead4x);
    const st = await c0mpute(buyer.dir, ['status']);
    assert.match(st.out, ahead4x);
  });
});
