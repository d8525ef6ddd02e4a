/**
 * What the steward role (src/roles/steward.ts, pool/1) is given: its
 * configuration, the wire names it serves, and the narrow ports it uses of the
 * overlay it runs on (gossip and direct protocols, records, the market engine's
 * decision and selection signing, a clock, a logger, a store sublevel). The
 * overlay node satisfies `StewardPorts` structurally, so the role does not
 * import the host that starts it (DESIGN.md §5).
 */
import type { CborValue } from '../records/cbor.js';
import type { Opened } from '../records/envelope.js';
import type { Advert, Offer } from '../records/kinds.js';
import type { Ed25519Signer } from '../records/ed25519.js';
import type { Network } from '../net/node.js';
import { STEWARD_STREAMS, STEWARD_STREAM_HEADROOM } from '../net/protocols.js';
import type { AbuseReports } from '../net/peer-abuse.js';
import type { RecordStore } from '../store/records.js';
import type { Sub } from '../store/db.js';
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import type { BuyerMarket } from './buyer.js';

export const STEWARD_PROTOCOL = '/c0mpute/steward/1';
export const LEDGER_PROTOCOL = '/c0mpute/ledger/1';
export const PREEMPT_PROTOCOL = '/c0mpute/preempt/1';
export const MAX_LEDGER_RANGE = 1024;
/** Parties (open claims' buyers and chosen providers) a steward's catch-up round asks at most, in turn (StewardConfig.catchUpMs). */
export const CATCH_UP_PEERS = 32;
/** How long a withdraw waits for the buyer's selections of a claim with receipts held aside (the buyer waits 15 s). */
export const WITHDRAW_ASK_MS = 5_000;
/** How long a queued claim whose buyer is away (after a steward restart) keeps its place before it is dropped. */
export const REASK_GRACE_MS = 30_000;
/** Claims one buyer may have in line at once, by default (docs/overlays.md "A bounded line"). */
export const MAX_QUEUED_PER_BUYER = 256;
/**
 * `/c0mpute/steward/1` streams the steward takes at once on one connection (one buyer's): its claims waiting in line
 * each hold their stream (up to its per-buyer cap, and never fewer than a buyer's own outbound bound lets it open:
 * net/protocols.ts STEWARD_STREAMS), plus STEWARD_STREAM_HEADROOM so a withdraw, select or `reclaimed` is never shut
 * out by asks waiting in line (review s43 R1 F2).
 */
export function stewardInboundStreams(cfg: Pick<StewardConfig, 'maxQueuedPerBuyer'>): number {
  return Math.max(STEWARD_STREAMS, (cfg.maxQueuedPerBuyer ?? MAX_QUEUED_PER_BUYER) + STEWARD_STREAM_HEADROOM);
}
/** Claims in line at once, every buyer's, by default. */
export const MAX_QUEUED = 4096;
/** Devices one provider's advert may add to the steward's physical capacity, by default (StewardConfig.maxDevicesPerProvider). */
export const MAX_DEVICES_PER_PROVIDER = 64;

