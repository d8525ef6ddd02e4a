/**
 * The evidence a node holds for reputation: receipts, acceptances, the
 * offers receipts cite and buyers' non-delivery records, persisted in LevelDB (sublevel `reputation-evidence`,
 * key `<kind>!<address>` → envelope bytes, written in one synced batch before
 * `add` resolves; the adds that come while one batch is written go together in
 * the next, up to EVIDENCE_GROUP records: one synced write a record held a node
 * to some 60 records a second, and a flood of outcomes queued in memory). The
 * score itself is never stored: `derive()` recomputes it.
 *
 * Bounded by count (`max`, config `reputation.maxEvidence`) and by envelope
 * bytes (`maxBytes`, config `reputation.maxEvidenceBytes`; docs/market.md "How
 * much evidence a node keeps"): every node of a market hears the outcome of every
 * job in it, which grows without end (docs/scale.md §4 "Outcomes that stay in
 * their market"). Past the bound, second-hand outcomes go, on disk and in
 * memory, down to nine tenths of it, a job's records together, those that
 * count for nothing here first (a trusted buyer's outcome counts only with that
 * buyer's own verdict on it), the oldest first (#evict); this node's own
 * outcomes (those with a record it signed: #own) go last, and those of its jobs
 * as a buyer after those as a provider. One non-delivery is kept per (signer,
 * provider, job): a later one is dropped on arrival. One verdict (acceptance) is
 * kept per (signer, receipt): the one derivation counts (replacesVerdict); one it
 * replaces is deleted in the same batch, one that replaces nothing is dropped.
 */
import { C0Error } from '../errors.js';
import { T, type Acceptance, type AnyNonDelivery, type Offer, type Receipt } from '../records/kinds.js';
import { open as openEnvelope, openAny, type Opened } from '../records/envelope.js';
import { sub, type Db, type Sub } from '../store/db.js';
import { deriveReputation, evidenceTime, replacesVerdict, type DeriveOptions, type Evidence, type ReputationTable } from './derive.js';
import { isNonDeliveryType, linkNonDelivery, nonDeliveryProvider } from './nondelivery.js';
import { DEFAULT_MAX_EVIDENCE_BYTES } from './bounds.js';

/** Synced batch (classic-level honours `sync`; a sublevel passes its options to the root). */
const SYNC = { sync: true } as object;

/** Key prefix per content type (a /2 or /3 non-delivery under its own, so a previous version's open skips it: it cannot read it). */
const KINDS: Record<string, string> = { [T.receipt]: 'receipt', [T.acceptance]: 'acceptance', [T.offer]: 'offer', [T.nondelivery]: 'nondelivery', [T.nondelivery2]: 'nondelivery2', [T.nondelivery3]: 'nondelivery3' };

export { DEFAULT_MAX_EVIDENCE, DEFAULT_MAX_EVIDENCE_BYTES } from './bounds.js';

/** The most records one synced batch of adds takes (an add larger than this is still written whole, alone). */
export const EVIDENCE_GROUP = 256;

/** An add waiting for its batch (#drain). */
interface Waiting {
  records: Opened[];
  resolve(fresh: number): void;
  reject(e: unknown): void;
}

export interface EvidenceBound {
  /** Records held at most (receipts, acceptances, offers and non-deliveries together). */
  max: number;
  /**
   * Envelope bytes held at most, all records together (config `reputation.maxEvidenceBytes`; default
   * DEFAULT_MAX_EVIDENCE_BYTES): a non-delivery carries its proof, some 60 KiB at most, so a bound by count alone
   * does not bound memory.
   */
  maxBytes?: number;
  /** This node's DID: a job's outcome with a record it signed (its acceptance, non-delivery, receipt or offer) is its own, evicted last. */
  self?: string;
  /** Buyers whose evidence counts second-hand here (config `reputation.trustedBuyers`, overlay members): evicted last. */
  trusted?: Iterable<string>;
  /** Buyers this node ran jobs for as a provider count too (config `reputation.dealtWith`). */
  dealtWith?: boolean;
  /** Arrival times (default Date.now): a record is dated by when it was made, but never later than when it arrived. */
  clock?: () => number;
  /** Told how many records went, after they are gone from disk. */
  onEvict?(count: number): void;
  /** Told when an eviction failed (nothing was lost; it is tried again past the bound). */
  onError?(err: unknown): void;
}

/** When a record says it was made (a receipt's completedAt, an acceptance's or non-delivery's signedAt, an offer's issuedAt). */
function madeAt(r: Opened): number {
  const x = r.record as { completedAt?: number; signedAt?: number; issuedAt?: number };
  return x.completedAt ?? x.signedAt ?? x.issuedAt ?? 0;
}

