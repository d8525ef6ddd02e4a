/**
 * A bag of opened records indexed by address and type: what an offline command
 * or an audit works from. Pure (the CLI reads the files and opens them).
 */
import { NONDELIVERY_TYPES, T, type Acceptance, type Advert, type Delegation, type Job, type AnyNonDelivery, type Offer, type Receipt, type Selection } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';

export class RecordSet {
  readonly byAddress = new Map<string, Opened>();

  constructor(records: Iterable<Opened> = []) {
    for (const r of records) this.add(r);
  }

  add(r: Opened): boolean {
    if (this.byAddress.has(r.address)) return false;
    this.byAddress.set(r.address, r);
    return true;
  }

  get(address: string): Opened | undefined {
    return this.byAddress.get(address);
  }

  /** The record at `address` if it has the type, else undefined. */
  getTyped<R>(address: string, type: string): Opened<R> | undefined {
    const r = this.byAddress.get(address);
    return r && r.type === type ? (r as Opened<R>) : undefined;
  }

  /** Records of one type, in address order (never insertion order). */
  ofType<R>(type: string): Opened<R>[] {
    const out: Opened<R>[] = [];
    for (const r of this.byAddress.values()) if (r.type === type) out.push(r as Opened<R>);
    return out.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  }

  get jobs(): Opened<Job>[] {
    return this.ofType<Job>(T.job);
  }
  get adverts(): Opened<Advert>[] {
    return this.ofType<Advert>(T.advert);
  }
  get offers(): Opened<Offer>[] {
    return this.ofType<Offer>(T.offer);
  }
  get receipts(): Opened<Receipt>[] {
    return this.ofType<Receipt>(T.receipt);
  }
  get acceptances(): Opened<Acceptance>[] {
    return this.ofType<Acceptance>(T.acceptance);
  }
  get delegations(): Opened<Delegation>[] {
    return this.ofType<Delegation>(T.delegation);
  }
  get selections(): Opened<Selection>[] {
    return this.ofType<Selection>(T.selection);
  }
  /** Non-deliveries of every version (/1, /2 on a pooled offer, /3 on an open order's claim), in address order. */
  get nondeliveries(): Opened<AnyNonDelivery>[] {
    return NONDELIVERY_TYPES.flatMap((t) => this.ofType<AnyNonDelivery>(t)).sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  }
}
