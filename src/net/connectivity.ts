/**
 * Connectivity: nodes find each other again (docs/network.md "Reconnection and
 * liveness"; spec/network.md §peers). libp2p itself never redials a lost peer
 * for good (its reconnect queue gives up after a few tries and only for
 * KEEP_ALIVE peers), so this module keeps a minimum set of connections:
 *
 *  - bootstrap peers and remembered peers (c0mpute nodes this node exchanged
 *    records with, kept in memory and, with a store, across restarts) are
 *    redialled with capped exponential backoff and jitter, forever while the
 *    node runs;
 *  - below `minPeers` connections, the DHT is asked for more peers.
 *
 * The schedule (`backoffDelay`, `ReconnectSchedule`) is pure and takes its clock
 * and randomness from the caller; `Connectivity` drives it from a timer against
 * a small host interface (libp2p in node.ts, a fake in unit tests). The timer is
 * adaptive (docs/scale.md "Idle cost"): every `tickMs` while something is to be
 * done, at the earliest target's due time, and every `idleTickMs` when every
 * target is connected; a lost peer (`wake()`) checks at once.
 */
import { constants as fsConstants, copyFileSync, lstatSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { writeFileAtomic } from '../util/atomic-file.js';
import type { Logger } from '../util/log.js';
import { monotonicClock, systemClock, type Clock } from '../util/clock.js';
import { PeerLog } from '../util/peer-log.js';

export interface BackoffPolicy {
  /** Delay before the first redial after a loss, ms. */
  initialMs: number;
  /** Cap on any delay, ms. */
  maxMs: number;
  /** Growth per consecutive failure. */
  factor: number;
  /** Relative jitter, 0..1: a delay d becomes d × (1 ± jitter), never above maxMs. */
  jitter: number;
}

export const CONNECTIVITY_DEFAULTS = {
  /** Below this many connected peers the DHT is asked for more. */
  minPeers: 3,
  /** How often targets are checked while one is down, due or being dialled, or the node is below minPeers, ms. */
  tickMs: 500,
  /** How often targets are checked when every one is connected and the node has minPeers (a safety net: a lost peer wakes the check at once), ms. */
  idleTickMs: 5_000,
  /** Bootstrap peers: redialled quickly (a restarted peer is found again within seconds). */
  bootstrap: { initialMs: 250, maxMs: 4_000, factor: 2, jitter: 0.25 } as BackoffPolicy,
  /** Remembered peers: slower, they may be gone for good. */
  remembered: { initialMs: 1_000, maxMs: 30_000, factor: 2, jitter: 0.25 } as BackoffPolicy,
  /** Remembered peers kept (least recently useful dropped first). */
  rememberMax: 32,
  /** Addresses kept per remembered peer: the one this node last reached it on first, then the rest in the order it announced them. */
  rememberAddrs: 8,
  /**
   * A remembered peer not useful for this long is forgotten once `forgetIdleAfterFailures` redials in a row failed, ms
   * (7 days). A peer is useful while it is connected: its stamp is renewed every `usefulEveryMs` then.
   */
  forgetAfterMs: 7 * 24 * 3_600_000,
  /** Failed redials in a row before a peer idle for `forgetAfterMs` is forgotten (about 4 minutes at the backoff's 30 s cap). */
  forgetIdleAfterFailures: 10,
  /**
   * A remembered peer not useful for this long is forgotten once `forgetRefusedAfterFailures` redials in a row found
   * every one of its addresses refused (nothing listens there: a one-shot node's port, a node moved), ms (1 hour).
   */
  forgetRefusedAfterMs: 3_600_000,
  /** Redials in a row with every address refused before a peer idle for `forgetRefusedAfterMs` is forgotten (counted across restarts). */
  forgetRefusedAfterFailures: 10,
  /** While a remembered peer is connected its `lastUsefulAt` is renewed this often, ms (saved with the next write). */
  usefulEveryMs: 3_600_000,
  /**
   * A remembered peer is *established* once it has stayed connected this long, ms (5 minutes; sampled at each tick):
   * two short visits five minutes apart do not make one (review s56). Over the cap, newcomers go before established peers, and
   * at most half the entries may be newcomers (QA ffNetDay2 F3: 34 keys that connected once for a second each pushed
   * every peer not connected at that moment out of the list).
   */
  establishedAfterMs: 5 * 60_000,
  /** A remembered peer is forgotten after this many consecutive failed redials (counted across restarts; a failure while this node has no connection at all is not counted). */
  forgetAfterFailures: 120,
  /** Failure counts are written to the store at most this often (and at stop), ms. */
  saveEveryMs: 60_000,
  /** DHT look-ups while below minPeers: 1 s after one that found a new peer, else backing off from 2 s to this, ms. */
  discoverEveryMs: 30_000,
  /**
   * One address's deadline, ms: a peer's addresses are dialled one after another, each with this deadline (libp2p's own
   * per-address deadline is the same, ADDRESS_DIAL_TIMEOUT_MS in libp2p-host.ts).
   */
  dialTimeoutMs: 5_000,
  /** A dial of a peer's addresses gives up after this many silent ones (deadline reached); those go to the back of a remembered peer's list, so the next dial starts with the others. */
  silentAddrsPerDial: 2,
};

export type ConnectivityOptions = typeof CONNECTIVITY_DEFAULTS;

/**
 * Delay before the next dial after `failures` consecutive failed dials (0 = the
 * peer was just lost). `rand` in [0, 1). Never grows past `maxMs`: a peer is
 * tried at least every `maxMs` however long it has been away.
 */
export function backoffDelay(failures: number, p: BackoffPolicy, rand: number): number {
  const raw = Math.min(p.maxMs, p.initialMs * Math.pow(p.factor, Math.min(Math.max(0, failures), 64)));
  const jittered = raw * (1 + p.jitter * (2 * rand - 1));
  return Math.max(0, Math.min(p.maxMs, Math.round(jittered)));
}

interface TargetState {
  connected: boolean;
  failures: number;
  nextAt: number;
}

/** When each target is due for a dial. Pure: time and randomness come from the caller. */
export class ReconnectSchedule {
  #s = new Map<string, TargetState>();
  constructor(private policy: (key: string) => BackoffPolicy, private rand: () => number = Math.random) {}

  /** Seen connected: the next loss is redialled after the initial delay. */
  connected(key: string): void {
    this.#s.set(key, { connected: true, failures: 0, nextAt: 0 });
  }

  /** Seen without a connection: a target lost just now (or never seen) becomes due after the initial delay; `immediately` for the first dial at start. */
  disconnected(key: string, now: number, immediately = false): void {
    const s = this.#s.get(key);
    if (s && !s.connected) return;
    this.#s.set(key, { connected: false, failures: 0, nextAt: immediately ? now : now + backoffDelay(0, this.policy(key), this.rand()) });
  }

  /** A dial failed: the next one after the backoff. Never gives up. */
  failed(key: string, now: number): number {
    const s = this.#s.get(key) ?? { connected: false, failures: 0, nextAt: now };
    s.connected = false;
    s.failures++;
    const d = backoffDelay(s.failures, this.policy(key), this.rand());
    s.nextAt = now + d;
    this.#s.set(key, s);
    return d;
  }

  due(key: string, now: number): boolean {
    const s = this.#s.get(key);
    return !!s && !s.connected && now >= s.nextAt;
  }

  failures(key: string): number {
    return this.#s.get(key)?.failures ?? 0;
  }

  nextAt(key: string): number | undefined {
    return this.#s.get(key)?.nextAt;
  }

  forget(key: string): void {
    this.#s.delete(key);
  }
}

export interface DialTarget {
  /** Peer id string, when known (bootstrap addresses carry it in /p2p/). */
  peerId?: string;
  /** Multiaddrs to dial (with /p2p/ when the peer id is known). */
  addrs: string[];
}

/** What the manager needs from the node (libp2p in node.ts, a fake in tests). */
export interface ConnectivityHost {
  /** Connected to this peer (any open connection)? */
  isConnected(peerId: string): boolean;
  /** Peers with an open connection. */
  peerCount(): number;
  /** Their ids (to tell the peers a DHT look-up connected from those connected before). */
  connectedPeers?(): string[];
  /** Dial; resolves to the remote peer id. */
  dial(t: DialTarget, timeoutMs: number): Promise<string>;
  /** Ask the DHT for peers near a random key (at most `max`). */
  discover?(max: number, timeoutMs: number): Promise<DialTarget[]>;
  /**
   * Does this node refuse the peer right now (banned for abuse: peer-abuse.ts)? Such a peer is neither dialled (the
   * gater would refuse the dial: a failure counted and logged for nothing) nor remembered.
   */
  refused?(peerId: string): boolean;
}

export interface RememberedPeer {
  peerId: string;
  addrs: string[];
  /**
   * When it was last useful (identified as a c0mpute node of this overlay): wall-clock ms since the epoch, so values
   * written by different runs compare. (A file written by a build that stamped it with the monotonic clock holds small,
   * process-relative numbers; such entries are kept, and the next time the peer is useful it gets a wall time.)
   */
  lastUsefulAt: number;
  /** Consecutive failed redials since it was last useful, counted across restarts (absent: none; files before it have none). */
  failures?: number;
  /**
   * Present while it is a newcomer: the wall-clock time it was first remembered, ms. Dropped once it has stayed
   * connected `establishedAfterMs` (established). An entry from a file before it has none: established.
   */
  newSince?: number;
  /** Of those, the latest in a row that found every address refused (absent: none), counted across restarts. */
  refused?: number;
}

/** Where remembered peers survive a restart (a JSON file in the data dir; none in tests). */
export interface RememberStore {
  /** `log`: where a damaged or unreadable store is said. */
  load(log?: Logger): RememberedPeer[];
  save(peers: RememberedPeer[], log?: Logger): void;
}

/** A remembered peer as the file holds it: the fields and types `load` keeps. */
function wellFormed(p: unknown): p is RememberedPeer {
  const e = p as Partial<RememberedPeer> | null;
  return (
    typeof e === 'object' &&
    e !== null &&
    typeof e.peerId === 'string' &&
    Array.isArray(e.addrs) &&
    e.addrs.every((a) => typeof a === 'string') &&
    typeof e.lastUsefulAt === 'number' &&
    (e.failures === undefined || typeof e.failures === 'number') &&
    (e.refused === undefined || typeof e.refused === 'number') &&
    (e.newSince === undefined || typeof e.newSince === 'number')
  );
}

/** Whether a name is taken, by anything: a dangling link too (existsSync follows it and says no). */
function taken(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * A JSON file store (written atomically: synced, then renamed over the file). A missing or empty file is an empty
 * list. A file the store cannot take whole is kept aside as `<file>.damaged-<time>` before anything is written over
 * it (moved; copied when entries are kept from it, and the kept ones written at once, so they are on disk if this run
 * never saves and the next start does not copy it again), and said: one that is not the store's JSON (truncated by a crash or a full disk, edited by hand; WARN
 * `NET_PEERS_FILE_DAMAGED`), one with entries of the wrong shape (a newer build's, edited by hand; the others are kept,
 * WARN `NET_PEERS_FILE_ENTRIES_DROPPED`), one that cannot be read (WARN `NET_PEERS_FILE_UNREADABLE`). With the
 * bootstrap peers down this file is the node's only way back to the network, so it is kept for the operator, never
 * overwritten: where it cannot be kept aside, the store leaves it as it is and writes nothing this run (the peers
 * stay remembered in memory; `notMoved` in the WARN). A save that fails is a WARN (`NET_PEERS_FILE_UNWRITABLE`) once,
 * and again after a save that worked (QA ffNetDay2 F2: every one of these was silent, and a damaged file was replaced
 * by the peers of the new run).
 */
export function fileRememberStore(path: string, opts: { clock?: () => number } = {}): RememberStore {
  let saveFailed = false;
  /** The file was not taken whole and could not be moved aside: this run leaves it as it is. */
  let leaveFile = false;
  /**
   * Keeps the file aside under a name not taken (`<file>.damaged-<time>`, `-2`… when the clock repeats): moved, or
   * copied when entries are kept from it (`copy`; the kept ones are then written over it at once: held only in memory
   * until a save, which a node that crashes or changes nothing never makes, they were lost; review s57). `undefined`
   * when it could not be, and then nothing is written over the file this run.
   */
  const keepAside = (how: 'move' | 'copy'): string | undefined => {
    const stem = `${path}.damaged-${new Date((opts.clock ?? Date.now)()).toISOString().replace(/[:.]/g, '-')}`;
    let aside = stem;
    for (let n = 2; taken(aside); n++) aside = `${stem}-${n}`;
    try {
      if (how === 'move') renameSync(path, aside);
      else copyFileSync(path, aside, fsConstants.COPYFILE_EXCL);
      return aside;
    } catch {
      if (how === 'copy') rmSync(aside, { force: true }); // a copy cut short (a full disk) is no copy
      leaveFile = true;
      return undefined;
    }
  };
  const where = (aside: string | undefined) => (aside === undefined ? { notMoved: true } : { keptAs: aside });
  const fate = (aside: string | undefined) =>
    aside === undefined ? 'it could not be kept aside, so it is left as it is and not written this run' : 'the file as it was is kept aside';
  const save = (peers: RememberedPeer[], log?: Logger): void => {
    if (leaveFile) return;
    try {
      writeFileAtomic(path, JSON.stringify({ peers }, null, 1));
      if (saveFailed) log?.info({ file: path }, 'the remembered-peers file is written again');
      saveFailed = false;
    } catch (e) {
      // memory still holds them; said once until a save works again
      if (!saveFailed) log?.warn({ code: 'NET_PEERS_FILE_UNWRITABLE', file: path, err: (e as Error).message }, 'the remembered-peers file cannot be written: peers are remembered in memory only until it can');
      saveFailed = true;
    }
  };
  return {
    load(log) {
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return [];
        const aside = keepAside('move');
        log?.warn({ code: 'NET_PEERS_FILE_UNREADABLE', file: path, err: (e as Error).message, ...where(aside) }, `the remembered-peers file cannot be read: starting with no remembered peer (${fate(aside)})`);
        return [];
      }
      if (text.trim() === '') return [];
      let peers: unknown[];
      try {
        const v = JSON.parse(text) as { peers?: unknown } | null;
        if (typeof v !== 'object' || v === null || Array.isArray(v) || (v.peers !== undefined && !Array.isArray(v.peers))) throw new Error('not an object with a "peers" list');
        peers = (v.peers as unknown[] | undefined) ?? [];
      } catch (e) {
        const aside = keepAside('move');
        log?.warn(
          { code: 'NET_PEERS_FILE_DAMAGED', file: path, err: (e as Error).message.slice(0, 200), ...where(aside), bytes: text.length },
          `the remembered-peers file is damaged: starting with no remembered peer, bootstrap peers are dialled as usual (${fate(aside)})`,
        );
        return [];
      }
      const kept = peers.filter(wellFormed);
      if (kept.length < peers.length) {
        const aside = keepAside('copy');
        // the file holds only what was kept from now on, so the next start does not copy it aside again
        if (aside !== undefined) save(kept, log);
        log?.warn(
          { code: 'NET_PEERS_FILE_ENTRIES_DROPPED', file: path, dropped: peers.length - kept.length, kept: kept.length, ...where(aside) },
          `remembered-peers file: entries of the wrong shape left out (${fate(aside)})`,
        );
      }
      return kept;
    },
    save,
  };
}

