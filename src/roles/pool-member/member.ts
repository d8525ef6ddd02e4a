/**
 * The pool member role (docs/pools.md; issue #13 "The coordinator"): every
 * member runs it. It keeps the members' liveness (a ping on `/c0mpute/pool/1`),
 * derives the elected coordinator per epoch, acts on new rosters, and gives the
 * provider role the hooks (hooks.ts) that make it quote and sign for the pool.
 * As a member it serves the others' requests and runs a job at most once,
 * whoever asks. The elected copy's work — gates, dispatch, the call, the output
 * guard, settlement, closing a crashed coordinator's trail — is coordinator.ts.
 *
 * The members talk on `/c0mpute/pool/1` (protocol.ts; answering them: serve.ts); per-member figures: status.ts.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { C0Error } from '../../errors.js';
import { open, type Opened } from '../../records/envelope.js';
import { T, type Advert, type Job, type Offer, type PoolDispatch, type PoolMembership, type PoolRoster, type Receipt } from '../../records/kinds.js';
import type { Signer } from '../../records/ed25519.js';
import type { CborValue } from '../../records/cbor.js';
import type { Money } from '../../records/money.js';
import { monotonicClock, type Clock } from '../../util/clock.js';
import type { Logger } from '../../util/log.js';
import { coordinatorRanking, epochOf, fits, poolHardware } from '../../pools/choice.js';
import { clockSample, judgeClocks, offsetWords, type ClockSample, type ClockVerdict } from '../../pools/clock.js';
import { DEFAULT_SKEW_MS } from '../../records/freshness.js';
import { admit, type PoolGates } from '../../pools/gates.js';
import { TRAIL_KEPT_BYTES, TRAIL_KEPT_ENTRIES, type DispatchTrail, type RunLog, type TrailKeep } from '../../pools/trail.js';
import type { ExecContext, Executor } from '../provider/executors.js';
import type { SlotRun } from '../provider/provider.js';
import type { ProviderPoolHooks } from './hooks.js';
import { TrailFigures } from './status.js';
import type { PoolReply } from './protocol.js';
import { serveMember } from './serve.js';
import { RosterState } from './roster-state.js';
import { code, PoolCoordinator, type PoolMetrics } from './coordinator.js';
import { setLongTimeout, type LongTimer } from '../../util/timers.js';
import { TrailSync } from './sync.js';
import { RunResults } from './results.js';
import { duration, isoTime } from '../../market/say.js';

export { POOL_PROTOCOL, type PoolReply } from './protocol.js';
export { TRAIL_KEPT_BYTES, TRAIL_KEPT_ENTRIES } from '../../pools/trail.js';


export interface PoolMemberOptions extends PoolGates {
  /** Longest a coordinator waits for a member's answer (besides the job's own timeout), ms. */
  memberTimeoutMs: number;
  /** Ping the other members this often, ms; a member unheard for 3× this is not live. */
  livenessMs: number;
  /** Open dispatches another coordinator may keep in this member's trail (`op: trail`); more are refused POOL_TRAIL_FULL. */
  maxOpenDispatches: number;
  /**
   * Dispatches another coordinator may keep in this member's trail, closed ones included (config pool.maxKeptDispatches,
   * default TRAIL_KEPT_ENTRIES), and bytes of their dispatch, job and offer envelopes (pool.maxKeptBytes, default
   * TRAIL_KEPT_BYTES): past either its earliest-dated closed ones are dropped for a new one, or it is refused
   * POOL_TRAIL_FULL (docs/pools.md "Dispatch trail").
   */
  maxKeptDispatches?: number;
  maxKeptBytes?: number;
  /**
   * The clock-skew window buyers apply to offers (network.clockSkewMs; default DEFAULT_SKEW_MS): a member whose clock is
   * further than this from the pool's (the median of the live members' clocks) is not elected (docs/pools.md "Clocks and
   * the election").
   */
  clockSkewMs?: number;
}

/** How much of its trail another coordinator may keep here (DispatchTrail.record's `keep`); `evict`: drop its earliest closed entries for a new one. */
export function trailKeep(o: PoolMemberOptions, evict: boolean): TrailKeep {
  return { entries: o.maxKeptDispatches ?? TRAIL_KEPT_ENTRIES, bytes: o.maxKeptBytes ?? TRAIL_KEPT_BYTES, evict };
}

/**
 * How long before the roster in use expires a member warns (docs/pools.md "Roster expiry"): a day, or a tenth of the
 * roster's lifetime when that is shorter.
 */
export function expiryWarningMs(r: PoolRoster): number {
  return Math.min(24 * 3600_000, Math.max(0, r.expiresAt - r.issuedAt) / 10);
}

export const POOL_MEMBER_DEFAULTS: PoolMemberOptions = { maxInputBytes: 512 * 1024, sizeParam: 'maxTokens', maxSizeParam: 8192, memberTimeoutMs: 30_000, livenessMs: 2000, maxOpenDispatches: 64 };

/** How far ahead of this member's clock a job another member dispatched may date its trail entry (as the record store bounds a heard job). */
export const TRAIL_HORIZON_MS = 30 * 24 * 3600_000;
/** The most workloads a member's ping may list (an advert's bound), each at most this long. */
const MAX_WORKLOADS = 64;
const MAX_WORKLOAD_LEN = 128;

/** A member's workload list as it came in a ping, or undefined when it is not one (the member is then taken to run any). */
export function workloadList(v: unknown): string[] | undefined {
  if (!Array.isArray(v) || v.length > MAX_WORKLOADS || !v.every((x) => typeof x === 'string' && x.length <= MAX_WORKLOAD_LEN)) return undefined;
  return v as string[];
}


/**
 * The provider role's slots (Provider.takeSlot/giveSlot): `take` gives the run's abort signal (the provider's
 * shutdown aborts it) and the hooks that record its exec process group for reaping after a crash; undefined = busy.
 */
