/**
 * The node's market: the advert index, the persisted offer book, and the
 * reputation evidence, behind the operations the roles and the control API use.
 * Decisions are the market engine's (src/market); this only feeds it.
 */
import type { Opened } from '../records/envelope.js';
import { T, type Advert, type Job, type NonDelivery, type Offer, type PolicyName, type Receipt, type Acceptance, type Selection } from '../records/kinds.js';
import type { Ed25519Signer } from '../records/ed25519.js';
import type { Db } from '../store/db.js';
import type { RecordStore } from '../store/records.js';
import type { Logger } from '../util/log.js';
import { OfferBook } from '../market/book.js';
import { AdvertIndex, checkEligibility, type Failure } from '../market/eligibility.js';
import { select, type SelectResult } from '../market/select.js';
import { explainMarket, type MarketExplanation } from '../market/explain.js';
import { signSelection } from '../market/selection.js';
import { EvidenceStore } from '../reputation/store.js';
import type { ReputationTable, TrustSources } from '../reputation/derive.js';
import type { BuyerMarket, Decision, RankedCandidate } from '../roles/buyer.js';

export interface MarketServiceOptions {
  db: Db;
  prefix: string;
  records: RecordStore;
  now: number;
  log: Logger;
  signer: Ed25519Signer;
  did: string;
  skewMs: number;
  /** Whose second-hand evidence counts in this node's reputation view (default: first-hand only). */
  trust?: TrustSources;
}

export class MarketService implements BuyerMarket {
  readonly adverts: AdvertIndex;
  #rep: ReputationTable | undefined;

  private constructor(
    private o: MarketServiceOptions,
    readonly book: OfferBook,
    readonly evidence: EvidenceStore,
    adverts: Array<Opened<Advert>>,
  ) {
    this.adverts = new AdvertIndex(adverts);
  }

  static async open(o: MarketServiceOptions): Promise<MarketService> {
    const book = await OfferBook.open(o.db, o.now, `${o.prefix}market-offers`);
    const evidence = await EvidenceStore.open(o.db, `${o.prefix}reputation-evidence`);
    const adverts = await o.records.list(T.advert);
    return new MarketService(o, book, evidence, adverts);
  }

  addAdvert(a: Opened<Advert>): void {
    this.adverts.add(a);
  }

  async addOffer(o: Opened<Offer>, now: number): Promise<void> {
    await this.book.add(o, now);
  }

  /** Receipts, acceptances and non-deliveries are evidence; a receipt brings the offer it cites when we hold it. */
  async addEvidence(r: Opened<Receipt> | Opened<Acceptance> | Opened<NonDelivery>): Promise<void> {
    const extra: Opened[] = [];
    if (r.type === T.receipt) {
      const offer = this.book.get((r as Opened<Receipt>).record.offer);
      if (offer) extra.push(offer);
    }
    const added = await this.evidence.add(r, ...extra);
    if (added) this.#rep = undefined;
  }

  async getBytes(address: string): Promise<Uint8Array | undefined> {
    return this.evidence.getBytes(address) ?? this.book.get(address)?.bytes;
  }

  reputation(): ReputationTable {
    return (this.#rep ??= this.evidence.derive({ self: this.o.did, ...(this.o.trust ? { trust: this.o.trust } : {}) }));
  }

  /** A provider asking whether its advert fits a job (no offer yet): every failure. */
  providerEligibility(job: Opened<Job>, advert: Opened<Advert>, now: number): Failure[] {
    return checkEligibility(job, advert, undefined, now, { skewMs: this.o.skewMs });
  }

  offerCount(job: string, now: number): number {
    return this.book.liveCount(job, now);
  }

  /** Each provider's best live offer for a job (in the job's currency first, when the job is known). */
  offersFor(job: string, now: number, record?: Opened<Job>): Array<Opened<Offer>> {
    return record ? this.book.forJob(record, now) : this.book.best(job, now);
  }

  explain(job: Opened<Job>, now: number): MarketExplanation {
    return explainMarket({ job, adverts: this.adverts, offers: this.book, now, skewMs: this.o.skewMs });
  }

  async decide(job: Opened<Job>, policy: PolicyName, now: number): Promise<Decision> {
    const result: SelectResult = select({ job, adverts: this.adverts, offers: this.book, policy, reputation: this.reputation(), now, skewMs: this.o.skewMs });
    const ranked: RankedCandidate[] = result.ok
      ? result.ranked.map((r) => ({ provider: r.provider, offer: this.book.get(r.offer)!, total: r.total, scores: { ...r.scores } }))
      : [];
    return { result, ranked, market: explainMarket({ job, adverts: this.adverts, offers: this.book, now, skewMs: this.o.skewMs }) };
  }

  /**
   * Sign the selection of `winner` with the market engine's signSelection: it
   * names the policy and every offer the decision considered, one per
   * provider, in DID order, and checks this node may decide. On failover the
   * providers already tried are `excluded`: they are no longer under
   * consideration, so recomputing from the selection's offers gives the
   * runner-up. A steward signs on the buyer's behalf (as an authorised decider).
   */
  signSelection(job: Opened<Job>, decision: Decision, winner: RankedCandidate, now: number, excluded: ReadonlySet<string> = new Set()): Opened<Selection> {
    return signSelection({
      result: decision.result,
      job,
      signer: this.o.signer,
      winner: winner.offer.address,
      excluded,
      decidedAt: now,
      ...(job.signer === this.o.did ? {} : { stewards: [this.o.did] }),
    });
  }
}
