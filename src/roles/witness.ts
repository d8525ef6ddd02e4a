/**
 * The witness role on an overlay: for each steward heard on the pool-head
 * topic, fetch the entries since the head it last cosigned over
 * `/c0mpute/ledger/1`, verify that they extend it (src/ledger/witness.ts keeps
 * the per-steward state and refuses shorter, forked or rewritten histories),
 * cosign, and publish the `pool-witness/1` receipt. When the steward signed two
 * entries no single history holds (two at one seq, or a fork beginning right
 * after the held head: src/ledger/witness.ts), the witness keeps them and
 * publishes the `pool-evidence/1` record instead: about a steward it holds a
 * head for or is listed, only (any key can sign two such entries).
 * At start it also asks each steward it holds a head for (and each one named in
 * `stewards`) for its ledger past that head, without waiting for a head on
 * pool-head: gossip does not replay, so a head published while this witness was
 * away is heard only when the steward republishes it (src/roles/steward.ts).
 * Each steward it holds a head for is also asked for the held head's entry when it
 * connects to this node and every HELD_CHECK_MS (#checkHeld): a steward restored
 * from an old copy that appends nothing republishes only a head gossip drops as
 * a duplicate, so no shorter head of it is ever heard.
 * A head it already holds costs one read; while the steward still asks (it
 * republishes a head until a receipt covering it reaches it), the receipt kept
 * for it is published again, at most once per RECEIPT_REPUBLISH_MS (or
 * RECEIPT_RETRY_MS after one that reached nobody), so a receipt lost after the
 * synced write (the witness killed before publishing it, a publish to no peer,
 * gossip dropping it) is not lost for good. A head whose catch-up
 * was refused is not fetched again for REFUSED_HEAD_MS (from a key neither held
 * nor named, no head at all), so a run signed once cannot be served to it again
 * and again; a head whose fetch failed (the steward not reached, or silent
 * until the deadline) likewise, for UNREACHED_RETRY_MS doubling with each
 * failure up to REFUSED_HEAD_MS. Gossip delivers a message once: the steward's
 * republications of a head are the same message, dropped as a duplicate by this
 * node's own pipeline, so a head of a steward held or named that was held back
 * after a failed fetch (or a refusal that may clear) is fetched again by the
 * witness itself when the hold-back ends (one timer per steward), until it is
 * covered or a newer head takes its place. Stopping aborts the fetches in flight: a
 * steward that never answers cannot hold the node's stop. Without a list, heads
 * from keys neither held nor named (any peer can relay heads of any number of
 * fresh keys) are bounded too: one held back is dropped before any read or
 * slot, at most MAX_STRANGER_CATCHUPS such catch-ups run at once and
 * STRANGER_DIALS_PER_MINUTE start a minute, spread; further heads wait, at most
 * MAX_STRANGER_WAITING, drawn at random (a key heard again first), one pushed
 * out dropped and counted (`status().strangers`), and their failures are logged through one
 * rate-limited PeerLog key, not one warning each. A ledger further past the held head than one cosign takes
 * (MAX_COSIGN_ENTRIES: a witness that joins late or fell far behind) is fetched
 * and cosigned in steps of at most that, each a catch-up round of its own.
 * One node can witness several stewards, each with its own state.
 * Evidence kept is gossiped again (its pool-evidence/1 record, the same bytes)
 * shortly after start and then every EVIDENCE_GOSSIP_MS, at most
 * MAX_EVIDENCE_GOSSIP stewards a round, so a node that missed the moment of
 * detection learns it; `status()` (GET /v1/witness) lists every steward held
 * or with evidence kept, and `evidenceOf` (GET /v1/witness/evidence/:steward)
 * hands out the kept pairs as signed records.
 */
