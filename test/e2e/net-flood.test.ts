/**
 * Valid-looking floods at the boundary, over real libp2p nodes on 127.0.0.1
 * (issue #10): semantic hooks on the no-attachment path, per-signer limits, and
 * the records/1 per-peer byte budget.
 */
import '../../src/polyfill.js';
import { test, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import type { Network } from '../../src/net/node.js';
import { topicFor } from '../../src/net/topics.js';
import { PROTOCOLS } from '../../src/net/protocols.js';
import { recordHooks, type RecordLookups } from '../../src/node/record-hooks.js';
import { Ed25519Signer } from '../../src/records/index.js';
import type { Opened } from '../../src/records/envelope.js';
import type { C0Error } from '../../src/errors.js';
import { advert, job, link, offer, startNode, stopAll, waitFor, sleep } from './net-helpers.js';

const nets: Network[] = [];
afterEach(async () => {
  await stopAll(nets.splice(0));
});

const metric = (n: Network, name: string) => n.metrics.registry.getSingleMetricAsString(name);

/** Hooks over what this node has accepted (as an overlay's would be over its stores). */
function heldHooks() {
  const held = new Map<string, Opened>();
  const get = (a: string) => held.get(a) as never;
  const l: RecordLookups = { advert: get, offer: get, job: get, receipt: get };
  return { hooks: recordHooks(l), hold: (r: Opened) => void held.set(r.address, r) };
}


test('an offer citing another provider’s advert without attaching it is rejected, not delivered nor relayed, and its sender’s score drops', async () => {
  const ha = heldHooks();
  const hb = heldHooks();
  const hostile = await startNode({ syncOnConnect: [] });
  const a = await startNode({ syncOnConnect: [], hooks: ha.hooks });
  const b = await startNode({ syncOnConnect: [], hooks: hb.hooks });
  nets.push(hostile, a, b);
  await link(hostile, a, ['advert', 'offer']);
  await link(a, b, ['advert', 'offer']);
  const got: Record<string, string[]> = { a: [], b: [] };
  a.subscribe('advert', (r) => void (ha.hold(r), got.a!.push(r.address)));
  b.subscribe('advert', (r) => void (hb.hold(r), got.b!.push(r.address)));
  a.subscribe('offer', (r) => void got.a!.push(r.address));
  b.subscribe('offer', (r) => void got.b!.push(r.address));
  await sleep(400);

  // an honest provider's advert reaches a (and b)
  const honest = advert(b.signer);
  await b.publish('advert', honest.bytes);
  await waitFor(() => got.a!.includes(honest.address), 10_000, 'the honest advert at a');
  // the hostile node quotes against it, without attaching it
  const foreign = [offer(hostile.signer, honest.address), offer(hostile.signer, honest.address, { durationMs: 2000 }), offer(hostile.signer, honest.address, { durationMs: 3000 })];
  for (const o of foreign) await hostile.libp2p.services.pubsub.publish(topicFor('offer'), o.bytes);
  await waitFor(async () => /verdict="reject",reason="OFFER_FOREIGN_ADVERT"\} 3/.test(await metric(a, 'c0mpute_net_records_total')), 10_000, 'three OFFER_FOREIGN_ADVERT rejects at a');
  await waitFor(() => a.gossipScore(hostile.peerId) < 0, 10_000, 'the hostile peer’s score below zero');
  // an honest offer on the same path still flows
  const ok = offer(b.signer, honest.address);
  await b.publish('offer', ok.bytes);
  await waitFor(() => got.a!.includes(ok.address), 10_000, 'honest offer (advert held, not attached) accepted at a');
  await sleep(300);
  for (const o of foreign) {
    assert.ok(!got.a!.includes(o.address), 'not delivered at a');
    assert.ok(!got.b!.includes(o.address), 'not relayed to b');
  }
});

