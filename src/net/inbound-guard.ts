/**
 * Inbound connections still handshaking (docs/network.md §15 "Connections not finished"; QA ffNetDay2 F1).
 *
 * libp2p's connection manager takes at most `maxIncomingPendingConnections` inbound connections that have not
 * finished their upgrade (noise, the muxer), node-wide, and gives each `inboundUpgradeTimeout` (10 s); every other
 * inbound connection is reset at once and said only in libp2p's debug log. With its default of 10, ten TCP
 * connections that send nothing, from one address, kept every new peer out of a node for as long as they were
 * reopened, while the node's log, `status` and metrics said nothing.
 *
 * Now the node-wide bound is `MAX_PENDING_INBOUND` (64), and one address (an IPv4 address, an IPv6 /64) may hold at
 * most `MAX_PENDING_INBOUND_PER_IP` (8) of them: an attacker needs eight addresses to fill the node's, and an honest
 * peer from another address still gets in. Every inbound connection refused before its handshake, by this bound or
 * by libp2p's (node-wide pending, `maxConnections`, libp2p's 5 new connections a second per address), is counted
 * (`c0mpute_connections_refused_total{reason="pending"|"full"|"rate"}`), logged at most once a minute per reason and
 * address (`RefusalLog`, with a stable code) and kept for `status`'s warnings for `RECENT_MS`.
 */
import type { Libp2p, MultiaddrConnection } from '@libp2p/interface';
import type { RefusalLog } from './refusals.js';

/** Inbound connections still handshaking, node-wide (libp2p's `maxIncomingPendingConnections`; its default is 10). */
export const MAX_PENDING_INBOUND = 64;
/** Of those, from one address (an IPv4 address, an IPv6 /64). */
export const MAX_PENDING_INBOUND_PER_IP = 8;
/** libp2p's own bound on new inbound connections a second from one address (`inboundConnectionThreshold`, its default). */
export const INBOUND_PER_SECOND = 5;
/** How long a refusal stays in `status`'s warnings, ms. */
export const RECENT_MS = 10 * 60_000;

/** Why an inbound connection was refused before its handshake, as a stable code. */
export type InboundRefusalCode = 'NET_INBOUND_PENDING_PER_IP' | 'NET_INBOUND_PENDING_LIMIT' | 'NET_MAX_CONNECTIONS' | 'NET_INBOUND_RATE_LIMIT';

export interface InboundRefusal {
  code: InboundRefusalCode;
  /** Refusals of this code within RECENT_MS. */
  count: number;
  /** The address (IP, or IPv6 /64) refused last. */
  lastFrom: string;
  /** Addresses refused within RECENT_MS (at most 64 kept). */
  from: number;
}

/** The loopback addresses every local node dials from (addressKey's forms of 127.0.0.1 and ::1). */
const LOCAL_SHARED: ReadonlySet<string> = new Set(['127.0.0.1', '0:0:0:0::/64']);

