/**
 * The network: libp2p 3 (TCP, noise, yamux, identify, ping, gossipsub,
 * kad-dht for peer routing), optional private network (pnet) and DID
 * allowlist, behind a small facade the roles use. See docs/network.md.
 *
 *   const net = await createNetwork({ signer, listen, bootstrap, hooks })
 *   net.subscribe('advert', (rec, meta) => …)   // accepted records, once each
 *   await net.start()
 *   await net.publish('advert', envelopeBytes)
 *   await net.handle(PROTOCOLS.exec, async (reqs, ctx) => { await ctx.send(…) })
 *   await net.request(did, PROTOCOLS.exec, [req], { onFrame })
 */
import { createLibp2p, type Libp2p } from 'libp2p';
import { tcp } from '@libp2p/tcp';
import { noise } from '@libp2p/noise';
import { yamux } from '@libp2p/yamux';
import { identify } from '@libp2p/identify';
import { ping } from '@libp2p/ping';
import { bootstrap } from '@libp2p/bootstrap';
import { preSharedKey, generateKey } from '@libp2p/pnet';
import { gossipsub, StrictNoSign, TopicValidatorResult, type GossipSub, type GossipsubOpts } from '@libp2p/gossipsub';
import { createPeerScoreParams, createTopicScoreParams, type TopicScoreParams } from '@libp2p/gossipsub/score';
import type { KadDHT } from '@libp2p/kad-dht';
import { peerIdFromString } from '@libp2p/peer-id';
import type { PeerId, Connection, IdentifyResult } from '@libp2p/interface';
import { multiaddr, isMultiaddr, type Multiaddr } from '@multiformats/multiaddr';
import type { Registry } from 'prom-client';
import { C0Error } from '../errors.js';
import { sha256, hashHex, isAddress } from '../records/address.js';
import type { CborValue } from '../records/cbor.js';
import { didFromPublicKey } from '../records/did.js';
import type { Ed25519Signer } from '../records/ed25519.js';
import { open, peekType, type Opened } from '../records/envelope.js';
import { checkFresh } from '../records/freshness.js';
import { didFromPeerId, libp2pKey, peerIdFromDid } from '../node/peer-id.js';
import { systemClock, type Clock } from '../util/clock.js';
import { silentLogger, type Logger } from '../util/log.js';
import { Dispatcher, type RecordHandler } from './dispatch.js';
import { encodeMessage } from './framing.js';
import { RecordPipeline, type SemanticHook } from './gossip-validation.js';
import { regossipAfterSync } from './heal.js';
import { createNetMetrics, type NetMetrics } from './metrics.js';
import { DirectProtocols, PROTOCOLS, type CallOptions, type ClientStream, type ProtocolHandler, type ProtocolLimits, type StreamHandler, type StreamHost } from './protocols.js';
import { MemoryRecordCache, type RecordSource } from './record-cache.js';
import { encodeRecordsRequest, MAX_LIVE, recordsHandler, type RecordsServeOptions } from './records-protocol.js';
import type { FloodLimitOptions } from './flood-limits.js';
import { AbusePolicy, type AbuseOptions } from './peer-abuse.js';
import { ALL_SHARDS, DEFAULT_OVERLAY, checkOverlay, checkShard, expectedType, isSharded, recordShards, topicFor, topicsFor, TOPIC_KINDS, type TopicKind } from './topics.js';
import { Connectivity, type ConnectivityOptions, type ConnectivityStatus, type RememberStore } from './connectivity.js';
import { GossipHealth, type GossipHealthOptions } from './gossip-health.js';
import { createLinkMetrics } from './link-metrics.js';
import { overlayGater, RefusalLog } from './refusals.js';
import { gossipHost, type GossipInternals } from './link-hosts.js';
import { OFFER_LIMITS, OFFER_PROTOCOL, offerHandler, sendOffer, type OfferSendOutcome } from './offer-route.js';
import { defaultVerifyThreads, SharedPoolVerifier } from './verify-pool.js';
import { dhtService } from './dht-options.js';
import { digestOf } from './sync-digest.js';

export { DHT_PROTOCOL } from './dht-options.js';

