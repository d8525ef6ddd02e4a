/**
 * The libp2p node under the network facade (docs/network.md §1 stack, §11
 * "Pings under load"): TCP, noise, yamux, identify, ping (LIVENESS), gossipsub
 * with c0mpute's settings and scoring (GOSSIP_BASE, topicScoreParams, the
 * abuse score as P5), kad-dht for peer routing (DHT_PROTOCOL), optional private
 * network (pnet) and the connection gater (DID allowlist, abuse bans, injected
 * partitions). Built stopped; `createNetwork` (node.ts) starts it.
 */
import { createHash } from 'node:crypto';
import { createLibp2p, type Libp2p } from 'libp2p';
import { userAgent } from 'libp2p/user-agent';
import { tcp } from '@libp2p/tcp';
import { noise } from '@libp2p/noise';
import { yamux } from '@libp2p/yamux';
import { identify } from '@libp2p/identify';
import { ping } from '@libp2p/ping';
import { bootstrap } from '@libp2p/bootstrap';
import { preSharedKey, generateKey } from '@libp2p/pnet';
import { gossipsub, StrictNoSign, type GossipSub } from '@libp2p/gossipsub';
import { createPeerScoreParams, createTopicScoreParams, type TopicScoreParams } from '@libp2p/gossipsub/score';
import type { KadDHT } from '@libp2p/kad-dht';
import { DHT_PROTOCOL, dhtClientMode, dhtService } from './dht-options.js';
import type { PeerId } from '@libp2p/interface';
import { sha256 } from '../records/address.js';
import { didFromPeerId, libp2pKey } from '../node/peer-id.js';
import type { AbusePolicy } from './peer-abuse.js';
import { NETWORK_DEFAULTS, type NetworkOptions } from './network-api.js';
import { CONNECTIVITY_DEFAULTS } from './connectivity.js';
import { overlayGater, type RefusalLog } from './refusals.js';
import { expectedType, parseTopic, topicsFor, TOPIC_KINDS } from './topics.js';
import { peekType } from '../records/envelope.js';
import { decodeMessage } from './framing.js';
import { patchLengthPrefixedDecoder, patchYamuxWindowUpdate, patchMuxerCloseListeners, patchGossipsubStop, patchGossipsubScoreCache } from './libp2p-patches.js';
import { noiseCrypto } from './noise-crypto.js';
import { newRunTag, ONE_SHOT_TAG } from './peer-conns.js';
import { guardInbound, MAX_PENDING_INBOUND, INBOUND_PER_SECOND, type PendingInbound } from './inbound-guard.js';

export { DHT_PROTOCOL };

/** The content type of a message's primary record, read from its header alone; undefined when it cannot be read. */
export function messageType(data: Uint8Array): string | undefined {
  try {
    return peekType(data[0] === 0xd2 ? data : decodeMessage(data).primary).type;
  } catch {
    return undefined;
  }
}

const TOPIC_BOUND_TAG = 'c0mpute/1/message-id/topic-bound\n';

/** Each topic's mask: SHA-256 of a tag and the topic (a node sees a few hundred topics at most; bounded anyway). */
const topicMasks = new Map<string, Uint8Array>();
function topicMask(topic: string): Uint8Array {
  let m = topicMasks.get(topic);
  if (m === undefined) {
    if (topicMasks.size >= 4096) topicMasks.clear();
    m = new Uint8Array(createHash('sha256').update(TOPIC_BOUND_TAG, 'utf8').update(topic, 'utf8').digest());
    topicMasks.set(topic, m);
  }
  return m;
}

/**
 * A message id bound to the topic the message came on: the SHA-256 of the bytes XORed with the topic's mask (a hash
 * of a tag and the topic). Never equal to the bytes' content address (the mask is not zero), and different for the
 * same bytes on another topic; one hash of the message, as a content address costs (the raw baseline of bench net (1)
 * pays no more than before for messages on topics that are not ours).
 */
export function topicBoundId(topic: string, data: Uint8Array): Uint8Array {
  const id = sha256(data);
  const m = topicMask(topic);
  for (let i = 0; i < id.length; i++) id[i]! ^= m[i]!;
  return id;
}

