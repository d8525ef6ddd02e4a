/**
 * The libp2p side of the connectivity manager, the gossip self-check and the
 * link metrics (connectivity.ts, gossip-health.ts, link-metrics.ts): what they
 * need from libp2p and from gossipsub's internals (@libp2p/gossipsub 17, whose
 * router state — peers, streams, topics, mesh — is not public API). See
 * docs/network.md "Reconnection and liveness".
 */
import { randomBytes } from 'node:crypto';
import type { Libp2p } from 'libp2p';
import type { Connection, PeerId } from '@libp2p/interface';
import type { GossipSub } from '@libp2p/gossipsub';
import type { KadDHT } from '@libp2p/kad-dht';
import { peerIdFromString } from '@libp2p/peer-id';
import { multiaddr } from '@multiformats/multiaddr';
import type { ConnectivityHost, DialTarget } from './connectivity.js';
import type { GossipHealthHost, GossipProblem, MeshGap } from './gossip-health.js';
import type { GossipScoreView } from './link-metrics.js';

/** The parts of gossipsub 17's router this node reads (checked at runtime: absent fields read as healthy). */
export interface GossipInternals {
  peers: Map<string, PeerId>;
  streamsOutbound: Map<string, unknown>;
  streamsInbound: Map<string, unknown>;
  topics: Map<string, Set<string>>;
  mesh: Map<string, Set<string>>;
  protocols: string[];
  opts: { Dlo: number; scoreThresholds: { gossipThreshold: number; publishThreshold: number; graylistThreshold: number } };
  onPeerConnected(p: PeerId, c: Connection): void;
  handlePeerReadStreamError(err: unknown, p: PeerId): void;
  getScore(id: string): number;
  /** Sends one RPC on the peer's outbound gossipsub stream; false when it has none. */
  sendRpc(id: string, rpc: unknown): boolean;
  /** Peer → the message ids it said it already has (IDONTWANT, gossipsub 1.2); gossipsub's forward skips them. */
  idontwants: Map<string, Map<string, number>>;
  msgIdToStrFn(id: Uint8Array): string;
  /** Topic → peer id → when the prune backoff with the peer there ends (epoch ms): no graft either way until then. */
  backoff: Map<string, Map<string, number>>;
}

/**
 * Per peer id in gossipsub's router: its two streams and the longest prune backoff left with it on one of `topics`
 * (GossipView.peerLink, `/v1/peers`). Empty when the router's internals are not there to read.
 */
export function gossipLinks(pubsub: unknown, topics: string[], now = Date.now()): Map<string, { out: boolean; in: boolean; backoffMs: number }> {
  const ps = pubsub as Partial<GossipInternals>;
  const out = new Map<string, { out: boolean; in: boolean; backoffMs: number }>();
  if (!(ps.peers instanceof Map) || !(ps.streamsOutbound instanceof Map) || !(ps.streamsInbound instanceof Map)) return out;
  for (const id of ps.peers.keys()) out.set(id, { out: ps.streamsOutbound.has(id), in: ps.streamsInbound.has(id), backoffMs: 0 });
  if (ps.backoff instanceof Map) {
    for (const t of topics) {
      for (const [id, until] of ps.backoff.get(t) ?? []) {
        const x = out.get(id);
        if (x && until - now > x.backoffMs) x.backoffMs = until - now;
      }
    }
  }
  return out;
}

export interface LinkHosts {
  connectivity: ConnectivityHost;
  health: GossipHealthHost;
  scores: GossipScoreView;
}

type Node = Libp2p<{ pubsub: GossipSub; dht: KadDHT }>;

