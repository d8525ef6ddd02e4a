import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { Network } from '../../src/net/node.js';
import { shardOf, topicFor } from '../../src/net/topics.js';
import { withhold } from '../../src/net/faults.js';
import { Ed25519Signer } from '../../src/records/index.js';
import { MemoryRecordCache } from '../../src/net/record-cache.js';
import { advert, link, offer, startNode, stopAll, waitFor, sleep } from './net-helpers.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

async function metric(n: Network, name: string): Promise<string> {
  return n.metrics.registry.getSingleMetricAsString(name);
}

test('a hostile node: tampered records never reach honest subscribers, honest traffic flows, its score falls below zero', async () => {
  const hostile = await startNode({ syncOnConnect: [] });
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(hostile, a, b);
  await link(hostile, a, ['advert', 'offer']);
  await link(a, b, ['advert', 'offer']);
  const got: Record<string, string[]> = { a: [], b: [] };
  a.subscribe('advert', (r) => void got.a!.push(r.address));
  b.subscribe('advert', (r) => void got.b!.push(r.address));
  a.subscribe('offer', (r) => void got.a!.push(r.address));
  b.subscribe('offer', (r) => void got.b!.push(r.address));
  await sleep(400);

  // adverts on the market of the helpers' workload (docs/network.md §14)
  const raw = (kind: 'advert' | 'offer', bytes: Uint8Array) => hostile.libp2p.services.pubsub.publish(kind === 'advert' ? topicFor(kind, 'public', shardOf('infer.llm')) : topicFor(kind), bytes);
  const s = Ed25519Signer.generate();
  const bad: Uint8Array[] = [];
  // bit-flipped signature
  for (let i = 0; i < 3; i++) {
    const x = Uint8Array.from(advert(s).bytes);
    x[x.length - 5]! ^= 0x01;
    bad.push(x);
  }
  // a valid offer on the advert topic (wrong content type)
  const ad = advert(s);
  bad.push(offer(s, ad.address).bytes);
  // malformed bytes
  bad.push(Uint8Array.from([0xd2, 0x84, 1, 2, 3]), new TextEncoder().encode('hello, world'));
  // tampered payload (a field changed after signing)
  const t = Uint8Array.from(advert(s).bytes);
  bad.push(t.map((v, i) => (i === 40 ? v ^ 0x02 : v)));
  for (const x of bad) await raw('advert', x);
  // an offer framed with an advert it does not cite
  const other = advert(s);
  const { encodeMessage } = await import('../../src/net/framing.js');
  await raw('offer', encodeMessage(offer(s, ad.address).bytes, [other.bytes]));
  // expired records: ignored, not penalised
  const old = Date.now() - 3_600_000;
  await raw('advert', advert(s, { issuedAt: old, expiresAt: old + 60_000 }).bytes);

  // Wait for every verdict, not the first: under load the messages are validated one by one.
  const expected = ['ENVELOPE_BAD_SIGNATURE', 'RECORD_WRONG_TYPE', 'MESSAGE_BAD_ATTACHMENT', 'RECORD_EXPIRED'];
  await waitFor(async () => {
    const m0 = await metric(a, 'c0mpute_net_records_total');
    return expected.every((r) => m0.includes(`reason="${r}"`));
  }, 10_000, 'every verdict counted');
  await waitFor(() => a.gossipScore(hostile.peerId) < 0, 5_000, 'score below zero');
  const m = await metric(a, 'c0mpute_net_records_total');
  assert.match(m, /reason="ENVELOPE_BAD_SIGNATURE"/);
  assert.match(m, /reason="RECORD_WRONG_TYPE"/);
  assert.match(m, /reason="ENVELOPE_MALFORMED"|reason="MESSAGE_MALFORMED"/);
  assert.match(m, /reason="MESSAGE_BAD_ATTACHMENT"/);
  assert.match(m, /verdict="ignore",reason="RECORD_EXPIRED"/);
  assert.ok(a.gossipScore(hostile.peerId) < 0, `score ${a.gossipScore(hostile.peerId)}`);

  // honest traffic still flows both ways through a
  const h1 = advert(b.signer);
  await b.publish('advert', h1.bytes);
  const o = offer(b.signer, h1.address);
  await b.publish('offer', o.bytes, [h1.bytes]);
  await waitFor(() => got.a!.includes(h1.address) && got.a!.includes(o.address), 5_000, 'honest delivery');
  await sleep(300);
  assert.deepEqual(got.a, [h1.address, o.address]);
  assert.deepEqual(got.b, [], 'b hears nothing hostile, and not its own records');
  assert.ok(b.gossipScore(a.peerId) >= 0, 'the honest relay is not penalised');
});