export interface BootstrapState {
  addr: string;
  peerId?: string;
  connected: boolean;
  /** Consecutive failed dials since the last success. */
  failures: number;
  /** The last failure, as a stable code and a message. */
  lastError?: { code: string; message: string };
}

export interface ConnectivityStatus {
  peers: number;
  bootstrap: BootstrapState[];
  remembered: number;
}

/** A dial error as a stable code: a PeerId that does not match the address's key is an operator's typo, not an outage. */
export function classifyDialError(e: unknown): { code: string; message: string } {
  const err = e as Error & { code?: string };
  const msg = (err.message ?? String(e)).slice(0, 300);
  if (err.name === 'UnexpectedPeerError' || /unexpected peer|does not match|payload identity key|peer id mismatch/i.test(msg)) return { code: 'NET_PEER_ID_MISMATCH', message: msg };
  if (/ECONNREFUSED|connection refused/i.test(msg)) return { code: 'NET_CONNECTION_REFUSED', message: msg };
  if (err.name === 'TimeoutError' || err.name === 'AbortError' || /timed? ?out|aborted/i.test(msg)) return { code: 'NET_DIAL_TIMEOUT', message: msg };
  if (/decrypt|handshake|noise/i.test(msg)) return { code: 'NET_HANDSHAKE_FAILED', message: msg };
  return { code: 'NET_DIAL_FAILED', message: msg };
}

