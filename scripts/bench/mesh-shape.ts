/**
 * bench net (1)'s mesh, shared by the benches that build it (net.ts in one process, net-procs.ts one node per
 * process): who dials whom, and the raw baseline's topics. Light on purpose: a child process imports it without the
 * rest of the bench.
 */

import { sha256 } from '../../src/records/address.js';
import { messageId } from '../../src/net/libp2p-host.js';

/** The node degree the ring with chords aims at. */
export const DEGREE = 4;

/**
 * The bench advert names two workloads on two market shards, so it travels on two topics (docs/network.md §14); the
 * raw baseline travels on as many, and each node counts a record's first arrival, as the validated side does.
 */
export const RAW_TOPICS = ['/c0mpute/bench/raw', '/c0mpute/bench/raw/b'];

/**
 * The mesh's gossipsub message id: a node's own (`messageId`: for the bench advert on its kind's topics, its content
 * address, after reading its type) and, on the raw baseline's topics, the bytes' hash: one id on both raw topics, as
 * the advert has one on both its markets. A node binds the id of a message on a topic that is none of its kinds' to
 * that topic (docs/network.md §2), which would send each raw message through the mesh twice, once per topic, where
 * the advert goes once: a baseline doing twice the work (bench net (1) measured 1.34–1.43 that way, against 1.78–1.90
 * with one id, in alternating runs).
 */
export function benchMsgId(msg: { topic: string; data: Uint8Array }): Uint8Array {
  return RAW_TOPICS.includes(msg.topic) ? sha256(msg.data) : messageId(msg.topic, msg.data);
}

/** For each node, the nodes it dials: the next in a ring, plus random chords (a fixed seed), degree ≈ DEGREE. */
export function meshDials(n: number): number[][] {
  let rnd = 12345;
  const next = () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const dials: number[][] = [];
  for (let i = 0; i < n; i++) {
    const out = [(i + 1) % n];
    for (let k = 0; k < DEGREE / 2 - 1; k++) {
      const j = Math.floor(next() * n);
      if (j !== i) out.push(j);
    }
    dials.push(out);
  }
  return dials;
}
