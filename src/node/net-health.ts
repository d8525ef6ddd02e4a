/**
 * The node's view of its own network, said plainly (docs/network.md
 * "Reconnection and liveness"): for `run` (a narration line before the job is
 * published and the reason beside "no offers") and for `status`. Also turns
 * the `network.reconnect` config section into the network module's options.
 *
 *   NET_NO_PEERS   no connection at all (with each bootstrap peer's last error)
 *   NET_NO_GOSSIP  connected, but no peer subscribed to any topic this node joined for NO_GOSSIP_GRACE_MS: it can
 *                  neither publish nor hear records by gossip (QA qaNet F4: "ok" beside 0 gossip peers on every topic)
 *   NET_NO_MARKET  connected, but no live advert heard, on a node that buys or provides (a witness-only or
 *                  steward-only node needs no provider's advert: no alarm for it)
 *
 * Beside the state, `warnings`: what is wrong while the node works, one line each (`status` prints them under the
 * network line):
 *
 *   NET_DUPLICATE_IDENTITY  a peer's key is held by two processes at once, now or within the hour (net/peer-conns.ts)
 *   NET_ADVERTS_FROM_FUTURE a connected provider's adverts came dated ahead of this node's clock, past the clock-skew
 *                           window, and were dropped (RECORD_FROM_FUTURE), within ADVERT_AHEAD_SAID_MS: a clock is
 *                           wrong, its or this node's. It also goes in NET_NO_MARKET's reason (net/clock-drops.ts)
 *   NET_INBOUND_PENDING_PER_IP, NET_INBOUND_PENDING_LIMIT, NET_MAX_CONNECTIONS
 *                           inbound connections refused before their handshake in the last 10 minutes: new peers may
 *                           not get in (net/inbound-guard.ts; QA ffNetDay2 F1; NET_INBOUND_RATE_LIMIT is logged only)
 *   (a dial's code)         a bootstrap entry not connected, its last dial failed (NET_PEER_ID_MISMATCH, …), when the
 *                           state is ok: the other states' messages name them already (QA qaNet F5: a typo in a
 *                           bootstrap PeerId was hidden behind "ok" while remembered peers kept the node connected)
 */
import type { ConnectivityOptions, ConnectivityStatus } from '../net/connectivity.js';
import { CONNECTIVITY_DEFAULTS, fileRememberStore } from '../net/connectivity.js';
import type { NetworkOptions } from '../net/node.js';
import type { DuplicateIdentity } from '../net/peer-conns.js';
import type { AdvertAhead } from '../net/clock-drops.js';
import { INBOUND_REFUSALS, RECENT_MS, type InboundRefusal } from '../net/inbound-guard.js';
import { shortDid } from '../util/did-text.js';
import { PROTOCOLS } from '../net/protocols.js';
import { agoText } from '../util/ago-text.js';
import { DEFAULT_SKEW_MS } from '../records/freshness.js';
import type { NetworkConfig } from './config.js';
import { didFromPeerId } from './peer-id.js';

export interface NetworkAssessment {
  state: 'ok' | 'no-peers' | 'no-gossip' | 'no-market';
  /** Stable code: NET_NO_PEERS, NET_NO_GOSSIP or NET_NO_MARKET (absent when ok). */
  code?: 'NET_NO_PEERS' | 'NET_NO_GOSSIP' | 'NET_NO_MARKET';
  message: string;
  peers: number;
  liveAdverts: number;
  /** Bootstrap peers that are not connected, with their last dial error. */
  bootstrap: Array<{ addr: string; failures: number; code?: string; error?: string }>;
  /** What is wrong beside the state, each with a stable code (absent when nothing is). */
  warnings?: NetworkWarning[];
}

export interface NetworkWarning {
  /** NET_DUPLICATE_IDENTITY, or a failing bootstrap entry's last dial error (connectivity.ts classifyDialError). */
  code: string;
  message: string;
}

/** One duplicated key, said plainly: whose, each process by where it listens, and since or until when. */
export function duplicateWarning(d: DuplicateIdentity, now: number): NetworkWarning {
  let who = d.peer;
  try {
    who = didFromPeerId(d.peer);
  } catch {
    /* not an Ed25519 PeerId: named by itself */
  }
  const each = d.processes.map((p) => `one listening at ${p.listen.length ? p.listen.join(' ') : `(none said; connected from ${p.remote})`}${p.protocols.includes(PROTOCOLS.exec) ? ' (serves exec/1: a provider)' : ''}`);
  const when = d.current ? `now (first seen ${agoText(now - d.firstSeenAt).slice(1, -1)})` : `last seen ${agoText(now - d.lastSeenAt).slice(1, -1)}`;
  return {
    code: 'NET_DUPLICATE_IDENTITY',
    message: `${who} ${d.current ? 'is' : 'was'} connected from ${d.processes.length} processes holding its one key (a copied identity.key or data directory?), ${when}: ${each.join('; ')}`,
  };
}

