/**
 * Gossip self-check (docs/network.md "Reconnection and liveness"): a peer can
 * stay connected while gossip with it is dead. In @libp2p/gossipsub 17 an error
 * on a peer's inbound pubsub stream (e.g. libp2p's 4 MiB stream read buffer
 * overflowing while validation lags during a flood, or a reset after a stall)
 * runs `handlePeerReadStreamError → removePeer`: the router forgets the peer and
 * closes both streams, but the connection stays open, so nothing adds the peer
 * back; the other side loses its outbound stream and never opens a new one.
 * Every publish then reaches 0 peers until the connection is dropped.
 *
 * This module repairs that: right after such a stream error (`onStreamError`)
 * and periodically for any connected peer that speaks gossipsub but is not
 * fully attached to the router (no router entry, a missing stream, or no
 * subscriptions at all) for `repairAfterMs`. The first repair re-opens the
 * router's streams on the existing connection ('reopen'); if the peer is still
 * detached one period later the connection is closed and redialled
 * ('reconnect'). A peer detached only by having no subscriptions is re-opened
 * once and never reconnected: it may subscribe to nothing (a driver, a client),
 * and a reconnect would cut its streams in flight. Each repair is counted
 * (c0mpute_gossip_repairs_total{action}).
 *
 * It also says when a peer that is fully attached stays out of this node's
 * gossip meshes (`meshGap`): subscribed to some of its topics, in the mesh of
 * none, while one of those meshes is short, for `meshGapAfterMs`. Gossipsub
 * grafts such a peer at its next heartbeat unless a prune backoff with it is
 * running or its score is below 0, so the line names both; nothing is
 * repaired (the backoff is the protocol's, and a score recovers as it decays).
 * One line per peer until it is in a mesh again (docs/network.md
 * "Reconnection and liveness").
 */
import type { Logger } from '../util/log.js';
import { monotonicClock } from '../util/clock.js';

export const GOSSIP_HEALTH_DEFAULTS = {
  /** How often connected peers are checked, ms (0 = never). */
  checkEveryMs: 5_000,
  /** A peer detached this long is repaired, ms. */
  repairAfterMs: 10_000,
  /** A peer kept out of every mesh of its topics this long is logged, ms (see `meshGap`). */
  meshGapAfterMs: 30_000,
};

export type GossipHealthOptions = typeof GOSSIP_HEALTH_DEFAULTS;

export type GossipProblem = 'no-router' | 'no-outbound' | 'no-inbound' | 'no-subscriptions';

/** What keeps a peer out of this node's meshes: the longest prune backoff left with it on one of their topics, and its gossip score. */
export interface MeshGap {
  backoffMs: number;
  score: number;
}

/** What the check needs from the node (gossipsub and libp2p in node.ts). */
export interface GossipHealthHost {
  /** Connected peers that announced a gossipsub protocol (identify). */
  gossipPeers(): Promise<string[]>;
  /** What is wrong with a peer's attachment to the router, if anything. */
  problem(peerId: string): GossipProblem | undefined;
  /** Re-add the peer to the router and open its outbound stream on the open connection. */
  reopen(peerId: string): Promise<void>;
  /** Close every connection to the peer and dial it again. */
  reconnect(peerId: string): Promise<void>;
  /**
   * For a peer attached with its outbound stream: when it is subscribed to topics of this node's, in none of its
   * meshes of them, and one of those meshes is short of gossipsub's Dlo (a heartbeat would graft it if it could),
   * what keeps it out. Undefined otherwise.
   */
  meshGap?(peerId: string): MeshGap | undefined;
}

export class GossipHealth {
  readonly opts: GossipHealthOptions;
  #since = new Map<string, number>();
  #repaired = new Map<string, number>();
  #lastStreamError = new Map<string, number>();
  /** Peers out of every mesh: since when, and whether it was said. */
  #gap = new Map<string, { since: number; said: boolean }>();
  #timer: NodeJS.Timeout | undefined;
  #busy = false;

  constructor(
    private host: GossipHealthHost,
    /** `clock`: monotonic (default performance.now): it only measures how long a peer has been detached. */
    private d: { clock?: () => number; log: Logger; onRepair: (action: 'reopen' | 'reconnect' | 'stream-error', problem: string) => void; options?: Partial<GossipHealthOptions> },
  ) {
    this.opts = { ...GOSSIP_HEALTH_DEFAULTS, ...d.options };
  }

