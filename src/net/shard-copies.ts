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
 * So the node that publishes such a record, or accepts it by gossip (or
 * passes it on after a sync, heal.ts), also sends it, once per peer, on the
 * record's other market topics to the peers subscribed to one of them and not
 * to the topic it went out (or came in) on. Those take it on their market's
 * topic, validate it as any message, and pass it on in that market's mesh
 * (and by the same rule to their own neighbours on the record's other
 * markets). A peer on the topic it came in on hears it there, from that mesh,
 * so it gets no copy, nor does a peer that said it already has the message
 * (IDONTWANT); in a network where every node is on every market, nothing
 * extra is sent. The cost: unlike a mesh forward (about D peers a topic), a
 * copy goes to every such neighbour, once per record and hop, so it grows
 * with a node's connections on the record's other markets; a record names at
 * most 16 markets and each signer's records are rate-limited (flood-limits.ts).
 * The message id is unchanged (a record on its kind's topic: its content
 * address, the same on each market; libp2p-host.ts `messageId`), the wire is
 * what it was, and a record goes on
 * no market its workloads do not name (docs/network.md §14 "Placement is
 * checked").
 */
import { messageId } from './libp2p-host.js';
import type { GossipInternals } from './link-hosts.js';

/** The gossipsub internals this needs (the node's one gossipsub). */
export type ShardCopyHost = Pick<GossipInternals, 'topics' | 'sendRpc' | 'getScore' | 'idontwants' | 'msgIdToStrFn'> & { opts: { scoreThresholds: { publishThreshold: number } } };

/**
 * Send `data` on each topic of `others` to the peers subscribed to it and not
 * to `first` (unless `firstForwarded` is false: the node does not pass it on
 * there), each peer once, none below the publish threshold, none that
 * said it has the message, and not `from` (the peer it came from). Returns the
 * peers it went to.
 */
export function sendOnOtherTopics(gs: ShardCopyHost, data: Uint8Array, first: string, others: readonly string[], from?: string, opts: { firstForwarded?: boolean } = {}): string[] {
  if (others.length === 0) return [];
  let msgId: string | undefined;
  // the peers on the first topic hear it there, unless the node does not pass it on there (a copy on a wrong market)
  const onFirst = opts.firstForwarded === false ? undefined : gs.topics.get(first);
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
      const unwanted = gs.idontwants.get(id);
      // the id the peer gives the copy it takes on that topic (a record of the topic's kind: its content address)
      if (unwanted !== undefined && unwanted.has((msgId ??= gs.msgIdToStrFn(messageId(topic, data))))) continue;
      // the message as gossipsub's own publish builds it under StrictNoSign: data and topic, nothing else
      const rpc = { subscriptions: [], messages: [{ from: undefined, data, seqno: undefined, topic, signature: undefined, key: undefined }], control: undefined };
      if (gs.sendRpc(id, rpc)) sent.push(id);
    }
  }
  return sent;
}
