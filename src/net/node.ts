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
 *
 * Its parts beside it: the facade's contract (options, defaults, the Network
 * interface: network-api.ts), the libp2p node (transports, services, liveness,
 * gater: libp2p-host.ts) and the records/1 wiring (serve, fetch, sync, sync on
 * join: records-sync.ts). This file wires them with validation and delivery.
 */
import type { Libp2p } from 'libp2p';
import { TopicValidatorResult, type GossipSub } from '@libp2p/gossipsub';
import type { KadDHT } from '@libp2p/kad-dht';
import { peerIdFromString } from '@libp2p/peer-id';
import { multiaddr } from '@multiformats/multiaddr';
import type { PeerId, Connection, IdentifyResult } from '@libp2p/interface';
import { C0Error } from '../errors.js';
import { hashHex, sha256 } from '../records/address.js';
import { didFromPublicKey } from '../records/did.js';
import { open, peekType, type Opened } from '../records/envelope.js';
import { checkFresh } from '../records/freshness.js';
import { didFromPeerId, peerIdFromDid } from '../node/peer-id.js';
import { monotonicClock, systemClock } from '../util/clock.js';
import { silentLogger } from '../util/log.js';
import { PeerLog } from '../util/peer-log.js';
import { Dispatcher, type Handled } from './dispatch.js';
import { coalesceWrites } from './write-coalesce.js';
import { decodeMessage, encodeMessage } from './framing.js';
import { AdvertsAhead, ClockDrops } from './clock-drops.js';
import { RecordPipeline, type ValidationOutcome } from './gossip-validation.js';
import { regossipAfterSync } from './heal.js';
import { createNetMetrics, registerVerifyThreadMetrics } from './metrics.js';
import { DirectProtocols, PROTOCOLS, type StreamHost } from './protocols.js';
import { MemoryRecordCache, type RecordSource } from './record-cache.js';
import { MAX_LIVE } from './records-protocol.js';
import { AbusePolicy } from './peer-abuse.js';
import { ALL_SHARDS, checkOverlay, checkShard, expectedType, heldShards, isSharded, placementCheckable, shardOf, topicFor, topicsFor, TOPIC_KINDS, type TopicKind } from './topics.js';
import { Connectivity } from './connectivity.js';
import { GossipHealth } from './gossip-health.js';
import { createLinkMetrics } from './link-metrics.js';
import { RefusalLog } from './refusals.js';
import { PendingInbound, MAX_PENDING_INBOUND_PER_IP } from './inbound-guard.js';
import { gossipHost, gossipLinks, type GossipInternals, type LinkHosts } from './link-hosts.js';
import { directHandler, OFFER_ROUTE, OUTCOME_DIRECT_KINDS, OUTCOME_ROUTE, SEND_CONCURRENCY, sendDirect, sendOffer, type OfferSendDeps } from './offer-route.js';
import { Slots } from '../util/serial.js';
import { defaultVerifyThreads, SharedPoolVerifier, verifyPoolStats } from './verify-pool.js';
import { createHost, messageId, messageType, topicBoundId } from './libp2p-host.js';
import { cancelAddressUpdate, sweepPeerStore } from './libp2p-patches.js';
import { NETWORK_DEFAULTS, peerKey, toPeerId, type GossipView, type Network, type NetworkOptions } from './network-api.js';
import { RecordsSync } from './records-sync.js';
import { bareAddr, isOneShot, PeerConnections, runOf, type DuplicateIdentity } from './peer-conns.js';
import { sendOnOtherTopics } from './shard-copies.js';

export { DHT_PROTOCOL, GOSSIP_BASE, LIVENESS, generateSwarmKey, topicScoreParams } from './libp2p-host.js';
export { NETWORK_DEFAULTS, type GossipView, type Network, type NetworkOptions, type PeerInfo, type PeerRef, type SyncResult } from './network-api.js';

/** How often the peer store is walked for departed peers past libp2p's expiry (6 h after their last update). */
const PEER_STORE_SWEEP_MS = 15 * 60_000;
/** How often the network notes that its event loop ran (RecordsSync.tick): a freeze longer than this is caught up on. */
export const ALIVE_TICK_MS = 1_000;

