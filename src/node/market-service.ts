/**
 * The node's market: the advert index, the persisted offer book, and the
 * reputation evidence, behind the operations the roles and the control API use.
 * Decisions are the market engine's (src/market); this only feeds it.
 *
 * What it keeps (docs/market.md "What a node stores"): offers for this node's
 * own jobs and offers it made itself (relaying an offer is not storing it);
 * adverts up to a cap, evicting the least useful (src/market/advert-cap.ts).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Opened } from '../records/envelope.js';
import { T, type Advert, type Job, type AnyNonDelivery, type Offer, type PolicyName, type Receipt, type Acceptance, type Selection } from '../records/kinds.js';
import type { Ed25519Signer } from '../records/ed25519.js';
import type { Db } from '../store/db.js';
import type { RecordStore } from '../store/records.js';
import type { Logger } from '../util/log.js';
import { OfferBook } from '../market/book.js';
import { AdvertIndex, REASON, checkEligibility, prepareJob, type Failure } from '../market/eligibility.js';
import { select, type SelectResult } from '../market/select.js';
import { explainMarket, judgeAll, type MarketExplanation, type OfferDrop } from '../market/explain.js';
import { signSelection } from '../market/selection.js';
import { DEFAULT_MAX_EVIDENCE, DEFAULT_MAX_EVIDENCE_BYTES, EvidenceStore } from '../reputation/store.js';
import { DEFAULT_SECOND_HAND_WEIGHT, UNKNOWN_SCORE, type ReputationTable, type TrustSources } from '../reputation/derive.js';
import type { AuditSettings } from '../market/audit-settings.js';
import { LiveReputation } from '../reputation/live.js';
import type { BuyerMarket, Decision, RankedCandidate } from '../roles/buyer.js';
import { chooseEvictions } from '../market/advert-cap.js';
import { nonDeliveryProvider } from '../reputation/nondelivery.js';
import { askFor, orderFromJob } from '../matching/candidates.js';
import { willNotQuote } from '../market/ask.js';
import { cmpAmount } from '../market/amount.js';

/** Default cap on stored advert records (config `market.maxAdverts`). */
export const DEFAULT_MAX_ADVERTS = 10_000;
/** The most market entries (providers, a pool counting once) over which a buyer checks whether all have quoted (`allQuoted`). */
export const ALL_QUOTED_MAX = 64;

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
  /** Clock for eviction and pruning decisions (default: `() => now`). */
  clock?: () => number;
  /** Cap on stored advert records (default DEFAULT_MAX_ADVERTS). */
  maxAdverts?: number;
  /** Reputation evidence records held at most (config `reputation.maxEvidence`; default DEFAULT_MAX_EVIDENCE). */
  maxEvidence?: number;
  /** Reputation evidence envelope bytes held at most (config `reputation.maxEvidenceBytes`; default DEFAULT_MAX_EVIDENCE_BYTES). */
  maxEvidenceBytes?: number;
  /** DIDs of the peers connected now (the advert cap keeps theirs longer). */
  connected?: () => ReadonlySet<string>;
  /** Whether a provider has a live presence at `now` (the overlay's presence view): an explanation's hints say which they count are not live. */
  live?: (did: string, now: number) => boolean;
  /** The offers for a job this node dropped for their dates, by provider (Network.clockDropped): said in its explanation. */
  clockDropped?: (job: string) => ReadonlyMap<string, OfferDrop>;
  registry?: Registry;
}

export class MarketService implements BuyerMarket {
  readonly adverts: AdvertIndex;
  readonly #rep: LiveReputation;
  /** This node's own jobs (as a buyer), by address: the offers it stores are for these. */
  readonly #own = new Map<string, Opened<Job>>();
  /**
   * This node's jobs still live when the service opened: an earlier process's, whose runs died with it (nothing
   * resumes a run). Their late receipts are still taken (#own); on an overlay with a steward the buyer withdraws
   * their claims at start (BuyerWiring: docs/overlays.md "Admission").
   */
  #earlier: ReadonlyArray<Opened<Job>> = [];
  #evicted: Counter<'reason'> | undefined;
  #notStored: Counter | undefined;

