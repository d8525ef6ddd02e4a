/**
 * A pooled offer's non-delivery (`c0mpute.nondelivery/2`) travels on a topic
 * kind of its own, `nondelivery2` (docs/network.md §2): a node of the previous
 * version knows only `nondelivery`, whose topics carry `/1`, and would refuse a
 * `/2` there (RECORD_WRONG_TYPE) and score its relay down. It never joins the
 * `/2` topics, so gossipsub never sends it one. Here the "previous-version"
 * node is one that joins every kind but `nondelivery2`, as such a node does.
 */
import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { Network } from '../../src/net/node.js';
import { TOPIC_KINDS, shardOf, topicFor } from '../../src/net/topics.js';
import { nondeliveryHook } from '../../src/node/reputation-trust.js';
import { OUTCOME_EVIDENCE_KINDS } from '../../src/node/markets.js';
import { signNonDelivery } from '../../src/reputation/nondelivery.js';
import '../../src/pools/chain.js';
import { seal, T, type Advert, type Opened, type Selection } from '../../src/records/index.js';
import { NOW, P, job, offer } from '../unit/market/fixtures.js';
import { MEMBERS, keyOf, pooledAdvert, proof, roster } from '../unit/pools/helpers.js';
import { link, startNode, stopAll, waitFor } from './net-helpers.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

const BUYER = P(300);
const member = MEMBERS[0]!;
const mk = keyOf(member);
const AD = seal(T.advert, { ...pooledAdvert(proof(roster(), mk)), workloads: ['infer.llm'], issuedAt: NOW - 1000 }, mk) as Opened<Advert>;

/** A non-delivery on the member's offer: a /2 with the pooled advert, a /1 without it. */
function nondelivery(n: number, pooled: boolean) {
  const j = job(BUYER, { nonce: new Uint8Array([n]) });
  const o = offer({ did: member, signer: mk } as never, j, AD);
  const s = seal(T.selection, { job: j.address, buyer: BUYER.did, policy: 'trusted', winner: o.address, considered: [{ provider: member, offer: o.address }], decidedAt: NOW }, BUYER.signer) as Opened<Selection>;
  return signNonDelivery({ job: j, selection: s, offer: o, reason: 'refused', signedAt: NOW + 1, signer: BUYER.signer, ...(pooled ? { advert: AD } : {}) });
}

test('a /2 goes only on the nondelivery2 topics, which a previous-version node does not join: it never receives one', async () => {
  assert.ok(OUTCOME_EVIDENCE_KINDS.includes('nondelivery2'), 'a node joins the /2 topics wherever it joins the /1 ones');
  const hooks = { nondelivery: nondeliveryHook, nondelivery2: nondeliveryHook };
  const a = await startNode({ syncOnConnect: [], hooks });
  const b = await startNode({ syncOnConnect: [], hooks });
  const old = await startNode({ syncOnConnect: [], hooks: { nondelivery: nondeliveryHook }, topics: TOPIC_KINDS.filter((k) => k !== 'nondelivery2') });
  nets.push(a, b, old);
  await link(a, b, ['nondelivery', 'nondelivery2']);
  await link(a, old, ['nondelivery']);
  assert.ok(!a.topicPeers('nondelivery2').includes(old.peerId.toString()), 'the previous-version node is on no /2 topic');

  const got: Record<string, string[]> = { b: [], old: [] };
  for (const k of ['nondelivery', 'nondelivery2'] as const) b.subscribe(k, (r) => void got.b!.push(`${k}:${r.type}`));
  old.subscribe('nondelivery', (r) => void got.old!.push(`nondelivery:${r.type}`));

  const nd2 = nondelivery(1, true);
  const nd1 = nondelivery(2, false);
  assert.equal(nd2.type, T.nondelivery2);
  assert.equal(nd1.type, T.nondelivery);
  // a /2 never leaves on a /1 topic: publish opens it as the topic's type first
  await assert.rejects(a.publish('nondelivery', nd2.bytes), { code: 'RECORD_WRONG_TYPE' });
  await assert.rejects(a.publish('nondelivery2', nd1.bytes), { code: 'RECORD_WRONG_TYPE' });
  // the /2 first, then a /1: the previous-version node gets the /1 over the same stream, so had the /2 been sent
  // it would have come before
  const sent = await a.publish('nondelivery2', nd2.bytes);
  assert.equal(sent.recipients, 1, 'only the current node is on the /2 topic');
  await a.publish('nondelivery', nd1.bytes);
  await waitFor(() => got.b!.length === 2 && got.old!.length === 1, 10_000, 'both records at b, the /1 at the previous-version node');
  assert.deepEqual(got.b!.sort(), [`nondelivery2:${T.nondelivery2}`, `nondelivery:${T.nondelivery}`].sort());
  assert.deepEqual(got.old, [`nondelivery:${T.nondelivery}`]);
  // nothing refused, nobody scored down
  const metrics = await old.metrics.registry.getSingleMetricAsString('c0mpute_net_records_total');
  assert.doesNotMatch(metrics, /verdict="reject"/);
  assert.equal(topicFor('nondelivery2', 'public', shardOf('infer.llm')), `/c0mpute/1/public/nondelivery2/${shardOf('infer.llm')}`);

  // a records/1 sync of `nondelivery` from the node holding both serves the /1 only
  const fresh = await startNode({ syncOnConnect: [], hooks: { nondelivery: nondeliveryHook }, topics: TOPIC_KINDS.filter((k) => k !== 'nondelivery2') });
  nets.push(fresh);
  await fresh.dial(a.addrs()[0]!);
  const r = await fresh.syncFrom(a.peerId, ['nondelivery']);
  assert.deepEqual({ accepted: r.accepted, rejected: r.rejected }, { accepted: 1, rejected: 0 });
});