export async function createNetwork(opts: NetworkOptions): Promise<Network> {
  const log = (opts.logger ?? silentLogger()).child({ module: 'net' });
  const clock = opts.clock ?? systemClock;
  // durations (rate limits, abuse decay, bans) follow the monotonic clock: a step of the wall clock neither stalls nor skips them
  const mono = opts.monoClock ?? monotonicClock;
  const overlay = checkOverlay(opts.overlay ?? NETWORK_DEFAULTS.overlay);
  const joined = opts.topics ?? TOPIC_KINDS;
  // kinds whose topics this node publishes on but does not join (it hears them directly or not at all)
  const publishOnly = (opts.publishOnly ?? []).filter((k) => joined.includes(k));
  const shards = [...new Set((opts.shards ?? ALL_SHARDS).map(checkShard))].sort();
  /** The topics a record goes out on: its kind's, or for a sharded kind one per market it belongs to. */
  const recordTopics = (kind: TopicKind, rec: Opened): string[] => (isSharded(kind) ? heldShards(kind, rec.record).map((sh) => topicFor(kind, overlay, sh)) : [topicFor(kind, overlay)]);
  const loopback = opts.loopback ?? false;
  const syncKinds = opts.syncOnConnect ?? NETWORK_DEFAULTS.syncOnConnect;
  const syncLimit = Math.min(opts.syncLimit ?? NETWORK_DEFAULTS.syncLimit, MAX_LIVE);
  const source: RecordSource = opts.records ?? new MemoryRecordCache({ clock });
  const did = didFromPublicKey(opts.signer.publicKey);

  // the host and its gossip views, once built (the metrics' collectors read them; a scrape before that finds nothing)
  const ref: { node?: Libp2p<{ pubsub: GossipSub; dht: KadDHT }>; gh?: LinkHosts } = {};
  const metrics = createNetMetrics(opts.registry, () => ref.node?.getPeers().length ?? 0);
  const verifyThreads = opts.verifyThreads ?? defaultVerifyThreads();
  // a thread given up on is logged: its share of the signatures is verified on the event loop until it is replaced
  const sigPool =
    verifyThreads > 0
      ? new SharedPoolVerifier(verifyThreads, (loss) =>
          log[loss.wasReady ? 'warn' : 'error'](
            { reason: loss.reason, exitCode: loss.exitCode, err: loss.error, losses: loss.losses, respawnInMs: loss.respawnInMs },
            loss.wasReady
              ? 'a signature thread was lost and is replaced; its signatures were verified on the event loop'
              : 'a signature thread could not start; its share of the signatures is verified on the event loop until one does',
          ),
        )
      : undefined;
  if (sigPool) registerVerifyThreadMetrics(metrics.registry, verifyPoolStats);
  const clockDrops = new ClockDrops(opts.skewMs);
  const advertsAhead = new AdvertsAhead(opts.skewMs);
  const pipeline = new RecordPipeline({
    clock,
    monoClock: mono,
    skewMs: opts.skewMs,
    maxMessageBytes: opts.maxMessageBytes,
    seenSize: opts.seenSize,
    maxInFlight: opts.maxInFlight,
    hooks: opts.hooks,
    floodLimits: opts.floodLimits,
    ...(sigPool ? { verifier: sigPool } : {}),
    // Records dropped for their dates, sent by their own signer (clock-drops.ts): an offer that came directly, for the
    // buyer's word on that provider; a provider's advert dated ahead, for this node's network health.
    onDateDropped: (kind, data, from, code, source) => {
      const offer = kind === 'offer' && source === 'direct';
      if (!offer && (kind !== 'advert' || code !== 'RECORD_FROM_FUTURE')) return;
      let primary: Uint8Array;
      let fromDid: string;
      try {
        primary = decodeMessage(data).primary;
        fromDid = didFromPeerId(from);
      } catch {
        return; // not a message, or its sender no Ed25519 key: nothing to note
      }
      if (offer) clockDrops.note(primary, fromDid, code, clock());
      else advertsAhead.note(primary, fromDid, clock());
    },
    metrics,
    log,
  });
  const abuse = new AbusePolicy(pipeline.guard, opts.abuse ?? {}, mono, log, (p) => ref.node?.hangUp(peerIdFromString(p)), metrics.registry);
  const dispatcher = new Dispatcher({ maxQueue: opts.maxDeliveryQueue ?? NETWORK_DEFAULTS.maxDeliveryQueue, metrics, log });

  const link = createLinkMetrics(metrics.registry, {
    connections: () => ref.node?.getConnections() ?? [],
    gossip: () => ref.gh?.scores,
  });
  // a handshake's cause too: only `garbled` is what a wrong swarm key does (the console says the hint for it alone)
  const refusals = new RefusalLog({ log, count: (reason, cause) => link.refused.inc(cause ? { reason, cause } : { reason }) });

  // The topics this node joins (subscribed at start, for the whole run: a node does not change markets while it runs),
  // each with the content type it carries. Only these are taken: a message on any other is ignored (below).
  const taken = new Map<string, string>();
  for (const k of joined) if (!publishOnly.includes(k)) for (const t of topicsFor(k, overlay, shards)) taken.set(t, expectedType(k));
  // the messages this node publishes (their bytes): on a topic it did not join they keep the network's message id
  const published = new WeakSet<Uint8Array>();
  // gossipsub's message id (libp2p-host.ts messageId): the content address of a record on its kind's topic, here only on
  // a topic this node joined or for what it publishes. A message it ignores on a topic it did not join gets an id bound
  // to that topic, so that copy cannot make the same record a duplicate on a topic it joined (a record of two markets).
  const msgIdFn = (msg: { topic: string; data: Uint8Array }): Uint8Array => {
    const type = taken.get(msg.topic);
    if (type !== undefined) return messageType(msg.data) === type ? sha256(msg.data) : topicBoundId(msg.topic, msg.data);
    return published.has(msg.data) ? messageId(msg.topic, msg.data) : topicBoundId(msg.topic, msg.data);
  };

  // inbound connections still handshaking, per address, and what was refused before its handshake (inbound-guard.ts)
  const pending = new PendingInbound({ perIp: MAX_PENDING_INBOUND_PER_IP, clock: mono, localShared: loopback });
  const libp2p = await createHost(opts, { overlay, loopback, abuse, refusals, msgIdFn, pending });
  ref.node = libp2p;
  const pubsub = libp2p.services.pubsub;
  // each connection's identify, apart from the PeerId's (two processes may hold one key: peer-conns.ts)
  const conns = new PeerConnections();
  // where else a peer's processes listen: those seen this run, then its remembered addresses (from before a restart)
  const connView = { speaks: (id: string, p: string) => conns.speaks(id, p), altAddrs: (peer: string, p: string) => conns.altAddrs(peer, p, connectivity.knownAddrs(peer)) };
  const direct = new DirectProtocols(libp2p as unknown as StreamHost, metrics, log, { budget: opts.directBudget ?? {}, conns: connView });
  const gh = (ref.gh = gossipHost(libp2p, overlay));
  // a peer banned for flooding is neither dialled nor remembered, and is forgotten as it is banned (connectivity.ts)
  const connectivity = new Connectivity({ host: { ...gh.connectivity, refused: (p) => abuse.denied(p) }, bootstrap: opts.bootstrap ?? [], clock, monoClock: mono, ...(opts.connectivity ? { options: opts.connectivity } : {}), ...(opts.rememberStore ? { store: opts.rememberStore } : {}), log, onDial: (kind, ok) => link.dials.inc({ kind, outcome: ok ? 'ok' : 'failed' }) });
  abuse.onBan = (p) => connectivity.forget(p, 'banned for flooding (refused for network.abuse.banMs; not redialled, nor after a restart)');
  const health = new GossipHealth(gh.health, { log, onRepair: (action) => link.repairs.inc({ action }), ...(opts.gossipHealth ? { options: opts.gossipHealth } : {}) });
  // gossipsub drops a peer after an error on its inbound stream but keeps the connection: re-attach it (see gossip-health.ts).
  const gsi = pubsub as unknown as GossipInternals;
  const onReadError = gsi.handlePeerReadStreamError.bind(gsi);
  gsi.handlePeerReadStreamError = (err, p) => {
    onReadError(err, p);
    if (started) health.onStreamError(p.toString(), libp2p.getConnections(p).some((c) => c.status === 'open'));
  };
  const onConnOpen = (evt: CustomEvent<Connection>): void => {
    coalesceWrites(evt.detail);
    link.connectionEvents.inc({ event: 'open', direction: evt.detail.direction });
  };
  // One key, two processes (docs/network.md §11 "Two processes with one key"): said once per peer per 10 minutes.
  const duplicateLog = new PeerLog({ log, clock: mono, windowMs: 600_000 });
  const onDuplicate = (d: DuplicateIdentity): void => {
    link.duplicates.inc();
    let peerDid: string | undefined;
    try {
      peerDid = didFromPeerId(peerIdFromString(d.peer));
    } catch {
      peerDid = undefined;
    }
    duplicateLog.warn(
      d.peer,
      'NET_DUPLICATE_IDENTITY',
      'one key, two processes: a peer is connected from two processes that hold the same identity key (a copied identity.key or data directory, a cloned machine?); its streams go to the process that speaks their protocol, and both share its reputation',
      { ...(peerDid ? { did: peerDid } : {}), processes: d.processes.map((p) => ({ listen: p.listen, from: p.remote, serves: p.protocols })) },
    );
  };
  /**
   * The peer store's addresses and protocols of a peer, as its processes connected now said them. libp2p keeps the
   * signed peer record with the highest seq: a second process's newer record stayed after that process left, and each
   * later identify of the first one put the gone process's addresses back (QA qaNet F2). Nothing when none is open.
   */
  const refreshPeerStore = (peer: string): void => {
    const listen = conns.listenOf(peer);
    if (!listen.length) return;
    const protocols = [...new Set(conns.of(peer).flatMap((c) => [...c.protocols]))];
    libp2p.peerStore.patch(peerIdFromString(peer), { multiaddrs: listen.map((a) => multiaddr(a)), protocols }).catch((e: Error) => log.debug({ peer, err: e.message }, 'peer store refresh failed'));
  };
  /**
   * A peer's addresses to remember (connectivity), as its open connections said them, and the one this node dialled.
   * A one-shot node's (its user agent says so: a new port each run, gone when its command ends) are not remembered.
   */
  const rememberFrom = (peer: string, dialled: string | undefined): void => {
    const lasting = conns.of(peer).filter((c) => !c.oneShot);
    if (lasting.some((c) => c.protocols.has(PROTOCOLS.records))) connectivity.noteUseful(peer, [...new Set(lasting.flatMap((c) => c.listen))], dialled);
  };
  const onConnClose = (evt: CustomEvent<Connection>): void => {
    link.connectionEvents.inc({ event: 'close', direction: evt.detail.direction });
    // the processes still connected under its PeerId: their addresses, not the gone one's, are the peer's now
    const left = conns.closed(evt.detail.id, clock());
    if (!left?.remaining.length) return;
    rememberFrom(left.peer, left.remaining.find((c) => c.outbound)?.remote);
    if (conns.wasDuplicated(left.peer)) refreshPeerStore(left.peer);
  };

  /** `handled`: told once the primary (fresh[0]) was handled (a direct route answers only then: offer-route.ts). */
  const accept = (fresh: Array<{ kind: TopicKind; rec: Opened; knownAdvertiser?: boolean }>, from: string, source0: 'gossip' | 'sync' | 'direct', attachments: Opened[], handled?: Handled): void => {
    // What a record cites is delivered before it: the attached advert, then the offer citing it (fresh[0]
    // is the primary). Otherwise a buyer woken by the offer could decide before its advert is known.
    for (let i = fresh.length - 1; i >= 0; i--) {
      const f = fresh[i]!;
      source.add?.(f.kind, f.rec);
      if (f.kind === 'advert') advertsAhead.taken(f.rec.signer);
      dispatcher.push(f.rec, { kind: f.kind, from, source: source0, attachments: i === 0 ? attachments : [] }, i === 0 ? handled : undefined);
      // after a heal: pass on what a sync brought that gossip would have (heal.ts)
      if (source0 === 'sync' && started && regossipAfterSync(f, joinedAt)) void gossipOut(recordTopics(f.kind, f.rec), f.rec.bytes).catch(() => undefined);
    }
  };

  // Gossip validation: the pipeline's verdict becomes the gossipsub verdict.
  // A PeerId's string form is base58 work; gossipsub hands the same object for a peer's messages, so keep it.
  const peerStrings = new WeakMap<object, string>();
  for (const kind of TOPIC_KINDS) for (const topic of topicsFor(kind, overlay)) {
    // gossipsub validates what a peer pushes on any topic, joined or not (an honest one sends a peer only the topics it
    // subscribed to): a topic this node did not join (another market, a kind it does not take or only publishes) is
    // ignored, not taken, kept, served, delivered nor passed on. Ignored, not rejected: the record may be valid, and
    // gossipsub itself drops messages of topics it is not allowed without a penalty.
    if (!taken.has(topic)) {
      pubsub.topicValidators.set(topic, () => {
        metrics.records.inc({ source: 'gossip', kind, verdict: 'ignore', reason: 'TOPIC_NOT_JOINED' });
        return TopicValidatorResult.Ignore;
      });
      continue;
    }
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
        // wrong shard hide the right one) but not passed on there. The message is ignored, not rejected: its id is
        // the record's content address, the same as the right copy's, and gossipsub scores every later copy of a
        // rejected id as an invalid message, so the honest relays of the right copy would pay for the sender's, and
        // their copy, a duplicate, would go no further from here. The node sends the record on its own markets'
        // topics itself (to their subscribers, as for a record of several markets), and the sender is blamed for it
        // (its abuse score: gossipsub's P5).
        if (shard !== undefined && out.primary) {
          // the same array the record cache kept when accept() added it (computed once per record)
          const all = heldShards(kind, out.primary.record);
          // a selection or an acceptance does not name its market: where it arrives cannot be checked
          if (placementCheckable(kind) && !all.includes(shard)) {
            metrics.records.inc({ source: 'gossip', kind, verdict: 'ignore', reason: 'TOPIC_WRONG_SHARD' });
            pipeline.guard.blame(from);
            const right = all.map((s) => topicFor(kind, overlay, s)).filter((t) => taken.has(t));
            if (right.length) sendOnOtherTopics(gsi, msg.data, topic, right, from, { firstForwarded: false });
            return TopicValidatorResult.Ignore;
          }
          // a record of several markets: its other markets' peers that are not on this topic get it on theirs (shard-copies.ts)
          if (all.length > 1) sendOnOtherTopics(gsi, msg.data, topic, all.filter((s) => s !== shard).map((s) => topicFor(kind, overlay, s)), from);
        }
        return TopicValidatorResult.Accept;
      }
      return out.verdict === 'reject' ? TopicValidatorResult.Reject : TopicValidatorResult.Ignore;
    });
  }

  // records/1: served, fetched, synced (records-sync.ts); sync on join: once from each newly identified peer that speaks it.
  const connected = (peer: string): boolean => libp2p.getConnections(peerIdFromString(peer)).some((c) => c.status === 'open');
  const records = new RecordsSync({ direct, pipeline, metrics, log, joined: joined.filter((k) => !publishOnly.includes(k)), shards, syncKinds, syncLimit, accept, source, clock, connected, ...(opts.catchUp ? { catchUp: opts.catchUp } : {}) });
  const onIdentify = (evt: CustomEvent<IdentifyResult>): void => {
    const { peerId, protocols } = evt.detail;
    const peer = peerId.toString();
    // The address this node dialled it on goes first (a peer that dialled in came from a port it does not listen on).
    const conn = evt.detail.connection;
    const listen = [...new Set(evt.detail.listenAddrs.map((a) => bareAddr(a.toString())))];
    // a one-shot node (`c0mpute run` without a daemon) listens on a new port each run and is gone when its command
    // ends: it is not remembered, so it is not redialled after it left, across restarts too (QA qaUp F8)
    const oneShot = isOneShot(evt.detail.agentVersion);
    if (conn.status === 'open') {
      const run = runOf(evt.detail.agentVersion);
      const seen = conns.identified({ id: conn.id, peer, remote: conn.remoteAddr.toString(), outbound: conn.direction === 'outbound', listen, protocols: new Set(protocols), ...(run === undefined ? {} : { run }), ...(oneShot ? { oneShot: true as const } : {}) }, clock());
      if (seen?.fresh) onDuplicate(seen.duplicate);
    }
    // the addresses of every process of the key connected now (one only, but for a duplicated key), one-shot ones left out
    if (protocols.includes(PROTOCOLS.records) && !oneShot) connectivity.noteUseful(peer, [...new Set([...listen, ...conns.of(peer).filter((c) => !c.oneShot).flatMap((c) => c.listen)])], conn.direction === 'outbound' ? conn.remoteAddr.toString() : undefined);
    // the peer store took another process's newer signed record (stored seq ≥ this one's), or holds one process's only
    const signed = evt.detail.signedPeerRecord?.addresses.map((a) => bareAddr(a.toString()));
    if (conns.wasDuplicated(peer) || (signed !== undefined && listen.length > 0 && (signed.length !== listen.length || signed.some((a) => !listen.includes(a))))) refreshPeerStore(peer);
    records.onIdentify(peerId, protocols);
  };
  const onDisconnect = (evt: CustomEvent<PeerId>): void => {
    records.onDisconnect(evt.detail.toString());
    connectivity.wake();
  };

  /** The local checks before a record leaves (a peer would reject it with the same code), and the message bytes. */
  const prepare = (kind: TopicKind, envelope: Uint8Array, attachments: Uint8Array[], check?: (rec: Opened) => void): { rec: Opened; data: Uint8Array } => {
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
    // the caller's last check (publish: a topic to go on) before the record is this node's own and in its cache
    check?.(rec);
    const fresh = pipeline.markOwn(kind, rec, hashHex(data));
    source.add?.(kind, rec);
    // handed to the subscribers of its kind that take this node's own records (subscribe's `own`), once: gossip never
    // brings a node its own messages back (emitSelf off), and a peer's copy is a duplicate of one it holds
    if (fresh && dispatcher.takesOwn(kind)) dispatcher.push(rec, { kind, from: libp2p.peerId.toString(), source: 'own', attachments: [] });
    return { rec, data };
  };

  /**
   * Publish on a record's topics: on the first as gossipsub publishes, on the others to the peers not on the first
   * (the same bytes are one message id, which gossipsub would publish once: shard-copies.ts). Returns the recipients.
   */
  const gossipOut = async (topics: readonly string[], data: Uint8Array): Promise<number> => {
    const [first, ...others] = topics;
    if (first === undefined) return 0;
    published.add(data);
    const { recipients } = await pubsub.publish(first, data);
    return recipients.length + sendOnOtherTopics(gsi, data, first, others).length;
  };

  // offer/1 and outcome/1 sends: at most SEND_CONCURRENCY exchanges at a time, all of this node's sends together
  const sendDeps: OfferSendDeps = { call: (p, proto, frames, o) => direct.call(p, proto, frames, o), registry: metrics.registry, slots: new Slots(SEND_CONCURRENCY) };
  let started = false;
  let joinedAt = Infinity;
  // the peer store forgets a departed peer only when the walk meets it (libp2p-patches.ts sweepPeerStore)
  let sweep: ReturnType<typeof setInterval> | undefined;
  /** records.tick() every ALIVE_TICK_MS: when the node last ran, where an outcome gap opened on losing every peer begins. */
  let alive: ReturnType<typeof setInterval> | undefined;
  /**
   * Since when (monotonic ms) this node has had peers but none subscribed to a topic it joined (gossip reaches no one,
   * and no one's reaches it); undefined while one is, or while it has no peer. Sampled every ALIVE_TICK_MS and when
   * asked (`gossipQuietMs`): a look at the router's topic sets, no more (docs/network.md §11 "Saying it plainly").
   */
  let quietSince: number | undefined;
  const sampleGossip = (): void => {
    if (!taken.size || !libp2p.getPeers().length) {
      quietSince = undefined;
      return;
    }
    const heard = (t: string): boolean => (gsi.topics instanceof Map ? (gsi.topics.get(t)?.size ?? 0) > 0 : pubsub.getSubscribers(t).length > 0);
    for (const t of taken.keys()) {
      if (heard(t)) {
        quietSince = undefined;
        return;
      }
    }
    quietSince ??= mono();
  };
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
      await records.serve(source, clock, opts.recordsServe, mono);
      const directDeps = {
        // a receipt comes directly only to its buyer (outcome/1); a network that has not even the receipt topics (a tool's, a trainer's) takes none
        validate: async (kind: TopicKind, data: Uint8Array, from: string): Promise<ValidationOutcome> => {
          if (kind === 'receipt' && !joined.includes(kind)) return { verdict: 'ignore', reason: 'NET_TOPIC_NOT_JOINED', fresh: [] };
          // (an offer its own signer sent, dropped for its dates, is noted by the pipeline's onDateDropped)
          return pipeline.validate(kind, data, from, 'direct');
        },
        // resolves once the subscribers handled the record (the route answers only then); one not kept is forgotten as
        // seen, so a copy sent again is taken (the sender's *_NOT_KEPT: try later), not ignored as a duplicate
        accept: (out: ValidationOutcome, from: string, data: Uint8Array) =>
          new Promise<boolean>((resolve) => {
            if (!out.fresh.length) return resolve(true);
            accept(out.fresh, from, 'direct', out.attachments ?? [], (kept) => {
              if (!kept) pipeline.forget(data, out.fresh[0]!.rec.address);
              resolve(kept);
            });
          }),
        // what a peer sends directly feeds its abuse score as gossip does (docs/network.md §10 "Direct records feed the same score")
        strike: (from: string) => pipeline.guard.strike(from),
        admit: (kind: TopicKind, from: string) => pipeline.guard.admitPeer(kind, from),
      };
      await direct.serve(OFFER_ROUTE.protocol, directHandler(OFFER_ROUTE, directDeps), OFFER_ROUTE.limits);
      await direct.serve(OUTCOME_ROUTE.protocol, directHandler(OUTCOME_ROUTE, directDeps), OUTCOME_ROUTE.limits);
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
        // a stage or a training member is no overlay's: it names itself and its flag (QA qaTrn F9: 'overlay public … each overlay needs its own')
        const as = opts.listenAs ?? { who: `overlay ${overlay}`, fix: 'each overlay needs its own' };
        throw new C0Error('NET_LISTEN_FAILED', `${as.who}: cannot listen on ${which || (opts.listen ?? []).join(', ')} (is another process using the port? ${as.fix})`, { field: 'listen', detail: { name } });
      }
      for (const t of taken.keys()) pubsub.subscribe(t);
      connectivity.start();
      health.start();
      sweep = setInterval(() => {
        sweepPeerStore(libp2p.peerStore).catch((e: Error) => log.debug({ err: e.message }, 'peer store sweep failed'));
      }, PEER_STORE_SWEEP_MS);
      sweep.unref();
      records.tick();
      alive = setInterval(() => {
        records.tick();
        sampleGossip();
      }, ALIVE_TICK_MS);
      alive.unref();
      log.info({ peerId: libp2p.peerId.toString(), did, overlay, addrs: net.addrs() }, 'network started');
    },

    async stop() {
      if (!started) return;
      started = false;
      connectivity.stop();
      health.stop();
      clearInterval(sweep);
      clearInterval(alive);
      libp2p.removeEventListener('peer:identify', onIdentify);
      libp2p.removeEventListener('peer:disconnect', onDisconnect);
      libp2p.removeEventListener('connection:open', onConnOpen);
      libp2p.removeEventListener('connection:close', onConnClose);
      duplicateLog.stop();
      await libp2p.stop();
      cancelAddressUpdate(libp2p);
      await sigPool?.close();
      await dispatcher.drained();
      dispatcher.stopLog(); // the last window's summaries (drops, store failures)
      pipeline.stopLog(); // and the rate limits' (adverts turned away)
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
        const conns = libp2p.getConnections(p);
        // the addresses this node dialled first: an inbound connection's remote address is the port the peer dialled
        // out from, which it does not listen on (with one of each, the ephemeral port was listed first: QA qaOps F12)
        const ordered = [...conns.filter((c) => c.direction !== 'inbound'), ...conns.filter((c) => c.direction === 'inbound')];
        return { peerId: p.toString(), did: d, addrs: ordered.map((c) => c.remoteAddr.toString()), inbound: conns.length > 0 && conns.every((c) => c.direction === 'inbound') };
      });
    },

    async listenAddrsOf(peerId) {
      // where its processes connected now said they listen (the peer store holds the last identify's, or another
      // process's: peer-conns.ts), else the peer store's
      const open = conns.listenOf(peerId);
      if (open.length) return open.map((a) => `${a}/p2p/${peerId}`);
      try {
        const id = peerIdFromString(peerId);
        const p = await libp2p.peerStore.get(id);
        return p.addresses.map((a) => {
          const s = a.multiaddr.toString();
          return s.includes('/p2p/') ? s : `${s}/p2p/${peerId}`;
        });
      } catch {
        return []; // not in the peer store (never identified)
      }
    },

    async publish(kind, envelope, attachments = [], o = {}) {
      let out: string[] = [];
      const { rec, data } = prepare(kind, envelope, attachments, (r) => {
        out = recordTopics(kind, r);
        // a selection or an acceptance does not name its market: its publisher does (the job's workload)
        if (!out.length && isSharded(kind) && !placementCheckable(kind) && o.workload !== undefined) out = [topicFor(kind, overlay, shardOf(o.workload))];
        if (!out.length) throw new C0Error('NET_NO_SHARD', `this ${kind} names no workload${placementCheckable(kind) ? '' : ' and none was given'}: no market topic to publish it on`, { field: 'workloads' });
      });
      const recipients = await gossipOut(out, data);
      metrics.published.inc({ kind });
      return { recipients, address: rec.address };
    },

    async sendOffer(to, envelope, attachments = []) {
      const { rec, data } = prepare('offer', envelope, attachments);
      const codes: Record<string, string> = {};
      const outcomes = await sendOffer(sendDeps, to, data, codes);
      metrics.published.inc({ kind: 'offer' });
      return { outcomes, address: rec.address, codes };
    },

    async sendOutcome(kind, to, envelope) {
      if (!OUTCOME_DIRECT_KINDS.includes(kind)) throw new C0Error(OUTCOME_ROUTE.err.WRONG_KIND!, `${OUTCOME_ROUTE.protocol} carries ${OUTCOME_DIRECT_KINDS.join(' and ')} records, not ${kind}`, { field: 'kind' });
      const { rec, data } = prepare(kind, envelope, []);
      const codes: Record<string, string> = {};
      const outcomes = await sendDirect(sendDeps, OUTCOME_ROUTE, kind, to.filter((d) => d !== did), data, codes);
      metrics.published.inc({ kind });
      return { outcomes, address: rec.address, codes };
    },

    subscribe(kind, handler, o) {
      // offers, selections, acceptances and receipts also arrive directly (offer/1, outcome/1), whether or not the node joins their topic
      if (!joined.includes(kind) && kind !== 'offer' && !OUTCOME_DIRECT_KINDS.includes(kind)) throw new C0Error('NET_TOPIC_NOT_JOINED', `kind ${kind} is not among the joined topics`, { field: 'topics' });
      return dispatcher.subscribe(kind, handler, o);
    },

    clockDropped(job: string) {
      return clockDrops.of(job);
    },
    expectOffers(job: string) {
      clockDrops.expect(job);
    },
    advertsAhead() {
      return advertsAhead.recent(clock());
    },
    advertsTurnedAway() {
      return pipeline.guard.advertsTurnedAway;
    },

    setHook(kind, hook) {
      pipeline.setHook(kind, hook);
    },

    async handle(protocol, handler, limits, opts) {
      await direct.serve(protocol, handler, limits, opts);
    },

    async unhandle(protocol) {
      await direct.unserve(protocol);
    },

    async request(peer, protocol, frames, callOpts) {
      return direct.call(toPeerId(peer), protocol, frames, callOpts);
    },

    async handleStream(protocol, handler, limits, opts) {
      await direct.serveStream(protocol, handler, limits, opts);
    },

    async openStream(peer, protocol, callOpts) {
      return direct.open(toPeerId(peer), protocol, callOpts);
    },

    async fetchRecords(peer, addresses, type) {
      return records.fetch(toPeerId(peer), addresses, type);
    },

    async syncFrom(peer, kinds = syncKinds) {
      return records.sync(toPeerId(peer), kinds);
    },

    async syncJobs(peer, kinds, jobs) {
      return records.syncJobs(toPeerId(peer), kinds, jobs);
    },

    notKept(rec) {
      pipeline.forget(rec.bytes, rec.address);
      source.remove?.(rec.address);
    },

    catchUpFrom(from) {
      records.openGap(from);
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

    gossip() {
      // the router's own mesh (a method of the class, not of the GossipSub interface @libp2p/gossipsub exports)
      const router = pubsub as unknown as { getMeshPeers(topic: string): string[] };
      const kinds: GossipView['kinds'] = {};
      const peerKinds = new Map<string, TopicKind[]>();
      const peerMesh = new Map<string, TopicKind[]>();
      const add = (m: Map<string, TopicKind[]>, p: string, kind: TopicKind) => {
        const ks = m.get(p);
        if (ks) ks.push(kind);
        else m.set(p, [kind]);
      };
      for (const kind of joined) {
        const peers = new Set<string>();
        const mesh = new Set<string>();
        for (const t of topicsFor(kind, overlay, shards)) {
          for (const p of pubsub.getSubscribers(t)) peers.add(p.toString());
          for (const p of router.getMeshPeers(t)) mesh.add(p);
        }
        kinds[kind] = { peers: peers.size, mesh: mesh.size };
        for (const p of peers) add(peerKinds, p, kind);
        for (const p of mesh) add(peerMesh, p, kind);
      }
      return { kinds, peerKinds, peerMesh, peerLink: gossipLinks(pubsub, joined.flatMap((k) => topicsFor(k, overlay, shards))) };
    },

    drained() {
      return dispatcher.drained();
    },

    connectivity() {
      return connectivity.status();
    },

    duplicates() {
      return conns.duplicates(clock());
    },

    inboundRefusals() {
      return pending.recent();
    },

    gossipQuietMs() {
      if (!started) return undefined;
      sampleGossip();
      return quietSince === undefined ? undefined : mono() - quietSince;
    },
  };
  return net;
}
