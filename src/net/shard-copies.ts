/**
 * A record of several markets, on each market's topic (docs/network.md §14).
 *
 * gossipsub's message id is the record's content address (DESIGN §3: unsigned
 * messages, the content address as id), and a node takes a message id once,
 * on whichever topic brings it first. So the same bytes published on a second
 * topic are a duplicate: the publisher drops the second publication
 * (`ignoreDuplicatePublishError`), and a node that has the message drops the
 * copy. An advert or presence naming workloads of two markets therefore
 * reached only its first market's nodes by gossip; a node on the second market
 * alone got it by sync, if at all.
 *
 * So the node that publishes or accepts such a record also sends it, once per
 * peer, on the record's other market topics to the peers subscribed to one of
 * them and not to the topic it went out (or came in) on. Those take it on their
 * market's topic, validate it as any message, and pass it on in that market's
 * mesh (and by the same rule to their own neighbours on the record's other
 * markets). A peer on the first topic as well hears it there, from that mesh,
 * so it gets no copy; a relay on every market sends copies only to its
 * neighbours on none of the record's earlier topics. The message id is
 * unchanged (the wire is what it was), and a record goes on no market its
 * workloads do not name (docs/network.md §14 "Placement is checked").
 */
import type { PeerId } from '@libp2p/interface';

/** The gossipsub internals this needs (the node's one gossipsub; see link-hosts.ts for the rest). */
export interface ShardCopyHost {
  /** Peer id string → the topics it announced, inverted: topic → peer id strings. */
  topics: Map<string, Set<string>>;
  /** Sends one RPC on the peer's outbound gossipsub stream; false when it has none. */
  sendRpc(id: string, rpc: unknown): boolean;
  getScore(id: string): number;
  opts: { scoreThresholds: { publishThreshold: number } };
}

/**
 * Send `data` on each topic of `others` to the peers subscribed to it and not
 * to `first`, each peer once, none below the publish threshold and not
 * `source` (the peer it came from). Returns the peers it went to.
 */
export function sendOnOtherTopics(gs: ShardCopyHost, data: Uint8Array, first: string, others: readonly string[], source?: PeerId | string): string[] {
  if (others.length === 0) return [];
  const from = source === undefined ? undefined : source.toString();
  const onFirst = gs.topics.get(first);
  const threshold = gs.opts.scoreThresholds.publishThreshold;
  const sent: string[] = [];
  const done = new Set<string>();
  for (const topic of others) {
    const peers = gs.topics.get(topic);
    if (!peers) continue;
    for (const id of peers) {
      if (id === from || done.has(id) || onFirst?.has(id) === true) continue;
      done.add(id);
      if (gs.getScore(id) < threshold) continue;
      // the message as gossipsub's own publish builds it under StrictNoSign: data and topic, nothing else
      const rpc = { subscriptions: [], messages: [{ from: undefined, data, seqno: undefined, topic, signature: undefined, key: undefined }], control: undefined };
      if (gs.sendRpc(id, rpc)) sent.push(id);
    }
  }
  return sent;
}