  private constructor(
    private o: MarketServiceOptions,
    readonly book: OfferBook,
    readonly evidence: EvidenceStore,
    adverts: AdvertIndex,
  ) {
    this.adverts = adverts;
    const derived = o.registry
      ? new Histogram({
          name: 'c0mpute_reputation_derive_seconds',
          help: 'Time to bring the reputation view up to date on the event loop: all of it (scope="all": the first read; after an eviction; with dealtWith, after a record of this node\'s own jobs as a provider; or when that is cheaper) the providers new evidence concerns (scope="providers"), or a decision’s view as of its time, where evidence is dated after it (scope="asOf")',
          labelNames: ['scope'],
          buckets: [0.0001, 0.001, 0.005, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2],
          registers: [o.registry],
        })
      : undefined;
    this.#rep = new LiveReputation(evidence, { self: o.did, ...(o.trust ? { trust: o.trust } : {}) }, { onDerive: (ms, full, _n, asOf) => derived?.observe({ scope: full ? 'all' : asOf ? 'asOf' : 'providers' }, ms / 1000) });
  }

  static async open(o: MarketServiceOptions): Promise<MarketService> {
    // the index first: the book files a pool member's offer under the pool (docs/pools.md "One entry in the market")
    const adverts = new AdvertIndex(o.records.allAdverts());
    const book = await OfferBook.open(o.db, o.now, `${o.prefix}market-offers`, (offer) => adverts.providerFor(offer), (offer) => adverts.settled(offer));
    const evicted = o.registry ? new Counter({ name: 'c0mpute_reputation_evidence_evicted_total', help: 'Reputation evidence records evicted past reputation.maxEvidence or reputation.maxEvidenceBytes (outcomes whole, the oldest first: second-hand ones first, this node\'s own last)', registers: [o.registry] }) : undefined;
    const max = o.maxEvidence ?? DEFAULT_MAX_EVIDENCE;
    const maxBytes = o.maxEvidenceBytes ?? DEFAULT_MAX_EVIDENCE_BYTES;
    // the service, once made: an eviction while the store opens (a lowered bound) finds none and needs none
    const made: { m?: MarketService } = {};
    const evidence = await EvidenceStore.open(o.db, `${o.prefix}reputation-evidence`, {
      max,
      maxBytes,
      self: o.did,
      trusted: o.trust?.trustedBuyers ?? [],
      dealtWith: o.trust?.dealtWith ?? false,
      ...(o.clock ? { clock: o.clock } : {}),
      onError: (e) => o.log.warn({ err: (e as Error).message }, 'evicting reputation evidence failed; nothing was lost, it is tried again'),
      onEvict: (n) => {
        // many providers' evidence went at once: the whole view is derived again at its next read
        if (made.m) made.m.#rep.reset();
        evicted?.inc(n);
        o.log.info({ evicted: n, max, maxBytes }, 'reputation evidence past its bound: the oldest outcomes went, second-hand ones first, this node\'s own last');
      },
    });
    if (o.registry) new Gauge({ name: 'c0mpute_reputation_evidence_held', help: 'Reputation evidence records held (receipts, acceptances, offers they cite, non-deliveries)', registers: [o.registry], collect() { this.set(evidence.size); } });
    if (o.registry) new Gauge({ name: 'c0mpute_reputation_evidence_bytes', help: 'Envelope bytes of the reputation evidence held (bounded by reputation.maxEvidenceBytes)', registers: [o.registry], collect() { this.set(evidence.bytes); } });
    const m = (made.m = new MarketService(o, book, evidence, adverts));
    m.#earlier = await o.records.liveJobsOf(o.did, o.now);
    for (const j of m.#earlier) m.#own.set(j.address, j);
    await m.#capAdverts(o.maxAdverts ?? DEFAULT_MAX_ADVERTS);
    return m;
  }

  #clock(): number {
    return this.o.clock ? this.o.clock() : this.o.now;
  }