/** The address a connection is counted under: an IPv4 address, or the /64 of an IPv6 one. */
export function addressKey(remoteAddr: string): string {
  const m = /^\/ip([46])\/([^/]+)/.exec(remoteAddr);
  if (!m) return remoteAddr;
  if (m[1] === '4') return m[2]!;
  const ip = m[2]!;
  const [head, tail] = ip.split('::');
  const left = head ? head.split(':') : [];
  const right = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => g.toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/** Per-address counts of inbound connections still handshaking, and the refusals seen lately. Pure but for its clock. */
export class PendingInbound {
  #byIp = new Map<string, number>();
  /** Per code: refusals counted per second of the monotonic clock (at most RECENT_MS / 1000 entries, oldest first), the last one, and the addresses lately refused. */
  #recent = new Map<InboundRefusalCode, { seconds: Map<number, number>; lastFrom: string; from: Map<string, number> }>();
  /**
   * `localShared`: the node runs on loopback (`network.loopback`, a devnet, a local simulation): 127.0.0.1 and ::1,
   * the address every local node dials from, are held to the node-wide bound only, as before the per-address one
   * (review s56: 30 local nodes starting together came from one address); other loopback addresses keep `perIp`.
   */
  constructor(private o: { perIp: number; clock: () => number; localShared?: boolean }) {}

  get perIp(): number {
    return this.o.perIp;
  }

  /** Take a slot for `ip`; false when it already holds `perIp`. */
  take(ip: string): boolean {
    const n = this.#byIp.get(ip) ?? 0;
    if (n >= this.o.perIp && !(this.o.localShared && LOCAL_SHARED.has(ip))) return false;
    this.#byIp.set(ip, n + 1);
    return true;
  }

  release(ip: string): void {
    const n = (this.#byIp.get(ip) ?? 0) - 1;
    if (n > 0) this.#byIp.set(ip, n);
    else this.#byIp.delete(ip);
  }

  noteRefused(code: InboundRefusalCode, ip: string): void {
    const now = this.o.clock();
    const r = this.#recent.get(code) ?? { seconds: new Map<number, number>(), lastFrom: ip, from: new Map<string, number>() };
    // counted per second, O(1) a refusal: a flood of refusals costs no more than the count (before, an array of times
    // spliced at 10,000)
    const s = Math.floor(now / 1000);
    r.seconds.set(s, (r.seconds.get(s) ?? 0) + 1);
    prune(r.seconds, Math.ceil((now - RECENT_MS) / 1000));
    r.lastFrom = ip;
    r.from.delete(ip);
    r.from.set(ip, now);
    while (r.from.size > 64) r.from.delete(r.from.keys().next().value as string);
    this.#recent.set(code, r);
  }

  /** The refusals within RECENT_MS, one per code. */
  recent(): InboundRefusal[] {
    const now = this.o.clock();
    const since = now - RECENT_MS;
    const out: InboundRefusal[] = [];
    for (const [code, r] of this.#recent) {
      prune(r.seconds, Math.ceil(since / 1000));
      for (const [ip, at] of r.from) if (at < since) r.from.delete(ip);
      let count = 0;
      for (const n of r.seconds.values()) count += n;
      if (!count) {
        this.#recent.delete(code);
        continue;
      }
      out.push({ code, count, lastFrom: r.lastFrom, from: r.from.size });
    }
    return out;
  }
}

/** Drop the seconds before `first` (the map holds them oldest first): a second counts while it began within RECENT_MS. */
function prune(seconds: Map<number, number>, first: number): void {
  for (const s of seconds.keys()) {
    if (s >= first) break;
    seconds.delete(s);
  }
}

/**
 * Each inbound refusal's code, in one place: the counter's reason (and cause), the log line and its level (RefusalLog, refusals.ts;
 * `limit` is the bound in its fields) and what `status` says of the refusals lately (net-health.ts
 * inboundRefusalWarning, after "N inbound connections refused … from A addresses (last from X): ").
 */
export const INBOUND_REFUSALS: Record<InboundRefusalCode, { reason: 'pending' | 'full' | 'rate'; cause?: 'ip' | 'total'; level: 'warn' | 'info'; logs: string; says: string }> = {
  NET_INBOUND_PENDING_PER_IP: {
    level: 'warn',
    reason: 'pending',
    cause: 'ip',
    logs: 'refused an inbound connection: this address already holds `limit` connections still handshaking (a peer opening connections and not finishing them?)',
    says: `more than ${MAX_PENDING_INBOUND_PER_IP} connections from one address were still handshaking (connections opened and not finished: a scan or an attack?)`,
  },
  NET_INBOUND_PENDING_LIMIT: {
    level: 'warn',
    reason: 'pending',
    cause: 'total',
    logs: 'refused an inbound connection: `limit` inbound connections are still handshaking, node-wide (connections opened and not finished, from many addresses?)',
    says: `${MAX_PENDING_INBOUND} inbound connections were still handshaking, node-wide (connections opened and not finished, from many addresses?)`,
  },
  NET_MAX_CONNECTIONS: {
    level: 'warn',
    reason: 'full',
    logs: 'refused an inbound connection: the node holds its maximum of `limit` connections',
    says: 'the node held its maximum number of connections',
  },
  NET_INBOUND_RATE_LIMIT: {
    // libp2p's 5 a second per address is met by honest bursts too (many nodes on one machine): said, not warned
    level: 'info',
    reason: 'rate',
    logs: 'refused an inbound connection: more than `limit` new connections a second from this address',
    says: `an address opened more than ${INBOUND_PER_SECOND} connections a second`,
  },
};

interface ConnManagerInternals {
  getConnectionsMap(): { values(): Iterable<unknown[]> };
  maxConnections?: number;
  incomingPendingConnections?: number;
  maxIncomingPendingConnections?: number;
}
interface UpgraderInternals {
  upgradeInbound(maConn: MultiaddrConnection, opts: unknown): Promise<unknown>;
}

/**
 * Wrap the host's inbound upgrade: the per-address bound first, then libp2p's own checks; a refusal by either is
 * counted, logged and noted. Reaches into libp2p's components (`upgrader`, `connectionManager`), as the patches in
 * libp2p-patches.ts do: a libp2p update is checked against test/e2e/net-inbound-pending.test.ts.
 */
export function guardInbound(host: Libp2p, o: { refusals: RefusalLog; pending: PendingInbound; maxConnections: number }): void {
  const components = (host as unknown as { components: { upgrader: UpgraderInternals; connectionManager: ConnManagerInternals } }).components;
  const up = components.upgrader;
  const cm = components.connectionManager;
  const inner = up.upgradeInbound.bind(up);
  const pendingMax = () => cm.maxIncomingPendingConnections ?? MAX_PENDING_INBOUND;
  const connectionsMax = () => cm.maxConnections ?? o.maxConnections;
  // counted from the map libp2p keeps, on every inbound connection: getConnections() builds an array of them all
  const connections = (): number => {
    let n = 0;
    for (const list of cm.getConnectionsMap().values()) n += list.length;
    return n;
  };
  const limits: Record<InboundRefusalCode, () => number> = {
    NET_INBOUND_PENDING_PER_IP: () => o.pending.perIp,
    NET_INBOUND_PENDING_LIMIT: pendingMax,
    NET_MAX_CONNECTIONS: connectionsMax,
    NET_INBOUND_RATE_LIMIT: () => INBOUND_PER_SECOND,
  };
  const refuse = (code: InboundRefusalCode, ip: string, addr: string): void => {
    o.pending.noteRefused(code, ip);
    const { reason, cause } = INBOUND_REFUSALS[code];
    o.refusals.refused(reason, ip, { addr, code, limit: limits[code](), ...(cause ? { cause } : {}) });
  };
  up.upgradeInbound = async (maConn: MultiaddrConnection, opts: unknown): Promise<unknown> => {
    const addr = maConn.remoteAddr.toString();
    const ip = addressKey(addr);
    if (!o.pending.take(ip)) {
      refuse('NET_INBOUND_PENDING_PER_IP', ip, addr);
      const err = new Error('Connection denied: too many connections from this address still handshaking');
      err.name = 'ConnectionDeniedError';
      throw err;
    }
    // what libp2p's connection manager will decide, read before it decides (it counts this connection once it accepts)
    const pendingBefore = cm.incomingPendingConnections ?? 0;
    const connsBefore = connections();
    try {
      return await inner(maConn, opts);
    } catch (e) {
      if ((e as Error).name === 'ConnectionDeniedError' && (e as Error).message === 'Connection denied') {
        // refused by acceptIncomingConnection: which of its bounds. libp2p checks the per-address rate before the
        // node's maximum; a node that is full is named full even where the rate refused first, since it would
        // have refused the connection anyway and full is what the operator can act on
        const code: InboundRefusalCode =
          pendingBefore >= pendingMax() ? 'NET_INBOUND_PENDING_LIMIT' : connsBefore >= connectionsMax() ? 'NET_MAX_CONNECTIONS' : 'NET_INBOUND_RATE_LIMIT';
        refuse(code, ip, addr);
      }
      throw e;
    } finally {
      o.pending.release(ip);
    }
  };
}