test('a flooding signer’s excess jobs are ignored and counted; another signer’s job still passes', async () => {
  const flooder = await startNode({ syncOnConnect: [] });
  const a = await startNode({ syncOnConnect: [], floodLimits: { signer: { job: { ratePerSec: 1, burst: 20 } } } });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(flooder, a, b);
  await link(flooder, a, ['job']);
  await link(a, b, ['job']);
  const atA: string[] = [];
  const atB: string[] = [];
  a.subscribe('job', (r) => void atA.push(r.signer));
  b.subscribe('job', (r) => void atB.push(r.signer));
  await sleep(400);

  const N = 120;
  for (let i = 0; i < N; i++) await flooder.publish('job', job(flooder.signer).bytes);
  await waitFor(async () => {
    const m = await metric(a, 'c0mpute_net_rate_limited_total');
    const hit = /kind="job",limiter="signer"\} (\d+)/.exec(m);
    const acc = atA.filter((s) => s === flooder.did).length;
    return hit !== null && Number(hit[1]) + acc >= N - 5;
  }, 30_000, 'every flood job judged at a');
  const accepted = atA.filter((s) => s === flooder.did).length;
  assert.ok(accepted <= 20 + 30, `a accepted ${accepted} of ${N} flood jobs (burst 20, 1/s)`);
  assert.match(await metric(a, 'c0mpute_net_records_total'), /kind="job",verdict="ignore",reason="RATE_LIMITED"/);
  // the flooder's own excess lowers its gossipsub score through P5 (refreshed on gossipsub's score interval)
  await waitFor(() => a.gossipScore(flooder.peerId) < 0, 10_000, 'the flooder’s score below zero');

  // an honest buyer's job, published at b during the flood's aftermath, reaches a
  const honest = job(b.signer);
  await b.publish('job', honest.bytes);
  await waitFor(() => atA.includes(b.did), 10_000, 'the honest job at a');
  assert.ok(atB.filter((s) => s === flooder.did).length <= accepted, 'b got no more flood jobs than a let through');
});

test('records/1: repeated sync requests from one peer are bounded by its byte budget, then refused with NET_RATE_LIMITED', async () => {
  const a = await startNode({ syncOnConnect: [], recordsServe: { peer: { ratePerSec: 2_000, burst: 40_000 } } });
  const b = await startNode({ syncOnConnect: [] });
  nets.push(a, b);
  for (let i = 0; i < 200; i++) await a.publish('advert', advert(Ed25519Signer.generate()).bytes);
  await b.dial(a.addrs()[0]!);
  const t0 = Date.now();
  let bytes = 0;
  let refused: string | undefined;
  const req = { op: 'live', kind: 'advert', limit: 4096 };
  for (let i = 0; i < 20 && !refused; i++) {
    try {
      const frames = await b.request(a.peerId, PROTOCOLS.records, [req as never]);
      for (const f of frames) bytes += (f as Uint8Array).length;
    } catch (e) {
      refused = (e as C0Error).code;
    }
  }
  const elapsed = (Date.now() - t0) / 1000;
  assert.equal(refused, 'NET_RATE_LIMITED');
  assert.ok(bytes <= 40_000 + 2_000 * elapsed, `served ${bytes} B in ${elapsed.toFixed(1)} s (budget 40 000 B + 2 000 B/s)`);
  assert.ok(bytes > 20_000, `the budget was served before refusing (${bytes} B)`);
});

test('a peer whose abuse persists is disconnected and refused for a while, and forgotten as a peer to redial', async () => {
  const flooder = await startNode({ syncOnConnect: [] });
  // the remembered-peer file, as the daemon keeps it (peers-<overlay>.json)
  let saved: Array<{ peerId: string }> = [];
  const a = await startNode({ syncOnConnect: [], floodLimits: { signer: { job: { ratePerSec: 0.1, burst: 5 } } }, abuse: { disconnectAt: 30, banMs: 60_000 }, rememberStore: { load: () => [], save: (peers) => void (saved = peers.map((p) => ({ ...p }))) } });
  nets.push(flooder, a);
  await link(flooder, a, ['job']);
  await waitFor(() => saved.some((p) => p.peerId === flooder.peerId.toString()), 5_000, 'the flooder remembered (a c0mpute node it exchanged records with)');
  await sleep(300);
  for (let i = 0; i < 80 && a.peers().some((p) => p.peerId === flooder.peerId.toString()); i++) await flooder.publish('job', job(flooder.signer).bytes);
  await waitFor(() => !a.peers().some((p) => p.peerId === flooder.peerId.toString()), 10_000, 'a hangs up on the flooder');
  assert.match(await metric(a, 'c0mpute_net_abuse_disconnects_total'), /c0mpute_net_abuse_disconnects_total\S* 1/);
  // it dials back: the gater refuses it (the dial fails, or the connection is dropped at once)
  await flooder.dial(a.addrs()[0]!, { timeoutMs: 3_000 }).catch(() => undefined);
  await sleep(500);
  assert.ok(!a.peers().some((p) => p.peerId === flooder.peerId.toString()), 'the gater refuses it for banMs');
  // QA qaNet F3: it stayed remembered, and the node's own reconnection redialled it ~2 s after the ban (each dial
  // refused by its gater, logged NET_DIAL_FAILED), and again after a restart, when the ban (in memory) is gone
  assert.ok(!saved.some((p) => p.peerId === flooder.peerId.toString()), 'forgotten in the remembered-peer file');
  await sleep(2_500); // past the first redial's 1 s (±25 %) after the loss
  assert.doesNotMatch(await metric(a, 'c0mpute_net_dials_total'), /kind="remembered"/, 'not redialled');
});
