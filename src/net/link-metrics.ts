/**
 * Link metrics (prom-client), next to the record metrics of metrics.ts:
 * libp2p connections (open by direction, opened/closed, dials by outcome),
 * refused connections on private overlays, gossip repairs, and gossipsub
 * peer-score figures. Names are listed in docs/network.md "Reconnection and liveness".
 */
import { Counter, Gauge, type Registry } from 'prom-client';

export interface GossipScoreView {
  /** Score of every peer the router knows. */
  scores(): number[];
  thresholds(): { gossipThreshold: number; publishThreshold: number; graylistThreshold: number };
  /** Mesh size per topic. */
  mesh(): Array<{ topic: string; peers: number }>;
}

export interface LinkSources {
  connections(): Array<{ direction: 'inbound' | 'outbound' }>;
  gossip(): GossipScoreView | undefined;
}

export interface LinkMetrics {
  /** Connections refused: reason = allowlist | handshake | banned; a handshake's cause = garbled | timeout | gone | other (refusals.ts). */
  refused: Counter<'reason' | 'cause'>;
  /** Gossip self-check repairs: action = stream-error | reopen | reconnect. */
  repairs: Counter<'action'>;
  /** Dials by who asked (bootstrap, remembered, discovered, api) and outcome (ok, failed). */
  dials: Counter<'kind' | 'outcome'>;
  /** Connections opened and closed, by direction. */
  connectionEvents: Counter<'event' | 'direction'>;
  /** Connections whose identify showed another process than a connection open to the same PeerId (NET_DUPLICATE_IDENTITY). */
  duplicates: Counter;
}

/** Metrics are registered once per registry (two overlays share one registry: label `overlay` is not needed for these totals). */
const made = new WeakMap<Registry, { m: LinkMetrics; sources: LinkSources[] }>();

export function createLinkMetrics(registry: Registry, src: LinkSources): LinkMetrics {
  const prev = made.get(registry);
  if (prev) {
    prev.sources.push(src);
    return prev.m;
  }
  const sources = [src];
  const registers = [registry];
  const m: LinkMetrics = {
    refused: new Counter({ name: 'c0mpute_connections_refused_total', help: 'Inbound connections refused, by reason (allowlist: not on network.allowlist; handshake: the handshake failed on a private overlay; banned: serving a flood ban; pending: too many still handshaking, cause ip or total; full: maxConnections; rate: over 5 new a second from one address) and, for handshake, cause (garbled: what a wrong swarm key does; timeout: not finished in time; gone: the peer closed it first, e.g. a restart; other)', labelNames: ['reason', 'cause'], registers }),
    repairs: new Counter({ name: 'c0mpute_gossip_repairs_total', help: 'Gossip self-check repairs of a connected peer detached from the router, by action', labelNames: ['action'], registers }),
    dials: new Counter({ name: 'c0mpute_net_dials_total', help: 'Dials by the connectivity manager, by kind (bootstrap, remembered, discovered) and outcome', labelNames: ['kind', 'outcome'], registers }),
    connectionEvents: new Counter({ name: 'c0mpute_net_connection_events_total', help: 'libp2p connections opened and closed (disconnects), by direction', labelNames: ['event', 'direction'], registers }),
    duplicates: new Counter({ name: 'c0mpute_net_duplicate_identity_total', help: 'Connections from a process other than the one already connected under the same PeerId: two processes hold one key (NET_DUPLICATE_IDENTITY)', registers }),
  };
  new Gauge({
    name: 'c0mpute_net_connections',
    help: 'Open libp2p connections by direction',
    labelNames: ['direction'],
    registers,
    collect() {
      const n = { inbound: 0, outbound: 0 };
      for (const s of sources) for (const c of s.connections()) n[c.direction]++;
      this.set({ direction: 'inbound' }, n.inbound);
      this.set({ direction: 'outbound' }, n.outbound);
    },
  });
  new Gauge({
    name: 'c0mpute_gossip_peer_score',
    help: 'Gossipsub scores this node gives its peers: min, median and max',
    labelNames: ['stat'],
    registers,
    collect() {
      const all = sources.flatMap((s) => s.gossip()?.scores() ?? []).sort((a, b) => a - b);
      this.reset();
      if (!all.length) return;
      this.set({ stat: 'min' }, all[0]!);
      this.set({ stat: 'median' }, all[Math.floor(all.length / 2)]!);
      this.set({ stat: 'max' }, all[all.length - 1]!);
    },
  });
  new Gauge({
    name: 'c0mpute_gossip_peers_below_threshold',
    help: 'Gossip peers whose score is below a gossipsub threshold (gossip: no gossip exchanged; publish: not published to; graylist: everything from them ignored)',
    labelNames: ['threshold'],
    registers,
    collect() {
      const n = { gossip: 0, publish: 0, graylist: 0 };
      for (const s of sources) {
        const g = s.gossip();
        if (!g) continue;
        const t = g.thresholds();
        for (const x of g.scores()) {
          if (x < t.gossipThreshold) n.gossip++;
          if (x < t.publishThreshold) n.publish++;
          if (x < t.graylistThreshold) n.graylist++;
        }
      }
      for (const [k, v] of Object.entries(n)) this.set({ threshold: k }, v);
    },
  });
  new Gauge({
    name: 'c0mpute_gossip_mesh_peers',
    help: 'Gossipsub mesh peers per topic',
    labelNames: ['topic'],
    registers,
    collect() {
      this.reset();
      for (const s of sources) for (const x of s.gossip()?.mesh() ?? []) this.set({ topic: x.topic }, x.peers);
    },
  });
  made.set(registry, { m, sources });
  return m;
}