function peerIdOf(addr: string): string | undefined {
  const m = /\/p2p\/([^/]+)$/.exec(addr);
  return m?.[1];
}

/** An address without its trailing /p2p/<id> (remembered addresses are stored bare; the dial appends the id). */
function bare(addr: string): string {
  return addr.replace(/\/p2p\/[^/]+$/, '');
}

/** Wall-clock stamps below this (2001) were written by a build that used the monotonic clock. */
const WALL_CLOCK_MIN = 1e12;

export interface ConnectivityDeps {
  host: ConnectivityHost;
  bootstrap: string[];
  options?: Partial<ConnectivityOptions>;
  store?: RememberStore;
  /** Wall clock (default Date.now): only for `lastUsefulAt`, which is stored and read again after a restart. */
  clock?: Clock;
  /** Monotonic clock for the redial and discovery backoff (default performance.now): a wall-clock step delays no redial. */
  monoClock?: Clock;
  rand?: () => number;
  log: Logger;
  /** Called after each dial attempt (metrics). */
  onDial?: (kind: 'bootstrap' | 'remembered' | 'discovered', ok: boolean) => void;
}

export class Connectivity {
  readonly opts: ConnectivityOptions;
  readonly schedule: ReconnectSchedule;
  #boot: Array<{ addr: string; key: string; peerId?: string; lastError?: { code: string; message: string } }>;
  #remembered = new Map<string, RememberedPeer>();
  /** Since when (monotonic) each remembered newcomer's connection has been seen by every tick: it is established at `establishedAfterMs`. */
  #connectedSince = new Map<string, number>();
  /** Each remembered peer's addresses as the store held them at start (`knownAddrs`), whatever identify says since. */
  #loaded = new Map<string, string[]>();
  #inflight = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #nextDiscoverAt = -Infinity;
  #discoverFailures = 0;
  #discovering = false;
  /** Monotonic: every schedule and backoff. */
  #clock: Clock;
  /** Wall: only what is stored (lastUsefulAt). */
  #wall: Clock;
  #running = false;
  #stopped = false;
  /** Failure counts changed since the store was last written; when it was, monotonic ms. */
  #dirty = false;
  #savedAt = -Infinity;

