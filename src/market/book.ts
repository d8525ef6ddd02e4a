/**
 * The offer book (spec: "One offer per provider"): per job, one slot per
 * provider holding its best live offer — cheaper wins, then faster (lower
 * quoted duration), then the lower offer address.
 *
 * To stay independent of arrival order even as offers expire, each slot also
 * keeps, behind the best offer, the standbys that could become best later: an
 * offer is dropped only when a better offer of the same currency lives at
 * least as long (it is dominated and can never be the best live offer again).
 * So the visible slot at time t is always the best of all offers received that
 * are live at t, whatever order they came in; a worse later offer never
 * withdraws a better one; an expired offer gives its slot to the provider's
 * next live one. A slot holds at most MAX_STANDBY live offers: a further offer
 * that dominates none of them is refused (status `refused`), never traded for
 * one the book already accepted, so selection over the book always equals
 * selection over the offers it accepted (docs/market.md).
 *
 * The book holds offers whatever their advert; eligibility (and so selection)
 * refuses an offer whose advert is not known, so it waits without winning.
 * The slot an offer is filed under (`slotOf`) can depend on whether its cited
 * advert is held (a pool member's offer stands for the pool only then): when
 * that changes, `refile` moves the offers citing it to the slot they stand for
 * now, so the book shows one offer per provider whatever the arrival order.
 *
 * Persistence: with a store, every change is one synced LevelDB batch
 * (`job!provider!offer` → envelope bytes) written before `add` resolves, and
 * `OfferBook.open` rebuilds the same book, dropping what expired meanwhile
 * (and taking back every offer it had accepted, past MAX_STANDBY where a
 * `refile` left a slot so).
 */
import { C0Error } from '../errors.js';
import { T, type Job, type Offer } from '../records/kinds.js';
import { open as openEnvelope, type Opened } from '../records/envelope.js';
import { sub, type Db, type Sub } from '../store/db.js';
import { cmpAmount } from './amount.js';

/** Synced batch (classic-level honours `sync`; a sublevel passes its options to the root). */
const SYNC = { sync: true } as object;

export const MAX_STANDBY = 8;
const SEP = '!';

/** Book order of two offers (same currency assumed): price, duration, address. */
export function compareOffers(a: Opened<Offer>, b: Opened<Offer>): number {
  const c = a.record.price.currency === b.record.price.currency ? 0 : a.record.price.currency < b.record.price.currency ? -1 : 1;
  if (c) return c;
  return cmpAmount(a.record.price.amount, b.record.price.amount) || a.record.durationMs - b.record.durationMs || (a.address < b.address ? -1 : a.address > b.address ? 1 : 0);
}

/** `a` dominates `b`: same currency, ranks better, and lives at least as long. */
function dominates(a: Opened<Offer>, b: Opened<Offer>): boolean {
  return a.record.price.currency === b.record.price.currency && compareOffers(a, b) < 0 && a.record.expiresAt >= b.record.expiresAt;
}

/**
 * The offer a provider is judged by for a job, of two: the job's currency
 * first, live first, then book order. (An offer in another currency or an
 * expired one still stands for its provider when it has nothing better, so
 * the provider is reported ineligible with the reason instead of vanishing.)
 */
export function preferOffer(a: Opened<Offer>, b: Opened<Offer>, currency: string, now: number): boolean {
  const ac = a.record.price.currency === currency;
  const bc = b.record.price.currency === currency;
  if (ac !== bc) return ac;
  const al = a.record.expiresAt > now;
  const bl = b.record.expiresAt > now;
  if (al !== bl) return al;
  return compareOffers(a, b) < 0;
}

/**
 * How long past its start-by time the book keeps an offer at least. What needs it later keeps it elsewhere: a buyer
 * stores a selection's considered offers with it, and a receipt takes its offer from the provider or that store.
 */
export const OFFER_KEEP_MS = 3_600_000;

/**
 * The longest the book keeps an offer past its expiry (`expiresAt`), whatever its start-by time and quoted
 * duration say: neither is bounded by the record's schema, so without this an offer naming a start-by time in the
 * year 9999, or a duration of 2^52 ms, stayed in memory and on disk for ever (docs/market.md §3 "Pruning").
 * Seven days: our provider signs startBy = expiresAt, so the bound only cuts in for a quoted duration over 3.5
 * days, and the work such an offer quotes has its offer kept elsewhere anyway (the buyer's record store beside
 * the selection; the provider's receipt).
 */
export const OFFER_KEEP_CAP_MS = 7 * 24 * 3_600_000;

