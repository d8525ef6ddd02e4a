/**
 * The network facade's contract (docs/network.md): what `createNetwork`
 * (node.ts) takes (`NetworkOptions`, `NETWORK_DEFAULTS`), what it returns (the
 * `Network` the roles use) and how a peer is named to it (`PeerRef`: a PeerId,
 * its string, a DID or a multiaddr; `toPeerId`, `peerKey`).
 */
import type { InboundRefusal } from './inbound-guard.js';
import type { AdvertAhead, ClockDrop } from './clock-drops.js';
import type { Libp2p } from 'libp2p';
import type { GossipSub, GossipsubOpts } from '@libp2p/gossipsub';
import type { KadDHT } from '@libp2p/kad-dht';
import { peerIdFromString } from '@libp2p/peer-id';
import type { PeerId } from '@libp2p/interface';
import { multiaddr, isMultiaddr, type Multiaddr } from '@multiformats/multiaddr';
import type { Registry } from 'prom-client';
import { C0Error } from '../errors.js';
import { RECORD_CACHE_DEFAULTS } from './record-cache.js';
import type { CborValue } from '../records/cbor.js';
import type { Ed25519Signer } from '../records/ed25519.js';
import type { Opened } from '../records/envelope.js';
import { peerIdFromDid } from '../node/peer-id.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import type { RecordHandler } from './dispatch.js';
import type { SemanticHook } from './gossip-validation.js';
import type { NetMetrics } from './metrics.js';
import type { CallOptions, ClientStream, ProtocolHandler, ProtocolLimits, ServeOptions, StreamHandler } from './protocols.js';
import type { RecordSource } from './record-cache.js';
import type { RecordsServeOptions } from './records-protocol.js';
import type { FloodLimitOptions } from './flood-limits.js';
import type { AbuseOptions } from './peer-abuse.js';
import { DEFAULT_OVERLAY, type TopicKind } from './topics.js';
import type { ConnectivityOptions, ConnectivityStatus, RememberStore } from './connectivity.js';
import type { GossipHealthOptions } from './gossip-health.js';
import type { BudgetOptions } from './byte-budget.js';
import type { OfferSendOutcome } from './offer-route.js';
import type { DuplicateIdentity } from './peer-conns.js';

