/**
 * The evidence a node holds for reputation: receipts, acceptances, the
 * offers receipts cite and buyers' non-delivery records, persisted in LevelDB (sublevel `reputation-evidence`,
 * key `<kind>!<address>` → envelope bytes, written in one synced batch before
 * `add` resolves). The score itself is never stored: `derive()` recomputes it.
 */
import { C0Error } from '../errors.js';
import { T, type Acceptance, type NonDelivery, type Offer, type Receipt } from '../records/kinds.js';
import { open as openEnvelope, openAny, type Opened } from '../records/envelope.js';
import { sub, type Db, type Sub } from '../store/db.js';
import { deriveReputation, type DeriveOptions, type ReputationTable } from './derive.js';
import { linkNonDelivery } from './nondelivery.js';

/** Synced batch (classic-level honours `sync`; a sublevel passes its options to the root). */
const SYNC = { sync: true } as object;

const KINDS: Record<string, string> = { [T.receipt]: 'receipt', [T.acceptance]: 'acceptance', [T.offer]: 'offer', [T.nondelivery]: 'nondelivery' };

export class EvidenceStore {
  readonly receipts = new Map<string, Opened<Receipt>>();
  readonly acceptances = new Map<string, Opened<Acceptance>>();
  readonly offers = new Map<string, Opened<Offer>>();
  readonly nondeliveries = new Map<string, Opened<NonDelivery>>();
  readonly #store: Sub | undefined;

  constructor(store?: Sub) {
    this.#store = store;
  }

  static async open(db: Db, name = 'reputation-evidence'): Promise<EvidenceStore> {
    const store = sub(db, name);
    const ev = new EvidenceStore(store);
    for await (const [key, bytes] of store.iterator()) {
      const kind = key.slice(0, key.indexOf('!'));
      const type = Object.keys(KINDS).find((t) => KINDS[t] === kind);
      if (!type) continue;
      try {
        ev.#put(openEnvelope(bytes, type, { trusted: true }));
      } catch {
        /* a record this version cannot read is skipped, not fatal */
      }
    }
    return ev;
  }

  get size(): number {
    return this.receipts.size + this.acceptances.size + this.offers.size + this.nondeliveries.size;
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
    if (r.type === T.nondelivery) linkNonDelivery(r as Opened<NonDelivery>); // NONDELIVERY_* when it does not link
  }

  #map(r: Opened): Map<string, Opened> {
    return (r.type === T.receipt ? this.receipts : r.type === T.acceptance ? this.acceptances : r.type === T.nondelivery ? this.nondeliveries : this.offers) as Map<string, Opened>;
  }

  #put(r: Opened): boolean {
    const m = this.#map(r);
    if (m.has(r.address)) return false;
    m.set(r.address, r);
    return true;
  }

  #has(r: Opened): boolean {
    return this.#map(r).has(r.address);
  }

  /** Add verified records (as returned by open()). Returns how many were new. All checked before any is kept. */
  async add(...records: Opened[]): Promise<number> {
    for (const r of records) EvidenceStore.check(r);
    const fresh: Opened[] = [];
    const seen = new Set<string>();
    for (const r of records) if (!this.#has(r) && !seen.has(r.address)) {
      seen.add(r.address);
      fresh.push(r);
    }
    if (fresh.length === 0) return 0;
    if (this.#store) {
      try {
        await this.#store.batch(fresh.map((r) => ({ type: 'put' as const, key: `${KINDS[r.type]}!${r.address}`, value: r.bytes })), SYNC);
      } catch (e) {
        throw new C0Error('STORE_WRITE_FAILED', `could not persist evidence: ${(e as Error).message}`, { cause: e });
      }
    }
    for (const r of fresh) this.#put(r);
    return fresh.length;
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
