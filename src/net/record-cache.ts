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
 *
 * Records that name a job (`job`: offers, selections, receipts, non-deliveries)
 * are also indexed by it, for records/1 `jobs`; the index holds only what the
 * cache holds, so it is bounded by the same bounds.
 *
 * Bounds (docs/network.md "The record cache's bounds"): per kind, a count
 * (4 096) and a byte budget (16 MiB); over all kinds, a byte budget (64 MiB),
 * which evicts from the kind holding the most bytes. Each evicts oldest first.
 * A kind with no validity window (selection, receipt, acceptance, non-delivery,
 * pool-*) is kept a time-to-live from when it was added (1 h), not until pushed
 * out. A record's bytes are copied when they are a view into a larger buffer
 * (`open()` already does this for what it opens; the cache does not count on
 * every caller), so a cached record pins no more memory than its own size.
 */
import type { Opened } from '../records/envelope.js';
import type { Advert, Presence } from '../records/kinds.js';
import { validityWindow } from '../records/kinds.js';
import { heldShards, type TopicKind } from './topics.js';

/** Defaults of the cache's bounds: see the class comment and docs/network.md. */
export const RECORD_CACHE_DEFAULTS = {
  /** records per kind */
  maxPerKind: 4_096,
  /** envelope bytes per kind: 256 records of the 64 KiB maximum; 4 096 ordinary records (≤ 4 KiB) fit */
  maxBytesPerKind: 16 * 1024 * 1024,
  /** envelope bytes over all kinds (thirteen kinds at their own budget would be 208 MiB) */
  maxBytes: 64 * 1024 * 1024,
  /** how long a record of a kind with no validity window is kept after it was added, ms */
  ttlMs: 3_600_000,
} as const;

export interface MemoryRecordCacheOptions {
  maxPerKind?: number;
  maxBytesPerKind?: number;
  maxBytes?: number;
  ttlMs?: number;
  /** the time a record is added (the time-to-live counts from it); default Date.now */
  clock?: () => number;
}

/**
 * `bytes` itself when it is the whole of its buffer, else a copy that is: a view (`subarray`) into a received
 * message keeps the whole message's buffer alive for as long as the view is held.
 */
export function compactBytes(bytes: Uint8Array): Uint8Array {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);
}

export interface RecordSource {
  /**
   * Envelope bytes of the live records of `kind` this node holds (at most `limit`); with `shards`, only
   * those on one of them (a sharded kind's markets, `recordShards`; a record of an unsharded kind is on
   * none). Sources keep each record's shards beside it (`heldShards`), never re-opening records to filter.
   */
  /**
   * With `since` (wall-clock ms, records/1 `live` `since`): only those this node took at or after it (the cache's
   * time of adding; a source that cannot tell, such as a store of the current adverts, may ignore it).
   */
  live(kind: TopicKind, now: number, limit: number, shards?: ReadonlySet<string>, since?: number): Uint8Array[] | Promise<Uint8Array[]>;
  /**
   * Envelope bytes of the live records of `kinds` whose `job` is one of `jobs` (at most `limit`), kind by kind in the
   * order given (records/1 `jobs`). Optional: a source without it answers that op NET_BAD_REQUEST.
   */
  byJob?(kinds: readonly TopicKind[], jobs: readonly string[], now: number, limit: number): Uint8Array[] | Promise<Uint8Array[]>;
  /** Envelope bytes of the record at `address`, if held. */
  get(address: string): Uint8Array | undefined | Promise<Uint8Array | undefined>;
  /** Called by the network for every record it accepted or published (optional). */
  add?(kind: TopicKind, rec: Opened): void;
  /** Called by the network for a record it accepted and that was not kept after all (`Network.notKept`; optional). */
  remove?(address: string): void;
}

interface Entry {
  kind: TopicKind;
  bytes: Uint8Array;
  notAfter: number;
  /** `notAfter` is the time-to-live's end (a kind with no validity window), not the record's own */
  timed: boolean;
  signer: string;
  /** the record's market shards (sharded kinds; none otherwise), computed once in `add` */
  shards: readonly string[];
  /** the job the record names (`job`: an offer, selection, receipt, non-delivery), indexed in `#byJob` */
  job?: string;
  /** when it was added (the cache's clock): records/1 `live` `since` */
  added: number;
}

/** The by-job index's key: a kind and a job address. */
function jobKey(kind: TopicKind, job: string): string {
  return `${kind} ${job}`;
}

export class MemoryRecordCache implements RecordSource {
  readonly #byKind = new Map<TopicKind, Map<string, Entry>>();
  readonly #byAddr = new Map<string, Entry>();
  /**
   * (kind, job address) → the addresses of the held records of that kind naming that job (each held record in at most
   * one set: bounded as the cache is). Keyed by kind too, so a request for one kind never walks another's records.
   */
  readonly #byJob = new Map<string, Set<string>>();
  /** advert: signer → held address and seq; presence: signer → held address and issuedAt */
  readonly #latest = { advert: new Map<string, { address: string; seq: number }>(), presence: new Map<string, { address: string; seq: number }>() };
  /** envelope bytes held, per kind and in all */
  readonly #bytesOf = new Map<TopicKind, number>();
  #bytes = 0;
  readonly #maxPerKind: number;
  readonly #maxBytesPerKind: number;
  readonly #maxBytes: number;
  readonly #ttlMs: number;
  readonly #clock: () => number;

