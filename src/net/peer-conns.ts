/**
 * What each connection's identify said, kept per connection (docs/network.md §11 "Two processes with one key"; QA
 * qaNet F1, F2). libp2p keeps a peer's identify data per PeerId: its peer store holds the last identify's protocols,
 * and the addresses of the signed peer record with the highest seq. Two processes that hold one key (a copied
 * identity.key, a cloned VM or data directory) are one PeerId to libp2p, so their addresses and protocols overwrote
 * each other, libp2p opened a stream on whichever connection it found first, and the one that did not speak the
 * protocol failed it. Here they are kept apart:
 *
 *  - which protocols each connection's process speaks (`speaks`), so a stream that one process does not speak is
 *    opened on a connection of the other (protocols.ts `DirectProtocols.open`), and the listen addresses of the
 *    processes that spoke a protocol before (`altAddrs`), dialled when no connection open now speaks it;
 *  - two open connections of one PeerId from different processes (`distinctProcesses`: their run tags differ, or,
 *    for a peer that sends none, their listen addresses have none in common) are a duplicate identity: the node
 *    warns (NET_DUPLICATE_IDENTITY), counts it and lists it (`duplicates`: `status`, `peers`) for an hour;
 *  - a peer's listen addresses are those its connections open now said (`listenOf`), so when one process goes, the
 *    other's are what the node shows, remembers and dials.
 *
 * The run tag: every node's libp2p user agent ends with `c0mpute-run/<12 hex>`, random each time a network is built
 * (`newRunTag`, in libp2p-host.ts), so two processes are told apart whatever their addresses (two cloned VMs both
 * announce 127.0.0.1:4001). Per network, not per process, so nodes in one process (tests, the sim) are told apart too. Pure: times come from the caller; bounded by the open connections, PAST_PEERS and MAX_DUPLICATES.
 */
import { randomBytes } from 'node:crypto';

/** A new run tag (the user agent's last word: `c0mpute-run/<12 hex>`), drawn once per network built. */
export function newRunTag(): string {
  return `c0mpute-run/${randomBytes(6).toString('hex')}`;
}

const RUN_RE = /(?:^|\s)c0mpute-run\/([0-9a-f]{8,32})(?:\s|$)/;

/** The run tag in a peer's user agent (identify's agentVersion), or undefined when it has none (an older node, another libp2p program). */
export function runOf(agentVersion: string | undefined): string | undefined {
  return agentVersion === undefined ? undefined : RUN_RE.exec(agentVersion)?.[1];
}

/**
 * The word a one-shot node (`c0mpute run` without a daemon: it listens on a new port each time and is gone when its
 * command ends) adds to its user agent, so its peers do not remember it to redial (docs/network.md §11, QA qaUp F8).
 */
export const ONE_SHOT_TAG = 'c0mpute-oneshot';
const ONE_SHOT_RE = /(?:^|\s)c0mpute-oneshot(?:\s|$)/;

/** Does a peer's user agent say it is a one-shot node (ONE_SHOT_TAG)? */
export function isOneShot(agentVersion: string | undefined): boolean {
  return agentVersion !== undefined && ONE_SHOT_RE.test(agentVersion);
}

/** One connection's identify. */
export interface ConnIdentity {
  /** libp2p's connection id. */
  id: string;
  peer: string;
  /** The connection's remote address (for one the peer dialled in, its passing port). */
  remote: string;
  outbound: boolean;
  /** The addresses its process said it listens on, without /p2p/. */
  listen: string[];
  protocols: ReadonlySet<string>;
  /** Its process's run tag, when it sent one. */
  run?: string;
  /** Its process said it is a one-shot node (ONE_SHOT_TAG): not remembered. */
  oneShot?: true;
}

/** One of the processes seen behind a duplicated PeerId. */
export interface ProcessSeen {
  listen: string[];
  /** The remote address of the connection it was last seen on. */
  remote: string;
  run?: string;
  /** The c0mpute protocols it serves (`/c0mpute/…`: exec/1 only on a provider), sorted. */
  protocols: string[];
}