/**
 * How long a node may have peers and no gossip peer before NET_NO_GOSSIP, ms: past a start (subscriptions are sent
 * as a connection is identified, within a second) and past the gossip self-check's own repairs of a detached peer
 * (a reopen at 10 s, a reconnect at 20 s: gossip-health.ts), so what they mend is never flagged.
 */
export const NO_GOSSIP_GRACE_MS = 30_000;

export interface AssessOptions {
  /** Whether this node takes part in the market (a buyer or a provider, default true); only then is hearing no live advert worth NET_NO_MARKET. */
  market?: boolean;
  /** Network.duplicates(): each a NET_DUPLICATE_IDENTITY warning. */
  duplicates?: DuplicateIdentity[];
  /** Network.gossipQuietMs(): at NO_GOSSIP_GRACE_MS or more, NET_NO_GOSSIP. */
  gossipQuietMs?: number;
  /** Wall clock, ms (the duplicates' times). */
  now?: number;
  /** Network.advertsAhead(): providers whose adverts came dated ahead lately (NET_ADVERTS_FROM_FUTURE). */
  advertsAhead?: readonly AdvertAhead[];
  /** The clock-skew window, ms (network.clockSkewMs), said with them. */
  skewMs?: number;
  /** Network.inboundRefusals(): inbound connections refused before their handshake lately, one warning per code. */
  inboundRefusals?: readonly InboundRefusal[];
}

/** Inbound connections refused before their handshake lately, said plainly (inbound-guard.ts). */
export function inboundRefusalWarning(r: InboundRefusal): NetworkWarning {
  const mins = Math.round(RECENT_MS / 60_000);
  return {
    code: r.code,
    message: `${r.count} inbound connection${r.count === 1 ? '' : 's'} refused in the last ${mins} min from ${r.from} address${r.from === 1 ? '' : 'es'} (last from ${r.lastFrom}): ${INBOUND_REFUSALS[r.code].says}; ${r.code === 'NET_INBOUND_PENDING_PER_IP' ? 'new peers from that address' : 'new peers'} may not get in while it lasts`,
  };
}

/** Providers whose adverts came dated ahead, said in one sentence (without its code). */
export function advertsAheadText(ahead: readonly AdvertAhead[], skewMs: number): string {
  const most = Math.max(...ahead.map((a) => a.byMs));
  const who = ahead.length === 1 ? `provider ${shortDid(ahead[0]!.did)}'s adverts` : `the adverts of ${ahead.length} providers (${ahead.slice(-3).map((a) => shortDid(a.did)).join(', ')}${ahead.length > 3 ? ', …' : ''})`;
  return `${who} came dated ${ahead.length === 1 ? '' : 'up to '}${Math.round(most / 1000)} s ahead of this node's clock, past the ${Math.round(skewMs / 1000)} s clock-skew window, and were dropped (RECORD_FROM_FUTURE): a clock is wrong, theirs or this node's (NTP)`;
}

export function assessNetwork(c: ConnectivityStatus, liveAdverts: number, opts: AssessOptions = {}): NetworkAssessment {
  const a = assess(c, liveAdverts, opts);
  const ahead = opts.advertsAhead ?? [];
  const warnings = [
    ...(a.state === 'ok' ? bootstrapWarnings(a.bootstrap) : []),
    ...(opts.duplicates ?? []).map((d) => duplicateWarning(d, opts.now ?? Date.now())),
    // beside an ok state, on a node in the market (NET_NO_MARKET says it in its reason; the other states come first)
    ...(ahead.length && a.state === 'ok' && opts.market !== false ? [{ code: 'NET_ADVERTS_FROM_FUTURE', message: advertsAheadText(ahead, opts.skewMs ?? DEFAULT_SKEW_MS) }] : []),
    // libp2p's per-address rate is met by honest bursts too (a devnet's nodes on one machine starting at once): logged only
    ...(opts.inboundRefusals ?? []).filter((r) => r.code !== 'NET_INBOUND_RATE_LIMIT').map(inboundRefusalWarning),
  ];
  return warnings.length ? { ...a, warnings } : a;
}

/** What a bootstrap dial's code says, for a warning line (the code itself goes in brackets after it). */
const DIAL_SAYS: Record<string, string> = {
  NET_PEER_ID_MISMATCH: 'the peer at that address has another PeerId (check the /p2p/ part of network.bootstrap)',
  NET_CONNECTION_REFUSED: 'nothing listens there (connection refused)',
  NET_DIAL_TIMEOUT: 'no answer in time',
  NET_HANDSHAKE_FAILED: 'the handshake failed (another overlay, or a wrong swarm key?)',
};