export function gossipHost(libp2p: Node, overlay: string): LinkHosts {
  const ps = libp2p.services.pubsub as unknown as GossipInternals;
  const open = (p: PeerId) => libp2p.getConnections(p).find((c) => c.status === 'open');
  // Parsed PeerIds by string: the connectivity check asks about the same few peers on every pass (base58 decoding each time was most of its cost).
  const ids = new Map<string, PeerId>();
  const connected = (id: string): boolean => {
    try {
      let p = ids.get(id);
      if (!p) {
        if (ids.size >= 1_024) ids.clear();
        ids.set(id, (p = peerIdFromString(id)));
      }
      return libp2p.getConnections(p).some((c) => c.status === 'open');
    } catch {
      return false;
    }
  };
  const ours = (topic: string) => topic.endsWith(`/${overlay}`) || topic.includes(`/${overlay}/`);

  const connectivity: ConnectivityHost = {
    isConnected: connected,
    peerCount: () => libp2p.getPeers().length,
    connectedPeers: () => libp2p.getPeers().map(String),
    async dial(t: DialTarget, timeoutMs: number) {
      const target = t.addrs.length ? t.addrs.map((a) => multiaddr(a)) : peerIdFromString(t.peerId ?? '');
      const conn = await libp2p.dial(target, { signal: AbortSignal.timeout(timeoutMs) });
      return conn.remotePeer.toString();
    },
    async discover(max: number, timeoutMs: number) {
      const signal = AbortSignal.timeout(timeoutMs);
      return discoveryCandidates(libp2p.services.dht.getClosestPeers(new Uint8Array(randomBytes(32)), { signal }), libp2p.peerId.toString(), max);
    },
  };

  const health: GossipHealthHost = {
    async gossipPeers() {
      const out: string[] = [];
      for (const p of libp2p.getPeers()) {
        // Attached to the router with both streams and subscriptions: it speaks gossipsub, no peer-store read needed (that read was the check's main cost).
        const id = p.toString();
        if (health.problem(id) === undefined && ps.peers instanceof Map) {
          out.push(id);
          continue;
        }
        try {
          const info = await libp2p.peerStore.get(p);
          if (info.protocols.some((x) => ps.protocols.includes(x))) out.push(p.toString());
        } catch {
          /* not identified yet */
        }
      }
      return out;
    },
    problem(id): GossipProblem | undefined {
      if (!(ps.peers instanceof Map)) return undefined;
      if (!ps.peers.has(id)) return 'no-router';
      if (!ps.streamsOutbound.has(id)) return 'no-outbound';
      if (!ps.streamsInbound.has(id)) return 'no-inbound';
      for (const set of ps.topics.values()) if (set.has(id)) return undefined;
      return 'no-subscriptions';
    },
    meshGap(id): MeshGap | undefined {
      if (!(ps.mesh instanceof Map) || !(ps.topics instanceof Map) || !ps.streamsOutbound.has(id)) return undefined;
      let subscribed = false;
      let short = false;
      let backoffMs = 0;
      const now = Date.now();
      // the topics this node joined (its meshes) that the peer is subscribed to
      for (const [topic, mesh] of ps.mesh) {
        if (!ours(topic) || !ps.topics.get(topic)?.has(id)) continue;
        if (mesh.has(id)) return undefined;
        subscribed = true;
        if (mesh.size < ps.opts.Dlo) short = true;
        const until = ps.backoff instanceof Map ? ps.backoff.get(topic)?.get(id) : undefined;
        if (until !== undefined && until - now > backoffMs) backoffMs = until - now;
      }
      return subscribed && short ? { backoffMs, score: ps.getScore(id) } : undefined;
    },
    async reopen(id) {
      const p = peerIdFromString(id);
      const c = open(p);
      if (c) ps.onPeerConnected(p, c);
    },
    async reconnect(id) {
      const p = peerIdFromString(id);
      await libp2p.hangUp(p);
      await libp2p.dial(p, { signal: AbortSignal.timeout(10_000) });
    },
  };

  const scores: GossipScoreView = {
    scores: () => (ps.peers instanceof Map ? [...ps.peers.keys()].map((id) => ps.getScore(id)) : []),
    thresholds: () => ps.opts.scoreThresholds,
    mesh: () => (ps.mesh instanceof Map ? [...ps.mesh.entries()].filter(([t]) => ours(t)).map(([topic, set]) => ({ topic, peers: set.size })) : []),
  };
  return { connectivity, health, scores };
}

interface WalkPeer {
  id: PeerId;
  multiaddrs: Array<{ toString(): string }>;
}
/** The events of a DHT walk this node reads (kad-dht's QueryEvent, narrowed). */
export type WalkEvent = { name: 'FINAL_PEER'; peer: WalkPeer } | { name: 'PEER_RESPONSE'; closer: WalkPeer[] } | { name: string };

/**
 * Peers to dial from a walk towards a random key (the connectivity top-up below minPeers): the peers the walk
 * reached (its final closest set), closest first, then the peers its answers named that are not in it (not asked,
 * or asked and unreachable: the top-up dials them itself); at most `max`, never `self`.
 * A walk asks a named peer only when it is nearer the key than the peer that named it, so in a small or sparse
 * network the named ones are often all there is: in a line p — r — c, r names c to p whatever the key, but the
 * walk goes on to c for half the keys only. A walk that ends early (timeout, error) still yields what it heard.
 */
export async function discoveryCandidates(walk: AsyncIterable<WalkEvent>, self: string, max: number): Promise<DialTarget[]> {
  const reached = new Map<string, DialTarget>();
  const named = new Map<string, DialTarget>();
  const target = (p: WalkPeer): DialTarget => {
    const id = p.id.toString();
    return { peerId: id, addrs: p.multiaddrs.map((a) => `${a.toString()}/p2p/${id}`) };
  };
  try {
    for await (const e of walk) {
      if (e.name === 'FINAL_PEER' && 'peer' in e) {
        const t = target(e.peer);
        if (t.peerId !== self) reached.set(t.peerId!, t);
      } else if (e.name === 'PEER_RESPONSE' && 'closer' in e) {
        for (const p of e.closer) {
          const t = target(p);
          if (t.peerId !== self && t.addrs.length) named.set(t.peerId!, t);
        }
      }
    }
  } catch {
    /* a partial answer is still useful */
  }
  for (const id of reached.keys()) named.delete(id);
  return [...reached.values(), ...named.values()].slice(0, max);
}
