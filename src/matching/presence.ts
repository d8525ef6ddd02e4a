/**
 * The live-provider view (spec/matching-and-leases.md "Presence" on the P2P
 * network; docs/matching.md "Presence"): the newest `c0mpute.presence/1` per
 * provider, held in memory only and only while its window lasts, joined with
 * that provider's live advert. Pure: every decision takes `now`; nothing here
 * reads a clock or touches the disk.
 *
 * A provider is live at `now` when its newest presence has issuedAt ≤ now + skew
 * and now < anchor + window, the anchor being min(issuedAt, the time this node
 * received it) — so a provider whose clock runs ahead is not live any longer for
 * it (QA qaMatch F3) — (the window is the record's `windowMs`, capped at
 * `maxWindowMs` in a small market and by the market's size in a large one:
 * `honouredWindowMs` of the providers held in the record's market, presence-rate.ts),
 * and a live advert of the same signer is known. A presence
 * without a live advert is not live: the advert carries what a buyer needs to
 * use a provider (prices, tier, box key), and the presence is only a claim of
 * free slots on top of it. `freeSlots: 0` is live, taking no new work.
 */
import type { Opened } from '../records/envelope.js';
import type { Advert, Presence } from '../records/kinds.js';
import { compareDids } from '../records/did.js';
import { heldShards } from '../net/topics.js';
import { honouredWindowMs, PRESENCE_TARGET_PER_MARKET } from './presence-rate.js';
import { MATCH_LIVENESS_MS, type LiveProvider } from './types.js';

export interface PresenceViewOptions {
  /** Providers held at once (default 100 000); past it the presence that lapses first is dropped. */
  maxProviders: number;
  /** The longest window honoured in a small market, ms, whatever a record claims (default 4 × MATCH_LIVENESS_MS = 60 s); a large market's cap grows with it (presence-rate.ts). */
  maxWindowMs: number;
  /** The presence rate per market a peer assumes providers keep to, records/s (default PRESENCE_TARGET_PER_MARKET). */
  targetPerMarket: number;
  /** A presence issued up to this far in the future counts (clock skew), ms (default 30 000). */
  skewMs: number;
}

export const PRESENCE_VIEW_DEFAULTS: PresenceViewOptions = { maxProviders: 100_000, maxWindowMs: 4 * MATCH_LIVENESS_MS, targetPerMarket: PRESENCE_TARGET_PER_MARKET, skewMs: 30_000 };

/** The live advert of a provider at `now`, if known (the market's advert store). */
export type AdvertLookup = (did: string, now: number) => Opened<Advert> | undefined;

/** What `add` did with a presence record. */
export type PresenceAdd = 'added' | 'replaced' | 'stale' | 'expired' | 'future' | 'no-advert';

export class PresenceView {
  readonly #o: PresenceViewOptions;
  readonly #byDid = new Map<string, Opened<Presence>>();
  /** When this node took each held presence (its clock; `add`'s `now`), kept with #byDid. */
  readonly #receivedAt = new Map<string, number>();
  /** Presence held per market (shard), kept with #byDid. */
  readonly #perShard = new Map<string, number>();

  constructor(
    private readonly advertOf: AdvertLookup,
    options: Partial<PresenceViewOptions> = {},
  ) {
    this.#o = { ...PRESENCE_VIEW_DEFAULTS, ...options };
  }

  /** Providers with a presence held (live or not yet pruned). */
  get size(): number {
    return this.#byDid.size;
  }

