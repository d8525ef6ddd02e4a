/**
 * What an overlay serves to peers over `/c0mpute/records/1` (docs/network.md
 * §records/1, §14 "Markets: topics sharded by workload"): its current adverts
 * (the record store), the presence records in their window (the presence
 * view), and every other kind from the network's memory cache (also by job,
 * records/1 `jobs`); `get` looks in the store, the cache, then the market's
 * records.
 *
 * A shard-filtered `live` request is answered from each record's shards kept
 * beside its decoded record (`heldShards`), never by re-opening envelopes.
 */
import type { Opened } from '../records/envelope.js';
import type { Advert, Presence } from '../records/kinds.js';
import type { MemoryRecordCache, RecordSource } from '../net/record-cache.js';
import { heldShards } from '../net/topics.js';

export interface OverlayRecordsDeps {
  /** the current advert of each provider (the record store's) */
  adverts(): Array<Opened<Advert>>;
  /** the presence records held and inside their window at `now` */
  presence(now: number): Array<Opened<Presence>>;
  /** the record store's bytes, then the market's, for `get` */
  getBytes(address: string): Promise<Uint8Array | undefined>;
  marketBytes(address: string): Promise<Uint8Array | undefined>;
  cache: MemoryRecordCache;
}

export function overlayRecordSource(d: OverlayRecordsDeps): RecordSource {
  return {
    // `since` (records/1 catch-up of outcome kinds) filters the cache by when it took each record; adverts and presence
    // are answered whole, as they are current state, not a history
    live: async (kind, t, limit, shards, since) => {
      const on = (r: Opened) => !shards || heldShards(kind, r.record).some((s) => shards.has(s));
      if (kind === 'advert') return d.adverts().filter((a) => a.record.expiresAt > t && on(a)).slice(0, limit).map((a) => a.bytes);
      if (kind === 'presence') return d.presence(t).filter(on).slice(0, limit).map((p) => p.bytes);
      return d.cache.live(kind, t, limit, shards, since);
    },
    byJob: (kinds, jobs, t, limit) => d.cache.byJob(kinds, jobs, t, limit),
    get: async (address) => (await d.getBytes(address)) ?? d.cache.get(address) ?? (await d.marketBytes(address)),
    add: (kind, rec) => d.cache.add(kind, rec),
    remove: (address) => d.cache.remove(address),
  };
}
