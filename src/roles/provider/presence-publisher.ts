/**
 * A provider's presence (spec/matching-and-leases.md "Presence" on the P2P
 * network; docs/matching.md "Presence"): signs and publishes
 * `c0mpute.presence/1` — the workloads it serves now and its free slots — every
 * `everyMs`, and soon after its free slots change (at most one change-driven
 * record per `minGapMs`, under the network's per-signer presence limit of 1/s).
 * The gap is measured on the monotonic clock, so a wall-clock step never holds
 * a record back; `issuedAt` is the wall time.
 * In a large market the interval and window grow with the live providers it
 * sees there (`presenceInterval`, src/matching/presence-rate.ts; docs/scale.md
 * §4 "Presence that scales with the market"), read each time it signs.
 */
import { seal, type Opened } from '../../records/envelope.js';
import { T, type Presence } from '../../records/kinds.js';
import type { Ed25519Signer } from '../../records/ed25519.js';
import { monotonicClock, type Clock } from '../../util/clock.js';
import type { Logger } from '../../util/log.js';
import { MATCH_LIVENESS_MS } from '../../matching/types.js';
import { presenceInterval, PRESENCE_TARGET_PER_MARKET } from '../../matching/presence-rate.js';

export interface PresenceOptions {
  /** How long each presence counts as live after issuedAt, ms (default MATCH_LIVENESS_MS = 15 000). */
  windowMs: number;
  /** Publish at least this often, ms (default: a third of the window, so two in a row may be lost). */
  everyMs: number;
  /** Least time between two records, ms (default 1 100: under the network's 1/s per-signer presence limit). */
  minGapMs: number;
  /** Presence records a second its largest market should carry at most (default PRESENCE_TARGET_PER_MARKET = 5): past it everyMs and windowMs grow. */
  targetPerMarket: number;
}

export function presenceOptions(o: { windowMs?: number | undefined; everyMs?: number | undefined; minGapMs?: number | undefined; targetPerMarket?: number | undefined } = {}): PresenceOptions {
  const windowMs = o.windowMs ?? MATCH_LIVENESS_MS;
  return { windowMs, everyMs: o.everyMs ?? Math.max(1000, Math.floor(windowMs / 3)), minGapMs: o.minGapMs ?? 1100, targetPerMarket: o.targetPerMarket ?? PRESENCE_TARGET_PER_MARKET };
}

export interface PresenceDeps {
  signer: Ed25519Signer;
  /** Wall clock: each record's issuedAt. */
  clock: Clock;
  /** Monotonic clock for the gap between records (default performance.now): a wall-clock step never holds a record back. */
  monoClock?: Clock;
  log: Logger;
  /** Workloads served now and free slots, read when each record is signed. */
  state: () => { workloads: string[]; freeSlots: number };
  /** Publish on the presence topic (errors are logged, never thrown here). */
  publish: (env: Opened<Presence>) => Promise<unknown>;
  /** Live providers in its largest market as its view holds them, itself included (default: none, so the configured interval). */
  liveInMarket?: () => number;
}

export class PresencePublisher {
  readonly #o: PresenceOptions;
  readonly #mono: Clock;
  #timer: NodeJS.Timeout | undefined;
  /** Monotonic time the armed timer fires at. */
  #dueAt = Infinity;
  /** Monotonic time of the last record. */
  #lastAt = -Infinity;
  #lastFree: number | undefined;
  #stopped = true;
  #last: Opened<Presence> | undefined;

  constructor(
    private readonly d: PresenceDeps,
    options: Partial<PresenceOptions> = {},
  ) {
    this.#o = { ...presenceOptions(), ...options };
    this.#mono = d.monoClock ?? monotonicClock;
  }

  /** The last presence signed. */
  get last(): Opened<Presence> | undefined {
    return this.#last;
  }

  start(): void {
    this.#stopped = false;
    this.#publish();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#dueAt = Infinity;
  }

  /**
   * The free slots may have changed: publish soon when they did, `minGapMs` after the last record at the latest
   * (sooner when the next periodic record is due sooner: a change never delays it).
   */
  changed(): void {
    if (this.#stopped || this.d.state().freeSlots === this.#lastFree) return;
    const now = this.#mono();
    const wait = Math.min(this.#o.minGapMs, Math.max(0, this.#lastAt + this.#o.minGapMs - now));
    if (now + wait < this.#dueAt) this.#schedule(wait);
  }

  #schedule(ms: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#dueAt = this.#mono() + ms;
    this.#timer = setTimeout(() => this.#publish(), ms);
    this.#timer.unref();
  }

  #publish(): void {
    if (this.#stopped) return;
    const now = this.d.clock();
    const { workloads, freeSlots } = this.d.state();
    const { everyMs, windowMs } = this.interval();
    const rec: Presence = { workloads: [...workloads].sort(), freeSlots: Math.max(0, freeSlots), issuedAt: now, windowMs };
    const env = seal(T.presence, rec, this.d.signer);
    this.#last = env;
    this.#lastAt = this.#mono();
    this.#lastFree = rec.freeSlots;
    this.d.publish(env).catch((e) => this.d.log.debug({ err: (e as Error).message }, 'presence reached no peer'));
    this.#schedule(everyMs);
  }

  /** The interval and window it signs with now, from the live count in its market. */
  interval(): { everyMs: number; windowMs: number } {
    return presenceInterval(this.d.liveInMarket?.() ?? 0, this.#o, this.#o.targetPerMarket);
  }
}
