/**
 * A job reaches every connected provider that fits it, even when gossip lost
 * it (issue #10, "Also noticed"): the provider (an in-process Daemon on a real
 * data dir, so its gossip can be faulted) withholds every gossiped job, as an
 * overloaded node whose delivery queue dropped them would, and has no
 * anti-entropy; the buyer (a real process, connected to it) pushes its job
 * over /c0mpute/job-push/1 halfway through the offer window, gets the offer
 * back on the same stream, and the job completes.
 */
import '../../src/polyfill.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { openSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon } from '../../src/node/daemon.js';
import { parseConfig } from '../../src/node/config.js';
import { loadIdentity } from '../../src/node/identity.js';
import { createLogger } from '../../src/util/log.js';
import { withhold } from '../../src/net/faults.js';
import { Cluster, buyerConfig, runJob, waitForMarket, withLogs } from './node-helpers.js';
import { providerConfig } from './node-helpers.js';

const c = new Cluster('job-push');
after(async () => {
  await c.destroy();
});

test('a connected provider that gossip did not reach gets the job pushed directly, quotes, and runs it', async () => {
  await withLogs(c, async () => {
    const { dir, did } = c.dataDir('p');
    const raw = providerConfig({ price: '0.002' });
    (raw.network as Record<string, unknown>).resyncMs = 0;
    const log = createLogger({ level: 'info', format: 'json', fd: openSync(join(dir, 'node.log'), 'a') });
    const p = await Daemon.start({ dataDir: dir, config: parseConfig(raw), identity: loadIdentity(dir), log });
    c.onDestroy(() => p.stop());
    let withheld = 0;
    withhold(p.net, 'job', () => (withheld++, true));

    const b = await c.start('b', buyerConfig({ bootstrap: [p.net.addrs().find((a) => a.includes('127.0.0.1'))!], collectWindowMs: 5000 }));
    await waitForMarket(b, 1, [did]);
    const { result, events } = await runJob(b, { workload: 'builtin.sha256', params: '10', maxPrice: { amount: '0.01', currency: 'USD' }, deadlineMs: 60_000, input: Buffer.from('pushed, not gossiped').toString('base64') });
    assert.ok(withheld >= 1, 'gossip brought the job to the provider, which withheld it');
    assert.equal(result.status, 'completed', JSON.stringify(result.attempts));
    const offers = events.filter((e) => e.e === 'offer');
    assert.equal(offers.length, 1);
    assert.equal((offers[0]!.offer as { signer: string }).signer, did);
  });
});