export interface PoolSlots {
  take(job: string): SlotRun | undefined;
  give(job: string): void;
}

export interface PoolMemberDeps {
  did: string;
  signer: Signer;
  roster: Opened<PoolRoster>;
  membership: Opened<PoolMembership>;
  options: PoolMemberOptions;
  /** The wall clock: epochs (shared by every member), signed times, deadlines. */
  clock: Clock;
  /**
   * The monotonic clock (default `monotonicClock`) for the liveness window: when each member last answered is a
   * duration this member measures for itself, so a wall-clock step does not keep a member that went down live.
   */
  monoClock?: Clock;
  log: Logger;
  trail: DispatchTrail;
  runs: RunLog;
  /** This member's own executors (the work it runs when chosen). */
  executor: (workload: string) => Executor | undefined;
  /** The workloads this member runs (`provider.workloads`), told to the others in pings so member choice counts only members that run a job's workload; absent: not told (taken to run any). */
  workloads?: readonly string[];
  /**
   * Why this node's database takes no writes now (store/db.ts storeProblem: a write failed, the database is not
   * reopened yet), else undefined. Told to the other members in pings (`storeFailing`), so a coordinator dispatches
   * nothing to a member that could not keep its run note; and this member, as coordinator, does not choose itself
   * then. Absent: it always takes writes.
   */
  storeProblem?: () => string | undefined;
  /**
   * The receipt this node's provider role stored for `job`, if any: a coordinator restarted between storing it and
   * closing its dispatch closes (and settles) with it instead of failing the job (docs/pools.md "A coordinator that crashes").
   */
  ownReceipt?: (job: string) => Promise<Opened<Receipt> | undefined>;
  /**
   * The receipts this node holds for `job` outside the pool's trail (its evidence store: gossiped on the job's market,
   * or delivered to it): before recovery fails a silent coordinator's dispatch as lost, it looks here for the receipt
   * that coordinator signed for its dispatch's offer, and closes with it instead (docs/pools.md "A coordinator that
   * crashes"). Checked like any outcome (src/pools/outcome.ts); absent: none known.
   */
  heardReceipts?: (job: string) => ReadonlyArray<Opened<Receipt>> | Promise<ReadonlyArray<Opened<Receipt>>>;
  /**
   * Ask `peer` (a DID) over `/c0mpute/records/1` (`op: jobs`, kind `receipt`) for the receipts it holds of `job`: the
   * frames as they came, unchecked (recovery checks each as it checks a heard one); rejects with the network's error,
   * or once `signal` aborts. Before recovery signs a POOL_COORDINATOR_LOST receipt it asks the job's buyer and a few
   * live members this way, all at once and bounded (coordinator.ts RECEIPT_ASK_MS); absent: nobody is asked.
   */
  askReceipts?: (peer: string, job: string, signal: AbortSignal) => Promise<unknown[]>;
  maxOutputBytes: number;
  /** Call another member on POOL_PROTOCOL; rejects with the network's error (unreachable, timeout), or `signal`'s reason once it aborts. */
  call: (member: string, frame: Record<string, CborValue>, timeoutMs: number, signal?: AbortSignal) => Promise<PoolReply>;
  /** Keep and gossip a receipt this member signed outside an exec stream (closing an orphaned dispatch). */
  publishReceipt: (env: Opened<Receipt>) => Promise<void>;
  /**
   * The provider role's slots: work dispatched by another coordinator runs in
   * one (POOL_MEMBER_BUSY when none is free); absent = no bound (unit tests).
   */
  slots?: PoolSlots;
  /** Keep an adopted roster and this member's membership of it (a restart starts from the newest). */
  saveRoster?: (roster: Opened<PoolRoster>, membership: Opened<PoolMembership>) => Promise<void>;
  /** Keep another member's `left` record (the membership's signer is that member): a restart still holds it out, and hands it back. */
  keepMemberLeft?: (roster: Opened<PoolRoster>, membership: Opened<PoolMembership>) => Promise<void>;
  /**
   * Dispatched work (`op: run`) waits until start() has caught up on the trail (sync.ts), within its budget: set when
   * the member serves the others before start() (the daemon), so a restored member does not run again a job it ran.
   */
  syncBeforeRuns?: boolean;
  /** The other members' `left` records kept before a restart (keepMemberLeft). */
  membersLeft?: ReadonlyArray<{ roster: Opened<PoolRoster>; membership: Opened<PoolMembership> }>;
  /**
   * A newer roster of the pool that does not list this member, held at its start (the config's, after a roster change
   * removed it while it ran or was down): it starts removed by it, as a running member that heard of it is.
   */
  removedBy?: Opened<PoolRoster>;
  /** The roster in use changed: the provider signs its advert again with the new proof. */
  onRosterChanged?: () => void;
  /** A named failpoint (tests; docs/pools.md "Failure modes, tested"): set only by the CLI from C0MPUTE_FAILPOINT. */
  failpoint?: (name: string) => void;
  registry?: Registry;
  /** `history.keepDays` (0 = everything): the trail and run log keep that many days past each job's deadline, so `status` tallies over them. */
  keepDays?: number;
}