/** A PeerId seen connected from two processes or more. */
export interface DuplicateIdentity {
  peer: string;
  processes: ProcessSeen[];
  /** Wall-clock ms. */
  firstSeenAt: number;
  lastSeenAt: number;
  /** Connected from two processes or more right now. */
  current: boolean;
}

/** Are two connections' identifies from different processes? Run tags when both sent one; else listen addresses with none in common. */
export function distinctProcesses(a: Pick<ConnIdentity, 'run' | 'listen'>, b: Pick<ConnIdentity, 'run' | 'listen'>): boolean {
  if (a.run !== undefined && b.run !== undefined) return a.run !== b.run;
  if (!a.listen.length || !b.listen.length) return false;
  const bs = new Set(b.listen);
  return !a.listen.some((x) => bs.has(x));
}

/** How long a duplicate stays listed after it was last seen, ms (1 h). */
export const DUPLICATE_KEEP_MS = 3_600_000;
/** Duplicates listed at most (oldest dropped). */
export const MAX_DUPLICATES = 64;
/** Peers whose closed connections' identifies are kept for `altAddrs` (least recently closed dropped). */
export const PAST_PEERS = 256;
/** Identifies kept per peer for `altAddrs` (one per process). */
const PAST_PER_PEER = 4;
/** Addresses `altAddrs` gives at most. */
export const MAX_ALT_ADDRS = 4;

/** An address without its trailing /p2p/<id>. */
export function bareAddr(addr: string): string {
  return addr.replace(/\/p2p\/[^/]+$/, '');
}

const processKey = (c: Pick<ConnIdentity, 'run' | 'listen'>): string => c.run ?? `addrs:${[...c.listen].sort().join(' ')}`;

export class PeerConnections {
  readonly #conns = new Map<string, ConnIdentity>();
  readonly #byPeer = new Map<string, Set<string>>();
  /** Identifies of closed connections, per peer (its processes, newest last). */
  readonly #past = new Map<string, ConnIdentity[]>();
  readonly #dups = new Map<string, { peer: string; processes: Map<string, ProcessSeen>; firstSeenAt: number; lastSeenAt: number }>();
  /** Connections already counted as a duplicate's (a later identify push on them is not a new one). */
  readonly #counted = new Set<string>();

