/**
 * Private overlays (docs/overlays.md, docs/network.md "Reconnection and
 * liveness"): the connection gater for `network.allowlist`, and the log of
 * refused inbound connections, so an operator learns that a swarm key leaked.
 *
 *  - `allowlist`: the peer completed the (pnet + noise) handshake but its DID
 *    is not on the allowlist: it holds the swarm key.
 *  - `handshake`: an inbound connection closed before its handshake completed,
 *    on an overlay with a swarm key: most often a wrong swarm key (pnet
 *    scrambles the noise handshake), or a port scan.
 *  - `banned`: the peer is serving a ban for persistent flooding (peer-abuse.ts).
 *
 * Each refusal is counted (c0mpute_connections_refused_total{reason}); a WARN
 * line is written at most once per (reason, peer or remote IP) per `windowMs`,
 * carrying the number of refusals suppressed since the previous line.
 */
import type { ConnectionGater, MultiaddrConnection, PeerId } from '@libp2p/interface';
import type { Logger } from '../util/log.js';

export type RefusalReason = 'allowlist' | 'handshake' | 'banned';

export class RefusalLog {
  #last = new Map<string, { at: number; suppressed: number }>();
  constructor(private d: { log: Logger; count: (reason: RefusalReason) => void; clock?: () => number; windowMs?: number; maxKeys?: number }) {}

  refused(reason: RefusalReason, who: string, detail: Record<string, unknown> = {}): void {
    this.d.count(reason);
    const now = (this.d.clock ?? Date.now)();
    const key = `${reason} ${who}`;
    const prev = this.#last.get(key);
    if (prev && now - prev.at < (this.d.windowMs ?? 60_000)) {
      prev.suppressed++;
      return;
    }
    this.#last.delete(key);
    this.#last.set(key, { at: now, suppressed: 0 });
    while (this.#last.size > (this.d.maxKeys ?? 1_024)) this.#last.delete(this.#last.keys().next().value as string);
    const msg =
      reason === 'allowlist'
        ? 'refused a connection from a peer not on the allowlist: it completed the private handshake, so it holds the swarm key (has the key leaked?)'
        : reason === 'banned'
          ? 'refused a connection from a peer banned for flooding'
          : 'refused a connection whose handshake failed (a wrong swarm key?)';
    this.d.log.warn({ reason, from: who, suppressedSinceLast: prev?.suppressed ?? 0, ...detail }, msg);
  }
}

function ipOf(addr: string): string {
  const m = /^\/ip[46]\/([^/]+)/.exec(addr);
  return m?.[1] ?? addr;
}

/**
 * The gater: refuses peers off the allowlist (when one is set) and peers
 * serving a flood ban (`banned`), both directions; with `watchHandshakes`,
 * reports inbound connections that die before the handshake.
 */
export function overlayGater(o: { allowed?: (p: PeerId) => boolean; banned?: (p: PeerId) => boolean; refusals: RefusalLog; watchHandshakes: boolean }): ConnectionGater {
  const passed = new WeakSet<MultiaddrConnection>();
  const gater: ConnectionGater = {};
  if (o.watchHandshakes) {
    gater.denyInboundConnection = (maConn: MultiaddrConnection) => {
      maConn.addEventListener(
        'close',
        () => {
          if (!passed.has(maConn)) o.refusals.refused('handshake', ipOf(maConn.remoteAddr.toString()), { addr: maConn.remoteAddr.toString() });
        },
        { once: true },
      );
      return false;
    };
  }
  if (o.allowed || o.banned || o.watchHandshakes) {
    gater.denyInboundEncryptedConnection = (p: PeerId, maConn: MultiaddrConnection) => {
      passed.add(maConn);
      if (o.banned?.(p)) {
        o.refusals.refused('banned', p.toString(), { addr: maConn.remoteAddr.toString() });
        return true;
      }
      if (!o.allowed || o.allowed(p)) return false;
      o.refusals.refused('allowlist', p.toString(), { addr: maConn.remoteAddr.toString() });
      return true;
    };
  }
  if (o.allowed || o.banned) {
    const deny = (p: PeerId): boolean => (o.allowed !== undefined && !o.allowed(p)) || (o.banned?.(p) ?? false);
    gater.denyDialPeer = deny;
    gater.denyOutboundEncryptedConnection = deny;
  }
  return gater;
}