export interface NetworkOptions {
  /** The node's identity; its libp2p key is derived from the same seed. */
  signer: Ed25519Signer;
  /** Listen multiaddrs (default `['/ip4/0.0.0.0/tcp/0']`; tests use `/ip4/127.0.0.1/tcp/0`). */
  listen?: string[];
  /** Addresses to announce instead of the listen addresses (default: none). */
  announce?: string[];
  /**
   * A node that ends with its command (a one-shot `c0mpute run`, listening on a new port each time): its user agent
   * says so (`c0mpute-oneshot`, peer-conns.ts), so its peers do not remember it to redial after it left (docs/network.md
   * §11). Default false.
   */
  oneShot?: boolean;
  /** Bootstrap peers, multiaddrs ending in `/p2p/<peer id>` (default: none). Dialled at start. */
  bootstrap?: string[];
  /** Overlay name in topics (default `public`). */
  overlay?: string;
  /**
   * Who listens, as a listen address that cannot be taken is said (NET_LISTEN_FAILED): a node that is no overlay's (a
   * pipeline stage, a training member) names itself and the flag or field to change, e.g. `{who: 'this stage', fix:
   * 'give another --listen'}`. Default: the overlay, `overlay public: … each overlay needs its own`.
   */
  listenAs?: { who: string; fix: string };
  /** Gossip kinds joined at start (default: all). A node relays only the kinds it joins. */
  topics?: TopicKind[];
  /**
   * Kinds among `topics` whose topics this node publishes on (to the peers it is connected to that joined them) but does
   * not join: it neither receives nor relays them on gossip, nor syncs them. Their records still reach `subscribe`
   * handlers when they arrive directly (a selection, an acceptance or a receipt, /c0mpute/outcome/1). Default none.
   */
  publishOnly?: TopicKind[];
  /** Markets joined for the sharded kinds (advert, job, presence, a job's outcome): shards from `shardOf(workload)` (default: every shard). A node relays and syncs only these. */
  shards?: string[];
  /**
   * Loopback/private-address mode (default false): the DHT keeps private
   * addresses (passthroughMapper), serves queries (clientMode false) and
   * self-queries fast; gossipsub does not penalise many peers on one IP.
   */
  loopback?: boolean;
  /** DHT client mode (default: false in loopback mode and on a private network, else libp2p's default: serve once a public address is known). */
  dhtClientMode?: boolean;
  /**
   * Private network: the swarm key file's bytes (see `generateSwarmKey`). Default: none (public). Its DHT is the
   * members' alone: every member serves it and keeps private addresses, as in loopback mode (dht-options.ts).
   */
  swarmKey?: Uint8Array;
  /** DIDs allowed to connect (default: anyone). The connection gater refuses every other peer. */
  allowlist?: string[];
  /** Injected clock for freshness checks (default: system clock). */
  clock?: Clock;
  /** Injected monotonic clock for durations: flood limits, abuse decay, bans, records/1 budgets (default: performance.now). */
  monoClock?: Clock;
  /** Clock-skew window, ms (default 30 000). */
  skewMs?: number;
  /** Bound on one gossip message, bytes (default 128 KiB). */
  maxMessageBytes?: number;
  /** Seen LRU entries (default 65 536). */
  seenSize?: number;
  /** Validations in flight before messages are dropped (default 1 024). */
  maxInFlight?: number;
  /** Accepted records waiting for subscribers before new ones are dropped (default 10 000). */
  maxDeliveryQueue?: number;
  /** Semantic validation hooks per kind (also settable later with `setHook`). */
  hooks?: Partial<Record<TopicKind, SemanticHook>>;
  /** What this node serves over /c0mpute/records/1 (default: an in-memory cache of accepted and published records). */
  records?: RecordSource;
  /** Kinds to sync from each newly identified peer (default `['advert', 'presence']`; `[]` disables). */
  syncOnConnect?: TopicKind[];
  /** Records asked per kind in a sync (default 1 024). */
  syncLimit?: number;
  /**
   * Outcome catch-up (records-sync.ts, docs/network.md §5 "Catching up on outcomes"): the kinds a node that counts
   * outcomes asks its peers for, once per connection, after it was away (default: none, no catch-up).
   */
  catchUp?: CatchUpOptions;
  /** Metrics registry (default: a fresh one, `net.metrics.registry`). */
  registry?: Registry;
  logger?: Logger;
  /** Expert gossipsub overrides (e.g. `heartbeatInterval` in tests). */
  gossip?: Partial<GossipsubOpts>;
  /** Max connections (default 200). */
  maxConnections?: number;
  /** Flood limits in validation: per peer, per signer and kind, new advertisers (flood-limits.ts). */
  floodLimits?: Partial<FloodLimitOptions>;
  /** Worker threads verifying signatures, one pool per process shared by its nodes (verify-pool.ts; default `min(4, cores − 1)` above 2 cores, else 0; 0 = on the event loop). */
  verifyThreads?: number;
  /** What a persistent flooder earns: gossipsub P5 weight, disconnect threshold, ban time (peer-abuse.ts). */
  abuse?: Partial<AbuseOptions>;
  /** Bounds on /c0mpute/records/1 answers, per request and per peer (records-protocol.ts). */
  recordsServe?: Partial<RecordsServeOptions>;
  /** Reconnection policy (defaults: CONNECTIVITY_DEFAULTS in connectivity.ts). */
  connectivity?: Partial<ConnectivityOptions>;
  /** Where remembered peers survive a restart (default: memory only). */
  rememberStore?: RememberStore;
  /** Gossip self-check (defaults: GOSSIP_HEALTH_DEFAULTS in gossip-health.ts). */
  gossipHealth?: Partial<GossipHealthOptions>;
  /**
   * The direct protocols' inbound byte budget, per connection, per peer and in total (byte-budget.ts; default
   * DEFAULT_BUDGET: 24 MiB, the per-connection bound, and 96 MiB). A provider taking inputs over 16 MiB needs more: `budgetForInput(provider.maxInputBytes)`.
   */
  directBudget?: Partial<BudgetOptions>;
  /** Fault injection (simulations, scripts/sim): peers (PeerId strings) this returns true for are refused both ways, like a network partition. Default: none. */
  unreachable?: (peerId: string) => boolean;
}

