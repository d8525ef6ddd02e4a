/**
 * Flood limits at the gossip/sync boundary (DESIGN §3.4; issue #10 "valid-looking
 * floods"; docs/network.md §Rate limits). The validation pipeline asks this
 * guard, cheapest first:
 *
 *   per peer, before decode ........ messages per propagating peer (gossip only)
 *                                    and validations in flight per peer
 *   per signer, after the header ... records per signer per kind: a token is
 *                                    reserved before the signature work (which
 *                                    may run on another thread, so several
 *                                    records of one signer can be in flight at
 *                                    once), kept when the signature verifies and
 *                                    refunded when it does not (a forged header
 *                                    holds an honest signer's tokens only while
 *                                    it is in flight, and in-flight is bounded
 *                                    per peer)
 *   per peer, new advertisers ...... adverts from keys this node has not seen,
 *                                    per peer per minute (gossip and sync),
 *                                    reserved and refunded the same way
 *   node-wide, new advertisers ..... the same, all peers together, gossip only:
 *                                    what this node accepts from gossip it passes
 *                                    on, and each neighbour counts those against
 *                                    this node as ONE peer; so this node never
 *                                    takes for forwarding more new advertisers
 *                                    than a neighbour takes from it (identities
 *                                    rotated from one host each bring a fresh
 *                                    per-peer budget; this one they share)
 *
 * Excess earns `ignore` with code RATE_LIMITED (no gossipsub penalty by itself:
 * an honest relay may forward a flooder's burst) and is counted by kind and
 * limiter. A peer's own excess (its new-advertiser limit, records it signed
 * itself over its signer limit, its per-peer limit for records it sent directly;
 * not its per-peer limit by gossip, which a relay passes on from everyone) adds to its decaying abuse
 * score, which feeds gossipsub's application-specific score (P5) and, past a
 * threshold, gets the peer disconnected and refused for a while (see
 * `AbusePolicy` in peer-abuse.ts). The node-wide limit blames no one: the peer
 * that meets it may be an honest relay within its own budget.
 */
import { Counter, type Registry } from 'prom-client';
import type { Clock } from '../util/clock.js';
import { DecayingCounter, KeyedBuckets, TokenBucket, type BucketSpec } from './rate-limit.js';
import { perNonDeliveryKind, type TopicKind } from './topics.js';

export const RATE_LIMITED = 'RATE_LIMITED';

export type Limiter = 'peer' | 'peer-inflight' | 'signer' | 'new-advertiser' | 'new-advertiser-total';

export interface FloodLimitOptions {
  /** Gossip messages per propagating peer, all kinds (default 100/s, burst 400). */
  peer: BucketSpec;
  /** Validations in flight from one peer (default 256, a quarter of maxInFlight). */
  maxInFlightPerPeer: number;
  /** Records per signer per kind (defaults in FLOOD_DEFAULTS.signer; a kind not listed is not limited). */
  signer: Partial<Record<TopicKind, BucketSpec>>;
  /** Adverts from keys not seen before, per peer (default 1/s sustained = 60 per minute, burst 200). */
  newAdvertisers: BucketSpec;
  /**
   * Adverts from keys not seen before, all peers together, gossip only (default: the same as `newAdvertisers`, 1/s
   * burst 200). A neighbour limits what this node forwards by its own `newAdvertisers`, as one peer: keep this at or
   * under that. Sync answers and direct records are not counted (this node does not pass those on).
   */
  newAdvertisersTotal: BucketSpec;
  /** Half-life of a peer's abuse score, ms (default 60 000). */
  abuseHalfLifeMs: number;
  /** Abuse points per over-limit message the peer itself is to blame for (default 1). */
  abusePerHit: number;
  /**
   * Abuse points per invalid message a peer sent this node directly (offer/1, outcome/1: malformed, not signed by
   * the sender, or rejected by validation; default 10). Gossip's invalid messages are gossipsub's own P4.
   */
  abusePerInvalid: number;
  /** Buckets kept per limiter (default 16 384). */
  maxKeys: number;
}

export const FLOOD_DEFAULTS: FloodLimitOptions = {
  peer: { ratePerSec: 100, burst: 400 },
  maxInFlightPerPeer: 256,
  signer: {
    job: { ratePerSec: 10, burst: 60 },
    offer: { ratePerSec: 50, burst: 200 },
    advert: { ratePerSec: 0.2, burst: 5 },
    presence: { ratePerSec: 1, burst: 5 },
    selection: { ratePerSec: 10, burst: 60 },
    receipt: { ratePerSec: 10, burst: 60 },
    acceptance: { ratePerSec: 10, burst: 60 },
    // a buyer's outcome records like an acceptance (one per job and provider that did not deliver), each carrying
    // its proof (up to some 60 KiB): until the 27th review not limited per signer at all
    ...perNonDeliveryKind(() => ({ ratePerSec: 10, burst: 60 })),
    'pool-head': { ratePerSec: 50, burst: 200 },
    'pool-witness': { ratePerSec: 20, burst: 100 },
    'pool-evidence': { ratePerSec: 1, burst: 10 },
  },
  newAdvertisers: { ratePerSec: 1, burst: 200 },
  newAdvertisersTotal: { ratePerSec: 1, burst: 200 },
  abuseHalfLifeMs: 60_000,
  abusePerHit: 1,
  abusePerInvalid: 10,
  maxKeys: 16_384,
};

