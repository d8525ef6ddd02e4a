/**
 * The records a node can serve to peers over `/c0mpute/records/1`.
 *
 * `RecordSource` is what the roles supply (their LevelDB stores); the network
 * falls back to `MemoryRecordCache`, which holds every accepted or published
 * record until its validity window ends (bounded per kind; an advert replaces
 * the same signer's lower seq, a presence the same signer's earlier one, as the
 * daemon's presence view does: a sync answers with what a peer needs, not every
 * presence of the last window — docs/scale.md "Where the hundred-node run's CPU
 * went"). Each record's market shards are kept beside it, computed once when it
 * is added, so a shard-filtered sync (`live` with `shards`) reads them instead
 * of re-opening records.
 */
import type { Opened } from '../records/envelope.js';
import type { Advert, Presence } from '../records/kinds.js';
import { validityWindow } from '../records/kinds.js';
import { heldShards, type TopicKind } from './topics.js';

export interface RecordSource {
  /**
   * Envelope bytes of the live records of `kind` this node holds (at most `limit`); with `shards`, only
   * those on one of them (a sharded kind's markets, `recordShards`; a record of an unsharded kind is on
   * none). Sources keep each record's shards beside it (`heldShards`), never re-opening records to filter.
   */
  live(kind: TopicKind, now: number, limit: number, shards?: ReadonlySet<string>): Uint8Array[] | Promise<Uint8Array[]>;
  /** Envelope bytes of the record at `address`, if held. */
  get(address: string): Uint8Array | undefined | Promise<Uint8Array | undefined>;
  /** Called by the network for every record it accepted or published (optional). */
  add?(kind: TopicKind, rec: Opened): void;
}

interface Entry {
  bytes: Uint8Array;
  notAfter: number;
  signer: string;
  /** the record's market shards (sharded kinds; none otherwise), computed once in `add` */
  shards: readonly string[];
}

export class MemoryRecordCache implements RecordSource {
  readonly #byKind = new Map<TopicKind, Map<string, Entry>>();
  readonly #byAddr = new Map<string, Entry>();
  /** advert: signer → held address and seq; presence: signer → held address and issuedAt */
  readonly #latest = { advert: new Map<string, { address: string; seq: number }>(), presence: new Map<string, { address: string; seq: number }>() };
  readonly #maxPerKind: number;

  constructor(opts: { maxPerKind?: number } = {}) {
    this.#maxPerKind = opts.maxPerKind ?? 4_096;
  }

  add(kind: TopicKind, rec: Opened): void {
    if (this.#byAddr.has(rec.address)) return;
    let m = this.#byKind.get(kind);
    if (!m) this.#byKind.set(kind, (m = new Map()));
    if (kind === 'advert' || kind === 'presence') {
      const seq = kind === 'advert' ? (rec.record as Advert).seq : (rec.record as Presence).issuedAt;
      const latest = this.#latest[kind];
      const held = latest.get(rec.signer);
      if (held && (held.seq > seq || (held.seq === seq && (kind === 'advert' || held.address >= rec.address)))) return;
      if (held) this.#remove(kind, held.address);
      latest.set(rec.signer, { address: rec.address, seq });
    }
    const w = validityWindow(rec.type, rec.record);
    const e: Entry = { bytes: rec.bytes, notAfter: w ? w[1] : Number.POSITIVE_INFINITY, signer: rec.signer, shards: heldShards(kind, rec.record) };
    m.set(rec.address, e);
    this.#byAddr.set(rec.address, e);
    if (m.size > this.#maxPerKind) {
      const first = m.keys().next();
      if (!first.done) this.#remove(kind, first.value);
    }
  }

  live(kind: TopicKind, now: number, limit: number, shards?: ReadonlySet<string>): Uint8Array[] {
    const m = this.#byKind.get(kind);
    if (!m) return [];
    const out: Uint8Array[] = [];
    for (const [addr, e] of m) {
      if (e.notAfter <= now) {
        this.#remove(kind, addr);
        continue;
      }
      if (out.length < limit && (!shards || e.shards.some((s) => shards.has(s)))) out.push(e.bytes);
    }
    return out;
  }

  get(address: string): Uint8Array | undefined {
    return this.#byAddr.get(address)?.bytes;
  }

  #remove(kind: TopicKind, address: string): void {
    const e = this.#byAddr.get(address);
    this.#byAddr.delete(address);
    this.#byKind.get(kind)?.delete(address);
    if ((kind === 'advert' || kind === 'presence') && e && this.#latest[kind].get(e.signer)?.address === address) this.#latest[kind].delete(e.signer);
  }
}