  constructor(opts: MemoryRecordCacheOptions = {}) {
    this.#maxPerKind = opts.maxPerKind ?? RECORD_CACHE_DEFAULTS.maxPerKind;
    this.#maxBytesPerKind = opts.maxBytesPerKind ?? RECORD_CACHE_DEFAULTS.maxBytesPerKind;
    this.#maxBytes = opts.maxBytes ?? RECORD_CACHE_DEFAULTS.maxBytes;
    this.#ttlMs = opts.ttlMs ?? RECORD_CACHE_DEFAULTS.ttlMs;
    this.#clock = opts.clock ?? Date.now;
  }

  /** Envelope bytes held (of one kind, or in all). */
  bytesHeld(kind?: TopicKind): number {
    return kind === undefined ? this.#bytes : (this.#bytesOf.get(kind) ?? 0);
  }

  add(kind: TopicKind, rec: Opened): void {
    if (this.#byAddr.has(rec.address)) return;
    // larger than a kind's whole budget (only with a budget below the envelope bound): not kept
    if (rec.bytes.byteLength > Math.min(this.#maxBytesPerKind, this.#maxBytes)) return;
    const now = this.#clock();
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
    // the time-to-live's ends come in the order records are added: the lapsed ones are at the front
    for (const [addr, held] of m) {
      if (!held.timed || held.notAfter > now) break;
      this.#remove(kind, addr);
    }
    const w = validityWindow(rec.type, rec.record);
    const bytes = compactBytes(rec.bytes);
    const job = (rec.record as { job?: unknown }).job;
    const e: Entry = { kind, bytes, notAfter: w ? w[1] : now + this.#ttlMs, timed: !w, added: now, signer: rec.signer, shards: heldShards(kind, rec.record), ...(typeof job === 'string' ? { job } : {}) };
    m.set(rec.address, e);
    this.#byAddr.set(rec.address, e);
    if (e.job !== undefined) {
      const key = jobKey(kind, e.job);
      let held = this.#byJob.get(key);
      if (!held) this.#byJob.set(key, (held = new Set()));
      held.add(rec.address);
    }
    this.#bytesOf.set(kind, this.bytesHeld(kind) + bytes.byteLength);
    this.#bytes += bytes.byteLength;
    // oldest first: the kind's count and bytes, then the bytes of all (from the kind holding the most)
    while (m.size > this.#maxPerKind || this.bytesHeld(kind) > this.#maxBytesPerKind) this.#removeOldest(kind);
    while (this.#bytes > this.#maxBytes) this.#removeOldest(this.#largestKind());
  }

  live(kind: TopicKind, now: number, limit: number, shards?: ReadonlySet<string>, since?: number): Uint8Array[] {
    const m = this.#byKind.get(kind);
    if (!m) return [];
    const out: Uint8Array[] = [];
    for (const [addr, e] of m) {
      if (e.notAfter <= now) {
        this.#remove(kind, addr);
        continue;
      }
      if (out.length < limit && (since === undefined || e.added >= since) && (!shards || e.shards.some((s) => shards.has(s)))) out.push(e.bytes);
    }
    return out;
  }

  byJob(kinds: readonly TopicKind[], jobs: readonly string[], now: number, limit: number): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (const kind of kinds) {
      for (const job of jobs) {
        for (const addr of this.#byJob.get(jobKey(kind, job)) ?? []) {
          const e = this.#byAddr.get(addr);
          if (!e || e.notAfter <= now) continue;
          if (out.length >= limit) return out;
          out.push(e.bytes);
        }
      }
    }
    return out;
  }

  /** Let go of the record at `address`, if held (a record accepted and not kept after all: `Network.notKept`). */
  remove(address: string): void {
    const e = this.#byAddr.get(address);
    if (e) this.#remove(e.kind, address);
  }

  get(address: string): Uint8Array | undefined {
    const e = this.#byAddr.get(address);
    if (e?.timed && e.notAfter <= this.#clock()) {
      this.#remove(e.kind, address);
      return undefined;
    }
    return e?.bytes;
  }

  #removeOldest(kind: TopicKind): void {
    const first = this.#byKind.get(kind)?.keys().next();
    if (first && !first.done) this.#remove(kind, first.value);
  }

  #largestKind(): TopicKind {
    let best: TopicKind | undefined;
    for (const [k, n] of this.#bytesOf) if (best === undefined || n > this.#bytesOf.get(best)!) best = k;
    return best!;
  }

  #remove(kind: TopicKind, address: string): void {
    const e = this.#byAddr.get(address);
    this.#byAddr.delete(address);
    if (e?.job !== undefined) {
      const key = jobKey(e.kind, e.job);
      const held = this.#byJob.get(key);
      held?.delete(address);
      if (held?.size === 0) this.#byJob.delete(key);
    }
    if (e && this.#byKind.get(kind)?.delete(address)) {
      this.#bytesOf.set(kind, this.bytesHeld(kind) - e.bytes.byteLength);
      this.#bytes -= e.bytes.byteLength;
    }
    if ((kind === 'advert' || kind === 'presence') && e && this.#latest[kind].get(e.signer)?.address === address) this.#latest[kind].delete(e.signer);
  }
}