const UNLIMITED: BucketSpec = { ratePerSec: Infinity, burst: Infinity };
/** No flood limits at all (capacity benchmarks only: they measure what the pipeline can take, not the policy). */
export const NO_FLOOD_LIMITS: Partial<FloodLimitOptions> = {
  peer: UNLIMITED,
  maxInFlightPerPeer: Infinity,
  signer: Object.fromEntries(Object.keys(FLOOD_DEFAULTS.signer).map((k) => [k, UNLIMITED])),
  newAdvertisers: UNLIMITED,
  newAdvertisersTotal: UNLIMITED,
};

/**
 * Merge partial options over the defaults (per-kind signer specs merge by kind). `newAdvertisersTotal` not given
 * follows `newAdvertisers` (an overlay whose members all raise the per-peer one raises what each may pass on).
 */
export function floodOptions(o: Partial<FloodLimitOptions> = {}): FloodLimitOptions {
  return {
    ...FLOOD_DEFAULTS,
    ...o,
    signer: { ...FLOOD_DEFAULTS.signer, ...(o.signer ?? {}) },
    newAdvertisersTotal: o.newAdvertisersTotal ?? o.newAdvertisers ?? FLOOD_DEFAULTS.newAdvertisersTotal,
  };
}


/**
 * A gossip peer is not blamed for its excess over its message rate (`peer`): a relay passes on what it accepted from
 * everyone. Past this many times that rate and burst, it is: no honest relay forwards ten times what a neighbour
 * takes from one peer (a node of every market at 10k providers takes about 200 records a second: docs/scale.md),
 * and a single connection pushing unique messages at thousands a second otherwise cost the node CPU, memory and
 * IDONTWANTs to its mesh for as long as it liked, never banned (second-round review of the no-blame change).
 */
export const PEER_BLAME_FACTOR = 10;

export class FloodGuard {
  readonly opts: FloodLimitOptions;
  readonly #peer: KeyedBuckets;
  /** The peer's rate × PEER_BLAME_FACTOR: what a gossip peer may push before its excess is its own (admitPeer). */
  readonly #peerBlame: KeyedBuckets;
  readonly #signer = new Map<TopicKind, KeyedBuckets>();
  readonly #newAdv: KeyedBuckets;
  readonly #newAdvTotal: TokenBucket;
  readonly #inFlight = new Map<string, number>();
  readonly #abuse: DecayingCounter;
  readonly #counter: Counter<'kind' | 'limiter'> | undefined;
  /** Called after a peer's abuse score grows (the network's disconnect policy listens). */
  onAbuse: ((peer: string, score: number) => void) | undefined;
  /** Adverts from keys not seen before turned away by a new-advertiser limit (per peer or all peers together) since start. */
  #advertsTurnedAway = 0;

  constructor(opts: Partial<FloodLimitOptions>, clock: Clock, registry?: Registry) {
    this.opts = floodOptions(opts);
    const o = this.opts;
    this.#peer = new KeyedBuckets(o.peer, clock, o.maxKeys);
    this.#peerBlame = new KeyedBuckets({ ratePerSec: o.peer.ratePerSec * PEER_BLAME_FACTOR, burst: o.peer.burst * PEER_BLAME_FACTOR }, clock, o.maxKeys);
    this.#newAdv = new KeyedBuckets(o.newAdvertisers, clock, o.maxKeys);
    this.#newAdvTotal = new TokenBucket(o.newAdvertisersTotal, clock);
    for (const [k, spec] of Object.entries(o.signer)) if (spec) this.#signer.set(k as TopicKind, new KeyedBuckets(spec, clock, o.maxKeys));
    this.#abuse = new DecayingCounter(o.abuseHalfLifeMs, clock, o.maxKeys);
    if (registry) {
      const name = 'c0mpute_net_rate_limited_total';
      this.#counter =
        (registry.getSingleMetric(name) as Counter<'kind' | 'limiter'> | undefined) ??
        new Counter({ name, help: 'Records ignored by a flood limit, by kind and limiter (peer, peer-inflight, signer, new-advertiser, new-advertiser-total)', labelNames: ['kind', 'limiter'], registers: [registry] });
    }
  }