test('an offer framed with its advert delivers both, once each, the advert first', async () => {
  const a = await startNode({ syncOnConnect: [] });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  await link(a, b, ['advert', 'offer']);
  await sleep(300);
  const ads: string[] = [];
  const offs: Array<{ addr: string; att: string[] }> = [];
  const order: string[] = [];
  b.subscribe('advert', (r) => void ads.push(r.address));
  b.subscribe('offer', (r, meta) => void offs.push({ addr: r.address, att: meta.attachments.map((x) => x.address) }));
  // a handler that takes a while (as a LevelDB write does) must still be done before the offer citing it arrives
  b.subscribe('advert', async (r) => {
    await sleep(50);
    order.push(r.address);
  });
  b.subscribe('offer', (r) => void order.push(r.address));
  const ad = advert(a.signer);
  const o1 = offer(a.signer, ad.address);
  const o2 = offer(a.signer, ad.address, { durationMs: 2000 });
  await a.publish('offer', o1.bytes, [ad.bytes]);
  await a.publish('offer', o2.bytes, [ad.bytes]);
  await waitFor(() => offs.length === 2);
  await sleep(200);
  assert.deepEqual(ads, [ad.address]);
  assert.deepEqual(offs[0], { addr: o1.address, att: [ad.address] });
  assert.deepEqual(offs[1]!.att, [ad.address]);
  // delivered in citation order: what a buyer woken by the offer decides on already knows the advert
  assert.deepEqual(order, [ad.address, o1.address, o2.address]);
});

test('a withholding relay: the far node sees fewer records, never a false one', async () => {
  const p = await startNode({ syncOnConnect: [] });
  const relay = await startNode({ syncOnConnect: [] });
  const c = await startNode({ syncOnConnect: [] });
  nets.push(p, relay, c);
  await link(p, relay);
  await link(relay, c);
  const published = new Set<string>();
  const withheld = new Set<string>();
  withhold(relay, 'advert', (rec) => withheld.has(rec.address));
  const got: string[] = [];
  c.subscribe('advert', (r) => void got.push(r.address));
  await sleep(300);
  for (let i = 0; i < 8; i++) {
    const a = advert(Ed25519Signer.generate());
    published.add(a.address);
    if (i % 2) withheld.add(a.address);
    await p.publish('advert', a.bytes);
    // the relay also tries to pass off a forged twin of what it withholds
    if (i % 2) {
      const forged = Uint8Array.from(a.bytes);
      forged[forged.length - 1]! ^= 0x80;
      await relay.libp2p.services.pubsub.publish(topicFor('advert', 'public', shardOf('infer.llm')), forged);
    }
  }
  await waitFor(() => got.length >= 4, 5_000, 'delivery');
  await sleep(500);
  assert.equal(got.length, 4, 'c sees only what the relay passed on');
  for (const g of got) {
    assert.ok(published.has(g), 'never a record that was not published');
    assert.ok(!withheld.has(g));
  }
  assert.ok(c.gossipScore(relay.peerId) < 0, 'the forging relay is penalised');
});

test('a genuine record sent first on another kind’s topic is refused there, and still taken on its own, by gossip and by sync', async () => {
  // Mallory has a genuine advert before its honest relays do and sends the same bytes on the job topic. The refusal
  // there (RECORD_WRONG_TYPE) depends on the topic, not the bytes: it must not make the advert's own copies refused
  // (PREVIOUSLY_REJECTED, or gossipsub's duplicate of a message id it refused) nor their relays penalised.
  const shard = shardOf('infer.llm');
  const held = new MemoryRecordCache();
  const v = await startNode({ syncOnConnect: [], verifyThreads: 0 });
  const mallory = await startNode({ syncOnConnect: [], verifyThreads: 0 });
  const h = await startNode({ syncOnConnect: [], verifyThreads: 0, records: held });
  nets.push(v, mallory, h);
  await link(v, mallory, ['advert', 'job']);
  await link(v, h, ['advert']);
  const got: string[] = [];
  v.subscribe('advert', (r) => void got.push(r.address));
  const r1 = advert(Ed25519Signer.generate()); // to come by gossip
  const r2 = advert(Ed25519Signer.generate()); // to come by sync
  const gs = mallory.libp2p.services.pubsub as unknown as { sendRpc(id: string, rpc: unknown): boolean };
  for (const r of [r1, r2]) gs.sendRpc(v.peerId.toString(), { subscriptions: [], messages: [{ topic: topicFor('job', 'public', shard), data: r.bytes }] });
  await waitFor(async () => /verdict="reject",reason="RECORD_WRONG_TYPE"} 2/.test(await metric(v, 'c0mpute_net_records_total')), 5_000, 'both refused on the job topic');
  await waitFor(() => v.gossipScore(mallory.peerId) < 0, 5_000, 'the sender of the wrong copies penalised');

  // by gossip: h (the honest relay) publishes the advert on its own topic
  await h.publish('advert', r1.bytes);
  await waitFor(() => got.includes(r1.address), 5_000, 'the advert by gossip');
  // by sync: h holds the other one (its record cache), never gossiped
  held.add('advert', r2);
  const res = await v.syncFrom(h.peerId.toString(), ['advert']);
  assert.equal(res.rejected, 0, JSON.stringify(res));
  assert.ok(got.includes(r2.address), `the advert by sync: ${JSON.stringify(res)}`);
  assert.deepEqual([...got].sort(), [r1.address, r2.address].sort());
  const m = await metric(v, 'c0mpute_net_records_total');
  assert.doesNotMatch(m, /PREVIOUSLY_REJECTED/);
  assert.ok(v.gossipScore(h.peerId) >= 0, `the honest relay is not penalised: ${v.gossipScore(h.peerId)}`);
});
