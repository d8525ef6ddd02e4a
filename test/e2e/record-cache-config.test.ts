/**
 * `network.recordCache` reaches a daemon's record cache (docs/config.md,
 * docs/network.md "The record cache's bounds"): a daemon configured to keep 3
 * records of a kind answers a `live` sync with the newest 3 of the 6 jobs a peer
 * gossiped to it; the rest went from memory, not from the node.
 */
import '../../src/polyfill.js';
import { test, after } from 'node:test';
import { PROTOCOLS } from '../../src/net/protocols.js';
import { peerIdFromDid } from '../../src/node/peer-id.js';
import { Ed25519Signer } from '../../src/records/index.js';
import { hashHex } from '../../src/records/address.js';
import { job, startNode, waitFor } from './net-helpers.js';
import { Cluster, bootstrapAddr, buyerConfig } from './node-helpers.js';

const c = new Cluster('rcache');
after(async () => {
  await c.destroy();
});


test('network.recordCache.maxPerKind bounds what a daemon keeps and serves of a kind', async () => {
  const base = buyerConfig();
  const node = await c.start('relay', { ...base, network: { ...(base.network as object), recordCache: { maxPerKind: 3 } } });
  const peer = await startNode({ syncOnConnect: [] });
  c.onDestroy(() => peer.stop());
  await peer.dial(bootstrapAddr(node));
  const nodePeer = peerIdFromDid(node.did);
  const nodeId = nodePeer.toString();
  await waitFor(() => peer.topicPeers('job').includes(nodeId), 10_000, 'the daemon on the job topic');

  const jobs = Array.from({ length: 6 }, () => job(Ed25519Signer.generate()));
  const newest = new Set(jobs.slice(3).map((j) => j.address));
  for (const j of jobs) await peer.publish('job', j.bytes);
  let held: string[] = [];
  await waitFor(
    async () => {
      const frames = await peer.request(nodePeer, PROTOCOLS.records, [{ op: 'live', kind: 'job', limit: 100 } as never]);
      held = frames.map((f) => hashHex(f as Uint8Array));
      return held.length === 3 && held.every((a) => newest.has(a));
    },
    10_000,
    'the newest 3 jobs, and only they, in the daemon’s answer',
  ).catch((e: Error) => {
    throw new Error(`${e.message}: held ${held.length}: ${held.map((a) => jobs.findIndex((j) => j.address === a)).join(', ')}`);
  });
});