export const NETWORK_DEFAULTS = {
  listen: ['/ip4/0.0.0.0/tcp/0'],
  overlay: DEFAULT_OVERLAY,
  syncOnConnect: ['advert', 'presence'] as TopicKind[],
  syncLimit: 1_024,
  maxDeliveryQueue: 10_000,
  maxConnections: 200,
  findPeerTimeoutMs: 10_000,
  dialTimeoutMs: 10_000,
} as const;

/** `NetworkOptions.catchUp`: what a node missed while it was away, asked of the peers it (re)connects to (records-sync.ts). */
export interface CatchUpOptions {
  /** The kinds caught up, in this order (the outcome kinds this node joined; one it did not join is not asked). */
  kinds: TopicKind[];
  /** Wall-clock ms from which this node may lack records of `kinds` at start (the newest it holds, less a margin). */
  from: number;
  /** How far back a catch-up reaches at most, ms (default 3 600 000: the record cache's time-to-live, what a peer serves). */
  maxAgeMs?: number;
  /** How long after the first peer connects again peers are asked, ms (default 60 000): each one identified by then, once. */
  windowMs?: number;
  /** Taken off the time the last peer went when a gap opens while running, ms (default 60 000: records in flight then). */
  marginMs?: number;
}

export const CATCH_UP_DEFAULTS = { maxAgeMs: RECORD_CACHE_DEFAULTS.ttlMs, windowMs: 60_000, marginMs: 60_000 } as const;

export interface PeerInfo {
  peerId: string;
  /** The peer's DID (undefined for a non-Ed25519 peer). */
  did: string | undefined;
  /** Each open connection's remote address: for one the peer dialled in, its passing port, not where it listens. */
  addrs: string[];
  /** True when every connection to it is one it dialled in (so `addrs` name no port it listens on). */
  inbound: boolean;
}

/**
 * Gossip as this node sees it (`/v1/status` `gossip`, `/v1/peers` `topics`; docs/node.md "The control API"), over the
 * topics of the kinds it joined (its markets' shards for a sharded kind). A record published now on one of those
 * topics goes at once to every peer heard subscribed to it (flood publish), and is relayed by the peers in the mesh.
 */
export interface GossipView {
  /** Per kind: distinct peers heard subscribed to one of this node's topics of the kind, and how many of them are in its mesh of one. */
  kinds: Partial<Record<TopicKind, { peers: number; mesh: number }>>;
  /** Per peer id: the kinds of which the peer is subscribed to one of this node's topics (peers heard on none are absent). */
  peerKinds: Map<string, TopicKind[]>;
  /** Per peer id: the kinds of which the peer is in this node's mesh of one of its topics (the node relays to it). */
  peerMesh: Map<string, TopicKind[]>;
  /**
   * Per peer id gossipsub's router holds: whether it holds this node's outbound gossip stream to the peer (what carries
   * this node's subscriptions, grafts and records to it) and the peer's inbound one, and the longest prune backoff left
   * with the peer on one of this node's topics, ms (while above 0 neither grafts the other there).
   */
  peerLink: Map<string, { out: boolean; in: boolean; backoffMs: number }>;
}

export interface SyncResult {
  accepted: number;
  ignored: number;
  rejected: number;
  /** Per kind whose request failed, the error code. */
  failed: Partial<Record<TopicKind, string>>;
}

export type PeerRef = PeerId | Multiaddr | string;

/** `Network.publish`'s options. */
export interface PublishOptions {
  /** The job's workload, for a selection or an acceptance (the record names its job or receipt, not its market). */
  workload?: string;
}