export class PoolMember {
  readonly pool: string;
  /** When each other member last answered (or called) on the current roster: monotonic clock. */
  #lastSeen = new Map<string, number>();
  /** The workloads each other member said it runs (its pings); one not heard from is taken to run any. */
  #workloads = new Map<string, ReadonlySet<string>>();
  /** The other members whose last ping (or answer) said their database takes no writes (`storeFailing`): not dispatched to. */
  #storeFailing = new Set<string>();
  #timer: LongTimer | undefined;
  #elected: { epoch: number; who: string | undefined } | undefined;
  #stopped = false;
  /** Set after the first round of pings: until then this member knows no one live and must not think itself elected. */
  #ready = false;
  /** Anti-entropy: what this member missed of the others' trails (sync.ts). */
  #sync: TrailSync;
  /** With `syncBeforeRuns`: settles once start() has caught up (or stop()); `run` waits for it. */
  #syncGate: Promise<void> | undefined;
  #openGate: (() => void) | undefined;
  #m: PoolMetrics | undefined;
  /** What was logged of the roster in use's expiry (once each: 'soon', then 'expired'); cleared when a new roster is adopted. */
  #expiryNoted: 'soon' | 'expired' | undefined;
  /** Jobs this member runs now as the member a dispatch chose (`op: status` says so: recovery leaves their dispatch alone). */
  #runningHere = new Set<string>();
  /** The answers of the runs done here for other coordinators, kept for them to ask again (`op: result`). */
  #results: RunResults;
  /** Each other member's clock as its last ping answer carrying `now` showed it (src/pools/clock.ts). */
  #clocks = new Map<string, ClockSample>();
  /** The members whose clock skew was logged (this one too), and whether a split was: each said once until it changes. */
  #skewNoted = new Set<string>();
  #splitNoted = false;
  #clockGauges: { offset: Gauge; skewed: Gauge } | undefined;

  #rs: RosterState;
  #co: PoolCoordinator;
  /** The operator's figures over the trail, kept up to date as it is written (status.ts). */
  #figures: TrailFigures;

