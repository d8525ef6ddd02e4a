/**
 * The node's record store: every verified record by content address, an index
 * by type, and each provider's current advert (a higher seq replaces, an equal
 * one does not). Superseded adverts stay stored: live offers cite the advert
 * they were made against. Only records that passed `open()` are stored; reading back
 * re-opens them as trusted (the signature was checked on the way in).
 * Writes are synced batches: acknowledged only once on disk.
 */
import { open, type Opened } from '../records/envelope.js';
import { T, type Advert, type RecordTypes } from '../records/kinds.js';
import { sub, syncBatch, type Db, type Sub } from './db.js';

export class RecordStore {
  #records: Sub;
  #byType: Sub;
  #adverts: Sub;
  #advertCache = new Map<string, Opened<Advert>>();
  #advertChain: Promise<unknown> = Promise.resolve();
  #inflight = new Map<string, Promise<boolean>>();
  #db: Db;

  private constructor(db: Db, prefix: string) {
    this.#db = db;
    this.#records = sub(db, `${prefix}records`);
    this.#byType = sub(db, `${prefix}bytype`);
    this.#adverts = sub(db, `${prefix}adverts`);
  }

  /** `prefix` separates overlays: records of one overlay never mix with another's. */
  static async open(db: Db, prefix = ''): Promise<RecordStore> {
    const s = new RecordStore(db, prefix);
    for await (const [did, addr] of s.#adverts.iterator()) {
      const a = await s.get(Buffer.from(addr).toString(), T.advert);
      if (a) s.#advertCache.set(did, a);
    }
    return s;
  }

  async has(address: string): Promise<boolean> {
    return (await this.#records.get(address)) !== undefined;
  }

  /** Store a verified record. Returns false when it was already held. An advert becomes its provider’s current one only with a higher seq. */
  async put(rec: Opened): Promise<boolean> {
    // The same record arriving twice at once (gossip and sync, two peers) is stored, and reported new, once.
    const pending = this.#inflight.get(rec.address);
    if (pending) return pending.then(() => false);
    // Adverts are written one at a time: the seq comparison and the write must not interleave, or a
    // lower seq whose write lands last would become the provider's current advert.
    const p = rec.type === T.advert ? this.#advertChain.then(() => this.#putNow(rec)) : this.#putNow(rec);
    if (rec.type === T.advert) this.#advertChain = p.catch(() => undefined);
    this.#inflight.set(rec.address, p);
    try {
      return await p;
    } finally {
      this.#inflight.delete(rec.address);
    }
  }

  async #putNow(rec: Opened): Promise<boolean> {
    if (rec.type === T.advert) {
      const cur = this.#advertCache.get(rec.signer);
      const a = rec as Opened<Advert>;
      if (await this.has(rec.address)) return false;
      const replaces = !cur || cur.record.seq < a.record.seq;
      await syncBatch(
        this.#db,
        [
          { type: 'put', key: rec.address, value: rec.bytes, sublevel: this.#records },
          { type: 'put', key: `${rec.type}!${rec.address}`, value: new Uint8Array(0), sublevel: this.#byType },
          ...(replaces ? [{ type: 'put', key: rec.signer, value: new TextEncoder().encode(rec.address), sublevel: this.#adverts }] : []),
        ],
      );
      if (replaces) this.#advertCache.set(rec.signer, a);
      return true;
    }
    if (await this.has(rec.address)) return false;
    await syncBatch(
        this.#db,
      [
        { type: 'put', key: rec.address, value: rec.bytes, sublevel: this.#records },
        { type: 'put', key: `${rec.type}!${rec.address}`, value: new Uint8Array(0), sublevel: this.#byType },
      ],
    );
    return true;
  }

  async get<K extends string>(address: string, type: K): Promise<Opened<K extends keyof RecordTypes ? RecordTypes[K] : unknown> | undefined> {
    const bytes = await this.#records.get(address);
    if (!bytes) return undefined;
    try {
      return open(bytes, type, { trusted: true }) as never;
    } catch {
      return undefined;
    }
  }

  async getBytes(address: string): Promise<Uint8Array | undefined> {
    return (await this.#records.get(address)) ?? undefined;
  }

  /** Every stored record of a type, in address order. */
  async list<K extends string>(type: K, limit = Infinity): Promise<Array<Opened<K extends keyof RecordTypes ? RecordTypes[K] : unknown>>> {
    const out = [];
    for await (const key of this.#byType.keys({ gt: `${type}!`, lt: `${type}!\xff` })) {
      const r = await this.get(key.slice(type.length + 1), type);
      if (r) out.push(r);
      if (out.length >= limit) break;
    }
    return out as never;
  }

  /** Each provider's current advert, in DID order (expired ones included; callers check freshness). */
  adverts(): Array<Opened<Advert>> {
    return [...this.#advertCache.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, v]) => v);
  }

  advertOf(did: string): Opened<Advert> | undefined {
    return this.#advertCache.get(did);
  }
}
