/**
 * Which advert an offer is judged against (spec/scheduling.md gate 1;
 * docs/market.md; docs/pools.md "One entry in the market"): the adverts a node
 * holds, indexed by address and by provider (the latest by seq), each with
 * its facts for the gates (`advertFacts`, read by eligibility.ts
 * `quickEligible`); the market's entries (a pool's members' adverts stand for
 * one entry under the pool's DID); the advert live at a decision time; and the
 * advert a (possibly republished-over) offer is resolved to. Pure.
 */
import { T, type Advert, type Offer, type Tier } from '../records/kinds.js';
import type { Opened } from '../records/envelope.js';
import { C0Error } from '../errors.js';
import { chainOf, providerOf, rosterExpiresAt } from '../pools/chain.js';

/**
 * What the gates read of an advert, flattened into one object when the advert
 * is indexed (an advert is indexed once and judged for every job): a selection
 * over many offers reads this instead of walking the advert's record, hardware
 * and card objects (see `quickEligible`).
 */
export interface AdvertFacts {
  advert: Opened<Advert>;
  signer: string;
  expiresAt: number;
  issuedAt: number;
  tier: Tier;
  region: string | undefined;
  workloads: readonly string[];
  cpuCores: number;
  memoryMiB: number;
  /** the first card entry's figures (0 and undefined when the advert lists no GPU) */
  gpuVramMiB: number;
  gpuCount: number;
  gpuFeatures: readonly string[] | undefined;
  /** a pooled advert's roster expiry (Infinity when not pooled): the pool cannot be selected from then (ADVERT_ROSTER_EXPIRED) */
  rosterExpiresAt: number;
}

export function advertFacts(a: Opened<Advert>): AdvertFacts {
  const r = a.record;
  const hw = r.hardware;
  const g = hw.gpus?.[0];
  return {
    advert: a,
    signer: a.signer,
    expiresAt: r.expiresAt,
    issuedAt: r.issuedAt,
    tier: r.tier,
    region: r.region,
    workloads: r.workloads,
    cpuCores: hw.cpuCores,
    memoryMiB: hw.memoryMiB,
    gpuVramMiB: g?.vramMiB ?? 0,
    gpuCount: g?.count ?? 0,
    gpuFeatures: g?.features,
    rosterExpiresAt: rosterExpiresAt(a),
  };
}

/**
 * Adverts held by a node, indexed by address and by provider (the latest by
 * seq; an equal seq does not replace — the lower address is kept so the index
 * does not depend on arrival order).
 */
export class AdvertIndex {
  readonly byAddress = new Map<string, Opened<Advert>>();
  readonly latest = new Map<string, Opened<Advert>>();
  /** every advert of each provider (seq descending, then address), for `liveAt` */
  readonly #byProvider = new Map<string, Opened<Advert>[]>();
  /** each advert's facts (the gates' view of it), by address */
  readonly #facts = new Map<string, AdvertFacts>();
  /**
   * The market's entries: one advert per provider it stands for (docs/pools.md
   * "One entry in the market"). An unpooled provider's entry is its `latest`;
   * a pool's is the newest of its members' `latest` pooled adverts (issuedAt,
   * then seq, then the lower address), under the pool's DID.
   */
  readonly entries = new Map<string, Opened<Advert>>();
  /** signer → the entry its latest advert counts toward; entry → those signers */
  readonly #entryOf = new Map<string, string>();
  readonly #members = new Map<string, Set<string>>();
  /**
   * Per pool entry, the newest roster its members' latest adverts carry (the highest seq, then the lower address):
   * a member it does not list was removed by it (docs/pools.md "A new roster reaches running members": "from then
   * the removed member's adverts are stale"), so it is not counted as the pool's (membersOf, onRoster) nor shown
   * as its entry while a listed member's advert is held.
   */
  readonly #newest = new Map<string, RosterFacts>();

  constructor(adverts: Iterable<Opened<Advert>> = []) {
    for (const a of adverts) this.add(a);
  }

  add(a: Opened<Advert>): boolean {
    if (!a || a.type !== T.advert) throw new C0Error('MARKET_NOT_AN_ADVERT', `expected a ${T.advert} record, got ${String(a?.type)}`, { field: 'advert' });
    if (this.byAddress.has(a.address)) return false;
    this.byAddress.set(a.address, a);
    this.#facts.set(a.address, advertFacts(a));
    const mine = this.#byProvider.get(a.signer);
    if (mine) {
      // insert in place (adverts mostly arrive in seq order: this is then O(1))
      let i = mine.length;
      mine.push(a);
      while (i > 0 && (mine[i - 1]!.record.seq < a.record.seq || (mine[i - 1]!.record.seq === a.record.seq && mine[i - 1]!.address > a.address))) {
        mine[i] = mine[i - 1]!;
        i--;
      }
      mine[i] = a;
    } else this.#byProvider.set(a.signer, [a]);
    const cur = this.latest.get(a.signer);
    if (!cur || a.record.seq > cur.record.seq || (a.record.seq === cur.record.seq && a.address < cur.address)) {
      this.latest.set(a.signer, a);
      this.#reentry(a.signer);
      return true;
    }
    return false;
  }