  start(): void {
    if (this.opts.checkEveryMs <= 0) return;
    this.#timer = setInterval(() => void this.check(), this.opts.checkEveryMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** gossipsub dropped a peer after a stream error while the connection may stay: re-attach it at once. */
  onStreamError(peerId: string, connected: boolean): void {
    if (!connected) return;
    // At most one immediate repair per peer per 2 s: a peer whose streams keep failing is left to the periodic check (which escalates).
    const now = (this.d.clock ?? monotonicClock)();
    if (now - (this.#lastStreamError.get(peerId) ?? -Infinity) < 2_000) return;
    this.#lastStreamError.set(peerId, now);
    if (this.#lastStreamError.size > 4_096) this.#lastStreamError.delete(this.#lastStreamError.keys().next().value as string);
    this.d.log.warn({ peer: peerId }, 'gossip stream to a connected peer failed; re-opening it');
    this.d.onRepair('stream-error', 'stream-error');
    void this.host.reopen(peerId).catch((e: unknown) => this.d.log.debug({ peer: peerId, err: (e as Error).message }, 'gossip reopen failed'));
  }

  /** One pass over the connected gossip peers. Exposed for tests. */
  async check(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      const now = (this.d.clock ?? monotonicClock)();
      const peers = await this.host.gossipPeers();
      const seen = new Set(peers);
      for (const k of this.#since.keys()) if (!seen.has(k)) this.#since.delete(k);
      for (const k of this.#repaired.keys()) if (!seen.has(k)) this.#repaired.delete(k);
      for (const k of this.#gap.keys()) if (!seen.has(k)) this.#gap.delete(k);
      for (const p of peers) {
        const problem = this.host.problem(p);
        if (!problem) {
          this.#since.delete(p);
          this.#repaired.delete(p);
          this.#checkMesh(p, now);
          continue;
        }
        this.#gap.delete(p);
        const since = this.#since.get(p);
        if (since === undefined) {
          this.#since.set(p, now);
          continue;
        }
        if (now - since < this.opts.repairAfterMs) continue;
        // In the router with both streams but subscribed to nothing, after a reopen re-sent this node's subscriptions: the peer has
        // none to send (a pipeline driver, a client). A reconnect cannot change that, and it would cut the peer's streams in flight
        // (a pipeline call, a job) every period; it is left alone until its problem changes.
        if (problem === 'no-subscriptions' && (this.#repaired.get(p) ?? 0) > 0) continue;
        const action = (this.#repaired.get(p) ?? 0) === 0 ? 'reopen' : 'reconnect';
        this.d.log.warn({ peer: p, problem, action, detachedMs: now - since }, 'connected peer hears no gossip from this node; repairing');
        this.d.onRepair(action, problem);
        this.#repaired.set(p, (this.#repaired.get(p) ?? 0) + 1);
        this.#since.set(p, now);
        try {
          await (action === 'reopen' ? this.host.reopen(p) : this.host.reconnect(p));
        } catch (e) {
          this.d.log.debug({ peer: p, action, err: (e as Error).message }, 'gossip repair failed');
        }
      }
    } finally {
      this.#busy = false;
    }
  }

  /** A peer out of every mesh of its topics for meshGapAfterMs: one line naming the backoff and the score. */
  #checkMesh(p: string, now: number): void {
    const gap = this.host.meshGap?.(p);
    if (!gap) {
      const was = this.#gap.get(p);
      if (was?.said) this.d.log.info({ peer: p, outMs: Math.round(now - was.since) }, 'peer is in this node\'s gossip mesh again');
      this.#gap.delete(p);
      return;
    }
    const g = this.#gap.get(p);
    if (!g) {
      this.#gap.set(p, { since: now, said: false });
      return;
    }
    if (g.said || now - g.since < this.opts.meshGapAfterMs) return;
    g.said = true;
    const fields = { peer: p, outMs: Math.round(now - g.since), backoffMs: Math.round(gap.backoffMs), score: Math.round(gap.score * 100) / 100 };
    if (gap.score < 0) this.d.log.warn(fields, 'peer kept out of this node\'s gossip meshes: its gossip score is below 0 (invalid messages or abuse points); it is grafted again once the score decays to 0');
    else if (gap.backoffMs > 0) this.d.log.info(fields, 'peer kept out of this node\'s gossip meshes by a prune backoff; it is grafted again when the backoff ends');
    else this.d.log.warn(fields, 'peer kept out of this node\'s gossip meshes with no backoff and a score of at least 0');
  }
}
