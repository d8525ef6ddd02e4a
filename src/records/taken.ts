/**
 * The record a buyer's selection takes for a job (docs/matching.md "Open orders, claims and leases"): an auction's
 * `c0mpute.offer/1`, or, for an open order (a job with `order`), the winning `c0mpute.claim/1`. A won claim stands
 * where an offer stands: same job, signer, address and price; it has no start-by, quoted duration or expiry, so a
 * check of those never refuses one. Every place that keeps or reopens "the offer" of won work (the exec header, a
 * crashed run's note, a pool's dispatch and its trail: docs/pools.md "Dispatch recorded before the call") opens it
 * with this, as the type the job calls for: the other type is refused RECORD_WRONG_TYPE (an order's dispatch carrying
 * an offer, or an auction's carrying a claim, does not link).
 */
import { open, type Opened, type OpenOptions } from './envelope.js';
import { T, type Job, type Offer } from './kinds.js';

/** Open `bytes` as what a selection of `job` takes: a claim for an order, else an offer (typed as the offer it stands for). */
export function openTaken(bytes: Uint8Array, job: Opened<Job>, opts: OpenOptions = {}): Opened<Offer> {
  return job.record.order ? (open(bytes, T.claim, opts) as unknown as Opened<Offer>) : open(bytes, T.offer, opts);
}
