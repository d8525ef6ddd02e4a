/**
 * A node's reputation view kept up to date (docs/market.md "How the view
 * follows new evidence"). The view is never stored: `deriveReputation` derives
 * it from the held evidence, a pass over every record, on the event loop:
 * about 250 ms at the default bound of 100,000 records on a 2-core machine. Until
 * the fifteenth round of issue #16 the node derived it all again at the first
 * read after any new record, so a node hearing a market's outcomes spent
 * nearly half its loop re-deriving (`npm run bench -- reputation`).
 *
 * Every term of a provider's figures is made of evidence about that provider
 * (its receipts, their acceptances and cited offers, the non-deliveries naming
 * it), but for one: the dealt-with weights, which count this node's own jobs
 * as a provider for each buyer. So a new record changes the figures of the
 * provider it concerns, and the view re-derives only that provider's, over its
 * own evidence (EvidenceStore.evidenceFor), which gives exactly the figures a
 * derivation over everything would (test/unit/reputation/live.test.ts
 * checks it record by record). All is derived again only at the first read,
 * after an eviction (many providers' evidence goes at once), with
 * `dealtWith` after a record of this node's own jobs as a provider (the
 * weights of that buyer's outcomes about every provider may move). The
 * providers to derive again are derived together, in one pass over their
 * evidence (with `dealtWith`, and this node's own jobs as a provider once).
 */
import { deriveReputation, ReputationTable, type DeriveOptions, type Figures } from './derive.js';
import type { EvidenceStore } from './store.js';
import { T, type Acceptance } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';

export interface LiveReputationOptions {
  /**
   * Told of each derivation: all of it (`full`) or only some providers' (`providers` of them), and its cost in ms;
   * `asOf` for the providers derived again as of a decision's time (asOf), after the live view is brought up to date.
   */
  onDerive?: (ms: number, full: boolean, providers: number, asOf?: boolean) => void;
}

export class LiveReputation {
  readonly #evidence: EvidenceStore;
  readonly #opts: DeriveOptions;
  readonly #onDerive: LiveReputationOptions['onDerive'];
  /** Each provider's figures now; undefined until the first read, and after a change that needs all derived again. */
  #figures: Map<string, Figures> | undefined;
  #table: ReputationTable | undefined;
  /** Providers whose evidence changed since the table was made. */
  readonly #dirty = new Set<string>();
  /** Derivations of everything, and of some providers, so far (tests, the bench). */
  full = 0;
  partial = 0;

  constructor(evidence: EvidenceStore, opts: DeriveOptions, o: LiveReputationOptions = {}) {
    this.#evidence = evidence;
    this.#opts = opts;
    this.#onDerive = o.onDerive;
  }

  /** The view, exact for the evidence held now. */
  get(): ReputationTable {
    if (this.#figures && this.#table && this.#dirty.size === 0) return this.#table;
    const t0 = performance.now();
    if (!this.#figures) {
      this.#figures = new Map(this.#evidence.derive(this.#opts).all().map((f) => [f.did, f]));
      this.#dirty.clear();
      this.full++;
      this.#table = new ReputationTable([...this.#figures.values()]);
      this.#onDerive?.(performance.now() - t0, true, this.#figures.size);
      return this.#table;
    }
    const n = this.#dirty.size;
    // one derivation over the dirty providers' evidence together (the trusted set and, with dealtWith, this node's
    // own jobs as a provider are taken once, not once per provider)
    const also = this.#opts.trust?.dealtWith ? [this.#opts.self] : [];
    const t = deriveReputation(this.#evidence.evidenceFor(this.#dirty, also), this.#opts);
    for (const p of this.#dirty) {
      if (t.has(p)) this.#figures.set(p, t.get(p));
      else this.#figures.delete(p);
    }
    this.#dirty.clear();
    this.partial++;
    this.#table = new ReputationTable([...this.#figures.values()]);
    this.#onDerive?.(performance.now() - t0, false, n);
    return this.#table;
  }

  /**
   * The view as of `at`: evidence dated after it left out by the rule an audit uses (deriveReputation's `asOf`,
   * evidenceTime), so a decision taken at `at` scores as its audit recomputes it (docs/market.md §5). Exactly
   * `derive({...opts, asOf: at})` over everything held: the providers with evidence dated later are derived again as
   * of `at` over their own evidence; everyone else's figures are the live ones. The store finds them among the
   * records dated after its clock (EvidenceStore.providersWithEvidenceAfter), not in all it holds. With `dealtWith`,
   * evidence of this node's own jobs as a provider dated later moves the weight of its buyer (k_B): the providers that
   * buyer's outcomes are about are derived again too, not everything (only that buyer's weight can differ).
   */
  asOf(at: number): ReputationTable {
    const table = this.get();
    const t0 = performance.now();
    const late = this.#evidence.providersWithEvidenceAfter(at);
    if (late.size === 0) return table;
    const opts: DeriveOptions = { ...this.#opts, asOf: at };
    const self = this.#opts.self;
    if (this.#opts.trust?.dealtWith && late.has(self)) {
      for (const p of this.#evidence.providersBoughtBy(this.#evidence.buyersOfWithEvidenceAfter(self, at))) late.add(p);
    }
    const also = this.#opts.trust?.dealtWith ? [self] : [];
    const t = deriveReputation(this.#evidence.evidenceFor(late, also), opts);
    const figures = new Map(this.#figures!);
    for (const p of late) {
      if (t.has(p)) figures.set(p, t.get(p));
      else figures.delete(p);
    }
    const out = new ReputationTable([...figures.values()]);
    // what a decision pays on top of the live view (before, not reported: only get() was)
    this.#onDerive?.(performance.now() - t0, false, late.size, true);
    return out;
  }

  /** Records were added: the providers they concern are derived again at the next read (or everything, when the dealt-with weights may move). */
  added(records: readonly Opened[]): void {
    if (!this.#figures) return;
    if (this.#opts.trust?.dealtWith && records.some((r) => this.#ofOwnProviding(r))) {
      this.reset();
      return;
    }
    for (const p of this.#evidence.providersOf(records)) this.#dirty.add(p);
  }

  /** Everything is derived again at the next read (evidence went: an eviction). */
  reset(): void {
    this.#figures = undefined;
    this.#table = undefined;
    this.#dirty.clear();
  }

  /** A record of this node's own job as a provider: its receipt, or an acceptance of one (what the dealt-with weights count). */
  #ofOwnProviding(r: Opened): boolean {
    const self = this.#opts.self;
    if (r.type === T.receipt) return (r.record as { provider: string }).provider === self;
    if (r.type !== T.acceptance) return false;
    // only the receipt's own buyer's verdict counts (derive.ts): anyone else's changes no weight
    const receipt = this.#evidence.receipts.get((r.record as Acceptance).receipt);
    return receipt !== undefined && receipt.record.provider === self && r.signer === receipt.record.buyer;
  }
}