/**
 * The gossipsub settings every c0mpute node runs with (unsigned messages, the
 * message id is the SHA-256 of the bytes, validation before forwarding); the
 * idle bench's bare-libp2p baseline uses the same.
 */
export const GOSSIP_BASE = {
  globalSignaturePolicy: StrictNoSign,
  msgIdFn: (msg: { data: Uint8Array }) => sha256(msg.data),
  emitSelf: false,
  allowPublishToZeroTopicPeers: true,
  ignoreDuplicatePublishError: true,
  asyncValidation: false,
} as const;

/**
 * Liveness pings (docs/network.md §11 "Pings under load"): libp2p's connection monitor pings every connection every
 * 10 s and aborts it on one failed ping, and a ping that overlaps the previous one fails at once (one outbound ping
 * stream per connection). Under a few seconds of event-loop lag that dropped healthy connections, and the reconnects
 * (handshake, identify, sync) deepened the lag. Pings may overlap, and time out no sooner than 15 s. And every
 * 30 s, not 10: a ping is a new stream each way (multistream-select, a peer-store merge, a dozen encrypted frames),
 * a third of an idle node's CPU at 5 peers (docs/scale.md "Where the hundred-node run's CPU went").
 */
export const LIVENESS = { pingIntervalMs: 30_000, pingStreams: 4, pingMinTimeoutMs: 15_000 } as const;

export interface NetworkOptions {
  /** The node's identity; its libp2p key is derived from the same seed. */
  signer: Ed25519Signer;
  /** Listen multiaddrs (default `['/ip4/0.0.0.0/tcp/0']`; tests use `/ip4/127.0.0.1/tcp/0`). */
  listen?: string[];
  /** Addresses to announce instead of the listen addresses (default: none). */
  announce?: string[];
  /** Bootstrap peers, multiaddrs ending in `/p2p/<peer id>` (default: none). Dialled at start. */
  bootstrap?: string[];
  /** Overlay name in topics (default `public`). */
  overlay?: string;
  /** Gossip kinds joined at start (default: all). A node relays only the kinds it joins. */
  topics?: TopicKind[];
  /** Markets joined for the sharded kinds (advert, job, presence): shards from `shardOf(workload)` (default: every shard). A node relays and syncs only these. */
  shards?: string[];
  /**
   * Loopback/private-address mode (default false): the DHT keeps private
   * addresses (passthroughMapper), serves queries (clientMode false) and
   * self-queries fast; gossipsub does not penalise many peers on one IP.
   */
  loopback?: boolean;
  /** DHT client mode (default: false in loopback mode, else libp2p's default). */
  dhtClientMode?: boolean;
  /** Private network: the swarm key file's bytes (see `generateSwarmKey`). Default: none (public). */
  swarmKey?: Uint8Array;
  /** DIDs allowed to connect (default: anyone). The connection gater refuses every other peer. */
  allowlist?: string[];
  /** Injected clock for freshness checks (default: system clock). */
  clock?: Clock;
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

export interface PeerInfo {
  peerId: string;
  /** The peer's DID (undefined for a non-Ed25519 peer). */
  did: string | undefined;
  addrs: string[];
}

export interface SyncResult {
  accepted: number;
  ignored: number;
  rejected: number;
  /** Per kind whose request failed, the error code. */
  failed: Partial<Record<TopicKind, string>>;
}

export type PeerRef = PeerId | Multiaddr | string;

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
  /**
   * Publish a record (envelope bytes) on its kind's topic, optionally with
   * attachments (an offer with the advert it cites). Checked locally first
   * (type, shape, freshness, signature): throws the C0Error a peer would reject it with.
   */
  publish(kind: TopicKind, envelope: Uint8Array, attachments?: Uint8Array[]): Promise<{ recipients: number; address: string }>;
  /**
   * Send an offer (with the advert it cites attached) to its buyer (and steward) only, over
   * /c0mpute/offer/1 (offer-route.ts); the same local checks as `publish`. Never throws for an
   * unreachable recipient: the outcome per DID says what happened.
   */
  sendOffer(to: readonly string[], envelope: Uint8Array, attachments?: Uint8Array[]): Promise<{ outcomes: Record<string, OfferSendOutcome>; address: string }>;
  /** Accepted records of `kind`, each once (gossip and sync). Returns an unsubscribe function. */
  subscribe(kind: TopicKind, handler: RecordHandler): () => void;
  /** Set or clear the semantic hook for a kind. */
  setHook(kind: TopicKind, hook: SemanticHook | undefined): void;
  /** Serve a direct protocol. */
  handle(protocol: string, handler: ProtocolHandler, limits?: Partial<ProtocolLimits>): Promise<void>;
  /** Call a direct protocol on a peer (PeerId, peer id string, DID or multiaddr). */
  request(peer: PeerRef, protocol: string, frames: CborValue[], opts?: CallOptions): Promise<CborValue[]>;
  /** Serve a streaming direct protocol (exec/1: request frames read one at a time, within the byte budget). */
  handleStream(protocol: string, handler: StreamHandler, limits?: Partial<ProtocolLimits>): Promise<void>;
  /** Open a streaming direct protocol on a peer. */
  openStream(peer: PeerRef, protocol: string, opts?: Omit<CallOptions, 'onFrame'>): Promise<ClientStream>;
  /** Fetch records by address from a peer; each is checked (address, type, shape, signature). */
  fetchRecords(peer: PeerRef, addresses: string[], expectedType?: string): Promise<Opened[]>;
  /** Ask a peer for the live records it holds of `kinds`; each goes through the gossip pipeline and reaches subscribers once. */
  syncFrom(peer: PeerRef, kinds?: TopicKind[]): Promise<SyncResult>;
  /** A peer's addresses from its DID: the peer store, else the DHT. Throws NET_PEER_NOT_FOUND. */
  findPeer(did: string, opts?: { useCache?: boolean; timeoutMs?: number }): Promise<string[]>;
  /** Gossipsub score this node gives a peer. */
  gossipScore(peer: PeerRef): number;
  /** Peers subscribed to a kind's topic. */
  topicPeers(kind: TopicKind): string[];
  /** Resolves when every accepted record so far has been handed to the subscribers. */
  drained(): Promise<void>;
  /** Connected peers and the state of each bootstrap peer (failures, last error). */
  connectivity(): ConnectivityStatus;
}