  /**
   * The first unreachability of remembered peers: one info line in full, then at most one a minute with the count
   * (PeerLog). Any peer that completed identify is remembered, so before (review s42 R5 F1) throwaway keys that
   * connected and left made one ~0.5 KB info line each, ~2.6 KB/s from one IP at libp2p's inbound rate.
   */
  readonly #unreachable: PeerLog;

  constructor(private d: ConnectivityDeps) {
    this.#unreachable = new PeerLog({ log: d.log, level: 'info', ...(d.monoClock ? { clock: d.monoClock } : {}) });
    this.opts = { ...CONNECTIVITY_DEFAULTS, ...d.options };
    this.#clock = d.monoClock ?? monotonicClock;
    this.#wall = d.clock ?? systemClock;
    const bootKeys = new Set<string>();
    this.#boot = d.bootstrap.map((addr) => {
      const peerId = peerIdOf(addr);
      const key = peerId ?? addr;
      bootKeys.add(key);
      return { addr, key, ...(peerId ? { peerId } : {}) };
    });
    this.schedule = new ReconnectSchedule((key) => (bootKeys.has(key) ? this.opts.bootstrap : this.opts.remembered), d.rand);
    const wall = this.#wall();
    for (const p of d.store?.load(d.log) ?? []) {
      // Older files: any number of addresses, and possibly a monotonic stamp (counted from now: the peer gets the full forgetAfterMs).
      const addrs = [...new Set(p.addrs.map(bare))].slice(0, this.opts.rememberAddrs);
      this.#loaded.set(p.peerId, addrs);
      this.#remembered.set(p.peerId, { peerId: p.peerId, addrs, lastUsefulAt: p.lastUsefulAt < WALL_CLOCK_MIN ? wall : p.lastUsefulAt, ...(p.failures ? { failures: p.failures } : {}), ...(p.failures && p.refused ? { refused: p.refused } : {}), ...(p.newSince !== undefined && p.newSince >= WALL_CLOCK_MIN ? { newSince: p.newSince } : {}) });
    }
    this.#trim();
  }

  /** Start the timer; the first tick dials every bootstrap and remembered peer at once. */
  start(): void {
    const now = this.#clock();
    for (const b of this.#boot) this.schedule.disconnected(b.key, now, true);
    for (const p of this.#remembered.values()) this.schedule.disconnected(p.peerId, now, true);
    this.#running = true;
    this.#stopped = false;
    this.#run();
  }

  stop(): void {
    this.#running = false;
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#dirty) this.#save();
    this.#unreachable.stop();
  }

  /** Something changed (a peer disconnected): check now instead of at the next scheduled pass. */
  wake(): void {
    if (!this.#running) return;
    this.#arm(0);
  }

  #arm(ms: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#run(), ms);
    this.#timer.unref();
  }

  /** A pass does not wait for its dials (one to a peer with several silent addresses takes several dial deadlines): a target being dialled is skipped until its dial ends. */
  #run(): void {
    this.#timer = undefined;
    void this.#pass();
    if (!this.#running) return;
    this.#arm(this.nextDelay(this.#clock()));
  }

  /**
   * How long until the next pass is needed, ms, within [tickMs, idleTickMs]: the
   * earliest due time of a target not connected, or of the next DHT look-up
   * while below minPeers; `idleTickMs` when there is none. Exposed for tests.
   */
  nextDelay(now: number): number {
    let at = now + this.opts.idleTickMs;
    const pending = (key: string) => (this.#inflight.has(key) ? now : (this.schedule.nextAt(key) ?? now));
    const bootIds = new Set<string>();
    // a refused (banned) target is not dialled: nothing is due for it (its ban ends unnoticed for at most idleTickMs)
    const refused = (id: string | undefined): boolean => id !== undefined && (this.d.host.refused?.(id) ?? false);
    for (const b of this.#boot) {
      bootIds.add(b.key);
      if (!(b.peerId && this.d.host.isConnected(b.peerId)) && !refused(b.peerId)) at = Math.min(at, pending(b.key));
    }
    for (const p of this.#remembered.values()) if (!bootIds.has(p.peerId) && !this.d.host.isConnected(p.peerId) && !refused(p.peerId)) at = Math.min(at, pending(p.peerId));
    if (this.d.host.discover) {
      const count = this.d.host.peerCount();
      if (count > 0 && count < this.opts.minPeers) at = Math.min(at, this.#discovering ? now : this.#nextDiscoverAt);
    }
    return Math.max(this.opts.tickMs, Math.min(this.opts.idleTickMs, at - now));
  }

  /**
   * A peer proved useful (a c0mpute node of this overlay): remember where it listens, whichever side dialled. (Leaving
   * out peers that only dialled in, so a one-shot `c0mpute run` node's throwaway port is not redialled, broke pool
   * members finding a restarted member again: docs/network.md §11.)
   */
  noteUseful(peerId: string, addrs: string[], used?: string): void {
    if (!addrs.length && !used) return;
    // a peer this node refuses (banned for flooding) is not one worth reconnecting to (`forget`)
    if (this.d.host.refused?.(peerId)) return;
    const prev = this.#remembered.get(peerId);
    // At most rememberAddrs: the address this node reached it on (when it dialled), then those it announces in the order
    // they were kept (one a redial reached moved first), then new ones as announced. An address no longer announced is dropped.
    const announced = new Set(addrs.map(bare));
    const kept = [...new Set([...(used ? [bare(used)] : []), ...(prev?.addrs ?? []).filter((a) => announced.has(a)), ...announced])].slice(0, this.opts.rememberAddrs);
    const changed = !prev || prev.addrs.join(' ') !== kept.join(' ') || !!prev.failures;
    this.#remembered.delete(peerId);
    const wall = this.#wall();
    // first remembered now (a newcomer), or as before: established only by staying connected (tick)
    const newSince = prev ? prev.newSince : wall;
    this.#remembered.set(peerId, { peerId, addrs: kept, lastUsefulAt: wall, ...(newSince !== undefined ? { newSince } : {}) });
    this.schedule.connected(peerId);
    this.#trim();
    if (changed) this.#save();
  }

  /**
   * Forget a remembered peer at once, in memory and in the store (`why` for the log line): a peer banned for flooding
   * (peer-abuse.ts) is not redialled while banned, nor after a restart, when the ban, kept in memory only, is gone
   * (QA qaNet F3: the node redialled the flooder it had just banned, and again after a restart). A bootstrap entry
   * stays (the operator named it); it is not dialled while refused.
   */
  forget(peerId: string, why: string): void {
    const p = this.#remembered.get(peerId);
    this.#loaded.delete(peerId);
    if (!p) return;
    this.#remembered.delete(peerId);
    this.#connectedSince.delete(peerId);
    if (!this.#boot.some((b) => b.key === peerId)) this.schedule.forget(peerId);
    this.d.log.info({ peer: peerId, addr: p.addrs[0], why }, `remembered peer forgotten: ${why}`);
    this.#save();
  }

  /**
   * The addresses this node knows for a peer beside what its connections say: remembered now, then as the store held
   * them at start (an address another process of its key announced since replaced there: peer-conns.ts `altAddrs`).
   */
  knownAddrs(peerId: string): string[] {
    return [...new Set([...(this.#remembered.get(peerId)?.addrs ?? []), ...(this.#loaded.get(peerId) ?? [])])];
  }

  /** Remembered peers (least recently useful first). */
  remembered(): RememberedPeer[] {
    return [...this.#remembered.values()];
  }

  status(): ConnectivityStatus {
    return {
      peers: this.d.host.peerCount(),
      bootstrap: this.#boot.map((b) => ({
        addr: b.addr,
        ...(b.peerId ? { peerId: b.peerId } : {}),
        connected: b.peerId ? this.d.host.isConnected(b.peerId) : false,
        failures: this.schedule.failures(b.key),
        ...(b.lastError ? { lastError: b.lastError } : {}),
      })),
      remembered: this.#remembered.size,
    };
  }

  /** One pass: redial what is due, look for more peers when below the minimum; resolves when its dials have ended. Exposed for tests. */
  async tick(): Promise<void> {
    await this.#pass();
  }

  #pass(): Promise<void> {
    const now = this.#clock();
    const dials: Array<Promise<void>> = [];
    for (const b of this.#boot) {
      if (b.peerId && this.d.host.isConnected(b.peerId)) {
        this.schedule.connected(b.key);
        continue;
      }
      if (b.peerId && this.d.host.refused?.(b.peerId)) continue;
      this.schedule.disconnected(b.key, now);
      if (this.schedule.due(b.key, now) && !this.#inflight.has(b.key)) dials.push(this.#dial(b.key, { ...(b.peerId ? { peerId: b.peerId } : {}), addrs: [b.addr] }, 'bootstrap', b));
    }
    const bootIds = new Set(this.#boot.map((b) => b.key));
    for (const p of this.#remembered.values()) {
      if (bootIds.has(p.peerId)) continue;
      if (this.d.host.isConnected(p.peerId)) {
        this.schedule.connected(p.peerId);
        // useful while connected: a peer kept connected for a week is not idle for a week when its link first blips
        // (second-round review: it was forgotten at its first failed redial, by both sides, and never reconnected)
        const wall = this.#wall();
        if (wall - p.lastUsefulAt >= this.opts.usefulEveryMs) {
          p.lastUsefulAt = wall;
          this.#dirty = true;
        }
        // a newcomer that stayed connected establishedAfterMs (every tick since found it so): established (saved with
        // the next write); the span starts over at each disconnection a tick sees. Only newcomers are timed.
        if (p.newSince !== undefined) {
          const since = this.#connectedSince.get(p.peerId);
          if (since === undefined) this.#connectedSince.set(p.peerId, now);
          else if (now - since >= this.opts.establishedAfterMs) {
            delete p.newSince;
            this.#connectedSince.delete(p.peerId);
            this.#dirty = true;
          }
        }
        continue;
      }
      this.#connectedSince.delete(p.peerId);
      if (this.d.host.refused?.(p.peerId)) continue;
      this.schedule.disconnected(p.peerId, now);
      if (this.schedule.due(p.peerId, now) && !this.#inflight.has(p.peerId)) dials.push(this.#dial(p.peerId, { peerId: p.peerId, addrs: p.addrs.map((a) => `${a}/p2p/${p.peerId}`) }, 'remembered'));
    }
    if (this.#dirty && this.#clock() - this.#savedAt >= this.opts.saveEveryMs) this.#save();
    const count = this.d.host.peerCount();
    if (count > 0 && count < this.opts.minPeers && this.d.host.discover && !this.#discovering && now >= this.#nextDiscoverAt) {
      dials.push(this.#discover(this.opts.minPeers - count, this.d.host.connectedPeers?.() ?? []));
    }
    return Promise.all(dials).then(() => undefined);
  }

  /**
   * Dial a target's addresses one after another, each with the dial deadline, until one answers: libp2p tries a peer's
   * addresses in turn too, but with one deadline for the whole dial an address that accepts TCP and never answers (a
   * firewalled public address, a VPN or docker bridge address) used it all, and the next address was never tried.
   * Gives up after `silentAddrsPerDial` silent addresses (pushed to `silent`; a refused one costs nothing and does not
   * count). A failure is the first address's error. Resolves to the remote peer and the address that answered.
   */
  async #dialEach(t: DialTarget, silent: string[] = [], codes: string[] = []): Promise<{ remote: string; addr: string | undefined }> {
    if (t.addrs.length <= 1) {
      try {
        return { remote: await this.d.host.dial(t, this.opts.dialTimeoutMs), addr: t.addrs[0] };
      } catch (e) {
        codes.push(classifyDialError(e).code);
        throw e;
      }
    }
    let first: unknown;
    for (const addr of t.addrs) {
      try {
        return { remote: await this.d.host.dial({ ...t, addrs: [addr] }, this.opts.dialTimeoutMs), addr };
      } catch (e) {
        first ??= e;
        const code = classifyDialError(e).code;
        codes.push(code);
        if (code === 'NET_DIAL_TIMEOUT') silent.push(addr);
        if (this.#stopped || silent.length >= this.opts.silentAddrsPerDial) break;
      }
    }
    throw first;
  }

  #save(): void {
    this.#dirty = false;
    this.#savedAt = this.#clock();
    this.d.store?.save([...this.#remembered.values()], this.d.log);
  }

  /**
   * A redial of a remembered peer ended: the address that answered goes first, silent ones to the back; a failure
   * counts towards forgetting the peer.
   */
  #redialed(key: string, answered: string | undefined, silent: string[], t: DialTarget, allRefused = false): 'forgotten' | undefined {
    const p = this.#remembered.get(key);
    if (!p) return undefined;
    const ok = answered === undefined ? undefined : bare(answered);
    const late = new Set(silent.map(bare));
    const order = [...(ok !== undefined && p.addrs.includes(ok) ? [ok] : []), ...p.addrs.filter((a) => a !== ok && !late.has(a)), ...p.addrs.filter((a) => a !== ok && late.has(a))];
    const moved = order.join(' ') !== p.addrs.join(' ');
    p.addrs = order;
    if (answered !== undefined) {
      if (moved || p.failures) {
        delete p.failures;
        delete p.refused;
        this.#save();
      }
      return undefined;
    }
    if (moved) this.#dirty = true;
    // This node's own network may be what is down: a failure while it has no connection at all does not count.
    if (this.d.host.peerCount() === 0) return undefined;
    p.failures = (p.failures ?? 0) + 1;
    if (allRefused) p.refused = (p.refused ?? 0) + 1;
    else delete p.refused;
    this.#dirty = true;
    const idleMs = this.#wall() - p.lastUsefulAt;
    const tooMany = p.failures >= this.opts.forgetAfterFailures;
    // nothing listens at any address it had, for a while now: a one-shot node's port, a node that moved (QA qaUp F8)
    const refusedOnly = (p.refused ?? 0) >= this.opts.forgetRefusedAfterFailures && idleMs >= this.opts.forgetRefusedAfterMs;
    if (tooMany || refusedOnly || (idleMs >= this.opts.forgetAfterMs && p.failures >= this.opts.forgetIdleAfterFailures)) {
      this.#remembered.delete(key);
      this.#connectedSince.delete(key);
      this.schedule.forget(key);
      this.d.log.info({ peer: key, addr: t.addrs[0], failures: p.failures, ...(p.refused ? { refused: p.refused } : {}), lastUsefulAgoMs: Math.round(idleMs) }, tooMany ? 'remembered peer forgotten: too many failed redials' : refusedOnly ? 'remembered peer forgotten: every address refused the connection, redial after redial' : 'remembered peer forgotten: not useful for too long');
      this.#save();
      return 'forgotten';
    }
    if (this.#clock() - this.#savedAt >= this.opts.saveEveryMs) this.#save();
    return undefined;
  }

  async #dial(key: string, t: DialTarget, kind: 'bootstrap' | 'remembered', boot?: { addr: string; peerId?: string; lastError?: { code: string; message: string } }): Promise<void> {
    this.#inflight.add(key);
    const failuresBefore = this.schedule.failures(key);
    const silent: string[] = [];
    const codes: string[] = [];
    try {
      const { remote, addr } = await this.#dialEach(t, silent, codes);
      this.schedule.connected(key);
      if (kind === 'remembered') this.#redialed(key, addr, silent, t);
      this.d.onDial?.(kind, true);
      if (boot) {
        delete boot.lastError;
        boot.peerId ??= remote;
      }
      if (failuresBefore > 0) this.d.log.info({ peer: t.peerId, addr: t.addrs[0], after: failuresBefore }, `${kind} peer reconnected`);
    } catch (e) {
      // the node is stopping (which aborts the dials in flight): no failure to count or report, and no retry follows
      if (this.#stopped) return;
      const err = classifyDialError(e);
      const delay = this.schedule.failed(key, this.#clock());
      this.d.onDial?.(kind, false);
      // a peer forgotten just now said so in its own line: no "retrying" after it
      // every address tried, and each refused: nothing listens there now
      const allRefused = codes.length === t.addrs.length && codes.every((c) => c === 'NET_CONNECTION_REFUSED');
      if (kind === 'remembered' && this.#redialed(key, undefined, silent, t, allRefused) === 'forgotten') return;
      const codeChanged = boot && boot.lastError?.code !== err.code;
      if (boot) boot.lastError = err;
      // A bootstrap peer (the operator named it): warn on the first failure and when the cause changes; then quietly,
      // with the count, at powers of two. A remembered peer (it may be gone for good): one info line as it becomes
      // unreachable (of all remembered peers' first failures, one in full and then a count a minute: #unreachable),
      // then debug only (its reconnection is an info line again).
      const n = failuresBefore + 1;
      const fields = { peer: t.peerId, addr: t.addrs[0], code: err.code, err: err.message, failures: n, retryInMs: delay };
      if (kind === 'bootstrap' && (n === 1 || codeChanged)) this.d.log.warn(fields, err.code === 'NET_PEER_ID_MISMATCH' ? 'bootstrap dial failed: the peer at that address has another PeerId (check the /p2p/ part of network.bootstrap)' : 'bootstrap dial failed; retrying with backoff');
      else if (kind === 'bootstrap' && (n & (n - 1)) === 0) this.d.log.info(fields, 'bootstrap peer still unreachable; retrying with backoff');
      else if (kind === 'remembered' && n === 1) this.#unreachable.warn(undefined, err.code, 'remembered peer unreachable; retrying with backoff (further failures are logged at debug)', fields);
      else this.d.log.debug(fields, `${kind} dial failed`);
    } finally {
      this.#inflight.delete(key);
    }
  }

  #connectedBefore = new Set<string>();

  async #discover(max: number, connectedBefore: string[]): Promise<void> {
    this.#discovering = true;
    this.#connectedBefore = new Set(connectedBefore);
    try {
      const found = await this.d.host.discover!(max * 4, this.opts.dialTimeoutMs * 2);
      // The DHT query itself connects to the peers it asks: those are new connections already.
      const fresh = found.filter((t) => t.peerId && !this.#connectedBefore.has(t.peerId) && !this.d.host.refused?.(t.peerId));
      let gained = 0;
      await Promise.all(
        fresh.slice(0, max).map(async (t) => {
          if (!this.d.host.isConnected(t.peerId!)) {
            try {
              await this.#dialEach(t);
            } catch {
              this.d.onDial?.('discovered', false);
              return;
            }
          }
          gained++;
          this.d.onDial?.('discovered', true);
        }),
      );
      this.#discoverFailures = gained ? 0 : this.#discoverFailures + 1;
    } catch (e) {
      this.#discoverFailures++;
      this.d.log.debug({ err: (e as Error).message }, 'DHT peer discovery failed');
    } finally {
      this.#discovering = false;
      const policy = { initialMs: 1_000, maxMs: this.opts.discoverEveryMs, factor: 2, jitter: 0.25 };
      this.#nextDiscoverAt = this.#clock() + (this.#discoverFailures ? backoffDelay(this.#discoverFailures, policy, (this.d.rand ?? Math.random)()) : policy.initialMs);
    }
  }

  /**
   * Over the cap, the least recently useful of: a newcomer not connected; any newcomer while newcomers hold more than
   * half the entries; an established peer not connected; else the least recently useful. So keys that connect once
   * and leave take each other's places, not those of the peers this node has worked with (QA ffNetDay2 F3).
   */
  #trim(): void {
    while (this.#remembered.size > this.opts.rememberMax) {
      const all = [...this.#remembered.values()];
      // a newcomer: not yet connected establishedAfterMs in a row (an entry from a file before `newSince` is established)
      const fresh = all.filter((p) => p.newSince !== undefined);
      const drop =
        fresh.find((p) => !this.d.host.isConnected(p.peerId)) ??
        (fresh.length > this.opts.rememberMax / 2 ? fresh[0] : undefined) ??
        all.find((p) => !this.d.host.isConnected(p.peerId)) ??
        all[0]!;
      this.#remembered.delete(drop.peerId);
      this.#connectedSince.delete(drop.peerId);
      this.schedule.forget(drop.peerId);
    }
  }

}