import { Buffer } from 'node:buffer';
import { C0Error } from '../errors.js';
import { open, seal, type Opened } from '../records/envelope.js';
import { compareBytes } from '../records/cbor.js';
import { POOL_TYPE, WITNESS_TYPE } from '../ledger/entry.js';
import type { Equivocation, EquivocationForm } from '../ledger/attest.js';
import { MAX_COSIGN_ENTRIES, WITNESS_ERR, Witness, type KeptEvidence } from '../ledger/witness.js';
import { EVIDENCE_TYPE, type EquivocationEvidence } from '../ledger/evidence.js';
import type { LedgerEntry, WitnessReceipt } from '../ledger/entry.js';
import { STORE_CLOSED, STORE_REOPENING, STORE_WRITE_FAILED, type Db } from '../store/db.js';
import { NET_ERR } from '../net/frames.js';
import type { Network } from '../net/node.js';
import { monotonicClock, type Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import { clearableTimeoutSignal, setLongInterval, setLongTimeout, type LongTimer } from '../util/timers.js';
import { linkedSignal } from '../util/signals.js';
import { PeerLog } from '../util/peer-log.js';
import { TokenBucket, type BucketSpec } from '../net/rate-limit.js';
import { FLOOD_DEFAULTS } from '../net/flood-limits.js';
import { LEDGER_PROTOCOL, MAX_LEDGER_RANGE, type StewardIdentity as WitnessIdentity } from './steward-ports.js';

export interface WitnessConfig {
  /** Only witness these stewards (default: every steward heard on the overlay). */
  stewards?: string[];
  /** Without `stewards`: how many stewards' heads this witness takes on at most (default MAX_STEWARDS). */
  maxStewards?: number;
  /** When, in ms after start, to ask the stewards for their ledger past the held head (default START_CATCHUP_MS). */
  startCatchUpMs?: readonly number[];
  /** Entries one step of a catch-up fetches and cosigns at most (default and at most MAX_COSIGN_ENTRIES; at least 2). */
  stepEntries?: number;
  /** When to gossip the evidence kept again: ms after start, then every (default [EVIDENCE_GOSSIP_FIRST_MS, EVIDENCE_GOSSIP_MS]). */
  evidenceGossipMs?: readonly [first: number, every: number];
  /** A rolled-back steward: the first wait before its held receipt, having reached nobody, is given again, ms (default RECEIPT_RETRY_MS, doubling). */
  rollbackResendMs?: number;
  /** How often each steward held is checked for a ledger gone back, ms (default HELD_CHECK_MS; 0: never). */
  heldCheckMs?: number;
  /**
   * The overlay's `network.witnesses`, when it names them: a witness not among them has its receipts dropped by every
   * member configured alike (WITNESS_NOT_NAMED), so status() says so (`notNamed`) beside what it cosigns.
   */
  overlayWitnesses?: readonly string[];
  /**
   * The stewards this node's other overlays name (their `network.steward`): the witness's store is the node's, one for
   * every overlay, so status() leaves them out of this overlay's view unless this overlay names them too (its
   * `network.steward`, `stewards`) or something happened to them here since start (QA qaWit F3: every overlay's view
   * listed every steward held, and another overlay's forked steward showed as contradicted on this one). A steward no
   * overlay names (taken off, a stranger held) is shown on every overlay, as before.
   */
  elsewhere?: readonly string[];
  /**
   * `kept`: the witness role is off on this overlay, but the node holds what it kept as a witness (heads cosigned,
   * evidence): nothing is fetched or cosigned and no head is heard; status() and evidenceOf() read the store, and the
   * evidence is gossiped again as before unless `gossip` is `none` (a display command's node). Default `active`.
   * docs/node.md "Changing roles".
   */
  mode?: 'active' | 'kept';
  /** `none`: the evidence kept is not gossiped again (a display node publishes nothing). Default `rounds`. */
  gossip?: 'rounds' | 'none';
}

/** Whether `db` holds anything a witness kept: a head cosigned or evidence (a witness role taken off: WitnessConfig.mode `kept`). */
export async function holdsWitnessState(db: Db, signer: WitnessIdentity['signer']): Promise<{ heads: number; evidence: Map<string, number> } | undefined> {
  const w = new Witness(db, signer);
  const [heads, evidence] = await Promise.all([w.heads(1000), w.evidenceCounts()]);
  return heads.length || evidence.size ? { heads: heads.length, evidence } : undefined;
}

/** Stewards a witness without a list takes on: a head from a further key is ignored (any key can sign a head). */
export const MAX_STEWARDS = 1000;
/** Catch-ups running at once, over all stewards (each holds the entries it fetched until it cosigns). */
export const CATCHUP_SLOTS = 4;
/** One catch-up's whole time, every range call included: a steward that answers slowly cannot hold a slot longer. */
export const CATCHUP_BUDGET_MS = 120_000;
/** Entry bytes one catch-up holds at most: past it the head is refused WITNESS_TOO_LARGE, nothing is fetched further. */
export const MAX_CATCHUP_BYTES = 64 * 1024 * 1024;
export const WITNESS_TOO_LARGE = 'WITNESS_TOO_LARGE';
/** The steward's ledger is shorter than the head this witness holds for it (restored from an old copy): see #shorterHead. */
export const WITNESS_LEDGER_ROLLED_BACK = 'WITNESS_LEDGER_ROLLED_BACK';
/**
 * The key asked for its ledger answers, but serves no `/c0mpute/ledger/1` (libp2p's protocol selection failed): it is
 * not a steward, or not one now (its steward role taken off). A listed one is a wrong network.steward or
 * witness.stewards: shown as its last refusal, warned once at start (QA witness pass, finding 3).
 */
export const WITNESS_NOT_A_STEWARD = 'WITNESS_NOT_A_STEWARD';
/** What the steward answers to a range from past its ledger's length (src/roles/steward-handlers.ts). */
const LEDGER_RANGE_INVALID = 'LEDGER_RANGE_INVALID';
/**
 * A head shorter than the held one makes the witness ask the steward for the held head's entry at most this often per
 * steward (an old head is legitimately heard late, and anyone can relay old heads again: a flood of them costs one
 * one-entry read a minute).
 */
export const ROLLBACK_PROBE_MS = 60_000;
/**
 * Each steward held is asked for the held head's entry this often (#checkHeld), and when it connects to this node: a
 * steward restored from an old copy that appends nothing only republishes a head every node has seen (gossip drops it
 * as a duplicate), so no shorter head is ever heard. One one-entry read per steward per period at most.
 */
export const HELD_CHECK_MS = 5 * 60_000;
/**
 * A held steward connecting to this node is checked at most this often (not ROLLBACK_PROBE_MS: a steward restored
 * and restarted within a minute of its last restart would wait for HELD_CHECK_MS). Only the steward can connect with
 * its key (the connection is authenticated), so only it can make the witness read this often.
 */
export const CONNECT_CHECK_MS = 10_000;
/** The held receipt given to a rolled-back steward that reached nobody is given again this many times at most (5 s doubling). */
export const ROLLBACK_RESENDS = 6;
/** The length the steward said its ledger has, from its LEDGER_RANGE_INVALID answer ("… beyond the ledger's length N"). */
function servedLength(e: unknown): number | undefined {
  const m = /length (\d+)\s*$/.exec((e as Error)?.message ?? '');
  return m ? Number(m[1]) : undefined;
}
/**
 * After start (the network starts after the roles, and the stewards need to be reached), when to ask each steward
 * held or named for its ledger past the held head, ms; a steward is asked until it answers once.
 */
export const START_CATCHUP_MS: readonly number[] = [2_000, 5_000, 15_000, 60_000];
/**
 * How long a head whose catch-up was refused is not fetched again (a refusal is the same for the same head and held
 * state, and any key can serve a run that costs a witness a fetch and a verification); from a key this witness neither
 * holds a head for nor is named to witness, no head at all is fetched meanwhile (signing a new head costs it one
 * signature). The steward republishes its head every 30 s until it is covered: a refused one is asked again after this.
 */
export const REFUSED_HEAD_MS = 10 * 60_000;
/**
 * A republished head this witness holds: its receipt is published again at most this often while the last publication
 * reached a peer (the steward republishes every 30 s until a receipt reaches it; gossip may have dropped it on the way).
 */
export const RECEIPT_REPUBLISH_MS = 60_000;
/** The same, after a publication that reached nobody (or failed): sooner, but still not on every republication. */
export const RECEIPT_RETRY_MS = 5_000;
/** The evidence kept is gossiped again this long after start (the mesh has formed), ms, then every EVIDENCE_GOSSIP_MS. */
export const EVIDENCE_GOSSIP_FIRST_MS = 15_000;
export const EVIDENCE_GOSSIP_MS = 60 * 60_000;
/** Stewards whose evidence one such round publishes at most (one record each: one pair proves it), in turn. */
export const MAX_EVIDENCE_GOSSIP = 64;
/**
 * What this witness publishes, paced at half its neighbours' per-signer flood limits (FLOOD_DEFAULTS.signer, docs/network.md
 * §10: a record past them is dropped and the peer that sent it, here the witness itself, blamed): receipts at 10/s
 * (burst 50) of pool-witness's 20/s (burst 100); a receipt given again waits for the steward's next republication when
 * none is left. Evidence at 1 per 2 s (burst 5) of pool-evidence's 1/s (burst 10): a gossip round waits for each.
 */
export const RECEIPT_PACE: BucketSpec = half(FLOOD_DEFAULTS.signer['pool-witness']!);
export const EVIDENCE_PACE: BucketSpec = half(FLOOD_DEFAULTS.signer['pool-evidence']!);
function half(b: BucketSpec): BucketSpec {
  return { ratePerSec: b.ratePerSec / 2, burst: Math.max(1, Math.floor(b.burst / 2)) };
}
/**
 * A head whose fetch failed (not reached, no answer within the deadline) is not fetched again for this long, doubled
 * with each further failure of the same head, up to REFUSED_HEAD_MS (a steward down a while is tried again soon; one
 * that never answers costs a dial and a deadline per 10 minutes, not one per announcement).
 */
export const UNREACHED_RETRY_MS = 30_000;
/** Catch-ups of keys neither held nor named running at once (a head from a further such key meanwhile is dropped). */
export const MAX_STRANGER_CATCHUPS = 2;
/** Catch-ups of keys neither held nor named started a minute at most (each dials the key; a further head is dropped). */
export const STRANGER_DIALS_PER_MINUTE = 100;
/**
 * Heads of such keys waiting for a catch-up at most (the newest per key): past it a random one is dropped, and the next
 * catch-up is drawn at random among them, so a steward that keeps republishing is not shut out by a flood that comes first.
 */
export const MAX_STRANGER_WAITING = 16;
/** The bucket those catch-ups start from: STRANGER_DIALS_PER_MINUTE, spread over the minute rather than at its start. */
export const STRANGER_DIALS: BucketSpec = { ratePerSec: STRANGER_DIALS_PER_MINUTE / 60, burst: 10 };
/** Keys neither held nor named remembered as heard (a key heard again is drawn first): over 30 s of 100 heads/s. */
export const MAX_STRANGERS_SEEN = 4096;
/** What the failures of such keys are logged under (one PeerLog key: a line, then a summary a minute at most). */
const STRANGERS = 'keys neither held nor named';
/** Refused heads remembered at most (one per steward, the oldest forgotten first). */
export const MAX_REFUSED_HEADS = 1_000;
/**
 * Stewards neither held nor listed whose last refusal `status()` (GET /v1/witness) still shows, the most recent
 * (any key can be refused: the bound keeps the answer small; the logs have every refusal).
 */
export const MAX_SHOWN_STRANGERS = 64;
/**
 * Refusals that are a verdict on the entries the steward signed (the same head and held state get the same one): a head
 * refused so is not fetched again by the witness itself, only when announced again after REFUSED_HEAD_MS. Any other
 * refusal (a fetch that failed, a store error, …) may clear: the head is fetched again when its hold-back ends.
 */
const FINAL_REFUSALS: ReadonlySet<string> = new Set([...Object.values(WITNESS_ERR), WITNESS_TOO_LARGE]);

/** This node's store refusing the cosign's write: held back as an unreached steward's head is (UNREACHED_RETRY_MS doubling), not REFUSED_HEAD_MS. */
const OWN_STORE_FAILURES: ReadonlySet<string> = new Set([STORE_WRITE_FAILED, STORE_REOPENING, STORE_CLOSED]);

/** A head held back (#refusedHeads): refused, or (`failures`) its fetch failed that many times in a row; `mayClear`: fetched again by itself at `until`. */
interface HeldBack {
  head: string;
  held: number;
  at: number;
  until: number;
  failures?: number;
  mayClear: boolean;
}

/** What the witness uses of the overlay it runs on (the overlay node satisfies it structurally). */
export interface WitnessPorts {
  readonly name: string;
  /** Wall time: signed times, what status shows. */
  readonly clock: Clock;
  /**
   * Local durations (held-back heads, receipt resends, the paces, log windows): default the monotonic clock, so a
   * wall clock stepped by NTP neither stretches nor cuts them (docs/node.md "Clocks: wall and monotonic").
   */
  readonly monoClock?: Clock;
  readonly log: Logger;
  /** `libp2p`, when there: a held steward connecting to this node is checked (#checkHeld). */
  readonly net: Pick<Network, 'subscribe' | 'publish' | 'request'> & Partial<Pick<Network, 'libp2p'>>;
  /** Uniform in [0, 1): which waiting head of a key neither held nor named goes next (default Math.random; tests seed it). */
  readonly random?: () => number;
  /**
   * Heads on pool-head this node dropped since start as signed by another key than network.steward
   * (HEAD_FOREIGN_STEWARD, src/node/record-hooks.ts ForeignHeads): shown by status(), since a wrong network.steward
   * drops every head of the real steward before the witness hears it. Absent: not counted.
   */
  readonly foreignHeads?: () => { dropped: number; last: { signer: string; at: number } } | undefined;
}

export class WitnessRole {
  readonly witness: Witness;
  /** Per steward: the catch-up running (or waiting for a slot), and the newest head heard meanwhile (only it is kept). */
  #busy = new Map<string, { run: Promise<void>; next?: Opened<LedgerEntry> }>();
  /** Catch-ups running; those waiting for a place (a steward this witness holds a head for goes first). */
  #running = 0;
  #waiting: Array<{ steward: string; go: () => void }> = [];
  /** The stewards asked at start that have not answered yet, and the timers that ask them. */
  #startPending = new Set<string>();
  #startTimers: LongTimer[] = [];
  /** How many of the start catch-up's rounds (START_CATCHUP_MS) have been asked; the stewards warned of as never reached. */
  #startRounds = 0;
  #startWarned = new Set<string>();
  /** The stewards this witness holds a head for (cosigned at least once). */
  #held = new Set<string>();
  #full = false;
  #stopped = false;
  /** Per steward: the last head cosigned, or the last refusal (with the head refused when one was heard). */
  #last = new Map<string, { length: number; head: string; at: number } | { refused: string; at: number; head?: string }>();
  /** The stewards neither held nor listed whose refusal #last still shows, oldest first (MAX_SHOWN_STRANGERS). */
  #strangers = new Set<string>();
  /**
   * Per steward: the head whose catch-up was refused or whose fetch failed, at which held length, when, until when it
   * is held back, and (a fetch that failed) how many times in a row (the backoff).
   */
  #refusedHeads = new Map<string, HeldBack>();
  /**
   * Per steward held or named: the timer that fetches its held-back head again when the hold-back ends, for that
   * hold-back (`for`). Gossip does not deliver the steward's republications of a head heard once (the same message).
   */
  #retries = new Map<string, { timer: LongTimer; for: HeldBack }>();
  /** Aborted at stop: the fetches in flight end at once. */
  #abort = new AbortController();
  /** Heads of keys neither held nor named waiting for a catch-up (the newest per key; MAX_STRANGER_WAITING), drawn at random. */
  #strangerWaiting = new Map<string, { entry: Opened<LedgerEntry>; returning: boolean }>();
  /** Keys neither held nor named heard lately, oldest first (MAX_STRANGERS_SEEN): a key heard again is drawn first. */
  #strangerSeen = new Set<string>();
  /** Catch-ups of such keys started: STRANGER_DIALS_PER_MINUTE, spread (a burst of STRANGER_DIALS.burst at most). */
  readonly #strangerDials: TokenBucket;
  /** What this witness publishes, under its neighbours' per-signer flood limits (RECEIPT_PACE, EVIDENCE_PACE). */
  readonly #receiptPace: TokenBucket;
  readonly #evidencePace: TokenBucket;
  /** Set while waiting heads wait for the minute's budget (STRANGER_DIALS_PER_MINUTE) to have room again. */
  #strangerTimer: LongTimer | undefined;
  /** Heads of keys neither held nor named dropped without a fetch (held back, or past the limits), since start. */
  #strangerHeadsIgnored = 0;
  /**
   * Per steward held: the last sign that its ledger is shorter than the head this witness cosigned (a data directory
   * restored from an old copy, or truncated): the held length, the length of the shorter head heard (`heard`) and the
   * length the steward said it serves (`served`) when known. Cleared when it serves an entry at the held head's seq
   * (the held head, or a fork: #notShorter) or a cosign succeeds. GET /v1/witness shows it (`rolledBack`); not kept
   * across a restart (the start catch-up finds it again).
   */
  #rolledBack = new Map<string, { held: number; heard?: number; served?: number; head?: string; at: number }>();
  /**
   * Per steward rolled back: the timer that gives the held receipt again when the last one reached nobody (a steward
   * just restarted is often in nobody's mesh yet), at RECEIPT_RETRY_MS doubling, ROLLBACK_RESENDS times at most.
   */
  #rollbackResends = new Map<string, LongTimer>();
  /** Per steward held: when (monotonic) a shorter head heard last made the witness ask for the held head's entry. */
  #probedAt = new Map<string, number>();
  /**
   * Stewards whose last held-head probe did not reach them (#probe: not dialled, no answer). Such a probe learnt
   * nothing, so it does not hold back the check when the steward connects: the periodic check run while a restored
   * steward was down, seconds before it came back, kept its connection from being checked for HELD_CHECK_MS (QA ffLedger F1).
   */
  #probeMissed = new Set<string>();
  /** Catch-up failures, rate-limited: per steward held or named, and one key for all the others. */
  readonly #failLog: PeerLog;
  /** The monotonic clock (WitnessPorts.monoClock). */
  readonly #mono: Clock;
  /** Per steward: when its receipt was last published and whether any peer got it (RECEIPT_REPUBLISH_MS), oldest first. */
  #sent = new Map<string, { at: number; reached: boolean }>();
  /** The evidence gossip timer, and the steward the last round ended at (the next starts after it). */
  #gossipTimer: LongTimer | undefined;
  #gossipAfter = '';
  /** The held-steward check's timer (HELD_CHECK_MS), and what stops hearing libp2p's `peer:connect`. */
  #checkTimer: LongTimer | undefined;
  #offConnect: (() => void) | undefined;

  private constructor(
    private o: WitnessPorts,
    db: Db,
    private identity: WitnessIdentity,
    private cfg: WitnessConfig,
  ) {
    this.witness = new Witness(db, identity.signer, { now: o.clock, logger: o.log.child({ role: 'witness', overlay: o.name }), ...(cfg.stewards ? { stewards: cfg.stewards } : {}) });
    this.#mono = o.monoClock ?? monotonicClock;
    this.#failLog = new PeerLog({ log: o.log, clock: this.#mono });
    this.#strangerDials = new TokenBucket(STRANGER_DIALS, this.#mono);
    this.#receiptPace = new TokenBucket(RECEIPT_PACE, this.#mono);
    this.#evidencePace = new TokenBucket(EVIDENCE_PACE, this.#mono);
  }

  static async start(o: WitnessPorts, db: Db, identity: WitnessIdentity, cfg: WitnessConfig): Promise<WitnessRole> {
    const w = new WitnessRole(o, db, identity, cfg);
    // With a list, only the stewards on it: one taken off it (or off network.steward, the default list) keeps what is
    // stored of it (shown by GET /v1/witness) and is never fetched or countersigned again
    const kept = cfg.mode === 'kept';
    if (!kept) {
      for (const s of await w.witness.stewards(cfg.stewards ? Infinity : w.#maxStewards)) {
        if (w.#listed(s)) w.#held.add(s);
      }
      o.net.subscribe('pool-head', (rec) => w.#onHead(rec as Opened<LedgerEntry>));
      w.#catchUpAtStart();
    }
    const [first, every] = cfg.evidenceGossipMs ?? [EVIDENCE_GOSSIP_FIRST_MS, EVIDENCE_GOSSIP_MS];
    const round = (ms: number) => {
      w.#gossipTimer = setLongTimeout(() => {
        void w.#gossipEvidence().catch((e) => o.log.warn({ err: (e as Error).message }, 'could not gossip the evidence kept'));
        if (!w.#stopped) round(every);
      }, ms).unref();
    };
    // the proof does not go quiet with the role: a node away when the steward was caught learns it from this one too
    if (cfg.gossip !== 'none') round(first);
    if (!kept) await w.#checkHeldStewards();
    return w;
  }

  /**
   * Check each steward held for a ledger gone back (#checkHeld) every HELD_CHECK_MS, and one when it connects to this
   * node (a steward restarted from a restored copy connects again).
   */
  async #checkHeldStewards(): Promise<void> {
    const every = this.cfg.heldCheckMs ?? HELD_CHECK_MS;
    if (every > 0) {
      this.#checkTimer = setLongInterval(() => {
        for (const s of this.#held) this.#checkHeld(s);
      }, every).unref();
    }
    const p2p = this.o.net.libp2p;
    if (!p2p) return;
    const { onDidConnect } = await import('../node/peer-id.js');
    this.#offConnect = onDidConnect(p2p, (did) => {
      // a probe that did not reach it learnt nothing: its connection is checked at once (#probeMissed)
      if (this.#held.has(did)) this.#checkHeld(did, this.#probeMissed.has(did) ? 0 : CONNECT_CHECK_MS);
    });
  }

  /**
   * Ask `steward`, held, for the held head's entry (#probe: at most once per `gap`, ROLLBACK_PROBE_MS but on connect), unless a catch-up of it
   * runs (it reads from that entry anyway). Not heard through a head: a steward restored from an old copy that appends
   * nothing republishes its restored head, an entry every node's gossip has seen (the same message id, dropped as a
   * duplicate), so no shorter head ever reaches this witness. A head heard meanwhile is caught up after it.
   */
  #checkHeld(steward: string, gap = ROLLBACK_PROBE_MS): void {
    if (this.#stopped || !this.#held.has(steward) || !this.#listed(steward) || this.#busy.has(steward)) return;
    const last = this.#probedAt.get(steward);
    if (last !== undefined && this.#mono() - last < gap) return;
    const state: { run: Promise<void>; next?: Opened<LedgerEntry> } = { run: Promise.resolve() };
    this.#busy.set(steward, state);
    state.run = (async () => {
      await this.#inSlot(steward, async () => {
        await this.#probe(steward, await this.witness.held(steward), undefined, gap);
      }).catch((e) => {
        if (!this.#stopped) this.#failLog.warn(steward, String((e as C0Error).code ?? 'ERROR'), 'witness check of a held steward failed', { steward, err: (e as Error).message });
      });
      this.#busy.delete(steward);
      if (state.next) this.#schedule(steward, state.next);
    })();
  }

  /**
   * Publish again the evidence kept (one pool-evidence/1 record per steward, the bytes kept with it), at most
   * MAX_EVIDENCE_GOSSIP stewards, taking up after the last round's: a node away when it was caught learns it.
   */
  async #gossipEvidence(): Promise<void> {
    const stewards = [...(await this.witness.evidenceCounts()).keys()];
    if (!stewards.length) return;
    const start = Math.max(0, stewards.findIndex((s) => s > this.#gossipAfter));
    const turn = [...stewards.slice(start), ...stewards.slice(0, start)].slice(0, MAX_EVIDENCE_GOSSIP);
    for (const steward of turn) {
      // paced (EVIDENCE_PACE): a round of many stewards is spread, not dropped by the neighbours and blamed on us
      while (!this.#stopped && !this.#evidencePace.take()) await this.#pause(this.#evidencePace);
      if (this.#stopped) return;
      const ev = (await this.witness.evidence(steward))[0];
      if (ev) await this.o.net.publish('pool-evidence', ev.record).catch(() => {});
      this.#gossipAfter = steward;
    }
    this.o.log.debug({ stewards: turn.length }, 'gossiped the evidence kept again');
  }

  /** Until `bucket` has a token due (at least 10 ms), or the role stops. */
  async #pause(bucket: TokenBucket): Promise<void> {
    const ms = Math.max(10, Math.ceil(((1 - bucket.available()) / bucket.spec.ratePerSec) * 1000));
    await new Promise<void>((done) => {
      const signal = this.#abort.signal;
      // (the listener goes with the pause: one left per pause would pile up on the role's signal for as long as it runs)
      const end = () => {
        clearTimeout(t);
        signal.removeEventListener('abort', end);
        done();
      };
      const t = setTimeout(end, ms);
      signal.addEventListener('abort', end, { once: true });
    });
  }

  /** Ask each steward held or named for its ledger past the held head, at START_CATCHUP_MS until it answers once. */
  #catchUpAtStart(): void {
    for (const s of [...this.#held, ...(this.cfg.stewards ?? [])]) if (s !== this.identity.did) this.#startPending.add(s);
    if (!this.#startPending.size) return;
    const ask = () => {
      this.#startRounds++;
      for (const s of this.#startPending) this.#schedule(s, undefined);
    };
    for (const ms of this.cfg.startCatchUpMs ?? START_CATCHUP_MS) this.#startTimers.push(setLongTimeout(ask, ms).unref());
  }

  /**
   * A start catch-up of `steward` failed on the network (`e`, NET_*): shown at once as its last refusal (`code`:
   * NET_DIAL_FAILED, NET_DEADLINE, …, or WITNESS_NOT_A_STEWARD), so `witness status` says it is not reached; once the
   * last round has been asked and it still has not answered, one warning (per steward, per start). Before (QA witness
   * pass, finding 3) every round's failure was logged at debug and nothing was shown: a witness with the wrong swarm key
   * or network.steward looked like one with nothing new to cosign.
   */
  #startUnreached(steward: string, code: string, e: Error): void {
    this.#last.set(steward, { refused: code, at: this.o.clock() });
    const rounds = (this.cfg.startCatchUpMs ?? START_CATCHUP_MS).length;
    if (this.#startRounds < rounds || !this.#startPending.has(steward) || this.#startWarned.has(steward)) {
      this.o.log.debug({ steward, code, err: e.message }, 'start catch-up: the steward was not reached (asked again later)');
      return;
    }
    this.#startWarned.add(steward);
    this.o.log.warn(
      { steward, code, err: e.message, attempts: rounds },
      code === WITNESS_NOT_A_STEWARD
        ? 'the steward named answers but serves no ledger (/c0mpute/ledger/1): it is not a steward, so nothing is witnessed for it (check network.steward and witness.stewards)'
        : 'the steward was not reached by any of the start catch-up’s attempts: nothing of its ledger is witnessed until it is (is it running? check network.steward, the overlay’s swarm key and bootstrap); it is fetched again when one of its heads is heard',
    );
  }

  /** The code a failed fetch is shown with: the network's, or WITNESS_NOT_A_STEWARD when the key serves no ledger protocol. */
  #failureCode(e: unknown): string {
    const c = e as C0Error;
    // connected, and it does not speak ledger/1 (protocols.ts openError)
    if (c?.code === NET_ERR.PROTOCOL) return WITNESS_NOT_A_STEWARD;
    return String(c?.code ?? 'NET_ERROR');
  }

  /**
   * `steward` answered a ledger/1 request: a refusal shown because it was not reached (a network code, or
   * WITNESS_NOT_A_STEWARD) no longer holds. A start catch-up that failed at 2 s (the network still starting) and was
   * answered at 5 s with nothing new must not read "last refused NET_DIAL_FAILED".
   */
  #reached(steward: string): void {
    const last = this.#last.get(steward);
    if (last && 'refused' in last && (last.refused.startsWith('NET_') || last.refused === WITNESS_NOT_A_STEWARD)) this.#last.delete(steward);
  }

  get #random(): () => number {
    return this.o.random ?? Math.random;
  }

  get #maxStewards(): number {
    return this.cfg.maxStewards ?? MAX_STEWARDS;
  }

  /** Whether this witness may witness `steward`: any when no list is configured, else those on witness.stewards. */
  #listed(steward: string): boolean {
    return !this.cfg.stewards || this.cfg.stewards.includes(steward);
  }

  #onHead(entry: Opened<LedgerEntry>): void {
    const steward = entry.signer;
    if (this.#stopped || steward === this.identity.did) return;
    if (!this.#listed(steward)) return;
    // Without a list, the stewards taken on are those held and those whose first catch-up runs: at most maxStewards.
    if (!this.cfg.stewards && !this.#held.has(steward) && !this.#busy.has(steward)) {
      let taken = this.#held.size;
      for (const b of this.#busy.keys()) if (!this.#held.has(b)) taken++;
      if (taken >= this.#maxStewards) {
        if (!this.#full) this.o.log.warn({ overlay: this.o.name, maxStewards: this.#maxStewards }, 'witnessing as many stewards as it takes on: heads from further stewards are ignored (name the stewards to witness in witness.stewards)');
        this.#full = true;
        return;
      }
      this.#strangerHead(steward, entry);
      return;
    }
    this.#schedule(steward, entry);
  }

  /**
   * A head of `steward`, a key neither held nor named with no catch-up running: dropped while one of its heads is held
   * back (no read, no slot); else it waits among MAX_STRANGER_WAITING such heads (the newest per key) and the next
   * catch-up of such a key is drawn at random among those waiting. A key heard before (within the last
   * MAX_STRANGERS_SEEN such keys) is drawn first and is not pushed out by a key heard once: an honest steward
   * republishes its head every 30 s, so a flood of throwaway keys that each announce once (one signature each) cannot
   * shut it out. Keys that each announce again share the draw at random (docs/overlays.md "What a witness takes on").
   */
  #strangerHead(steward: string, entry: Opened<LedgerEntry>): void {
    if (this.#refusedLately(steward, entry.address, 0)) {
      this.#strangerHeadsIgnored++;
      return;
    }
    const returning = this.#strangerSeen.delete(steward);
    this.#strangerSeen.add(steward);
    if (this.#strangerSeen.size > MAX_STRANGERS_SEEN) this.#strangerSeen.delete(this.#strangerSeen.values().next().value!);
    const waiting = this.#strangerWaiting.get(steward);
    if (waiting) {
      if (entry.record.seq > waiting.entry.record.seq) waiting.entry = entry;
      waiting.returning ||= returning;
    } else {
      if (this.#strangerWaiting.size >= MAX_STRANGER_WAITING) {
        // full: a random key heard once makes room; when all returned, this head goes unless it returned too
        const once = [...this.#strangerWaiting].filter(([, w]) => !w.returning).map(([k]) => k);
        const pool = once.length ? once : returning ? [...this.#strangerWaiting.keys()] : [];
        this.#strangerHeadsIgnored++;
        this.#failLog.warn(STRANGERS, 'WITNESS_STRANGER_LIMIT', 'heads from keys neither held nor named come faster than the witness takes them: some are dropped (an honest steward republishes its head)', { steward, waiting: this.#strangerWaiting.size });
        if (!pool.length) return;
        this.#strangerWaiting.delete(this.#draw(pool));
      }
      this.#strangerWaiting.set(steward, { entry, returning });
    }
    this.#startStrangers();
  }

  /** One of `keys`, at random. */
  #draw(keys: readonly string[]): string {
    return keys[Math.min(keys.length - 1, Math.floor(this.#random() * keys.length))]!;
  }

  /**
   * Start catch-ups of waiting keys neither held nor named (one that returned first, else any, at random) while fewer
   * than MAX_STRANGER_CATCHUPS run and the STRANGER_DIALS_PER_MINUTE bucket has a token (then again when it has).
   */
  #startStrangers(): void {
    if (this.#stopped || !this.#strangerWaiting.size) return;
    let running = 0;
    for (const b of this.#busy.keys()) if (!this.#held.has(b)) running++;
    while (this.#strangerWaiting.size && running < MAX_STRANGER_CATCHUPS && this.#strangerDials.has()) {
      const returned = [...this.#strangerWaiting].filter(([, w]) => w.returning).map(([k]) => k);
      const steward = this.#draw(returned.length ? returned : [...this.#strangerWaiting.keys()]);
      const { entry } = this.#strangerWaiting.get(steward)!;
      this.#strangerWaiting.delete(steward);
      if (!this.#busy.has(steward) && !this.#held.has(steward)) {
        this.#strangerDials.take();
        running++;
      }
      this.#schedule(steward, entry);
    }
    if (this.#strangerWaiting.size && running < MAX_STRANGER_CATCHUPS && !this.#strangerTimer) {
      // no token: try again when one is due (not only on the next head)
      const wait = ((1 - this.#strangerDials.available()) / STRANGER_DIALS.ratePerSec) * 1000;
      this.#strangerTimer = setLongTimeout(() => {
        this.#strangerTimer = undefined;
        this.#startStrangers();
      }, Math.max(1, Math.ceil(wait))).unref();
    }
  }

  /**
   * One catch-up per steward at a time; a head heard meanwhile waits, and only the newest one. Without a head (the
   * start catch-up), up to what the steward serves; nothing if one already runs.
   */
  #schedule(steward: string, entry: Opened<LedgerEntry> | undefined): void {
    // every fetch, and so every countersignature, starts here: none for a steward off witness.stewards
    if (this.#stopped || !this.#listed(steward)) return;
    const busy = this.#busy.get(steward);
    if (busy) {
      if (entry && (!busy.next || entry.record.seq > busy.next.record.seq)) busy.next = entry;
      return;
    }
    const state: { run: Promise<void>; next?: Opened<LedgerEntry> } = { run: Promise.resolve() };
    this.#busy.set(steward, state);
    state.run = (async () => {
      let next: { head: Opened<LedgerEntry> | undefined } | undefined = { head: entry };
      while (next && !this.#stopped) {
        const h: Opened<LedgerEntry> | undefined = next.head;
        let more = false;
        await this.#inSlot(steward, async () => {
          more = await this.#catchUp(steward, h);
        }).catch((e) => {
          if (this.#stopped) return; // the fetch was aborted by stop
          const code = String((e as C0Error).code ?? 'ERROR');
          // at start the steward may not be reachable yet (it is asked again): shown, and warned of once the last round failed
          if (!h && code.startsWith('NET_')) return this.#startUnreached(steward, this.#failureCode(e), e as Error);
          // rate-limited: a steward down, or any number of throwaway keys, cannot fill the log
          const stranger = !this.#known(steward);
          this.#failLog.warn(stranger ? STRANGERS : steward, code, 'witness catch-up failed', { steward, err: (e as Error).message });
        });
        // Held back (not reached, or refused in a way that may clear): fetched again when the hold-back ends.
        if (h) this.#retryWhenDue(steward, h);
        // A step cosigned and the head is further: the next step, as a round of its own (it waits for a place like
        // any other), unless a newer head was heard meanwhile (it goes at least as far).
        const heard = state.next;
        delete state.next;
        if (heard && (!more || !h || heard.record.seq > h.record.seq)) next = { head: heard };
        else next = more ? { head: h } : undefined;
      }
      this.#busy.delete(steward);
      // A steward never cosigned counted as taken on only while its catch-up ran: heads from keys that serve nothing
      // cannot fill maxStewards. Its last refusal is still shown, for the most recent MAX_SHOWN_STRANGERS such keys
      // without a list (a listed steward's last refusal always stays).
      if (!this.cfg.stewards && !this.#held.has(steward)) this.#shownStranger(steward);
      if (!this.cfg.stewards) this.#startStrangers();
    })();
  }

  /** Run `fn` in one of CATCHUP_SLOTS places; a steward this witness holds a head for is let in before a new one. */
  async #inSlot(steward: string, fn: () => Promise<void>): Promise<void> {
    if (this.#running >= CATCHUP_SLOTS) {
      await new Promise<void>((go) => this.#waiting.push({ steward, go }));
      if (this.#stopped) return;
    } else this.#running++;
    try {
      await fn();
    } finally {
      const i = this.#waiting.findIndex((w) => this.#held.has(w.steward));
      const next = this.#waiting.splice(i >= 0 ? i : 0, 1)[0];
      // the place passes to the next waiting, or is freed
      if (next) next.go();
      else this.#running--;
    }
  }

  /** Entries one step fetches and cosigns at most. */
  get #step(): number {
    return Math.max(2, Math.min(this.cfg.stepEntries ?? MAX_COSIGN_ENTRIES, MAX_COSIGN_ENTRIES));
  }

  /**
   * One step of a catch-up: fetch the steward's entries past the held head up to `entry` (a head heard), or without
   * one up to what it serves, at most #step of them, and cosign them. True when that step was cosigned and there is
   * more to fetch (the head is further, or the steward served a whole step): the caller runs the next step.
   */
  async #catchUp(steward: string, entry: Opened<LedgerEntry> | undefined): Promise<boolean> {
    const held = await this.witness.held(steward);
    const from = Math.max(0, held.length - 1);
    if (!entry) return this.#catchUpServed(steward, held, from);
    const target = entry.record.seq + 1;
    // A shorter head: an old one heard late (gossip, or any peer relaying it again), or a steward whose ledger went
    // back (restored from an old copy). The steward is asked for the held head's entry to tell which (#shorterHead).
    if (target < held.length) return this.#shorterHead(steward, entry, held);
    if (target === held.length && entry.address === held.head) {
      // the head held, republished: the steward has no receipt for it yet (or gossip lost ours): give the kept one again
      await this.#resend(steward);
      return false;
    }
    if (this.#refusedLately(steward, entry.address, held.length)) return false;
    // Fetch from the entry before the held head, so a rewritten entry at the held seq is seen (equivocation), up to
    // the announced head, or one step of it when it is further: a ledger longer than one cosign (a witness that
    // joins late or fell far behind) is witnessed in steps, each cosigned and published.
    const to = Math.min(target, from + this.#step);
    const refused = { head: entry.address, held: held.length };
    let entries: Uint8Array[];
    try {
      entries = await this.#fetch(steward, from, to);
    } catch (e) {
      if (this.#stopped) throw e;
      if ((e as C0Error).code === WITNESS_TOO_LARGE) {
        this.#refused(steward, WITNESS_TOO_LARGE, refused);
        throw e;
      }
      if ((e as C0Error).code === LEDGER_RANGE_INVALID) {
        // the steward itself says its ledger does not reach the held head: it went back (the head heard was old)
        await this.#rolledBackTo(steward, held, { served: servedLength(e), heard: target, head: entry.address });
        // held back as an unreached head is (asked again after the backoff, then less and less often)
        this.#unreached(steward, WITNESS_LEDGER_ROLLED_BACK, refused);
        return false;
      }
      // Nothing served: the announced head is itself a steward-signed entry; a fork of the held head is kept.
      const shown = await this.witness.observeHead(steward, entry.bytes);
      if (!shown) {
        // not reached, or no answer in time: this head is held back a while (the backoff), and the failure shown
        this.#unreached(steward, this.#failureCode(e), refused);
        throw e;
      }
      await this.#publish(steward, shown, refused);
      return false;
    }
    this.#reached(steward);
    // served from the held head's seq on: the steward's ledger is not shorter than the held head (any more)
    if (entries.length > 0) this.#notShorter(steward);
    if (entries.length === 0) {
      const shown = await this.witness.observeHead(steward, entry.bytes);
      if (shown) await this.#publish(steward, shown, refused);
      else if (held.length > 0) {
        // nothing at the held head's seq (the ledger stops exactly one entry short of it; one shorter still is
        // LEDGER_RANGE_INVALID above): it went back, and the head heard is one it signed before
        await this.#rolledBackTo(steward, held, { served: from, heard: target, head: entry.address });
        this.#unreached(steward, WITNESS_LEDGER_ROLLED_BACK, refused);
      }
      return false;
    }
    const served = entries.find((b) => {
      try {
        return (open(b, POOL_TYPE).record as LedgerEntry).seq === entry.record.seq;
      } catch {
        return false;
      }
    });
    if (served && compareBytes(served, entry.bytes) !== 0) {
      // It announced one entry at this seq and serves another: both are its signatures. Kept and published only
      // about a steward held or listed (any key can do this); nothing is cosigned either way.
      const ev = await this.witness.keep(steward, entry.bytes, served);
      if (ev) await this.#publish(steward, ev, refused);
      else this.#refused(steward, WITNESS_ERR.CONFLICT, refused); // about a key neither held nor named: nothing kept
      return false;
    }
    const cosigned = await this.#cosign(steward, entries, refused);
    if (cosigned && to < target && entries.length === to - from) {
      this.o.log.info({ steward, length: to, head: target }, 'witness catch-up: one step cosigned, the next follows');
      return true;
    }
    return false;
  }

  /** Whether `head` of `steward` was refused within REFUSED_HEAD_MS at this held length (any head, for a key neither held nor named). */
  #refusedLately(steward: string, head: string, held: number): boolean {
    const r = this.#refusedHeads.get(steward);
    if (!r) return false;
    if (this.#mono() >= r.until) {
      // a failed fetch's count stays for the backoff (until it is cosigned, or forgotten as the oldest)
      if (!r.failures) this.#forgetHeldBack(steward);
      return false;
    }
    const stranger = !this.#known(steward);
    if (!stranger && (r.head !== head || r.held !== held)) return false;
    this.o.log.debug({ steward, head, refused: r.head }, 'a head refused lately: not fetched again');
    return true;
  }

  /** Note a refusal (`GET /v1/witness`), and for a head heard, remember it (REFUSED_HEAD_MS, or `hold`). */
  #refused(steward: string, code: string, heard?: { head: string; held: number }, hold = REFUSED_HEAD_MS, failures?: number): void {
    this.#last.set(steward, { refused: code, at: this.o.clock(), ...(heard ? { head: heard.head } : {}) });
    if (!heard) return;
    this.#forgetHeldBack(steward);
    const at = this.#mono();
    this.#refusedHeads.set(steward, { ...heard, at, until: at + hold, ...(failures ? { failures } : {}), mayClear: failures !== undefined || !FINAL_REFUSALS.has(code) });
    if (this.#refusedHeads.size > MAX_REFUSED_HEADS) {
      // the oldest key neither held nor named goes first: throwaway keys cannot push out a held steward's refusal
      let drop = this.#refusedHeads.keys().next().value!;
      for (const k of this.#refusedHeads.keys()) {
        if (!this.#known(k)) {
          drop = k;
          break;
        }
      }
      this.#forgetHeldBack(drop);
    }
  }

  /** A steward this witness holds a ledger of, or is named for (`witness.stewards`); any other key is a stranger. */
  #known(steward: string): boolean {
    return this.#held.has(steward) || this.cfg.stewards?.includes(steward) === true;
  }

  /** Forget the head held back for `steward`, and its retry. */
  #forgetHeldBack(steward: string): void {
    this.#refusedHeads.delete(steward);
    this.#retries.get(steward)?.timer.clear();
    this.#retries.delete(steward);
  }

  /**
   * `entry`, a head of `steward` (held or named), is held back after a failed fetch or a refusal that may clear: fetch
   * it again when the hold-back ends, as if announced again. Gossip drops the steward's republications of it as
   * duplicates (the same message), so without this the witness would wait for the steward's next append, which on a
   * quiet overlay may never come, and the steward would republish for ever. One timer per steward, for this hold-back
   * only: a newer head or refusal replaces it, a cosign or stop clears it; a retry that fails again is held back the
   * doubled wait (#unreached), so a steward that stays unreachable costs a dial per backoff step, at most one per
   * REFUSED_HEAD_MS.
   */
  #retryWhenDue(steward: string, entry: Opened<LedgerEntry>): void {
    const r = this.#refusedHeads.get(steward);
    if (this.#stopped || !r?.mayClear || r.head !== entry.address) return;
    // only for a hold-back still running: one that has ended was retried already, and a retry that settled nothing (a
    // steward that answered with no entries) is not retried again until the head is announced again, never in a loop
    if (this.#mono() >= r.until) return;
    if (!this.#known(steward)) return; // strangers: bounded by their own limits
    if (this.#retries.get(steward)?.for === r) return; // armed for this hold-back already
    this.#retries.get(steward)?.timer.clear();
    const timer = setLongTimeout(() => {
      if (this.#retries.get(steward)?.timer !== timer) return;
      this.#retries.delete(steward);
      if (this.#stopped || this.#refusedHeads.get(steward) !== r) return; // covered, or another head or refusal since
      // a timer can fire a little before the monotonic clock reaches the end: wait the rest
      if (this.#mono() < r.until) return this.#retryWhenDue(steward, entry);
      this.o.log.debug({ steward, head: r.head, failures: r.failures }, 'a head held back: fetched again now that its hold-back ended (the steward’s republications of it are duplicates gossip does not deliver)');
      this.#schedule(steward, entry);
    }, Math.max(1, Math.ceil(r.until - this.#mono()))).unref();
    this.#retries.set(steward, { timer, for: r });
  }

  /**
   * The fetch for a head heard failed (`code`: NET_DIAL, NET_DEADLINE, …): hold that head back UNREACHED_RETRY_MS,
   * doubled for each failure of it in a row, at most REFUSED_HEAD_MS; shown as the steward's last refusal.
   */
  #unreached(steward: string, code: string, heard: { head: string; held: number }): void {
    const prev = this.#refusedHeads.get(steward);
    const again = prev?.failures && prev.head === heard.head && prev.held === heard.held && this.#mono() - prev.until < REFUSED_HEAD_MS;
    const failures = again ? prev.failures! + 1 : 1;
    this.#refused(steward, code, heard, Math.min(REFUSED_HEAD_MS, UNREACHED_RETRY_MS * 2 ** Math.min(failures - 1, 20)), failures);
  }

  /**
   * The start catch-up: the entries from `from` to what the steward serves (one step at most), cosigned unless they
   * end at the held head. True when a whole step was served and cosigned: it may serve more (the next step).
   */
  async #catchUpServed(steward: string, held: { length: number; head: string }, from: number): Promise<boolean> {
    let entries: Uint8Array[];
    try {
      entries = await this.#fetch(steward, from, from + this.#step);
    } catch (e) {
      // asked from the held head's entry, the steward answers that its ledger is shorter: it went back
      if (held.length === 0 || (e as C0Error).code !== LEDGER_RANGE_INVALID || this.#stopped) throw e;
      this.#startPending.delete(steward);
      this.#reached(steward);
      await this.#rolledBackTo(steward, held, { served: servedLength(e) });
      return false;
    }
    this.#startPending.delete(steward);
    this.#reached(steward);
    if (entries.length > 0) this.#notShorter(steward);
    if (entries.length === 0) {
      // nothing at the held head's seq: the steward's ledger stops short of the head it signed and this witness holds
      if (held.length > 0) await this.#rolledBackTo(steward, held, { served: from });
      return false;
    }
    if (entries.length === 1 && held.length > 0) {
      let address: string | undefined;
      try {
        address = open(entries[0]!, POOL_TYPE, { trusted: true }).address;
      } catch {
        // cosign refuses it below
      }
      if (address === held.head) {
        // the held head, nothing past it: nothing to cosign; its receipt may never have left (killed before the publish)
        await this.#resend(steward);
        return false;
      }
    }
    return (await this.#cosign(steward, entries)) && entries.length === this.#step;
  }

  /** The steward's entries [from, target) over ledger/1, range by range, within CATCHUP_BUDGET_MS and MAX_CATCHUP_BYTES. */
  async #fetch(steward: string, from: number, target: number): Promise<Uint8Array[]> {
    const entries: Uint8Array[] = [];
    let bytes = 0;
    // the whole catch-up's time, and the role's stop (a steward that never answers cannot hold it)
    // not AbortSignal.any: on Node 20 it leaves an entry on the role's stop signal per catch-up, for good (signals.ts)
    const timeout = clearableTimeoutSignal(CATCHUP_BUDGET_MS);
    const linked = linkedSignal([timeout.signal, this.#abort.signal]);
    const budget = linked.signal;
    try {
      for (let at = from; at < target; at += MAX_LEDGER_RANGE) {
        const to = Math.min(target, at + MAX_LEDGER_RANGE);
        const frames = await this.o.net.request(steward, LEDGER_PROTOCOL, [{ from: at, to } as never], { limits: { deadlineMs: 30_000, maxResponseFrames: to - at }, signal: budget });
        for (const f of frames) {
          if (!(f instanceof Uint8Array)) continue;
          bytes += f.length;
          if (bytes > MAX_CATCHUP_BYTES) {
            this.#refused(steward, WITNESS_TOO_LARGE);
            throw new C0Error(WITNESS_TOO_LARGE, `the entries past the held head pass ${MAX_CATCHUP_BYTES} bytes`);
          }
          entries.push(f);
        }
        if (frames.length < to - at) break; // the steward has no more: what it served is checked by cosign
      }
      return entries;
    } finally {
      timeout.clear();
      linked.clear();
    }
  }

  /**
   * Cosign `entries` and publish the receipt (true); a refusal is noted (and evidence published), with the head heard
   * if any (false).
   */
  async #cosign(steward: string, entries: Uint8Array[], heard?: { head: string; held: number }): Promise<boolean> {
    try {
      const receipt = await this.witness.cosign(steward, entries);
      this.#last.set(steward, { length: receipt.record.length, head: receipt.record.head, at: this.o.clock() });
      this.#forgetHeldBack(steward);
      this.#strangers.delete(steward);
      this.#rolledBack.delete(steward);
      this.#held.add(steward);
      await this.#sendReceipt(steward, receipt);
      this.o.log.info({ steward, length: receipt.record.length, head: receipt.record.head }, 'cosigned the steward’s head');
      return true;
    } catch (e) {
      if (!(e instanceof C0Error)) throw e;
      // this node's own store refused the write (a full or failing disk): nothing about the steward, and the store
      // reopens once it can write (seconds after space returns), so the head is tried again on the short backoff
      if (heard && OWN_STORE_FAILURES.has(e.code)) this.#unreached(steward, e.code, heard);
      else this.#refused(steward, e.code, heard);
      this.o.log.warn({ steward, code: e.code, held: (e.detail as { held?: unknown } | undefined)?.held }, 'refused to cosign the steward’s head');
      const ev = (e.detail as { evidence?: { a: Uint8Array; b: Uint8Array; form?: EquivocationForm; record?: Uint8Array }; seq?: number } | undefined) ?? {};
      if (e.code === 'WITNESS_EQUIVOCATION' && ev.evidence && ev.seq !== undefined) {
        await this.#publish(steward, { steward, seq: ev.seq, a: ev.evidence.a, b: ev.evidence.b, ...(ev.evidence.form ? { form: ev.evidence.form } : {}), ...(ev.evidence.record ? { record: ev.evidence.record } : {}) }, heard);
      }
      return false;
    }
  }

  /**
   * Publish `receipt` and note when, and whether it reached a peer (a publish may reach none: no mesh yet); `paced`:
   * its RECEIPT_PACE token is already taken.
   */
  async #sendReceipt(steward: string, receipt: Opened<WitnessReceipt>, paced = false): Promise<boolean> {
    if (!paced) this.#receiptPace.take(); // a new receipt (bounded by the catch-up places) uses up the pace too, never waits for it
    let reached = false;
    try {
      const r = (await this.o.net.publish('pool-witness', receipt.bytes)) as { recipients?: number } | undefined;
      reached = r?.recipients !== 0;
    } catch (e) {
      this.o.log.debug({ steward, err: (e as Error).message }, 'witness receipt not published');
    }
    if (!reached) this.o.log.debug({ steward, length: receipt.record.length }, 'witness receipt reached nobody: given again when the steward republishes its head');
    this.#sent.delete(steward);
    this.#sent.set(steward, { at: this.#mono(), reached });
    if (this.#sent.size > MAX_REFUSED_HEADS) this.#sent.delete(this.#sent.keys().next().value!);
    return reached;
  }

  /**
   * A head of `steward` shorter than the one held. An old head heard late (gossip delivers it late, or any peer relays
   * it again: the steward's signature on it stays valid) is no fault, and a replay must not raise an alarm; a steward
   * whose data directory was restored from an old copy announces shorter heads too, and nothing else would tell the
   * witness until its ledger grew past the held length again. The head alone cannot tell them apart (the restored
   * ledger's head can be the very entry the witness cosigned on the way), so the steward is asked for the held
   * head's entry, one entry over ledger/1, at most once per ROLLBACK_PROBE_MS per steward (a replay flood costs that):
   * served and the same, the head was old (nothing happens); not served (LEDGER_RANGE_INVALID, or no entry), the
   * steward's ledger went back (#rolledBackTo); served and another entry at that seq, that is equivocation, kept and
   * published as any other. Not reached: nothing is concluded.
   */
  async #shorterHead(steward: string, entry: Opened<LedgerEntry>, held: { length: number; head: string }): Promise<false> {
    await this.#probe(steward, held, { length: entry.record.seq + 1, head: entry.address });
    return false;
  }

  /**
   * Ask `steward` for the held head's entry (one entry over ledger/1), at most once per `gap` per steward,
   * and conclude as #shorterHead says: the same entry, nothing; not served, rolled back; another entry, equivocation.
   * `heard`: the shorter head that made the witness ask, if any (without one: #checkHeld).
   */
  async #probe(steward: string, held: { length: number; head: string }, heard?: { length: number; head: string }, gap = ROLLBACK_PROBE_MS): Promise<void> {
    const now = this.#mono();
    const last = this.#probedAt.get(steward);
    if (held.length === 0 || (last !== undefined && now - last < gap)) return;
    this.#probedAt.set(steward, now);
    const seen = heard ? { heard: heard.length, head: heard.head } : {};
    let entries: Uint8Array[];
    try {
      entries = await this.#fetch(steward, held.length - 1, held.length);
    } catch (e) {
      if (this.#stopped) throw e;
      if ((e as C0Error).code === LEDGER_RANGE_INVALID) {
        this.#probeMissed.delete(steward);
        return this.#rolledBackTo(steward, held, { served: servedLength(e), ...seen });
      }
      this.#probeMissed.add(steward);
      this.o.log.debug({ steward, heard: heard?.length, held: held.length, err: (e as Error).message }, 'the held head’s entry asked for: the steward was not reached to check it');
      return;
    }
    this.#reached(steward);
    this.#probeMissed.delete(steward);
    const [served] = entries;
    if (!served) return this.#rolledBackTo(steward, held, { served: held.length - 1, ...seen });
    let address: string | undefined;
    try {
      address = open(served, POOL_TYPE, { trusted: true }).address;
    } catch {
      // not an entry: observeHead ignores it below
    }
    this.#notShorter(steward);
    if (address === held.head) {
      this.o.log.debug({ steward, heard: heard?.length, held: held.length }, heard ? 'an old head heard late: the steward still serves the held head' : 'a held steward checked: it still serves the held head');
      return;
    }
    // another entry at the held head's seq, signed by the steward: two entries at one seq
    const shown = await this.witness.observeHead(steward, served);
    if (shown) await this.#publish(steward, shown, heard ? { head: heard.head, held: held.length } : undefined);
  }

  /**
   * The steward's ledger is shorter than the head this witness holds for it (restored from an old copy, truncated):
   * refused WITNESS_LEDGER_ROLLED_BACK, shown by GET /v1/witness (`rolledBack`, and `last`), logged at warn
   * (rate-limited per steward), and the held receipt published again (paced):
   * the steward then refuses it as WITNESS_LENGTH_BEYOND and its own status shows a witness holding more entries than
   * its ledger.
   */
  async #rolledBackTo(steward: string, held: { length: number; head: string }, seen: { served?: number; heard?: number; head?: string }): Promise<void> {
    const info = { held: held.length, ...(seen.heard === undefined ? {} : { heard: seen.heard }), ...(seen.served === undefined ? {} : { served: seen.served }), ...(seen.head ? { head: seen.head } : {}) };
    this.#rolledBack.set(steward, { ...info, at: this.o.clock() });
    this.#noteRolledBack(steward, seen.head);
    this.#failLog.warn(steward, WITNESS_LEDGER_ROLLED_BACK, 'the steward’s ledger is shorter than the head this witness cosigned (restored from an old copy, or truncated): nothing shorter is cosigned, the held receipt is given to it again', { steward, ...info });
    this.#rollbackResends.get(steward)?.clear();
    this.#rollbackResends.delete(steward);
    if (!(await this.#resend(steward, true))) this.#resendRolledBack(steward, 0);
  }

  /** The held receipt given to a rolled-back steward reached nobody: give it again after a while (see #rollbackResends). */
  #resendRolledBack(steward: string, attempt: number): void {
    if (this.#stopped || attempt >= ROLLBACK_RESENDS || this.#rollbackResends.has(steward)) return;
    const timer = setLongTimeout(() => {
      if (this.#rollbackResends.get(steward) !== timer) return;
      this.#rollbackResends.delete(steward);
      if (this.#stopped || !this.#rolledBack.has(steward)) return;
      void this.#resend(steward, true)
        .then((reached) => reached || this.#resendRolledBack(steward, attempt + 1))
        .catch((e) => this.o.log.debug({ steward, err: (e as Error).message }, 'held receipt not given again'));
    }, (this.cfg.rollbackResendMs ?? RECEIPT_RETRY_MS) * 2 ** attempt).unref();
    this.#rollbackResends.set(steward, timer);
  }

  /**
   * A receipt for the head held, signed now: for a rolled-back steward. The one kept is the bytes first published,
   * which this node's gossip (and every node that relayed it) drops as a duplicate for its seen-cache lifetime, so
   * given again it would reach nobody, the restarted steward included. Not stored; any node keeps it within its
   * bounded set of one witness's receipts.
   */
  async #freshReceipt(steward: string): Promise<Opened<WitnessReceipt> | undefined> {
    const held = await this.witness.held(steward);
    if (held.length === 0) return undefined;
    return seal(WITNESS_TYPE, { steward, length: held.length, head: held.head, witnessedAt: this.o.clock() } satisfies WitnessReceipt as never, this.identity.signer) as Opened<WitnessReceipt>;
  }

  /**
   * The steward served an entry at the held head's seq: its ledger is at least as long as the head held, so the mark
   * that it is shorter (#rolledBack) no longer holds and goes, with its receipt resends. Left, it went stale: a
   * restored ledger grown past the held length still read "shorter than the length 24 held (it serves 20 entries)"
   * while it served 26 (QA witness pass, finding 8). What it is now, a fork, is refused and kept as evidence (`last`,
   * `evidence`); the same entry as the held head is no fault at all.
   */
  #notShorter(steward: string): void {
    if (!this.#rolledBack.delete(steward)) return;
    this.#rollbackResends.get(steward)?.clear();
    this.#rollbackResends.delete(steward);
    this.o.log.info({ steward }, 'the steward serves the held head’s seq again: its ledger is no longer shorter than the head this witness holds');
  }

  /** Show WITNESS_LEDGER_ROLLED_BACK as the steward's last refusal (with the head heard, if any). */
  #noteRolledBack(steward: string, head?: string): void {
    this.#last.set(steward, { refused: WITNESS_LEDGER_ROLLED_BACK, at: this.o.clock(), ...(head ? { head } : {}) });
  }

  /**
   * The steward still asks for a receipt of the head held: publish the kept one again, at most once per
   * RECEIPT_REPUBLISH_MS. `rolledBack`: its ledger went back (#rolledBackTo, itself at most once per ROLLBACK_PROBE_MS
   * or per hold-back): given at once, within the pace, so the steward learns a witness holds more than it has.
   */
  async #resend(steward: string, rolledBack = false): Promise<boolean> {
    const last = this.#sent.get(steward);
    if (!rolledBack && last && this.#mono() - last.at < (last.reached ? RECEIPT_REPUBLISH_MS : RECEIPT_RETRY_MS)) return true;
    // paced (RECEIPT_PACE): many held keys re-announced at once must not make the witness flood its neighbours; one
    // left out is given at the steward's next republication
    if (!this.#receiptPace.take()) {
      this.o.log.debug({ steward }, 'receipt not given again now: publishing at the pace neighbours accept (given at a later republication)');
      return false;
    }
    const receipt = rolledBack ? await this.#freshReceipt(steward) : await this.witness.receipt(steward);
    if (!receipt || this.#stopped) return true;
    const reached = await this.#sendReceipt(steward, receipt, true);
    this.o.log.info({ steward, length: receipt.record.length, head: receipt.record.head, reached }, rolledBack ? 'published the receipt for the held head again (the steward’s ledger is shorter)' : 'published the receipt for the held head again (the steward still asks for it)');
    return reached;
  }

  /** Keep showing the last refusal of `steward` (neither held nor listed): the most recent MAX_SHOWN_STRANGERS only. */
  #shownStranger(steward: string): void {
    this.#strangers.delete(steward);
    if (!this.#last.has(steward)) return;
    this.#strangers.add(steward);
    for (const s of this.#strangers) {
      if (this.#strangers.size <= MAX_SHOWN_STRANGERS) break;
      this.#strangers.delete(s);
      this.#last.delete(s);
    }
  }

  /** Publish kept evidence as a `pool-evidence/1` record (the refusal noted, with the head heard if any). */
  async #publish(steward: string, ev: Equivocation & { record?: Uint8Array }, heard?: { head: string; held: number }): Promise<void> {
    this.#refused(steward, WITNESS_ERR.EQUIVOCATION, heard);
    // the record kept with the pair (so gossiping it again later is the same record), else one sealed now
    const rec: EquivocationEvidence = { steward, seq: ev.seq, held: ev.a, conflicting: ev.b, observedAt: this.o.clock(), ...(ev.form === 'successor' ? { form: 'successor' as const } : {}) };
    const bytes = ev.record ?? seal(EVIDENCE_TYPE, rec as never, this.identity.signer).bytes;
    this.#evidencePace.take(); // evidence just caught goes at once, and uses up the pace of the rounds
    await this.o.net.publish('pool-evidence', bytes).catch(() => {});
    this.o.log.warn({ steward, seq: ev.seq, form: ev.form ?? 'same-seq', evidence: open(bytes, EVIDENCE_TYPE, { trusted: true }).address }, 'published equivocation evidence');
  }

  /**
   * GET /v1/witness: per steward, the head held, the evidence pairs kept and (when something happened since start)
   * `last`. Every steward this witness holds a head for (at most maxStewards without a list), every one with evidence
   * kept and every one listed, read from the store (so a restart loses none of it), plus the recent refusals; but for
   * the stewards another overlay of this node names and this one does not (`elsewhere`), shown on theirs.
   */
  async status(): Promise<Record<string, unknown>> {
    const cap = this.cfg.stewards ? Infinity : this.#maxStewards;
    const held = new Map((await this.witness.heads(cap)).map((h) => [h.steward, { length: h.length, head: h.head }]));
    const kept = await this.witness.evidenceCounts(cap + (this.cfg.stewards?.length ?? 0));
    const here = new Set([...(this.cfg.stewards ?? []), ...this.#last.keys(), ...this.#rolledBack.keys()]);
    const elsewhere = new Set(this.cfg.elsewhere ?? []);
    const names = new Set([...[...held.keys(), ...kept.keys()].filter((s) => here.has(s) || !elsewhere.has(s)), ...here]);
    const out: Record<string, unknown> = {};
    for (const steward of names) {
      const last = this.#last.get(steward);
      out[steward] = {
        held: held.get(steward) ?? (await this.witness.held(steward)),
        // verified once per process (Witness.evidence): a pair that does not verify fails the call rather than counting
        evidence: kept.has(steward) ? (await this.witness.evidence(steward)).length : 0,
        ...(last ? { last } : {}),
        ...(this.#rolledBack.has(steward) ? { rolledBack: this.#rolledBack.get(steward) } : {}),
      };
    }
    // heads of another key than network.steward dropped before the witness heard them: a wrong network.steward's sign
    const foreign = this.o.foreignHeads?.();
    // cosigning while every member drops the receipts looked healthy (QA witness pass, finding 9): said with the list
    const named = this.cfg.overlayWitnesses;
    const notNamed = named && !named.includes(this.identity.did) && this.cfg.mode !== 'kept' ? { notNamed: { witnesses: [...named] } } : {};
    // the role off: what is listed is what it kept, read from the store; nothing is cosigned (docs/node.md "Changing roles")
    const role = this.cfg.mode === 'kept' ? { role: 'off' as const } : {};
    return { witness: this.identity.did, overlay: this.o.name, ...role, ...notNamed, stewards: out, ...(this.cfg.stewards || this.cfg.mode === 'kept' ? {} : { strangers: this.strangers() }), ...(foreign ? { foreignHeads: foreign } : {}) };
  }

  /**
   * Keys neither held nor named: how many are held back now (a head refused or not reached lately: none of their
   * heads is fetched meanwhile), how many of those were not reached, how many heads wait for a catch-up (drawn at
   * random), and how many of their heads were dropped without a fetch since start (held back, or pushed out of the
   * MAX_STRANGER_WAITING waiting). GET /v1/witness, metrics.
   */
  strangers(): { heldBack: number; unreached: number; waiting: number; ignored: number } {
    const now = this.#mono();
    let heldBack = 0;
    let unreached = 0;
    for (const [k, r] of this.#refusedHeads) {
      if (now >= r.until || this.#known(k)) continue;
      heldBack++;
      if (r.failures) unreached++;
    }
    return { heldBack, unreached, waiting: this.#strangerWaiting.size, ignored: this.#strangerHeadsIgnored };
  }

  /**
   * GET /v1/witness/evidence/:steward: the evidence kept about `steward`, each pair as the two steward-signed entries
   * (`a`, `b`) and the pool-evidence/1 record this witness signed for it (`record`), base64: anyone can check either
   * (`c0mpute record verify`, verifyEvidence) without trusting this node.
   */
  async evidenceOf(steward: string): Promise<{ witness: string; overlay: string; steward: string; evidence: Array<{ seq: number; form: EquivocationForm; a: string; b: string; record: string }> }> {
    const b64 = (u: Uint8Array) => Buffer.from(u).toString('base64');
    const kept: KeptEvidence[] = await this.witness.evidence(steward);
    return {
      witness: this.identity.did,
      overlay: this.o.name,
      steward,
      evidence: kept.map((e) => ({ seq: e.seq, form: e.form ?? 'same-seq', a: b64(e.a), b: b64(e.b), record: b64(e.record) })),
    };
  }

  /** Resolves once no catch-up runs or waits (the heads heard so far are dealt with). */
  async settled(): Promise<void> {
    while (this.#busy.size) await Promise.allSettled([...this.#busy.values()].map((b) => b.run));
  }

  /** Stop taking heads; the catch-ups running end, those waiting for a place do not start. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    this.#gossipTimer?.clear();
    this.#checkTimer?.clear();
    this.#offConnect?.();
    this.#strangerTimer?.clear();
    for (const r of this.#retries.values()) r.timer.clear();
    this.#retries.clear();
    for (const t of this.#rollbackResends.values()) t.clear();
    this.#rollbackResends.clear();
    this.#strangerWaiting.clear();
    this.#failLog.stop();
    for (const t of this.#startTimers.splice(0)) t.clear();
    for (const w of this.#waiting.splice(0)) w.go();
    await Promise.allSettled([...this.#busy.values()].map((b) => b.run));
  }
}