/**
 * gossipsub's message id for a message on a topic (docs/network.md §2): its content address (SHA-256 of the bytes; for
 * one envelope, the record's address) when its record is of the topic's kind, so a record of several markets is one
 * message on all of them; else an id bound to the topic. A node remembers an id as seen the moment a message arrives,
 * before validating it, and scores later copies by the first one's verdict: the same bytes sent first on another
 * kind's topic, refused there, must not make the copy on the right topic a duplicate (dropped unvalidated, its relays
 * scored as senders of an invalid message). A node also binds to their topic the ids of the messages it takes on no
 * topic it joined (node.ts).
 */
export function messageId(topic: string, data: Uint8Array): Uint8Array {
  const t = parseTopic(topic);
  return t !== undefined && messageType(data) === expectedType(t.kind) ? sha256(data) : topicBoundId(topic, data);
}

/**
 * The gossipsub settings every c0mpute node runs with (unsigned messages, the
 * message id is the content address of a record on its kind's topic:
 * `messageId`, validation before forwarding); the idle bench's bare-libp2p
 * baseline uses the same.
 */
export const GOSSIP_BASE = {
  globalSignaturePolicy: StrictNoSign,
  msgIdFn: (msg: { topic: string; data: Uint8Array }) => messageId(msg.topic, msg.data),
  // the id's string form is the router's own key (seen cache, message cache, IDONTWANT), never on the wire: Node's
  // native base64 instead of gossipsub's default (multiformats' JS base64: about 1.2 KB of garbage and a few µs a message)
  msgIdToStrFn: (id: Uint8Array) => Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString('base64'),
  emitSelf: false,
  allowPublishToZeroTopicPeers: true,
  ignoreDuplicatePublishError: true,
  asyncValidation: false,
  // What gossipsub may buffer for one peer's outbound stream before it gives that stream up (it is opened again): a
  // mesh peer that reads slowly (or not at all) held every record forwarded to it in memory, without bound (review
  // s42 R3 F1: 458 MB of a 1.2 GiB peak in yamux write buffers while 6,000 38-KB non-deliveries went through). 16 MiB:
  // 4 MiB dropped an honest burst (the ingest bench's 20,000 records, ~12 MB, published at once: 1,500 arrived, the
  // stream given up with the rest), 16 MiB holds it; 256 of the largest records, ~7 min of a 40 KiB/s link.
  maxOutboundBufferSize: 16 * 1024 * 1024,
} as const;

/**
 * gossipsub's mesh degrees for a target degree D (docs/scale.md §3 "Sixth round"), kept in gossipsub's own
 * proportions at its default D = 6 (Dlo 4, Dhi 12, Dscore 4, Dout 2): Dlo = ⌈2D/3⌉, Dhi = 2D, Dscore = Dlo,
 * Dout = min(2, Dlo − 1, ⌊D/2⌋) (gossipsub requires Dout < Dlo and Dout ≤ D/2). Each message reaches a node about
 * once from each mesh peer, so D sets the copies a node takes and sends per record.
 */
export function meshDegrees(D: number): { D: number; Dlo: number; Dhi: number; Dscore: number; Dout: number } {
  if (!Number.isInteger(D) || D < 3 || D > 12) throw new RangeError(`mesh degree ${D}: a whole number from 3 to 12`);
  const Dlo = Math.ceil((2 * D) / 3);
  return { D, Dlo, Dhi: 2 * D, Dscore: Dlo, Dout: Math.min(2, Dlo - 1, Math.floor(D / 2)) };
}

/**
 * libp2p's deadline for one address of a dial, ms (its default 6 s; docs/network.md "Reconnection and liveness"). libp2p
 * tries a peer's addresses one after another; an address that accepts TCP and never answers (a firewalled public
 * address, a VPN or docker bridge address) holds the dial this long before the next is tried. Below a 10 s dial
 * (NETWORK_DEFAULTS.dialTimeoutMs) two addresses fit; the same as the reconnection's per-address deadline, which honest
 * dials already met (a handshake takes milliseconds on a LAN, a few round trips on a slow link).
 */