/** A new swarm key (the swarm.key file's bytes) for a private network. */
export function generateSwarmKey(): Uint8Array {
  const k = new Uint8Array(95);
  generateKey(k);
  return k;
}

/** Gossipsub topic scoring: invalid messages cost a lot, quiet mesh peers nothing (market traffic is sparse). */
export function topicScoreParams(): TopicScoreParams {
  return createTopicScoreParams({
    topicWeight: 1,
    timeInMeshWeight: 0.01,
    timeInMeshQuantum: 1_000,
    timeInMeshCap: 300,
    firstMessageDeliveriesWeight: 0.5,
    firstMessageDeliveriesDecay: 0.9,
    firstMessageDeliveriesCap: 20,
    meshMessageDeliveriesWeight: 0,
    meshFailurePenaltyWeight: 0,
    invalidMessageDeliveriesWeight: -10,
    invalidMessageDeliveriesDecay: 0.9,
  });
}

function toPeerId(p: PeerRef): PeerId | Multiaddr {
  if (typeof p !== 'string') return p;
  if (p.startsWith('did:')) return peerIdFromDid(p);
  if (p.startsWith('/')) return multiaddr(p);
  try {
    return peerIdFromString(p);
  } catch (e) {
    throw new C0Error('PEER_ID_MALFORMED', `not a PeerId, DID or multiaddr: ${p.slice(0, 80)} (${(e as Error).message})`);
  }
}

function peerKey(p: PeerId | Multiaddr): string {
  if (isMultiaddr(p)) return p.getComponents().find((c) => c.name === 'p2p')?.value ?? p.toString();
  return p.toString();
}

