/**
 * Offers go to the buyer only (issue #16; docs/network.md §13): three real
 * daemons — a provider and a buyer that each know only a relay node. The
 * buyer's job completes on the provider's offer, which arrived over
 * /c0mpute/offer/1 (source "direct" in the buyer's metrics); the relay, which
 * relays the job and the adverts, never receives the offer.
 */
import '../../src/polyfill.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Cluster, bootstrapAddr, buyerConfig, metricsText, providerConfig, runJob, waitForMarket, withLogs } from './node-helpers.js';

const c = new Cluster('offer-direct');
after(async () => {
  await c.destroy();
});

test('a provider’s offer reaches the buyer over a direct stream; the relay between them never sees it', async () => {
  await withLogs(c, async () => {
    const r = await c.start('r', buyerConfig());
    const p = await c.start('p', providerConfig({ price: '0.002', bootstrap: [bootstrapAddr(r)] }));
    const b = await c.start('b', buyerConfig({ bootstrap: [bootstrapAddr(r)], collectWindowMs: 4000 }));
    await waitForMarket(b, 1);
    const { result, events } = await runJob(b, { workload: 'builtin.sha256', params: '10', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 60_000, input: Buffer.from('to the buyer only').toString('base64') });
    assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
    assert.ok(events.some((e) => e.e === 'offer'));
    const bm = await metricsText(b);
    assert.match(bm, /c0mpute_net_records_total\{[^}]*source="direct"[^}]*kind="offer"[^}]*verdict="accept"[^}]*\} [1-9]/, 'the buyer took the offer from a direct stream');
    assert.match(await metricsText(p), /c0mpute_offers_direct_total\{[^}]*outcome="accepted"[^}]*\} [1-9]/);
    assert.doesNotMatch(await metricsText(r), /c0mpute_net_records_total\{[^}]*kind="offer"/, 'the relay never received an offer');
  });
});
