/**
 * Markets (issue #16; docs/network.md §14): advert, job and presence topics are
 * sharded by workload, and so is a job's outcome (selection, receipt,
 * acceptance, non-delivery). A node joined to one market gets that market's adverts —
 * by gossip and by sync — and never another market's; a relay on every shard
 * carries both; an advert on the wrong shard is kept but not passed on.
 */
import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { Network } from '../../src/net/node.js';
import { Ed25519Signer, didFromPublicKey, seal, T } from '../../src/records/index.js';
import type { C0Error } from '../../src/errors.js';
import { shardOf, topicFor } from '../../src/net/topics.js';
import { MemoryRecordCache } from '../../src/net/record-cache.js';
import type { GossipInternals } from '../../src/net/link-hosts.js';
import { advert, link, offer, startNode, stopAll, waitFor, sleep } from './net-helpers.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

// two workloads on different shards
const W1 = 'infer.llm';
const W2 = ['builtin.sha256', 'builtin.sleep', 'tensor.matmul', 'w2', 'w3', 'w4'].find((w) => shardOf(w) !== shardOf(W1))!;

test('a node on one market gets its adverts by gossip and by sync, never another market’s; a relay carries both', async () => {
  const relay = await startNode({ syncOnConnect: [] });
  const a = await startNode({ syncOnConnect: [], shards: [shardOf(W1)] });
  const b = await startNode({ syncOnConnect: [], shards: [shardOf(W2)] });
  nets.push(relay, a, b);
  await link(a, relay, ['advert']);
  await link(b, relay, ['advert']);
  const got: Record<string, string[]> = { relay: [], a: [], b: [] };
  for (const [n, net] of [['relay', relay], ['a', a], ['b', b]] as const) net.subscribe('advert', (r) => void got[n]!.push(r.address));

  const ad1 = advert(Ed25519Signer.generate(), { workloads: [W1] });
  const ad2 = advert(b.signer, { workloads: [W2] });
  await relay.publish('advert', ad1.bytes);
  await b.publish('advert', ad2.bytes);
  await waitFor(() => got.a!.includes(ad1.address) && got.relay!.includes(ad2.address), 10_000, 'each market’s advert');
  await sleep(500);
  assert.deepEqual(got.a, [ad1.address], 'a holds only its market');
  assert.deepEqual(got.b, [], 'b published its own; it never hears the other market');
  assert.deepEqual(got.relay, [ad2.address]);

  // Sync follows the markets: a newcomer on W2's market gets W2's adverts from the relay, not W1's.
  const c = await startNode({ syncOnConnect: ['advert'], shards: [shardOf(W2)] });
  nets.push(c);
  const gotC: string[] = [];
  c.subscribe('advert', (r) => void gotC.push(r.address));
  await c.dial(relay.addrs()[0]!);
  await waitFor(() => gotC.length > 0, 10_000, 'the newcomer’s sync');
  await sleep(300);
  assert.deepEqual(gotC, [ad2.address]);

  // An advert published on another market's shard: a takes it (it is valid) but does not pass it on to a2 behind it.
  const a2 = await startNode({ syncOnConnect: [], shards: [shardOf(W1)] });
  nets.push(a2);
  await link(a2, a, ['advert']);
  const gotA2: string[] = [];
  a2.subscribe('advert', (r) => void gotA2.push(r.address));
  const control = advert(Ed25519Signer.generate(), { workloads: [W1] });
  const misplaced = advert(Ed25519Signer.generate(), { workloads: [W2] });
  await relay.libp2p.services.pubsub.publish(topicFor('advert', 'public', shardOf(W1)), misplaced.bytes);
  await relay.publish('advert', control.bytes);
  await waitFor(() => gotA2.includes(control.address), 10_000, 'the control advert through a');
  await sleep(500);
  assert.ok(!gotA2.includes(misplaced.address), 'an advert on another market’s shard is not passed on');
  assert.match(await a.metrics.registry.getSingleMetricAsString('c0mpute_net_records_total'), /reason="TOPIC_WRONG_SHARD"/);
});