  /**
   * A connection's identify (or identify push). Returns the duplicate when this connection and another open one of
   * the same PeerId are from different processes; `fresh` the first time this connection is found so.
   */
  identified(c: ConnIdentity, now: number): { duplicate: DuplicateIdentity; fresh: boolean } | undefined {
    this.#conns.set(c.id, c);
    let ids = this.#byPeer.get(c.peer);
    if (!ids) this.#byPeer.set(c.peer, (ids = new Set()));
    ids.add(c.id);
    const others = [...ids].filter((id) => id !== c.id).map((id) => this.#conns.get(id)!);
    const apart = others.filter((o) => distinctProcesses(c, o));
    if (!apart.length) return undefined;
    let d = this.#dups.get(c.peer);
    if (!d) {
      while (this.#dups.size >= MAX_DUPLICATES) this.#dups.delete(this.#dups.keys().next().value as string);
      d = { peer: c.peer, processes: new Map(), firstSeenAt: now, lastSeenAt: now };
      this.#dups.set(c.peer, d);
    }
    d.lastSeenAt = now;
    for (const x of [c, ...apart]) d.processes.set(processKey(x), { listen: x.listen, remote: x.remote, ...(x.run === undefined ? {} : { run: x.run }), protocols: [...x.protocols].filter((p) => p.startsWith('/c0mpute/')).sort() });
    // at most the newest few processes of one key
    while (d.processes.size > PAST_PER_PEER) d.processes.delete(d.processes.keys().next().value as string);
    const fresh = !this.#counted.has(c.id);
    this.#counted.add(c.id);
    for (const o of apart) this.#counted.add(o.id);
    return { duplicate: this.#view(d), fresh };
  }

  /** A connection closed. Returns its peer's connections still open and identified (none: the peer is gone or was never identified). */
  closed(id: string, now: number): { peer: string; remaining: ConnIdentity[] } | undefined {
    const c = this.#conns.get(id);
    this.#counted.delete(id);
    if (!c) return undefined;
    this.#conns.delete(id);
    const ids = this.#byPeer.get(c.peer);
    ids?.delete(id);
    if (ids && !ids.size) this.#byPeer.delete(c.peer);
    // kept for altAddrs: one entry per process, newest last
    const past = (this.#past.get(c.peer) ?? []).filter((p) => processKey(p) !== processKey(c));
    past.push(c);
    this.#past.delete(c.peer);
    this.#past.set(c.peer, past.slice(-PAST_PER_PEER));
    while (this.#past.size > PAST_PEERS) this.#past.delete(this.#past.keys().next().value as string);
    const d = this.#dups.get(c.peer);
    if (d && this.#isCurrent(c.peer) === false) d.lastSeenAt = Math.max(d.lastSeenAt, now);
    return { peer: c.peer, remaining: this.of(c.peer) };
  }

  /** The peer's open identified connections, in the order they were identified. */
  of(peer: string): ConnIdentity[] {
    return [...(this.#byPeer.get(peer) ?? [])].map((id) => this.#conns.get(id)!);
  }

  /** Does the process on this connection speak `protocol`? Undefined when the connection was not identified (yet). */
  speaks(connId: string, protocol: string): boolean | undefined {
    return this.#conns.get(connId)?.protocols.has(protocol);
  }

  /** Where the peer's processes connected now listen (each address once, in the order its connections were identified). */
  listenOf(peer: string): string[] {
    return [...new Set(this.of(peer).flatMap((c) => c.listen))];
  }

  /**
   * Addresses to dial when no open connection of `peer` speaks `protocol`: where a process of its key that spoke it
   * (a connection since closed, newest first) listens, then `known` (addresses kept elsewhere: the remembered-peer
   * file, from before a restart), leaving out the addresses of processes connected now that do not speak it and the
   * remote addresses of its open connections (already tried). At most MAX_ALT_ADDRS.
   */
  altAddrs(peer: string, protocol: string, known: readonly string[] = []): string[] {
    const open = this.of(peer);
    const skip = new Set<string>(open.flatMap((c) => [bareAddr(c.remote), ...(c.protocols.has(protocol) ? [] : c.listen)]));
    const out: string[] = [];
    for (const p of [...(this.#past.get(peer) ?? [])].reverse()) {
      if (!p.protocols.has(protocol)) continue;
      for (const a of p.listen) if (!skip.has(a) && !out.includes(a)) out.push(a);
    }
    for (const a of known.map(bareAddr)) if (!skip.has(a) && !out.includes(a)) out.push(a);
    return out.slice(0, MAX_ALT_ADDRS);
  }

  /** Is the peer one seen connected from two processes within DUPLICATE_KEEP_MS (or now)? */
  wasDuplicated(peer: string): boolean {
    return this.#dups.has(peer);
  }

  /** The duplicates seen now or within DUPLICATE_KEEP_MS, current ones first, then the most recently seen. */
  duplicates(now: number): DuplicateIdentity[] {
    const out: DuplicateIdentity[] = [];
    for (const [peer, d] of this.#dups) {
      const current = this.#isCurrent(peer);
      if (current) d.lastSeenAt = now;
      else if (now - d.lastSeenAt > DUPLICATE_KEEP_MS) {
        this.#dups.delete(peer);
        continue;
      }
      out.push(this.#view(d));
    }
    return out.sort((a, b) => Number(b.current) - Number(a.current) || b.lastSeenAt - a.lastSeenAt);
  }

  /** Two of the peer's open connections from different processes? */
  #isCurrent(peer: string): boolean {
    const cs = this.of(peer);
    for (let i = 0; i < cs.length; i++) for (let j = i + 1; j < cs.length; j++) if (distinctProcesses(cs[i]!, cs[j]!)) return true;
    return false;
  }

  #view(d: { peer: string; processes: Map<string, ProcessSeen>; firstSeenAt: number; lastSeenAt: number }): DuplicateIdentity {
    return { peer: d.peer, processes: [...d.processes.values()], firstSeenAt: d.firstSeenAt, lastSeenAt: d.lastSeenAt, current: this.#isCurrent(d.peer) };
  }
}
