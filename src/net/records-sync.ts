/**
 * The network's records/1 wiring (docs/network.md §records/1, §14 shards;
 * records-protocol.ts is the protocol): serving it (over-limit refusals blamed
 * to the peer's abuse score, peer-abuse.ts), fetching records by address
 * (each checked: address, type, shape, signature), syncing a peer's live
 * records through the gossip pipeline, asking a peer for the records that name
 * given jobs (`syncJobs`, the same pipeline), and syncing once from each newly
 * identified peer that speaks records/1 (`syncOnConnect`).
 *
 * Outcome catch-up (`catchUp`, docs/network.md §5 "Catching up on outcomes"): outcomes are not current state, so
 * the sync on connect never asked for them, and a node that was stopped (or had no peer) never learnt the receipts,
 * acceptances and non-deliveries gossiped meanwhile. With `catchUp`, a gap opens at start (from `catchUp.from`: the
 * newest outcome the node holds) and whenever its last peer leaves (from then, less a margin); the first peer
 * identified after it opens a window (`windowMs`) in which each peer identified is also asked, once, for the
 * `catchUp.kinds` it took since the gap opened (records/1 `live` with `since`, never further back than `maxAgeMs`),
 * with the digest of what this node holds of them since then. Everything comes through the gossip pipeline as any
 * sync's (`#take`), within the server's bounds (records/1 per answer and per peer).
 */
import type { PeerId } from '@libp2p/interface';
import type { Multiaddr } from '@multiformats/multiaddr';
import { C0Error } from '../errors.js';
import { hashHex, isAddress } from '../records/address.js';
import type { CborValue } from '../records/cbor.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import type { RecordPipeline, ValidationOutcome } from './gossip-validation.js';
import type { NetMetrics } from './metrics.js';
import { CATCH_UP_DEFAULTS, peerKey, type CatchUpOptions, type SyncResult } from './network-api.js';
import { PROTOCOLS, type DirectProtocols } from './protocols.js';
import type { RecordSource } from './record-cache.js';
import { BY_JOB_KINDS, encodeRecordsRequest, MAX_JOBS, MAX_LIVE, RECORDS_RATE_LIMITED, recordsHandler, type RecordsServeOptions } from './records-protocol.js';
import { ALL_SHARDS, heldShards, placementCheckable, TOPIC_TYPES, type TopicKind } from './topics.js';
import { peekType, type Opened } from '../records/envelope.js';
import { digestOf } from './sync-digest.js';

/** How long one peer's outcome catch-up holds the next one back at most, from when its turn began (onIdentify). */
export const CATCH_UP_TURN_MS = 2_000;

export interface RecordsSyncDeps {
  direct: DirectProtocols;
  pipeline: RecordPipeline;
  metrics: NetMetrics;
  log: Logger;
  /** Kinds this node joined (others are not synced). */
  joined: readonly TopicKind[];
  /** Markets this node holds, sorted (a sharded kind is synced for these only). */
  shards: readonly string[];
  /** Kinds synced from each newly identified peer (`[]`: none). */
  syncKinds: readonly TopicKind[];
  /** Records asked per kind. */
  syncLimit: number;
  /** Hand accepted records to the subscribers (node.ts's accept). */
  accept: (fresh: ValidationOutcome['fresh'], from: string, source: 'sync', attachments: Opened[]) => void;
  /** What this node holds (a sync's digest names it, so it is not sent back: sync-digest.ts). */
  source: RecordSource;
  clock: Clock;
  /**
   * Whether a peer has an open connection (libp2p's getConnections). The sync on connect asks it before each request,
   * so it never dials: a peer that left before its sync ran (a provider's short connection to deliver an offer) is
   * not called back to be synced; its next connection syncs instead.
   */
  connected: (peer: string) => boolean;
  /** Outcome catch-up after this node was away (default none). */
  catchUp?: CatchUpOptions;
}

/** A sync on connect whose peer left before a request: the requests not made are reported failed with this code. */
export const SYNC_PEER_GONE = 'NET_PEER_GONE';