/** When the book may drop an offer: `keepMs` or twice its quoted duration past its start-by time, at most OFFER_KEEP_CAP_MS past its expiry. */
export function offerKeptUntil(o: Offer, keepMs: number = OFFER_KEEP_MS): number {
  return Math.min(o.startBy + Math.max(keepMs, 2 * o.durationMs), o.expiresAt + OFFER_KEEP_CAP_MS);
}

/** `refused`: the provider already holds MAX_STANDBY live offers for the job that this one does not dominate. */
export type AddStatus = 'best' | 'standby' | 'dominated' | 'duplicate' | 'expired' | 'refused';
export interface AddResult {
  /** whether the provider's visible slot (its best live offer) changed */
  changed: boolean;
  status: AddStatus;
}

/** Pick the best live offer of a slot, optionally only in `currency`. */
function bestOf(entries: Opened<Offer>[] | undefined, now: number, currency?: string): Opened<Offer> | undefined {
  if (!entries) return undefined;
  let best: Opened<Offer> | undefined;
  for (const e of entries) {
    if (e.record.expiresAt <= now) continue;
    if (currency !== undefined && e.record.price.currency !== currency) continue;
    if (!best || compareOffers(e, best) < 0) best = e;
  }
  return best;
}

export interface BookSlot {
  provider: string;
  offer: Opened<Offer>;
}

/**
 * The provider an offer's slot is keyed by. Default: its signer. A node passes
 * its advert index's `providerFor`, so a pool's members' offers share the
 * pool's slot (docs/pools.md "One entry in the market").
 */
export type SlotOf = (offer: Opened<Offer>) => string;
const bySigner: SlotOf = (o) => o.signer;
/**
 * Whether the slot `SlotOf` gives an offer can no longer change (the node's advert index: its cited advert is held and
 * does not stand for a pool). The book keeps an index for `refile` of only the offers that are not settled, so the
 * common case (a plain provider's offer with its advert) costs nothing more. Default: always for slots by signer,
 * never (every offer indexed) for any other `SlotOf`.
 */
export type Settled = (offer: Opened<Offer>) => boolean;
const always: Settled = () => true;
const never: Settled = () => false;

export class OfferBook {
  /** job → provider → entries (best first) */
  readonly #jobs = new Map<string, Map<string, Opened<Offer>[]>>();
  /** every offer held (best and standby), by address */
  readonly #addrs = new Map<string, Opened<Offer>>();
  /** offers held whose slot may still change (not `settled`): by the advert they cite, offer address → slot filed under */
  readonly #citing = new Map<string, Map<string, string>>();
  /** Offers prune dropped from memory whose delete did not reach the disk yet (tried again at the next prune). */
  #unsaved: Opened<Offer>[] = [];
  readonly #store: Sub | undefined;
  readonly #slotOf: SlotOf;
  readonly #settled: Settled;

  constructor(store?: Sub, slotOf: SlotOf = bySigner, settled: Settled = slotOf === bySigner ? always : never) {
    this.#store = store;
    this.#slotOf = slotOf;
    this.#settled = settled;
  }

  /** Open a persisted book from `db` (sublevel `market-offers`), dropping what has expired by `now`. */
  static async open(db: Db, now: number, name = 'market-offers', slotOf?: SlotOf, settled?: Settled): Promise<OfferBook> {
    const store = sub(db, name);
    const book = new OfferBook(store, slotOf, settled);
    const stale: string[] = [];
    for await (const [key, bytes] of store.iterator()) {
      let o: Opened<Offer>;
      try {
        o = openEnvelope(bytes, T.offer, { trusted: true });
      } catch {
        stale.push(key);
        continue;
      }
      // what the book accepted comes back whole: a slot a refile took past MAX_STANDBY reopens past it (the bound
      // refuses new offers, never one already accepted), or selection after a restart would differ from before
      const r = book.#insert(o, now, false);
      for (const k of r.removed) stale.push(keyOf(k));
      if (r.status === 'expired' || r.status === 'dominated' || r.status === 'duplicate') stale.push(key);
    }
    if (stale.length) await store.batch(stale.map((key) => ({ type: 'del' as const, key })), SYNC);
    return book;
  }

  /** Number of offers held (best and standby). */
  get size(): number {
    return this.#addrs.size;
  }