export const ADDRESS_DIAL_TIMEOUT_MS = CONNECTIVITY_DEFAULTS.dialTimeoutMs;

/**
 * Liveness pings (docs/network.md §11 "Pings under load"): libp2p's connection monitor pings every connection every
 * 10 s and aborts it on one failed ping, and a ping that overlaps the previous one fails at once (one outbound ping
 * stream per connection). Under a few seconds of event-loop lag that dropped healthy connections, and the reconnects
 * (handshake, identify, sync) deepened the lag. Pings may overlap, and time out no sooner than 30 s (15 s until a
 * ping queued behind a slow link's transfer ran out: STREAM_WINDOW_MAX). And every 30 s, not 10: a ping is a new stream each way (multistream-select, a peer-store merge, a dozen encrypted frames),
 * a third of an idle node's CPU at 5 peers (docs/scale.md "Where the hundred-node run's CPU went").
 */
export const LIVENESS = { pingIntervalMs: 30_000, pingStreams: 4, pingMinTimeoutMs: 30_000 } as const;

/**
 * The most a yamux stream lets its peer send ahead of what it read (the receive window; yamux's default grows it to
 * 16 MiB): docs/network.md §11 "Pings under load". Everything on a connection leaves through one queue, so whatever
 * a bulk stream has been let send goes out before the next ping or gossip frame. With 16 MiB, an exec input or output
 * on a slow link (a 16 MiB input at 256 KiB/s; 4 MiB of output at 64 KiB/s) put over a megabyte ahead of each ping,
 * the ping's answer took more than its 15 s, and the connection monitor aborted the connection at 35–40 s: the job
 * failed and the honest provider got an `unreachable` non-delivery (second-round review, real daemons through a
 * shaping proxy). At 512 KiB a ping waits for at most that much of the stream's data plus the sockets' and the
 * link's buffers (about 1.1 MB through the review's proxy), which a ping's 30 s (LIVENESS) covers down to about
 * 40 KiB/s; one stream's throughput is then at most 512 KiB per round trip (5 MiB/s at 100 ms, 2 MiB/s at 250 ms).
 */
export const STREAM_WINDOW_MAX = 512 * 1024;

/**
 * Streams a connection's listener keeps before its connection is set up (docs/network.md "Streams on a connection just
 * dialled"). The dialler's side of a connection is ready one flight before the listener's: with noise XX the dialler is
 * done once it sends the handshake's last message, and the muxer is agreed inside the handshake, so `dial` returns and
 * the caller opens streams while the listener is still reading that message and checking the peer. Their yamux frames
 * wait in the listener's buffer; when its muxer is created they all arrive at once, before libp2p's Connection (made
 * after the gater's last check) listens for streams, and @libp2p/utils' AbstractStreamMuxer keeps them as "early
 * streams" until it does. Past `maxEarlyStreams` (default 10) it aborts the whole muxer: every stream is reset, the
 * dialler reads "Unexpected EOF" or "The stream has been reset", and the connection is gone. Eleven is an ordinary
 * burst (identify plus ten requests). 256 covers an honest node's bursts (libp2p lets a caller open 64 streams of each
 * protocol); once the connection takes them, the per-protocol bounds (maxInboundStreams) and yamux's 1,000 inbound
 * streams apply as to any stream, and a peer that opens more before the listener is ready still loses the connection.
 */
export const MAX_EARLY_STREAMS = 256;

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

/** What the libp2p node needs from the rest of the network: the abuse policy (P5 and bans) and the refusal log (gater). */
export interface HostDeps {
  overlay: string;
  loopback: boolean;
  abuse: AbusePolicy;
  refusals: RefusalLog;
  /** Inbound connections still handshaking, per address, and the refusals lately (inbound-guard.ts). */
  pending: PendingInbound;
  /** gossipsub's message id (default GOSSIP_BASE's: `messageId`); the network's binds the messages of topics it did not join to their topic. */
  msgIdFn?: (msg: { topic: string; data: Uint8Array }) => Uint8Array;
}