/** Each bootstrap entry not connected whose last dial failed, as a warning with that dial's code. */
function bootstrapWarnings(down: NetworkAssessment['bootstrap']): NetworkWarning[] {
  return down
    .filter((b): b is typeof b & { code: string } => b.code !== undefined)
    .map((b) => ({ code: b.code, message: `bootstrap ${b.addr} is not connected: ${DIAL_SAYS[b.code] ?? `the dial failed: ${(b.error ?? '').slice(0, 160)}`} (${b.failures} ${b.failures === 1 ? 'dial' : 'dials'} failed, still retrying)` }));
}

function assess(c: ConnectivityStatus, liveAdverts: number, opts: AssessOptions): NetworkAssessment {
  const down = c.bootstrap.filter((b) => !b.connected).map((b) => ({ addr: b.addr, failures: b.failures, ...(b.lastError ? { code: b.lastError.code, error: b.lastError.message } : {}) }));
  const why = down
    .filter((b) => b.code)
    .map((b) => `bootstrap ${b.addr}: ${b.code === 'NET_PEER_ID_MISMATCH' ? 'the peer at that address has another PeerId (check the /p2p/ part)' : b.code}${b.failures > 1 ? ` (${b.failures} dials failed, still retrying)` : ''}`);
  const base = { peers: c.peers, liveAdverts, bootstrap: down };
  if (c.peers === 0) {
    const tail = why.length ? `: ${why.join('; ')}` : c.bootstrap.length ? ': the bootstrap peers have not answered yet (still retrying)' : ' and no bootstrap peer is configured (set network.bootstrap)';
    return { ...base, state: 'no-peers', code: 'NET_NO_PEERS', message: `this node has no peers${tail}` };
  }
  // gossip dead explains a market not heard, so it goes first; a node just started or just connected is not flagged
  if (opts.gossipQuietMs !== undefined && opts.gossipQuietMs >= NO_GOSSIP_GRACE_MS) {
    const s = Math.round(opts.gossipQuietMs / 1000);
    return { ...base, state: 'no-gossip', code: 'NET_NO_GOSSIP', message: `connected to ${c.peers} ${c.peers === 1 ? 'peer' : 'peers'} but gossips with none: no peer on any of this node's topics for ${s} s (it neither publishes nor hears adverts and jobs by gossip; records reach it only by sync and direct streams)${why.length ? ` (${why.join('; ')})` : ''}` };
  }
  if (liveAdverts === 0 && opts.market !== false) {
    if (opts.advertsAhead?.length) why.push(advertsAheadText(opts.advertsAhead, opts.skewMs ?? DEFAULT_SKEW_MS));
    return { ...base, state: 'no-market', code: 'NET_NO_MARKET', message: `connected to ${c.peers} ${c.peers === 1 ? 'peer' : 'peers'} but hears no market: no live provider advert${why.length ? ` (${why.join('; ')})` : ''}` };
  }
  return { ...base, state: 'ok', message: `${c.peers} ${c.peers === 1 ? 'peer' : 'peers'}, ${liveAdverts} live ${liveAdverts === 1 ? 'advert' : 'adverts'}` };
}

/** `network.reconnect` → the network module's connectivity, remember-store and gossip self-check options. */
export function reconnectOptions(cfg: NetworkConfig['reconnect'], rememberFile: string): Pick<NetworkOptions, 'connectivity' | 'rememberStore' | 'gossipHealth'> {
  const c: Partial<ConnectivityOptions> = {};
  if (cfg?.minPeers !== undefined) c.minPeers = cfg.minPeers;
  if (cfg?.bootstrapMaxBackoffMs !== undefined) c.bootstrap = { ...CONNECTIVITY_DEFAULTS.bootstrap, maxMs: cfg.bootstrapMaxBackoffMs };
  if (cfg?.peerMaxBackoffMs !== undefined) c.remembered = { ...CONNECTIVITY_DEFAULTS.remembered, maxMs: cfg.peerMaxBackoffMs };
  if (cfg?.rememberPeers !== undefined) c.rememberMax = cfg.rememberPeers;
  return {
    connectivity: c,
    rememberStore: fileRememberStore(rememberFile),
    ...(cfg?.gossipRepairMs !== undefined ? { gossipHealth: cfg.gossipRepairMs === 0 ? { checkEveryMs: 0 } : { repairAfterMs: cfg.gossipRepairMs, checkEveryMs: Math.max(500, Math.min(5_000, Math.floor(cfg.gossipRepairMs / 2))) } } : {}),
  };
}