export interface Network {
  readonly peerId: PeerId;
  readonly did: string;
  readonly overlay: string;
  readonly metrics: NetMetrics;
  /** The libp2p node (for what the facade does not cover). */
  readonly libp2p: Libp2p<{ pubsub: GossipSub; dht: KadDHT }>;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Listen addresses with `/p2p/<peer id>`. */
  addrs(): string[];
  /** Dial a multiaddr string, a PeerId (string or object) or a DID. */
  dial(target: PeerRef, opts?: { timeoutMs?: number }): Promise<PeerId>;
  peers(): PeerInfo[];
  /** The addresses a peer said it listens on (identify), with `/p2p/<peer id>`, as this node's peer store holds them. */
  listenAddrsOf(peerId: string): Promise<string[]>;
  /**
   * Publish a record (envelope bytes) on its kind's topic, optionally with
   * attachments (an offer with the advert it cites). Checked locally first
   * (type, shape, freshness, signature): throws the C0Error a peer would reject it with.
   * A record of a sharded kind goes on its market's topic; a selection or an
   * acceptance does not name its market, so its publisher gives the job's
   * `workload` (else NET_NO_SHARD).
   */
  publish(kind: TopicKind, envelope: Uint8Array, attachments?: Uint8Array[], opts?: PublishOptions): Promise<{ recipients: number; address: string }>;
  /**
   * Send an offer (with the advert it cites attached) to its buyer (and steward) only, over
   * /c0mpute/offer/1 (offer-route.ts); the same local checks as `publish`. Never throws for an
   * unreachable recipient: the outcome per DID says what happened.
   */
  sendOffer(to: readonly string[], envelope: Uint8Array, attachments?: Uint8Array[]): Promise<{ outcomes: Record<string, OfferSendOutcome>; address: string; codes: Record<string, string> }>;
  /**
   * Send a selection or an acceptance to the providers it concerns only (or a receipt to its buyer), over /c0mpute/outcome/1 (offer-route.ts; docs/network.md
   * §14 "A job's outcome"); the same local checks as `publish`; this node itself is skipped. Never throws for an unreachable
   * recipient: the outcome per DID says what happened, and `codes` why one did not take it (its `ignore` reason: a
   * duplicate, RATE_LIMITED…; or the error's code). Another kind: OUTCOME_WRONG_KIND.
   */
  sendOutcome(kind: TopicKind, to: readonly string[], envelope: Uint8Array): Promise<{ outcomes: Record<string, OfferSendOutcome>; address: string; codes?: Record<string, string> }>;
  /**
   * Accepted records of `kind`, each once (gossip, sync, and the direct routes: offer/1, outcome/1). Returns an
   * unsubscribe function. A record that came on a direct route is answered `accept` only once every handler returned;
   * one that throws has it answered *_NOT_KEPT (the sender may send it again: `not_kept`), so a handler throws when it
   * could not keep what it must (a failed write), not for a record it chose not to keep.
   *
   * `own`: the handler is also given the records of `kind` this node itself publishes or sends (publish, sendOffer,
   * sendOutcome; `meta.source` 'own'), once each, after the checks a peer would make (type, shape, freshness,
   * signature): gossip never brings a node its own messages back, and a copy a peer sends later is a duplicate. A
   * role that must hear a record whoever published it (the steward: its own provider's receipts, its own buyer's
   * selections) subscribes so; one already accepted from a peer is not given again.
   */
  subscribe(kind: TopicKind, handler: RecordHandler, opts?: { own?: boolean }): () => void;
  /** Adverts from new advertisers the new-advertiser flood limits turned away since start (docs/network.md §10). */
  advertsTurnedAway(): number;
  /**
   * Offers for `job` sent to this node directly by their signer and dropped for their dates (RECORD_FROM_FUTURE,
   * RECORD_EXPIRED), by provider DID: src/net/clock-drops.ts.
   */
  clockDropped?(job: string): ReadonlyMap<string, ClockDrop>;
  /** `job` is this node's own (its buyer announces it, by gossip or by invitation): its offers dropped for their dates are noted from now on. */
  expectOffers?(job: string): void;
  /** Providers whose adverts, sent by themselves, this node dropped as dated ahead of its clock lately (src/net/clock-drops.ts AdvertsAhead). */
  advertsAhead?(): readonly AdvertAhead[];
  /** Set or clear the semantic hook for a kind. */
  setHook(kind: TopicKind, hook: SemanticHook | undefined): void;
  /** Serve a direct protocol (`opts.admit`: who may call it, decided by key before the request is read). */
  handle(protocol: string, handler: ProtocolHandler, limits?: Partial<ProtocolLimits>, opts?: ServeOptions): Promise<void>;
  /** Stop serving a direct protocol served with `handle` (nothing if it is not served). */
  unhandle(protocol: string): Promise<void>;
  /** Call a direct protocol on a peer (PeerId, peer id string, DID or multiaddr). */
  request(peer: PeerRef, protocol: string, frames: CborValue[], opts?: CallOptions): Promise<CborValue[]>;
  /** Serve a streaming direct protocol (exec/1: request frames read one at a time, within the byte budget). */
  handleStream(protocol: string, handler: StreamHandler, limits?: Partial<ProtocolLimits>, opts?: ServeOptions): Promise<void>;
  /** Open a streaming direct protocol on a peer. */
  openStream(peer: PeerRef, protocol: string, opts?: Omit<CallOptions, 'onFrame'>): Promise<ClientStream>;
  /** Fetch records by address from a peer; each is checked (address, type, shape, signature). */
  fetchRecords(peer: PeerRef, addresses: string[], expectedType?: string): Promise<Opened[]>;
  /** Ask a peer for the live records it holds of `kinds`; each goes through the gossip pipeline and reaches subscribers once. */
  syncFrom(peer: PeerRef, kinds?: TopicKind[]): Promise<SyncResult>;
  /**
   * Ask a peer for the records of `kinds` (records/1 BY_JOB_KINDS) that name one of `jobs` (records/1 `jobs`); each goes
   * through the gossip pipeline as a sync's. A peer before this op fails each kind with NET_BAD_REQUEST.
   */
  syncJobs(peer: PeerRef, kinds: TopicKind[], jobs: string[]): Promise<SyncResult>;
  /**
   * A record accepted here that was not kept after all (its write failed: this node's store takes no writes): forgotten
   * as seen and dropped from what this node serves and lists in a sync's digest, so a later copy (a catch-up) is
   * taken again rather than ignored as a duplicate (docs/network.md "The delivery queue").
   */
  notKept(rec: Opened): void;
  /**
   * Open an outcome catch-up gap from `from` (wall-clock ms; `catchUp` only, else nothing): the peers connected now are
   * asked, one after another, for the outcome kinds they took since then, as at a start (records-sync.ts); a peer
   * identified later in the window too. The store reopened after failed writes (docs/network.md §5).
   */
  catchUpFrom(from: number): void;
  /** A peer's addresses from its DID: the peer store, else the DHT. Throws NET_PEER_NOT_FOUND. */
  findPeer(did: string, opts?: { useCache?: boolean; timeoutMs?: number }): Promise<string[]>;
  /** Gossipsub score this node gives a peer. */
  gossipScore(peer: PeerRef): number;
  /** Peers subscribed to a kind's topic. */
  topicPeers(kind: TopicKind): string[];
  /** Subscribers and mesh peers of this node's topics, per kind and per peer. */
  gossip(): GossipView;
  /** Resolves when every accepted record so far has been handed to the subscribers. */
  drained(): Promise<void>;
  /** Connected peers and the state of each bootstrap peer (failures, last error). */
  connectivity(): ConnectivityStatus;
  /** PeerIds seen connected from two processes at once, now or within the last hour (peer-conns.ts: NET_DUPLICATE_IDENTITY). */
  duplicates(): DuplicateIdentity[];
  /** Inbound connections refused before their handshake within the last 10 minutes, one per code (inbound-guard.ts). */
  inboundRefusals?(): InboundRefusal[];
  /**
   * How long this node has had peers but none subscribed to any topic it joined, ms (it gossips with no one: it can
   * neither publish nor hear records by gossip); undefined while one is, or while it has no peer (net-health.ts NET_NO_GOSSIP).
   */
  gossipQuietMs(): number | undefined;
}

export function toPeerId(p: PeerRef): PeerId | Multiaddr {
  if (typeof p !== 'string') return p;
  if (p.startsWith('did:')) return peerIdFromDid(p);
  if (p.startsWith('/')) {
    try {
      return multiaddr(p);
    } catch (e) {
      throw new C0Error('MULTIADDR_MALFORMED', `not a multiaddr: ${p.slice(0, 80)} (${(e as Error).message})`);
    }
  }
  try {
    return peerIdFromString(p);
  } catch (e) {
    throw new C0Error('PEER_ID_MALFORMED', `not a PeerId, DID or multiaddr: ${p.slice(0, 80)} (${(e as Error).message})`);
  }
}

export function peerKey(p: PeerId | Multiaddr): string {
  if (isMultiaddr(p)) return p.getComponents().find((c) => c.name === 'p2p')?.value ?? p.toString();
  return p.toString();
}