export interface StewardConfig {
  /** The entitlement tree (YAML file path). */
  treeFile: string;
  /** Sign selections on buyers' behalf (a managed decision). */
  managed: boolean;
  /** Evidence needed to derive an estimate from history (§2.6; default 3, 0 counts as 1). */
  requiredEvidence: number;
  /** Reclaim devices from lower-priority claims for a claim queued on held devices. */
  preempt: boolean;
  /** Idle reclamation policy (pool/1 §2.7); absent: nothing is reclaimed for idleness. */
  idle?: { windowMs: number; idleBelowMicrowatts: number; sampleMs?: number };
  /** How long a restored queued claim waits for its buyer to ask again (default REASK_GRACE_MS). */
  reaskGraceMs?: number;
  /** Claims one buyer may have in line at once (default MAX_QUEUED_PER_BUYER); past it a new one is refused STEWARD_QUEUE_FULL. */
  maxQueuedPerBuyer?: number;
  /** Claims in line at once, every buyer's (default MAX_QUEUED). */
  maxQueued?: number;
  /** The witnesses whose receipts the ledger takes and counts (the overlay's `network.witnesses`); absent: any key's. */
  witnesses?: readonly string[];
  /** Publish the ledger's current head on pool-head again every this many ms, first at min(2 s, it) after start (the overlay's `network.resyncMs`); absent or 0: only after each append. */
  headRepublishMs?: number;
  /** Without `witnesses`: the ledger keeps the receipts of the first this many witness keys (default 64; config witnessRecords.maxWitnesses). */
  maxWitnesses?: number;
  /**
   * Ask the open claims' buyers and chosen providers for the selections and receipts this steward lacks (records/1
   * sync) every this many ms, first at min(2 s, it) after start (the overlay's `network.resyncMs`); absent or 0: never.
   */
  catchUpMs?: number;
  /**
   * The overlay's physical capacity in devices, declared by the operator: used instead of the providers' adverts
   * (Reclaimer.capacity). Absent: counted from the adverts of allowed, connected providers.
   */
  capacity?: number;
  /** The most devices one provider's advert may add to the counted capacity (default MAX_DEVICES_PER_PROVIDER). */
  maxDevicesPerProvider?: number;
  /** The overlay's `network.allowlist`: only these providers' adverts count towards capacity; absent: any connected peer's. */
  allowlist?: readonly string[];
}

/** What the steward uses of the overlay it runs on. */
export interface StewardPorts {
  readonly name: string;
  readonly clock: Clock;
  /** The monotonic clock, for durations the steward measures for itself (default monotonicClock, src/util/clock.ts). */
  readonly monoClock?: Clock;
  readonly log: Logger;
  /**
   * `peers`: who is connected now (only a connected provider's advert counts towards capacity; absent: nobody is).
   * `libp2p`: only its `peer:connect` events are heard (a provider whose `stop` got no answer is tried again when it
   * connects: src/roles/steward-reclaim.ts); absent, the steward tries again on its backoff alone.
   */
  readonly net: Pick<Network, 'handle' | 'subscribe' | 'publish' | 'request'> & Partial<Pick<Network, 'syncFrom' | 'syncJobs' | 'drained' | 'fetchRecords' | 'peers' | 'libp2p'>>;
  /**
   * The node's records. `witnessReceiptsFor` and `evidenceAbout` (absent in a stub: nothing known) tell what the node
   * kept of this key's ledger: a ledger begun anew under a key with one is refused, and the evidence against it is
   * shown after a restart (src/roles/steward-history.ts).
   */
  readonly records: Pick<RecordStore, 'get' | 'put'> & Partial<Pick<RecordStore, 'witnessReceiptsFor' | 'evidenceAbout'>>;
  /**
   * The market engine: a managed overlay's selections, the live adverts (the overlay's physical capacity), and the
   * offers and adverts held by address (a selection's winning offer and the advert it cites: steward-winners.ts).
   */
  readonly market: Pick<BuyerMarket, 'decide' | 'signSelection'> & {
    readonly adverts: { readonly latest: ReadonlyMap<string, Opened<Advert>>; get?(address: string): Opened<Advert> | undefined };
    readonly book?: { get(address: string): Opened<Offer> | undefined };
    /** File an offer a buyer's `select` carried (signed by its provider: the steward's book may lag the buyer's by a gossip hop). */
    addOffer?(o: Opened<Offer>, now: number): Promise<void>;
  };
  /** A sublevel of the overlay's store (the steward's queue). */
  sub(name: string): Sub;
  /** The roles this node runs (its own advert counts in the capacity only with `provider`: Reclaimer.capacity). Absent: a stub's, own advert counted. */
  readonly roles?: readonly string[];
  /** The network's abuse score (net/peer-abuse.ts): told of steward/1's bad requests (Steward #serve). Absent: nobody is blamed. */
  readonly abuseReports?: Pick<AbuseReports, 'report' | 'invalid'>;
}

/** The node's identity as the steward uses it: its DID and the key it signs ledger entries with. */
export interface StewardIdentity {
  readonly did: string;
  readonly signer: Ed25519Signer;
}

/** A direct-protocol stream as the steward's handlers see it. */
export interface StewardStream {
  peer: { toString(): string };
  signal: AbortSignal;
  send(f: CborValue): Promise<void>;
}