export class RecordsSync {
  /** Peers identified speaking records/1 and still connected (each synced on connect once), by key. */
  readonly #synced = new Map<string, PeerId>();
  readonly #shardSet: Set<string>;
  /** Outcome catch-up: since when this node may lack outcomes (a gap not yet caught up on), else undefined. */
  #gapFrom: number | undefined;
  /** The catch-up window open now: peers identified until `until` are asked for what was taken since `since`. */
  #window: { since: number; until: number; asked: Set<string> } | undefined;
  /** The outcome catch-ups, in turn: the last one's turn, which the next peer's waits for (onIdentify). */
  #turn: Promise<void> = Promise.resolve();
  /** When this node's event loop last ran its tick (tick(), every ALIVE_TICK_MS): where a gap opened on losing every peer begins. */
  #aliveAt: number | undefined;

  constructor(private readonly d: RecordsSyncDeps) {
    this.#shardSet = new Set(d.shards);
    this.#gapFrom = d.catchUp?.from;
  }

  /** The kinds an outcome catch-up asks for: `catchUp.kinds` this node joined (and receives). */
  get catchUpKinds(): TopicKind[] {
    return (this.d.catchUp?.kinds ?? []).filter((k) => this.d.joined.includes(k));
  }

  /** Since when a peer identified now is asked for outcomes (undefined: not asked); a gap open opens the window. */
  #catchUpSince(peer: string): number | undefined {
    const c = this.d.catchUp;
    if (!c || !this.catchUpKinds.length) return undefined;
    const now = this.d.clock();
    if (this.#gapFrom !== undefined) {
      this.#window = { since: Math.max(this.#gapFrom, now - (c.maxAgeMs ?? CATCH_UP_DEFAULTS.maxAgeMs), 0), until: now + (c.windowMs ?? CATCH_UP_DEFAULTS.windowMs), asked: new Set() };
      this.#gapFrom = undefined;
    }
    if (!this.#window || now > this.#window.until || this.#window.asked.has(peer)) return undefined;
    // once per peer in a window, whether or not it stayed connected: a peer that reconnects is not asked again
    // (second-round review s42 R6 F2: a peer reconnecting 30 times in a window was asked 30 times)
    this.#window.asked.add(peer);
    return this.#window.since;
  }

  /** Serve records/1 from `source`; a request refused for the peer's byte budget counts against its abuse score. */
  async serve(source: RecordSource, clock: Clock, options: Partial<RecordsServeOptions> | undefined, mono?: Clock): Promise<void> {
    await this.d.direct.serve(PROTOCOLS.records, recordsHandler(source, clock, options, (p) => this.d.pipeline.guard.blame(p), mono, (p) => this.d.pipeline.guard.strike(p)));
  }

  async fetch(peer: PeerId | Multiaddr, addresses: string[], type?: string): Promise<Opened[]> {
    const d = this.d;
    if (!addresses.every(isAddress)) throw new C0Error('ADDRESS_MALFORMED', 'fetchRecords: addresses must be sha256:<hex>', { field: 'addresses' });
    const want = new Set(addresses);
    // each address asked once, and no more frames than that: a peer cannot make this node hold more than it wanted
    const frames = await d.direct.call(peer, PROTOCOLS.records, [encodeRecordsRequest({ op: 'get', addresses: [...want] })], { limits: { maxResponseFrames: want.size } });
    const out: Opened[] = [];
    for (const f of frames) {
      const label = { source: 'fetch', kind: 'any' };
      if (!(f instanceof Uint8Array) || !want.has(hashHex(f))) {
        d.metrics.records.inc({ ...label, verdict: 'reject', reason: 'NOT_REQUESTED' });
        continue;
      }
      try {
        const rec = d.pipeline.checkFetched(f, type);
        want.delete(rec.address);
        d.metrics.records.inc({ ...label, verdict: 'accept', reason: 'ok' });
        out.push(rec);
      } catch (e) {
        d.metrics.records.inc({ ...label, verdict: 'reject', reason: (e as C0Error).code ?? 'INTERNAL' });
      }
    }
    return out;
  }

