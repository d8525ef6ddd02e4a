/**
 * The evidence a node holds for reputation: receipts, acceptances and the
 * offers receipts cite, persisted in LevelDB (sublevel `reputation-evidence`,
 * key `<kind>!<address>` → envelope bytes, written in one synced batch before
 * `add` resolves). The score itself is never stored: `derive()` recomputes it.
 */
import { C0Error } from '../errors.js';
import { T, type Acceptance, type Offer, type Receipt } from '../records/kinds.js';
import { open as openEnvelope, openAny, type Opened } from '../records/envelope.js';
import { sub, type Db, type Sub } from '../store/db.js';
import { deriveReputation, type DeriveOptions, type ReputationTable } from './derive.js';

/** Synced batch (classic-level honours `sync`; a sublevel passes its options to the root). */
const SYNC = { sync: true } as object;

const KINDS: Record<string, string> = { [T.receipt]: 'receipt', [T.acceptance]: 'acceptance', [T.offer]: 'offer' };

export class EvidenceStore {
  readonly receipts = new Map<string, Opened<Receipt>>();
  readonly acceptances = new Map<string, Opened<Acceptance>>();
  readonly offers = new Map<string, Opened<Offer>>();
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
    return this.receipts.size + this.acceptances.size + this.offers.size;
  }

  /** Check one record; throws a C0Error (and changes nothing) when it cannot be evidence. */
  static check(r: Opened): void {
    if (!r || typeof r.type !== 'string' || !(r.type in KINDS)) {
      throw new C0Error('REPUTATION_UNSUPPORTED_TYPE', `reputation evidence is a receipt, an acceptance or an offer, not ${String(r?.type)}`, { field: 'type' });
    }
    if (r.type === T.receipt && r.signer !== (r.record as Receipt).provider) {
      throw new C0Error('REPUTATION_RECEIPT_NOT_PROVIDER', `receipt ${r.address} is signed by ${r.signer}, not by the provider it names (${(r.record as Receipt).provider})`, { field: 'provider' });
    }
  }

  #put(r: Opened): boolean {
    const m = (r.type === T.receipt ? this.receipts : r.type === T.acceptance ? this.acceptances : this.offers) as Map<string, Opened>;
    if (m.has(r.address)) return false;
    m.set(r.address, r);
    return true;
  }

  #has(r: Opened): boolean {
    return (r.type === T.receipt ? this.receipts : r.type === T.acceptance ? this.acceptances : this.offers).has(r.address);
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

  derive(opts: DeriveOptions = {}): ReputationTable {
    return deriveReputation({ receipts: this.receipts.values(), acceptances: this.acceptances.values(), offers: this.offers.values() }, opts);
  }
}