  /** Install the advert cap on the record store (applied now to what is held) and its metrics. */
  async #capAdverts(max: number): Promise<void> {
    const reg = this.o.registry;
    if (reg) {
      this.#evicted = new Counter({ name: 'c0mpute_market_adverts_evicted_total', help: 'Providers whose adverts the advert cap let go whole (or refused), and superseded advert records it let go (reason superseded), by reason', labelNames: ['reason'], registers: [reg] });
      this.#notStored = new Counter({ name: 'c0mpute_market_offers_relayed_not_stored_total', help: 'Offers relayed for jobs that are not this node’s (not stored)', registers: [reg] });
      const records = this.o.records;
      new Gauge({ name: 'c0mpute_market_adverts_stored', help: 'Advert records stored (current and superseded)', registers: [reg], collect() { this.set(records.advertCount); } });
      new Gauge({ name: 'c0mpute_market_adverts_cap', help: 'The cap on stored advert records (market.maxAdverts)', registers: [reg] }).set(max);
    }
    await this.o.records.setAdvertCap({
      max,
      victims: (excess, providers) => {
        const ev = chooseEvictions(providers, excess, { now: this.#clock(), ...this.#firstHand(), connected: this.o.connected?.() ?? new Set() });
        for (const e of ev) this.#evicted?.inc({ reason: e.reason }, e.whole ? 1 : e.adverts.length);
        if (ev.length) this.o.log.debug({ providers: ev.filter((e) => e.whole).length, superseded: ev.filter((e) => !e.whole).reduce((n, e) => n + e.adverts.length, 0), excess }, 'advert cap: evicted the least useful adverts');
        return ev;
      },
      onEvict: (evicted) => {
        this.adverts.remove(evicted);
        // an offer citing a pooled advert let go stands for its signer again (docs/pools.md "Offer book")
        this.book.refile(evicted.map((a) => a.address));
      },
    });
  }

  /**
   * What the advert cap protects, from this node's own dealings only (a record anyone can sign earns nothing):
   * `dealtWith`, the providers whose current advert is never evicted — those that quoted on one of this node's live
   * jobs (an offer in its book), those whose receipt this node countersigned as the buyer (its acceptance: signed
   * only for a receipt that links to a job of its own), and this node itself; `cited`, the adverts those offers, the
   * offers such receipts cite and this node's own offers were made against (kept before others' superseded ones);
   * `known`, providers it dealt with before, kept after every provider it has not: those that quoted on one of its
   * jobs that has ended (an offer still in its book) and those it signed a non-delivery for.
   */
  #firstHand(): { dealtWith: Set<string>; known: Set<string>; cited: Set<string> } {
    const self = this.o.did;
    const dealtWith = new Set<string>([self]);
    const known = new Set<string>();
    const cited = new Set<string>();
    for (const o of this.book.all()) {
      if (o.signer !== self && !this.#own.has(o.record.job)) {
        // the book keeps offers for this node's own jobs (and its own offers) only: this one's job has ended
        known.add(o.signer);
        continue;
      }
      dealtWith.add(o.signer);
      cited.add(o.record.advert);
    }
    for (const nd of this.evidence.nondeliveries.values()) if (nd.signer === self) known.add(nonDeliveryProvider(nd));
    for (const a of this.evidence.acceptances.values()) {
      if (a.signer !== self) continue;
      const r = this.evidence.receipts.get(a.record.receipt);
      if (!r || r.record.buyer !== self) continue;
      dealtWith.add(r.signer);
      // the offer it cites (by address: the one this node took): its signer's advert, a pool member's too
      const o = this.evidence.offers.get(r.record.offer);
      if (o) {
        dealtWith.add(o.signer);
        cited.add(o.record.advert);
      }
    }
    return { dealtWith, known, cited };
  }

  /** Store an advert (within the cap) and index it. Resolves to whether it is now held. */
  async putAdvert(a: Opened<Advert>): Promise<boolean> {
    const added = await this.o.records.put(a);
    if (added) {
      this.adverts.add(a);
      // an offer filed before the pooled advert it cites was held now stands for the pool (docs/pools.md "Offer book")
      this.book.refile([a.address]);
    }
    return added;
  }