  /**
   * Sync `kinds` from a peer. `whileConnected` (the sync on connect): each request goes over the connection there is,
   * never a new one; once the peer has gone, the kinds not asked are reported failed with SYNC_PEER_GONE.
   */
  async sync(p: PeerId | Multiaddr, kinds: readonly TopicKind[] = this.d.syncKinds, opts: { whileConnected?: boolean; since?: Partial<Record<TopicKind, number>> } = {}): Promise<SyncResult> {
    const d = this.d;
    const from = peerKey(p);
    const res: SyncResult = { accepted: 0, ignored: 0, rejected: 0, failed: {} };
    // why no more is asked of this peer: it refused us for its byte budget (asking again now would only be refused,
    // and charged to our abuse score there), or it has gone (whileConnected)
    let stop: string | undefined;
    for (const kind of kinds) {
      if (!d.joined.includes(kind)) continue;
      if (stop) {
        res.failed[kind] = stop;
        continue;
      }
      // gone already: not even the digest is worth making
      if (opts.whileConnected && !d.connected(from)) {
        stop = this.#gone(res, kind);
        continue;
      }
      let frames: CborValue[];
      const since = opts.since?.[kind];
      try {
        // a sharded kind: only the markets this node holds (docs/network.md §14); a selection or an acceptance does not
        // name its market (it is held on no shard), so it is asked for and filtered by none
        const byMarket = placementCheckable(kind);
        const only = byMarket && d.shards.length < ALL_SHARDS.length ? { shards: [...d.shards] } : {};
        // the digest: what this node holds is not sent back (sync-digest.ts)
        // with `since` (an outcome catch-up), what it holds of what it asks: taken since then
        const have = digestOf(await d.source.live(kind, d.clock(), d.syncLimit, byMarket ? this.#shardSet : undefined, since));
        // and again after the last await before the request: the call below then finds the connection it was checked
        // for (libp2p looks for an existing connection with no await between)
        if (opts.whileConnected && !d.connected(from)) {
          stop = this.#gone(res, kind);
          continue;
        }
        // at most the records asked for, and the call's byte bound (protocols.ts): a peer that answers with more fails the call
        frames = await d.direct.call(p, PROTOCOLS.records, [encodeRecordsRequest({ op: 'live', kind, limit: d.syncLimit, ...only, have, ...(since !== undefined ? { since } : {}) })], { limits: { maxResponseFrames: d.syncLimit } });
      } catch (e) {
        res.failed[kind] = (e as C0Error).code ?? 'INTERNAL';
        if (res.failed[kind] === RECORDS_RATE_LIMITED) stop = RECORDS_RATE_LIMITED;
        d.metrics.syncs.inc({ outcome: 'failed' });
        continue;
      }
      for (const f of frames) {
        if (!(f instanceof Uint8Array)) {
          res.rejected++;
          d.metrics.records.inc({ source: 'sync', kind, verdict: 'reject', reason: 'NOT_BYTES' });
          continue;
        }
        // a peer that does not filter by market (an older version) may answer with others: not delivered
        await this.#take(kind, f, from, res, (out) => !(placementCheckable(kind) && out.primary && !heldShards(kind, out.primary.record).some((sh) => this.#shardSet.has(sh))), since !== undefined);
      }
      d.metrics.syncs.inc({ outcome: 'ok' });
    }
    return res;
  }

  /**
   * Ask a peer for the records of `kinds` naming `jobs` (records/1 `jobs`, MAX_JOBS a request, the requests one after
   * another), each through the gossip pipeline as a sync's; a record that names no job asked is not delivered (counted
   * ignored). Kinds this node did not join are not asked. A failed request is reported per kind asked (a peer before
   * this op answers NET_BAD_REQUEST), and after one no more are made.
   */
  async syncJobs(p: PeerId | Multiaddr, kinds: readonly TopicKind[], jobs: readonly string[]): Promise<SyncResult> {
    const d = this.d;
    const from = peerKey(p);
    const res: SyncResult = { accepted: 0, ignored: 0, rejected: 0, failed: {} };
    const asked = [...new Set(kinds)].filter((k) => d.joined.includes(k) && BY_JOB_KINDS.includes(k));
    const all = [...new Set(jobs)];
    if (!all.every(isAddress)) throw new C0Error('ADDRESS_MALFORMED', 'syncJobs: jobs must be sha256:<hex>', { field: 'jobs' });
    const byType = new Map<string, TopicKind>(asked.map((k) => [TOPIC_TYPES[k], k]));
    for (let i = 0; asked.length && i < all.length; i += MAX_JOBS) {
      const chunk = all.slice(i, i + MAX_JOBS);
      let frames: CborValue[];
      try {
        frames = await d.direct.call(p, PROTOCOLS.records, [encodeRecordsRequest({ op: 'jobs', kinds: asked, jobs: chunk })], { limits: { maxResponseFrames: MAX_LIVE } });
      } catch (e) {
        for (const k of asked) res.failed[k] = (e as C0Error).code ?? 'INTERNAL';
        d.metrics.syncs.inc({ outcome: 'failed' });
        break;
      }
      const want = new Set(chunk);
      for (const f of frames) {
        let kind: TopicKind | undefined;
        try {
          kind = f instanceof Uint8Array ? byType.get(peekType(f).type) : undefined;
        } catch {
          kind = undefined;
        }
        if (!kind) {
          res.rejected++;
          d.metrics.records.inc({ source: 'sync', kind: 'any', verdict: 'reject', reason: 'NOT_ASKED' });
          continue;
        }
        await this.#take(kind, f as Uint8Array, from, res, (out) => {
          const job = (out.primary?.record as { job?: unknown } | undefined)?.job;
          return typeof job === 'string' && want.has(job);
        });
      }
      d.metrics.syncs.inc({ outcome: 'ok' });
    }
    return res;
  }