/** What eviction takes as one: the receipts citing one offer, with their acceptances and the offer, or a record on its own. */
interface Unit {
  at: number;
  /**
   * What goes first: 0 counts for nothing here (an orphan, or an untrusted buyer's outcome); 0.5 a buyer that counts
   * only as dealt-with (`reputation.dealtWith`: it accepted a job this node ran); 1 a trusted buyer (the operator's
   * list, the overlay's members); 2 this node's own job as a provider; 3 its own job as a buyer (what its decisions
   * rest on).
   */
  weight: 0 | 0.5 | 1 | 2 | 3;
  recs: Opened[];
}

/**
 * One record held per key, the key of a record being `keyOf`'s (undefined: a record of another kind): key → the
 * address of the one held, kept with the store's maps (#index). Which of two records with one key is kept is the
 * caller's rule (a non-delivery: the first; a verdict: replacesVerdict).
 */
class OnePerKey {
  readonly #held = new Map<string, string>();
  constructor(readonly keyOf: (r: Opened) => string | undefined) {}

  /** The address held for `key`, if any. */
  at(key: string): string | undefined {
    return this.#held.get(key);
  }

  /** The address of another record held under r's key, if any (not r itself). */
  other(r: Opened): string | undefined {
    const k = this.keyOf(r);
    const held = k === undefined ? undefined : this.#held.get(k);
    return held !== r.address ? held : undefined;
  }

  /** r is kept (`add`) or goes: its key follows (a key that holds another address already is left to it). */
  index(r: Opened, add: boolean): void {
    const k = this.keyOf(r);
    if (k === undefined) return;
    if (add) this.#held.set(k, r.address);
    else if (this.#held.get(k) === r.address) this.#held.delete(k);
  }
}

/** The key of the one verdict a signer keeps on a receipt (OnePerKey). */
const verdictKey = (signer: string, receipt: string): string => `${signer}|${receipt}`;

export class EvidenceStore {
  readonly receipts = new Map<string, Opened<Receipt>>();
  readonly acceptances = new Map<string, Opened<Acceptance>>();
  readonly offers = new Map<string, Opened<Offer>>();
  readonly nondeliveries = new Map<string, Opened<AnyNonDelivery>>();
  readonly #store: Sub | undefined;
  readonly #bound: EvidenceBound | undefined;
  readonly #maxBytes: number;
  /** Envelope bytes of the records held. */
  #bytes = 0;
  /** when each record arrived here (this run; records read at open arrive then) */
  readonly #arrived = new WeakMap<Opened, number>();
  /** Provider DID → the receipts and non-deliveries naming it (the evidence about one provider: evidenceFor). */
  readonly #aboutProvider = new Map<string, Set<Opened<Receipt> | Opened<AnyNonDelivery>>>();
  /** Receipt address → the acceptances of it held (its receipt may not be held yet). */
  readonly #acceptancesOf = new Map<string, Set<Opened<Acceptance>>>();
  /** Offer address → the receipts citing it (the offer may not be held yet: it gives their quote accuracy when it comes). */
  readonly #citing = new Map<string, Set<Opened<Receipt>>>();
  /** Job address → the receipts for it (a job's history: the API's and the console's job lists). */
  readonly #receiptsOfJob = new Map<string, Set<Opened<Receipt>>>();
  /**
   * The one non-delivery held per (signer, provider it counts against: a /2's pool, job), the first. Derivation counts
   * one outcome per (buyer, provider, job) anyway; a buyer with one real offer could otherwise sign any number of
   * distinct ones on it (varying `signedAt`) and have every one stored.
   */
  readonly #nds = new OnePerKey((r) => (isNonDeliveryType(r.type) ? `${r.signer}|${nonDeliveryProvider(r as Opened<AnyNonDelivery>)}|${(r.record as AnyNonDelivery).job}` : undefined));
  /**
   * The one acceptance (verdict) held per (signer, receipt), the one that counts: derivation counts only a signer's
   * latest verdict on a receipt (replacesVerdict), and a key re-signing its verdict (varying `signedAt`) had every one
   * stored and derived over again at each decision (30,000 records in two minutes from 60 keys).
   */
  readonly #verdicts = new OnePerKey((r) => (r.type === T.acceptance ? verdictKey(r.signer, (r.record as Acceptance).receipt) : undefined));
  /** Buyer DID → the receipts naming it as buyer and the non-deliveries it signed (its outcomes: providersBoughtBy). */
  readonly #ofBuyer = new Map<string, Set<Opened<Receipt> | Opened<AnyNonDelivery>>>();
  /**
   * The records dated (evidenceTime) after the store's clock when they arrived, until the clock passes them: what
   * `derive({asOf: now})` leaves out, so the providers with evidence after `at` are found among these alone
   * (lateRecords), not by a pass over everything on every decision. Gossip and sync take nothing dated beyond the
   * clock-skew window (record-hooks.ts EVIDENCE_FROM_THE_FUTURE), so these are few and leave within the window.
   */
  readonly #late = new Set<Opened>();
  /** Every record held and not in #late is dated no later than this (the index answers for any `at` at or after it). */
  #settled = -Infinity;
  /**
   * Adds and evictions run one batch at a time (#drain). An eviction decides from the maps, then awaits its delete: an
   * add in between could store a receipt citing an offer that is on its way out, and lose its quote pair.
   */
  #waiting: Waiting[] = [];
  /** records in #waiting and in the batch being written */
  #pending = 0;
  #draining = false;
  #idle: Array<() => void> = [];