  constructor(private d: PoolMemberDeps) {
    this.#rs = new RosterState(d.did, d.roster, d.membership);
    this.#results = new RunResults(d.monoClock ?? monotonicClock);
    this.pool = this.#rs.pool;
    for (const x of d.membersLeft ?? []) {
      try {
        this.#rs.memberLeft(x.membership.signer, x.roster, x.membership);
      } catch (e) {
        d.log.warn({ member: x.membership.signer, err: code(e) }, 'pool: a kept `left` record of another member does not check out; ignored');
      }
    }
    if (d.removedBy) this.#rs.heard(d.removedBy, d.clock());
    this.#figures = new TrailFigures(
      d.trail,
      {
        pool: this.pool,
        roster: (a) => this.#rs.rosterOf(a) ?? d.trail.rosterOf(a),
        view: () => `${this.#rs.roster.address} ${this.#rs.newest.address} ${this.#rs.left?.roster.address ?? ''}`,
      },
      d.log,
    );
    if (d.registry) {
      const registers = [d.registry];
      this.#m = {
        dispatches: new Counter({ name: 'c0mpute_pool_dispatches_total', help: 'Dispatches this member made durable as coordinator', registers }),
        refusals: new Counter({ name: 'c0mpute_pool_refusals_total', help: 'Jobs refused by an admission gate, by gate code', labelNames: ['gate'], registers }),
        outcomes: new Counter({ name: 'c0mpute_pool_member_outcomes_total', help: 'Outcomes of dispatched work, by member and outcome code', labelNames: ['member', 'outcome'], registers }),
        epochs: new Counter({ name: 'c0mpute_pool_epoch_changes_total', help: 'Changes of epoch or of elected coordinator seen by this member', registers }),
      };
      this.#clockGauges = {
        offset: new Gauge({ name: 'c0mpute_pool_member_clock_offset_ms', help: 'Each live member’s wall clock minus the pool’s (the median of the live members’ clocks), as this member estimates it from its pings, ms', labelNames: ['member'], registers }),
        skewed: new Gauge({ name: 'c0mpute_pool_member_clock_skewed', help: '1 for a member left out of the election because its clock is further than network.clockSkewMs from the pool’s, else 0', labelNames: ['member'], registers }),
      };
    }
    this.#co = new PoolCoordinator(
      d,
      {
        pool: this.pool,
        roster: () => this.#rs.roster,
        live: () => this.live(),
        hasLeft: (m) => this.#rs.hasLeft(m),
        epoch: (now) => this.epoch(now),
        rosterOf: (a) => this.#rs.rosterOf(a) ?? d.trail.rosterOf(a),
        active: (job) => this.#active(job),
        pingAll: () => this.#pingAll(),
        runHere: (dispatch, job, input, run) => this.#runHere(dispatch, job, input, run),
        receipt: (r) => this.receipt(r),
        // One that left still tells every member how the work it had in flight ended (it counts none of them live).
        broadcastTo: () => (this.#rs.left ? this.members : this.live()).filter((m) => m !== this.d.did),
        outcomeTo: () => this.members.filter((m) => m !== this.d.did && !this.#rs.hasLeft(m)),
        runsHere: (job) => this.#runningHere.has(job),
        storeFailed: (m) => this.#heardStore(m, 'yes'),
      },
      this.#m,
    );
    this.#sync = new TrailSync(d, {
      pool: this.pool,
      roster: () => this.#rs.roster,
      rosterOf: (a) => this.#rs.rosterOf(a) ?? d.trail.rosterOf(a),
      live: () => this.live(),
      isMember: (did) => [this.#rs.roster, this.#rs.newest, this.#rs.left?.roster].some((x) => x?.record.members.some((m) => m.did === did)) || this.#rs.leftRecordOf(did) !== undefined,
    });
    // Its daemon serves the other members before start(): dispatched work waits for the catch-up at the start.
    if (d.syncBeforeRuns) this.#syncGate = new Promise((res) => (this.#openGate = res));
  }

  get members(): string[] {
    return this.#rs.roster.record.members.map((m) => m.did);
  }

  /**
   * Members live now: this one, and those that answered a ping within 3 × livenessMs (on the monotonic clock: a
   * wall-clock step changes nobody's liveness); never one that left.
   */
  live(): string[] {
    const now = this.#mono();
    return this.members.filter((m) => !this.#rs.hasLeft(m) && (m === this.d.did || now - (this.#lastSeen.get(m) ?? -Infinity) <= 3 * this.d.options.livenessMs));
  }

  get #mono(): Clock {
    return this.d.monoClock ?? monotonicClock;
  }

  epoch(now = this.d.clock()): number {
    return epochOf(now, this.#rs.roster.record.epochMs);
  }

  /**
   * The elected coordinator now (and the ranking that says who takes over): among the live members whose clock agrees
   * with the pool's (electable).
   */
  elected(now = this.d.clock()): { epoch: number; coordinator: string | undefined; ranking: string[] } {
    const epoch = this.epoch(now);
    const ranking = coordinatorRanking(this.pool, epoch, this.electable());
    return { epoch, coordinator: ranking[0], ranking };
  }

  /**
   * The live members that may be elected: those whose wall clock is within the clock-skew window of the pool's
   * (docs/pools.md "Clocks and the election"). A member further off would sign offers a buyer drops (RECORD_FROM_FUTURE,
   * or expired), so the pool would get no work in its epochs; every member, the skewed one included, leaves it out.
   */
  electable(): string[] {
    const live = this.live();
    const { skewed } = this.clocks(live);
    return skewed.size ? live.filter((m) => !skewed.has(m)) : live;
  }

  /** The live members' clocks judged (src/pools/clock.ts): this member's at 0, each other's as its pings showed it; a member whose answers carry no clock is not counted. */
  clocks(live = this.live()): ClockVerdict {
    const offsets = new Map<string, number>();
    for (const m of live) {
      if (m === this.d.did) offsets.set(m, 0);
      else {
        const c = this.#clocks.get(m);
        if (c) offsets.set(m, c.offsetMs);
      }
    }
    return judgeClocks(offsets, this.#skewWindow);
  }

  get #skewWindow(): number {
    return this.d.options.clockSkewMs ?? DEFAULT_SKEW_MS;
  }

  /**
   * Say once what the clocks show (docs/pools.md "Clocks and the election"), and set the gauges: a warning for each
   * member left out for its clock (this one's own operator is told to fix NTP here), and once the clocks of the members
   * still electable disagree by more than the window with nobody to single out; an info line when it is over.
   */
  #noteClocks(): void {
    const live = this.live();
    const v = this.clocks(live);
    const w = this.#skewWindow;
    if (this.#clockGauges) {
      this.#clockGauges.offset.reset();
      this.#clockGauges.skewed.reset();
      for (const [m, dev] of v.deviation) {
        this.#clockGauges.offset.set({ member: m }, Math.round(dev));
        this.#clockGauges.skewed.set({ member: m }, v.skewed.has(m) ? 1 : 0);
      }
    }
    for (const m of v.skewed) {
      if (this.#skewNoted.has(m)) continue;
      this.#skewNoted.add(m);
      const dev = Math.round(v.deviation.get(m)!);
      const of = `the pool's (the median of ${v.deviation.size} live members' clocks)`;
      if (m === this.d.did) this.d.log.warn({ pool: this.pool, code: 'POOL_MEMBER_CLOCK_SKEWED', member: m, offsetMs: dev, windowMs: w }, `pool: this member's clock is ${offsetWords(dev)} ${of}, beyond the ${w / 1000} s buyers allow: the members do not elect it coordinator (buyers would drop its offers, RECORD_FROM_FUTURE); fix this machine's clock (NTP)`);
      else this.d.log.warn({ pool: this.pool, code: 'POOL_MEMBER_CLOCK_SKEWED', member: m, offsetMs: dev, windowMs: w }, `pool: member ${m}'s clock is ${offsetWords(dev)} ${of}, beyond the ${w / 1000} s buyers allow: it is not elected coordinator (buyers would drop its offers, RECORD_FROM_FUTURE); its operator should fix its clock (NTP)`);
    }
    for (const m of [...this.#skewNoted]) {
      if (v.skewed.has(m) || (m !== this.d.did && !live.includes(m))) continue;
      this.#skewNoted.delete(m);
      this.d.log.info({ pool: this.pool, member: m }, m === this.d.did ? 'pool: this member’s clock agrees with the pool’s again: it may be elected' : 'pool: a member’s clock agrees with the pool’s again: it may be elected');
    }
    if (v.split !== this.#splitNoted) {
      this.#splitNoted = v.split;
      const devs = Object.fromEntries([...v.deviation].map(([m, d]) => [m, Math.round(d)]));
      if (v.split) this.d.log.warn({ pool: this.pool, code: 'POOL_CLOCKS_SPLIT', offsetsMs: devs, windowMs: w }, `pool: the members' clocks disagree by more than the ${w / 1000} s buyers allow, and no majority agrees on one: nobody can be left out of the election for it, so buyers whose clock is off a coordinator's drop its offers in its epochs; fix the members' clocks (NTP)`);
      else this.d.log.info({ pool: this.pool }, 'pool: the members’ clocks agree again');
    }
  }

  async start(): Promise<void> {
    const pinged = this.#mono();
    await this.#pingAll();
    // What this member missed while it was down (or since the backup it was restored from), before it quotes or runs
    // dispatched work (a restored run log does not know every job it ran): bounded, the rest at the next ticks.
    if (!this.#rs.left) await this.#sync.start().catch((e) => this.d.log.warn({ err: (e as Error).message }, 'pool: catching up on the trail failed'));
    // A long pull (up to SYNC_START_LIVENESS × livenessMs) outlasts what the first round heard (3 × livenessMs): ping
    // again before electing, or this member would count only itself live and elect itself.
    if (!this.#rs.left && this.#mono() - pinged >= this.d.options.livenessMs) await this.#pingAll(false);
    this.#openGate?.();
    this.#ready = true;
    // A failing tick (recovery that cannot reach its store) is logged, as the loop logs it, never the end of the start:
    // the daemon runs and the next tick tries again.
    await this.tick().catch((e) => this.d.log.warn({ err: (e as Error).message, code: code(e) }, 'pool: tick failed'));
    const loop = () => {
      if (this.#stopped) return;
      // The sync step runs beside the loop (tick() awaits it; here it is not awaited): a slow pull does not hold pings.
      this.#timer = setLongTimeout(() => void this.#pingAll().then(() => this.#tick(false)).catch((e) => this.d.log.warn({ err: (e as Error).message }, 'pool: tick failed')).finally(loop), this.d.options.livenessMs).unref();
    };
    loop();
    this.#figures.warmIn();
  }

  stop(): void {
    this.#openGate?.();
    this.#stopped = true;
    this.#timer?.clear();
    this.#figures.stop();
  }

  /** `m` was heard now (liveness), answering this member's ping (`out`) or calling it (`in`): sync.ts `heard`. */
  #seen(m: string, way: 'out' | 'in'): void {
    this.#lastSeen.set(m, this.#mono());
    this.#sync.heard(m, way);
  }

  /** A round of pings; `pull`: the members heard again after a silence are pulled from (not in the start's second round). */
  async #pingAll(pull = true): Promise<void> {
    // A member that left pings nobody (its pings would count it live); the others learn it left from its answers.
    if (this.#rs.left) return;
    // Answers handing back a record that claims to be this member's own `left` (each verified below: one may be forged).
    const ownLeft: Array<{ roster: Uint8Array; membership: Uint8Array }> = [];
    await Promise.all(
      this.members
        .filter((m) => m !== this.d.did)
        .map(async (m) => {
          try {
            const sentAt = this.d.clock();
            const t0 = this.#mono();
            const r = await this.d.call(m, { op: 'ping', seq: this.#rs.seq, ...(this.d.workloads ? { workloads: [...this.d.workloads] } : {}), ...(this.d.storeProblem?.() !== undefined ? { storeFailing: 'yes' } : {}) }, this.d.options.livenessMs);
            // the callee's wall clock (docs/pools.md "Clocks and the election"); absent from a build before it: not judged
            if (typeof r.now === 'number' && Number.isSafeInteger(r.now)) this.#clocks.set(m, clockSample(sentAt, this.#mono() - t0, r.now));
            // Live = answering on the same roster: a member on another seq is not counted (nor elected).
            if (r.ok === 'yes' && r.seq === this.#rs.seq) this.#seen(m, 'out');
            if (r.ok === 'yes') {
              this.#heardWorkloads(m, r.workloads);
              this.#heardStore(m, r.storeFailing);
            }
            if (r.roster instanceof Uint8Array && typeof r.seq === 'number' && r.seq > this.#rs.newest.record.seq) this.#heard(r.roster);
            if (r.code === 'POOL_MEMBER_LEFT' && r.roster instanceof Uint8Array && r.membership instanceof Uint8Array) {
              // The callee's own record (it left), or this member's, handed back (serve.ts: this one left, and forgot).
              if (open(r.membership, T.poolMembership, { trusted: true }).signer === this.d.did) ownLeft.push({ roster: r.roster, membership: r.membership });
              else await this.#memberLeft(m, r.roster, r.membership);
            }
          } catch {
            /* not live */
          }
        }),
    );
    // Acted on only once one checks out: a forged record (or a stale one, of a leave before this member rejoined)
    // neither hides a genuine one nor stops the pull below.
    for (const h of ownLeft) if (await this.#handedBack(h.roster, h.membership)) return;
    // Members heard again after a silence, either way, are pulled from (they hold what this one missed: sync.ts).
    if (pull) this.#sync.seen(this.live());
  }

  /**
   * Another member handed this one its own signed `left` record (its disk restored from a backup taken before it
   * left): verified as `pool-provider leave` verifies it (signed by this member, `left`, of a roster of this pool no
   * older than the one in use: RosterState.leave), then acted on as a leave (kept, advert withdrawn, no quotes, no
   * dispatches, out of its own election). A record that does not check out changes nothing. Whether it was acted on.
   */
  async #handedBack(rosterBytes: Uint8Array, membershipBytes: Uint8Array): Promise<boolean> {
    try {
      await this.#leaveNow(open(rosterBytes, T.poolRoster), open(membershipBytes, T.poolMembership));
      this.d.log.warn({ pool: this.pool }, 'pool: another member holds this member’s own signed `left` record (its state is from before it left, e.g. restored from a backup): it has left the pool again');
      return true;
    } catch (e) {
      this.d.log.warn({ pool: this.pool, err: code(e) }, 'pool: a `left` record handed back to this member does not check out; ignored');
      return false;
    }
  }

  /** Note an epoch or coordinator change; the elected coordinator closes orphaned dispatches. */
  tick(): Promise<void> {
    return this.#tick(true);
  }

  /** A tick; `wait`: until its sync step ends (the loop does not wait: the step runs beside it, one at a time). */
  async #tick(wait: boolean): Promise<void> {
    this.#noteExpiry();
    if (!this.#rs.left) this.#noteClocks();
    const e = this.elected();
    if (!this.#elected || this.#elected.epoch !== e.epoch || this.#elected.who !== e.coordinator) {
      this.#m?.epochs.inc();
      this.d.log.info({ pool: this.pool, epoch: e.epoch, coordinator: e.coordinator, me: e.coordinator === this.d.did }, 'pool: epoch or coordinator changed');
      this.#elected = { epoch: e.epoch, who: e.coordinator };
    }
    if (e.coordinator === this.d.did) await this.recover();
    // Not elected: ask about the dispatches whose `closed` this member missed (coordinator.ts catchUp).
    else await this.#co.catchUp();
    // And pull the entries it missed (sync.ts): a few pages, bounded in time.
    if (this.#rs.left) return;
    const step = this.#sync.step();
    if (wait) await step;
    else void step.catch((err) => this.d.log.warn({ err: (err as Error).message }, 'pool: catching up on the trail failed'));
  }

  /** Anti-entropy (sync.ts): a step now (tests), and the members still to pull from. */
  syncStep(): Promise<{ kept: number; closed: number; refused: number }> {
    return this.#sync.step();
  }

  /** Close the dispatches in the trail that nobody will finish (coordinator.ts). */
  recover(): Promise<number> {
    return this.#co.recover();
  }

  // ---- rosters ---------------------------------------------------------------

  /** Whether the roster in use has expired (docs/pools.md "Roster expiry"): buyers refuse its adverts, so this member quotes nothing. */
  get expired(): boolean {
    return this.d.clock() >= this.#rs.roster.record.expiresAt;
  }

  /**
   * Log the roster in use's expiry, once each (docs/pools.md "Roster expiry"): a warning once it is within
   * expiryWarningMs of it, an error once past it (at start too, on a roster already expired). A member that left says nothing.
   */
  #noteExpiry(): void {
    if (this.#rs.left) return;
    const r = this.#rs.roster.record;
    const now = this.d.clock();
    const at = isoTime(r.expiresAt);
    if (now >= r.expiresAt) {
      if (this.#expiryNoted === 'expired') return;
      this.#expiryNoted = 'expired';
      this.d.log.error({ pool: this.pool, seq: r.seq, expiresAt: at }, `pool: roster seq ${r.seq} in use expired at ${at}: buyers refuse the pool's adverts, so this member quotes nothing for it; sign a renewed roster (pool-provider roster) and join it (pool-provider join)`);
    } else if (now >= r.expiresAt - expiryWarningMs(r)) {
      if (this.#expiryNoted !== undefined) return;
      this.#expiryNoted = 'soon';
      this.d.log.warn({ pool: this.pool, seq: r.seq, expiresAt: at }, `pool: roster seq ${r.seq} in use expires at ${at} (in ${duration(r.expiresAt - now)}): sign a renewed roster (pool-provider roster) and have every member join it`);
    }
  }

  /**
   * Act on this member's own countersignature of a newer roster (`pool-provider
   * join` on a running node): verified, kept, the advert signed again, and the
   * roster sent to every member of the old and new roster (`op: roster`).
   */
  async adopt(rosterBytes: Uint8Array, membershipBytes: Uint8Array): Promise<{ seq: number; members: string[]; left?: boolean }> {
    const roster = open(rosterBytes, T.poolRoster);
    const membership = open(membershipBytes, T.poolMembership);
    if (membership.record.status === 'left') return this.leave(roster, membership);
    const old = this.#rs.adopt(roster, membership, this.d.clock());
    this.#expiryNoted = undefined;
    await this.d.saveRoster?.(roster, membership);
    this.d.log.info({ pool: this.pool, seq: roster.record.seq, from: old.record.seq, members: this.members.length }, 'pool: adopted a new roster');
    this.d.onRosterChanged?.();
    const to = new Set([...old.record.members, ...roster.record.members].map((m) => m.did).filter((m) => m !== this.d.did));
    await Promise.allSettled([...to].map((m) => this.d.call(m, { op: 'roster', roster: roster.bytes }, this.d.options.livenessMs)));
    await this.tick();
    return { seq: roster.record.seq, members: this.members };
  }

  /**
   * Act on this member's own `left` record (`pool-provider leave` on a running
   * node; docs/pools.md "A member leaves a running pool"): kept, the advert
   * signed again without the pool, the record sent to every other member of the
   * roster (`op: left`), and from now on no quotes and no dispatches.
   */
  async leave(roster: Opened<PoolRoster>, membership: Opened<PoolMembership>): Promise<{ seq: number; members: string[]; left: true }> {
    const left = await this.#leaveNow(roster, membership);
    await this.tick();
    return { seq: left.roster.record.seq, members: this.members, left: true };
  }

  async #leaveNow(roster: Opened<PoolRoster>, membership: Opened<PoolMembership>): Promise<{ roster: Opened<PoolRoster>; membership: Opened<PoolMembership> }> {
    const first = !this.#rs.left;
    const left = this.#rs.leave(roster, membership);
    if (first) {
      await this.d.saveRoster?.(left.roster, left.membership);
      this.d.log.warn({ pool: this.pool, seq: left.roster.record.seq }, 'pool: this member left the pool; it no longer quotes or runs work for it');
      this.d.onRosterChanged?.();
      this.#lastSeen.clear();
    }
    const to = new Set([...this.members, ...left.roster.record.members.map((m) => m.did)].filter((m) => m !== this.d.did));
    await Promise.allSettled([...to].map((m) => this.d.call(m, { op: 'left', roster: left.roster.bytes, membership: left.membership.bytes }, this.d.options.livenessMs)));
    return left;
  }

  /** Another member's `left` record (its chain checked): out of the active list, and kept (a restart holds it too). */
  async #memberLeft(from: string, roster: Uint8Array, membership: Uint8Array): Promise<void> {
    const before = this.#rs.leftRecordOf(from);
    if (this.#rs.memberLeft(from, open(roster, T.poolRoster), open(membership, T.poolMembership))) this.d.log.warn({ pool: this.pool, member: from }, 'pool: a member left the pool; it is out of the active list');
    const now = this.#rs.leftRecordOf(from);
    if (now && now !== before) await this.d.keepMemberLeft?.(now.roster, now.membership);
  }

  #heard(bytes: Uint8Array): void {
    const r = open(bytes, T.poolRoster);
    const was = this.#rs.removed;
    if (!this.#rs.heard(r, this.d.clock())) return;
    this.d.log.warn({ pool: this.pool, seq: r.record.seq, using: this.#rs.seq, removed: this.#rs.removed }, this.#rs.removed ? 'pool: a newer roster removed this member; it stops quoting for the pool and withdraws its pooled advert' : 'pool: a newer roster exists; not quoting until this member joins it');
    // removed: its pooled advert is withdrawn now (advert()), not left standing for the pool until it expires; listed
    // again by a still newer roster (behind, to join it): signed again as the pool's on the roster it holds
    if (this.#rs.removed !== was) this.d.onRosterChanged?.();
  }

  // ---- provider hooks ------------------------------------------------------

  hooks(): ProviderPoolHooks {
    return {
      advert: (a) => this.advert(a),
      receipt: (r) => this.receipt(r),
      mayQuote: (job) => this.mayQuote(job),
      mayQuoteAt: (job, price) => this.mayQuoteAt(job, price),
      run: (job, offer, ctx) => this.run(job, offer, ctx),
      closed: (r) => this.closed(r),
      abandoned: (job) => this.#co.abandoned(job),
      energy: (job, measured, failed) => this.#co.energy(job, measured, failed),
    };
  }

  advert(a: Advert): Advert {
    // Left, or removed by a newer roster: the pooled advert is withdrawn — signed again as this machine's own, without
    // the pool proof (it quotes nothing: mayQuote). Before (QA ffPoolChurn), a removed member kept signing the pool's
    // advert on the roster it held until that advert expired; a buyer that had not heard the newer roster sent the
    // pool's jobs to a member that quoted none of them.
    if (this.#rs.left || this.#rs.removed) return a;
    return { ...a, hardware: poolHardware(this.#rs.roster.record.members), pool: { roster: this.#rs.roster.bytes, membership: this.#rs.membership.bytes } };
  }

  receipt(r: Receipt): Receipt {
    return { ...r, provider: this.pool, pool: { roster: this.#rs.roster.bytes, membership: this.#rs.membership.bytes } };
  }

  /**
   * Only the elected coordinator quotes, and only a job a live member can run. Asked first, for every job heard: it
   * neither logs nor counts (most jobs on a market are not this pool's to quote). The admission gates come after the
   * provider's own checks (mayQuoteAt).
   */
  mayQuote(job: Opened<Job>): boolean {
    if (!this.#ready || this.#rs.left || this.#rs.behind || this.expired || this.elected().coordinator !== this.d.did) return false;
    return this.#active(job).length > 0;
  }

  /**
   * The admission gates, at the price this member would quote (the run checks the offer's price, so a job it would
   * refuse gets no offer). The provider asks only for a job it would otherwise quote (eligible, a workload it runs, a
   * free slot, its price within the job's maximum), so c0mpute_pool_refusals_total counts only jobs the pool could have
   * served. A refusal is logged at debug, as the provider's own skips are: any peer can publish such jobs at will.
   */
  mayQuoteAt(job: Opened<Job>, price: Money): boolean {
    try {
      admit(job.record, price, this.d.options);
    } catch (e) {
      this.#m?.refusals.inc({ gate: code(e) });
      this.d.log.debug({ job: job.address, gate: code(e), price: `${price.amount} ${price.currency}` }, 'pool: refused by an admission gate; no offer');
      return false;
    }
    return true;
  }

  /**
   * The live members whose hardware fits the job, that run its workload and whose database takes writes (docs/pools.md
   * "Member choice"): none left, and the pool quotes nothing (a won job is refused POOL_NO_ACTIVE_MEMBER).
   */
  #active(job: Opened<Job>): string[] {
    const live = new Set(this.live());
    return this.#rs.roster.record.members.filter((m) => live.has(m.did) && fits(m.hardware, job.record.requirements) && this.#runs(m.did, job.record.workload) && this.#takesWrites(m.did)).map((m) => m.did);
  }

  /** Whether a member's database takes writes: this one's as storeProblem says; another's as its last ping or answer said (absent: yes). */
  #takesWrites(member: string): boolean {
    if (member === this.d.did) return this.d.storeProblem?.() === undefined;
    return !this.#storeFailing.has(member);
  }

  /** Note whether a member said its database takes no writes (`storeFailing: 'yes'`); anything else, absent included, is that it takes writes. */
  #heardStore(member: string, v: unknown): void {
    if (v === 'yes') this.#storeFailing.add(member);
    else this.#storeFailing.delete(member);
  }

  #runs(member: string, workload: string): boolean {
    if (member === this.d.did) return this.d.executor(workload) !== undefined;
    return this.#workloads.get(member)?.has(workload) ?? true;
  }

  /** Note the workloads a member said it runs (a ping or its answer); a list that is not one is ignored. */
  #heardWorkloads(member: string, v: unknown): void {
    const list = workloadList(v);
    if (list) this.#workloads.set(member, new Set(list));
  }

  /** The coordinator's path for won work (coordinator.ts). */
  run(job: Opened<Job>, offer: Opened<Offer>, ctx: ExecContext): Promise<Uint8Array> {
    if (this.#rs.left) return Promise.reject(new C0Error('POOL_MEMBER_LEFT', 'this member has left the pool'));
    return this.#co.run(job, offer, ctx);
  }

  /** After the receipt of won work is stored: settle, close the trail, tell the members (coordinator.ts). */
  closed(r: Opened<Receipt>): Promise<void> {
    return this.#co.closed(r);
  }

  /** Run a dispatched job on this member: at most once, whoever asks; under `run`'s signal, its exec process group recorded by `run`'s hooks. */
  async #runHere(dispatch: Opened<PoolDispatch>, job: Opened<Job>, input: Uint8Array, run: SlotRun): Promise<Uint8Array> {
    const ex = this.d.executor(job.record.workload);
    if (!ex) throw new C0Error('EXEC_WORKLOAD_UNKNOWN', `this member does not run ${job.record.workload}`);
    // Past its deadline nobody wants the output; and the run log drops a note with the history after the deadline,
    // so this refusal is what keeps a job whose note is gone from running twice.
    const now = this.d.clock();
    if (now >= job.record.deadline) throw new C0Error('EXEC_DEADLINE_PASSED', 'the job’s deadline has passed');
    await this.d.runs.claim(job.address, dispatch.signer, now, job.record.deadline);
    this.#runningHere.add(job.address);
    try {
      return await ex.run({ input, ...(job.record.params === undefined ? {} : { params: job.record.params }), ...run, onProgress: () => {}, maxOutputBytes: this.d.maxOutputBytes });
    } catch (e) {
      // The code and message go to the coordinator, into the pool's signed receipt; the local detail stays here (executors.ts).
      if (e instanceof C0Error && e.detail) this.d.log.debug({ job: job.address, failure: e.code, ...e.detail }, 'pool: dispatched work failed here: what the receipt does not say');
      throw e;
    } finally {
      this.#runningHere.delete(job.address);
    }
  }

  // ---- serving other members -----------------------------------------------

  /** Answer one request from `from` (authenticated by the connection's key) on a stream ending with `signal`: serve.ts. */
  serve(frame: unknown, from: string, signal?: AbortSignal): Promise<PoolReply> {
    return serveMember(
      {
        d: this.d,
        pool: this.pool,
        rs: this.#rs,
        members: () => this.members,
        seen: (m) => this.#seen(m, 'in'),
        heardWorkloads: (m, v) => this.#heardWorkloads(m, v),
        heardStore: (m, v) => this.#heardStore(m, v),
        heard: (roster) => this.#heard(roster),
        memberLeft: (m, roster, membership) => this.#memberLeft(m, roster, membership),
        runHere: (dispatch, job, input, run) => this.#runHere(dispatch, job, input, run),
        running: (job) => this.#co.inFlight.has(job),
        runsHere: (job) => this.#runningHere.has(job),
        synced: () => this.#syncGate ?? this.#sync.started,
        results: this.#results,
      },
      frame,
      from,
      signal,
    );
  }

  /** What holds this member's job history (the dispatch trail, the run log), for the node's pruning (history-prune.ts). */
  historyStores(): [DispatchTrail, RunLog] {
    return [this.d.trail, this.d.runs];
  }

  /** Operator's view (`c0mpute pool-provider status`): election, liveness, per-member jobs and earnings over the trail kept (`keepDays`). */
  async status(): Promise<Record<string, unknown>> {
    const now = this.d.clock();
    const e = this.elected(now);
    const live = this.live();
    const clocks = this.clocks(live);
    // A member a newer roster removed takes no part in the pool's election: reckoned on the roster it still holds, it
    // counted itself (live() always does), and the others, on the newer roster, gone to it. So the coordinator it shows
    // is the one it would see among the others, never itself; none when it hears none (QA ffPoolChurn F4: "coordinator
    // <itself>" beside "removed by roster seq 3").
    const out = this.#rs.removed;
    const electable = (l: string[]) => l.filter((m) => !clocks.skewed.has(m) && !(out && m === this.d.did));
    const coordinator = out ? coordinatorRanking(this.pool, e.epoch, electable(live))[0] : e.coordinator;
    const next = coordinatorRanking(this.pool, e.epoch + 1, electable(live))[0];
    const f = await this.#figures.read();
    const onRoster = new Set(this.#rs.roster.record.members.map((m) => m.did));
    const notQuoting = !this.#ready
      ? 'starting'
      : this.#rs.left
        ? 'left'
        : this.#rs.removed
          ? 'removed'
          : this.#rs.behind
            ? 'behind'
            : this.expired
              ? 'expired'
              : undefined;
    return {
      pool: this.pool,
      roster: { address: this.#rs.roster.address, seq: this.#rs.roster.record.seq, epochMs: this.#rs.roster.record.epochMs, expiresAt: this.#rs.roster.record.expiresAt },
      me: this.d.did,
      newestSeq: this.#rs.newest.record.seq,
      quoting: notQuoting === undefined,
      ...(notQuoting !== undefined ? { notQuoting } : {}),
      left: this.#rs.left !== undefined,
      removed: this.#rs.removed,
      pending: f.pending,
      // the jobs and earnings below are those of the trail kept: `keepDays` past each job's deadline (0 = everything)
      ...(this.d.keepDays !== undefined ? { keepDays: this.d.keepDays } : {}),
      failures: f.failures,
      // jobs two coordinators each completed (one of them did not do the work): no settlement of them counts
      disputed: f.disputed,
      epoch: e.epoch,
      ...(coordinator !== undefined ? { coordinator } : {}),
      ...(next !== undefined ? { nextCoordinator: next } : {}),
      // the window a member's clock must be within of the pool's to be elected, and whether the electable ones disagree beyond it
      clock: { windowMs: this.#skewWindow, ...(clocks.split ? { split: true } : {}) },
      members: [
        ...this.#rs.roster.record.members.map((m) => {
          const p = f.member(m.did);
          const dev = clocks.deviation.get(m.did);
          // `clock`: its clock minus the pool's, and `skewed` when that is beyond the window: not elected ("Clocks and the election")
          const clock = dev === undefined ? {} : { clock: { offsetMs: Math.round(dev), ...(clocks.skewed.has(m.did) ? { skewed: true } : {}) } };
          return { did: m.did, weight: m.weight, live: live.includes(m.did), left: this.#rs.hasLeft(m.did), ...(this.#takesWrites(m.did) ? {} : { storeFailing: true }), ...clock, jobs: { dispatched: p.dispatched, completed: p.completed, failed: p.failed }, earned: p.earned };
        }),
        // a member the roster in use no longer lists keeps its figures in the trail: shown, so the members' figures add
        // up to the pool's (the failures above count its failures too) and one that left is not forgotten (QA s49)
        ...f
          .members()
          .filter((did) => !onRoster.has(did))
          .map((did) => {
            const p = f.member(did);
            return { did, offRoster: true, live: live.includes(did), jobs: { dispatched: p.dispatched, completed: p.completed, failed: p.failed }, earned: p.earned };
          }),
      ],
    };
  }
}
