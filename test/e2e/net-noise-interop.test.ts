/**
 * A node whose Noise seals with libsodium (noise-crypto.ts) and a plain libp2p
 * node on @libp2p/noise's default crypto share a connection: pings both ways
 * (each side's frames opened by the other) and a gossiped advert.
 */
import '../../src/polyfill.js';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createLibp2p, type Libp2p } from 'libp2p';
import { tcp } from '@libp2p/tcp';
import { noise } from '@libp2p/noise';
import { yamux } from '@libp2p/yamux';
import { identify } from '@libp2p/identify';
import { ping } from '@libp2p/ping';
import { gossipsub } from '@libp2p/gossipsub';
import { multiaddr } from '@multiformats/multiaddr';
import { GOSSIP_BASE } from '../../src/net/libp2p-host.js';
import { topicFor, shardOf } from '../../src/net/topics.js';
import { noiseAead } from '../../src/net/noise-crypto.js';
import { decodeMessage } from '../../src/net/framing.js';
import { advert, startNode, stopAll, waitFor, sleep } from './net-helpers.js';
import type { Network } from '../../src/net/node.js';

const nets: Network[] = [];
let plain: Libp2p | undefined;
after(async () => {
  await stopAll(nets.splice(0));
  await plain?.stop();
});

test('a libsodium-Noise node and a default-Noise node: pings both ways and gossip', async () => {
  assert.equal(noiseAead, 'libsodium');
  const ours = await startNode({ syncOnConnect: [] });
  nets.push(ours);
  plain = await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    services: { identify: identify(), ping: ping(), pubsub: gossipsub({ ...GOSSIP_BASE }) },
  });
  const a = advert(ours.signer);
  const topic = topicFor('advert', undefined, shardOf(a.record.workloads[0]!));
  const got: Uint8Array[] = [];
  const ps = plain.services.pubsub as unknown as { subscribe(t: string): void; addEventListener(e: 'message', f: (e: CustomEvent<{ topic: string; data: Uint8Array }>) => void): void };
  ps.subscribe(topic);
  ps.addEventListener('message', (e) => {
    if (e.detail.topic === topic) got.push(e.detail.data);
  });
  await plain.dial(multiaddr(ours.addrs()[0]!));
  const ourPing = ours.libp2p.services as unknown as { ping?: { ping(p: unknown): Promise<number> } };
  assert.ok((await (plain.services.ping as { ping(p: unknown): Promise<number> }).ping(ours.peerId)) >= 0, 'the plain node pings ours');
  assert.ok(ourPing.ping, 'every node runs libp2p ping');
  assert.ok((await ourPing.ping.ping(plain.peerId)) >= 0, 'ours pings the plain node');
  await waitFor(() => ours.libp2p.services.pubsub.getSubscribers(topic).length > 0, 5_000, 'the plain node on the topic');
  await sleep(400); // a mesh heartbeat
  await ours.publish('advert', a.bytes);
  await waitFor(() => got.length > 0, 5_000, 'the advert at the plain node');
  // the message is the advert's envelope itself (no attachments), byte for byte
  const framed = decodeMessage(got[0]!);
  assert.deepEqual(framed.attachments, []);
  assert.deepEqual(Buffer.from(framed.primary), Buffer.from(a.bytes));
});