  /** Add an offer; persisted (one synced batch) before the promise resolves. */
  async add(offer: Opened<Offer>, now: number): Promise<AddResult> {
    const r = this.#insert(offer, now);
    if (this.#store && (r.status === 'best' || r.status === 'standby' || r.removed.length)) {
      const ops: Array<{ type: 'put'; key: string; value: Uint8Array } | { type: 'del'; key: string }> = r.removed.map((o) => ({ type: 'del' as const, key: keyOf(o) }));
      if (r.status === 'best' || r.status === 'standby') ops.push({ type: 'put', key: keyOf(offer), value: offer.bytes });
      try {
        await this.#store.batch(ops, SYNC);
      } catch (e) {
        // undo in memory so the book matches the disk
        this.#undo(offer, r.removed, r.provider);
        throw new C0Error('STORE_WRITE_FAILED', `could not persist offer ${offer.address}: ${(e as Error).message}`, { cause: e });
      }
    }
    return { changed: r.changed, status: r.status };
  }

  /** Add without persisting (in-memory books, benchmarks). */
  addSync(offer: Opened<Offer>, now: number): AddResult {
    if (this.#store) throw new C0Error('BOOK_PERSISTENT', 'this book has a store: use add()');
    const r = this.#insert(offer, now);
    return { changed: r.changed, status: r.status };
  }

  /** File one offer; `bounded` false (reopening) takes it past MAX_STANDBY, as a refile may have left its slot. */
  #insert(offer: Opened<Offer>, now: number, bounded = true): AddResult & { removed: Opened<Offer>[]; provider: string } {
    if (!offer || offer.type !== T.offer || typeof offer.address !== 'string' || !offer.record) {
      throw new C0Error('BOOK_NOT_AN_OFFER', `the offer book takes ${T.offer} records, got ${String(offer?.type)}`, { field: 'offer' });
    }
    const provider = this.#slotOf(offer);
    if (this.#addrs.has(offer.address)) return { changed: false, status: 'duplicate', removed: [], provider };
    const job = offer.record.job;
    let slots = this.#jobs.get(job);
    const entries = slots?.get(provider) ?? [];
    // expired entries leave first (they can never be best again)
    const removed: Opened<Offer>[] = [];
    const live: Opened<Offer>[] = [];
    for (const e of entries) (e.record.expiresAt <= now ? removed : live).push(e);
    const before = bestOf(live, now);
    if (offer.record.expiresAt <= now) {
      this.#commit(job, provider, live, removed);
      return { changed: false, status: 'expired', removed, provider };
    }
    if (live.some((e) => dominates(e, offer))) {
      this.#commit(job, provider, live, removed);
      return { changed: false, status: 'dominated', removed, provider };
    }
    const kept: Opened<Offer>[] = [];
    const evicted: Opened<Offer>[] = [];
    for (const e of live) (dominates(offer, e) ? evicted : kept).push(e);
    if (bounded && kept.length >= MAX_STANDBY) {
      // The bound is a refusal, never a silent trim: an offer the book accepted stays until it
      // expires or is dominated, so selection over the book equals selection over the offers it
      // accepted (docs/market.md, "The offer book's bound").
      this.#commit(job, provider, live, removed);
      return { changed: false, status: 'refused', removed, provider };
    }
    removed.push(...evicted);
    kept.push(offer);
    kept.sort(compareOffers);
    if (!slots) {
      slots = new Map();
      this.#jobs.set(job, slots);
    }
    this.#commit(job, provider, kept, removed);
    this.#hold(offer, provider);
    const after = bestOf(kept, now);
    return { changed: after !== before, status: after === offer ? 'best' : 'standby', removed, provider };
  }

  /** Note an offer as held, filed under `provider` (indexed for `refile` while its slot may still change). */
  #hold(o: Opened<Offer>, provider: string): void {
    this.#addrs.set(o.address, o);
    if (this.#settled(o)) return;
    let c = this.#citing.get(o.record.advert);
    if (!c) this.#citing.set(o.record.advert, (c = new Map()));
    c.set(o.address, provider);
  }

  /** Note an offer as no longer held. */
  #release(o: Opened<Offer>): void {
    if (!this.#addrs.delete(o.address)) return;
    const c = this.#citing.get(o.record.advert);
    if (c?.delete(o.address) && c.size === 0) this.#citing.delete(o.record.advert);
  }

  #commit(job: string, provider: string, entries: Opened<Offer>[], removed: Opened<Offer>[]): void {
    for (const r of removed) this.#release(r);
    let slots = this.#jobs.get(job);
    if (entries.length === 0) {
      if (slots) {
        slots.delete(provider);
        if (slots.size === 0) this.#jobs.delete(job);
      }
      return;
    }
    if (!slots) {
      slots = new Map();
      this.#jobs.set(job, slots);
    }
    slots.set(provider, entries);
  }