  #hit(kind: TopicKind, limiter: Limiter, blame: string | undefined): false {
    this.#counter?.inc({ kind, limiter });
    if (blame !== undefined && this.opts.abusePerHit > 0) {
      const score = this.#abuse.add(blame, this.opts.abusePerHit);
      this.onAbuse?.(blame, score);
    }
    return false;
  }

  /**
   * Per-peer message bucket (gossip; direct records). False = over the limit: counted, and the peer blamed when
   * `blame` (a direct sender, whose records are its own). Gossip passes false: a gossip peer's messages are mostly
   * others' records it passes on, and a relay passes on what it accepted from everyone, so its excess is not its own.
   */
  admitPeer(kind: TopicKind, peer: string, blame = true): boolean {
    // every message spends from the wider bucket too: a gossip peer past PEER_BLAME_FACTOR × its rate is blamed
    const withinBlame = this.#peerBlame.take(peer);
    return this.#peer.take(peer) || this.#hit(kind, 'peer', blame || !withinBlame ? peer : undefined);
  }

  /** Reserve an in-flight slot for `peer`; false when the peer already holds its share. Pair with `release`. */
  enter(kind: TopicKind, peer: string): boolean {
    const n = this.#inFlight.get(peer) ?? 0;
    if (n >= this.opts.maxInFlightPerPeer) return this.#hit(kind, 'peer-inflight', undefined);
    this.#inFlight.set(peer, n + 1);
    return true;
  }
  release(peer: string): void {
    const n = (this.#inFlight.get(peer) ?? 1) - 1;
    if (n <= 0) this.#inFlight.delete(peer);
    else this.#inFlight.set(peer, n);
  }

  /**
   * Before the signature: reserve one record of `kind` by `signer` (takes a
   * token). False when the signer has no room, counting what is in flight.
   * Keep the token when the signature verifies; `refundSigner` when it does not.
   */
  reserveSigner(kind: TopicKind, signer: string): boolean {
    const b = this.#signer.get(kind);
    return !b || b.take(signer);
  }
  /** Count a signer-limit hit; `blame` is the propagating peer when it is the signer itself. */
  signerHit(kind: TopicKind, blame: string | undefined): false {
    return this.#hit(kind, 'signer', blame);
  }
  /** The signature did not verify (or the record was refused before it was checked): give the reservation back. */
  refundSigner(kind: TopicKind, signer: string): void {
    this.#signer.get(kind)?.refund(signer, 1);
  }

  /**
   * Before the signature: reserve one advert from a key not seen before for
   * `peer`. `blame`: count the excess against the peer (gossip it pushed; not a
   * sync answer we asked for). Refund with `refundNewAdvertiser` when the
   * signature does not verify.
   */
  reserveNewAdvertiser(peer: string, blame: boolean): boolean {
    if (this.#newAdv.take(peer)) return true;
    this.#advertsTurnedAway++;
    return this.#hit('advert', 'new-advertiser', blame ? peer : undefined);
  }

  /** Adverts from new advertisers turned away by either new-advertiser limit since start (the market lacks them until heard again). */
  get advertsTurnedAway(): number {
    return this.#advertsTurnedAway;
  }
  refundNewAdvertiser(peer: string): void {
    this.#newAdv.refund(peer, 1);
  }

  /**
   * Before the signature, after the peer's own new-advertiser token: reserve one new advertiser of the node's
   * budget, all peers together (gossip: what this node passes on). False when it is spent: counted, no one blamed
   * (the peer may be an honest relay within its own budget). Refund with `refundNewAdvertiserTotal`.
   */
  reserveNewAdvertiserTotal(): boolean {
    if (this.#newAdvTotal.take()) return true;
    this.#advertsTurnedAway++;
    return this.#hit('advert', 'new-advertiser-total', undefined);
  }
  refundNewAdvertiserTotal(): void {
    this.#newAdvTotal.refund(1);
  }

  /**
   * An over-limit request the peer made on a direct protocol (claim/1, via `AbuseReports`): the same
   * abuse points as a gossip flood hit (`abusePerHit`), so the same P5 score, disconnect and ban follow.
   */
  blame(peer: string): void {
    if (this.opts.abusePerHit <= 0) return;
    this.onAbuse?.(peer, this.#abuse.add(peer, this.opts.abusePerHit));
  }

  /**
   * An invalid message the peer sent this node itself, on a direct protocol (offer/1, outcome/1): malformed, signed
   * by another key, or rejected by validation. Gossipsub's P4 scores invalid gossip, but nothing scores a stream, so
   * each costs `abusePerInvalid` points on the same score (P5, disconnect, ban).
   */
  strike(peer: string): void {
    if (this.opts.abusePerInvalid <= 0) return;
    this.onAbuse?.(peer, this.#abuse.add(peer, this.opts.abusePerInvalid));
  }

  /** A peer's current (decayed) abuse score. */
  abuse(peer: string): number {
    return this.#abuse.value(peer);
  }
  forgive(peer: string): void {
    this.#abuse.delete(peer);
  }
}
