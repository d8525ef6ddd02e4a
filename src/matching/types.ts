/**
 * Shared shapes of the matching layer (spec/matching-and-leases.md on the P2P
 * network; docs/matching.md): what a node knows of a live provider, built from
 * its signed presence and advert. Pure data: the presence view produces it;
 * candidates, leases and batch plans consume it.
 */
import type { Opened } from '../records/envelope.js';
import type { Advert, Presence } from '../records/kinds.js';

/** A provider live now: its latest presence still inside its window, and a live advert. */
export interface LiveProvider {
  /** The provider's DID (signer of both records). */
  did: string;
  /** The newest presence record heard from it (live until issuedAt + windowMs). */
  presence: Opened<Presence>;
  /** Its live advert (hardware, tier, region, prices, box key). */
  advert: Opened<Advert>;
  /** Workloads it serves now (from the presence record). */
  workloads: readonly string[];
  /** Free slots it announced (0: live, taking no new work). */
  freeSlots: number;
  /** Until when it counts as live (presence issuedAt + windowMs), ms since the epoch. */
  liveUntil: number;
}

/** Default liveness window of a presence record, ms (the spec's MATCH_LIVENESS_MS). */
export const MATCH_LIVENESS_MS = 15_000;
/** Default lease length, ms (the spec's MATCH_LEASE_MS). */
export const MATCH_LEASE_MS = 20_000;
/**
 * Lease periods an open order's age counts for (docs/matching.md "Leases without a coordinator", rule 5): an order is
 * leased oldest first during its first MATCH_FRONT_PERIODS periods, then behind every order still in them, in an order
 * that changes each period. Its `announcedAt` is the buyer's word, which no node can check.
 */
export const MATCH_FRONT_PERIODS = 3;
/**
 * Escalation grace of an open bid's lease, ms (docs/matching.md "Leases without a coordinator", rule 6): in leased
 * mode an open bid still open at age a ≥ MATCH_ESCALATE_MS may be claimed by the first 2^⌊a/MATCH_ESCALATE_MS⌋
 * providers of its rotated ranking, not only by its lease holder, so keys that hold leases and never claim stall an order for about
 * MATCH_ESCALATE_MS · log2(providers), whatever their number.
 */
export const MATCH_ESCALATE_MS = MATCH_LEASE_MS / 4;
