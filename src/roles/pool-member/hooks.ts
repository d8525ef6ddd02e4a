/**
 * What a pool member plugs into the provider role (docs/pools.md "One provider
 * to buyers"): the provider keeps quoting, exec/1, receipts and gossip; these
 * hooks make its advert and receipts the pool's, let only the elected
 * coordinator quote, run the work through the pool (dispatch → member), and
 * settle completed jobs.
 */
import type { Opened } from '../../records/envelope.js';
import type { Advert, Energy, Job, Offer, Receipt } from '../../records/kinds.js';
import type { Money } from '../../records/money.js';
import type { ExecContext } from '../provider/executors.js';

export interface ProviderPoolHooks {
  /** The advert as the pool's: the member's pool proof and the members' hardware. */
  advert(a: Advert): Advert;
  /** A receipt as the pool's: provider = the pool's DID, with the signer's pool proof. */
  receipt(r: Receipt): Receipt;
  /** Only the elected coordinator quotes (asked first, for every job heard: silent, uncounted). */
  mayQuote(job: Opened<Job>): boolean;
  /**
   * The admission gates on the price the member would quote (the offer's price is what the run checks): false = no
   * offer. Asked only for a job the provider would otherwise quote (after its eligibility, workload, slot and price checks).
   */
  mayQuoteAt?(job: Opened<Job>, price: Money): boolean;
  /** Run the won work through the pool: gates, member choice, durable dispatch, the call, the output guard. */
  run(job: Opened<Job>, offer: Opened<Offer>, ctx: ExecContext): Promise<Uint8Array>;
  /**
   * The energy the receipt of won work states, given what this node's meter measured over the run (`measured`) and
   * whether it failed: a failed run dispatched to another member is {0, Estimator} (docs/pools.md "Energy on a
   * pooled receipt"); otherwise `measured`.
   */
  energy?(job: string, measured: Energy, failed: boolean): Energy;
  /** After the receipt is stored: settle (completed) and close the dispatch trail. Until then the job is in flight (recovery leaves it alone). */
  closed(r: Opened<Receipt>): Promise<void>;
  /** The receipt could not be stored, so `closed` will not follow: the job is no longer in flight (recovery closes its dispatch). */
  abandoned?(job: string): void;
}