  /**
   * Take back an insert whose write failed: the offer leaves the slot it is in now (a `refile` while the write was
   * pending may have moved it from `provider`), and what it displaced goes back to the slot each stands for now.
   */
  #undo(offer: Opened<Offer>, removed: Opened<Offer>[], provider: string): void {
    const job = offer.record.job;
    const slot = this.#citing.get(offer.record.advert)?.get(offer.address) ?? provider;
    this.#release(offer);
    this.#commit(job, slot, (this.#jobs.get(job)?.get(slot) ?? []).filter((e) => e !== offer), []);
    for (const r of removed) {
      const to = this.#slotOf(r);
      this.#hold(r, to);
      if (r.record.job === job) this.#commit(job, to, [...(this.#jobs.get(job)?.get(to) ?? []), r].sort(compareOffers), []);
    }
  }

  /**
   * Move the offers citing any of `adverts` to the slot `slotOf` gives them
   * now, after the node's view of those adverts changed (one became held, or
   * was let go): a pool member's offer filed under its own DID while the pooled
   * advert it cites was not held joins the pool's slot once it is, and goes
   * back to its signer's when the advert is let go. In memory only: the store
   * keys offers by signer, not slot. Nothing is dropped or refused: a moved
   * offer that another in its new slot dominates stays held but is never shown
   * (an offer's visible slot is the best live offer, whatever else it holds),
   * and the slot may hold more than MAX_STANDBY until its offers expire (the
   * bound refuses further offers meanwhile). Returns how many offers moved.
   */
  refile(adverts: Iterable<string>): number {
    let moved = 0;
    for (const advert of adverts) {
      const citing = this.#citing.get(advert);
      if (!citing) continue;
      for (const [address, from] of [...citing]) {
        const o = this.#addrs.get(address)!;
        const to = this.#slotOf(o);
        if (to !== from) {
          const job = o.record.job;
          const slots = this.#jobs.get(job)!;
          const left = slots.get(from)!.filter((e) => e !== o);
          this.#commit(job, from, left, []);
          const into = [...(this.#jobs.get(job)?.get(to) ?? []), o].sort(compareOffers);
          this.#commit(job, to, into, []);
          moved++;
        }
        // its advert now held and standing for no pool: the slot is final, the index lets it go
        if (this.#settled(o)) citing.delete(address);
        else citing.set(address, to);
      }
      if (citing.size === 0) this.#citing.delete(advert);
    }
    return moved;
  }

  /**
   * Each provider's best live offer for `job`, in DID order. With `currency`,
   * only offers in that currency (pass the job's maxPrice currency: an offer in
   * another currency is ineligible anyway and must not hide one that is not).
   */
  best(job: string, now: number, currency?: string): Opened<Offer>[] {
    return [...this.#bestBySlot(job, now, currency)].map(([, o]) => o);
  }

  /** Each slot's best live offer for `job`, with the provider it is filed under, in DID order. */
  *#bestBySlot(job: string, now: number, currency?: string): Generator<[string, Opened<Offer>]> {
    const slots = this.#jobs.get(job);
    if (!slots) return;
    for (const provider of [...slots.keys()].sort()) {
      const b = bestOf(slots.get(provider), now, currency);
      if (b) yield [provider, b];
    }
  }

  /** How many providers hold a live offer for `job` (what `best(job, now).length` is, without building or sorting it). */
  liveCount(job: string, now: number): number {
    const slots = this.#jobs.get(job);
    let n = 0;
    if (slots) for (const entries of slots.values()) if (entries.some((e) => e.record.expiresAt > now)) n++;
    return n;
  }

  /**
   * One offer per provider for `job`, the one `preferOffer` picks from its
   * slot, in no particular order: what selection reduces its input to, already
   * reduced (selection orders its output itself, so it needs no DID sort here).
   */
  candidates(job: string, currency: string, now: number): Opened<Offer>[] {
    const slots = this.#jobs.get(job);
    const out: Opened<Offer>[] = [];
    if (!slots) return out;
    for (const entries of slots.values()) {
      let pick = entries[0]!;
      for (let i = 1; i < entries.length; i++) if (preferOffer(entries[i]!, pick, currency, now)) pick = entries[i]!;
      out.push(pick);
    }
    return out;
  }

  /** Each provider's best live offer in the job's own currency, DID order (what selection should be given). */
  forJob(job: Opened<Job>, now: number): Opened<Offer>[] {
    return this.best(job.address, now, job.record.maxPrice.currency);
  }

  /** The provider's best live offer for `job`. */
  slot(job: string, provider: string, now: number, currency?: string): Opened<Offer> | undefined {
    return bestOf(this.#jobs.get(job)?.get(provider), now, currency);
  }

  /** Every offer held for `job` (best and standby, live or expired), in no particular order. */
  heldFor(job: string): Opened<Offer>[] {
    return [...(this.#jobs.get(job)?.values() ?? [])].flat();
  }

  /** Jobs with offers held, sorted. */
  jobs(): string[] {
    return [...this.#jobs.keys()].sort();
  }

  /** Every offer held (best and standby), sorted by job, provider, book order. */
  all(): Opened<Offer>[] {
    const out: Opened<Offer>[] = [];
    for (const job of this.jobs()) {
      const slots = this.#jobs.get(job)!;
      for (const p of [...slots.keys()].sort()) out.push(...slots.get(p)!);
    }
    return out;
  }

  /**
   * Drop offers no decision or outcome can still want: past the time their work had to start by (`startBy`) by more
   * than `keepMs` or twice their quoted duration, whichever is longer, and at most OFFER_KEEP_CAP_MS past their expiry
   * (`offerKeptUntil`). An expired offer is kept that long because the winner's receipt arrives when the work ends,
   * and it takes the offer it cites into the evidence (quote accuracy).
   * Returns how many went. Until the sixteenth round nothing called this: every offer a node held stayed in memory
   * and on disk until it restarted (docs/scale.md §6).
   */
  async prune(now: number, keepMs: number = OFFER_KEEP_MS): Promise<number> {
    const stale = (e: Opened<Offer>) => now > offerKeptUntil(e.record, keepMs);
    const removed: Opened<Offer>[] = [];
    for (const [job, slots] of [...this.#jobs]) {
      for (const [p, entries] of [...slots]) {
        const gone = entries.filter(stale);
        if (gone.length) {
          removed.push(...gone);
          this.#commit(job, p, entries.filter((e) => !stale(e)), gone);
        }
      }
    }
    // what a failed write left on disk goes with the next prune's batch
    const batch = [...this.#unsaved, ...removed];
    if (this.#store && batch.length) {
      try {
        await this.#store.batch(batch.map((o) => ({ type: 'del' as const, key: keyOf(o) })), SYNC);
        this.#unsaved = [];
      } catch (e) {
        this.#unsaved = batch;
        throw e;
      }
    }
    return removed.length;
  }

  /** An offer the book holds, by address. */
  get(address: string): Opened<Offer> | undefined {
    return this.#addrs.get(address);
  }

  /** Forget a job (after it was decided). */
  async dropJob(job: string): Promise<void> {
    const slots = this.#jobs.get(job);
    if (!slots) return;
    const removed = [...slots.values()].flat();
    for (const o of removed) this.#release(o);
    this.#jobs.delete(job);
    if (this.#store && removed.length) await this.#store.batch(removed.map((o) => ({ type: 'del' as const, key: keyOf(o) })), SYNC);
  }

  /** A plain, deterministic picture of the visible book at `now` (for comparisons and tests): each slot's best live offer, by job then provider (the slot it was filed under). */
  snapshot(now: number): Array<{ job: string; provider: string; offer: string }> {
    const out: Array<{ job: string; provider: string; offer: string }> = [];
    for (const job of this.jobs()) for (const [provider, o] of this.#bestBySlot(job, now)) out.push({ job, provider, offer: o.address });
    return out;
  }
}

function keyOf(o: Opened<Offer>): string {
  return `${o.record.job}${SEP}${o.signer}${SEP}${o.address}`;
}

/**
 * One offer per provider for `job`, in no particular order (selection and the
 * explanation order their output themselves): a book's candidates as they
 * stand, or a list reduced by `preferOffer` (offers of other jobs ignored),
 * one per `slotOf` key (selection and the explanation pass their advert
 * index's `providerFor`, so a pool's members' offers count once).
 */
export function oneOfferPerProvider(offers: Iterable<Opened<Offer>> | OfferBook, job: string, currency: string, now: number, slotOf: SlotOf = bySigner): Opened<Offer>[] {
  if (offers instanceof OfferBook) return offers.candidates(job, currency, now);
  const best = new Map<string, Opened<Offer>>();
  for (const o of offers) {
    if (!o || o.type !== T.offer) throw new C0Error('MARKET_NOT_AN_OFFER', `expected a ${T.offer} record, got ${String(o?.type)}`, { field: 'offers' });
    if (o.record.job !== job) continue;
    const k = slotOf(o);
    const b = best.get(k);
    if (b === undefined || preferOffer(o, b, currency, now)) best.set(k, o);
  }
  return [...best.values()];
}