test('a copy on a wrong market sent first hides nothing: the node passes the record on in its own market, and the honest relays of the right copy are not scored down', async () => {
  // n is on both markets; mallory sends W2's advert first on W1's topic; h relays the right copy; d hears only n, on W2
  const n = await startNode({ syncOnConnect: [], shards: [shardOf(W1), shardOf(W2)].sort() });
  const mallory = await startNode({ syncOnConnect: [], shards: [shardOf(W1)] });
  const h = await startNode({ syncOnConnect: [], shards: [shardOf(W2)] });
  const d = await startNode({ syncOnConnect: [], shards: [shardOf(W2)] });
  nets.push(n, mallory, h, d);
  for (const x of [mallory, h, d]) await link(x, n, ['advert']);
  const gotN: string[] = [];
  const gotD: string[] = [];
  n.subscribe('advert', (r) => void gotN.push(r.address));
  d.subscribe('advert', (r) => void gotD.push(r.address));
  const ad = advert(Ed25519Signer.generate(), { workloads: [W2] });
  await mallory.libp2p.services.pubsub.publish(topicFor('advert', 'public', shardOf(W1)), ad.bytes);
  await waitFor(() => gotN.includes(ad.address), 10_000, 'n to take the misplaced copy');
  // the right copy, from an honest relay: a duplicate at n by its id, which must cost h nothing
  await h.libp2p.services.pubsub.publish(topicFor('advert', 'public', shardOf(W2)), ad.bytes);
  await waitFor(() => gotD.includes(ad.address), 10_000, 'd, behind n on the right market, to get the advert');
  await sleep(300);
  const gs = n.libp2p.services.pubsub as unknown as GossipInternals;
  assert.ok(gs.getScore(h.peerId.toString()) >= 0, `h's score at n: ${gs.getScore(h.peerId.toString())}`);
  assert.ok(gs.getScore(mallory.peerId.toString()) < 0, 'the sender of the misplaced copy is scored down');
  assert.match(await n.metrics.registry.getSingleMetricAsString('c0mpute_net_records_total'), /reason="TOPIC_WRONG_SHARD"/);
});

test('an advert of two markets reaches the nodes of either, from its publisher and through a relay', async () => {
  // the same bytes on two topics are one gossipsub message id: without the copies (shard-copies.ts) only the first market heard it
  const relay = await startNode({ syncOnConnect: [] });
  const p = await startNode({ syncOnConnect: [], shards: [shardOf(W1), shardOf(W2)].sort() });
  const a = await startNode({ syncOnConnect: [], shards: [shardOf(W1)] });
  const b = await startNode({ syncOnConnect: [], shards: [shardOf(W2)] });
  const b2 = await startNode({ syncOnConnect: [], shards: [shardOf(W2)] });
  nets.push(relay, p, a, b, b2);
  for (const n of [p, a, b]) await link(n, relay, ['advert']);
  await link(b2, b, ['advert']);
  const got = new Map<Network, string[]>([a, b, b2, relay].map((n) => [n, []]));
  for (const [net, list] of got) net.subscribe('advert', (r) => void list.push(r.address));

  // through the relay: p is linked to nobody else
  const both = advert(p.signer, { workloads: [W1, W2].sort() });
  await p.publish('advert', both.bytes);
  await waitFor(() => [...got.values()].every((l) => l.includes(both.address)), 10_000, 'the advert at every node of either market');
  // from its publisher straight to its neighbours: the relay's second-market neighbour gets the copy, the first's the message
  const direct = advert(Ed25519Signer.generate(), { workloads: [W1, W2].sort() });
  await relay.publish('advert', direct.bytes);
  await waitFor(() => [a, b, b2].every((n) => got.get(n)!.includes(direct.address)), 10_000, 'the relay’s advert at every node');
});

test('a record of two markets whose publisher has no peer on its first market still reaches that market, through the second', async () => {
  // p (both markets) — b (second market only) — a (first market only): the copies are sent to peers not on the topic a
  // record came in on, so b passes it to a on the first market's topic (shard-copies.ts)
  const [s1, s2] = [shardOf(W1), shardOf(W2)].sort() as [string, string];
  const w1 = shardOf(W1) === s1 ? W1 : W2;
  const w2 = w1 === W1 ? W2 : W1;
  const p = await startNode({ syncOnConnect: [], shards: [s1, s2] });
  const b = await startNode({ syncOnConnect: [], shards: [s2] });
  const a = await startNode({ syncOnConnect: [], shards: [s1] });
  nets.push(p, b, a);
  await link(p, b, ['advert']);
  await a.dial(b.addrs()[0]!);
  await waitFor(() => a.libp2p.getPeers().length > 0 && b.libp2p.getPeers().length > 1, 5_000, 'a linked to b');
  await sleep(300);
  const got: string[] = [];
  a.subscribe('advert', (r) => void got.push(r.address));
  const both = advert(p.signer, { workloads: [w1, w2].sort() });
  await p.publish('advert', both.bytes);
  await waitFor(() => got.includes(both.address), 10_000, 'the advert on the first market, through b');
});