  constructor(store?: Sub, bound?: EvidenceBound) {
    this.#store = store;
    if (bound && !(Number.isSafeInteger(bound.max) && bound.max > 0)) throw new C0Error('REPUTATION_BAD_BOUND', `the evidence bound must be a positive whole number, got ${bound.max}`, { field: 'maxEvidence' });
    if (bound?.maxBytes !== undefined && !(Number.isSafeInteger(bound.maxBytes) && bound.maxBytes > 0)) throw new C0Error('REPUTATION_BAD_BOUND', `the evidence byte bound must be a positive whole number, got ${bound.maxBytes}`, { field: 'maxEvidenceBytes' });
    this.#bound = bound;
    this.#maxBytes = bound ? (bound.maxBytes ?? DEFAULT_MAX_EVIDENCE_BYTES) : Infinity;
  }

  static async open(db: Db, name = 'reputation-evidence', bound?: EvidenceBound): Promise<EvidenceStore> {
    const store = sub(db, name);
    const ev = new EvidenceStore(store, bound);
    const extra: string[] = [];
    for await (const [key, bytes] of store.iterator()) {
      const kind = key.slice(0, key.indexOf('!'));
      const type = Object.keys(KINDS).find((t) => KINDS[t] === kind);
      if (!type) continue;
      let r: Opened;
      try {
        r = openEnvelope(bytes, type, { trusted: true });
      } catch {
        continue; // a record this version cannot read is skipped, not fatal
      }
      // a second non-delivery for one (signer, provider, job), or a verdict another of its signer's on the receipt
      // replaces (or that replaces one read before), stored by a version that kept them all: it goes
      const held = ev.#verdictHeld(r);
      if (ev.#ndTaken(r) || (held && !replacesVerdict(r as Opened<Acceptance>, held))) extra.push(key);
      else {
        if (held) {
          extra.push(`${KINDS[held.type]}!${held.address}`);
          ev.#drop(held);
        }
        ev.#put(r);
      }
    }
    if (extra.length) await store.batch(extra.map((key) => ({ type: 'del' as const, key })), SYNC);
    // a store from before the bound, or a bound lowered between runs
    await ev.#evictIfOver();
    return ev;
  }

  get size(): number {
    return this.receipts.size + this.acceptances.size + this.offers.size + this.nondeliveries.size;
  }

  /** Envelope bytes of the records held (what `maxBytes` bounds). */
  get bytes(): number {
    return this.#bytes;
  }

  /** Check one record; throws a C0Error (and changes nothing) when it cannot be evidence. */
  static check(r: Opened): void {
    if (!r || typeof r.type !== 'string' || !(r.type in KINDS)) {
      throw new C0Error('REPUTATION_UNSUPPORTED_TYPE', `reputation evidence is a receipt, an acceptance, an offer or a non-delivery, not ${String(r?.type)}`, { field: 'type' });
    }
    // A pooled receipt names the pool; its chain (signer a member of that pool) was verified when it was opened (docs/pools.md).
    if (r.type === T.receipt && r.signer !== (r.record as Receipt).provider && (r.record as Receipt).pool === undefined) {
      throw new C0Error('REPUTATION_RECEIPT_NOT_PROVIDER', `receipt ${r.address} is signed by ${r.signer}, not by the provider it names (${(r.record as Receipt).provider})`, { field: 'provider' });
    }
    if (isNonDeliveryType(r.type)) linkNonDelivery(r as Opened<AnyNonDelivery>); // NONDELIVERY_* when it does not link
  }

  #map(r: Opened): Map<string, Opened> {
    return (r.type === T.receipt ? this.receipts : r.type === T.acceptance ? this.acceptances : isNonDeliveryType(r.type) ? this.nondeliveries : this.offers) as Map<string, Opened>;
  }