  /**
   * One record a sync brought, through the gossip pipeline as a sync's: accepted and delivered when `keep` says so of
   * the accepted outcome (else counted ignored), counted rejected or ignored otherwise. `history`: an outcome
   * catch-up's, not held to its signer's live rate (RecordPipeline.validate).
   */
  async #take(kind: TopicKind, f: Uint8Array, from: string, res: SyncResult, keep: (out: ValidationOutcome) => boolean, history = false): Promise<void> {
    const out = await this.d.pipeline.validate(kind, f, from, 'sync', { history });
    if (out.verdict === 'accept' && keep(out)) {
      res.accepted++;
      this.d.accept(out.fresh, from, 'sync', out.attachments ?? []);
    } else if (out.verdict === 'reject') res.rejected++;
    else res.ignored++;
  }

  /** The peer of a sync on connect has gone: this kind is not asked (nor any after it), counted as `gone`. */
  #gone(res: SyncResult, kind: TopicKind): string {
    res.failed[kind] = SYNC_PEER_GONE;
    this.d.metrics.syncs.inc({ outcome: 'gone' });
    return SYNC_PEER_GONE;
  }

  /**
   * A newly identified peer: sync from it once while connected, when it speaks records/1: `syncOnConnect`, and in a
   * catch-up window the outcome kinds since the gap opened. The catch-ups go one peer after another (`#catchUps`):
   * each asks with the digest of what the ones before brought, so a second peer sends only what the first did not.
   * Before (second-round review s42 R1 F2, F3), 20 peers identified together were each asked with the same empty
   * digest and each sent the whole gap (19 copies of every outcome), and a signer's outcomes past its sync budget were
   * refused from every copy at once, so none came later. A peer still answering CATCH_UP_TURN_MS after its turn began
   * lets the next one start (a peer that never answers would hold the others back 10 s a kind). A peer whose own sync was refused
   * for its byte budget is not asked for the catch-up (it would refuse again, and charge this node there).
   */
  onIdentify(peerId: PeerId, protocols: readonly string[]): void {
    const key = peerId.toString();
    if (this.#synced.has(key) || !protocols.includes(PROTOCOLS.records)) return;
    this.#synced.set(key, peerId);
    const since = this.#catchUpSince(key);
    const catchUp = since === undefined ? [] : this.catchUpKinds.filter((k) => !this.d.syncKinds.includes(k));
    if (!this.d.syncKinds.length && !catchUp.length) return;
    const first = this.d.syncKinds.length ? this.sync(peerId, this.d.syncKinds, { whileConnected: true }) : Promise.resolve(undefined);
    void first.then(
      (r) => r && this.d.log.debug({ peer: key, ...r }, 'synced from peer'),
      (e: unknown) => this.d.log.debug({ peer: key, err: (e as Error).message }, 'sync from peer failed'),
    );
    if (catchUp.length) this.#catchUp(peerId, key, since!, catchUp, first);
  }

  /**
   * A gap opened while peers are connected (the store reopened after failed writes: outcomes accepted meanwhile were not
   * kept, docs/network.md §5): from `from`, or from an earlier gap not yet asked for. The peers connected now are asked
   * in turn, each once, as the peers identified after a start are (their sync on connect is not made again); a peer
   * identified later in the window is asked too. A window still open has asked its peers already: the new one starts
   * at `from`, not at its start (a narrower `since` keeps the digest, at most `syncLimit` records, to what is in the gap).
   */
  openGap(from: number): void {
    if (!this.d.catchUp || !this.catchUpKinds.length) return;
    this.#gapFrom = Math.min(from, this.#gapFrom ?? from);
    for (const [key, peerId] of this.#synced) {
      const since = this.#catchUpSince(key);
      const kinds = this.catchUpKinds.filter((k) => !this.d.syncKinds.includes(k));
      if (since !== undefined && kinds.length) this.#catchUp(peerId, key, since, kinds, Promise.resolve(undefined));
    }
  }

  /** One peer's outcome catch-up of `kinds` since `since`, in its turn (onIdentify), after its sync on connect (`first`). */
  #catchUp(peerId: PeerId, key: string, since: number, catchUp: TopicKind[], first: Promise<SyncResult | undefined>): void {
    const at = Object.fromEntries(catchUp.map((k) => [k, since]));
    // this peer's turn: once the one before has answered, or CATCH_UP_TURN_MS after its turn began, whichever is first;
    // the next peer's turn begins when this one's ends the same way (its own wait for its sync on connect included)
    const before = this.#turn;
    let release!: () => void;
    this.#turn = new Promise<void>((resolve) => (release = resolve));
    void before.then(async () => {
      const turnEnds = setTimeout(release, CATCH_UP_TURN_MS);
      turnEnds.unref?.();
      try {
        const r = await first.catch(() => undefined);
        if (r && Object.values(r.failed).includes(RECORDS_RATE_LIMITED)) return;
        const c = await this.sync(peerId, catchUp, { whileConnected: true, since: at });
        if (c.accepted) this.d.log.info({ peer: key, since, ...c }, 'caught up on outcomes missed while away');
        else this.d.log.debug({ peer: key, since, ...c }, 'asked a peer for outcomes missed while away: nothing new');
      } catch (e) {
        this.d.log.debug({ peer: key, err: (e as Error).message }, 'outcome catch-up from peer failed');
      } finally {
        clearTimeout(turnEnds);
        release();
      }
    });
  }

  /** The node's event loop ran (the network calls it every ALIVE_TICK_MS while started): it was hearing its peers until now. */
  tick(): void {
    this.#aliveAt = this.d.clock();
  }

  /**
   * A peer disconnected: the next connection syncs again. The last one gone opens an outcome gap, from the last tick
   * (when the node was last known to run; now, before the first), less a margin. Not from when the disconnect is
   * noticed: a node frozen for minutes (SIGSTOP, a VM paused, a laptop asleep) notices its peers gone only once it runs
   * again, before its overdue timers, and a gap from then left every outcome of the freeze but its last minute uncaught
   * for good (review s43 R5 F1: 3 minutes frozen, the catch-up asked from the resume less 60 s, 7-8 jobs' outcomes never
   * caught). A running node's last tick is at most ALIVE_TICK_MS (plus its loop's lag) ago: the gap is that much longer.
   */
  onDisconnect(peer: string): void {
    if (!this.#synced.delete(peer) || this.#synced.size || !this.d.catchUp || this.#gapFrom !== undefined) return;
    const now = this.d.clock();
    const heard = Math.min(now, this.#aliveAt ?? now);
    // a window still open was perhaps not served in full: the new gap reaches back to its start
    const from = heard - (this.d.catchUp.marginMs ?? CATCH_UP_DEFAULTS.marginMs);
    this.#gapFrom = this.#window && now <= this.#window.until ? Math.min(this.#window.since, from) : from;
  }
}
