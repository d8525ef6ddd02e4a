/**
 * What happens to a peer that keeps flooding (issue #10; docs/network.md
 * §Abuse: gossipsub P5 and disconnect): its decaying abuse score (kept by the
 * validation pipeline's FloodGuard) becomes gossipsub's application-specific
 * score (P5, `appSpecificScore` × `appSpecificWeight`), so past the gossip,
 * publish and graylist thresholds the router stops gossiping to it, stops
 * publishing to it, then ignores its RPCs; past `disconnectAt` the node hangs
 * up and the connection gater refuses the peer (both directions) for `banMs`.
 * Decisions take the time from the injected clock: the monotonic one (createNetwork passes `monoClock`), so a
 * ban lasts `banMs` however the wall clock is stepped meanwhile.
 *
 * The node's direct-protocol servers outside the network (claim/1) report a
 * peer that keeps hitting their rate limit through `AbuseReports` (passed in
 * as `AbuseOptions.reports`): each report counts like a gossip flood hit.
 * records/1, served by the network itself, blames a peer it refuses for its
 * byte budget the same way (`FloodGuard.blame`, wired in records-sync.ts).
 * offer/1 and outcome/1 (offer-route.ts) strike a peer for each invalid record
 * it sends directly (`FloodGuard.strike`, `abusePerInvalid` points), since
 * gossipsub's P4 never sees those; so does exec/1 for an invalid request
 * (a provider's, through `AbuseReports.invalid`).
 *
 * A request refused as bad (`*_BAD_REQUEST`) on steward/1, job-push/1 and
 * records/1 is charged the same way, by what it shows: one no node of any
 * version sends (not the protocol's frame: not a map, not bytes, no op) is a
 * strike; one a node of another version may send (an op, kind or field shape
 * this node does not know) is free up to `REFUSED_RATE` per peer, and each
 * past it is reported like an over-limit request (`refusals`). A rate-limit
 * refusal (records/1's) is reported as claim/1's is; job-push/1's past a
 * looser excess rate. A refusal an honest caller earns now and then (steward/1:
 * not admitted, not the buyer) is free up to `LOOKUP_REFUSED_RATE`; others (no
 * offer, a record not held) cost nothing.
 */