  /** Whether r is a non-delivery and another one for its (signer, provider, job) is held. */
  #ndTaken(r: Opened): boolean {
    return this.#nds.other(r) !== undefined;
  }

  /** When r is an acceptance: the other acceptance held of its (signer, receipt), if any. */
  #verdictHeld(r: Opened): Opened<Acceptance> | undefined {
    const held = this.#verdicts.other(r);
    return held === undefined ? undefined : this.acceptances.get(held);
  }

  /** The one verdict `signer` holds here on `receipt` (its acceptance or dispute), if any. */
  #verdictOn(signer: string, receipt: string): Opened<Acceptance> | undefined {
    const held = this.#verdicts.at(verdictKey(signer, receipt));
    return held === undefined ? undefined : this.acceptances.get(held);
  }

  /** Keep r (a verdict: once the one it replaces is dropped). */
  #put(r: Opened): boolean {
    const m = this.#map(r);
    if (m.has(r.address) || this.#ndTaken(r) || this.#verdictHeld(r)) return false;
    m.set(r.address, r);
    this.#bytes += r.bytes.length;
    this.#index(r, true);
    const now = this.#now();
    if (this.#bound) this.#arrived.set(r, now);
    const t = evidenceTime(r);
    if (t > now) this.#late.add(r);
    else if (t > this.#settled) this.#settled = t;
    return true;
  }

  #drop(r: Opened): void {
    if (this.#map(r).delete(r.address)) {
      this.#bytes -= r.bytes.length;
      this.#index(r, false);
      this.#late.delete(r);
    }
  }

  /** The store's clock (the bound's, else Date.now). */
  #now(): number {
    return (this.#bound?.clock ?? Date.now)();
  }

  /** Keep the per-provider and per-receipt indexes with the maps. */
  #index(r: Opened, add: boolean): void {
    const file = <K, V>(m: Map<K, Set<V>>, k: K, v: V) => {
      let set = m.get(k);
      if (add) {
        if (!set) m.set(k, (set = new Set()));
        set.add(v);
      } else if (set) {
        set.delete(v);
        if (set.size === 0) m.delete(k);
      }
    };
    if (r.type === T.receipt) {
      file(this.#aboutProvider, (r.record as Receipt).provider, r as Opened<Receipt>);
      file(this.#ofBuyer, (r.record as Receipt).buyer, r as Opened<Receipt>);
    } else if (isNonDeliveryType(r.type)) {
      file(this.#aboutProvider, nonDeliveryProvider(r as Opened<AnyNonDelivery>), r as Opened<AnyNonDelivery>);
      file(this.#ofBuyer, r.signer, r as Opened<AnyNonDelivery>);
    }
    this.#nds.index(r, add);
    this.#verdicts.index(r, add);
    if (r.type === T.receipt) {
      file(this.#citing, (r.record as Receipt).offer, r as Opened<Receipt>);
      file(this.#receiptsOfJob, (r.record as Receipt).job, r as Opened<Receipt>);
    } else if (r.type === T.acceptance) file(this.#acceptancesOf, (r.record as Acceptance).receipt, r as Opened<Acceptance>);
  }

  /** The receipts held for a job. */
  receiptsOf(job: string): Array<Opened<Receipt>> {
    return [...(this.#receiptsOfJob.get(job) ?? [])];
  }

  /** The acceptances held of a receipt (its buyer's, and any other signer's: callers pick). */
  acceptancesOf(receipt: string): Array<Opened<Acceptance>> {
    return [...(this.#acceptancesOf.get(receipt) ?? [])];
  }

  /** The non-deliveries counting against a provider (a /2 under its pool's DID: nonDeliveryProvider). */
  nondeliveriesAbout(provider: string): Array<Opened<AnyNonDelivery>> {
    const out: Array<Opened<AnyNonDelivery>> = [];
    for (const r of this.#aboutProvider.get(provider) ?? []) if (isNonDeliveryType(r.type)) out.push(r as Opened<AnyNonDelivery>);
    return out;
  }

  /** The receipts naming a provider (a pool's under the pool's DID). */
  receiptsAbout(provider: string): Array<Opened<Receipt>> {
    const out: Array<Opened<Receipt>> = [];
    for (const r of this.#aboutProvider.get(provider) ?? []) if (r.type === T.receipt) out.push(r as Opened<Receipt>);
    return out;
  }

  /**
   * The providers whose figures these records can change: a receipt's provider, the one a non-delivery counts
   * against (nonDeliveryProvider: the pool, for a /2), an
   * acceptance's receipt's provider when that receipt is held (until it is, the acceptance changes nothing), and an
   * offer's citing receipts' providers (their quote accuracy).
   */
  providersOf(records: Iterable<Opened>): Set<string> {
    const out = new Set<string>();
    for (const r of records) {
      if (r.type === T.receipt) out.add((r.record as Receipt).provider);
      else if (isNonDeliveryType(r.type)) out.add(nonDeliveryProvider(r as Opened<AnyNonDelivery>)); // the pool, for a /2
      else if (r.type === T.acceptance) {
        const receipt = this.receipts.get((r.record as Acceptance).receipt);
        if (receipt) out.add(receipt.record.provider);
      } else if (r.type === T.offer) for (const c of this.#citing.get(r.address) ?? []) out.add(c.record.provider);
    }
    return out;
  }

  /**
   * The evidence about some providers: the receipts and non-deliveries naming them, the acceptances of those
   * receipts and the offers they cite. With `also`, the receipts naming those providers too (the dealt-with weights
   * count this node's own receipts as a provider). deriveReputation over it gives each of `providers` exactly the
   * figures a derivation over everything held gives it: every term of a provider's figures is made of evidence about
   * that provider, but the dealt-with weights.
   */
  evidenceFor(providers: readonly string[] | ReadonlySet<string>, also: readonly string[] = []): Evidence {
    const receipts: Array<Opened<Receipt>> = [];
    const nondeliveries: Array<Opened<AnyNonDelivery>> = [];
    const acceptances: Array<Opened<Acceptance>> = [];
    const offers: Array<Opened<Offer>> = [];
    for (const p of new Set([...providers, ...also])) {
      for (const r of this.#aboutProvider.get(p) ?? []) {
        if (isNonDeliveryType(r.type)) {
          nondeliveries.push(r as Opened<AnyNonDelivery>);
          continue;
        }
        receipts.push(r as Opened<Receipt>);
        for (const a of this.#acceptancesOf.get(r.address) ?? []) acceptances.push(a);
        const o = this.offers.get((r as Opened<Receipt>).record.offer);
        if (o) offers.push(o);
      }
    }
    return { receipts, acceptances, offers, nondeliveries };
  }

  /**
   * The records dated (evidenceTime) after `at`: from the index of late records (#late) when `at` is no earlier than
   * every other record held (#settled; a decision's `at` is now), else a pass over everything. Records the clock has
   * passed leave the index first.
   */
  #lateRecords(at: number): Opened[] {
    const now = this.#now();
    for (const r of this.#late) {
      const t = evidenceTime(r);
      if (t > now) continue;
      this.#late.delete(r);
      if (t > this.#settled) this.#settled = t;
    }
    const out: Opened[] = [];
    const from = at >= this.#settled ? [this.#late] : [this.receipts.values(), this.nondeliveries.values(), this.acceptances.values()];
    for (const xs of from) for (const r of xs as Iterable<Opened>) if (evidenceTime(r) > at) out.push(r);
    return out;
  }

  /** Records held dated after the store's clock when they arrived and not yet passed by it (tests: the index stays small). */
  get lateHeld(): number {
    return this.#late.size;
  }

  /**
   * The providers whose figures evidence dated after `at` (evidenceTime: the rule of `derive({asOf})`) would change:
   * a receipt's provider, an acceptance's receipt's provider (when held), a non-delivery's (the pool, for a /2).
   * Without them, the figures as of `at` are the figures of everything held. Costs the records dated after the
   * store's clock, not all held (#lateRecords).
   */
  providersWithEvidenceAfter(at: number): Set<string> {
    const out = new Set<string>();
    for (const r of this.#lateRecords(at)) {
      if (r.type === T.receipt) out.add((r.record as Receipt).provider);
      else if (isNonDeliveryType(r.type)) out.add(nonDeliveryProvider(r as Opened<AnyNonDelivery>));
      else if (r.type === T.acceptance) {
        const receipt = this.receipts.get((r.record as Acceptance).receipt);
        if (receipt) out.add(receipt.record.provider);
      }
    }
    return out;
  }

  /**
   * The buyers of `provider`'s receipts whose evidence of them is dated after `at`: the receipt, or an acceptance of
   * it. With `dealtWith`, what `provider` = this node ran for them (k_B) may count differently as of `at`.
   */
  buyersOfWithEvidenceAfter(provider: string, at: number): Set<string> {
    const out = new Set<string>();
    for (const r of this.#lateRecords(at)) {
      const receipt = r.type === T.receipt ? (r as Opened<Receipt>) : r.type === T.acceptance ? this.receipts.get((r.record as Acceptance).receipt) : undefined;
      if (receipt && receipt.record.provider === provider) out.add(receipt.record.buyer);
    }
    return out;
  }

  /** The providers these buyers' outcomes are about: the receipts naming them as buyer, the non-deliveries they signed. */
  providersBoughtBy(buyers: Iterable<string>): Set<string> {
    const out = new Set<string>();
    for (const b of buyers) {
      for (const r of this.#ofBuyer.get(b) ?? []) out.add(isNonDeliveryType(r.type) ? nonDeliveryProvider(r as Opened<AnyNonDelivery>) : (r as Opened<Receipt>).record.provider);
    }
    return out;
  }

  #has(r: Opened): boolean {
    return this.#map(r).has(r.address);
  }

  /**
   * Add verified records (as returned by open()). Resolves, once they are on disk, to how many were new. All checked
   * before any is kept. Adds made while a batch is written go together in the next one (#drain), each told its own
   * count; a batch that fails fails every add in it.
   */
  async add(...records: Opened[]): Promise<number> {
    for (const r of records) EvidenceStore.check(r);
    return new Promise<number>((resolve, reject) => {
      this.#waiting.push({ records, resolve, reject });
      this.#pending += records.length;
      // a microtask later: the adds made together (a burst of handlers) start as one batch
      if (!this.#draining) {
        this.#draining = true;
        queueMicrotask(() => void this.#drain());
      }
    });
  }

  /** Records added and not yet on disk (waiting for their batch, or in the one being written). */
  get pending(): number {
    return this.#pending;
  }

  /** Resolves once every add made before it is settled (stored or failed): an orderly stop, before the database closes. */
  settled(): Promise<void> {
    if (!this.#draining) return Promise.resolve();
    return new Promise((r) => this.#idle.push(r));
  }

  /** Write the waiting adds, a batch at a time: the next batch takes every add waiting, up to EVIDENCE_GROUP records. */
  async #drain(): Promise<void> {
    try {
      while (this.#waiting.length) {
        let n = 0;
        let take = 0;
        while (take < this.#waiting.length && (take === 0 || n + this.#waiting[take]!.records.length <= EVIDENCE_GROUP)) n += this.#waiting[take++]!.records.length;
        const batch = this.#waiting.splice(0, take);
        try {
          const counts = await this.#addNow(batch.map((w) => w.records));
          batch.forEach((w, i) => w.resolve(counts[i]!));
        } catch (e) {
          for (const w of batch) w.reject(e);
        } finally {
          this.#pending -= n;
        }
      }
    } finally {
      this.#draining = false;
      const w = this.#idle;
      this.#idle = [];
      for (const r of w) r();
    }
  }

  /** Store the adds of one batch (in order, as if one after another), in one synced write; how many of each were new. */
  async #addNow(adds: Opened[][]): Promise<number[]> {
    let fresh: Opened[] = [];
    /** the add each fresh record came in */
    const addOf = new Map<Opened, number>();
    const seen = new Set<string>();
    /** (signer, receipt) → the verdict this batch keeps for it (the one replacing all others, held or in this batch) */
    const verdicts = new Map<string, Opened<Acceptance>>();
    for (const [i, records] of adds.entries()) for (const r of records) {
      const nd = this.#nds.keyOf(r);
      // a non-delivery for a (signer, provider, job) that already has one (held, or earlier in this add) is dropped
      if (this.#has(r) || seen.has(r.address) || this.#ndTaken(r) || (nd !== undefined && seen.has(nd))) continue;
      const vk = this.#verdicts.keyOf(r);
      if (vk !== undefined) {
        // a verdict the held one, or one earlier in this add, replaces is dropped
        const a = r as Opened<Acceptance>;
        const held = this.#verdictHeld(a);
        const cur = verdicts.get(vk);
        if ((held && !replacesVerdict(a, held)) || (cur && !replacesVerdict(a, cur))) continue;
        verdicts.set(vk, a);
      }
      seen.add(r.address);
      if (nd !== undefined) seen.add(nd);
      fresh.push(r);
      addOf.set(r, i);
    }
    fresh = fresh.filter((r) => {
      const vk = this.#verdicts.keyOf(r);
      return vk === undefined || verdicts.get(vk) === r;
    });
    const counts = adds.map(() => 0);
    for (const r of fresh) counts[addOf.get(r)!]!++;
    if (fresh.length === 0) return counts;
    // the held verdicts the new ones replace: deleted in the same batch
    const replaced: Opened[] = [];
    for (const a of verdicts.values()) {
      const held = this.#verdictHeld(a);
      if (held) replaced.push(held);
    }
    if (this.#store) {
      try {
        await this.#store.batch(
          [
            ...replaced.map((r) => ({ type: 'del' as const, key: `${KINDS[r.type]}!${r.address}` })),
            ...fresh.map((r) => ({ type: 'put' as const, key: `${KINDS[r.type]}!${r.address}`, value: r.bytes })),
          ],
          SYNC,
        );
      } catch (e) {
        // the cause's message is not repeated: a logged error shows its causes' messages after its own
        throw new C0Error('STORE_WRITE_FAILED', 'could not persist evidence', { cause: e });
      }
    }
    for (const r of replaced) this.#drop(r);
    for (const r of fresh) this.#put(r);
    await this.#evictIfOver();
    return counts;
  }

  /**
   * How much a record is this node's own, proven by its signature, never by a field another signer wrote: 3 of its
   * jobs as a buyer (it signed the acceptance or non-delivery; a receipt of its job is its own through the acceptance
   * it countersigned, which goes with it), 2 of its jobs as a provider (it signed the receipt or offer), 0 neither. A
   * receipt's `buyer` is only its signer's claim and a non-delivery's `provider` only its buyer's: any key can name
   * this node in one (before, such records ranked as its own and a flood of them pushed out its real history).
   */
  static #own(r: Opened, self: string): 0 | 2 | 3 {
    if (r.signer !== self) return 0;
    return r.type === T.acceptance || isNonDeliveryType(r.type) ? 3 : 2;
  }

  /**
   * Past either bound, evict down to nine tenths of both (inside a batch: see #waiting). A failure is reported (onError),
   * loses nothing and never fails the add that triggered it: the bound is looked at again on the next add.
   */
  async #evictIfOver(): Promise<void> {
    const b = this.#bound;
    if (!b || (this.size <= b.max && this.#bytes <= this.#maxBytes)) return;
    await this.#evict(b).catch((e: unknown) => {
      try {
        b.onError?.(e);
      } catch {
        // a listener's own failure must not fail the add either
      }
    });
  }

  /**
   * A job's outcome goes as one (its receipts, their buyer's verdicts on them and the offer they cite), so a
   * quote-accuracy pair is never split. First what counts for nothing here (records whose receipt is not held,
   * acceptances by others than their receipt's buyer, outcomes of buyers whose evidence does not count, and receipts
   * naming a trusted buyer without that buyer's verdict on them), then the rest, each the oldest first: dated by when the receipt says it was made, but
   * never later than it arrived, so a record dated in the future is not kept for it. This node's own outcomes go
   * last: first those of its jobs as a provider (evidence about itself, which none of its choices rests on), then
   * those of its jobs as a buyer. Until the sixteenth round they never went, and a busy node's own outcomes (three
   * records a job, about 1.2 kB each in memory) grew without bound.
   */
  async #evict(b: EvidenceBound): Promise<void> {
    const self = b.self;
    const now = (b.clock ?? Date.now)();
    const at = (r: Opened) => Math.min(madeAt(r), this.#arrived.get(r) ?? now);
    const own = (r: Opened): 0 | 2 | 3 => (self === undefined ? 0 : EvidenceStore.#own(r, self));
    const trusted = new Set(b.trusted ?? []);
    // A dealt-with buyer counts as derivation counts it (derive.ts k_B): only once it accepted a job this node ran, and
    // then below a trusted buyer. Before, serving a buyer once (a job it never accepted, too) ranked every outcome
    // naming it, with its own verdict, as a trusted buyer's; being newer, a flood of them from fresh provider keys
    // pushed out a trusted buyer's real history though it weighed nothing in the view (review s41, second round).
    const dealt = new Set<string>();
    if (b.dealtWith && self !== undefined) {
      for (const r of this.receipts.values()) {
        if (r.signer !== self || r.record.status !== 'completed' || trusted.has(r.record.buyer)) continue;
        if (this.#verdictOn(r.record.buyer, r.address)?.record.verdict === 'accepted') dealt.add(r.record.buyer);
      }
    }
    // what names this node as buyer is its own only through a record it signed (#own), not as a trusted buyer's
    if (self !== undefined) {
      trusted.delete(self);
      dealt.delete(self);
    }
    const counts = (buyer: string): Unit['weight'] => (trusted.has(buyer) ? 1 : dealt.has(buyer) ? 0.5 : 0);
    const units: Unit[] = [];
    const placed = new Set<string>();
    for (const r of this.receipts.values()) {
      if (placed.has(r.address)) continue;
      // The receipts its offer prices (a job's second receipt cites the same offer; derive pairs an offer only with
      // receipts its own signer signed), with their acceptances and the offer: one unit, so an offer never goes
      // while a receipt it prices stays. It goes when its newest receipt would, counts if any of its buyers count,
      // and goes as late as its most first-hand record. A receipt citing someone else's offer is a unit without it
      // (it cannot keep a first-hand offer's unit, nor take the offer with it).
      const o = this.offers.get(r.record.offer);
      const quoter = o?.signer ?? r.signer;
      const cohort = r.signer === quoter ? [...(this.#citing.get(r.record.offer) ?? [r])].filter((c) => c.signer === quoter) : [r];
      const recs: Opened[] = [];
      let when = -Infinity;
      let weight: Unit['weight'] = 0;
      for (const c of cohort) {
        // Its own buyer's verdict goes with a receipt; anyone else's counts for nothing and is a unit of its own (below).
        // A trusted buyer's outcome counts here only with that buyer's verdict on it: a receipt's `buyer` is only its
        // signer's claim. Before, fresh provider keys naming a trusted buyer (and acceptances by fresh keys riding in a
        // trusted buyer's outcome) ranked as that buyer's, newest first, and pushed out its real history.
        const verdict = this.#verdictOn(c.record.buyer, c.address);
        recs.push(c, ...(verdict ? [verdict] : []));
        when = Math.max(when, at(c));
        if (verdict) weight = Math.max(weight, counts(c.record.buyer)) as Unit['weight'];
      }
      if (o && r.signer === quoter) recs.push(o);
      for (const x of recs) {
        placed.add(x.address);
        weight = Math.max(weight, own(x)) as Unit['weight'];
      }
      units.push({ at: when, weight, recs });
    }
    for (const m of [this.acceptances, this.offers, this.nondeliveries] as Array<Map<string, Opened>>) {
      for (const x of m.values()) {
        if (placed.has(x.address)) continue;
        // a non-delivery counts as its buyer does; an acceptance or an offer without its receipt, or an acceptance by
        // someone other than its receipt's buyer, counts for nothing
        units.push({ at: at(x), weight: Math.max(own(x), isNonDeliveryType(x.type) ? counts(x.signer) : 0) as Unit['weight'], recs: [x] });
      }
    }
    // down to nine tenths of both bounds: the count and the bytes
    const excess = this.size - Math.floor(b.max * 0.9);
    const excessBytes = this.#bytes - Math.floor(this.#maxBytes * 0.9);
    const gone: Opened[] = [];
    let goneBytes = 0;
    if (excess > 0 || excessBytes > 0) {
      units.sort((x, y) => x.weight - y.weight || x.at - y.at || (x.recs[0]!.address < y.recs[0]!.address ? -1 : 1));
      for (const u of units) {
        if (gone.length >= excess && goneBytes >= excessBytes) break;
        gone.push(...u.recs);
        for (const r of u.recs) goneBytes += r.bytes.length;
      }
    }
    if (!gone.length) return;
    if (this.#store) {
      try {
        await this.#store.batch(gone.map((r) => ({ type: 'del' as const, key: `${KINDS[r.type]}!${r.address}` })), SYNC);
      } catch (e) {
        throw new C0Error('STORE_WRITE_FAILED', 'could not evict evidence', { cause: e });
      }
    }
    for (const r of gone) this.#drop(r);
    b.onEvict?.(gone.length);
  }

  /** Open envelope bytes (full verification) and add them. */
  async addBytes(bytes: Uint8Array): Promise<number> {
    return this.add(openAny(bytes));
  }

  /** Any evidence held by address (envelope bytes). */
  getBytes(address: string): Uint8Array | undefined {
    return this.receipts.get(address)?.bytes ?? this.acceptances.get(address)?.bytes ?? this.nondeliveries.get(address)?.bytes ?? this.offers.get(address)?.bytes;
  }

  derive(opts: DeriveOptions): ReputationTable {
    return deriveReputation({ receipts: this.receipts.values(), acceptances: this.acceptances.values(), offers: this.offers.values(), nondeliveries: this.nondeliveries.values() }, opts);
  }
}
