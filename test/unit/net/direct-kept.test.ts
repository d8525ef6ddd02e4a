/**
 * A record sent directly (offer/1, outcome/1) is answered `accept` only once the node kept it (src/net/dispatch.ts
 * `Handled`, src/net/offer-route.ts `*_NOT_KEPT`): one its delivery queue dropped or a handler failed on is answered
 * OUTCOME_NOT_KEPT, which the sender takes as `not_kept` (send again later), and is forgotten as seen, so the copy
 * sent again is taken and stored rather than ignored as a duplicate. Real networks on 127.0.0.1.
 */
import '../../../src/polyfill.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createNetwork, type Network, type NetworkOptions } from '../../../src/net/node.js';
import { Dispatcher } from '../../../src/net/dispatch.js';
import { createNetMetrics } from '../../../src/net/metrics.js';
import { Ed25519Signer, seal, T } from '../../../src/records/index.js';
import { silentLogger } from '../../../src/util/log.js';
import { addr, NOW, provider, records } from '../records/fixtures.js';

const receipt = seal(T.receipt, records.receipt(), provider);
const other = seal(T.receipt, { ...records.receipt(), job: addr('2') }, provider);

async function node(over: Partial<NetworkOptions>, signer = Ed25519Signer.generate()): Promise<Network> {
  const n = await createNetwork({ signer, listen: ['/ip4/127.0.0.1/tcp/0'], loopback: true, connectivity: { minPeers: 0 }, verifyThreads: 0, syncOnConnect: [], clock: () => NOW + 2_000, ...over });
  await n.start();
  return n;
}

test('dispatcher: a push with a callback is told, once its handlers ran, whether they all took it; a dropped one at once', async () => {
  const d = new Dispatcher({ metrics: createNetMetrics(), log: silentLogger(), maxQueue: 1 });
  const seen: string[] = [];
  let fail = true;
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  d.subscribe('receipt', async () => {
    await gate;
    if (fail) throw new Error('disk full');
  });
  d.subscribe('receipt', (r) => void seen.push(r.address));
  const meta = { kind: 'receipt' as const, from: 'peer', source: 'direct' as const, attachments: [] };
  const told: Array<[string, boolean]> = [];
  d.push(receipt, meta, (kept) => void told.push(['first', kept])); // being handled (held at the gate)
  d.push(other, meta); // gossip's way: no callback; the queue's one place
  d.push(other, meta, (kept) => void told.push(['over the bound', kept]));
  assert.deepEqual(told, [['over the bound', false]], 'dropped: told at once');
  open();
  await d.drained();
  assert.deepEqual(told, [['over the bound', false], ['first', false]], 'a handler threw: not kept');
  assert.deepEqual(seen, [receipt.address, other.address], 'the other handlers still ran');
  fail = false;
  d.push(receipt, meta, (kept) => void told.push(['again', kept]));
  await d.drained();
  assert.deepEqual(told.at(-1), ['again', true]);
});

test('outcome/1: a receipt whose handler failed is answered not_kept, not accepted; sent again it is stored, then a copy is ignored', async () => {
  const buyer = await node({});
  const prov = await node({}, provider);
  try {
    const stored: string[] = [];
    let disk = 'full';
    buyer.subscribe('receipt', async (r) => {
      if (disk === 'full') throw new Error('LEVEL_IO_ERROR: no space left on device');
      stored.push(r.address);
    });
    await prov.dial(buyer.addrs()[0]!);
    assert.deepEqual((await prov.sendOutcome('receipt', [buyer.did], receipt.bytes)).outcomes, { [buyer.did]: 'not_kept' });
    assert.deepEqual(stored, []);
    disk = 'ok';
    assert.deepEqual((await prov.sendOutcome('receipt', [buyer.did], receipt.bytes)).outcomes, { [buyer.did]: 'accepted' }, 'the copy sent again is taken, not a duplicate');
    assert.deepEqual(stored, [receipt.address], 'and stored before the answer');
    assert.deepEqual((await prov.sendOutcome('receipt', [buyer.did], receipt.bytes)).outcomes, { [buyer.did]: 'ignored' }, 'once kept, a copy is a duplicate');
    assert.match(await prov.metrics.registry.getSingleMetricAsString('c0mpute_outcomes_direct_total'), /kind="receipt",outcome="not_kept"\} 1/);
  } finally {
    await prov.stop();
    await buyer.stop();
  }
});

test('outcome/1: a receipt its full delivery queue dropped is answered not_kept, and so again when sent again (not ignored as a duplicate)', async () => {
  const buyer = await node({ maxDeliveryQueue: 0 });
  const prov = await node({}, provider);
  try {
    const stored: string[] = [];
    buyer.subscribe('receipt', (r) => void stored.push(r.address));
    await prov.dial(buyer.addrs()[0]!);
    for (let i = 0; i < 2; i++) assert.deepEqual((await prov.sendOutcome('receipt', [buyer.did], receipt.bytes)).outcomes, { [buyer.did]: 'not_kept' });
    assert.deepEqual(stored, []);
  } finally {
    await prov.stop();
    await buyer.stop();
  }
});
