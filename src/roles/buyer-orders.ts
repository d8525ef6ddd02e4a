/**
 * The buyer's side of an open order (docs/matching.md "Open orders, claims and
 * leases"; spec/matching-and-leases.md "Leases"): the job is published with
 * `order` and, instead of an offer window, the buyer's node takes claims on
 * `/c0mpute/claim/1`, numbers them in arrival order, decides with
 * decideClaims (src/matching/claims.ts), answers the winner with the signed
 * selection and every other claimant with a signed refusal, then runs the
 * work with the winner as the auction does.
 */
import { C0Error } from '../errors.js';
import type { Opened } from '../records/envelope.js';
import type { Job } from '../records/kinds.js';
import type { BuyerDeps, BuyerEvent, JobResult, JobSpec } from './buyer.js';

/** What the open-order path needs from the node (wired in src/node/overlay.ts). */
export interface OrderPorts {
  /** Start taking claims for a job: arrivals numbered in order; close() stops taking them. */
  inbox(job: string): ClaimInbox;
}

/** A claim as it arrived on `/c0mpute/claim/1`, with the way to answer it. */
export interface ArrivedClaim {
  seq: number;
  receivedAt: number;
  claim: Uint8Array;
  /** The claimant's advert, when it sent one along. */
  advert?: Uint8Array;
  /** The peer it came from (a DID-derived PeerId string). */
  from: string;
  answer(frame: ClaimAnswerFrame): void;
}

export type ClaimAnswerFrame = { t: 'won'; selection: Uint8Array } | { t: 'refused'; refusal: Uint8Array };

export interface ClaimInbox {
  /** The next claim, or undefined when the signal fires. */
  next(signal: AbortSignal): Promise<ArrivedClaim | undefined>;
  close(): void;
}

export async function runOrder(_d: BuyerDeps, _ports: OrderPorts, _job: Opened<Job>, _spec: JobSpec, _onEvent: (e: BuyerEvent) => void): Promise<JobResult> {
  throw new C0Error('ORDERS_NOT_SUPPORTED', 'open orders are not wired yet');
}