  /** Providers with a presence held in the largest of these markets (shards; live or not yet pruned). */
  heldIn(shards: readonly string[]): number {
    let n = 0;
    for (const s of shards) n = Math.max(n, this.#perShard.get(s) ?? 0);
    return n;
  }

  /** The longest window honoured on this presence: by the size of its largest market as held here. */
  maxWindowOf(p: Opened<Presence>): number {
    return honouredWindowMs(this.heldIn(heldShards('presence', p.record)), { floorMs: this.#o.maxWindowMs, targetPerSec: this.#o.targetPerMarket });
  }

  /**
   * Until when a presence counts: its anchor + its window (capped). The anchor is the earlier of its `issuedAt` and
   * when this node received it (`receivedAt`; default: when the view took the held record of that address, else
   * `issuedAt` alone). `issuedAt` is the provider's clock, and a record up to the clock skew ahead is kept: anchored
   * there alone, a provider whose clock ran 25 s fast stayed live 25 s past its window after it died (the documented
   * 60 s cap became 85 s). The receiver's own clock bounds it now.
   */
  liveUntil(p: Opened<Presence>, receivedAt?: number): number {
    return this.#anchor(p, receivedAt) + Math.min(p.record.windowMs, this.maxWindowOf(p));
  }

  #anchor(p: Opened<Presence>, receivedAt?: number): number {
    const at = receivedAt ?? (this.#byDid.get(p.signer)?.address === p.address ? this.#receivedAt.get(p.signer) : undefined);
    return at === undefined ? p.record.issuedAt : Math.min(p.record.issuedAt, at);
  }

  #put(p: Opened<Presence>, receivedAt: number): void {
    this.#byDid.set(p.signer, p);
    this.#receivedAt.set(p.signer, receivedAt);
    for (const s of heldShards('presence', p.record)) this.#perShard.set(s, (this.#perShard.get(s) ?? 0) + 1);
  }

  #drop(did: string): void {
    const p = this.#byDid.get(did);
    if (!p) return;
    this.#byDid.delete(did);
    this.#receivedAt.delete(did);
    for (const s of heldShards('presence', p.record)) {
      const n = (this.#perShard.get(s) ?? 0) - 1;
      if (n > 0) this.#perShard.set(s, n);
      else this.#perShard.delete(s);
    }
  }

  /**
   * Take a presence record (already verified), received `now`: it replaces the
   * signer's held one only when it is newer — its anchor (min(issuedAt, now))
   * later, or the same anchor and a later issuedAt, then the higher address; one
   * past its window, issued too far ahead, or from a signer with no live advert
   * (it could never be live; this bounds memory by the adverts held) is not kept.
   * Between records no later than their receipt the anchor is `issuedAt`, so
   * every node keeps the same one whatever the arrival order; a record dated
   * ahead of its receipt counts from its receipt, so the records a provider
   * signs once its clock was put right replace it (before, they were `stale`
   * against its higher `issuedAt` until that one's window ran out, and its free
   * slots stood still meanwhile).
   */
  add(p: Opened<Presence>, now: number): PresenceAdd {
    if (this.liveUntil(p, now) <= now) return 'expired';
    if (p.record.issuedAt > now + this.#o.skewMs) return 'future';
    if (!this.advertOf(p.signer, now)) return 'no-advert';
    const held = this.#byDid.get(p.signer);
    if (held) {
      const a = this.#anchor(p, now);
      const h = this.#anchor(held);
      if (h > a || (h === a && (held.record.issuedAt > p.record.issuedAt || (held.record.issuedAt === p.record.issuedAt && held.address >= p.address)))) return 'stale';
      this.#drop(p.signer);
    }
    this.#put(p, now);
    if (this.#byDid.size > this.#o.maxProviders) this.#evict(now);
    return held ? 'replaced' : 'added';
  }

  /** The newest presence held for a provider, while it lasts. */
  get(did: string, now: number): Opened<Presence> | undefined {
    const p = this.#byDid.get(did);
    return p && this.liveUntil(p) > now ? p : undefined;
  }

  /** Drop every presence past its window; returns how many went. */
  prune(now: number): number {
    // decide on the held set as it is, then drop (the caps depend on the counts)
    const gone: string[] = [];
    for (const [did, p] of this.#byDid) if (this.liveUntil(p) <= now) gone.push(did);
    for (const did of gone) this.#drop(did);
    return gone.length;
  }

  /** The presence records held and still inside their window (served to peers on sync). */
  records(now: number, limit = Infinity): Opened<Presence>[] {
    const out: Opened<Presence>[] = [];
    for (const p of this.#byDid.values()) {
      if (out.length >= limit) break;
      if (this.liveUntil(p) > now) out.push(p);
    }
    return out;
  }

  /**
   * Every live provider at `now`, in DID order: a presence inside its window
   * joined with a live advert of the same signer. Workloads are those of the
   * presence that the advert also lists (a provider cannot be live for what
   * it does not advertise).
   */
  live(now: number): LiveProvider[] {
    this.prune(now);
    const out: LiveProvider[] = [];
    for (const [did, p] of this.#byDid) {
      if (p.record.issuedAt > now + this.#o.skewMs) continue;
      const advert = this.advertOf(did, now);
      if (!advert || advert.signer !== did || advert.record.expiresAt <= now) continue;
      const offered = new Set(advert.record.workloads);
      out.push({ did, presence: p, advert, workloads: p.record.workloads.filter((w) => offered.has(w)), freeSlots: p.record.freeSlots, liveUntil: this.liveUntil(p) });
    }
    return out.sort((a, b) => compareDids(a.did, b.did));
  }

  /** Over the bound: prune, then drop the presence that lapses first (ties: the higher DID). */
  #evict(now: number): void {
    this.prune(now);
    while (this.#byDid.size > this.#o.maxProviders) {
      let worst: Opened<Presence> | undefined;
      for (const p of this.#byDid.values()) {
        if (!worst) {
          worst = p;
          continue;
        }
        const d = this.liveUntil(p) - this.liveUntil(worst);
        if (d < 0 || (d === 0 && compareDids(p.signer, worst.signer) > 0)) worst = p;
      }
      this.#drop(worst!.signer);
    }
  }
}