test('a job’s outcome stays in its market: a selection (placed by its publisher) and a receipt reach that market’s node, not the other’s', async () => {
  const relay = await startNode({ syncOnConnect: [] });
  const a = await startNode({ syncOnConnect: [], shards: [shardOf(W1)] });
  const b = await startNode({ syncOnConnect: [], shards: [shardOf(W2)] });
  nets.push(relay, a, b);
  await link(a, relay, ['receipt', 'selection']);
  await link(b, relay, ['receipt', 'selection']);
  const got: Record<string, string[]> = { a: [], b: [] };
  for (const [n, net] of [['a', a], ['b', b]] as const) for (const k of ['selection', 'receipt'] as const) net.subscribe(k, (r) => void got[n]!.push(`${k} ${r.address}`));

  const buyer = Ed25519Signer.generate();
  const provider = Ed25519Signer.generate();
  const [bd, pd] = [didFromPublicKey(buyer.publicKey), didFromPublicKey(provider.publicKey)];
  const now = Date.now();
  const job = 'sha256:' + '1a'.repeat(32);
  const offer = 'sha256:' + '2b'.repeat(32);
  const selection = seal(T.selection, { job, buyer: bd, policy: 'cheapest', winner: offer, considered: [{ provider: pd, offer }], decidedAt: now }, buyer);
  const receipt = seal(T.receipt, { job, offer, buyer: bd, provider: pd, workload: W2, status: 'completed', startedAt: now - 2000, completedAt: now - 1000, inputHash: 'sha256:' + '3c'.repeat(32), outputHash: 'sha256:' + '4d'.repeat(32), outputSize: 3, price: { amount: '0.01', currency: 'USD' }, energy: { uj: 1000, grade: 'Estimator' } }, provider);
  // a selection does not name its market: without the job's workload it has no topic
  await assert.rejects(relay.publish('selection', selection.bytes), (e: C0Error) => e.code === 'NET_NO_SHARD');
  await relay.publish('selection', selection.bytes, [], { workload: W1 });
  await relay.publish('receipt', receipt.bytes);
  await waitFor(() => got.a!.length > 0 && got.b!.length > 0, 10_000, 'each market’s outcome');
  await sleep(500);
  assert.deepEqual(got.a, [`selection ${selection.address}`]);
  assert.deepEqual(got.b, [`receipt ${receipt.address}`]);
});

test('records pushed on topics the node did not join are neither delivered nor kept, and do not hide a copy on a joined topic', async () => {
  // v joins W1's market only, and publishes offers without joining their topic; mallory pushes records to it by raw RPC
  // on W2's shard and on the offer topic (an honest gossipsub never sends a peer a topic it did not subscribe to)
  const held = new MemoryRecordCache();
  const v = await startNode({ syncOnConnect: [], shards: [shardOf(W1)], publishOnly: ['offer'], records: held, verifyThreads: 0 });
  const mallory = await startNode({ syncOnConnect: [], verifyThreads: 0 });
  nets.push(v, mallory);
  await link(v, mallory, ['advert']);
  await waitFor(() => mallory.topicPeers('offer').length === 0 && v.topicPeers('offer').includes(mallory.peerId.toString()), 5_000, 'v knows mallory on the offer topic');
  const got: string[] = [];
  v.subscribe('advert', (r) => void got.push(r.address));
  v.subscribe('offer', (r) => void got.push(r.address));
  const mGot: string[] = [];
  mallory.subscribe('advert', (r) => void mGot.push(r.address));
  mallory.subscribe('offer', (r) => void mGot.push(r.address));

  const gs = mallory.libp2p.services.pubsub as unknown as { sendRpc(id: string, rpc: unknown): boolean };
  const push = (topic: string, data: Uint8Array) => gs.sendRpc(v.peerId.toString(), { subscriptions: [], messages: [{ topic, data }] });
  const other = advert(Ed25519Signer.generate(), { workloads: [W2] });
  const both = advert(Ed25519Signer.generate(), { workloads: [W1, W2].sort() });
  const o = offer(Ed25519Signer.generate(), other.address);
  push(topicFor('advert', 'public', shardOf(W2)), other.bytes);
  push(topicFor('advert', 'public', shardOf(W2)), both.bytes);
  push(topicFor('offer'), o.bytes);
  const ignored = async (kind: string, n: number) => new RegExp(`kind="${kind}",verdict="ignore",reason="TOPIC_NOT_JOINED"} ${n}$`, 'm').test(await v.metrics.registry.getSingleMetricAsString('c0mpute_net_records_total'));
  await waitFor(async () => (await ignored('advert', 2)) && (await ignored('offer', 1)), 5_000, 'the three ignored');
  await sleep(200);
  assert.equal(got.length, 0, 'nothing of a topic v did not join is delivered');
  assert.equal(held.live('advert', Date.now(), 100).length, 0, 'nor kept (it would be served to others)');
  assert.ok(v.gossipScore(mallory.peerId) >= 0, 'ignored, not penalised');

  // the advert of both markets, now on v's market: taken (the copy on the other shard did not make it a duplicate)
  await mallory.publish('advert', both.bytes);
  await waitFor(() => got.includes(both.address), 5_000, 'the two-market advert on v’s market');
  // v still publishes what it does not join: an offer, and an advert of the other market
  const mine = advert(v.signer, { workloads: [W2] });
  await v.publish('advert', mine.bytes);
  await v.publish('offer', offer(v.signer, mine.address).bytes);
  await waitFor(() => mGot.length === 2, 5_000, 'v’s publications at mallory');
  assert.deepEqual(got, [both.address]);
});