import { Counter, type Registry } from 'prom-client';
import { monotonicClock, type Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import type { FloodGuard } from './flood-limits.js';
import { KeyedBuckets, type BucketSpec } from './rate-limit.js';

export interface AbuseOptions {
  /** gossipsub appSpecificWeight: score = −abuse × weight (default 0.2: 50 abuse points reach gossipsub's gossip threshold −10, 400 its graylist threshold −80). */
  appSpecificWeight: number;
  /** Abuse score at which the peer is disconnected and refused (default 400; 0 = never). */
  disconnectAt: number;
  /** How long a disconnected abuser is refused by the gater, ms (default 300 000). */
  banMs: number;
  /** Where the node's other servers report over-limit requests (claim/1): the policy attaches to it (not a config key). */
  reports?: AbuseReports;
}

/**
 * A channel from servers the network does not own (claim/1's ClaimDesk) to a
 * network's abuse score: create one, pass it as `AbuseOptions.reports` to
 * `createNetwork`, and give its `report` to the server. Reports before a
 * network attaches (or after none does) go nowhere.
 */
export class AbuseReports {
  #sink: { overLimit(peer: string): void; invalid(peer: string): void } | undefined;
  attach(sink: { overLimit(peer: string): void; invalid(peer: string): void }): void {
    this.#sink = sink;
  }
  /** One request by `peer` over a rate limit of ours (FloodGuard.blame: `abusePerHit` points). */
  readonly report = (peer: string): void => this.#sink?.overLimit(peer);
  /** One invalid request by `peer` (exec/1's malformed or forged header: FloodGuard.strike, `abusePerInvalid` points). */
  readonly invalid = (peer: string): void => this.#sink?.invalid(peer);
}

/**
 * Bad requests a peer may send free (per peer): those an honest node of another version may send, an op or kind this
 * one does not know. Past the burst, at most one a second; each beyond is reported (`AbuseReports.report`).
 */
export const REFUSED_RATE: BucketSpec = { ratePerSec: 1, burst: 16 };

/**
 * Refusals an honest caller earns now and then by asking about something this node does not hold for it (steward/1:
 * a job not admitted, not its buyer's, unknown): free up to this rate per peer, each past it reported. An honest
 * provider asks about a job once per run; none asks twenty times a second for long. Before, they were free at any
 * rate: one key had 8,080 `admission` asks for random jobs answered in 20 s (review s40).
 */
export const LOOKUP_REFUSED_RATE: BucketSpec = { ratePerSec: 20, burst: 200 };

/**
 * Count one request refused as bad that an honest node of another version may still send (`peer`): free within
 * `rate` per peer, each one past it told to `report` (`AbuseReports.report`: `abusePerHit` points, as an over-limit
 * request). With the defaults a peer that keeps sending them is disconnected after some 400 past the burst.
 */
export function refusals(report: ((peer: string) => void) | undefined, clock: Clock = monotonicClock, rate: BucketSpec = REFUSED_RATE): (peer: string) => void {
  const buckets = new KeyedBuckets(rate, clock);
  return (peer) => {
    if (!buckets.take(peer)) report?.(peer);
  };
}

export const ABUSE_DEFAULTS: AbuseOptions = { appSpecificWeight: 0.2, disconnectAt: 400, banMs: 300_000 };

export class AbusePolicy {
  readonly opts: AbuseOptions;
  readonly #banned = new Map<string, number>();
  readonly #disconnects: Counter | undefined;
  /** Told of each peer as it is banned (the network forgets it as a remembered peer: connectivity.ts `forget`). */
  onBan: ((peer: string) => void) | undefined;

  constructor(
    private readonly guard: FloodGuard,
    opts: Partial<AbuseOptions>,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** Hang up on a peer (the network's libp2p.hangUp). */
    private readonly hangUp: (peer: string) => Promise<void> | void,
    registry?: Registry,
  ) {
    this.opts = { ...ABUSE_DEFAULTS, ...opts };
    const name = 'c0mpute_net_abuse_disconnects_total';
    if (registry) {
      this.#disconnects =
        (registry.getSingleMetric(name) as Counter | undefined) ??
        new Counter({ name, help: 'Peers disconnected and refused for a while because their flood-limit abuse score passed network.abuse.disconnectAt', registers: [registry] });
    }
    guard.onAbuse = (peer, score) => this.#onAbuse(peer, score);
    this.opts.reports?.attach({ overLimit: (peer) => guard.blame(peer), invalid: (peer) => guard.strike(peer) });
  }

  /** gossipsub P5 (before the weight): never positive. */
  readonly appSpecificScore = (peer: string): number => -this.guard.abuse(peer);

  /** Is `peer` refused right now? (The connection gater asks.) */
  denied(peer: string): boolean {
    const until = this.#banned.get(peer);
    if (until === undefined) return false;
    if (this.clock() < until) return true;
    this.#banned.delete(peer);
    return false;
  }

  #onAbuse(peer: string, score: number): void {
    if (this.opts.disconnectAt <= 0 || score < this.opts.disconnectAt || this.denied(peer)) return;
    this.#banned.set(peer, this.clock() + this.opts.banMs);
    if (this.#banned.size > 10_000) {
      const first = this.#banned.keys().next();
      if (!first.done) this.#banned.delete(first.value);
    }
    this.#disconnects?.inc();
    this.log.warn({ peer, score: Math.round(score), banMs: this.opts.banMs }, 'peer kept flooding past its limits: disconnected and refused for a while');
    try {
      this.onBan?.(peer);
    } catch (e) {
      this.log.debug({ peer, err: (e as Error).message }, 'ban listener failed');
    }
    void Promise.resolve()
      .then(() => this.hangUp(peer))
      .catch((e: unknown) => this.log.debug({ peer, err: (e as Error).message }, 'hang-up failed'));
  }
}