  /** The entry (provider) the signer's latest advert stands for: the pool's DID for a pooled one, else the signer. */
  entryOf(signer: string): string {
    return this.#entryOf.get(signer) ?? signer;
  }

  /**
   * How many signers' latest adverts stand for the entry `provider` (a pool's member count as seen here; 1 for a plain
   * provider). For a pool, only the members its newest roster held here lists: a member a newer roster removed, whose
   * latest advert still carries the older roster, is not counted.
   */
  membersOf(provider: string): number {
    let n = 0;
    for (const s of this.#members.get(provider) ?? []) if (this.onRoster(s)) n++;
    return n;
  }

  /**
   * Whether the signer counts as a member of the pool its latest advert stands for: true unless the newest roster of
   * that pool held here (carried by another member's latest advert) does not list it. True for a plain provider.
   */
  onRoster(signer: string): boolean {
    const key = this.#entryOf.get(signer);
    const newest = key === undefined ? undefined : this.#newest.get(key);
    return newest === undefined || newest.members.has(signer);
  }

  /** The signer first in DID order among those whose latest advert stands for the entry `provider` (a pool's stand-in while none of its members quoted); a member its pool's newest roster lists before one it does not. */
  firstMember(provider: string): string | undefined {
    let first: string | undefined;
    let firstOn = false;
    for (const s of this.#members.get(provider) ?? []) {
      const on = this.onRoster(s);
      if (first === undefined || listedFirst(on, firstOn, s < first)) [first, firstOn] = [s, on];
    }
    return first;
  }

  /**
   * The provider an offer stands for: the pool of the pooled advert it cites
   * (when that advert is held and is the offer signer's), else its signer.
   */
  providerFor(offer: Opened<Offer>): string {
    const a = this.byAddress.get(offer.record.advert);
    return a && a.record.pool && a.signer === offer.signer ? entryKey(a) : offer.signer;
  }

  /**
   * Whether `providerFor(offer)` can no longer change: the advert it cites is held and does not make it stand for a
   * pool (a plain advert, or another key's). Until its advert is held, or while it stands for a pool (the advert may
   * be let go), the offer book indexes it for `refile`.
   */
  settled(offer: Opened<Offer>): boolean {
    const a = this.byAddress.get(offer.record.advert);
    return a !== undefined && !(a.record.pool && a.signer === offer.signer);
  }

  #reentry(signer: string): void {
    const a = this.latest.get(signer);
    const old = this.#entryOf.get(signer);
    const key = a ? entryKey(a) : undefined;
    if (old !== undefined && old !== key) {
      const m = this.#members.get(old)!;
      m.delete(signer);
      if (m.size === 0) this.#members.delete(old);
      this.#pick(old);
    }
    if (key === undefined) {
      this.#entryOf.delete(signer);
      return;
    }
    this.#entryOf.set(signer, key);
    let m = this.#members.get(key);
    if (!m) this.#members.set(key, (m = new Set()));
    m.add(signer);
    this.#pick(key);
  }