  /** A job this node published as a buyer: offers for it are stored. */
  noteOwnJob(job: Opened<Job>): void {
    const now = this.#clock();
    for (const [k, j] of this.#own) if (j.record.deadline < now) this.#own.delete(k);
    this.#own.set(job.address, job);
  }

  /** This node's jobs that were live when the service opened (an earlier process's runs: see #earlier). */
  get earlierJobs(): ReadonlyArray<Opened<Job>> {
    return this.#earlier;
  }

  ownJob(address: string): Opened<Job> | undefined {
    return this.#own.get(address);
  }

  /** Whether this node keeps an offer: one for its own job, or one it signed itself. */
  wantsOffer(o: Opened<Offer>): boolean {
    return this.#own.has(o.record.job) || o.signer === this.o.did;
  }

  /** Count an offer relayed but not stored. */
  notStored(): void {
    this.#notStored?.inc();
  }

  /**
   * Store an offer. The advert it travelled with is stored too when this node
   * does not hold it (the advert cap may have let it go before the provider quoted).
   */
  async addOffer(o: Opened<Offer>, now: number, attachments: readonly Opened[] = []): Promise<void> {
    // the advert first, so the book files the offer under the provider its advert stands for
    for (const a of attachments) {
      if (a.type === T.advert && a.signer === o.signer && !this.adverts.get(a.address)) await this.putAdvert(a as Opened<Advert>);
    }
    await this.book.add(o, now);
  }

  /**
   * Providers among `connected` with a live advert that fits `job` (no offer
   * needed) and no live offer for it held: whom a buyer pushes its job to.
   * DID order, at most `limit`.
   */
  silentProviders(job: Opened<Job>, connected: Iterable<string>, now: number, limit: number): string[] {
    const out: string[] = [];
    for (const did of [...connected].sort()) {
      if (out.length >= limit) break;
      const a = this.adverts.latest.get(did);
      if (!a || a.record.expiresAt <= now || did === this.o.did) continue;
      if (this.quoted(job.address, did, now)) continue;
      if (this.providerEligibility(job, a, now).length) continue;
      out.push(did);
    }
    return out;
  }

  /**
   * Live offers for a job priced at or below their own advert's ask for it
   * (src/matching/candidates.ts askFor): what a buyer counts against
   * `buyer.offersWanted`. An offer dearer than its advert said does not count,
   * so cheap adverts that quote dear cannot stop the push (docs/market.md §12).
   */
  offersAtAsk(job: Opened<Job>, now: number): number {
    const { recorded, unrecorded } = this.offersAtAskByRecord(job, now);
    return recorded + unrecorded;
  }

  /**
   * offersAtAsk, split by the record in this node's reputation view of the
   * provider each offer stands for (a pool's, for a member's offer): `recorded`,
   * a score above a provider with no evidence (UNKNOWN_SCORE, what any fresh key
   * gets); `unrecorded`, the rest. A buyer counts the unrecorded for at most half
   * of `buyer.offersWanted` (src/node/buyer-wiring.ts, docs/market.md §12).
   */
  offersAtAskByRecord(job: Opened<Job>, now: number): { recorded: number; unrecorded: number } {
    const order = orderFromJob(job);
    let recorded = 0;
    let unrecorded = 0;
    let rep: ReputationTable | undefined;
    for (const o of this.book.candidates(job.address, job.record.maxPrice.currency, now)) {
      const a = this.adverts.get(o.record.advert);
      const ask = a && a.signer === o.signer ? askFor(a.record, order) : undefined;
      if (!(ask?.ok && ask.cost.currency === o.record.price.currency && cmpAmount(o.record.price.amount, ask.cost.amount) <= 0)) continue;
      rep ??= this.reputation();
      if (rep.scoreOf(this.adverts.providerFor(o)) > UNKNOWN_SCORE) recorded++;
      else unrecorded++;
    }
    return { recorded, unrecorded };
  }

  /** Whether this node holds a live offer from `did` for its job. */
  quoted(job: string, did: string, now: number): boolean {
    return !!this.book.slot(job, this.adverts.entryOf(did), now);
  }

  /**
   * Receipts, acceptances and non-deliveries are evidence; a receipt brings the offer it cites: the one given (the
   * provider's own quote), else the book's, else the record store's (a buyer keeps the offers its selections
   * considered: the book drops offers an hour past their start-by time, and long work ends later).
   */
  async addEvidence(r: Opened<Receipt> | Opened<Acceptance> | Opened<AnyNonDelivery>, cited?: Opened<Offer>): Promise<void> {
    const extra: Opened[] = [];
    if (r.type === T.receipt) {
      const at = (r as Opened<Receipt>).record.offer;
      // only this node's own jobs' offers are in the record store: no disk read for anyone else's receipt
      const own = (r as Opened<Receipt>).record.buyer === this.o.did;
      const offer = cited?.address === at && cited.type === T.offer ? cited : (this.book.get(at) ?? (own ? await this.o.records.get(at, T.offer) : undefined));
      if (offer && !this.evidence.offers.has(offer.address)) extra.push(offer);
    }
    const added = await this.evidence.add(r, ...extra);
    if (added) this.#rep.added([r, ...extra]);
  }

  async getBytes(address: string): Promise<Uint8Array | undefined> {
    return this.evidence.getBytes(address) ?? this.book.get(address)?.bytes;
  }

  /** This node's reputation view, exact for the evidence held (only the providers new evidence concerns are derived again: LiveReputation). */
  reputation(): ReputationTable {
    return this.#rep.get();
  }

  /** This node's reputation view as of `at` (evidence dated later left out: what an audit of a decision at `at` counts). */
  reputationAsOf(at: number): ReputationTable {
    return this.#rep.asOf(at);
  }

  /** A provider asking whether its advert fits a job (no offer yet): every failure. */
  providerEligibility(job: Opened<Job>, advert: Opened<Advert>, now: number): Failure[] {
    return checkEligibility(job, advert, undefined, now, { skewMs: this.o.skewMs });
  }

  /**
   * Whether an offer passes the eligibility gates for the job at `now`, against the advert it resolves to (what
   * select would rank): what a buyer counts against `buyer.enoughOffers`, so an offer that cannot win does not end
   * the offer window.
   */
  offerEligible(job: Opened<Job>, offer: Opened<Offer>, now: number): boolean {
    if (offer.record.job !== job.address) return false;
    return checkEligibility(job, this.adverts.resolve(offer, now), offer, now, { skewMs: this.o.skewMs }).length === 0;
  }

  /**
   * Whether every provider in this node's view that could still win the job has quoted (docs/node.md "Buyer"): at
   * least one eligible offer is held, and each other provider with a live advert either has an offer held for the job
   * (eligible or not: it answered) or fails a gate its advert decides (an offer from it could not win). `self` (this
   * node, when it also provides) is not waited for, nor is a provider whose advert says it will not quote (willNotQuote:
   * another currency, or a per-job or per-MiB ask above maxPrice; a per-second ask depends on its own estimate). False
   * in a market of more than ALL_QUOTED_MAX entries: there,
   * providers that cannot win on price hold back (docs/market.md §12), so not all of them quote anyway, and the check
   * is not worth a pass over the market per offer. A provider whose advert this node does not hold is not waited for:
   * its offer would carry the advert, and the full window is the only wait that covers it.
   */
  allQuoted(job: Opened<Job>, now: number, self?: string): boolean {
    if (this.adverts.entries.size > ALL_QUOTED_MAX) return false;
    let eligible = false;
    let wontQuote: ((advert: Advert) => boolean) | undefined;
    for (const v of judgeAll(prepareJob(job), this.adverts, this.book, now, this.o.skewMs)) {
      if (v.eligible) eligible = true;
      else if (v.offer === undefined && v.provider !== self && v.failures.every((f) => f.code === REASON.OFFER_MISSING)) {
        // a provider whose advert says it will not quote (another currency, or a per-job or per-MiB ask above maxPrice)
        // is not waited for: before, it held the window open to its end
        const advert = this.adverts.liveAt(v.provider, now);
        if (!advert || !(wontQuote ??= willNotQuote(job.record))(advert.record)) return false;
      }
    }
    return eligible;
  }

  offerCount(job: string, now: number): number {
    return this.book.liveCount(job, now);
  }

  /** Each provider's best live offer for a job (in the job's currency first, when the job is known). */
  offersFor(job: string, now: number, record?: Opened<Job>): Array<Opened<Offer>> {
    return record ? this.book.forJob(record, now) : this.book.best(job, now);
  }

  explain(job: Opened<Job>, now: number): MarketExplanation {
    return explainMarket({ job, adverts: this.adverts, offers: this.book, now, skewMs: this.o.skewMs, ...this.#live(now), ...this.#dropped(job.address) });
  }

  /** explainMarket's `live` at `now`, when the service was given the presence view. */
  #live(now: number): { live?: (did: string) => boolean } {
    const live = this.o.live;
    return live ? { live: (did) => live(did, now) } : {};
  }

  /** explainMarket's `dropped` for `job`, when the network noted any. */
  #dropped(job: string): { dropped?: ReadonlyMap<string, OfferDrop> } {
    const drops = this.o.clockDropped?.(job);
    return drops?.size ? { dropped: drops } : {};
  }

  async decide(job: Opened<Job>, policy: PolicyName, now: number, excluded: ReadonlySet<string> = new Set()): Promise<Decision> {
    // Providers tried already: their offers are left out, by the offer's signer or by the provider it stands for. A
    // pool member tried stands for its pool (its latest advert's entry): the pool's slot may show another member's
    // offer now (a second coordinator's, around an epoch change: the tried one expired with it a standby behind, or it
    // came after the decision and ranks first), and that one is the same provider (docs/pools.md "Failover and epoch
    // changes"; it would dispatch to the same member, which refuses a job it ran: POOL_ALREADY_RUN).
    const out = new Set([...excluded].flatMap((d) => [d, this.adverts.entryOf(d)]));
    const offers = out.size === 0 ? this.book : this.book.forJob(job, now).filter((o) => !out.has(o.signer) && !out.has(this.adverts.providerFor(o)));
    // reputation as of the decision, by the rule its audit uses: evidence dated later (a provider's clock ahead) does not count yet
    const result: SelectResult = select({ job, adverts: this.adverts, offers, policy, reputation: this.reputationAsOf(now), now, skewMs: this.o.skewMs });
    const ranked: RankedCandidate[] = result.ok
      ? result.ranked.map((r) => {
          const offer = this.book.get(r.offer)!;
          const entry = this.adverts.providerFor(offer);
          return { provider: r.provider, offer, ...(entry !== r.provider ? { entry } : {}), total: r.total, scores: { ...r.scores } };
        })
      : [];
    return { result, ranked, market: explainMarket({ job, adverts: this.adverts, offers: this.book, now, skewMs: this.o.skewMs, ...this.#live(now), ...this.#dropped(job.address) }) };
  }

  /**
   * The settings this service decides under that an audit of its decisions needs (docs/market.md §7): its trust
   * sources and clock-skew window, and `stewards` (the overlay's steward, when it has one). What the buyer keeps with
   * each selection it signs (RecordStore.putDecision), so `market export` gives those of the decision, not of the day
   * it exports.
   */
  auditSettings(stewards: readonly string[] = []): AuditSettings {
    const t = this.o.trust;
    return {
      trustedBuyers: [...new Set(t?.trustedBuyers ?? [])].sort(),
      dealtWith: t?.dealtWith ?? false,
      secondHandWeight: t?.secondHandWeight ?? DEFAULT_SECOND_HAND_WEIGHT,
      skewMs: this.o.skewMs,
      ...(stewards.length ? { stewards: [...stewards] } : {}),
    };
  }

  /**
   * Sign the selection of `winner` with the market engine's signSelection: it
   * names the policy and every offer the decision considered (as many as fit in
   * an envelope), one per provider, in DID order, and checks this node may
   * decide. On failover the decision is a fresh one without the providers tried
   * (`decide`'s `excluded`), so recomputing from the selection's offers gives
   * its winner. A steward signs on the buyer's behalf (as an authorised decider).
   */
  signSelection(job: Opened<Job>, decision: Decision, winner: RankedCandidate, now: number): Opened<Selection> {
    return signSelection({
      result: decision.result,
      job,
      signer: this.o.signer,
      winner: winner.offer.address,
      // never before its own job (a clock stepped back since the job was announced): the selection would not audit
      decidedAt: job.signer === this.o.did ? Math.max(now, job.record.announcedAt) : now,
      offerAt: (a) => this.book.get(a),
      skewMs: this.o.skewMs,
      ...(job.signer === this.o.did ? {} : { stewards: [this.o.did] }),
    });
  }}