/** The libp2p node for `createNetwork`'s options, not started. */
export async function createHost(opts: NetworkOptions, { overlay, loopback, abuse, refusals, msgIdFn, pending }: HostDeps): Promise<Libp2p<{ pubsub: GossipSub; dht: KadDHT }>> {
  const allow = opts.allowlist ? new Set(opts.allowlist) : undefined;
  const allowed = (peer: PeerId): boolean => {
    if (!allow) return true;
    try {
      return allow.has(didFromPeerId(peer));
    } catch {
      return false;
    }
  };

  const topics: Record<string, TopicScoreParams> = {};
  for (const k of TOPIC_KINDS) for (const t of topicsFor(k, overlay)) topics[t] = topicScoreParams();

  // a keyed overlay's DHT is its members' alone: every member serves it and its answers keep private addresses (dht-options.ts)
  const privateNetwork = !!opts.swarmKey;
  const clientMode = dhtClientMode({ dhtClientMode: opts.dhtClientMode, loopback, privateNetwork });
  const maxConnections = opts.maxConnections ?? NETWORK_DEFAULTS.maxConnections;
  patchLengthPrefixedDecoder();
  patchYamuxWindowUpdate();
  patchMuxerCloseListeners();
  const host = await createLibp2p({
    start: false,
    privateKey: await libp2pKey(opts.signer),
    // libp2p's user agent and this node's run tag: two processes holding one key are told apart (peer-conns.ts); a
    // one-shot node says so, and its peers do not remember its throwaway port
    nodeInfo: { userAgent: `${userAgent()} ${newRunTag()}${opts.oneShot ? ` ${ONE_SHOT_TAG}` : ''}` },
    addresses: { listen: opts.listen ?? [...NETWORK_DEFAULTS.listen], ...(opts.announce ? { announce: opts.announce } : {}) },
    transports: [tcp()],
    connectionEncrypters: [noise({ crypto: noiseCrypto })],
    streamMuxers: [yamux({ maxEarlyStreams: MAX_EARLY_STREAMS, streamOptions: { maxStreamWindowSize: STREAM_WINDOW_MAX } })],
    ...(opts.swarmKey ? { connectionProtector: preSharedKey({ psk: opts.swarmKey }) } : {}),
    connectionGater: overlayGater({ ...(allow ? { allowed } : {}), banned: (p) => abuse.denied(p.toString()) || (opts.unreachable?.(p.toString()) ?? false), refusals, watchHandshakes: !!opts.swarmKey }),
    // inbound connections still handshaking: 64 node-wide (libp2p's default of 10 let ten silent TCP connections keep
    // every new peer out), at most 8 per address (inbound-guard.ts)
    connectionManager: { maxConnections, addressDialTimeout: ADDRESS_DIAL_TIMEOUT_MS, maxIncomingPendingConnections: MAX_PENDING_INBOUND, inboundConnectionThreshold: INBOUND_PER_SECOND },
    connectionMonitor: { pingInterval: LIVENESS.pingIntervalMs, pingTimeout: { minTimeout: LIVENESS.pingMinTimeoutMs } },
    peerDiscovery: opts.bootstrap?.length ? [bootstrap({ list: opts.bootstrap })] : [],
    services: {
      identify: identify(),
      ping: ping({ maxInboundStreams: LIVENESS.pingStreams, maxOutboundStreams: LIVENESS.pingStreams }),
      pubsub: gossipsub({
        ...GOSSIP_BASE,
        ...(msgIdFn ? { msgIdFn } : {}),
        scoreParams: createPeerScoreParams({ topics, appSpecificScore: abuse.appSpecificScore, appSpecificWeight: abuse.opts.appSpecificWeight, ...(loopback ? { IPColocationFactorWeight: 0 } : {}) }),
        ...opts.gossip,
      }),
      dht: dhtService({ loopback, privateNetwork, clientMode }),
    },
  });
  guardInbound(host, { refusals, pending, maxConnections });
  patchGossipsubStop(host.services.pubsub);
  patchGossipsubScoreCache(host.services.pubsub);
  return host;
}