  #pick(key: string): void {
    // the newest roster the members' latest adverts carry (a plain provider's entry has none)
    let newest: RosterFacts | undefined;
    for (const s of this.#members.get(key) ?? []) {
      const r = rosterFacts(this.latest.get(s)!);
      if (r && (!newest || r.seq > newest.seq || (r.seq === newest.seq && r.address < newest.address))) newest = r;
    }
    if (newest) this.#newest.set(key, newest);
    else this.#newest.delete(key);
    // the newest of the listed members' adverts (of every member's when none is listed)
    let best: Opened<Advert> | undefined;
    let bestOn = false;
    for (const s of this.#members.get(key) ?? []) {
      const a = this.latest.get(s)!;
      const on = !newest || newest.members.has(s);
      if (!best || listedFirst(on, bestOn, newerEntry(a, best))) [best, bestOn] = [a, on];
    }
    if (best) this.entries.set(key, best);
    else this.entries.delete(key);
  }

  get(address: string): Opened<Advert> | undefined {
    return this.byAddress.get(address);
  }

  /** Forget advert records (the advert cap evicted them); a provider left with none leaves `latest`. */
  remove(adverts: Iterable<Opened<Advert>>): void {
    const touched = new Set<string>();
    const signers = new Set<string>();
    for (const a of adverts) {
      if (!this.byAddress.delete(a.address)) continue;
      this.#facts.delete(a.address);
      signers.add(a.signer);
      if (this.latest.get(a.signer)?.address === a.address) {
        this.latest.delete(a.signer);
        touched.add(a.signer);
      }
    }
    // each provider's list keeps only what is still held (an evicted provider's goes whole)
    for (const s of signers) {
      const left = this.#byProvider.get(s)!.filter((a) => this.byAddress.has(a.address));
      if (left.length) this.#byProvider.set(s, left);
      else this.#byProvider.delete(s);
    }
    if (!touched.size) return;
    // a provider whose current advert went but who still has another held: the best of those becomes current
    for (const a of this.byAddress.values()) {
      if (!touched.has(a.signer)) continue;
      const cur = this.latest.get(a.signer);
      if (!cur || a.record.seq > cur.record.seq || (a.record.seq === cur.record.seq && a.address < cur.address)) this.latest.set(a.signer, a);
    }
    for (const s of touched) this.#reentry(s);
  }

  /** The facts of the advert at `address` (undefined when it is not held). */
  facts(address: string): AdvertFacts | undefined {
    return this.#facts.get(address);
  }

  /**
   * The advert of `provider` that was live at `now` (issued by then, not yet
   * expired), the highest seq of those; when none was, the highest-seq one
   * issued by `now` (so an expired advert is reported as expired), else the
   * latest. A republished advert issued after `now` never stands in for the
   * one a decision at `now` saw (an audit judges as of the decision time).
   */
  liveAt(provider: string, now: number): Opened<Advert> | undefined {
    const l = this.latest.get(provider);
    if (l === undefined || (l.record.issuedAt <= now && l.record.expiresAt > now)) return l;
    let issued: Opened<Advert> | undefined;
    for (const a of this.#byProvider.get(provider)!) {
      if (a.record.issuedAt > now) continue;
      if (a.record.expiresAt > now) return a;
      issued ??= a;
    }
    return issued ?? l;
  }

  /**
   * The advert an offer is judged against: the one it cites (undefined when
   * that advert is not held: the offer waits, it cannot win). If the cited
   * advert has expired and the same provider has a higher-seq advert that was
   * live at `now` (issued by `now`), the offer is judged against that one (a
   * republished advert does not void the live offers made against its
   * predecessor); an advert issued after `now` never is.
   */
  resolve(offer: Opened<Offer>, now: number): Opened<Advert> | undefined {
    const cited = this.byAddress.get(offer.record.advert);
    if (!cited || cited.record.expiresAt > now || cited.signer !== offer.signer) return cited;
    const l = this.liveAt(offer.signer, now);
    if (l && l.record.expiresAt > now && l.record.issuedAt <= now && l.record.seq > cited.record.seq) return l;
    return cited;
  }
}

/** The entry an advert counts toward: its pool's DID when pooled (the proof was verified on open), else its signer. */
function entryKey(a: Opened<Advert>): string {
  if (!a.record.pool) return a.signer;
  try {
    return providerOf(a);
  } catch {
    return a.signer;
  }
}

/** What the market reads of the roster a pooled advert's proof carries: its seq, address and members. */
interface RosterFacts {
  seq: number;
  address: string;
  members: ReadonlySet<string>;
}

/** The roster a pooled advert carries (undefined for a plain one, or one whose chain does not verify: chainOf), once per advert object. */
function rosterFacts(a: Opened<Advert>): RosterFacts | undefined {
  if (!a.record.pool) return undefined;
  if (rosterOf.has(a)) return rosterOf.get(a);
  const r = chainOf(a)?.roster;
  const f = r && { seq: r.record.seq, address: r.address, members: new Set(r.record.members.map((m) => m.did)) };
  rosterOf.set(a, f);
  return f;
}
const rosterOf = new WeakMap<object, RosterFacts | undefined>();

/** Whether a candidate goes before the one chosen so far: a member the pool's newest roster lists first (`on`), then `before`. */
function listedFirst(on: boolean, chosenOn: boolean, before: boolean): boolean {
  return (on && !chosenOn) || (on === chosenOn && before);
}

/** Of two members' adverts for one pool entry: the later issuedAt, then the higher seq, then the lower address. */
function newerEntry(a: Opened<Advert>, b: Opened<Advert>): boolean {
  if (a.record.issuedAt !== b.record.issuedAt) return a.record.issuedAt > b.record.issuedAt;
  if (a.record.seq !== b.record.seq) return a.record.seq > b.record.seq;
  return a.address < b.address;
}