export async function createNetwork(opts: NetworkOptions): Promise<Network> {
  const log = (opts.logger ?? silentLogger()).child({ module: 'net' });
  const clock = opts.clock ?? systemClock;
  const overlay = checkOverlay(opts.overlay ?? NETWORK_DEFAULTS.overlay);
  const joined = opts.topics ?? TOPIC_KINDS;
  const shards = [...new Set((opts.shards ?? ALL_SHARDS).map(checkShard))].sort();
  const shardSet = new Set(shards);
  /** The topics a record goes out on: its kind's, or for a sharded kind one per market it belongs to. */
  const recordTopics = (kind: TopicKind, rec: Opened): string[] => (isSharded(kind) ? recordShards(kind, rec.record).map((sh) => topicFor(kind, overlay, sh)) : [topicFor(kind, overlay)]);
  const loopback = opts.loopback ?? false;
  const syncKinds = opts.syncOnConnect ?? NETWORK_DEFAULTS.syncOnConnect;
  const syncLimit = Math.min(opts.syncLimit ?? NETWORK_DEFAULTS.syncLimit, MAX_LIVE);
  const source: RecordSource = opts.records ?? new MemoryRecordCache();
  const did = didFromPublicKey(opts.signer.publicKey);
  const allow = opts.allowlist ? new Set(opts.allowlist) : undefined;

  const ref: { node?: Libp2p<{ pubsub: GossipSub; dht: KadDHT }> } = {};
  const metrics = createNetMetrics(opts.registry, () => ref.node?.getPeers().length ?? 0);
  const verifyThreads = opts.verifyThreads ?? defaultVerifyThreads();
  const sigPool = verifyThreads > 0 ? new SharedPoolVerifier(verifyThreads) : undefined;
  const pipeline = new RecordPipeline({
    clock,
    skewMs: opts.skewMs,
    maxMessageBytes: opts.maxMessageBytes,
    seenSize: opts.seenSize,
    maxInFlight: opts.maxInFlight,
    hooks: opts.hooks,
    floodLimits: opts.floodLimits,
    ...(sigPool ? { verifier: sigPool } : {}),
    metrics,
    log,
  });
  const abuse = new AbusePolicy(pipeline.guard, opts.abuse ?? {}, clock, log, (p) => ref.node?.hangUp(peerIdFromString(p)), metrics.registry);
  const dispatcher = new Dispatcher({ maxQueue: opts.maxDeliveryQueue ?? NETWORK_DEFAULTS.maxDeliveryQueue, metrics, log });

  const allowed = (peer: PeerId): boolean => {
    if (!allow) return true;
    try {
      return allow.has(didFromPeerId(peer));
    } catch {
      return false;
    }
  };

  const link = createLinkMetrics(metrics.registry, {
    connections: () => ref.node?.getConnections() ?? [],
    gossip: () => (ref.node ? gossipHost(ref.node, overlay).scores : undefined),
  });
  const refusals = new RefusalLog({ log, count: (reason) => link.refused.inc({ reason }) });

  const topics: Record<string, TopicScoreParams> = {};
  for (const k of TOPIC_KINDS) for (const t of topicsFor(k, overlay)) topics[t] = topicScoreParams();

  const dhtClientMode = opts.dhtClientMode ?? (loopback ? false : undefined);
  const libp2p = await createLibp2p({
    start: false,
    privateKey: await libp2pKey(opts.signer),
    addresses: { listen: opts.listen ?? [...NETWORK_DEFAULTS.listen], ...(opts.announce ? { announce: opts.announce } : {}) },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    ...(opts.swarmKey ? { connectionProtector: preSharedKey({ psk: opts.swarmKey }) } : {}),
    connectionGater: overlayGater({ ...(allow ? { allowed } : {}), banned: (p) => abuse.denied(p.toString()) || (opts.unreachable?.(p.toString()) ?? false), refusals, watchHandshakes: !!opts.swarmKey }),
    connectionManager: { maxConnections: opts.maxConnections ?? NETWORK_DEFAULTS.maxConnections },
    connectionMonitor: { pingInterval: LIVENESS.pingIntervalMs, pingTimeout: { minTimeout: LIVENESS.pingMinTimeoutMs } },
    peerDiscovery: opts.bootstrap?.length ? [bootstrap({ list: opts.bootstrap })] : [],
    services: {
      identify: identify(),
      ping: ping({ maxInboundStreams: LIVENESS.pingStreams, maxOutboundStreams: LIVENESS.pingStreams }),
      pubsub: gossipsub({
        ...GOSSIP_BASE,
        scoreParams: createPeerScoreParams({ topics, appSpecificScore: abuse.appSpecificScore, appSpecificWeight: abuse.opts.appSpecificWeight, ...(loopback ? { IPColocationFactorWeight: 0 } : {}) }),
        ...opts.gossip,
      }),
      dht: dhtService({ loopback, clientMode: dhtClientMode }),
    },
  });
  ref.node = libp2p;
  const pubsub = libp2p.services.pubsub;
  const direct = new DirectProtocols(libp2p as unknown as StreamHost, metrics, log);
  const gh = gossipHost(libp2p, overlay);
  const connectivity = new Connectivity({ host: gh.connectivity, bootstrap: opts.bootstrap ?? [], ...(opts.connectivity ? { options: opts.connectivity } : {}), ...(opts.rememberStore ? { store: opts.rememberStore } : {}), log, onDial: (kind, ok) => link.dials.inc({ kind, outcome: ok ? 'ok' : 'failed' }) });
  const health = new GossipHealth(gh.health, { log, onRepair: (action) => link.repairs.inc({ action }), ...(opts.gossipHealth ? { options: opts.gossipHealth } : {}) });
  // gossipsub drops a peer after an error on its inbound stream but keeps the connection: re-attach it (see gossip-health.ts).
  const gsi = pubsub as unknown as GossipInternals;
  const onReadError = gsi.handlePeerReadStreamError.bind(gsi);
  gsi.handlePeerReadStreamError = (err, p) => {
    onReadError(err, p);
    if (started) health.onStreamError(p.toString(), libp2p.getConnections(p).some((c) => c.status === 'open'));
  };
  const onConnOpen = (evt: CustomEvent<Connection>): void => link.connectionEvents.inc({ event: 'open', direction: evt.detail.direction });
  const onConnClose = (evt: CustomEvent<Connection>): void => link.connectionEvents.inc({ event: 'close', direction: evt.detail.direction });

  const accept = (fresh: Array<{ kind: TopicKind; rec: Opened; knownAdvertiser?: boolean }>, from: string, source0: 'gossip' | 'sync' | 'direct', attachments: Opened[]): void => {
    // What a record cites is delivered before it: the attached advert, then the offer citing it (fresh[0]
    // is the primary). Otherwise a buyer woken by the offer could decide before its advert is known.
    for (let i = fresh.length - 1; i >= 0; i--) {
      const f = fresh[i]!;
      source.add?.(f.kind, f.rec);
      dispatcher.push(f.rec, { kind: f.kind, from, source: source0, attachments: i === 0 ? attachments : [] });
      // after a heal: pass on what a sync brought that gossip would have (heal.ts)
      if (source0 === 'sync' && started && regossipAfterSync(f, joinedAt)) for (const t of recordTopics(f.kind, f.rec)) void pubsub.publish(t, f.rec.bytes).catch(() => undefined);
    }
  };

  // Gossip validation: the pipeline's verdict becomes the gossipsub verdict.
  // A PeerId's string form is base58 work; gossipsub hands the same object for a peer's messages, so keep it.
  const peerStrings = new WeakMap<object, string>();
  for (const kind of TOPIC_KINDS) for (const topic of topicsFor(kind, overlay)) {
    const shard = isSharded(kind) ? topic.slice(topic.lastIndexOf('/') + 1) : undefined;
    pubsub.topicValidators.set(topic, async (peer, msg) => {
      let from = peerStrings.get(peer);
      if (from === undefined) peerStrings.set(peer, (from = peer.toString()));
      const out = await pipeline.validate(kind, msg.data, from, 'gossip');
      if (out.verdict === 'accept') {
        // only the primary of a fresh message gets the attachments as context
        const primaryFresh = out.fresh[0]?.rec.address === out.primary?.address;
        accept(out.fresh, from, 'gossip', primaryFresh ? (out.attachments ?? []) : []);
        // A valid record on another market's shard is kept (it is valid; refusing it here would let a copy on the
        // wrong shard hide the right one) but not passed on, and the sender is scored as for an invalid message.
        if (shard !== undefined && out.primary && !recordShards(kind, out.primary.record).includes(shard)) {
          metrics.records.inc({ source: 'gossip', kind, verdict: 'reject', reason: 'TOPIC_WRONG_SHARD' });
          return TopicValidatorResult.Reject;
        }
        return TopicValidatorResult.Accept;
      }
      return out.verdict === 'reject' ? TopicValidatorResult.Reject : TopicValidatorResult.Ignore;
    });
  }

  // Sync on join: ask each newly identified peer that speaks records/1 for its live records.
  const synced = new Set<string>();
  const onIdentify = (evt: CustomEvent<IdentifyResult>): void => {
    const { peerId, protocols } = evt.detail;
    const key = peerId.toString();
    if (protocols.includes(PROTOCOLS.records)) connectivity.noteUseful(key, evt.detail.listenAddrs.map((a) => a.toString()));
    if (!syncKinds.length || synced.has(key) || !protocols.includes(PROTOCOLS.records)) return;
    synced.add(key);
    void net.syncFrom(peerId, syncKinds).then(
      (r) => log.debug({ peer: key, ...r }, 'synced from peer'),
      (e: unknown) => log.debug({ peer: key, err: (e as Error).message }, 'sync from peer failed'),
    );
  };
  const onDisconnect = (evt: CustomEvent<PeerId>): void => {
    synced.delete(evt.detail.toString());
    connectivity.wake();
  };

  /** The local checks before a record leaves (a peer would reject it with the same code), and the message bytes. */
  const prepare = (kind: TopicKind, envelope: Uint8Array, attachments: Uint8Array[]): { rec: Opened; data: Uint8Array } => {
    const type = expectedType(kind);
    const rec = open(envelope, type);
    checkFresh(type, rec.record, clock(), opts.skewMs);
    for (const att of attachments) {
      const a = open(att, peekType(att).type);
      checkFresh(a.type, a.record, clock(), opts.skewMs);
      if ((rec.record as { advert?: string }).advert !== a.address) throw new C0Error('MESSAGE_BAD_ATTACHMENT', `the ${kind} does not cite the attached record ${a.address}`);
    }
    const data = encodeMessage(envelope, attachments);
    if (data.length > pipeline.maxMessageBytes) throw new C0Error('MESSAGE_TOO_LARGE', `message of ${data.length} bytes exceeds ${pipeline.maxMessageBytes}`);
    pipeline.markOwn(kind, rec, hashHex(data));
    source.add?.(kind, rec);
    return { rec, data };
  };

  let started = false;
  let joinedAt = Infinity;
  const net: Network = {
    peerId: libp2p.peerId,
    did,
    overlay,
    metrics,
    libp2p,

    async start() {
      if (started) return;
      started = true;
      joinedAt = clock();
      sigPool?.open();
      await direct.serve(PROTOCOLS.records, recordsHandler(source, clock, opts.recordsServe));
      await direct.serve(OFFER_PROTOCOL, offerHandler({ validate: (data, from) => pipeline.validate('offer', data, from, 'direct'), accept: (out, from) => accept(out.fresh, from, 'direct', out.attachments ?? []) }), OFFER_LIMITS);
      libp2p.addEventListener('peer:identify', onIdentify);
      libp2p.addEventListener('peer:disconnect', onDisconnect);
      libp2p.addEventListener('connection:open', onConnOpen);
      libp2p.addEventListener('connection:close', onConnClose);
      try {
        await libp2p.start();
      } catch (e) {
        // A listen address in use or not listenable is the operator's to fix, not a bug: say which and why in one line.
        const name = (e as Error).name;
        if (name !== 'UnsupportedListenAddressesError' && name !== 'UnsupportedListenAddressError') throw e;
        const which = (e as Error).message.split('\n').map((l) => l.trim()).filter((l) => l.startsWith('/')).join('; ');
        throw new C0Error('NET_LISTEN_FAILED', `overlay ${overlay}: cannot listen on ${which || (opts.listen ?? []).join(', ')} (is another process using the port? each overlay needs its own)`, { field: 'listen', detail: { name } });
      }
      for (const k of joined) for (const t of topicsFor(k, overlay, shards)) pubsub.subscribe(t);
      connectivity.start();
      health.start();
      log.info({ peerId: libp2p.peerId.toString(), did, overlay, addrs: net.addrs() }, 'network started');
    },

    async stop() {
      if (!started) return;
      started = false;
      connectivity.stop();
      health.stop();
      libp2p.removeEventListener('peer:identify', onIdentify);
      libp2p.removeEventListener('peer:disconnect', onDisconnect);
      libp2p.removeEventListener('connection:open', onConnOpen);
      libp2p.removeEventListener('connection:close', onConnClose);
      await libp2p.stop();
      await sigPool?.close();
      await dispatcher.drained();
      log.info('network stopped');
    },

    addrs() {
      return libp2p.getMultiaddrs().map((a) => a.toString());
    },

    async dial(target, o = {}) {
      const t = toPeerId(target);
      try {
        const conn: Connection = await libp2p.dial(t, { signal: AbortSignal.timeout(o.timeoutMs ?? NETWORK_DEFAULTS.dialTimeoutMs) });
        return conn.remotePeer;
      } catch (e) {
        throw new C0Error('NET_DIAL_FAILED', `cannot connect to ${target.toString().slice(0, 120)}: ${(e as Error).message}`, { detail: { name: (e as Error).name } });
      }
    },

    peers() {
      return libp2p.getPeers().map((p) => {
        let d: string | undefined;
        try {
          d = didFromPeerId(p);
        } catch {
          d = undefined;
        }
        return { peerId: p.toString(), did: d, addrs: libp2p.getConnections(p).map((c) => c.remoteAddr.toString()) };
      });
    },

    async publish(kind, envelope, attachments = []) {
      const { rec, data } = prepare(kind, envelope, attachments);
      const out = recordTopics(kind, rec);
      if (!out.length) throw new C0Error('NET_NO_SHARD', `this ${kind} names no workload: no market topic to publish it on`, { field: 'workloads' });
      let recipients = 0;
      for (const t of out) recipients += (await pubsub.publish(t, data)).recipients.length;
      metrics.published.inc({ kind });
      return { recipients, address: rec.address };
    },

    async sendOffer(to, envelope, attachments = []) {
      const { rec, data } = prepare('offer', envelope, attachments);
      const outcomes = await sendOffer({ call: (p, proto, frames, o) => direct.call(p, proto, frames, o), registry: metrics.registry }, to, data);
      metrics.published.inc({ kind: 'offer' });
      return { outcomes, address: rec.address };
    },

    subscribe(kind, handler) {
      // offers also arrive over /c0mpute/offer/1, whether or not the node joins their gossip topic
      if (!joined.includes(kind) && kind !== 'offer') throw new C0Error('NET_TOPIC_NOT_JOINED', `kind ${kind} is not among the joined topics`, { field: 'topics' });
      return dispatcher.subscribe(kind, handler);
    },

    setHook(kind, hook) {
      pipeline.setHook(kind, hook);
    },

    async handle(protocol, handler, limits) {
      await direct.serve(protocol, handler, limits);
    },

    async request(peer, protocol, frames, callOpts) {
      return direct.call(toPeerId(peer), protocol, frames, callOpts);
    },

    async handleStream(protocol, handler, limits) {
      await direct.serveStream(protocol, handler, limits);
    },

    async openStream(peer, protocol, callOpts) {
      return direct.open(toPeerId(peer), protocol, callOpts);
    },

    async fetchRecords(peer, addresses, type) {
      if (!addresses.every(isAddress)) throw new C0Error('ADDRESS_MALFORMED', 'fetchRecords: addresses must be sha256:<hex>', { field: 'addresses' });
      const want = new Set(addresses);
      const frames = await direct.call(toPeerId(peer), PROTOCOLS.records, [encodeRecordsRequest({ op: 'get', addresses })]);
      const out: Opened[] = [];
      for (const f of frames) {
        const label = { source: 'fetch', kind: 'any' };
        if (!(f instanceof Uint8Array) || !want.has(hashHex(f))) {
          metrics.records.inc({ ...label, verdict: 'reject', reason: 'NOT_REQUESTED' });
          continue;
        }
        try {
          const rec = pipeline.checkFetched(f, type);
          want.delete(rec.address);
          metrics.records.inc({ ...label, verdict: 'accept', reason: 'ok' });
          out.push(rec);
        } catch (e) {
          metrics.records.inc({ ...label, verdict: 'reject', reason: (e as C0Error).code ?? 'INTERNAL' });
        }
      }
      return out;
    },

    async syncFrom(peer, kinds = syncKinds) {
      const p = toPeerId(peer);
      const from = peerKey(p);
      const res: SyncResult = { accepted: 0, ignored: 0, rejected: 0, failed: {} };
      for (const kind of kinds) {
        if (!joined.includes(kind)) continue;
        let frames: CborValue[];
        try {
          // a sharded kind: only the markets this node holds (docs/network.md §14)
          const only = isSharded(kind) && shards.length < ALL_SHARDS.length ? { shards } : {};
          // the digest: what this node holds is not sent back (sync-digest.ts)
          const have = digestOf(await source.live(kind, clock(), syncLimit, isSharded(kind) ? shardSet : undefined));
          frames = await direct.call(p, PROTOCOLS.records, [encodeRecordsRequest({ op: 'live', kind, limit: syncLimit, ...only, have })]);
        } catch (e) {
          res.failed[kind] = (e as C0Error).code ?? 'INTERNAL';
          metrics.syncs.inc({ outcome: 'failed' });
          continue;
        }
        for (const f of frames) {
          if (!(f instanceof Uint8Array)) {
            res.rejected++;
            metrics.records.inc({ source: 'sync', kind, verdict: 'reject', reason: 'NOT_BYTES' });
            continue;
          }
          const out = await pipeline.validate(kind, f, from, 'sync');
          // a peer that does not filter by market (an older version) may answer with others: not delivered
          if (out.verdict === 'accept' && isSharded(kind) && out.primary && !recordShards(kind, out.primary.record).some((sh) => shardSet.has(sh))) res.ignored++;
          else if (out.verdict === 'accept') {
            res.accepted++;
            accept(out.fresh, from, 'sync', out.attachments ?? []);
          } else if (out.verdict === 'reject') res.rejected++;
          else res.ignored++;
        }
        metrics.syncs.inc({ outcome: 'ok' });
      }
      return res;
    },

    async findPeer(targetDid, o = {}) {
      const pid = peerIdFromDid(targetDid);
      if (pid.equals(libp2p.peerId)) return net.addrs();
      if (o.useCache ?? true) {
        try {
          const p = await libp2p.peerStore.get(pid);
          if (p.addresses.length) return p.addresses.map((a) => a.multiaddr.toString());
        } catch {
          /* not in the peer store */
        }
      }
      try {
        const info = await libp2p.peerRouting.findPeer(pid, { signal: AbortSignal.timeout(o.timeoutMs ?? NETWORK_DEFAULTS.findPeerTimeoutMs), useCache: o.useCache ?? true } as { signal: AbortSignal });
        if (info.multiaddrs.length) return info.multiaddrs.map((a) => a.toString());
      } catch (e) {
        throw new C0Error('NET_PEER_NOT_FOUND', `no addresses found for ${targetDid}: ${(e as Error).message}`);
      }
      throw new C0Error('NET_PEER_NOT_FOUND', `no addresses found for ${targetDid}`);
    },

    gossipScore(peer) {
      const p = toPeerId(peer);
      return (pubsub as unknown as { getScore(id: string): number }).getScore(peerKey(p));
    },

    topicPeers(kind) {
      return [...new Set(topicsFor(kind, overlay, shards).flatMap((t) => pubsub.getSubscribers(t).map((p) => p.toString())))];
    },

    drained() {
      return dispatcher.drained();
    },

    connectivity() {
      return connectivity.status();
    },
  };
  return net;
}
